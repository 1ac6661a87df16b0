"""The column types of a batch: ``Ragged`` (rows, slices, padding, nesting) and ``Masked``."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from codegen.dtypes import DTYPES
from codegen.errors import RecordError
from codegen.runtime.codec.batch import _ArrayLeaves
from codegen.runtime.codec.columns import Masked, Ragged


def test_rows_are_slices_of_the_values() -> None:
    ragged = Ragged(np.arange(6, dtype=np.int16).reshape(3, 2), np.array([0, 2, 2, 3], np.int32))
    assert len(ragged) == 3 and ragged.row_splits.dtype == np.int64
    assert ragged.row_lengths().tolist() == [2, 0, 1]
    assert ragged.row(0).tolist() == [[0, 1], [2, 3]]
    assert ragged.row(1).shape == (0, 2) and ragged[-1].tolist() == [[4, 5]]
    assert np.shares_memory(ragged.row(0), ragged.values)
    with pytest.raises(IndexError, match="Ragged row 3 out of range for 3 rows"):
        ragged.row(3)
    with pytest.raises(IndexError, match="Ragged row -4 out of range"):
        ragged.row(-4)


def test_slices_are_ragged_rows_rebased() -> None:
    ragged = Ragged(["a", "b", "c", "d"], np.array([0, 1, 3, 4]))
    tail = ragged[1:]
    assert tail.values == ["b", "c", "d"] and tail.row_splits.tolist() == [0, 2, 3]
    assert ragged[2:1].row_splits.tolist() == [0] and ragged[2:1].values == []
    with pytest.raises(IndexError, match="step 1 only"):
        ragged[::2]


def test_nested_ragged_lists_and_pads_level_by_level() -> None:
    leaves = Ragged(np.arange(5, dtype=np.float32), np.array([0, 2, 2, 5]))
    nested = Ragged(leaves, np.array([0, 1, 1, 3]))
    listed = nested.to_list()
    assert [[leaf.tolist() for leaf in row] for row in listed] == [
        [[0.0, 1.0]],
        [],
        [[], [2.0, 3.0, 4.0]],
    ]
    padded = nested.to_padded(-1)
    assert padded.dtype == np.float32 and padded.shape == (3, 2, 3)
    assert padded.tolist() == [
        [[0, 1, -1], [-1, -1, -1]],
        [[-1, -1, -1], [-1, -1, -1]],
        [[-1, -1, -1], [2, 3, 4]],
    ]
    assert nested.row(2).row(1).tolist() == [2.0, 3.0, 4.0]


def test_strings_pad_into_an_object_array() -> None:
    ragged = Ragged([["a", "b"], ["c", "d"], ["e", "f"]], np.array([0, 2, 3]))
    padded = ragged.to_padded(None)
    assert padded.dtype == object and padded.shape == (2, 2)
    assert padded.tolist() == [[["a", "b"], ["c", "d"]], [["e", "f"], None]]
    assert Ragged([], np.array([0, 0, 0])).to_padded("").shape == (2, 0)
    square = Ragged([["a", "b"], ["c", "d"]], np.array([0, 1, 2])).to_padded()
    assert square.shape == (2, 1) and square[1, 0] == ["c", "d"]


@pytest.mark.parametrize(
    ("values", "splits", "message"),
    [
        (
            np.arange(3),
            np.array([[0, 3]]),
            r"row_splits must be a 1-D array of >= 1 values, got shape \(1, 2\)",
        ),
        (np.arange(3), np.array([], np.int64), "row_splits must be a 1-D array of >= 1 values"),
        (np.arange(3), np.array([0.0, 3.0]), "row_splits must hold integers, got float64"),
        (np.arange(3), np.array([1, 3]), r"run from 0 to the number of values \(3\), got 1 .. 3"),
        (["a"], np.array([0, 2]), r"run from 0 to the number of values \(1\), got 0 .. 2"),
        (np.arange(3), np.array([0, 2, 1, 3]), "row_splits must not decrease"),
        (
            np.float32(1.0),
            np.array([0]),
            "a column holds a numpy array, a list or a Ragged, got float32",
        ),
        (
            np.array(1.0),
            np.array([0]),
            "a column holds a numpy array, a list or a Ragged, got a 0-d array",
        ),
    ],
)
def test_bad_row_splits_are_refused(values: Any, splits: Any, message: str) -> None:
    with pytest.raises(RecordError, match=message):
        Ragged(values, splits)


def test_masked_pairs_values_with_a_present_mask() -> None:
    masked = Masked(np.array([1, 0, 3]), np.array([True, False, True]))
    assert len(masked) == 3
    with pytest.raises(
        RecordError, match=r"present must be a 1-D bool array, got int64 of shape \(3,\)"
    ):
        Masked(np.array([1, 0, 3]), np.array([1, 0, 1]))
    with pytest.raises(RecordError, match="2 present flags for 3 rows of values"):
        Masked([1, 2, 3], np.array([True, False]))


@pytest.mark.parametrize(
    ("dtype", "rows", "expected"),
    [
        ("int64", [np.array([1, 2], np.int64), np.array([], np.int64), np.array([3])], [1, 2, 3]),
        ("uint8", [[1, 255], [], [7]], [1, 255, 7]),  # lists: each converted to the dtype
        ("uint8", [np.array([1, 255], np.uint8), [7]], [1, 255, 7]),
        ("float32", [np.array([0.5], np.float32), np.array([1, 2], np.int64)], [0.5, 1.0, 2.0]),
    ],
)
def test_rows_of_numbers_join_into_one_array_of_the_dtype(
    dtype: str, rows: list[Any], expected: list[Any]
) -> None:
    joined = _ArrayLeaves(DTYPES[dtype], ()).join(rows)
    assert joined.dtype == DTYPES[dtype].numpy and joined.tolist() == expected
