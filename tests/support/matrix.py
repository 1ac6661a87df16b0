"""The conformance matrices and the values of generated records.

* Realistic records for the schema of each committed module of ``generated/`` (:data:`SAMPLES`).
* The matrix schema (:func:`matrix_yaml`, :func:`build_matrix`): one record per list dtype and shape
  form, each with a required feature ``req``, an optional one ``opt`` and, for fully known shapes,
  one with a default ``dflt``; plus the record ``Edges`` of extreme values under non-ASCII keys.
* The kinds matrix schema (:func:`kinds_matrix_yaml`, :func:`build_kinds_matrix`,
  :data:`KIND_CASES`): raw and ragged features of every dtype and shape form, in Examples and in
  SequenceExample contexts, and feature lists of every list dtype and step shape form.
* Values: :func:`canon` compares our values exactly (floats bit for bit, types included),
  :func:`flat_values` gives the wire values of an attribute, :func:`build_message` builds the
  same record with protobuf classes (``tf.train``'s or ours; raw and ragged features with their
  companions, feature lists step by step), and :func:`tf_form`/:func:`tensor_form` put expected
  and parsed tensors in one comparable form.
"""

from __future__ import annotations

import itertools
import math
import struct
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import yaml

from codegen.dtypes import DTYPES, DType, Kind
from codegen.generator.schema.model import RAW_DTYPES
from codegen.runtime import FeatureInfo
from support.modules import generate_module, generated_module
from support.paths import SCHEMAS


def _list_examples_only(path: Path) -> bool:
    """Whether every record of the schema is a ``tf.train.Example`` whose features all travel in
    their list (no ``encoding: raw``, at most one leading ``null``)."""
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    for record in doc["records"].values():
        if "context" in record or "sequence" in record:
            return False
        for feature in record["features"].values():
            if (
                feature.get("encoding", "list") != "list"
                or list(feature.get("shape", [])).count(None) > 1
            ):
                return False
    return True


SCHEMA_NAMES = tuple(
    sorted(path.stem for path in SCHEMAS.glob("*.yaml") if _list_examples_only(path))
)
"""The module name of every schema in ``schemas/`` of list-encoded ``tf.train.Example`` records.

Schemas with ``SequenceExample`` records, raw or ragged features have no :data:`SAMPLES`: the
kinds matrix and the corpus of ``tests/data/`` cover them.
"""

Shape = tuple[int | None, ...]


# --- realistic records for each schema ------------------------------------------------------------


def _basics(module: ModuleType) -> list[Any]:
    basics = module.Basics
    return [
        basics(my_ints=[1, 2, 3], my_float=0.5, my_bytes=b"hello"),
        basics(my_ints=[], my_float=-2.25, my_bytes=b""),
        basics(
            my_ints=[-(2**63), 2**63 - 1, 0, -1, 300], my_float=3.0e38, my_bytes=bytes(range(256))
        ),
    ]


def _customer(module: ModuleType) -> list[Any]:
    customer = module.Customer
    return [
        customer(
            age=19,
            movie=["The Shawshank Redemption", "Fight Club"],
            movie_ratings=[9.0, 9.7],
            suggestion="Inception",
            suggestion_purchased=1.0,
            purchase_price=9.99,
        ),
        customer(
            age=61,
            movie=["Amélie", "千と千尋の神隠し", "Léon", "Das Boot"],
            movie_ratings=[8.5, 9.25, 7.0, 8.0],
            suggestion="Le Samouraï",
            suggestion_purchased=0.0,
        ),
        customer(age=0, movie=[], movie_ratings=[], suggestion="", suggestion_purchased=0.0),
    ]


def _embedding(module: ModuleType) -> list[Any]:
    rng = np.random.default_rng(11)
    records = []
    for label in (0, 7, 123456789012):
        vector = rng.standard_normal(128).astype(np.float32)
        records.append(module.Embedding(label=label, embedding=vector / np.linalg.norm(vector)))
    return records


def _image(module: ModuleType) -> list[Any]:
    rng = np.random.default_rng(5)
    records = []
    for label, shape in ((3, (4, 5, 3)), (1, (28, 28, 1)), (0, (1, 1, 4))):
        pixels = rng.integers(0, 256, size=math.prod(shape), dtype=np.uint8).tobytes()
        records.append(module.Image(label=label, image=pixels, shape=list(shape)))
    return records


def _mnist(module: ModuleType) -> list[Any]:
    rng = np.random.default_rng(3)
    digits = [module.Digit(label=d, image=rng.integers(0, 256, size=784)) for d in (5, 0, 9)]
    digits.append(module.Digit(label=1, image=np.zeros(784, dtype=np.int64)))
    return digits


SAMPLES: dict[str, Callable[[ModuleType], list[Any]]] = {
    "basics": _basics,
    "customer": _customer,
    "embedding": _embedding,
    "image": _image,
    "mnist": _mnist,
}
"""Realistic records of each schema's module, by module name (every record class, varied lengths)."""


def samples(name: str) -> list[Any]:
    """The sample records of the generated module ``name`` (``KeyError`` for a schema without)."""
    return SAMPLES[name](generated_module(name))


# --- the matrix schema ----------------------------------------------------------------------------

MATRIX_DTYPES = (
    "int64",
    "int32",
    "int16",
    "int8",
    "uint32",
    "uint16",
    "uint8",
    "bool",
    "float32",
    "bytes",
    "string",
)
"""Every dtype of the list encoding."""

MATRIX_SHAPES: dict[str, Shape] = {
    "Scalar": (),
    "Vec3": (3,),
    "Mat2x2": (2, 2),
    "Rows": (None,),
    "Rows2": (None, 2),
}
"""Every shape form, by the suffix of its record name."""

KEYS = {"req": "réq", "dflt": "dêfault", "opt": "öpt"}
"""The Example key of each matrix feature (non-ASCII, and different from the attribute name)."""

_F32_MAX = float(np.finfo(np.float32).max)
_F32_TINY = float(np.finfo(np.float32).tiny)  # the smallest normal float32
POOLS: dict[str, tuple[object, ...]] = {
    "int64": (-(2**63), 2**63 - 1, 0, -1, 300, 127, -128),
    "int32": (-(2**31), 2**31 - 1, 0, -1, 70000),
    "int16": (-32768, 32767, 0, -1, 300),
    "int8": (-128, 127, 0, -1, 5),
    "uint32": (2**32 - 1, 0, 1, 2**31, 300),
    "uint16": (65535, 0, 1, 300),
    "uint8": (255, 0, 1, 128),
    "bool": (True, False, False, True, True),
    "float32": (
        math.nan,
        -0.0,
        math.inf,
        -math.inf,
        2.0**-149,
        _F32_TINY / 3,
        _F32_MAX,
        -1.5,
        0.1,
        0.0,
    ),
    "bytes": (b"", b"\x00\xff", b"\x80" * 130, "é".encode(), b"raw"),
    "string": ("", "é", "日本語", "🙂", "a" * 200, "tab\tnew\nline", "\x00nul"),
}
"""Values of each dtype, starting with its extremes; records cycle through them from a seed."""

DEFAULTS: dict[str, tuple[object, ...]] = {
    "int64": (-(2**63), 2**63 - 1, -7, 42),
    "int32": (-(2**31), 2**31 - 1, -7, 42),
    "int16": (-32768, 32767, -7, 42),
    "int8": (-128, 127, -7, 42),
    "uint32": (2**32 - 1, 0, 7, 42),
    "uint16": (65535, 0, 7, 42),
    "uint8": (255, 0, 7, 42),
    "bool": (True, False, True, True),
    "float32": (math.nan, -0.0, math.inf, 2.0**-149),
    "bytes": (b"d\x00", b"", b"\xff", b"x"),
    "string": ("défaut", "", "🙂", "x"),
}
"""The flat default values of each dtype (the first ``size`` of them for a shape)."""


@dataclass(frozen=True)
class MatrixCase:
    """One record of the matrix: ``record`` holds ``req``, ``opt`` and (fixed shapes) ``dflt``."""

    record: str
    dtype: DType
    shape: Shape

    @property
    def fixed(self) -> bool:
        return None not in self.shape

    @property
    def names(self) -> tuple[str, ...]:
        return ("req", "dflt", "opt") if self.fixed else ("req", "opt")

    def value(self, seed: int, rows: int = 2) -> object:
        """A value of this case's dtype and shape (``rows`` rows for a leading ``None``)."""
        return sample_value(self.dtype, self.shape, seed, rows)

    def default(self) -> object:
        """The default of ``dflt`` as the schema writes it (a scalar or a nested list)."""
        size = math.prod(d for d in self.shape if d is not None)
        return _nest(list(DEFAULTS[self.dtype.name][:size]), self.shape)


def _camel(dtype: DType) -> str:
    return dtype.name[0].upper() + dtype.name[1:]


MATRIX_CASES = tuple(
    MatrixCase(f"{_camel(DTYPES[d])}{suffix}", DTYPES[d], shape)
    for d in MATRIX_DTYPES
    for suffix, shape in MATRIX_SHAPES.items()
)
"""Every record of the matrix schema (dtype x shape form)."""

EDGE_KEYS = {
    "ints": "größe",
    "uints": "日本",
    "floats": "🙂 floats",
    "texts": "ключ",
    "blobs": "＃blobs",
    "no_ints": " ",
    "no_texts": "\t",
}
"""The keys of ``Edges``: non-ASCII (one beyond the BMP, one above the surrogates), a space, a tab."""


def _nest(flat: list[object], shape: Shape) -> object:
    """Row-major nested lists of ``flat`` for ``shape`` (a leading ``None`` takes what is left)."""
    if not shape:
        return flat[0]
    for dim in reversed(shape[1:]):
        assert dim is not None
        flat = [flat[i : i + dim] for i in range(0, len(flat), dim)]
    return flat


def sample_value(dtype: DType, shape: Shape, seed: int, rows: int = 2) -> object:
    """A value of ``dtype`` and ``shape`` cycling through :data:`POOLS` from ``seed``."""
    pool = POOLS[dtype.name]
    concrete = tuple(rows if d is None else d for d in shape)
    start = seed % len(pool)
    flat = list(itertools.islice(itertools.cycle(pool[start:] + pool[:start]), math.prod(concrete)))
    return _nest(flat, shape)


def matrix_yaml() -> str:
    """The matrix schema as YAML text."""
    records: dict[str, object] = {}
    for case in MATRIX_CASES:
        records[case.record] = {
            "doc": f"{case.dtype.name} of shape {case.shape}.",
            "features": _matrix_features(case),
        }
    edges = {
        "ints": "int64",
        "uints": "uint32",
        "floats": "float32",
        "texts": "string",
        "blobs": "bytes",
    }
    edge_features: dict[str, object] = {
        name: {"key": EDGE_KEYS[name], "dtype": dtype, "shape": [None]}
        for name, dtype in edges.items()
    }
    edge_features["no_ints"] = {"key": EDGE_KEYS["no_ints"], "dtype": "int64", "shape": [None, 2]}
    edge_features["no_texts"] = {"key": EDGE_KEYS["no_texts"], "dtype": "string", "shape": [None]}
    records["Edges"] = {"doc": "Extreme values under unusual keys.", "features": edge_features}
    doc = {"version": 1, "doc": "Every list dtype in every shape form.", "records": records}
    text: str = yaml.safe_dump(doc, allow_unicode=True, sort_keys=False)
    return text


def build_matrix(directory: Path) -> ModuleType:
    """Generate the matrix module into ``directory`` and import it (as ``tfr_matrix``)."""
    return generate_module(matrix_yaml(), "tfr_matrix", directory)


def edge_values() -> dict[str, Any]:
    """The attributes of an ``Edges`` record holding the extremes of each dtype."""
    return {
        "ints": [-(2**63), 2**63 - 1, -1, 0, -300],
        "uints": [2**32 - 1, 0, 2**31],
        "floats": [
            math.nan,
            math.inf,
            -math.inf,
            -0.0,
            0.0,
            2.0**-149,
            _F32_TINY / 2,
            _F32_TINY,
            _F32_MAX,
            -_F32_MAX,
        ],
        "texts": ["", "é", "日本語", "🙂", "\U0010fffd", "ａ" * 100, "\x00"],
        "blobs": [b"", b"\x00", b"\xff" * 200, bytes(range(128))],
        "no_ints": np.empty((0, 2), dtype=np.int64),
        "no_texts": [],
    }


# --- the kinds matrix: raw, ragged and SequenceExample records ------------------------------------

RAGGED_SHAPES: dict[str, Shape] = {
    "Ragged2": (None, None),
    "Ragged3": (None, None, None),
    "Ragged3x2": (None, None, 2),
}
"""Every ragged shape form (two or more leading ``None``), by the suffix of its record name."""

RAW_SHAPES: dict[str, Shape] = {"RawFixed": (2, 3), "RawDims": (None, 2, None)}
"""The shape forms of ``encoding: raw``: known dimensions, and unknown ones (the shape travels in
``<key>/shape``), by the suffix of its record name."""

STEP_KEYS = {"steps": "ßtéps", "steps_opt": "öptional ßtéps"}
"""The feature list keys of a sequence record of the kinds matrix: ``steps`` is required,
``steps_opt`` optional."""


@dataclass(frozen=True)
class KindCase:
    """One record of the kinds matrix.

    ``kind`` is ``ragged`` or ``raw`` (features ``req`` and ``opt`` of ``dtype`` and ``shape``,
    in a ``tf.train.Example``, or with ``context`` in the context of a ``SequenceExample`` whose
    one feature list is ``steps`` of int64 scalars), or ``sequence`` (feature lists ``steps`` and
    ``steps_opt`` of step shape ``shape``, and the context of the list matrix: ``req``, ``opt`` and,
    for a fixed shape, ``dflt``, all of ``dtype`` and ``shape``).
    """

    record: str
    kind: str
    dtype: DType
    shape: Shape
    context: bool = False

    def features(self) -> dict[str, object]:
        """The record as the schema writes it (its ``features``, or ``context`` and ``sequence``)."""
        if self.kind == "sequence":
            context = MatrixCase(self.record, self.dtype, self.shape)
            steps = {"key": STEP_KEYS["steps"], "dtype": self.dtype.name, "shape": list(self.shape)}
            return {
                "context": _matrix_features(context),
                "sequence": {
                    "steps": steps,
                    "steps_opt": {**steps, "key": STEP_KEYS["steps_opt"], "optional": True},
                },
            }
        feature: dict[str, object] = {"dtype": self.dtype.name, "shape": list(self.shape)}
        if self.kind == "raw":
            feature["encoding"] = "raw"
        features = {
            "req": {"key": KEYS["req"], **feature},
            "opt": {"key": KEYS["opt"], **feature, "optional": True},
        }
        if not self.context:
            return {"features": features}
        return {
            "context": features,
            "sequence": {"steps": {"key": STEP_KEYS["steps"], "dtype": "int64"}},
        }


def _kind_cases() -> tuple[KindCase, ...]:
    cases: list[KindCase] = []
    for context in (False, True):
        suffix = "Ctx" if context else ""
        cases += [
            KindCase(f"{_camel(DTYPES[d])}{form}{suffix}", "ragged", DTYPES[d], shape, context)
            for d in MATRIX_DTYPES
            for form, shape in RAGGED_SHAPES.items()
        ]
        cases += [
            KindCase(f"{_camel(DTYPES[d])}{form}{suffix}", "raw", DTYPES[d], shape, context)
            for d in RAW_DTYPES  # every integer and float dtype: float64, float16, uint64 too
            for form, shape in RAW_SHAPES.items()
        ]
    cases += [
        KindCase(f"{_camel(DTYPES[d])}Seq{form}", "sequence", DTYPES[d], shape, True)
        for d in MATRIX_DTYPES
        for form, shape in MATRIX_SHAPES.items()
    ]
    return tuple(cases)


KIND_CASES = _kind_cases()
"""Every record of the kinds matrix: each list dtype in each ragged shape form and each numeric
dtype in each raw shape form (in an Example, and in a SequenceExample's context), and each list
dtype as feature lists of each step shape form with a context of that form."""


def _matrix_features(case: MatrixCase) -> dict[str, object]:
    """The features of a list matrix record: ``req``, ``opt`` and (fixed shapes) ``dflt``."""
    features: dict[str, object] = {}
    for name in case.names:
        feature: dict[str, object] = {
            "key": KEYS[name],
            "dtype": case.dtype.name,
            "shape": list(case.shape),
        }
        if name == "dflt":
            feature["default"] = case.default()
        elif name == "opt":
            feature["optional"] = True
        features[name] = feature
    return features


def kinds_matrix_yaml() -> str:
    """The kinds matrix schema as YAML text."""
    records = {
        case.record: {
            "doc": f"{case.kind} {case.dtype.name} of shape {case.shape}.",
            **case.features(),
        }
        for case in KIND_CASES
    }
    doc = {
        "version": 1,
        "doc": "Raw, ragged and SequenceExample records of every dtype.",
        "records": records,
    }
    text: str = yaml.safe_dump(doc, allow_unicode=True, sort_keys=False)
    return text


def build_kinds_matrix(directory: Path) -> ModuleType:
    """Generate the kinds matrix module into ``directory`` and import it (as ``tfr_kinds``)."""
    return generate_module(kinds_matrix_yaml(), "tfr_kinds", directory)


# --- comparable forms of values -------------------------------------------------------------------


def _float_bits(value: float) -> tuple[str, bytes]:
    """A float by its bits (as a double: exact for float16, float32 and float64 values alike)."""
    return ("float", struct.pack("<d", value))


def canon(value: object) -> object:
    """``value`` in a form whose ``==`` is exact: floats by their bits, every leaf tagged with its
    type, arrays with their dtype and shape."""
    if isinstance(value, np.ndarray):
        return ("ndarray", value.dtype.str, value.shape, canon(value.tolist()))
    if isinstance(value, list):
        return [canon(item) for item in value]
    if isinstance(value, float):
        return _float_bits(value)
    return (type(value).__name__, value)


def record_canon(record: Any) -> object:
    """A record as its class name and the :func:`canon` form of every attribute."""
    names = [info.name for info in type(record).feature_spec()]
    return (type(record).__name__, [(name, canon(getattr(record, name))) for name in names])


def _flatten(value: object) -> list[object]:
    if isinstance(value, list):
        return [leaf for item in value for leaf in _flatten(item)]
    if isinstance(value, np.ndarray | np.generic):
        items: list[object] = np.reshape(value, -1).tolist()
        return items
    return [value]


def flat_values(value: object) -> list[object] | None:
    """The values an attribute puts on the wire, flat and in C order (``None``: no feature).

    Bools are ints, strings UTF-8 bytes, floats Python floats. Arrays may be nested in lists
    (the rows of a ragged value or of a feature list's steps).
    """
    if value is None:
        return None
    return [
        item.encode() if isinstance(item, str) else int(item) if isinstance(item, bool) else item
        for item in _flatten(value)
    ]


def build_feature(classes: Any, wire: str, values: list[object]) -> Any:
    """A ``Feature`` whose list ``wire`` holds ``values`` (set even when empty).

    ``classes`` holds the message classes: ``tf.train`` or ``codegen.runtime.tf.proto``.
    """
    lists = {
        "int64_list": classes.Int64List,
        "float_list": classes.FloatList,
        "bytes_list": classes.BytesList,
    }
    return classes.Feature(**{wire: lists[wire](value=values)})


def ragged_parts(value: list[Any], nulls: int) -> tuple[list[object], list[list[int]]]:
    """The flat wire values of a ragged value with ``nulls`` leading ``None``, and its row lengths
    per depth (``<key>/row_lengths_1`` first)."""
    nodes: list[Any] = list(value)
    lengths: list[list[int]] = []
    for depth in range(1, nulls):
        lengths.append([len(node) for node in nodes])
        if depth < nulls - 1:
            nodes = [child for node in nodes for child in node]
    return flat_values(nodes) or [], lengths


def raw_bytes(value: Any) -> bytes:
    """The bytes of a raw tensor: little-endian, C order."""
    array = np.asarray(value)
    data: bytes = array.astype(array.dtype.newbyteorder("<")).tobytes()
    return data


def feature_entries(classes: Any, info: FeatureInfo, value: object) -> list[tuple[str, Any]]:
    """The ``(key, Feature)`` entries an attribute writes: its own, then its companions (none for
    ``None``), built with the message classes of ``classes``."""
    if value is None:
        return []
    if info.encoding == "raw":
        assert isinstance(value, np.ndarray)
        entries = [(info.key, build_feature(classes, "bytes_list", [raw_bytes(value)]))]
        shape: list[object] = list(value.shape)
        return entries + [
            (key, build_feature(classes, "int64_list", shape)) for key in info.companions
        ]
    if info.ragged:
        assert isinstance(value, list)
        flat, lengths = ragged_parts(value, info.shape.count(None))
        return [(info.key, build_feature(classes, info.wire, flat))] + [
            (key, build_feature(classes, "int64_list", list(row_lengths)))
            for key, row_lengths in zip(info.companions, lengths, strict=True)
        ]
    return [(info.key, build_feature(classes, info.wire, flat_values(value) or []))]


def build_example(classes: Any, infos: Iterable[FeatureInfo], values: Mapping[str, object]) -> Any:
    """An ``Example`` holding ``values`` (attribute -> value; absent or ``None``: no feature), built
    with the message classes of ``classes`` (``tf.train`` or ``codegen.runtime.tf.proto``)."""
    features = {
        key: feature
        for info in infos
        for key, feature in feature_entries(classes, info, values.get(info.name))
    }
    return classes.Example(features=classes.Features(feature=features))


def feature_list(classes: Any, info: FeatureInfo, value: object) -> Any:
    """The ``FeatureList`` of a feature list's value: one ``Feature`` per step."""
    assert isinstance(value, list | np.ndarray)
    steps = [build_feature(classes, info.wire, flat_values(step) or []) for step in value]
    return classes.FeatureList(feature=steps)


def build_sequence_example(
    classes: Any, infos: Iterable[FeatureInfo], values: Mapping[str, object]
) -> Any:
    """A ``SequenceExample`` holding ``values`` (context features, and feature lists with one
    ``Feature`` per step; absent or ``None``: no feature), built with the message classes of
    ``classes``."""
    context: dict[str, Any] = {}
    lists: dict[str, Any] = {}
    for info in infos:
        value = values.get(info.name)
        if not info.sequence:
            context.update(feature_entries(classes, info, value))
        elif value is not None:
            lists[info.key] = feature_list(classes, info, value)
    return classes.SequenceExample(
        context=classes.Features(feature=context),
        feature_lists=classes.FeatureLists(feature_list=lists),
    )


def build_message(classes: Any, infos: Iterable[FeatureInfo], values: Mapping[str, object]) -> Any:
    """The record of ``values`` as an ``Example``, or a ``SequenceExample`` when it has feature
    lists."""
    infos = list(infos)
    if any(info.sequence for info in infos):
        return build_sequence_example(classes, infos, values)
    return build_example(classes, infos, values)


def record_values(record: Any) -> dict[str, object]:
    """Every attribute of a record, by name."""
    return {info.name: getattr(record, info.name) for info in type(record).feature_spec()}


def tf_leaves(value: object) -> object:
    """Nested lists of values in a form whose ``==`` is exact: floats by their bits, strings as
    UTF-8 (as a string tensor's ``tolist()`` gives them)."""
    if isinstance(value, list):
        return [tf_leaves(item) for item in value]
    if isinstance(value, float):
        return _float_bits(value)
    if isinstance(value, str):
        return value.encode()
    return value


def tf_form(info: FeatureInfo, value: object, *, batched: bool = False) -> tuple[object, object]:
    """What ``tf_parse``'s tensor of one Example holds for ``value``: (values, shape).

    Values are nested lists (floats by their bits, strings as UTF-8). The shape is the dense shape
    of ``tf_parse`` on one Example or, ``batched``, the shape of each row of the Example's ragged
    rows (``None`` for a dense tensor of a batch, whose shape is checked as a whole). An optional
    fixed-shape feature gives 0 or 1 rows of its shape, one with a leading ``None`` ``n`` rows.
    """
    plain = tf_leaves(value.tolist() if isinstance(value, np.ndarray) else value)
    inner = tuple(d for d in info.shape if d is not None)
    if info.fixed and not info.optional:
        return plain, (None if batched else info.shape)
    if info.fixed:
        rows: object = [] if value is None else [plain]
    else:
        rows = [] if value is None else plain
    assert isinstance(rows, list)
    return rows, (inner if batched else (len(rows), *inner))


def wire_form(
    info: FeatureInfo, value: object, *, dense: bool, batched: bool = False
) -> tuple[object, object]:
    """What TensorFlow's parse functions give for ``value`` before post-processing, in
    :func:`tf_form`'s form: for a ``FixedLenFeature`` (``dense``) the declared shape, for a
    ``RaggedFeature`` the flat values of the wire list (bools as ints)."""
    if dense:
        return tf_form(info, value, batched=batched)
    flat = tf_leaves(flat_values(value) or [])
    assert isinstance(flat, list)
    return flat, (() if batched else (len(flat),))


def tensor_form(tf: Any, tensor: Any, index: int | None = None) -> tuple[object, object]:
    """A parsed tensor (row ``index`` of a batch) in :func:`tf_form`'s form."""
    if isinstance(tensor, tf.RaggedTensor):
        assert index is not None, "a ragged tensor comes from a batch"
        return tf_leaves(tensor.to_list()[index]), tuple(tensor.flat_values.shape[1:])
    array = tensor.numpy() if index is None else tensor.numpy()[index]
    values = array.tolist() if isinstance(array, np.ndarray | np.generic) else array
    return tf_leaves(values), (tuple(tensor.shape) if index is None else None)


def tf_dtype_name(info: FeatureInfo) -> str:
    """The dtype name of ``tf_parse``'s tensor for a feature: the declared one, ``string`` for text."""
    return "string" if DTYPES[info.dtype].kind in (Kind.STR, Kind.BYTES) else info.dtype


def varint(value: int) -> bytes:
    """The protobuf base-128 varint of a non-negative int."""
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)
