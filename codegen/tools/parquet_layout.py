"""How ``tfr-gen convert`` lays a record's columns out in Parquet: in their Arrow form
(:func:`~codegen.runtime.codec.arrow.arrow_schema`), but for two kinds of column, each marked in its field's metadata
(``tfr.layout``) so that converting the file back restores them:

* **Encoded images** (``encoding: jpeg``, ``png`` or ``image``): the encoded bytes the TFRecord holds, as ``binary``
  (``tfr.layout: encoded``). Going to Parquet the images are not decoded, nor encoded again coming back, so the
  round trip gives the same bytes (decoding a JPEG and encoding it again changes its pixels) and the file is as small
  as the images (their pixels take about five times the room). Both ways each image is checked by its header: an
  image of the feature's encoding, of the declared height and width.
* **Byte tensors** (``uint8`` and ``int8`` values of a tensor: images and masks as raw tensors): one binary value
  per tensor (``fixed_size_binary`` when its size is fixed), or per row of the dimensions after its last ``null``
  one, holding its bytes in C order as ``encoding: raw`` does (``tfr.layout: bytes``). Parquet has no fixed-size
  lists, so as nested lists every byte would carry a repetition and a definition level of its own: on the
  benchmark's raw images, writing the file took 4.5 times as long and reading it 30 to 50 times as long (pyarrow,
  polars), and it was no smaller.

Converting back accepts either form of a byte tensor (its binary values, or the nested lists of ``Record.to_arrow``,
as Parquet written by other tools may hold them), and either form of an encoded image (its bytes, or its pixels as
nested lists, as earlier versions wrote them, which are then encoded by the feature's encoding). Binary values are
packed and unpacked without copying their bytes.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from codegen.dtypes import DTYPES
from codegen.errors import RecordError
from codegen.generator.ir import FeatureIR, RecordIR
from codegen.kinds import IMAGE_ENCODINGS, codec_for, select_kind
from codegen.runtime.codec.arrow import ColumnForm

__all__ = [
    "BYTES",
    "ENCODED",
    "LAYOUT",
    "byte_tensor",
    "encoded_images",
    "pack",
    "parquet_field",
    "stored_record",
    "unpack",
]

LAYOUT = b"tfr.layout"
"""The Parquet field metadata key that says a column is not in its Arrow form."""
ENCODED = b"encoded"
"""``tfr.layout`` of an encoded image stored as its encoded bytes."""
BYTES = b"bytes"
"""``tfr.layout`` of a byte tensor stored as binary values."""

_BYTE_DTYPES = frozenset({"uint8", "int8"})


def encoded_images(record: RecordIR) -> tuple[str, ...]:
    """The names of ``record``'s encoded image features."""
    return tuple(f.name for f in record.all_features if f.encoding in IMAGE_ENCODINGS)


def stored_record(record: RecordIR) -> RecordIR:
    """``record`` with each encoded image feature read and written as the bytes value it is stored as (same key,
    same optionality): what Parquet holds of it."""
    features = tuple(_stored(f) if f.encoding in IMAGE_ENCODINGS else f for f in record.features)
    return dataclasses.replace(record, features=features)


def _stored(feature: FeatureIR) -> FeatureIR:
    dtype, shape = DTYPES["bytes"], ()
    kind = select_kind(dtype, shape, encoding="list", sequence=False)
    return dataclasses.replace(
        feature,
        dtype=dtype,
        shape=shape,
        kind=kind,
        codec=codec_for(kind.name, dtype, shape),
        encoding="list",
        quality=None,
        has_default=False,
        default=None,
    )


def byte_tensor(form: ColumnForm) -> bool:
    """Whether a column of ``form`` is a byte tensor stored as binary values (see the module docstring)."""
    return form.dtype.name in _BYTE_DTYPES and bool(form.dims)


# --- types ----------------------------------------------------------------------------------------


def _is_byte(pa: Any, kind: Any) -> bool:
    return bool(pa.types.is_uint8(kind) or pa.types.is_int8(kind))


def _fixed_run(pa: Any, kind: Any) -> tuple[list[int], Any]:
    """The sizes of the nested fixed-size lists that ``kind`` starts with, and the type inside them."""
    sizes: list[int] = []
    while pa.types.is_fixed_size_list(kind):
        sizes.append(kind.list_size)
        kind = kind.value_type
    return sizes, kind


def packed_type(pa: Any, kind: Any) -> Any:
    """The Parquet type of a byte tensor column of Arrow type ``kind`` (``None``: no byte values to pack)."""
    if pa.types.is_struct(kind):  # a raw tensor's arrays: their shapes and their data
        index = kind.get_field_index("data")
        data = packed_type(pa, kind.field(index).type) if index >= 0 else None
        if data is None:
            return None
        fields = [kind.field(i) for i in range(kind.num_fields)]
        fields[index] = fields[index].with_type(data)
        return pa.struct(fields)
    sizes, inner = _fixed_run(pa, kind)
    if sizes and _is_byte(pa, inner):
        return pa.binary(math.prod(sizes))
    if pa.types.is_large_list(kind) or pa.types.is_list(kind):
        if _is_byte(pa, kind.value_type):
            return pa.large_binary()
        inner = packed_type(pa, kind.value_type)
        return None if inner is None else pa.large_list(inner)
    return None


def parquet_field(pa: Any, field: Any, form: ColumnForm, encoded: bool) -> Any:
    """The Parquet field of a record's Arrow ``field`` (of ``form``): an encoded image's (already ``binary``, read
    by its stored record) or a byte tensor's marked with its layout, any other as it is."""
    if encoded:
        return field.with_metadata({**field.metadata, LAYOUT: ENCODED})
    if byte_tensor(form):
        kind = packed_type(pa, field.type)
        if kind is not None:
            return field.with_type(kind).with_metadata({**field.metadata, LAYOUT: BYTES})
    return field


# --- arrays ---------------------------------------------------------------------------------------


def _whole(pa: Any, array: Any) -> Any:
    """``array`` starting at offset 0 (copied when it is a slice: Parquet readers give whole arrays)."""
    return pa.concat_arrays([array]) if array.offset else array


def pack(pa: Any, array: Any, kind: Any) -> Any:
    """``array`` (a byte tensor column in its Arrow form) as Parquet type ``kind`` (:func:`packed_type`), sharing its
    bytes."""
    array = _whole(pa, array)
    source = array.type
    validity = array.buffers()[0]
    if pa.types.is_struct(source):
        children = [
            pack(pa, array.field(i), kind.field(i).type)
            if source.field(i).type != kind.field(i).type
            else array.field(i)
            for i in range(source.num_fields)
        ]
        return pa.Array.from_buffers(
            kind, len(array), [validity], array.null_count, children=children
        )
    if pa.types.is_fixed_size_binary(kind):
        leaf, start = array, 0
        while pa.types.is_fixed_size_list(
            leaf.type
        ):  # where the first value lies in the leaf's buffer
            start = (leaf.offset + start) * leaf.type.list_size
            leaf = leaf.values
        data = leaf.buffers()[1].slice(leaf.offset + start, len(array) * kind.byte_width)
        return pa.Array.from_buffers(kind, len(array), [validity, data], array.null_count)
    offsets = array.buffers()[1]
    if pa.types.is_list(source):  # (32-bit offsets: from other writers)
        array = array.cast(pa.large_list(source.value_type))
        validity, offsets = array.buffers()[0], array.buffers()[1]
    values = array.values
    if pa.types.is_large_binary(kind):
        data = values.buffers()[1].slice(values.offset)
        return pa.Array.from_buffers(kind, len(array), [validity, offsets, data], array.null_count)
    return _large_list(pa, array, pack(pa, values, kind.value_type))


class _WrongSize(Exception):
    """A binary value of another size than its tensor's: at ``row`` of the column being unpacked."""

    def __init__(self, row: int, size: int, sizes: Sequence[int]) -> None:
        super().__init__(row, size, sizes)
        self.row, self.size, self.sizes = row, size, list(sizes)


def unpack(pa: Any, array: Any, kind: Any, where: str, start: int = 0) -> Any:
    """``array`` (a byte tensor column as binary values, or already in its Arrow form) as Arrow type ``kind`` (its
    Arrow form), sharing its bytes; a binary value of another size than its tensor's is a :class:`RecordError`
    naming its row (counted from ``start``) and ``where`` (the column)."""
    try:
        return _unpack(pa, array, kind)
    except _WrongSize as wrong:
        raise RecordError(
            f"row {start + wrong.row}: {where}: a binary value of {wrong.size} bytes, where a tensor of"
            f" shape {wrong.sizes} has {math.prod(wrong.sizes)}"
        ) from None


def _unpack(pa: Any, array: Any, kind: Any) -> Any:
    array = _whole(pa, array)
    source = array.type
    if source == kind:
        return array
    validity = array.buffers()[0]
    if pa.types.is_struct(kind) and pa.types.is_struct(source):
        children = []
        for i in range(kind.num_fields):
            name = kind.field(i).name
            index = source.get_field_index(name)
            if index < 0:
                return array  # (from_arrow names what is missing)
            children.append(_unpack(pa, array.field(index), kind.field(i).type))
        return pa.Array.from_buffers(
            kind, len(array), [validity], array.null_count, children=children
        )
    sizes, leaf_type = _fixed_run(pa, kind)
    binary = (
        pa.types.is_binary(source)
        or pa.types.is_large_binary(source)
        or pa.types.is_fixed_size_binary(source)
    )
    if sizes and _is_byte(pa, leaf_type) and binary:
        width = math.prod(sizes)
        if not pa.types.is_fixed_size_binary(source) or source.byte_width != width:
            array = _fixed_width(pa, array, width, sizes)
            validity = array.buffers()[0]
        count = len(array)
        data = array.buffers()[1]
        node = pa.Array.from_buffers(leaf_type, count * width, [None, data])
        for position in range(len(sizes) - 1, -1, -1):
            size = sizes[position]
            outer = math.prod(sizes[:position]) * count
            node = pa.Array.from_buffers(
                pa.list_(node.type, size),
                outer,
                [validity if position == 0 else None],
                array.null_count if position == 0 else 0,
                children=[node],
            )
        return node
    if (pa.types.is_large_list(kind) or pa.types.is_list(kind)) and _is_byte(pa, kind.value_type):
        if pa.types.is_binary(source) or pa.types.is_fixed_size_binary(source):
            array = _whole(pa, array.cast(pa.large_binary()))
            source = array.type
        if pa.types.is_large_binary(source):
            _, offsets, data = array.buffers()
            size = int(np.frombuffer(offsets, np.int64, len(array) + 1)[-1])
            return _large_list(
                pa, array, pa.Array.from_buffers(kind.value_type, size, [None, data])
            )
        return array
    if pa.types.is_large_list(kind) and (
        pa.types.is_large_list(source) or pa.types.is_list(source)
    ):
        if pa.types.is_list(source):
            array = array.cast(pa.large_list(source.value_type))
        try:
            child = _unpack(pa, array.values, kind.value_type)
        except _WrongSize as wrong:  # a value of a row: that row
            bounds = np.frombuffer(array.buffers()[1], np.int64, len(array) + 1)
            row = int(np.searchsorted(bounds, wrong.row, side="right")) - 1
            raise _WrongSize(row, wrong.size, wrong.sizes) from None
        return _large_list(pa, array, child)
    return array  # (from_arrow names what does not fit)


def _large_list(pa: Any, array: Any, child: Any) -> Any:
    """A ``large_list`` of ``child`` with the rows of ``array`` (a large list or binary array at offset 0: its
    validity and 64-bit offsets)."""
    validity, offsets = array.buffers()[:2]
    return pa.Array.from_buffers(
        pa.large_list(child.type),
        len(array),
        [validity, offsets],
        array.null_count,
        children=[child],
    )


def _fixed_width(pa: Any, array: Any, width: int, sizes: Sequence[int]) -> Any:
    """``array`` (binary values) as ``fixed_size_binary(width)``; :class:`_WrongSize` at the first value of
    another size."""
    pc = pa.compute
    lengths = pc.binary_length(array)
    wrong = pc.and_(pc.is_valid(lengths), pc.not_equal(lengths, width))
    if pc.any(wrong).as_py():
        row = pc.index(wrong, True).as_py()
        raise _WrongSize(row, lengths[row].as_py(), sizes)
    return _whole(pa, array.cast(pa.binary(width)))
