"""The codecs of raw tensors (``encoding: raw``) and ragged values (two or more leading ``None``).

``RawTensor`` -> a numpy array of any numeric dtype (``float64``, ``float16``, ``uint64`` included)
and the declared shape, where ``None`` may be any dimension. The whole array travels as the one
value of a ``BytesList``: its C-order little-endian bytes (``arr.astype("<f8").tobytes()``). A
shape with an unknown dimension also writes the companion ``<key>/shape``, an ``Int64List`` of the
full shape; decoding checks the byte count against the fixed or stored shape.

``RaggedTensor`` (numeric) and ``RaggedStrings`` (``string``/``bytes``) hold shapes of ``r >= 2``
leading ``None`` followed by fixed dimensions. Numeric values are nested lists of depth ``r - 1``
of arrays ``[n, *fixed]``; string values are nested lists, one level per dimension. The values
travel flat in ``<key>`` (in the dtype's list) and the length of every node at depth ``d`` (for
``d = 1 .. r-1``) in the companion ``<key>/row_lengths_<d>``: exactly what
``tf.io.RaggedFeature(value_key=key, partitions=[RowLengths(<key>/row_lengths_1), ...,
UniformRowLength(k), ...])`` reads. Decoding checks that the lengths fit together and fit the
values. A ragged feature whose values and companions are all absent decodes to ``[]``, or to
``None`` when optional; ``[]`` is written as empty lists, so both survive a round trip. TensorFlow
cannot tell the two apart: its ``RaggedFeature`` gives an empty row for both.

Each codec writes its feature with ``entry(value)`` and the ``i``-th companion (from 1) with
``part(value, i)``.
"""

from __future__ import annotations

import abc
import math
from collections.abc import Iterable
from typing import Any, Generic, cast

import numpy as np
import numpy.typing as npt

from codegen.dtypes import DTYPES, DType, Kind
from codegen.errors import RecordError, TfrGenError
from codegen.kinds import ShapeFrom
from codegen.runtime.codec.features import (
    _HEAD_CACHE,
    _LIST_NAMES,
    NO_DEFAULT,
    ArrayRules,
    Codec,
    Features,
    S,
    StringRules,
    _bytes_list_body,
    _describe,
    _entry_head,
    _holds_nothing,
    _int64_entry,
    _naming,
    _plural,
    _single_head,
    check_dims,
)
from codegen.runtime.codec.varint import read_varint
from codegen.runtime.codec.wire import decode_bytes_list, decode_int64_list, key_field

__all__ = ["RaggedStrings", "RaggedTensor", "RawTensor"]

_MAX_ARRAY = int(np.iinfo(np.intp).max)
"""The most bytes numpy lets the dimensions of an array (those other than 0) add up to."""


def _single_value(body: bytes) -> tuple[int, int] | None:
    """Where the one value of a ``BytesList`` body written as one field lies: (start, end), else
    ``None``."""
    end = len(body)
    if end < 2 or body[0] != 0x0A:
        return None
    length, start = (body[1], 2) if body[1] < 0x80 else read_varint(body, 1, end, "BytesList")
    return (start, end) if start + length == end else None


class RawTensor(Codec[npt.NDArray[S]]):
    """A numpy array of a numeric dtype and shape (``None`` anywhere: any size), as raw bytes.

    Coerced values are new, owned, C-contiguous arrays (rules: :class:`ArrayRules`); bools travel as
    bytes 0/1. An optional feature decodes to ``None`` when absent; there are no defaults. A shape
    with a ``None`` is stored beside the value: in ``<key>/shape`` (an Int64List), or where
    ``shape_from`` (:class:`~codegen.kinds.ShapeFrom`) says.
    """

    __slots__ = (
        "shape_from",
        "_rules",
        "_np",
        "_le",
        "_native",
        "_part_kfs",
        "_part_keys",
        "_dims_le",
        "_nulls",
        "_is_bool",
        "_layouts",
    )
    _kinds = (Kind.INT, Kind.BOOL, Kind.FLOAT)
    _encoding = "raw"
    _takes_default = False

    def __init__(
        self,
        record: str,
        name: str,
        key: str,
        dtype: DType,
        shape: tuple[int | None, ...],
        *,
        default: object = NO_DEFAULT,
        optional: bool = False,
        shape_from: ShapeFrom | None = None,
    ) -> None:
        self.shape_from = shape_from
        """The declared layout of the stored shape (``None``: an Int64List under ``<key>/shape``)."""
        super().__init__(record, name, key, dtype, shape, default=default, optional=optional)

    def _check_shape(self) -> None:
        check_dims(self._where, self.shape, -1, "")
        layout = self.shape_from
        if layout is None:
            return
        nulls = self.shape.count(None)
        if not nulls or (layout.per_dim and len(layout.keys) != nulls):
            raise TfrGenError(f"{self._where}: {layout} does not fit shape {self.shape}")
        if not layout.per_dim and (
            len(layout.keys) != 1
            or DTYPES.get(layout.dtype, DTYPES["bool"]).kind is not Kind.INT
            or layout.encoding not in ("list", "raw")
        ):
            raise TfrGenError(f"{self._where}: {layout} is not a layout of a stored shape")

    def _companions(self, key: str, shape: tuple[int | None, ...]) -> tuple[str, ...]:
        if self.shape_from is not None:
            return self.shape_from.keys
        return super()._companions(key, shape)

    def _setup(self) -> None:
        self._rules = ArrayRules(self.dtype, self.shape)
        self._np = cast("np.dtype[S]", self.dtype.numpy)
        self._le = self._np.newbyteorder("<")
        self._native = self._np == self._le
        """Whether arrays of the dtype hold their little-endian bytes (their buffer is the value)."""
        self._part_keys = tuple(k.encode("utf-8") for k in self.companion_keys)
        self._part_kfs = tuple(key_field(k) for k in self.companion_keys)
        layout = self.shape_from
        self._dims_le: np.dtype[Any] | None = (
            DTYPES[layout.dtype].numpy.newbyteorder("<")
            if layout is not None and layout.encoding == "raw"
            else None
        )
        """The dtype of a shape stored as raw bytes (``None``: stored as int64 values)."""
        self._nulls = tuple(d for d, n in enumerate(self.shape) if n is None)
        self._is_bool = self.dtype.kind is Kind.BOOL
        self._layouts: dict[tuple[int, ...], tuple[bytes, tuple[bytes, ...]]] = {}
        """Per array shape that fits (up to ``_HEAD_CACHE`` of them): the entry bytes before the
        array's bytes, and the entries of the companions (none for a fixed shape)."""

    def coerce(self, value: object) -> npt.NDArray[S]:
        """A list, tuple or array of the right kind and shape, as a new array of the dtype."""
        return cast("npt.NDArray[S]", self._rules.coerce(value, self._where))

    def _fits(self, shape: tuple[int, ...]) -> bool:
        if self._fixed:
            return shape == self.shape
        return len(shape) == len(self.shape) and all(
            d is None or d == g for d, g in zip(self.shape, shape, strict=True)
        )

    def _companion_entries(self, shape: tuple[int, ...]) -> tuple[bytes, ...]:
        """The map entries of the companions that store ``shape``."""
        if self._fixed:
            return ()
        layout = self.shape_from
        if layout is not None and layout.per_dim:
            return tuple(
                _int64_entry(kf, (shape[d],))
                for kf, d in zip(self._part_kfs, self._nulls, strict=True)
            )
        if self._dims_le is not None:
            data = np.array(shape, self._dims_le).tobytes()
            return (_single_head(self._part_kfs[0], 0x0A, len(data)) + data,)
        return (_int64_entry(self._part_kfs[0], shape),)

    def _layout(self, shape: tuple[int, ...]) -> tuple[bytes, tuple[bytes, ...]] | None:
        """The entry head and the companion entries of an array of ``shape`` (see
        ``_layouts``), ``None`` when the shape does not fit."""
        layout = self._layouts.get(shape)
        if layout is None:
            if not self._fits(shape):
                return None
            size = math.prod(shape) * self._np.itemsize
            layout = (self._heads.get(size) or self._head(size), self._companion_entries(shape))
            if len(self._layouts) < _HEAD_CACHE:
                self._layouts[shape] = layout
        return layout

    def entry(self, value: npt.NDArray[S] | None) -> bytes:
        if type(value) is np.ndarray and value.dtype is self._np:
            layout = self._layouts.get(value.shape) or self._layout(value.shape)
            if layout is not None:
                if self._native:
                    try:
                        # The array's own bytes, copied once (numpy's stubs do not call it a Buffer).
                        return b"".join((layout[0], value))  # type: ignore[arg-type]
                    except TypeError:
                        pass  # not C-contiguous: no plain buffer to join
                return layout[0] + value.astype(self._le, copy=False).tobytes()
        elif value is None and self.optional:
            return b""
        data = self.coerce(value).astype(self._le, copy=False).tobytes()
        return (self._heads.get(len(data)) or self._head(len(data))) + data

    def part(self, value: npt.NDArray[S] | None, index: int) -> bytes:
        """The map entry of the ``index``-th companion (from 1) that stores the shape of ``value``."""
        if not 1 <= index <= len(self.companion_keys):
            raise TfrGenError(
                f"{self._where}: RawTensor of shape {self.shape} has no companion {index}"
            )
        if type(value) is np.ndarray and value.dtype is self._np:
            layout = self._layouts.get(value.shape) or self._layout(value.shape)
            if layout is not None:
                return layout[1][index - 1]
        elif value is None and self.optional:
            return b""
        shape = self.coerce(value).shape
        return cast("tuple[bytes, tuple[bytes, ...]]", self._layout(shape))[1][index - 1]

    def decode(self, features: Features) -> npt.NDArray[S]:
        value = self._read(features)
        if value is None:
            raise self._missing()
        return value

    def decode_optional(self, features: Features) -> npt.NDArray[S] | None:
        value = self._read(features)
        if value is None and not self.optional:
            raise self._missing()
        return value

    def _read(self, features: Features) -> npt.NDArray[S] | None:
        """The value of the feature, ``None`` when it is absent; errors name the feature."""
        try:
            return self._value(features)
        except RecordError as exc:
            raise _naming(exc, self._where_key) from None

    def _value(self, features: Features) -> npt.NDArray[S] | None:
        item = features.get(self._key)
        if item is None or not item[0] or self.optional and self._empty(item):
            for name, key in zip(self.companion_keys, self._part_keys, strict=True):
                stored = features.get(key)
                own = 1 if self._dims_le is not None else 3
                if (
                    stored is not None
                    and stored[0]
                    and (stored[0] != own or not _holds_nothing(*stored))
                ):
                    raise RecordError(
                        f"{self._where_key}: found the companion {name!r} without the feature"
                    )
            return None
        if item[0] != self._kind:
            raise self._kind_error(item[0])
        return self._array(item[1], self.shape if self._fixed else self._stored_shape(features))

    def _empty(self, item: tuple[int, bytes]) -> bool:
        """Whether ``item`` is a ``BytesList`` without values (TensorFlow reads no value:
        absent)."""
        return (
            item[0] == self._kind
            and _single_value(item[1]) is None
            and not decode_bytes_list(item[1])
        )

    def _array(self, body: bytes, shape: tuple[int | None, ...]) -> npt.NDArray[S]:
        """The array of ``shape`` (fully known) whose bytes are the one value of the
        ``BytesList`` ``body``."""
        span = _single_value(body)
        if span is None:
            values = decode_bytes_list(body)
            if len(values) != 1:
                raise RecordError(
                    f"{self._where_key}: expected 1 bytes_list value, found {len(values)}"
                )
            body, span = values[0], (0, len(values[0]))
        start, end = span
        size, itemsize = end - start, self._np.itemsize
        count = math.prod(cast("tuple[int, ...]", shape))
        if size != count * itemsize:
            multiple = f", not a multiple of {itemsize}" if size % itemsize else ""
            raise RecordError(
                f"{self._where_key}: expected {count * itemsize} bytes "
                f"({_plural(count, 'value')} of {self.dtype.name}) for shape {shape}, "
                f"found {size}{multiple}"
            )
        if math.prod(d for d in cast("tuple[int, ...]", shape) if d) * itemsize > _MAX_ARRAY:
            raise RecordError(
                f"{self._where_key}: shape {shape} is too large for an array (its dimensions other"
                f" than 0 multiply to more than {_MAX_ARRAY} bytes)"
            )
        raw = np.frombuffer(body, self._le, count, start)
        if self._is_bool and count and int(raw.view(np.uint8).max()) > 1:
            raise self._range_error(int(raw.view(np.uint8).max()), self._where_key)
        return cast("npt.NDArray[S]", raw.astype(self._np).reshape(shape))

    def _stored_shape(self, features: Features) -> tuple[int, ...]:
        """The shape in the companions, checked against the declared one."""
        layout = self.shape_from
        if layout is not None and layout.per_dim:
            dims = list(self.shape)
            for d, name, key in zip(self._nulls, self.companion_keys, self._part_keys, strict=True):
                dims[d] = int(self._ints(name, features.get(key), 1)[0])
            return self._checked(tuple(cast("list[int]", dims)), self.companion_keys[0])
        name, rank = self.companion_keys[0], len(self.shape)
        stored = features.get(self._part_keys[0])
        if self._dims_le is None:
            shape = tuple(self._ints(name, stored, rank, exact=False).tolist())
        else:
            shape = tuple(self._raw_dims(name, stored, rank).tolist())
        return self._checked(shape, name)

    def _ints(
        self, name: str, stored: tuple[int, bytes] | None, count: int, *, exact: bool = True
    ) -> npt.NDArray[Any]:
        """The ``count`` int64 values of companion ``name`` (not ``exact``: as many as it holds)."""
        if stored is None or not stored[0]:
            raise RecordError(
                f"{self._where_key}: companion {name!r} is missing (expected int64_list with "
                f"{_plural(count, 'value')})"
            )
        if stored[0] != 3:
            found = _LIST_NAMES.get(stored[0], f"list kind {stored[0]}")
            raise RecordError(f"{self._where_key}: expected int64_list in {name!r}, found {found}")
        try:
            values = decode_int64_list(stored[1])
        except RecordError as exc:
            raise RecordError(f"{self._where_key}: {name!r}: {exc}") from None
        if exact and values.size != count:
            raise RecordError(
                f"{self._where_key}: expected {_plural(count, 'value')} in {name!r}, "
                f"found {values.size}"
            )
        return values

    def _raw_dims(self, name: str, stored: tuple[int, bytes] | None, rank: int) -> npt.NDArray[Any]:
        """The ``rank`` dims stored as the raw bytes of companion ``name``."""
        dims_le = cast("np.dtype[Any]", self._dims_le)
        size = rank * dims_le.itemsize
        what = f"bytes_list with 1 value of {size} bytes ({rank} {dims_le.name} values)"
        if stored is None or not stored[0]:
            raise RecordError(f"{self._where_key}: companion {name!r} is missing (expected {what})")
        if stored[0] != 1:
            found = _LIST_NAMES.get(stored[0], f"list kind {stored[0]}")
            raise RecordError(f"{self._where_key}: expected {what} in {name!r}, found {found}")
        values = decode_bytes_list(stored[1])
        if len(values) != 1 or len(values[0]) != size:
            found = f"{len(values[0])} bytes" if len(values) == 1 else _plural(len(values), "value")
            raise RecordError(f"{self._where_key}: expected {what} in {name!r}, found {found}")
        return np.frombuffer(values[0], dims_le).astype(np.int64)

    def _checked(self, shape: tuple[int, ...], name: str) -> tuple[int, ...]:
        if len(shape) != len(self.shape) or any(
            d < 0 or n is not None and d != n for d, n in zip(shape, self.shape, strict=True)
        ):
            raise RecordError(
                f"{self._where_key}: the shape {list(shape)} in {name!r} does not fit the "
                f"declared shape {self.shape}"
            )
        return shape

    def _missing(self) -> RecordError:
        return RecordError(
            f"{self._where_key}: required feature is missing (expected bytes_list with 1 value)"
        )


def _split(rows: Any, lengths: npt.NDArray[np.int64]) -> list[Any]:
    """``rows`` (a list or an array) cut into consecutive pieces of ``lengths`` rows."""
    pieces: list[Any] = []
    pos = 0
    for n in lengths.tolist():
        pieces.append(rows[pos : pos + n])
        pos += n
    return pieces


class _Ragged(Codec[list[Any]]):
    """Values of ``r >= 2`` leading ``None`` then fixed dimensions: flat values plus ``r - 1`` row
    lengths.

    Subclasses say what a leaf (a node at depth ``r - 1``) is, how leaves are written, and how flat
    values become leaves.
    """

    __slots__ = (
        "row_lengths_from",
        "_nulls",
        "_row",
        "_row_size",
        "_part_keys",
        "_part_kfs",
        "_list_heads",
    )
    _takes_default = False

    def __init__(
        self,
        record: str,
        name: str,
        key: str,
        dtype: DType,
        shape: tuple[int | None, ...],
        *,
        default: object = NO_DEFAULT,
        optional: bool = False,
        row_lengths_from: tuple[str, ...] | None = None,
    ) -> None:
        self.row_lengths_from = None if row_lengths_from is None else tuple(row_lengths_from)
        """The declared keys of the row lengths (``None``: ``<key>/row_lengths_<d>``)."""
        super().__init__(record, name, key, dtype, shape, default=default, optional=optional)

    def _companions(self, key: str, shape: tuple[int | None, ...]) -> tuple[str, ...]:
        own = super()._companions(key, shape)
        declared = self.row_lengths_from
        if declared is None:
            return own
        if len(declared) != len(own):
            raise TfrGenError(
                f"{self._where}: shape {shape} has {len(own)} row length features, "
                f"row_lengths_from names {len(declared)}"
            )
        return declared

    def _check_shape(self) -> None:
        nulls = next((i for i, d in enumerate(self.shape) if d is not None), len(self.shape))
        if nulls < 2:
            raise TfrGenError(
                f"{self._where}: {type(self).__name__} needs at least two leading None "
                f"dimensions, got {self.shape}"
            )
        check_dims(self._where, self.shape, nulls, " (None dimensions must all lead)")

    def _setup(self) -> None:
        self._nulls = self.shape.count(None)
        self._row = cast("tuple[int, ...]", self.shape[self._nulls :])
        self._row_size = math.prod(self._row)
        self._part_keys = tuple(k.encode("utf-8") for k in self.companion_keys)
        self._part_kfs = tuple(key_field(k) for k in self.companion_keys)
        self._list_heads: dict[int, bytes] = {}

    @abc.abstractmethod
    def _leaf_ok(self, leaf: object) -> bool:
        """Whether ``leaf`` has the type of a canonical leaf (a node at depth ``r - 1``)."""

    @abc.abstractmethod
    def _values_entry(self, leaves: list[Any]) -> bytes:
        """The map entry of the flat values of ``leaves``; ``TypeError`` (or ``UnicodeEncodeError``)
        when something inside a leaf is not canonical."""

    @abc.abstractmethod
    def _flat(self, body: bytes) -> Any:
        """The flat values of the list body ``body`` (an array or a list)."""

    @abc.abstractmethod
    def _leaves(self, flat: Any, lengths: npt.NDArray[np.int64]) -> list[Any]:
        """The leaves holding the flat values, ``lengths[i]`` rows in leaf ``i``."""

    def _walk(self, value: object, depth: int) -> list[list[Any]]:
        """The nodes at depths 0 .. ``depth`` of a canonical ``value``; ``TypeError`` if it is
        not canonical."""
        levels: list[list[Any]] = [[value]]
        last = self._nulls - 1
        for level in range(depth + 1):
            nodes = levels[level]
            if level < last:
                if not all(type(node) is list for node in nodes):
                    raise TypeError("not a canonical ragged value")
                if level < depth:
                    levels.append([child for node in nodes for child in node])
            elif not all(self._leaf_ok(node) for node in nodes):
                raise TypeError("not a canonical ragged value")
        return levels

    def _wrap(self, body: bytes) -> bytes:
        """The map entry whose list body is ``body``."""
        head = self._list_heads.get(len(body))
        if head is None:
            head = _entry_head(self._kf, self._tag, len(body))
            if len(self._list_heads) < _HEAD_CACHE:
                self._list_heads[len(body)] = head
        return head + body

    def entry(self, value: list[Any] | None) -> bytes:
        if value is None and self.optional:
            return b""
        last = self._nulls - 1
        try:
            return self._values_entry(self._walk(value, last)[last])
        except (TypeError, UnicodeEncodeError):
            pass  # not canonical: coerce names the problem, or makes it canonical
        return self._values_entry(self._walk(self.coerce(value), last)[last])

    def part(self, value: list[Any] | None, index: int) -> bytes:
        """The map entry of ``<key>/row_lengths_<index>``: the length of every node at depth
        ``index``.

        Checks the nesting down to that depth (:meth:`entry` checks the whole value).
        """
        if not 1 <= index < self._nulls:
            raise TfrGenError(
                f"{self._where}: {type(self).__name__} of shape {self.shape} has no companion "
                f"{index}"
            )
        if value is None and self.optional:
            return b""
        try:
            nodes = self._walk(value, index)[index]
        except TypeError:
            nodes = self._walk(self.coerce(value), index)[index]
        return _int64_entry(self._part_kfs[index - 1], [len(node) for node in nodes])

    def decode(self, features: Features) -> list[Any]:
        value = self._read(features)
        return [] if value is None else value

    def decode_optional(self, features: Features) -> list[Any] | None:
        value = self._read(features)
        return [] if value is None and not self.optional else value

    def _read(self, features: Features) -> list[Any] | None:
        """The value, or ``None`` when the values and every companion are absent; errors name the
        feature."""
        try:
            return self._value(features)
        except RecordError as exc:
            raise _naming(exc, self._where_key) from None

    def _value(self, features: Features) -> list[Any] | None:
        item = features.get(self._key)
        parts = [features.get(key) for key in self._part_keys]
        if (item is None or not item[0]) and all(part is None or not part[0] for part in parts):
            return None
        lengths = [self._lengths(part, d) for d, part in enumerate(parts, start=1)]
        names = self.companion_keys
        for d in range(1, len(lengths)):
            total = int(lengths[d - 1].sum())
            if lengths[d].size != total:
                raise RecordError(
                    f"{self._where_key}: {names[d]!r} holds "
                    f"{_plural(lengths[d].size, 'row length')}, "
                    f"but the row lengths in {names[d - 1]!r} add up to {total}"
                )
        if item is not None and item[0]:
            if item[0] != self._kind:
                raise self._kind_error(item[0])
            flat = self._flat(item[1])
        else:
            flat = self._flat(b"")
        rows = int(lengths[-1].sum())
        if len(flat) != rows * self._row_size:
            per_row = f" rows of {self._row_size} values" if self._row else ""
            raise RecordError(
                f"{self._where_key}: expected {rows * self._row_size} {self._list_name} values, "
                f"found {len(flat)} "
                f"(the row lengths in {names[-1]!r} add up to {rows}{per_row})"
            )
        nodes = self._leaves(flat, lengths[-1])
        for d in range(len(lengths) - 2, -1, -1):
            nodes = _split(nodes, lengths[d])
        return nodes

    def _lengths(self, part: tuple[int, bytes] | None, d: int) -> npt.NDArray[np.int64]:
        """The row lengths in companion ``d`` (none when it is absent), checked to be
        non-negative."""
        if part is None or not part[0]:
            return np.zeros(0, np.int64)
        name = self.companion_keys[d - 1]
        if part[0] != 3:
            found = _LIST_NAMES.get(part[0], f"list kind {part[0]}")
            raise RecordError(f"{self._where_key}: expected int64_list in {name!r}, found {found}")
        try:
            lengths = decode_int64_list(part[1])
        except RecordError as exc:
            raise RecordError(f"{self._where_key}: {name!r}: {exc}") from None
        if lengths.size and int(lengths.min()) < 0:
            raise RecordError(
                f"{self._where_key}: row length {int(lengths.min())} in {name!r} is negative"
            )
        return lengths


class RaggedTensor(_Ragged, Generic[S]):
    """Numeric values of ``r >= 2`` leading ``None`` then fixed dimensions ``F``: nested lists of
    depth ``r - 1`` of arrays ``[n, *F]`` of the dtype (rules: :class:`ArrayRules`; leaves of a
    decoded value share one buffer). Integers and bools travel in an ``Int64List``, float32 in a
    ``FloatList``.
    """

    __slots__ = ("_rules", "_np", "_leaf_shape")
    _kinds = (Kind.INT, Kind.BOOL, Kind.FLOAT)

    def _setup(self) -> None:
        super()._setup()
        self._leaf_shape = (None, *self._row)
        self._rules = ArrayRules(self.dtype, self._leaf_shape)
        self._np = self.dtype.numpy

    def coerce(self, value: object) -> list[Any]:
        """Iterables (not bare ``str``/``bytes``) nested ``r - 1`` deep around array-likes ``[n,
        *F]``."""
        return cast("list[Any]", self._coerce_level(value, 0, self._where))

    def _coerce_level(self, value: object, depth: int, where: str) -> Any:
        if depth == self._nulls - 1:
            return self._rules.coerce(value, where)
        if isinstance(value, str | bytes | bytearray | memoryview) or not isinstance(
            value, Iterable
        ):
            expected = "an iterable"
            if depth == 0:
                expected = f"nested iterables of {self.dtype.name} values with shape {self.shape}"
            raise RecordError(f"{where}: expected {expected}, got {_describe(value)}")
        return [
            self._coerce_level(node, depth + 1, f"{where}[{i}]") for i, node in enumerate(value)
        ]

    def _leaf_ok(self, leaf: object) -> bool:
        return (
            type(leaf) is np.ndarray
            and leaf.dtype is self._np
            and leaf.ndim == len(self._leaf_shape)
            and leaf.shape[1:] == self._row
        )

    def _values_entry(self, leaves: list[Any]) -> bytes:
        if not leaves:
            return self._empty_entry
        flat = leaves[0] if len(leaves) == 1 else np.concatenate(leaves)
        if not flat.size:
            return self._empty_entry
        payload = self._rules.list_payload(flat)
        return (self._heads.get(len(payload)) or self._head(len(payload))) + payload

    def _flat(self, body: bytes) -> npt.NDArray[Any]:
        return self._rules.list_values(body, self._where_key)

    def _leaves(self, flat: Any, lengths: npt.NDArray[np.int64]) -> list[Any]:
        return _split(flat.reshape(-1, *self._row), lengths)


class RaggedStrings(_Ragged):
    """``string``/``bytes`` values of ``r >= 2`` leading ``None`` then fixed dimensions: nested
    lists, one level per dimension (rules: :class:`StringRules`), flat in a ``BytesList``."""

    __slots__ = ("_rules", "_to_bytes", "_flat_dims")
    _kinds = (Kind.STR, Kind.BYTES)

    def _setup(self) -> None:
        super()._setup()
        self._rules = StringRules(self.dtype, self.shape)
        self._to_bytes = self._rules.to_bytes()
        self._flat_dims = self.shape[self._nulls - 1 :]

    def coerce(self, value: object) -> list[Any]:
        """Iterables (not bare ``str``/``bytes``) nested per dimension, with the fixed counts."""
        return self._rules.coerce(value, self._where)

    def _leaf_ok(self, leaf: object) -> bool:
        return type(leaf) is list

    def _values_entry(self, leaves: list[Any]) -> bytes:
        items = leaves
        for dim in self._flat_dims:
            flat: list[Any] = []
            for node in items:
                if type(node) is not list or dim is not None and len(node) != dim:
                    raise TypeError("not a canonical row")
                flat.extend(node)
            items = flat
        return self._wrap(_bytes_list_body(items, self._to_bytes)) if items else self._empty_entry

    def _flat(self, body: bytes) -> list[Any]:
        return self._rules.from_bytes(decode_bytes_list(body), self._where_key)

    def _leaves(self, flat: Any, lengths: npt.NDArray[np.int64]) -> list[Any]:
        rows: list[Any] = flat
        for dim in reversed(self._row):
            rows = [rows[i : i + dim] for i in range(0, len(rows), dim)]
        return _split(rows, lengths)
