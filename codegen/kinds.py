"""The registry of feature kinds: one table that every layer reads.

A feature of a schema has one *kind* (:data:`KINDS`): how its values are shaped and travel (a scalar in a list, a
tensor in a list, a raw tensor, a ragged tensor, a feature list of a SequenceExample, ...). Each kind has one
template (``templates/features/<kind>.py.jinja``) and one or more runtime codec classes (:data:`CODECS`), chosen by
dtype and shape. Each codec row says how the columnar batch decoder lays its values out (``column``) and which
operation of the C ``ExamplePlan`` decodes it in one call, if any (``plan``).

The generator picks a feature's kind with :func:`select_kind` and its codec class with :func:`codec_for`; the runtime
finds a codec object's row with :func:`codec_row` (by its class name). This module imports only
:mod:`codegen.dtypes`, so both sides can read it. The numbers the C accelerator shares with Python (plan operations,
list kinds, element codes) are defined here once; ``codegen/_speedups/contract.h`` is generated from them
(:func:`contract_header`, checked by a test; ``python -m codegen.kinds`` prints it).

``docs/adding-a-feature-kind.md`` lists every place that changes for a new dtype or a new kind.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass

from codegen.dtypes import DType, Kind, Wire

__all__ = [
    "CODECS",
    "KINDS",
    "RAW_ELEMENT",
    "ELEMENT_CODES",
    "CodecRow",
    "FeatureKind",
    "IMAGE_ENCODINGS",
    "PlanOp",
    "ShapeFrom",
    "codec_for",
    "codec_row",
    "codec_row_of",
    "contract_header",
    "element_code",
    "kind_named",
    "select_kind",
]

Shape = tuple[int | None, ...]


class PlanOp(enum.IntEnum):
    """The operations of the C ``ExamplePlan`` (``codegen/_speedups/plan.c``): what one attribute becomes."""

    INT = 1
    """An int of an integer dtype (range checked)."""
    BOOL = 2
    """A bool (0 or 1)."""
    FLOAT = 3
    """A float (one float32)."""
    TEXT = 4
    """A str (one UTF-8 value)."""
    BYTES = 5
    """A bytes (one value)."""
    INT_ARRAY = 6
    """An ndarray of an integer or bool dtype, from an Int64List."""
    FLOAT_ARRAY = 7
    """An ndarray of float32, from a FloatList."""
    TEXT_LIST = 8
    """A list of str."""
    BYTES_LIST = 9
    """A list of bytes."""
    RAW = 10
    """An ndarray from the one bytes value (little-endian), its shape fixed or stored."""
    STEPS_INT = 11
    """A feature list: an ndarray [T, *step shape] of an integer or bool dtype."""
    STEPS_FLOAT = 12
    """A feature list: an ndarray [T, *step shape] of float32."""


ELEMENT_CODES: dict[str, str] = {
    "int64": "q",
    "int32": "i",
    "int16": "h",
    "int8": "b",
    "uint64": "Q",
    "uint32": "I",
    "uint16": "H",
    "uint8": "B",
    "bool": "?",
    "float32": "f",
    "float64": "d",
    "float16": "e",
}
"""The element code of each numeric dtype in the C plan: the ``struct`` module's format character."""

RAW_ELEMENT = "x"
"""The element code of a raw tensor of a non-bool dtype (its bytes are copied as they are)."""


def element_code(dtype: DType) -> str:
    """The element code the C plan reads or writes values of ``dtype`` as (:data:`ELEMENT_CODES`)."""
    return ELEMENT_CODES[dtype.name]


@dataclass(frozen=True, slots=True)
class FeatureKind:
    """One kind of feature: how the generator recognises it and renders it.

    ``name`` names the template ``templates/features/<name>.py.jinja``; ``matches(dtype, shape, encoding,
    sequence)`` says whether a valid feature of that dtype, shape, encoding (``list``, ``raw`` or an image
    encoding of :data:`IMAGE_ENCODINGS`) and section (``sequence``) is of this kind (the first matching kind of
    :data:`KINDS` wins); ``companions(key, shape)`` are the keys of the companion features it writes beside its
    own.
    """

    name: str
    summary: str
    matches: Callable[[DType, Shape, str, bool], bool]
    companions: Callable[[str, Shape], tuple[str, ...]]


@dataclass(frozen=True, slots=True)
class ShapeFrom:
    """Where a raw tensor with unknown dimensions stores its shape, as a schema declares it (``shape_from``).

    Either one feature ``keys[0]`` holds the whole shape (``dtype`` an integer dtype name, ``encoding`` ``list``: an
    Int64List of the dims, or ``raw``: the little-endian bytes of the dims, as the image tutorials write
    ``np.array(image.shape, np.int32).tobytes()``), or (``per_dim``) one int64 scalar feature per ``None`` dimension,
    in order (``image/height``, ``image/width``). The default layout is ``ShapeFrom((f"{key}/shape",))``.
    """

    keys: tuple[str, ...]
    dtype: str = "int64"
    encoding: str = "list"
    per_dim: bool = False


def _no_companions(key: str, shape: Shape) -> tuple[str, ...]:
    return ()


def _shape_companion(key: str, shape: Shape) -> tuple[str, ...]:
    return () if None not in shape else (f"{key}/shape",)


def _row_lengths(key: str, shape: Shape) -> tuple[str, ...]:
    return tuple(f"{key}/row_lengths_{d}" for d, n in enumerate(shape) if n is None and d > 0)


def _strings(dtype: DType) -> bool:
    return dtype.kind in (Kind.STR, Kind.BYTES)


IMAGE_ENCODINGS = ("jpeg", "png", "image")
"""The encodings of an encoded image (``image`` reads JPEG or PNG and writes PNG)."""

KINDS: tuple[FeatureKind, ...] = (
    FeatureKind(
        "sequence_feature",
        "a feature list of a SequenceExample: one Feature per step (shape: one step's)",
        lambda dtype, shape, encoding, sequence: sequence,
        _no_companions,
    ),
    FeatureKind(
        "encoded_image",
        "encoding: jpeg, png or image: a uint8 [height, width, channels] array as one encoded image",
        lambda dtype, shape, encoding, sequence: encoding in IMAGE_ENCODINGS,
        _no_companions,
    ),
    FeatureKind(
        "raw_tensor",
        "encoding: raw: the tensor as one little-endian bytes value (+ '<key>/shape' when a dim is null)",
        lambda dtype, shape, encoding, sequence: encoding == "raw",
        _shape_companion,
    ),
    FeatureKind(
        "ragged_tensor",
        "two or more null dims: flat values + '<key>/row_lengths_<d>' per inner null",
        lambda dtype, shape, encoding, sequence: shape.count(None) > 1,
        _row_lengths,
    ),
    FeatureKind(
        "string_scalar",
        "a string or bytes scalar",
        lambda dtype, shape, encoding, sequence: _strings(dtype) and not shape,
        _no_companions,
    ),
    FeatureKind(
        "string_list",
        "string or bytes values of rank >= 1 (fixed or a leading null): nested lists",
        lambda dtype, shape, encoding, sequence: _strings(dtype),
        _no_companions,
    ),
    FeatureKind(
        "numeric_scalar",
        "an int, bool or float scalar",
        lambda dtype, shape, encoding, sequence: not shape,
        _no_companions,
    ),
    FeatureKind(
        "numeric_tensor",
        "a numeric array: fixed shape or a leading null",
        lambda dtype, shape, encoding, sequence: True,
        _no_companions,
    ),
)
"""Every feature kind, in the order :func:`select_kind` tries them."""

_KINDS_BY_NAME = {kind.name: kind for kind in KINDS}


def select_kind(dtype: DType, shape: Shape, *, encoding: str, sequence: bool) -> FeatureKind:
    """The kind of a valid feature of ``dtype``, ``shape`` and ``encoding`` (in the sequence section)."""
    return next(kind for kind in KINDS if kind.matches(dtype, shape, encoding, sequence))


def kind_named(name: str) -> FeatureKind:
    """The kind called ``name`` (``KeyError`` when there is none)."""
    return _KINDS_BY_NAME[name]


@dataclass(frozen=True, slots=True)
class CodecRow:
    """One runtime codec class (``codegen.runtime.codec``): the kind it serves and for which dtypes and shapes.

    ``generic`` says whether generated code subscripts the class with the numpy scalar type of the dtype
    (``NumericTensor[np.float32](...)``) so the attribute is typed precisely. ``column`` names the batch column
    layout of ``codegen.runtime.codec.batch``; ``plan`` gives the ``ExamplePlan`` operation for a dtype and shape, or
    ``None`` when the plan does not decode the feature (the codec's own decoding then runs).
    """

    codec: str
    kind: str
    matches: Callable[[DType, Shape], bool]
    column: str
    plan: Callable[[DType, Shape], PlanOp | None]
    generic: bool = False


def _scalar_op(dtype: DType, shape: Shape) -> PlanOp | None:
    return {
        Kind.INT: PlanOp.INT,
        Kind.BOOL: PlanOp.BOOL,
        Kind.FLOAT: PlanOp.FLOAT,
        Kind.STR: PlanOp.TEXT,
        Kind.BYTES: PlanOp.BYTES,
    }[dtype.kind]


def _array_op(dtype: DType, shape: Shape) -> PlanOp | None:
    return PlanOp.FLOAT_ARRAY if dtype.wire is Wire.FLOAT else PlanOp.INT_ARRAY


def _string_list_op(dtype: DType, shape: Shape) -> PlanOp | None:
    if len(shape) != 1:
        return None
    return PlanOp.TEXT_LIST if dtype.kind is Kind.STR else PlanOp.BYTES_LIST


def _steps_op(dtype: DType, shape: Shape) -> PlanOp | None:
    return PlanOp.STEPS_FLOAT if dtype.wire is Wire.FLOAT else PlanOp.STEPS_INT


def _raw_op(dtype: DType, shape: Shape) -> PlanOp | None:
    return PlanOp.RAW


def _no_op(dtype: DType, shape: Shape) -> PlanOp | None:
    return None


def _of(*kinds: Kind) -> Callable[[DType, Shape], bool]:
    return lambda dtype, shape: dtype.kind in kinds


_NUMERIC = (Kind.INT, Kind.BOOL, Kind.FLOAT)

CODECS: tuple[CodecRow, ...] = (
    CodecRow("IntScalar", "numeric_scalar", _of(Kind.INT), "scalars", _scalar_op),
    CodecRow("BoolScalar", "numeric_scalar", _of(Kind.BOOL), "scalars", _scalar_op),
    CodecRow("FloatScalar", "numeric_scalar", _of(Kind.FLOAT), "scalars", _scalar_op),
    CodecRow("NumericTensor", "numeric_tensor", _of(*_NUMERIC), "lists", _array_op, generic=True),
    CodecRow("TextScalar", "string_scalar", _of(Kind.STR), "items", _scalar_op),
    CodecRow("BytesScalar", "string_scalar", _of(Kind.BYTES), "items", _scalar_op),
    CodecRow("TextTensor", "string_list", _of(Kind.STR), "lists", _string_list_op),
    CodecRow("BytesTensor", "string_list", _of(Kind.BYTES), "lists", _string_list_op),
    CodecRow("RawTensor", "raw_tensor", _of(*_NUMERIC), "raw", _raw_op, generic=True),
    CodecRow("EncodedImage", "encoded_image", _of(Kind.INT), "images", _no_op),
    CodecRow("RaggedTensor", "ragged_tensor", _of(*_NUMERIC), "ragged", _no_op, generic=True),
    CodecRow("RaggedStrings", "ragged_tensor", _of(Kind.STR, Kind.BYTES), "ragged", _no_op),
    CodecRow(
        "SequenceTensor",
        "sequence_feature",
        lambda dtype, shape: dtype.kind in _NUMERIC and None not in shape,
        "steps",
        _steps_op,
        generic=True,
    ),
    CodecRow(
        "SequenceRagged", "sequence_feature", _of(*_NUMERIC), "ragged_steps", _no_op, generic=True
    ),
    CodecRow(
        "SequenceStrings", "sequence_feature", _of(Kind.STR, Kind.BYTES), "string_steps", _no_op
    ),
)
"""Every runtime codec class, grouped by kind; within a kind the first matching row is the codec."""

_CODECS_BY_NAME = {row.codec: row for row in CODECS}


def codec_for(kind: str, dtype: DType, shape: Shape) -> CodecRow:
    """The codec row of a feature of ``kind``, ``dtype`` and ``shape``."""
    return next(r for r in CODECS if r.kind == kind and r.matches(dtype, shape))


def codec_row(name: str) -> CodecRow:
    """The row of the runtime codec class called ``name`` (``KeyError`` when there is none)."""
    return _CODECS_BY_NAME[name]


def codec_row_of(cls: type) -> CodecRow | None:
    """The row of a codec class, or of the nearest class it derives from that has one (``None`` when none does)."""
    for base in cls.__mro__:
        row = _CODECS_BY_NAME.get(base.__name__)
        if row is not None:
            return row
    return None


def contract_header() -> str:
    """The text of ``codegen/_speedups/contract.h``: the numbers the C accelerator shares with Python."""
    lines = [
        "/*",
        " * The numbers the C accelerator shares with Python, generated from codegen/kinds.py (plan",
        " * operations, element codes) and codegen/dtypes.py (list kinds). Do not edit: regenerate with",
        " *     python -m codegen.kinds > codegen/_speedups/contract.h",
        " * (a test checks that this file is up to date).",
        " */",
        "#ifndef TFR_CONTRACT_H",
        "#define TFR_CONTRACT_H",
        "",
        "/* The operations of an ExamplePlan (PlanOp). */",
        "enum {",
        *(f"    OP_{op.name} = {op.value}," for op in PlanOp),
        "};",
        "",
        "/* Which list of a tf.train.Feature holds the values: its field number (Wire). */",
        "enum {",
        *(f"    LIST_{wire.name} = {wire.value}," for wire in Wire),
        "};",
        "",
        "/* The element code of each numeric dtype (its struct format character), and of a raw tensor",
        " * whose bytes are copied as they are. */",
        *(f"#define ELEMENT_{name.upper()} '{code}'" for name, code in ELEMENT_CODES.items()),
        f"#define ELEMENT_RAW '{RAW_ELEMENT}'",
        "",
        "#endif",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover - a developer's command
    print(contract_header(), end="")
