"""The column types of a batch of records: :class:`Ragged` and :class:`Masked`.

A generated ``<Record>Batch`` holds one column per attribute: a numpy array ``[B, *shape]`` for a
fixed numeric shape, a list for strings, and these two for the rest:

* :class:`Ragged` -- rows of different lengths, as flat ``values`` plus ``row_splits``: row ``i`` is
  ``values[row_splits[i]:row_splits[i + 1]]``. ``values`` is a numpy array ``[N, *inner]``, a list
  (strings), or another ``Ragged`` (one level per ``null`` dimension), like the row partitions of a
  ``tf.RaggedTensor``.
* :class:`Masked` -- an optional feature that may be absent: ``values`` (a column of any of the
  forms above, holding a placeholder in the rows of absent records) and a ``present`` mask.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, TypeVar, cast, overload

import numpy as np
import numpy.typing as npt

from codegen.errors import RecordError

__all__ = ["Masked", "Ragged"]

V = TypeVar("V")
"""The type of a column's values: an array, a list or a :class:`Ragged`."""

_INT64 = np.dtype(np.int64)


def _sized(values: object) -> int:
    """How many rows ``values`` (an array, a list or a :class:`Ragged`) holds."""
    if isinstance(values, np.ndarray) and values.ndim:
        return int(values.shape[0])
    if isinstance(values, list | Ragged):
        return len(values)
    kind = "a 0-d array" if isinstance(values, np.ndarray) else type(values).__name__
    raise RecordError(f"a column holds a numpy array, a list or a Ragged, got {kind}")


@dataclass(frozen=True, slots=True, eq=False)
class Ragged(Generic[V]):
    """Rows of different lengths: row ``i`` is ``values[row_splits[i]:row_splits[i + 1]]``.

    ``row_splits`` is a 1-D int64 array that starts at 0, never decreases and ends at the number
    of ``values``; there are ``len(row_splits) - 1`` rows. The constructor checks that (a
    :class:`~codegen.errors.RecordError` says what is wrong) and stores the splits as int64.
    """

    values: V
    row_splits: npt.NDArray[np.int64]

    def __post_init__(self) -> None:
        splits = np.asarray(self.row_splits)
        if splits.ndim != 1 or splits.size == 0:
            raise RecordError(
                f"Ragged: row_splits must be a 1-D array of >= 1 values, got shape {splits.shape}"
            )
        if splits.dtype != _INT64:
            if splits.dtype.kind not in "iu":
                raise RecordError(f"Ragged: row_splits must hold integers, got {splits.dtype}")
            splits = splits.astype(np.int64)
        size = _sized(self.values)
        if int(splits[0]) != 0 or int(splits[-1]) != size:
            raise RecordError(
                f"Ragged: row_splits must run from 0 to the number of values ({size}), "
                f"got {int(splits[0])} .. {int(splits[-1])}"
            )
        if splits.size > 1 and int(np.diff(splits).min()) < 0:
            raise RecordError("Ragged: row_splits must not decrease")
        object.__setattr__(self, "row_splits", splits)

    def __len__(self) -> int:
        """The number of rows."""
        return int(self.row_splits.size) - 1

    def row_lengths(self) -> npt.NDArray[np.int64]:
        """The length of every row."""
        return np.diff(self.row_splits)

    def row(self, index: int) -> V:
        """Row ``index`` (negative: from the end), a slice of ``values`` (a view of an array)."""
        rows = len(self)
        position = index + rows if index < 0 else index
        if not 0 <= position < rows:
            raise IndexError(f"Ragged row {index} out of range for {rows} rows")
        start, stop = int(self.row_splits[position]), int(self.row_splits[position + 1])
        return cast("V", cast("Any", self.values)[start:stop])

    @overload
    def __getitem__(self, index: int) -> V: ...

    @overload
    def __getitem__(self, index: slice) -> Ragged[V]: ...

    def __getitem__(self, index: int | slice) -> V | Ragged[V]:
        """``ragged[i]`` is :meth:`row`; ``ragged[a:b]`` the rows ``a .. b - 1`` as a ``Ragged``."""
        if isinstance(index, slice):
            start, stop, step = index.indices(len(self))
            if step != 1:
                raise IndexError("Ragged rows slice with step 1 only")
            stop = max(start, stop)
            first, last = int(self.row_splits[start]), int(self.row_splits[stop])
            values = cast("V", cast("Any", self.values)[first:last])
            return Ragged(values, self.row_splits[start : stop + 1] - first)
        return self.row(index)

    def to_list(self) -> list[Any]:
        """Every row, in the form of one record's value: array slices, lists, or (for nested
        ``values``) lists of the inner rows."""
        values: Any = self.values
        bounds = self.row_splits.tolist()
        if isinstance(values, Ragged):
            return [values[a:b].to_list() for a, b in zip(bounds, bounds[1:], strict=False)]
        return [values[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]

    def to_padded(self, fill: Any = 0) -> npt.NDArray[Any]:
        """A dense array ``[rows, longest row, ...]``, ``fill`` after the end of each row.

        Numeric values keep their dtype; list values (strings) give an object array of the list's
        items. Nested ``Ragged`` values are padded level by level.
        """
        inner = self.values
        if isinstance(inner, Ragged):
            flat = inner.to_padded(fill)
        elif isinstance(inner, np.ndarray):
            flat = inner
        else:
            items = cast("list[Any]", inner)
            flat = np.empty(len(items), object)
            for i, item in enumerate(items):  # one object per item, even when items are lists
                flat[i] = item
        lengths = self.row_lengths()
        longest = int(lengths.max()) if lengths.size else 0
        out = np.full((len(self), longest, *flat.shape[1:]), fill, dtype=flat.dtype)
        rows = np.repeat(np.arange(len(self)), lengths)
        columns = np.arange(flat.shape[0]) - np.repeat(self.row_splits[:-1], lengths)
        out[rows, columns] = flat
        return out


@dataclass(frozen=True, slots=True, eq=False)
class Masked(Generic[V]):
    """The column of an optional feature: ``values`` (a placeholder where the record had none)
    and ``present`` (a bool array, one per record, ``False`` where the feature was absent).

    Placeholders are zeros for numbers, empty strings, and empty rows for ragged values.
    """

    values: V
    present: npt.NDArray[np.bool_]

    def __post_init__(self) -> None:
        present = np.asarray(self.present)
        if present.dtype != np.bool_ or present.ndim != 1:
            raise RecordError(
                f"Masked: present must be a 1-D bool array, got {present.dtype} "
                f"of shape {present.shape}"
            )
        if present.size != _sized(self.values):
            raise RecordError(
                f"Masked: {present.size} present flags for {_sized(self.values)} rows of values"
            )
        object.__setattr__(self, "present", present)

    def __len__(self) -> int:
        """The number of records."""
        return int(self.present.size)
