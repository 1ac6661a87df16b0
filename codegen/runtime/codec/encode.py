"""Serializing a batch's columns at once: :class:`BatchEncoder`.

A record's batch is written by the C accelerator's ``encode_examples`` a whole column at a time: each feature's
values are flattened once (numbers as int64 or float32 buffers, strings as one list, raw tensors as their bytes)
with the offsets of each record's values, and C writes every record's map entries in the order the record's
``encode`` writes them. Companion features (a raw tensor's stored shape, a ragged tensor's row lengths) are columns
of their own, computed from the batch's row splits or array shapes, and a ``SequenceExample``'s feature lists are
columns with one more level of offsets, the steps of each record. The bytes are those of ``encode()`` of each
record.

The fast path takes only columns in exactly the form batches hold (arrays of the declared dtype and shape,
:class:`Ragged` rows, lists of ``str``/``bytes``, lists of arrays for raw tensors with an unknown inner dimension,
:class:`Masked` with a bool mask); then every value is one the constructor accepts as it is. Anything else (another
form, another dtype, a value of the wrong type, encoded images, no accelerator) gives ``None``, and the caller
encodes record by record through the constructor, which checks and names every problem.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any, cast

import numpy as np
import numpy.typing as npt

from codegen.dtypes import DTYPES, DType, Kind
from codegen.kinds import codec_row_of
from codegen.runtime.accel import speedups
from codegen.runtime.codec import wire
from codegen.runtime.codec.batch import quiet_signaling_nans
from codegen.runtime.codec.columns import Masked, Ragged
from codegen.runtime.codec.features import Codec
from codegen.runtime.codec.sequences import SequenceCodec
from codegen.runtime.codec.tensors import RawTensor

__all__ = ["BatchEncoder"]

_FEATURE_COLUMNS = ("scalars", "items", "lists", "raw", "ragged")
"""The batch columns of the feature codecs the fast path writes."""

_LIST_COLUMNS = ("steps", "ragged_steps", "string_steps")
"""The batch columns of the feature list codecs the fast path writes."""

_KIND = {Kind.INT: 3, Kind.BOOL: 3, Kind.FLOAT: 2, Kind.STR: 1, Kind.BYTES: 0}
"""The ``encode_examples`` kind of each dtype kind."""

_RAW = 4
"""The ``encode_examples`` kind of one bytes value per list, from a buffer or a list of buffers."""

Entry = tuple[Any, ...]


class _Unfit(Exception):
    """A column is not in the form the fast path takes."""


def _column_of(codec: Codec[Any] | SequenceCodec[Any]) -> str | None:
    row = codec_row_of(type(codec))
    return None if row is None else row.column


class BatchEncoder:
    """Columnar serialization of a record's batches (see the module docstring)."""

    def __init__(
        self, codecs: Sequence[Codec[Any]], sequence: Sequence[SequenceCodec[Any]] | None = None
    ) -> None:
        lists = tuple(sequence or ())
        self.fast = (
            speedups is not None
            and all(_column_of(codec) in _FEATURE_COLUMNS for codec in codecs)
            and all(_column_of(codec) in _LIST_COLUMNS for codec in lists)
        )
        self._codecs = tuple(enumerate(codecs))
        self._lists = tuple((len(codecs) + j, codec) for j, codec in enumerate(lists))
        self._sequence = sequence is not None

    def encode(self, columns: Sequence[Any], size: int) -> list[bytes] | None:
        """Each record's bytes, or ``None`` when the columns are not all in the fast path's form."""
        if not self.fast or speedups is None:
            return None
        try:
            entries = _sorted(
                [e for index, codec in self._codecs for e in _entries(codec, columns[index], size)]
            )
            lists = (
                _sorted([_steps_entry(codec, columns[index], size) for index, codec in self._lists])
                if self._sequence
                else None
            )
        except _Unfit:
            return None
        try:
            encoded: list[bytes] = speedups.encode_examples(size, entries, lists)
        except (TypeError, ValueError):
            return None
        return encoded


def _sorted(entries: list[tuple[bytes, Entry]]) -> tuple[Entry, ...]:
    """The entries in map order: by the UTF-8 of their keys."""
    return tuple(entry for _, entry in sorted(entries, key=lambda item: item[0]))


def _entry(key: str, kind: int, values: Any, offsets: Any, present: Any) -> tuple[bytes, Entry]:
    return key.encode("utf-8"), (
        wire.key_field(key),
        kind,
        values,
        np.ascontiguousarray(offsets, np.int64),
        present,
    )


def _entries(codec: Codec[Any], column: Any, size: int) -> list[tuple[bytes, Entry]]:
    """The entries of a feature and its companions over the batch's records."""
    present: npt.NDArray[np.bool_] | None = None
    if codec.optional:
        if type(column) is not Masked:
            raise _Unfit
        present = column.present
        if present.dtype != np.bool_ or present.shape != (size,):
            raise _Unfit
        column = column.values
    if isinstance(codec, RawTensor):
        return _raw_entries(codec, column, size, present)
    shape = codec.shape
    nulls = shape.count(None)
    if nulls > 1:
        return _ragged_entries(codec, column, size, present)
    dtype = codec.dtype
    if nulls:
        if type(column) is not Ragged or len(column) != size:
            raise _Unfit
        inner = shape[1:]
        offsets = column.row_splits * math.prod(d for d in inner if d is not None)
        values = _leaf_values(dtype, column.values, inner)
    else:
        count = math.prod(d for d in shape if d is not None)
        offsets = np.arange(size + 1, dtype=np.int64) * count
        if dtype.numeric:
            if type(column) is not np.ndarray or column.shape != (size, *shape):
                raise _Unfit
            values = _leaf_values(dtype, column.reshape(-1), ())
            if dtype.kind is Kind.FLOAT and not shape:
                values = quiet_signaling_nans(values)
        else:
            if type(column) is not list or len(column) != size:
                raise _Unfit
            values = _flat_items(column, shape)
    return [_entry(codec.key, _KIND[dtype.kind], values, offsets, present)]


def _leaf_values(dtype: DType, values: Any, inner: Sequence[int | None]) -> Any:
    """Leaves of ``dtype`` with the fixed ``inner`` dimensions as ``encode_examples`` takes them: numbers flat in an
    int64 or float32 buffer, strings in one flat list."""
    if not dtype.numeric:
        return _flat_items(values, inner)
    if type(values) is not np.ndarray or values.shape[1:] != tuple(inner):
        raise _Unfit
    if values.dtype != dtype.numpy:
        raise _Unfit
    flat = values.reshape(-1)
    if _KIND[dtype.kind] == 3:
        return np.ascontiguousarray(flat, np.int64)
    return np.ascontiguousarray(flat, "<f4")


def _ragged_entries(
    codec: Codec[Any], column: Any, size: int, present: npt.NDArray[np.bool_] | None
) -> list[tuple[bytes, Entry]]:
    """A ragged tensor's flat values and the row lengths of each inner ``null`` level: as many nested
    :class:`Ragged` as ``null`` dimensions, whose row splits give each record's nodes at every depth."""
    levels = codec.shape.count(None)
    row = cast("tuple[int, ...]", codec.shape[levels:])
    if type(column) is not Ragged or len(column) != size:
        raise _Unfit
    splits = []
    node: Any = column
    for _ in range(levels):
        if type(node) is not Ragged:
            raise _Unfit
        splits.append(node.row_splits)
        node = node.values
    entries = []
    offsets = splits[0]
    for key, inner in zip(codec.companion_keys, splits[1:], strict=True):
        entries.append(_entry(key, 3, np.diff(inner), offsets, present))
        offsets = inner[offsets]
    values = _leaf_values(codec.dtype, node, row)
    entries.append(
        _entry(codec.key, _KIND[codec.dtype.kind], values, offsets * math.prod(row), present)
    )
    return entries


def _raw_entries(
    codec: RawTensor[Any], column: Any, size: int, present: npt.NDArray[np.bool_] | None
) -> list[tuple[bytes, Entry]]:
    """A raw tensor's bytes (one value per record) and, for unknown dimensions, its stored shape."""
    dtype = codec.dtype.numpy
    if dtype != dtype.newbyteorder("<"):
        raise _Unfit  # arrays do not hold their little-endian bytes
    shape = codec.shape
    itemsize = dtype.itemsize
    values: Any
    shapes: npt.NDArray[np.int64] | None = None
    if None not in shape:
        if (
            type(column) is not np.ndarray
            or column.dtype != dtype
            or column.shape != (size, *shape)
        ):
            raise _Unfit
        values = np.ascontiguousarray(column).reshape(-1).view(np.uint8)
        fixed = cast("tuple[int, ...]", shape)
        offsets = np.arange(size + 1, dtype=np.int64) * (math.prod(fixed) * itemsize)
    elif None not in shape[1:]:
        inner = cast("tuple[int, ...]", shape[1:])
        if type(column) is not Ragged or len(column) != size:
            raise _Unfit
        rows = column.values
        if type(rows) is not np.ndarray or rows.dtype != dtype or rows.shape[1:] != inner:
            raise _Unfit
        values = np.ascontiguousarray(rows).reshape(-1).view(np.uint8)
        offsets = column.row_splits * (math.prod(inner) * itemsize)
        shapes = np.empty((size, len(shape)), np.int64)
        shapes[:, 0] = np.diff(column.row_splits)
        shapes[:, 1:] = inner
    else:
        if type(column) is not list or len(column) != size:
            raise _Unfit
        rank = len(shape)
        known = [(axis, n) for axis, n in enumerate(shape) if n is not None]
        keep = None if present is None else present.tolist()
        empty = (0,) * rank
        values = []
        dims: list[tuple[int, ...]] = []
        for i, array in enumerate(column):
            if keep is not None and not keep[i]:
                values.append(b"")
                dims.append(empty)
                continue
            if type(array) is not np.ndarray:
                raise _Unfit
            kind = array.dtype
            dim = array.shape
            if (kind is not dtype and kind != dtype) or len(dim) != rank:
                raise _Unfit
            for axis, n in known:
                if dim[axis] != n:
                    raise _Unfit
            values.append(array)
            dims.append(dim)
        offsets = np.arange(size + 1, dtype=np.int64)
        shapes = np.fromiter(itertools.chain.from_iterable(dims), np.int64, size * rank)
        shapes = shapes.reshape(size, rank)
    entries = [_entry(codec.key, _RAW, values, offsets, present)]
    if shapes is not None:
        entries.extend(_shape_entries(codec, shapes, size, present))
    return entries


def _shape_entries(
    codec: RawTensor[Any],
    shapes: npt.NDArray[np.int64],
    size: int,
    present: npt.NDArray[np.bool_] | None,
) -> list[tuple[bytes, Entry]]:
    """The companions that store each record's shape (``shapes[i]``), in the layout the codec declares."""
    keys = codec.companion_keys
    rank = shapes.shape[1]
    layout = codec.shape_from
    each = np.arange(size + 1, dtype=np.int64)
    if layout is None or layout.encoding == "list" and not layout.per_dim:
        return [_entry(keys[0], 3, shapes.reshape(-1), each * rank, present)]
    if layout.per_dim:
        nulls = [d for d, n in enumerate(codec.shape) if n is None]
        return [
            _entry(key, 3, np.ascontiguousarray(shapes[:, d]), each, present)
            for key, d in zip(keys, nulls, strict=True)
        ]
    little = DTYPES[layout.dtype].numpy.newbyteorder("<")
    if shapes.size and int(shapes.max()) > np.iinfo(cast("Any", little)).max:
        raise _Unfit  # the record's constructor or encode names the problem
    data = shapes.astype(little).reshape(-1).view(np.uint8)
    return [_entry(keys[0], _RAW, data, each * (rank * little.itemsize), present)]


def _steps_entry(codec: SequenceCodec[Any], column: Any, size: int) -> tuple[bytes, Entry]:
    """A feature list's entry: one list per step, ``steps`` giving each record's steps."""
    if type(column) is not Ragged or len(column) != size:
        raise _Unfit
    shape = codec.shape
    steps = column.values
    if shape and shape[0] is None:  # a step holds any number of rows
        if type(steps) is not Ragged:
            raise _Unfit
        inner = shape[1:]
        offsets = steps.row_splits * math.prod(d for d in inner if d is not None)
        values = _leaf_values(codec.dtype, steps.values, inner)
    else:
        count = math.prod(d for d in shape if d is not None)
        values = _leaf_values(codec.dtype, steps, shape)
        offsets = np.arange(len(steps) + 1, dtype=np.int64) * count
    key, entry = _entry(codec.key, _KIND[codec.dtype.kind], values, offsets, None)
    return key, (*entry, column.row_splits)


def _flat_items(items: Any, dims: Sequence[int | None]) -> Any:
    """Nested lists of the fixed ``dims`` flattened (C order), checking every length."""
    if type(items) is not list:
        raise _Unfit
    for dim in dims:
        flat: list[Any] = []
        for row in items:
            if type(row) is not list or len(row) != dim:
                raise _Unfit
            flat.extend(row)
        items = flat
    return items
