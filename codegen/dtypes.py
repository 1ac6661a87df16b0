"""The dtypes of the schema language and how each one travels in a tf.train.Example."""

from __future__ import annotations

import enum
from dataclasses import dataclass

import numpy as np


class Wire(enum.IntEnum):
    """Which list of a ``tf.train.Feature`` carries the values (the protobuf field number of the oneof)."""

    BYTES = 1
    FLOAT = 2
    INT64 = 3

    @property
    def list_name(self) -> str:
        return {Wire.BYTES: "bytes_list", Wire.FLOAT: "float_list", Wire.INT64: "int64_list"}[self]

    @property
    def tf_dtype_name(self) -> str:
        return {Wire.BYTES: "string", Wire.FLOAT: "float32", Wire.INT64: "int64"}[self]


class Kind(enum.Enum):
    """What Python value class a scalar of the dtype is."""

    INT = "int"
    BOOL = "bool"
    FLOAT = "float"
    STR = "str"
    BYTES = "bytes"


@dataclass(frozen=True, slots=True)
class DType:
    """One dtype of the schema language.

    ``lo``/``hi`` bound integer values (inclusive); ``list_ok`` says whether the dtype may travel in a
    Int64List/FloatList/BytesList (the default list encoding) or only with ``encoding: raw``.
    """

    name: str
    numpy: np.dtype[np.generic]
    wire: Wire
    kind: Kind
    lo: int | None = None
    hi: int | None = None
    list_ok: bool = True

    @property
    def numeric(self) -> bool:
        return self.kind in (Kind.INT, Kind.BOOL, Kind.FLOAT)

    def __repr__(self) -> str:
        return f"DType({self.name})"


def _int(name: str, np_name: str, list_ok: bool = True) -> DType:
    info = np.iinfo(np.dtype(np_name))
    return DType(
        name, np.dtype(np_name), Wire.INT64, Kind.INT, int(info.min), int(info.max), list_ok
    )


INT64 = _int("int64", "int64")
INT32 = _int("int32", "int32")
INT16 = _int("int16", "int16")
INT8 = _int("int8", "int8")
UINT64 = _int("uint64", "uint64", list_ok=False)
UINT32 = _int("uint32", "uint32")
UINT16 = _int("uint16", "uint16")
UINT8 = _int("uint8", "uint8")
BOOL = DType("bool", np.dtype("bool"), Wire.INT64, Kind.BOOL, 0, 1)
FLOAT32 = DType("float32", np.dtype("float32"), Wire.FLOAT, Kind.FLOAT)
FLOAT64 = DType("float64", np.dtype("float64"), Wire.FLOAT, Kind.FLOAT, list_ok=False)
FLOAT16 = DType("float16", np.dtype("float16"), Wire.FLOAT, Kind.FLOAT, list_ok=False)
BYTES = DType("bytes", np.dtype("object"), Wire.BYTES, Kind.BYTES)
STRING = DType("string", np.dtype("object"), Wire.BYTES, Kind.STR)

DTYPES: dict[str, DType] = {
    d.name: d
    for d in (
        INT64, INT32, INT16, INT8, UINT64, UINT32, UINT16, UINT8, BOOL,
        FLOAT32, FLOAT64, FLOAT16, BYTES, STRING,
    )
}  # fmt: skip
"""Every dtype by its schema name, in documentation order."""
