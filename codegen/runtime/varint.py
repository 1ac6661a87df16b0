"""Protobuf base-128 varints: one value at a time, and whole packed ``int64`` runs with numpy.

Values are 64-bit: negative ``int64`` values travel as their two's complement (ten bytes). Decoding
follows protobuf: at most ten bytes, bits beyond the 64th are dropped. Errors are
:class:`RecordError` naming the byte offset.
"""

from __future__ import annotations

import operator

import numpy as np
from numpy.typing import NDArray

from codegen.errors import RecordError

MASK64 = (1 << 64) - 1
"""The 64 bits a varint carries."""
_INT64_MIN = -(1 << 63)
_SIGN64 = 1 << 63

_ONE_BYTE = tuple(bytes((i,)) for i in range(0x80))

SMALL_DECODE_BYTES = 16
"""Packed runs up to this many bytes decode faster in a plain Python loop than with numpy."""
SMALL_ENCODE_VALUES = 8
"""Arrays up to this many values encode faster in a plain Python loop than with numpy."""

_SHIFTS = np.arange(0, 70, 7, dtype=np.uint64)
_COLUMNS = np.arange(10)
_POWERS = tuple(np.uint64(1 << (7 * k)) for k in range(10))


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
    """The int64 values of the packed varints in ``data[start:end]`` (a new, writable array)."""
    count = end - start
    if count <= SMALL_DECODE_BYTES:
        return _decode_packed_loop(data, start, end, what)
    raw = np.frombuffer(data, np.uint8, count, start)
    if int(raw.max()) < 0x80:
        return raw.astype(np.int64)
    last = raw < 0x80
    if not last[-1]:
        finished = np.flatnonzero(last)
        begin = int(finished[-1]) + 1 if finished.size else 0
        raise RecordError(
            f"{what}: truncated varint at byte offset {start + begin} "
            f"(the packed values end at byte offset {end})"
        )
    ends = np.flatnonzero(last)
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
    out = np.empty(n, np.int64)
    payload = (raw & 0x7F).astype(np.uint64)
    if longest * n == count:
        np.sum(payload.reshape(n, longest) << _SHIFTS[:longest], axis=1, out=out.view(np.uint64))
        return out
    shifts = np.arange(count, dtype=np.intp)
    shifts -= np.repeat(starts, lengths)
    payload <<= _SHIFTS[shifts]
    np.add.reduceat(payload, starts, out=out.view(np.uint64))
    return out


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
    """The packed varint encoding of the 1-D contiguous int64 array ``values``."""
    n = values.size
    if n <= SMALL_ENCODE_VALUES:
        return b"".join([encode_varint(v) for v in values.tolist()])
    unsigned = values.view(np.uint64)
    top = int(unsigned.max())
    if top < 0x80:
        return unsigned.astype(np.uint8).tobytes()
    longest = varint_size(top)
    lengths = np.ones(n, np.intp)
    for k in range(1, longest):
        lengths += unsigned >= _POWERS[k]
    matrix = (unsigned[:, None] >> _SHIFTS[:longest]).astype(np.uint8)
    matrix |= 0x80
    matrix[np.arange(n), lengths - 1] &= 0x7F
    if int(lengths.min()) == longest:
        return matrix.tobytes()
    return matrix[_COLUMNS[:longest] < lengths[:, None]].tobytes()
