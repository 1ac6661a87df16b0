"""Serializing a batch's columns at once: :class:`BatchEncoder`.

A ``tf.train.Example`` whose features all travel in their own list (scalars, fixed tensors, ``[null, ...]`` lists of
numbers or strings; optional or not) is written by the C accelerator's ``encode_examples`` a whole column at a time:
each feature's values are flattened once (numbers as int64 or float32 buffers, strings as one list) with the
offsets of each record's values, and C writes every record's map entries in the order the record's ``encode``
writes them. The bytes are those of ``encode()`` of each record.

The fast path takes only columns in exactly the form batches hold (arrays of the declared dtype and shape,
:class:`Ragged` rows, lists of ``str``/``bytes``, :class:`Masked` with a bool mask); then every value is one the
constructor accepts as it is. Anything else (another form, another dtype, a value of the wrong type, raw and ragged
features with companion keys, ``SequenceExample`` records, no accelerator) gives ``None``, and the caller encodes
record by record through the constructor, which checks and names every problem.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from codegen.dtypes import Kind
from codegen.kinds import codec_row_of
from codegen.runtime.accel import speedups
from codegen.runtime.codec import wire
from codegen.runtime.codec.batch import quiet_signaling_nans
from codegen.runtime.codec.columns import Masked, Ragged
from codegen.runtime.codec.features import Codec

__all__ = ["BatchEncoder"]

_FAST_COLUMNS = ("scalars", "items", "lists")
"""The batch columns of codecs whose feature is one list of their own (no companion keys)."""

_KIND = {Kind.INT: 3, Kind.BOOL: 3, Kind.FLOAT: 2, Kind.STR: 1, Kind.BYTES: 0}
"""The ``encode_examples`` kind of each dtype kind."""


class _Unfit(Exception):
    """A column is not in the form the fast path takes."""


class BatchEncoder:
    """Columnar serialization of an ``Example`` record's batches (see the module docstring)."""

    def __init__(self, codecs: Sequence[Codec[Any]], sequence: bool) -> None:
        rows = [codec_row_of(type(codec)) for codec in codecs]
        self.fast = (
            speedups is not None
            and not sequence
            and all(row is not None and row.column in _FAST_COLUMNS for row in rows)
            and not any(getattr(codec, "companion_keys", ()) for codec in codecs)
        )
        indexed = sorted(enumerate(codecs), key=lambda item: item[1].key.encode("utf-8"))
        self._order = [(index, codec, wire.key_field(codec.key)) for index, codec in indexed]

    def encode(self, columns: Sequence[Any], size: int) -> list[bytes] | None:
        """Each record's bytes, or ``None`` when the columns are not all in the fast path's form."""
        if not self.fast or speedups is None:
            return None
        try:
            entries = tuple(
                self._entry(codec, key, columns[index], size) for index, codec, key in self._order
            )
        except _Unfit:
            return None
        try:
            encoded: list[bytes] = speedups.encode_examples(size, entries)
        except (TypeError, ValueError):
            return None
        return encoded

    def _entry(self, codec: Codec[Any], key: bytes, column: Any, size: int) -> tuple[Any, ...]:
        present: npt.NDArray[np.bool_] | None = None
        if codec.optional:
            if type(column) is not Masked:
                raise _Unfit
            present = column.present
            if present.dtype != np.bool_ or present.shape != (size,):
                raise _Unfit
            column = column.values
        dtype = codec.dtype
        shape = codec.shape
        if shape and shape[0] is None:
            if type(column) is not Ragged or len(column) != size:
                raise _Unfit
            inner = shape[1:]
            per_row = math.prod(d for d in inner if d is not None)
            offsets = column.row_splits * per_row
            values = column.values
            if dtype.numeric:
                if type(values) is not np.ndarray or values.shape[1:] != inner:
                    raise _Unfit
            else:
                values = _flat_items(values, inner)
        else:
            count = math.prod(d for d in shape if d is not None)
            offsets = np.arange(size + 1, dtype=np.int64) * count
            values = column
            if dtype.numeric:
                if type(values) is not np.ndarray or values.shape != (size, *shape):
                    raise _Unfit
            else:
                if type(values) is not list or len(values) != size:
                    raise _Unfit
                values = _flat_items(values, shape)
        kind = _KIND[dtype.kind]
        if dtype.numeric:
            if values.dtype != dtype.numpy:
                raise _Unfit
            flat = values.reshape(-1)
            if kind == 3:
                values = np.ascontiguousarray(flat, np.int64)
            else:
                values = np.ascontiguousarray(flat, "<f4")
                if not shape:
                    values = quiet_signaling_nans(values)
        return (key, kind, values, np.ascontiguousarray(offsets, np.int64), present)


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
