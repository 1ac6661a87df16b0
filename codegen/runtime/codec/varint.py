"""Protobuf base-128 varints: one value at a time, and whole packed ``int64`` runs with numpy.

Values are 64-bit: negative ``int64`` values travel as their two's complement (ten bytes). Decoding
follows protobuf: at most ten bytes, bits beyond the 64th are dropped. Errors are
:class:`RecordError` naming the byte offset.
"""

from __future__ import annotations

import operator

import numpy as np
from numpy.typing import NDArray

import codegen.runtime.accel as _accel
from codegen.errors import RecordError

MASK64 = (1 << 64) - 1
"""The 64 bits a varint carries."""
_INT64_MIN = -(1 << 63)
_SIGN64 = 1 << 63

_ONE_BYTE = tuple(bytes((i,)) for i in range(0x80))

SMALL_DECODE_BYTES = 8
"""Packed runs up to this many bytes decode in a plain Python loop (faster than numpy there)."""
SMALL_MULTIBYTE_DECODE_BYTES = 32
"""Runs holding a varint longer than one byte decode in the loop up to this many bytes."""
SMALL_LONG_DECODE_BYTES = 160
"""Runs holding a varint longer than two bytes decode in the loop up to this many bytes."""
GROUPS_CHUNK_BYTES = 1 << 13
"""Runs longer than this many bytes decode in pieces of about this size, so that temporaries stay
bounded (about 40 bytes per byte of a piece) whatever the run's length."""
SMALL_ENCODE_VALUES = 16
"""Arrays up to this many values encode in a plain Python loop (faster than numpy there)."""

_SHIFTS = np.arange(0, 70, 7, dtype=np.uint64)
_WEIGHTS = np.left_shift(np.uint64(1), _SHIFTS)  # 2**(7k), wrapping past 64 bits like the groups
_LONGER = 0xFFFF


def _two_byte_tables() -> tuple[NDArray[np.uint16], NDArray[np.uint16]]:
    """Lookup tables for runs of one- and two-byte varints.

    The decoding table maps a little-endian window ``previous byte | byte << 8`` ending at a last
    byte to the value of the varint ending there, and a window of two continuation bytes to
    ``_LONGER``. The encoding table maps a value below 2**14 to its varint as ``'<u2'`` (the
    second byte is zero for a one-byte varint).
    """
    window = np.arange(1 << 16)
    previous, byte = window & 0xFF, window >> 8
    decode = np.where(
        byte < 0x80,
        np.where(previous < 0x80, byte, (previous & 0x7F) | byte << 7),
        np.where(previous < 0x80, 0, _LONGER),
    ).astype("<u2")
    value = np.arange(1 << 14)
    encode = np.where(value < 0x80, value, (value & 0x7F | 0x80) | (value >> 7) << 8).astype("<u2")
    return decode, encode


_DECODE_TWO, _ENCODE_TWO = _two_byte_tables()


def encode_varint(value: int) -> bytes:
    """The varint encoding of ``value`` (an integer in ``[-2**63, 2**64)``; negatives as int64)."""
    try:
        number = operator.index(value)
    except TypeError:
        raise RecordError(f"varint: expected an integer, got {type(value).__name__}") from None
    if 0 <= number < 0x80:
        return _ONE_BYTE[number]
    if not _INT64_MIN <= number <= MASK64:
        raise RecordError(f"varint: {number} is outside the int64/uint64 range")
    number &= MASK64
    out = bytearray()
    while number >= 0x80:
        out.append((number & 0x7F) | 0x80)
        number >>= 7
    out.append(number)
    return bytes(out)


def encode_length(size: int) -> bytes:
    """The varint of the non-negative ``size`` (a length), with one- and two-byte fast paths."""
    if size < 0x80:
        return _ONE_BYTE[size]
    if size < 0x4000:
        return bytes((size & 0x7F | 0x80, size >> 7))
    return encode_varint(size)


def varint_size(value: int) -> int:
    """How many bytes the varint of the non-negative ``value`` takes."""
    return 1 if value < 0x80 else (value.bit_length() + 6) // 7


def read_varint(data: bytes, pos: int, end: int, what: str) -> tuple[int, int]:
    """Read the varint at ``pos`` (ending before ``end``): (unsigned 64-bit value, next pos)."""
    start = pos
    result = 0
    shift = 0
    while pos < end:
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result & MASK64, pos
        shift += 7
        if shift == 70:
            raise RecordError(f"{what}: the varint at byte offset {start} is longer than 10 bytes")
    raise RecordError(
        f"{what}: truncated varint at byte offset {start} (the message ends at byte offset {end})"
    )


def to_int64(value: int) -> int:
    """The int64 whose two's complement is the unsigned 64-bit ``value``."""
    return value - (1 << 64) if value >= _SIGN64 else value


def decode_packed_int64(data: bytes, start: int, end: int, what: str) -> NDArray[np.int64]:
    """The int64 values of the packed varints in ``data[start:end]`` (a new, writable array).

    Paths: a Python loop for short runs (by the thresholds above); one-byte varints widened at
    once; runs of one- and two-byte varints through a table of byte pairs; anything longer by
    summing 7-bit groups.
    """
    count = end - start
    if count <= SMALL_DECODE_BYTES:
        return _decode_packed_loop(data, start, end, what)
    if data[end - 1] >= 0x80:
        _raise_truncated(data, start, end, what)
    raw = np.frombuffer(data, np.uint8, count, start)
    if data[start:end].isascii():
        return raw.astype(np.int64)
    if count <= SMALL_MULTIBYTE_DECODE_BYTES:
        return _decode_packed_loop(data, start, end, what)
    if start and data[start - 1] < 0x80:
        values = _decode_two_byte_windows(data, start, count)
        if values is not None:
            return values.compress(raw < 0x80).astype(np.int64)
    if count <= SMALL_LONG_DECODE_BYTES:
        return _decode_packed_loop(data, start, end, what)
    return _decode_packed_groups(raw, start, what)


def _decode_two_byte_windows(data: bytes, start: int, count: int) -> NDArray[np.uint16] | None:
    """The two-byte table's value at each byte of ``data[start:start + count]`` (a byte below
    0x80 precedes ``start``), or ``None`` when a varint is longer than two bytes. Read in pieces of
    ``GROUPS_CHUNK_BYTES`` windows, as the table lookup widens its indices to 8 bytes each."""
    values = np.empty(count, np.uint16)
    for first in range(0, count, GROUPS_CHUNK_BYTES):
        size = min(GROUPS_CHUNK_BYTES, count - first)
        windows = np.ndarray((size,), "<u2", buffer=data, offset=start - 1 + first, strides=(1,))
        piece = values[first : first + size]
        _DECODE_TWO.take(windows, out=piece)
        if np.count_nonzero(piece == _LONGER):
            return None
    return values


def _raise_truncated(data: bytes, start: int, end: int, what: str) -> None:
    begin = end - 1
    while begin > start and data[begin - 1] >= 0x80:
        begin -= 1
    if end - begin > 10:
        raise RecordError(f"{what}: the varint at byte offset {begin} is longer than 10 bytes")
    raise RecordError(
        f"{what}: truncated varint at byte offset {begin} (the packed values end at byte "
        f"offset {end})"
    )


def _decode_packed_groups(raw: NDArray[np.uint8], start: int, what: str) -> NDArray[np.int64]:
    """Decode a run of varints of any lengths (ending with a last byte) by their 7-bit groups.

    The run is read in pieces of about ``GROUPS_CHUNK_BYTES`` bytes cut after a last byte, so the
    temporaries stay bounded whatever the run's length; only the result grows with it.
    """
    out = np.empty(np.count_nonzero(raw < 0x80), np.int64)
    count, pos, filled = raw.size, 0, 0
    while pos < count:
        piece = raw[pos : pos + GROUPS_CHUNK_BYTES]
        ends = np.flatnonzero(piece < 0x80)
        if not ends.size:
            raise RecordError(
                f"{what}: the varint at byte offset {start + pos} is longer than 10 bytes"
            )
        used = int(ends[-1]) + 1
        _decode_groups(piece[:used], ends, start + pos, out[filled : filled + ends.size], what)
        pos += used
        filled += ends.size
    return out


def _decode_groups(
    raw: NDArray[np.uint8], ends: NDArray[np.intp], start: int, out: NDArray[np.int64], what: str
) -> None:
    """Write the varints of ``raw`` (whose last bytes are at ``ends``) to ``out``."""
    count = raw.size
    n = ends.size
    starts = np.empty(n, np.intp)
    starts[0] = 0
    np.add(ends[:-1], 1, out=starts[1:])
    lengths = ends - starts
    lengths += 1
    longest = int(lengths.max())
    if longest > 10:
        bad = int(starts[int(np.argmax(lengths > 10))])
        raise RecordError(
            f"{what}: the varint at byte offset {start + bad} is longer than 10 bytes"
        )
    groups = (raw & 0x7F).astype(np.uint64)
    if longest * n == count:  # all of one length: a matrix product with the group weights
        np.matmul(groups.reshape(n, longest), _WEIGHTS[:longest], out=out.view(np.uint64))
        return
    shifts = np.arange(count, dtype=np.intp)
    shifts -= np.repeat(starts, lengths)
    groups <<= _SHIFTS.take(shifts)
    np.add.reduceat(groups, starts, out=out.view(np.uint64))


def _decode_packed_loop(data: bytes, start: int, end: int, what: str) -> NDArray[np.int64]:
    values: list[int] = []
    pos = start
    while pos < end:
        byte = data[pos]
        if byte < 0x80:
            values.append(byte)
            pos += 1
        else:
            value, pos = read_varint(data, pos, end, what)
            values.append(value - (1 << 64) if value >= _SIGN64 else value)
    return np.array(values, dtype=np.int64)


def encode_packed_int64(values: NDArray[np.int64]) -> bytes:
    """The packed varint encoding of the 1-D contiguous int64 array ``values``.

    Paths: a Python loop for short arrays; values below 2**7 narrowed at once; values below
    2**14 through a table of byte pairs; anything else as a (groups, values) matrix of 7-bit groups
    whose unused high groups are dropped.
    """
    n = values.size
    if n <= SMALL_ENCODE_VALUES:
        return b"".join([encode_varint(v) for v in values.tolist()])
    unsigned = values.view(np.uint64)
    if not np.count_nonzero(unsigned >= 0x80):
        return unsigned.astype(np.uint8).tobytes()
    if not np.count_nonzero(unsigned >= 0x4000):
        pairs = _ENCODE_TWO.take(values).view(np.uint8)
        keep = pairs != 0
        keep[::2] = True
        return pairs.compress(keep).tobytes()
    longest = varint_size(int(unsigned.max()))
    rest = np.right_shift(unsigned, _SHIFTS[:longest, None])  # rest[k] = value >> 7k
    groups = (rest & 0x7F).astype(np.uint8)
    more = rest[1:] != 0  # byte k + 1 exists, so byte k carries the continuation bit
    groups[:-1] |= more.view(np.uint8) << 7
    if np.count_nonzero(more[-1]) == n:
        return groups.T.tobytes()
    keep = np.empty((longest, n), np.bool_)
    keep[0] = True
    keep[1:] = more
    return groups.T.ravel().compress(keep.T.ravel()).tobytes()


PURE_PYTHON_ENCODE_PACKED_INT64 = encode_packed_int64
"""The pure-Python packed encoder, whichever implementation ``encode_packed_int64`` is bound to."""

if _accel.speedups is not None:
    # Same contract and output as the Python encoder (tests/runtime/codec/test_speedups.py compares
    # them).
    encode_packed_int64 = _accel.speedups.encode_int64_packed  # type: ignore[assignment]  # noqa: F811
