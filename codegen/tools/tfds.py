"""TensorFlow Datasets (TFDS) feature descriptions (``features.json``) to tfr-gen schemas.

A prepared TFDS dataset directory holds ``features.json`` (the JSON form of TFDS's feature
connectors), ``dataset_info.json`` and the shards. :func:`import_tfds` describes the Example TFDS
writes for each record as one tfr-gen record, with the keys TFDS writes:

* a ``FeaturesDict`` is flattened as TFDS flattens it: its features' keys joined with ``/``
  (``objects/bbox``), attributes named after them (``objects_bbox``);
* a ``Tensor`` of dtype ``bool``, an int or ``float32`` is a list-encoded feature of that dtype and
  its shape (``-1`` -> ``null``; one unknown dimension at most, the first, as TFDS stores it);
  ``float16``/``float64`` travel in a ``FloatList`` and read as ``float32``; ``string`` is
  ``bytes``; ``encoding: bytes`` is a raw tensor of its fixed shape, or with several unknown
  dimensions ``<key>/value`` with ``shape_from: {key: <key>/shape}``;
* ``Text`` is ``string``; ``ClassLabel`` is ``int64`` with the class names (from
  ``<feature>.labels.txt`` beside ``features.json``) in the attribute's doc; ``BBoxFeature`` is
  ``float32`` of shape ``[4]``; ``Image`` is an encoded image of dtype ``uint8``
  (``encoding: jpeg`` or ``png`` as ``encodingFormat`` says, ``image`` when it says neither);
* a ``Sequence`` prepends its length (``null`` unless fixed) to its feature's shape; two or more
  nested sequences are TFDS's ragged layout, ``<key>/ragged_flat_values`` with row lengths in
  ``<key>/ragged_row_lengths_<i>`` (``row_lengths_from``).

What has no tfr-gen form (images in sequences, zlib-encoded tensors, list-stored tensors of several
unknown dimensions, fixed-length inner sequences stored ragged, uint64 lists, connectors such as
``Video`` or ``Audio`` with an encoded file format) is a diagnostic naming the feature, which is
left out.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codegen.runtime.data.tfds import read_tfds_json
from codegen.tools.inference import InferredFeature, InferredRecord, feature_names

__all__ = ["FEATURES_JSON", "import_tfds", "load_tfds_features"]

FEATURES_JSON = "features.json"

_INTS = ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64")
_FLOATS = {"float32": None, "float16": "float16", "float64": "float64", "bfloat16": "bfloat16"}
_MAX_DOC_NAMES = 100


class _LeftOut(Exception):
    """A feature with no tfr-gen form: the reason."""


@dataclass(frozen=True, slots=True)
class _Leaf:
    """One feature TFDS writes: its key (without TFDS's ragged suffixes) and tfr-gen fields."""

    key: str
    dtype: str
    shape: tuple[int | None, ...]
    encoding: str = "list"
    ragged: int = 0
    """How many row-length features TFDS writes (``<key>/ragged_row_lengths_<i>``)."""
    optional: bool = False
    doc: str | None = None
    dynamic: bool = False
    """A bytes-encoded tensor of several unknown dimensions: TFDS writes ``<key>/value`` and its
    shape in the Int64List ``<key>/shape``."""


def load_tfds_features(directory: Path) -> dict[str, Any]:
    """The ``features.json`` of the prepared TFDS dataset in ``directory``."""
    return read_tfds_json(directory / FEATURES_JSON)


def _dims(shape: Any) -> tuple[int | None, ...]:
    dims = shape.get("dimensions", ()) if isinstance(shape, dict) else ()
    return tuple(None if int(d) < 0 else int(d) for d in dims)


def _class_names(directory: Path, key: str) -> list[str] | None:
    path = directory / (key.replace("/", ".") + ".labels.txt")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    return [line.strip() for line in text.splitlines() if line.strip()]


def _label_doc(directory: Path, key: str, label: dict[str, Any]) -> str:
    names = _class_names(directory, key)
    count = int(label.get("numClasses", len(names or ())))
    if not names:
        return f"TFDS ClassLabel of {count} classes."
    listed = ", ".join(f"{i} {name}" for i, name in enumerate(names[:_MAX_DOC_NAMES]))
    more = f", ... ({len(names) - _MAX_DOC_NAMES} more)" if len(names) > _MAX_DOC_NAMES else ""
    return f"TFDS ClassLabel of {count} classes: {listed}{more}."


def _tensor(key: str, tensor: dict[str, Any], sequence: tuple[int | None, ...]) -> _Leaf:
    dtype = str(tensor.get("dtype", ""))
    shape = sequence + _dims(tensor.get("shape"))
    encoding = str(tensor.get("encoding", "none")).lower()
    optional = bool(tensor.get("optional", False))
    if encoding == "zlib":
        raise _LeftOut("a zlib-compressed tensor (encoding: zlib) has no tfr-gen form")
    if encoding == "bytes":
        if sequence or shape.count(None) == 1:
            raise _LeftOut(
                "a bytes-encoded tensor with one unknown dimension or in a Sequence has no tfr-gen"
                " form"
            )
        if dtype not in (*_INTS, "float32", "float64", "float16", "uint64"):
            raise _LeftOut(f"a bytes-encoded tensor of dtype {dtype} has no tfr-gen form")
        if None in shape:  # TFDS's dynamic shape: the bytes and the shape beside them
            return _Leaf(key, dtype, shape, "raw", optional=optional, dynamic=True)
        return _Leaf(key, dtype, shape, encoding="raw", optional=optional)
    doc = None
    if dtype == "bool" or dtype in _INTS:
        wire = dtype
    elif dtype in _FLOATS:
        wire = "float32"
        if _FLOATS[dtype] is not None:
            doc = f"TFDS stores this {dtype} tensor in a FloatList: values have float32 precision."
    elif dtype in ("string", "str", "object", "bytes"):
        wire = "bytes"
    elif dtype == "uint64":
        raise _LeftOut("TFDS stores uint64 bit-cast to int64, which tfr-gen does not undo")
    else:
        raise _LeftOut(f"the TFDS dtype {dtype!r} has no tfr-gen form")
    return _shaped(_Leaf(key, wire, shape, optional=optional, doc=doc), len(sequence))


def _shaped(leaf: _Leaf, rank: int) -> _Leaf:
    """``leaf`` as TFDS stores a value of ``rank`` nested sequences: ragged from two on."""
    if rank >= 2:
        if any(dim is not None for dim in leaf.shape[:rank]):
            raise _LeftOut("TFDS stores nested sequences of fixed length as ragged values")
        if None in leaf.shape[rank:]:
            raise _LeftOut("a ragged TFDS sequence of tensors of unknown shape has no tfr-gen form")
        return _Leaf(
            leaf.key, leaf.dtype, leaf.shape, ragged=rank - 1, optional=leaf.optional, doc=leaf.doc
        )
    if None in leaf.shape[1:]:
        raise _LeftOut(
            f"shape {list(leaf.shape)}: TFDS stores only a first dimension of unknown length in a"
            " list (more need encoding: bytes or zlib)"
        )
    return leaf


def _leaves(
    node: dict[str, Any], key: str, sequence: tuple[int | None, ...], directory: Path
) -> Iterator[_Leaf | tuple[str, str]]:
    """The features TFDS writes for ``node`` (``(key, reason)`` for each one left out)."""
    if "featuresDict" in node:
        for name, child in node["featuresDict"].get("features", {}).items():
            yield from _leaves(child, f"{key}/{name}" if key else name, sequence, directory)
        return
    if "sequence" in node:
        inner = node["sequence"]
        length = int(inner.get("length", -1))
        dims = (*sequence, None if length < 0 else length)
        yield from _leaves(inner.get("feature", {}), key, dims, directory)
        return
    kind = str(node.get("pythonClassName", "?")).rsplit(".", 1)[-1]
    try:
        if "tensor" in node:
            yield _tensor(key, node["tensor"], sequence)
        elif "text" in node:
            yield _shaped(_Leaf(key, "string", sequence), len(sequence))
        elif "classLabel" in node:
            doc = _label_doc(directory, key, node["classLabel"])
            yield _shaped(_Leaf(key, "int64", sequence, doc=doc), len(sequence))
        elif "boundingBox" in node:
            box = node["boundingBox"]
            shape = _dims(box.get("shape")) or (4,)
            yield _shaped(_Leaf(key, "float32", sequence + shape), len(sequence))
        elif "image" in node:
            yield _image(key, node["image"], sequence)
        else:
            raise _LeftOut(f"the TFDS feature {kind} has no tfr-gen form")
    except _LeftOut as reason:
        yield (key, f"{kind}: {reason}")


def _image(key: str, image: dict[str, Any], sequence: tuple[int | None, ...]) -> _Leaf:
    if sequence:
        raise _LeftOut("a sequence of images has no tfr-gen form (one encoded image per feature)")
    dtype = str(image.get("dtype", "uint8"))
    if dtype != "uint8":
        raise _LeftOut(f"an image of dtype {dtype} has no tfr-gen form (uint8 only)")
    shape = _dims(image.get("shape")) or (None, None, 3)
    if len(shape) != 3:
        raise _LeftOut(f"an image of shape {list(shape)} has no tfr-gen form ([height, width, C])")
    fmt = str(image.get("encodingFormat", "")).lower()
    encoding = {"jpeg": "jpeg", "jpg": "jpeg", "png": "png"}.get(fmt, "image")
    return _Leaf(key, "uint8", shape, encoding=encoding)


def import_tfds(directory: Path, *, name: str, doc: str) -> InferredRecord:
    """The record of the Examples of the prepared TFDS dataset in ``directory`` (rules in the
    module docstring)."""
    features = load_tfds_features(directory)
    leaves: list[_Leaf] = []
    left_out: list[tuple[str, str]] = []
    for leaf in _leaves(features, "", (), directory):
        if isinstance(leaf, tuple):
            left_out.append(leaf)
        else:
            leaves.append(leaf)
    names = feature_names([leaf.key for leaf in leaves])
    inferred = []
    for attribute, leaf in zip(names, leaves, strict=True):
        key = f"{leaf.key}/value" if leaf.dynamic else leaf.key
        lengths: tuple[str, ...] = ()
        if leaf.ragged:
            key = f"{leaf.key}/ragged_flat_values"
            lengths = tuple(f"{leaf.key}/ragged_row_lengths_{i}" for i in range(leaf.ragged))
        inferred.append(
            InferredFeature(
                attribute,
                key,
                leaf.dtype,
                leaf.shape,
                leaf.optional,
                encoding=leaf.encoding,
                row_lengths_from=lengths,
                doc=leaf.doc,
                shape_from=f"{leaf.key}/shape" if leaf.dynamic else None,
                shape_list=leaf.dynamic,
            )
        )
    return InferredRecord(name, doc, False, tuple(inferred), (), tuple(left_out))
