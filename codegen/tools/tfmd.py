"""TFX schemas (tensorflow-metadata's ``Schema``, ``schema.pbtxt``) to tfr-gen schemas and back.

Import (:func:`import_tfmd`): each ``feature`` becomes a feature of one Example record: ``INT`` -> ``int64`` (an
``int_domain`` whose range fits narrows it: ``uint8``, ``int16``, ...; a ``bool_domain`` gives ``bool``), ``FLOAT``
-> ``float32``, ``BYTES`` -> ``bytes`` (``string`` with a ``string_domain``); ``shape`` (a FixedLen feature) gives
its dims, ``value_count`` ``min == max`` its size (1: a scalar), anything else ``[null]``; ``presence`` with
``min_fraction`` 1 is required, anything else ``optional: true``. A ``ragged_tensor`` representation becomes a
ragged feature reading its values and row lengths under their own keys (``row_lengths_from``). What has no tfr-gen
form (sparse and weighted features, ``STRUCT`` features, nested ``value_counts``, other representations) is a
diagnostic naming the feature, which is left out.

Export (:func:`export_tfmd`): the reverse for one record: fixed shapes as ``shape``, a leading ``null`` as
``value_count`` ``min: 0``, an optional fixed shape as a ``value_count`` of its size, required features with
``presence { min_fraction: 1 }``, narrow int dtypes as an
``int_domain`` of their range, ``bool`` as ``bool_domain``, ragged features as a ``ragged_tensor`` representation
with their row-length features. Raw tensors, encoded images and their companions travel as ``BYTES`` and ``INT``
features of a TFX schema, which cannot say their dtype and shape: each is a diagnostic. Feature lists of a
SequenceExample have no ``Schema`` form and are refused.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from codegen.dtypes import DTYPES, Kind
from codegen.errors import MissingExtraError, TfrGenError
from codegen.generator.ir import FeatureIR, RecordIR
from codegen.tools.inference import InferredFeature, InferredRecord, feature_names

__all__ = ["TfmdExport", "export_tfmd", "import_tfmd", "load_tfmd"]

_NARROW = ("uint8", "int8", "uint16", "int16", "uint32", "int32", "int64")


def _schema_pb2() -> Any:
    try:
        from tensorflow_metadata.proto.v0 import schema_pb2
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise MissingExtraError(
            "TFX schemas need tensorflow-metadata: pip install 'tfr-gen[tfx]'"
        ) from exc
    return schema_pb2


def load_tfmd(path: Path) -> Any:
    """The ``Schema`` message in ``path``: text format (``schema.pbtxt``) or binary."""
    schema_pb2 = _schema_pb2()
    from google.protobuf import text_format
    from google.protobuf.message import DecodeError

    data = path.read_bytes()
    schema = schema_pb2.Schema()
    try:
        text_format.Parse(data.decode("utf-8"), schema)
        return schema
    except (UnicodeDecodeError, text_format.ParseError) as text_error:
        try:
            schema.ParseFromString(data)
        except DecodeError:
            raise TfrGenError(
                f"{path}: neither a text-format nor a binary tensorflow_metadata Schema ({text_error})"
            ) from None
    return schema


def import_tfmd(schema: Any, *, name: str, doc: str) -> InferredRecord:
    """The record that describes the features of a TFX ``Schema`` (rules in the module docstring)."""
    schema_pb2 = _schema_pb2()
    by_name = {f.name: f for f in schema.feature}
    left_out: list[tuple[str, str]] = []
    ragged: dict[str, tuple[str, tuple[str, ...]]] = {}
    used: set[str] = set()
    for group in schema.tensor_representation_group.values():
        for rep_name, rep in group.tensor_representation.items():
            kind = rep.WhichOneof("kind")
            if kind != "ragged_tensor":
                continue
            path = list(rep.ragged_tensor.feature_path.step)
            lengths = [p.row_length for p in rep.ragged_tensor.partition]
            if (
                len(path) != 1
                or path[0] not in by_name
                or not lengths
                or any(not length or length not in by_name for length in lengths)
            ):
                left_out.append((rep_name, "a ragged_tensor representation tfr-gen cannot read"))
                continue
            ragged[path[0]] = (rep_name, tuple(lengths))
            used.update(lengths)
    left_out.extend((f.name, "a sparse_feature has no tfr-gen form") for f in schema.sparse_feature)
    left_out.extend(
        (f.name, "a weighted_feature has no tfr-gen form") for f in schema.weighted_feature
    )
    kept: list[tuple[str, Any]] = []
    for key, feature in by_name.items():
        if key in used:
            continue
        if feature.type == schema_pb2.STRUCT or feature.type == schema_pb2.TYPE_UNKNOWN:
            left_out.append(
                (key, f"type {schema_pb2.FeatureType.Name(feature.type)} has no tfr-gen form")
            )
            continue
        if feature.HasField("value_counts"):
            left_out.append((key, "nested value_counts have no tfr-gen form"))
            continue
        kept.append((key, feature))
    names = feature_names([ragged[key][0] if key in ragged else key for key, _ in kept])
    features: list[InferredFeature] = []
    for attribute, (key, feature) in zip(names, kept, strict=True):
        dtype = _dtype(schema_pb2, feature)
        if key in ragged:
            row_lengths = ragged[key][1]
            features.append(
                InferredFeature(
                    attribute,
                    key,
                    dtype,
                    (None,) * (len(row_lengths) + 1),
                    False,
                    row_lengths_from=row_lengths,
                )
            )
            continue
        shape = _shape(feature)
        required = feature.presence.min_fraction >= 1.0
        optional = not required
        features.append(InferredFeature(attribute, key, dtype, shape, optional))
    if not features:
        raise TfrGenError("the TFX schema has no feature tfr-gen can describe")
    return InferredRecord(
        name=name,
        doc=doc,
        is_sequence=False,
        features=tuple(features),
        sequence=(),
        left_out=tuple(left_out),
    )


def _dtype(schema_pb2: Any, feature: Any) -> str:
    if feature.type == schema_pb2.FLOAT:
        return "float32"
    if feature.type == schema_pb2.BYTES:
        return "string" if feature.HasField("string_domain") else "bytes"
    if feature.HasField("bool_domain"):
        return "bool"
    if (
        feature.HasField("int_domain")
        and feature.int_domain.HasField("min")
        and feature.int_domain.HasField("max")
    ):
        low, high = feature.int_domain.min, feature.int_domain.max
        for name in _NARROW:
            dtype = DTYPES[name]
            if (
                dtype.lo is not None
                and dtype.hi is not None
                and dtype.lo <= low
                and high <= dtype.hi
            ):
                return name
    return "int64"


def _shape(feature: Any) -> tuple[int | None, ...]:
    if feature.HasField("shape"):
        return tuple(int(d.size) for d in feature.shape.dim)
    if feature.HasField("value_count"):
        low, high = feature.value_count.min, feature.value_count.max
        if low == high and low > 0:
            return () if low == 1 else (int(low),)
    return (None,)


@dataclass(frozen=True, slots=True)
class TfmdExport:
    """An exported ``Schema`` (``message``) and what it could not say (``diagnostics``, one per feature)."""

    message: Any
    diagnostics: tuple[str, ...]

    def text(self) -> str:
        """The message in text format, as ``schema.pbtxt`` holds it."""
        from google.protobuf import text_format

        return str(text_format.MessageToString(self.message))


def export_tfmd(record: RecordIR) -> TfmdExport:
    """The TFX ``Schema`` of one Example record (rules in the module docstring)."""
    if record.kind != "example":
        raise TfrGenError(
            f"record {record.name!r} is a SequenceExample: a tensorflow_metadata Schema describes"
            " Examples only"
        )
    schema_pb2 = _schema_pb2()
    schema = schema_pb2.Schema()
    diagnostics: list[str] = []
    for f in record.features:
        _export_feature(schema_pb2, schema, f, diagnostics)
    return TfmdExport(schema, tuple(diagnostics))


def _export_feature(schema_pb2: Any, schema: Any, f: FeatureIR, diagnostics: list[str]) -> None:
    feature = schema.feature.add()
    feature.name = f.key
    if f.kind.name in ("raw_tensor", "encoded_image"):
        feature.type = schema_pb2.BYTES
        feature.value_count.min = feature.value_count.max = 1
        diagnostics.append(
            f"feature {f.name!r} ({f.encoding} {f.dtype.name} {list(f.shape)}) is one bytes value"
            " in a TFX schema, which cannot say its dtype and shape"
        )
        for key in f.companion_keys:
            companion = schema.feature.add()
            companion.name = key
            companion.type = (
                schema_pb2.INT
                if f.shape_from is None or f.shape_from.encoding == "list"
                else schema_pb2.BYTES
            )
        _presence(feature, f)
        return
    kind = f.dtype.kind
    feature.type = (
        schema_pb2.FLOAT
        if kind is Kind.FLOAT
        else schema_pb2.BYTES
        if kind in (Kind.STR, Kind.BYTES)
        else schema_pb2.INT
    )
    if kind is Kind.BOOL:
        feature.bool_domain.SetInParent()
    elif kind is Kind.INT and f.dtype.name != "int64":
        feature.int_domain.min = int(f.dtype.lo or 0)
        feature.int_domain.max = int(f.dtype.hi or 0)
    elif kind is Kind.STR:
        feature.string_domain.SetInParent()
    if f.kind.name == "ragged_tensor":
        group = schema.tensor_representation_group[""]
        rep = group.tensor_representation[f.name].ragged_tensor
        rep.feature_path.step.append(f.key)
        for key in f.companion_keys:
            rep.partition.add().row_length = key
            lengths = schema.feature.add()
            lengths.name = key
            lengths.type = schema_pb2.INT
        if any(d is not None for d in f.shape):
            diagnostics.append(
                f"feature {f.name!r}: the fixed inner dims of shape {list(f.shape)} are left out of its"
                " ragged_tensor representation"
            )
        return
    if None in f.shape:
        feature.value_count.min = 0
    elif f.optional:  # a FixedLen feature is required: an optional one is a VarLen one of its size
        feature.value_count.min = feature.value_count.max = math.prod(
            cast("tuple[int, ...]", f.shape)
        )
        if len(f.shape) > 1:
            diagnostics.append(
                f"feature {f.name!r} is optional: its shape {list(f.shape)} is only a value count in a"
                " TFX schema"
            )
    else:
        for d in f.shape:
            feature.shape.dim.add().size = int(d)  # type: ignore[arg-type]
        if not f.shape:
            feature.shape.SetInParent()
    _presence(feature, f)


def _presence(feature: Any, f: FeatureIR) -> None:
    if not f.optional and not f.has_default:
        feature.presence.min_fraction = 1.0
