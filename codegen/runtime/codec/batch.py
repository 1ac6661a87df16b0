"""Columnar decoding of many serialized records at once: one column per attribute.

A generated ``<Record>Batch`` class holds its columns and a :class:`BatchCodec` built from the
record's feature codecs does the work. The columns of a batch of ``B`` records:

* a numeric feature of a fixed shape -> an array ``[B, *shape]`` of the declared dtype;
* a ``string``/``bytes`` scalar or fixed shape -> a list of ``B`` values (nested lists per shape);
* every ``null`` dimension -> one level of :class:`~codegen.runtime.codec.columns.Ragged` (flat values
  plus row splits): ``[null, 3]`` floats are ``Ragged(values[N, 3], row_splits[B + 1])``, a ragged
  ``[null, null]`` feature two nested levels, a feature list of a ``SequenceExample`` one level for
  its steps; a raw tensor with an unknown dimension after the first is a list of ``B`` arrays;
* an optional feature -> :class:`~codegen.runtime.codec.columns.Masked` around its column: ``present``
  is ``False`` where per-record ``decode`` gives ``None``, and the values hold a placeholder there
  (zeros, empty strings, no rows).

Decoding gives exactly what per-record ``decode`` gives, record by record, and fails where it
fails: a :class:`~codegen.errors.RecordError` ``"batch record <i>: <decode's message>"`` for the
first record that does not decode. The fast path (:func:`scan_keys`) reads the values of each key
over all records into one buffer per list kind: with the C accelerator's ``scan_batch`` when it is
built, else in Python, gathering the packed payloads of a key and decoding them with one numpy call.
Kinds, counts, ranges and UTF-8 are then checked for a whole column at once. A batch the fast path
refuses (one with an error, or a case its checks do not cover) goes through per-record decoding,
which gives the exact values or the exact error. ``SequenceExample`` records are always decoded
record by record, then assembled into columns.

Numeric columns, raw tensors included, are views of the accelerator's buffers (one per key and
batch, whose memory is recycled for later batches once no view of it is left): the arrays of one
batch share memory, so copy what you keep longer than the batch if memory matters.
"""

from __future__ import annotations

import abc
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import numpy.typing as npt

from codegen.dtypes import DType, Kind, Wire
from codegen.errors import RecordError, TfrGenError
from codegen.kinds import codec_row_of
from codegen.runtime.accel import ExamplePlan, speedups
from codegen.runtime.codec import wire
from codegen.runtime.codec.buffer import BytesLike
from codegen.runtime.codec.columns import Masked, Ragged
from codegen.runtime.codec.features import Codec
from codegen.runtime.codec.images import DECODE_THREADS, EncodedImage, decode_many
from codegen.runtime.codec.plan import ExampleDecoder, example_decoder
from codegen.runtime.codec.sequences import SequenceCodec
from codegen.runtime.codec.tensors import RaggedStrings, RaggedTensor, RawTensor
from codegen.runtime.codec.varint import decode_packed_int64

__all__ = [
    "ABSENT",
    "BatchCodec",
    "KeyScan",
    "hash_joined",
    "quiet_signaling_nans",
    "scan_keys",
    "tally_joined",
]

ABSENT = 255
"""The kind :class:`KeyScan` gives a record without the key (0 is a ``Feature`` with no list)."""

_MAX_LENGTH = 1 << 40
"""Row lengths beyond this go to per-record decoding (which reports them exactly)."""


class _Refused(Exception):
    """The fast path cannot give per-record decoding's result for this batch."""


# --- scanning: the values of each key over all records --------------------------------------------


@dataclass(frozen=True, slots=True)
class KeyScan:
    """The feature of one key over a batch of records.

    ``kinds[i]`` is record ``i``'s ``Feature`` kind (1 bytes, 2 float, 3 int64, 0 no list,
    :data:`ABSENT` no such key) and ``counts[i]`` how many values it holds; ``ints``, ``floats``
    and ``strings`` hold the values of the records of kind 3, 2 and 1, in record order. For a key
    scanned as ``joined``, the bytes values are instead one after another in ``blob`` (writable),
    ``sizes`` the size of each, and ``strings`` is empty. For a key scanned as ``texts`` whose
    values the accelerator decoded (all valid UTF-8), they are ``texts`` instead, as ``str``, and
    ``strings`` is empty.
    """

    kinds: npt.NDArray[np.uint8]
    counts: npt.NDArray[np.int64]
    ints: npt.NDArray[np.int64]
    floats: npt.NDArray[np.float32]
    strings: list[bytes]
    blob: memoryview | None = None
    sizes: npt.NDArray[np.int64] | None = None
    texts: list[str] | None = None


_FNV_OFFSET = 0xCBF29CE484222325
_FNV_PRIME = 0x100000001B3


def hash_joined(blob: memoryview | bytes, sizes: npt.NDArray[np.int64]) -> npt.NDArray[np.uint64]:
    """The 64-bit FNV-1a hash of each value joined in ``blob`` (``sizes``: the size of each, as
    :class:`KeyScan` gives them), so that values can be counted in numpy. :class:`ValueError` when
    the sizes do not add up to the blob's size."""
    sizes = np.ascontiguousarray(sizes, dtype=np.int64)
    if speedups is not None:
        return np.frombuffer(speedups.hash_values(blob, sizes), dtype=np.uint64)
    data = bytes(blob)
    if np.any(sizes < 0) or int(sizes.sum()) != len(data):
        raise ValueError("the sizes do not add up to the blob's size")
    ends = np.cumsum(sizes)
    hashes = []
    for start, end in zip((ends - sizes).tolist(), ends.tolist(), strict=True):
        value = _FNV_OFFSET
        for octet in data[start:end]:
            value = ((value ^ octet) * _FNV_PRIME) & 0xFFFFFFFFFFFFFFFF
        hashes.append(value)
    return np.array(hashes, dtype=np.uint64)


def tally_joined(
    blob: memoryview | bytes, sizes: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """The distinct :func:`hash_joined` hashes of the values joined in ``blob``, how many values
    have each and the index of the first value that has it (in no promised order: the
    accelerator's is that of first appearance, the Python path's that of the hashes).
    :class:`ValueError` as :func:`hash_joined`."""
    if speedups is not None:
        sizes = np.ascontiguousarray(sizes, dtype=np.int64)
        distinct, tallies, places = speedups.tally_values(blob, sizes)
        return (
            np.frombuffer(distinct, dtype=np.uint64),
            np.frombuffer(tallies, dtype=np.int64),
            np.frombuffer(places, dtype=np.int64),
        )
    hashes = hash_joined(blob, sizes)
    order = np.argsort(hashes, kind="stable")
    ordered = hashes[order]
    starts = np.flatnonzero(np.concatenate(([hashes.size > 0], ordered[1:] != ordered[:-1])))
    counts = np.diff(np.append(starts, ordered.size))
    return ordered[starts], counts.astype(np.int64, copy=False), order[starts].astype(np.int64)


def scan_keys(
    data: Sequence[BytesLike],
    keys: Sequence[bytes],
    joined: Sequence[bytes] = (),
    texts: Sequence[bytes] = (),
    *,
    unrequested: dict[bytes, int] | None = None,
    irregular: list[int] | None = None,
) -> list[KeyScan]:
    """The :class:`KeyScan` of every key (UTF-8 bytes) over the serialized Examples ``data``; the
    bytes values of the keys in ``joined`` are joined into one buffer; those of the keys in
    ``texts`` may come as ``str`` (the accelerator makes them so when they are all valid UTF-8,
    rather than bytes to decode after: see :func:`_texts`).

    With ``unrequested``, every other key of the records maps to the index of the first record
    that has it (a key already there keeps its index); with ``irregular``, the index of every
    record with a top-level field besides ``features`` (a ``SequenceExample``'s feature lists) is
    appended. Uses the C accelerator's ``scan_batch`` when it is built. A malformed record raises
    :class:`RecordError` (without saying which record: decode record by record for that), and
    what ``unrequested`` and ``irregular`` hold then is unspecified.
    """
    if speedups is not None:
        scans = []
        for kinds, counts, ints, floats, strings in speedups.scan_batch(
            data, tuple(keys), tuple(joined), unrequested, irregular, tuple(texts)
        ):
            numbers = (
                np.frombuffer(kinds, np.uint8),
                np.frombuffer(counts, "<i8").astype(np.int64, copy=False),
                np.frombuffer(memoryview(ints), "<i8").astype(np.int64, copy=False),
                np.frombuffer(memoryview(floats), "<f4").astype(np.float32, copy=False),
            )
            if isinstance(strings, tuple):
                blob, sizes = strings
                sizes_array = np.frombuffer(memoryview(sizes), "<i8").astype(np.int64, copy=False)
                scan = KeyScan(*numbers, [], memoryview(blob), sizes_array)
            elif strings and type(strings[0]) is str:
                scan = KeyScan(*numbers, [], texts=strings)
            else:
                scan = KeyScan(*numbers, cast("list[bytes]", strings))
            scans.append(scan)
        return scans
    requested = set(keys)
    parsed = []
    for index, record in enumerate(data):
        if type(record) is not bytes:
            record = wire.as_bytes(record)
        features = wire.parse_example(record)
        if unrequested is not None:
            for key in features.keys() - requested:
                unrequested.setdefault(key, index)
        if irregular is not None and wire.has_other_fields(record):
            irregular.append(index)
        parsed.append(features)
    return [_scan_key([features.get(key) for features in parsed], key in joined) for key in keys]


def _scan_key(items: list[tuple[int, bytes] | None], joined: bool) -> KeyScan:
    """The :class:`KeyScan` of one key from each record's (kind, list body) or ``None``."""
    size = len(items)
    kinds = np.fromiter((ABSENT if item is None else item[0] for item in items), np.uint8, size)
    counts = np.zeros(size, np.int64)
    ints, int_counts = _int_values([item[1] for item in items if item and item[0] == 3])
    floats, float_counts = _float_values([item[1] for item in items if item and item[0] == 2])
    strings, string_counts = _bytes_values([item[1] for item in items if item and item[0] == 1])
    counts[kinds == 3] = int_counts
    counts[kinds == 2] = float_counts
    counts[kinds == 1] = string_counts
    if joined:
        sizes = np.fromiter(map(len, strings), np.int64, len(strings))
        return KeyScan(
            kinds, counts, ints, floats, [], memoryview(bytearray().join(strings)), sizes
        )
    return KeyScan(kinds, counts, ints, floats, strings)


def _payloads(bodies: list[bytes]) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64]] | None:
    """The packed payloads of ``bodies`` one after the other, and the size of each; ``None``
    unless every body is one packed field shorter than 2**14 bytes (or empty), as protobuf writes
    lists."""
    count = len(bodies)
    sizes = np.fromiter(map(len, bodies), np.int64, count)
    raw = np.frombuffer(b"".join(bodies), np.uint8)
    full = sizes > 0
    at = (np.cumsum(sizes) - sizes)[full]
    size = sizes[full]
    if not at.size:
        return raw, sizes
    if int(size.min()) < 2:
        return None
    first = raw[at + 1].astype(np.int64)
    second = raw[np.minimum(at + 2, raw.size - 1)].astype(np.int64)
    short = first < 0x80
    lengths = np.where(short, first, (first & 0x7F) | (second << 7))
    fits = (raw[at] == 0x0A) & (np.where(short, 2, 3) + lengths == size) & (short | (second < 0x80))
    if not fits.all():
        return None
    keep = np.ones(raw.size, np.bool_)
    keep[at] = False
    keep[at + 1] = False
    keep[at[~short] + 2] = False
    payload_sizes = np.zeros(count, np.int64)
    payload_sizes[full] = lengths
    return raw[keep], payload_sizes


def _int_values(bodies: list[bytes]) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """The values of the ``Int64List`` bodies, concatenated, and how many each holds."""
    gathered = _payloads(bodies)
    if gathered is not None:
        payload, sizes = gathered
        if not payload.size:
            return np.zeros(0, np.int64), sizes
        if int(payload.max()) < 0x80:  # one byte per value
            return payload.astype(np.int64), sizes
        ends = np.cumsum(sizes)
        if int(payload[ends[sizes > 0] - 1].max()) < 0x80:  # no varint runs into the next body
            joined = b"\x00" + payload.tobytes()
            values = decode_packed_int64(joined, 1, len(joined), "Int64List")
            marks = _splits((payload < 0x80).astype(np.int64))
            return values, marks[ends] - marks[ends - sizes]
    arrays = [wire.decode_int64_list(body) for body in bodies]
    counts = np.array([array.size for array in arrays], np.int64)
    return (np.concatenate(arrays) if arrays else np.zeros(0, np.int64)), counts


def _float_values(bodies: list[bytes]) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int64]]:
    """The values of the ``FloatList`` bodies, concatenated, and how many each holds."""
    gathered = _payloads(bodies)
    if gathered is not None and not (gathered[1] % 4).any():
        payload, sizes = gathered
        return payload.view("<f4").astype(np.float32), sizes // 4
    arrays = [wire.decode_float_list(body) for body in bodies]
    counts = np.array([array.size for array in arrays], np.int64)
    return (np.concatenate(arrays) if arrays else np.zeros(0, np.float32)), counts


def _bytes_values(bodies: list[bytes]) -> tuple[list[bytes], list[int]]:
    """The values of the ``BytesList`` bodies, concatenated, and how many each holds."""
    values: list[bytes] = []
    counts: list[int] = []
    for body in bodies:
        size = len(body) - 2
        if 0 <= size < 0x80 and body[0] == 0x0A and body[1] == size:  # one short value
            values.append(body[2:])
            counts.append(1)
        else:
            items = wire.decode_bytes_list(body)
            values.extend(items)
            counts.append(len(items))
    return values, counts


# --- checks shared by the fast column builders ----------------------------------------------------


def _present(scan: KeyScan, kind: int) -> npt.NDArray[np.bool_]:
    """Which records hold the key with list ``kind``; refused if any holds another list."""
    present: npt.NDArray[np.bool_] = scan.kinds == kind
    if not present.all():
        absent = (scan.kinds == 0) | (scan.kinds == ABSENT)
        if not (present | absent).all():
            raise _Refused
    return present


def _numbers(scan: KeyScan, dtype: DType) -> npt.NDArray[Any]:
    """The values of the scan's list of ``dtype``'s wire kind, in the dtype (range-checked)."""
    if dtype.kind is Kind.FLOAT:
        return scan.floats.astype(dtype.numpy, copy=False)
    values = scan.ints
    if dtype.name == "int64":
        return values
    if values.size and (
        int(values.min()) < cast("int", dtype.lo) or int(values.max()) > cast("int", dtype.hi)
    ):
        raise _Refused
    return values.astype(dtype.numpy)


def quiet_signaling_nans(values: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """float32 values as per-record decoding gives them in a Python ``float``: widening a
    signaling NaN to a double makes it quiet (its quiet bit set), every other value is kept."""
    bits = values.view(np.uint32)
    signaling = ((bits & 0x7FC00000) == 0x7F800000) & ((bits & 0x003FFFFF) != 0)
    if not signaling.any():
        return values
    quiet = values.copy()
    quiet.view(np.uint32)[signaling] |= np.uint32(0x00400000)
    return quiet


def _texts(scan: KeyScan, dtype: DType) -> list[Any]:
    """The scan's ``bytes`` values as the dtype's items: ``str`` (valid UTF-8, else refused; as
    the accelerator decoded them, when it did) or ``bytes``."""
    if scan.texts is not None:
        return scan.texts
    items = scan.strings
    if dtype.kind is not Kind.STR:
        return items
    try:
        return list(map(bytes.decode, items))
    except UnicodeDecodeError:
        raise _Refused from None


def _nest(items: list[Any], dims: Sequence[int]) -> list[Any]:
    """Flat ``items`` grouped into rows of the fixed ``dims`` (innermost last), C order."""
    for dim in reversed(dims):
        items = [items[i : i + dim] for i in range(0, len(items), dim)]
    return items


def _splits(lengths: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Row splits of rows of ``lengths``."""
    splits = np.zeros(lengths.size + 1, np.int64)
    np.cumsum(lengths, out=splits[1:])
    return splits


def _sums(values: npt.NDArray[np.int64], counts: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """The sum of each record's ``counts[i]`` consecutive ``values``."""
    marks = _splits(values)
    ends = np.cumsum(counts)
    sums: npt.NDArray[np.int64] = marks[ends] - marks[ends - counts]
    return sums


def _copy_nested(value: Any, depth: int) -> Any:
    """A copy of nested lists ``depth`` levels deep (items are immutable)."""
    if depth == 0:
        return value
    return [_copy_nested(item, depth - 1) for item in value]


def _filled(shape: Sequence[int], item: object) -> Any:
    """Nested lists of ``shape`` holding ``item`` (``item`` itself for ``()``)."""
    if not shape:
        return item
    return [_filled(shape[1:], item) for _ in range(shape[0])]


def _decodes_to_none(codec: Codec[Any], feature: tuple[int, bytes] | None) -> bool:
    """Whether the optional ``codec`` reads ``feature`` (``None``: no feature) as ``None``."""
    features = {} if feature is None else {codec.key.encode("utf-8"): feature}
    try:
        return codec.decode_optional(features) is None
    except RecordError:
        return False


def _plain_default(codec: Codec[Any]) -> object:
    """The codec's default as nested lists (``None`` when it has none)."""

    def lists(value: object) -> object:
        return [lists(item) for item in value] if isinstance(value, tuple) else value

    return lists(codec.info().default)


# --- layouts: columns from per-record values and back ---------------------------------------------


class _Layout(abc.ABC):
    """The form of one column: how per-record values become it and come back from it."""

    @abc.abstractmethod
    def from_values(self, values: Sequence[Any]) -> Any:
        """The column of the values of each record (``None`` only where the layout allows it)."""

    @abc.abstractmethod
    def to_values(self, column: Any) -> list[Any]:
        """Each record's value as per-record ``decode`` gives it (not sharing ``column``)."""

    @abc.abstractmethod
    def placeholder(self) -> Any:
        """The value standing in for an absent record in a :class:`Masked` column."""


class _Scalars(_Layout):
    """Numeric scalars: an array ``[B]``; a record's value is an ``int``, ``bool`` or ``float``."""

    def __init__(self, dtype: DType) -> None:
        self.np: np.dtype[Any] = dtype.numpy

    def from_values(self, values: Sequence[Any]) -> npt.NDArray[Any]:
        return np.array(values, self.np) if len(values) else np.zeros(0, self.np)

    def to_values(self, column: Any) -> list[Any]:
        values: list[Any] = column.tolist()
        return values

    def placeholder(self) -> Any:
        return self.np.type(0).item()


class _Tensors(_Layout):
    """Numeric arrays of a fixed shape: an array ``[B, *shape]``; each record's value one row."""

    def __init__(self, dtype: DType, shape: tuple[int, ...]) -> None:
        self.np: np.dtype[Any] = dtype.numpy
        self.shape = shape

    def from_values(self, values: Sequence[Any]) -> npt.NDArray[Any]:
        if not len(values):
            return np.zeros((0, *self.shape), self.np)
        return np.stack([np.asarray(value, self.np) for value in values])

    def to_values(self, column: Any) -> list[Any]:
        return list(np.array(column, self.np))

    def placeholder(self) -> Any:
        return np.zeros(self.shape, self.np)


class _Items(_Layout):
    """``str``/``bytes`` of a scalar or fixed shape: a list of ``B`` values (nested per shape)."""

    def __init__(self, dtype: DType, shape: tuple[int, ...]) -> None:
        self.shape = shape
        self.item: str | bytes = "" if dtype.kind is Kind.STR else b""

    def from_values(self, values: Sequence[Any]) -> list[Any]:
        depth = len(self.shape)
        return [_copy_nested(value, depth) for value in values]

    def to_values(self, column: Any) -> list[Any]:
        return self.from_values(column)

    def placeholder(self) -> Any:
        return _filled(self.shape, self.item)


class _Leaves(abc.ABC):
    """The innermost values of a :class:`_Rows` layout."""

    @abc.abstractmethod
    def join(self, rows: list[Any]) -> Any:
        """The rows of every record's innermost level, one after the other."""

    @abc.abstractmethod
    def copy(self, values: Any) -> Any:
        """A copy of joined values sharing nothing mutable with them."""


class _ArrayLeaves(_Leaves):
    """Numeric rows ``[n, *inner]``: one array ``[N, *inner]``."""

    def __init__(self, dtype: DType, inner: tuple[int, ...]) -> None:
        self.np: np.dtype[Any] = dtype.numpy
        self.inner = inner

    def join(self, rows: list[Any]) -> npt.NDArray[Any]:
        if not rows:
            return np.zeros((0, *self.inner), self.np)
        if not self.inner:  # rows of numbers, arrays as decoding makes them: joined as they are
            try:
                return np.concatenate(rows, dtype=self.np, casting="same_kind")
            except TypeError:  # lists, or arrays of another kind: each converted as below
                pass
        return np.concatenate([np.asarray(row, self.np).reshape(-1, *self.inner) for row in rows])

    def copy(self, values: Any) -> npt.NDArray[Any]:
        return np.array(values, self.np)


class _ItemLeaves(_Leaves):
    """``str``/``bytes`` rows of items nested ``depth`` deep (fixed inner dimensions): one list."""

    def __init__(self, depth: int) -> None:
        self.depth = depth

    def join(self, rows: list[Any]) -> list[Any]:
        return [_copy_nested(item, self.depth) for row in rows for item in row]

    def copy(self, values: Any) -> list[Any]:
        return [_copy_nested(item, self.depth) for item in values]


class _Rows(_Layout):
    """``levels`` dimensions of variable length: that many nested :class:`Ragged` around the leaves.

    A record's value is a sequence of rows (``levels`` 1: an array ``[n, *inner]`` or a list),
    or a list of such values one level up.
    """

    def __init__(self, levels: int, leaves: _Leaves) -> None:
        self.levels = levels
        self.leaves = leaves

    def from_values(self, values: Sequence[Any]) -> Ragged[Any]:
        return self._level(list(values), self.levels)

    def _level(self, rows: list[Any], levels: int) -> Ragged[Any]:
        lengths = np.fromiter(map(len, rows), np.int64, len(rows))
        if levels == 1:
            return Ragged(self.leaves.join(rows), _splits(lengths))
        children = [child for row in rows for child in row]
        return Ragged(self._level(children, levels - 1), _splits(lengths))

    def to_values(self, column: Any) -> list[Any]:
        return self._copied(column).to_list()

    def _copied(self, ragged: Ragged[Any]) -> Ragged[Any]:
        inner = ragged.values
        values = self._copied(inner) if isinstance(inner, Ragged) else self.leaves.copy(inner)
        return Ragged(values, ragged.row_splits)

    def placeholder(self) -> Any:
        return self.leaves.join([]) if self.levels == 1 else []


class _Arrays(_Layout):
    """Numeric arrays with an unknown dimension after the first: a list of ``B`` arrays."""

    def __init__(self, dtype: DType, shape: tuple[int | None, ...]) -> None:
        self.np: np.dtype[Any] = dtype.numpy
        self.empty = tuple(0 if d is None else d for d in shape)

    def from_values(self, values: Sequence[Any]) -> list[Any]:
        return [np.array(value, self.np) for value in values]

    def to_values(self, column: Any) -> list[Any]:
        return self.from_values(column)

    def placeholder(self) -> Any:
        return np.zeros(self.empty, self.np)


class _MaskedLayout(_Layout):
    """A value or ``None``: :class:`Masked` around the layout of the values."""

    def __init__(self, inner: _Layout) -> None:
        self.inner = inner

    def from_values(self, values: Sequence[Any]) -> Masked[Any]:
        present = np.fromiter((value is not None for value in values), np.bool_, len(values))
        stand_in = self.inner.placeholder()
        filled = [stand_in if value is None else value for value in values]
        return Masked(self.inner.from_values(filled), present)

    def to_values(self, column: Any) -> list[Any]:
        values = self.inner.to_values(column.values)
        return [v if p else None for v, p in zip(values, column.present.tolist(), strict=True)]

    def placeholder(self) -> Any:
        return None


# --- columns: one per attribute -------------------------------------------------------------------


class _Column(abc.ABC):
    """How one feature of an ``Example`` becomes a column: ``layout`` from per-record values,
    :meth:`build` (the fast path) from the :class:`KeyScan` of each of ``keys``."""

    joined: tuple[bytes, ...] = ()
    """Those of :attr:`keys` whose bytes values the column takes joined (see :class:`KeyScan`)."""

    def __init__(self, layout: _Layout, keys: Iterable[str], *, text: bool = False) -> None:
        self.layout = layout
        self.keys = tuple(key.encode("utf-8") for key in keys)
        self.texts = self.keys[:1] if text else ()
        """The key whose values the column reads as ``str`` (its own, for a text feature)."""

    @abc.abstractmethod
    def build(self, scans: Sequence[KeyScan], size: int) -> Any:
        """The column of ``size`` records from the scans of :attr:`keys`; :class:`_Refused` when
        per-record decoding would not give these values."""


class _FixedColumn(_Column):
    """A feature of a fixed shape read from its own list: numeric or strings, scalar or not.

    An absent record takes the default, or a placeholder (optional: :class:`Masked`), or refuses.
    """

    def __init__(self, codec: Codec[Any], layout: _Layout) -> None:
        self.dtype = codec.dtype
        self.wire = int(codec.dtype.wire)
        self.shape = cast("tuple[int, ...]", codec.shape)
        self.count = math.prod(self.shape)
        self.masked = codec.optional
        self.empty_is_absent = self.masked and _decodes_to_none(codec, (self.wire, b""))
        """Whether a present but empty list reads as an absent feature (no row of the shape)."""
        default = _plain_default(codec)
        self.fill = layout.placeholder() if default is None else default
        """What an absent record holds (per-record form): a placeholder, or the default."""
        self.has_fill = self.masked or default is not None
        super().__init__(
            _MaskedLayout(layout) if self.masked else layout,
            (codec.key,),
            text=codec.dtype.kind is Kind.STR,
        )

    def build(self, scans: Sequence[KeyScan], size: int) -> Any:
        scan = scans[0]
        present = _present(scan, self.wire)
        if self.empty_is_absent:
            present &= scan.counts > 0
        if not np.array_equal(scan.counts, present * self.count):
            raise _Refused
        everyone = bool(present.all())
        if not everyone and not self.has_fill:
            raise _Refused
        column = self._values(scan, present, everyone, size)
        return Masked(column, present) if self.masked else column

    def _values(
        self, scan: KeyScan, present: npt.NDArray[np.bool_], everyone: bool, size: int
    ) -> Any:
        if self.dtype.numeric:
            values = _numbers(scan, self.dtype).reshape(-1, *self.shape)
            if self.dtype.kind is Kind.FLOAT and not self.shape:
                values = quiet_signaling_nans(values)
            if everyone:
                return values
            column = np.empty((size, *self.shape), self.dtype.numpy)
            column[...] = self.fill
            column[present] = values
            return column
        items = _nest(_texts(scan, self.dtype), self.shape)
        if everyone:
            return items
        depth = len(self.shape)
        rows = [_copy_nested(self.fill, depth) for _ in range(size)]
        for i, item in zip(np.flatnonzero(present).tolist(), items, strict=True):
            rows[i] = item
        return rows


class _RowsColumn(_Column):
    """A feature ``[null, *inner]`` read from its own list: :class:`Ragged`; an absent record has no
    rows (optional: :class:`Masked`, absent where the codec reads an absent feature as ``None``)."""

    def __init__(self, codec: Codec[Any]) -> None:
        self.dtype = codec.dtype
        self.wire = int(codec.dtype.wire)
        self.inner = cast("tuple[int, ...]", codec.shape[1:])
        self.row_size = math.prod(self.inner)
        self.masked = codec.optional
        self.absent_is_none = self.masked and _decodes_to_none(codec, None)
        leaves: _Leaves
        if codec.dtype.numeric:
            leaves = _ArrayLeaves(codec.dtype, self.inner)
        else:
            leaves = _ItemLeaves(len(self.inner))
        layout = _Rows(1, leaves)
        super().__init__(
            _MaskedLayout(layout) if self.masked else layout,
            (codec.key,),
            text=codec.dtype.kind is Kind.STR,
        )

    def build(self, scans: Sequence[KeyScan], size: int) -> Any:
        scan = scans[0]
        present = _present(scan, self.wire)
        counts = scan.counts
        if self.row_size > 1 and (counts % self.row_size).any():
            raise _Refused
        values: Any
        if self.dtype.numeric:
            values = _numbers(scan, self.dtype).reshape(-1, *self.inner)
        else:
            values = _nest(_texts(scan, self.dtype), self.inner)
        column = Ragged(values, _splits(counts // self.row_size))
        if not self.masked:
            return column
        return Masked(column, present if self.absent_is_none else np.ones(size, np.bool_))


class _RawColumn(_Column):
    """``encoding: raw``: one bytes value per record (plus the ``<key>/shape`` companion when a
    dimension is unknown). Fixed shapes are an array, ``[null, *fixed]`` a :class:`Ragged`, other
    unknown dimensions a list of arrays; optional ones :class:`Masked`."""

    def __init__(self, codec: RawTensor[Any]) -> None:
        self.dtype = codec.dtype
        self.shape = codec.shape
        self.little: np.dtype[Any] = codec.dtype.numpy.newbyteorder("<")
        self.masked = codec.optional
        self.leading = None not in self.shape[1:]
        layout: _Layout
        if None not in self.shape:
            layout = _Tensors(codec.dtype, cast("tuple[int, ...]", self.shape))
        elif self.leading:
            inner = cast("tuple[int, ...]", self.shape[1:])
            layout = _Rows(1, _ArrayLeaves(codec.dtype, inner))
        else:
            layout = _Arrays(codec.dtype, self.shape)
        self.inner_layout = layout
        self.declared = codec.shape_from is not None
        """Whether the shape is stored in a declared layout (per-record decoding reads it)."""
        keys = (codec.key, *codec.companion_keys)
        super().__init__(_MaskedLayout(layout) if self.masked else layout, keys)
        self.joined = self.keys[:1]

    def build(self, scans: Sequence[KeyScan], size: int) -> Any:
        if self.declared:
            raise _Refused
        scan = scans[0]
        assert scan.blob is not None and scan.sizes is not None  # the key is joined
        present = _present(scan, int(Wire.BYTES))
        if not np.array_equal(scan.counts, present) or not (self.masked or present.all()):
            raise _Refused
        shapes = self._shapes(scans[1], present) if len(scans) > 1 else None
        itemsize = self.dtype.numpy.itemsize
        if shapes is None:
            sizes: Any = math.prod(cast("tuple[int, ...]", self.shape)) * itemsize
        else:
            sizes = shapes.prod(axis=1) * itemsize  # exact: _shapes bounds the products
        if not (scan.sizes == sizes).all():
            raise _Refused
        raw = np.frombuffer(scan.blob, np.uint8)
        if self.dtype.kind is Kind.BOOL and raw.size and int(raw.max()) > 1:
            raise _Refused
        flat = raw.view(self.little).astype(self.dtype.numpy, copy=False)
        column = self._column(flat, shapes, present, size)
        return Masked(column, present) if self.masked else column

    def _shapes(self, companion: KeyScan, present: npt.NDArray[np.bool_]) -> npt.NDArray[np.int64]:
        """Each present record's shape from the companion (a row each), checked against the
        declared one; a shape whose dimensions (zeros aside) multiply to ``2**53`` or more goes to
        per-record decoding."""
        kinds = companion.kinds
        fitting = np.where(present, kinds == 3, (kinds == 0) | (kinds == ABSENT))
        rank = len(self.shape)
        if not fitting.all() or not np.array_equal(companion.counts, present * rank):
            raise _Refused
        dims = companion.ints.reshape(-1, rank)
        if dims.size and int(dims.min()) < 0:
            raise _Refused
        for d, n in enumerate(self.shape):
            if n is not None and not (dims[:, d] == n).all():
                raise _Refused
        if (
            dims.size
            and float(np.maximum(dims, 1).astype(np.float64).prod(axis=1).max()) >= 2.0**53
        ):
            raise _Refused  # an int64 product could wrap, or numpy refuse the shape
        return dims

    def _column(
        self,
        flat: npt.NDArray[Any],
        shapes: npt.NDArray[np.int64] | None,
        present: npt.NDArray[np.bool_],
        size: int,
    ) -> Any:
        """The column of the present records' values ``flat`` (absent ones get placeholders)."""
        if shapes is None:
            fixed = cast("tuple[int, ...]", self.shape)
            values = flat.reshape(-1, *fixed)
            if len(values) == size:
                return values
            column = np.zeros((size, *fixed), self.dtype.numpy)
            column[present] = values
            return column
        if self.leading:
            lengths = np.zeros(size, np.int64)
            lengths[present] = shapes[:, 0]
            return Ragged(flat.reshape(-1, *self.shape[1:]), _splits(lengths))
        rows: list[npt.NDArray[Any]]
        if len(shapes) and (shapes == shapes[0]).all():  # one shape: rows of one reshape
            rows = list(flat.reshape(len(shapes), *shapes[0].tolist()))
        else:
            rows = []
            position = 0
            for dims in shapes.tolist():
                count = math.prod(dims)
                rows.append(flat[position : position + count].reshape(dims))
                position += count
        if len(rows) == size:
            return rows
        stand_in = self.inner_layout.placeholder()
        arrays = [stand_in.copy() for _ in range(size)]
        for i, value in zip(np.flatnonzero(present).tolist(), rows, strict=True):
            arrays[i] = value
        return arrays


class _ImageColumn(_Column):
    """Encoded images: decoded on several threads (the decoders release the GIL); a fixed shape is an array
    ``[B, *shape]``, another a list of ``B`` arrays; optional ones :class:`Masked`."""

    def __init__(self, codec: EncodedImage) -> None:
        self.codec = codec
        self.masked = codec.optional
        self.fixed = None not in codec.shape
        shape = codec.shape
        layout: _Layout = (
            _Tensors(codec.dtype, cast("tuple[int, ...]", shape))
            if self.fixed
            else _Arrays(codec.dtype, shape)
        )
        self.inner_layout = layout
        super().__init__(_MaskedLayout(layout) if self.masked else layout, (codec.key,))
        self.joined = self.keys

    def build(self, scans: Sequence[KeyScan], size: int) -> Any:
        scan = scans[0]
        assert scan.blob is not None and scan.sizes is not None  # the key is joined
        present = _present(scan, int(Wire.BYTES))
        if not np.array_equal(scan.counts, present) or not (self.masked or present.all()):
            raise _Refused
        blob = bytes(scan.blob)
        ends = np.cumsum(scan.sizes).tolist()
        blobs = [blob[a:b] for a, b in zip([0, *ends], ends, strict=False)]
        if self.fixed and size:
            # decoded straight into the column: no stacking copy of every image afterwards
            column = np.zeros((size, *cast("tuple[int, ...]", self.codec.shape)), np.uint8)
            rows = np.flatnonzero(present).tolist()
            into = self.codec.pixels_into
            decode_many(
                list(zip(blobs, rows, strict=True)),
                lambda item: into(item[0], column[item[1]]),
                DECODE_THREADS,
            )
            return Masked(column, present) if self.masked else column
        images = decode_many(blobs, self.codec.pixels, DECODE_THREADS)
        stand_in = self.inner_layout.placeholder()
        values: list[Any] = [stand_in] * size
        for i, image in zip(np.flatnonzero(present).tolist(), images, strict=True):
            values[i] = image
        column = self.inner_layout.from_values(values)
        return Masked(column, present) if self.masked else column


class _RaggedColumn(_Column):
    """Two or more leading ``null`` dimensions: flat values plus ``<key>/row_lengths_<d>``
    companions, as that many nested :class:`Ragged`; optional ones :class:`Masked`."""

    def __init__(self, codec: RaggedTensor[Any] | RaggedStrings) -> None:
        self.dtype = codec.dtype
        self.wire = int(codec.dtype.wire)
        self.levels = codec.shape.count(None)
        self.row = cast("tuple[int, ...]", codec.shape[self.levels :])
        self.row_size = math.prod(self.row)
        self.masked = codec.optional
        leaves: _Leaves
        if codec.dtype.numeric:
            leaves = _ArrayLeaves(codec.dtype, self.row)
        else:
            leaves = _ItemLeaves(len(self.row))
        layout = _Rows(self.levels, leaves)
        keys = (codec.key, *codec.companion_keys)
        super().__init__(
            _MaskedLayout(layout) if self.masked else layout,
            keys,
            text=codec.dtype.kind is Kind.STR,
        )

    def build(self, scans: Sequence[KeyScan], size: int) -> Any:
        own, companions = scans[0], scans[1:]
        present = _present(own, self.wire)
        lengths: list[npt.NDArray[np.int64]] = []
        for companion in companions:
            present = present | _present(companion, 3)
            values = companion.ints
            if values.size and (int(values.min()) < 0 or int(values.max()) > _MAX_LENGTH):
                raise _Refused
            lengths.append(values)
        for d in range(1, len(companions)):
            if not np.array_equal(
                companions[d].counts, _sums(lengths[d - 1], companions[d - 1].counts)
            ):
                raise _Refused
        rows = _sums(lengths[-1], companions[-1].counts)
        if not np.array_equal(own.counts, rows * self.row_size):
            raise _Refused
        leaves: Any
        if self.dtype.numeric:
            leaves = _numbers(own, self.dtype).reshape(-1, *self.row)
        else:
            leaves = _nest(_texts(own, self.dtype), self.row)
        for values in reversed(lengths):
            leaves = Ragged(leaves, _splits(values))
        column = Ragged(leaves, _splits(companions[0].counts))
        return Masked(column, present) if self.masked else column


def _list_column(codec: Codec[Any]) -> _Column:
    """A numeric tensor or string list: fixed shapes stack, a leading ``null`` gives rows."""
    if codec.shape[0] is None:
        return _RowsColumn(codec)
    shape = cast("tuple[int, ...]", codec.shape)
    dtype = codec.dtype
    return _FixedColumn(codec, _Tensors(dtype, shape) if dtype.numeric else _Items(dtype, shape))


def _strings_steps(codec: SequenceCodec[Any]) -> _Layout:
    shape = codec.shape
    if shape and shape[0] is None:
        return _Rows(2, _ItemLeaves(len(shape) - 1))
    return _Rows(1, _ItemLeaves(len(shape)))


COLUMNS: dict[str, Callable[[Codec[Any]], _Column]] = {
    "scalars": lambda codec: _FixedColumn(codec, _Scalars(codec.dtype)),
    "items": lambda codec: _FixedColumn(codec, _Items(codec.dtype, ())),
    "lists": _list_column,
    "raw": lambda codec: _RawColumn(cast("RawTensor[Any]", codec)),
    "images": lambda codec: _ImageColumn(cast("EncodedImage", codec)),
    "ragged": lambda codec: _RaggedColumn(cast("RaggedTensor[Any] | RaggedStrings", codec)),
}
"""The column of the feature codec of an ``Example`` (or of a ``SequenceExample``'s context), by the
``column`` of its row in :data:`codegen.kinds.CODECS`."""

SEQUENCE_LAYOUTS: dict[str, Callable[[SequenceCodec[Any]], _Layout]] = {
    "steps": lambda c: _Rows(1, _ArrayLeaves(c.dtype, cast("tuple[int, ...]", c.shape))),
    "ragged_steps": lambda c: _Rows(2, _ArrayLeaves(c.dtype, cast("tuple[int, ...]", c.shape[1:]))),
    "string_steps": _strings_steps,
}
"""The layout of a feature list (one :class:`Ragged` level for the steps, one more when a step has a
leading ``null``), by the ``column`` of its codec's row in :data:`codegen.kinds.CODECS`."""


def _column(codec: Codec[Any]) -> _Column:
    row = codec_row_of(type(codec))
    if row is None or row.column not in COLUMNS:
        raise TfrGenError(
            f"{codec.record}.{codec.name}: no batch column for {type(codec).__name__}"
        )
    return COLUMNS[row.column](codec)


def _sequence_layout(codec: SequenceCodec[Any]) -> _Layout:
    row = codec_row_of(type(codec))
    if row is None or row.column not in SEQUENCE_LAYOUTS:
        raise TfrGenError(
            f"{codec.record}.{codec.name}: no batch column for {type(codec).__name__}"
        )
    return SEQUENCE_LAYOUTS[row.column](codec)


# --- the codec of a whole record ------------------------------------------------------------------


class BatchCodec:
    """Columnar decoding of one record class: ``codecs`` are its feature codecs (of an ``Example``,
    or the context of a ``SequenceExample``) and ``sequence_codecs`` the feature lists of a
    ``SequenceExample`` (``None`` for an ``Example``); columns follow in that order. ``decoder`` is
    the record's own decoder (:func:`~codegen.runtime.codec.plan.example_decoder` of the codecs,
    made here when not given).
    """

    def __init__(
        self,
        record: str,
        codecs: Sequence[Codec[Any]],
        sequence_codecs: Sequence[SequenceCodec[Any]] | None = None,
        *,
        decoder: ExampleDecoder | None = None,
    ) -> None:
        self.record = record
        self._codecs = tuple(codecs)
        self._sequence_codecs = tuple(sequence_codecs or ())
        self._sequence = sequence_codecs is not None
        self._columns = tuple(_column(codec) for codec in self._codecs)
        self._layouts = (
            *(column.layout for column in self._columns),
            *(_sequence_layout(codec) for codec in self._sequence_codecs),
        )
        self._names = (
            *(codec.name for codec in self._codecs),
            *(codec.name for codec in self._sequence_codecs),
        )
        self._keys = tuple(key for column in self._columns for key in column.keys)
        self._decode_one = decoder or example_decoder(
            record, self._codecs, self._sequence_codecs if self._sequence else None
        )
        self._joined = tuple(key for column in self._columns for key in column.joined)
        self._texts = tuple(key for column in self._columns for key in column.texts)
        # A SequenceExample plan decodes a batch in one call (feature lists joined as they are read).
        self._batch_plan: Callable[[Sequence[BytesLike]], tuple[Any, ...] | None] | None = (
            self._decode_one.batch
            if self._sequence and isinstance(self._decode_one, ExamplePlan)
            else None
        )

    def decode(self, data: Sequence[BytesLike]) -> tuple[Any, ...]:
        """The columns of the serialized records ``data``, equal to :meth:`columns` of per-record
        decoding; the first record that does not decode raises
        ``RecordError("batch record <i>: <decode's message>")``."""
        if not self._sequence:
            try:
                return self._fast(data)
            except (RecordError, _Refused):
                pass  # per-record decoding gives the exact result or the exact error
        elif self._batch_plan is not None and len(data):
            parts = self._batch_plan(data)
            if parts is not None:  # else a record the plan hands to its fallback: one by one
                return tuple(map(self._from_part, self._layouts, parts))
        try:
            rows = list(map(self._decode_one, data))
        except RecordError:  # decoded again to say which record
            rows = [self._decode_each(i, record) for i, record in enumerate(data)]
        return self.columns(rows)

    @staticmethod
    def _from_part(layout: _Layout, part: Any) -> Any:
        """The column of one attribute of a batch plan's result: a feature list's joined steps
        and their counts per record, or the values of each record."""
        if type(part) is tuple:
            values, steps = part
            return Ragged(values, _splits(steps))
        return layout.from_values(part)

    def _fast(self, data: Sequence[BytesLike]) -> tuple[Any, ...]:
        scans = scan_keys(data, self._keys, self._joined, self._texts)
        size = len(data)
        columns = []
        position = 0
        for column in self._columns:
            used = len(column.keys)
            columns.append(column.build(scans[position : position + used], size))
            position += used
        return tuple(columns)

    def _decode_each(self, index: int, data: BytesLike) -> tuple[Any, ...]:
        try:
            return self._decode_one(data)
        except RecordError as exc:
            raise RecordError(f"batch record {index}: {exc}") from None

    def decode_one(self, data: BytesLike) -> tuple[Any, ...]:
        """One record's attribute values, exactly as the record class's ``decode`` reads them."""
        return self._decode_one(data)

    def columns(self, rows: Iterable[Sequence[Any]]) -> tuple[Any, ...]:
        """The columns of records given as their attribute values (one sequence per record)."""
        values = list(zip(*rows, strict=True)) or [()] * len(self._layouts)
        return tuple(layout.from_values(v) for layout, v in zip(self._layouts, values, strict=True))

    def rows(self, columns: Sequence[Any]) -> list[tuple[Any, ...]]:
        """Each record's attribute values from the columns (independent of them)."""
        self.check(columns)
        per_column = [layout.to_values(c) for layout, c in zip(self._layouts, columns, strict=True)]
        return list(zip(*per_column, strict=True))

    def check(self, columns: Sequence[Any]) -> int:
        """The number of records of the columns; :class:`RecordError` unless they all have it."""
        lengths = [len(column) for column in columns]
        if len(set(lengths)) > 1:
            sizes = ", ".join(f"{name}={n}" for name, n in zip(self._names, lengths, strict=True))
            raise RecordError(f"{self.record}Batch: columns of different lengths ({sizes})")
        return lengths[0] if lengths else 0
