"""Byte tensors packed into binary values for Parquet and back: the same values, sharing their bytes, whatever the
nesting, the nulls and the slicing; binary values of the wrong size refused by row."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codegen.errors import RecordError
from codegen.tools.parquet_layout import pack, packed_type, unpack

BYTE_TYPES = ["uint8", "int8"]


def _nested(pa: Any, values: Any, sizes: list[int], mask: list[bool] | None) -> Any:
    """``values`` (a flat array) in nested fixed-size lists of ``sizes`` (outermost first), the outermost level
    masked by ``mask`` (True: null)."""
    node = values
    for position in range(len(sizes) - 1, -1, -1):
        outer_mask = pa.array(mask, pa.bool_()) if position == 0 and mask is not None else None
        node = pa.FixedSizeListArray.from_arrays(node, sizes[position], mask=outer_mask)
    return node


@st.composite
def fixed_columns(draw: st.DrawFn) -> tuple[list[int], int, list[bool] | None, str, int, int]:
    sizes = draw(st.lists(st.integers(1, 4), min_size=1, max_size=3))
    rows = draw(st.integers(0, 6))
    mask = draw(st.none() | st.lists(st.booleans(), min_size=rows, max_size=rows))
    dtype = draw(st.sampled_from(BYTE_TYPES))
    start = draw(st.integers(0, rows))
    stop = draw(st.integers(start, rows))
    return sizes, rows, mask, dtype, start, stop


@settings(max_examples=60, deadline=None)
@given(fixed_columns())
def test_fixed_byte_tensors_pack_into_fixed_size_binary_and_back(
    pa: Any, case: tuple[list[int], int, list[bool] | None, str, int, int]
) -> None:
    sizes, rows, mask, dtype, start, stop = case
    width = math.prod(sizes)
    flat = np.arange(rows * width, dtype=np.int64).astype(dtype)
    column = _nested(pa, pa.array(flat), sizes, mask).slice(start, stop - start)
    kind = packed_type(pa, column.type)
    assert kind == pa.binary(width)
    packed = pack(pa, column, kind)
    packed.validate(full=True)
    assert packed.type == kind and len(packed) == len(column)
    expected = [
        None if v is None else np.asarray(v, dtype).reshape(-1).tobytes() for v in _rows(column)
    ]
    assert packed.to_pylist() == expected
    back = unpack(pa, packed, column.type, "column 'x'")
    back.validate(full=True)
    assert back.type == column.type and back.to_pylist() == column.to_pylist()


def _rows(column: Any) -> list[Any]:
    return [None if v is None else np.asarray(v).reshape(-1).tolist() for v in column.to_pylist()]


def test_packing_shares_the_bytes(pa: Any) -> None:
    """No byte is copied either way: the binary values are the leaf buffer, and back."""
    flat = np.arange(4 * 6, dtype=np.uint8)
    column = _nested(pa, pa.array(flat), [2, 3], None)
    packed = pack(pa, column, pa.binary(6))
    leaf = column.values.values
    assert packed.buffers()[1].address == leaf.buffers()[1].address
    back = unpack(pa, packed, column.type, "column 'x'")
    assert back.values.values.buffers()[1].address == packed.buffers()[1].address


@settings(max_examples=60, deadline=None)
@given(
    rows=st.lists(st.none() | st.lists(st.integers(0, 255), max_size=5), max_size=6),
    inner=st.sampled_from([None, 1, 3]),
    outer=st.booleans(),
    start=st.integers(0, 6),
)
def test_ragged_byte_tensors_pack_into_large_binary_and_back(
    pa: Any, rows: list[list[int] | None], inner: int | None, outer: bool, start: int
) -> None:
    """``[null]`` rows become one large_binary value each; ``[null, k]`` a list of fixed_size_binary(k); one more
    ``null`` level outside (a feature list's steps) stays a list level."""
    values: list[Any] = (
        rows if inner is None else [None if r is None else [r] * inner for r in rows]
    )
    kind = pa.large_list(pa.uint8()) if inner is None else pa.large_list(pa.list_(pa.uint8(), 1))
    if inner is not None:
        values = [None if r is None else [[x] for x in r] for r in rows]
    column = pa.array(values, kind)
    if outer:
        column = pa.LargeListArray.from_arrays(pa.array([0, len(column)], pa.int64()), column)
    column = column.slice(min(start, len(column)))
    packed_kind = packed_type(pa, column.type)
    leaf = pa.large_binary() if inner is None else pa.large_list(pa.binary(1))
    assert packed_kind == (pa.large_list(leaf) if outer else leaf)
    packed = pack(pa, column, packed_kind)
    packed.validate(full=True)
    back = unpack(pa, packed, column.type, "column 'x'")
    back.validate(full=True)
    assert back.to_pylist() == column.to_pylist()


def test_a_raw_tensors_data_packs_and_its_shape_stays(pa: Any) -> None:
    kind = pa.struct(
        [pa.field("shape", pa.list_(pa.int64(), 2)), pa.field("data", pa.large_list(pa.uint8()))]
    )
    column = pa.array(
        [{"shape": [1, 2], "data": [1, 2]}, None, {"shape": [0, 3], "data": []}], kind
    )
    packed_kind = packed_type(pa, kind)
    assert packed_kind == pa.struct(
        [pa.field("shape", pa.list_(pa.int64(), 2)), pa.field("data", pa.large_binary())]
    )
    packed = pack(pa, column, packed_kind)
    packed.validate(full=True)
    assert packed.to_pylist() == [
        {"shape": [1, 2], "data": b"\x01\x02"},
        None,
        {"shape": [0, 3], "data": b""},
    ]
    assert unpack(pa, packed, kind, "column 'x'").to_pylist() == column.to_pylist()


@pytest.mark.parametrize("binary", ["binary", "large_binary", "fixed_size_binary"])
def test_binary_values_from_other_writers_unpack_when_their_size_fits(pa: Any, binary: str) -> None:
    kind = pa.list_(pa.list_(pa.uint8(), 2), 2)
    source = {
        "binary": pa.binary(),
        "large_binary": pa.large_binary(),
        "fixed_size_binary": pa.binary(4),
    }[binary]
    column = pa.array([b"\x01\x02\x03\x04", None, b"\x05\x06\x07\x08"], source)
    assert unpack(pa, column, kind, "column 'x'").to_pylist() == [
        [[1, 2], [3, 4]],
        None,
        [[5, 6], [7, 8]],
    ]
    if binary != "fixed_size_binary":
        short = pa.array([b"\x01\x02\x03\x04", b"\x01\x02\x03"], source)
        with pytest.raises(
            RecordError, match=r"row 1: column 'x': a binary value of 3 bytes, where a tensor"
        ):
            unpack(pa, short, kind, "column 'x'")


def test_other_columns_have_no_packed_type(pa: Any) -> None:
    for kind in (
        pa.int64(),
        pa.uint8(),  # a scalar: nothing to pack
        pa.list_(pa.int64(), 3),
        pa.large_list(pa.float32()),
        pa.large_list(pa.string()),
        pa.struct(
            [
                pa.field("shape", pa.list_(pa.int64(), 1)),
                pa.field("data", pa.large_list(pa.float32())),
            ]
        ),
    ):
        assert packed_type(pa, kind) is None


def test_a_wrong_size_inside_a_list_names_the_row_of_the_list(pa: Any) -> None:
    kind = pa.large_list(pa.list_(pa.int8(), 2))
    column = pa.array([[b"ab"], [], [b"cd", b"e"]], pa.large_list(pa.binary()))
    with pytest.raises(RecordError, match=r"^row 12: column 'x': a binary value of 1 bytes"):
        unpack(pa, column, kind, "column 'x'", start=10)
