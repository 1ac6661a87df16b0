"""Resynchronising a TFRecord stream after corruption: finding the next position where a header's
length CRC and its record's data CRC are both valid, in time linear in the bytes passed over.

Header CRCs are checked for a block of positions at a time, vectorised
(:func:`_header_candidates`); only positions whose header CRC is valid (candidates) have their
record's data CRC checked, and that CRC comes from running CRCs at the record's two ends
(:func:`_span_crc`), not from a pass over its data, whatever lengths the candidates declare and
however they overlap. :class:`Resync` keeps what has been learnt from one resynchronisation to the
next; :class:`~codegen.runtime.io.reader.TFRecordReader` supplies the bytes.
"""

from __future__ import annotations

import functools
import heapq
from collections import deque
from dataclasses import dataclass, field

import crc32c
import numpy as np
from numpy.typing import NDArray

from codegen.runtime.io.framing import HEADER_SIZE, MASK_DELTA, U32, U64, mask

__all__ = ["Resync"]

_SCAN_BLOCK = 1 << 18  # header positions checked per step while resynchronising

_CRC_OF_ZEROS: int = crc32c.crc32c(bytes(8))


@functools.cache
def _crc_tables() -> NDArray[np.uint32]:
    """Per-position tables for the crc32c of 8-byte strings.

    CRCs of same-length strings are affine in the bits of the string, so each byte contributes
    independently: ``crc(x) = crc(bytes(8)) ^ XOR_i tables[i][x[i]]``.
    """
    tables = np.empty((8, 256), dtype=np.uint32)
    for i in range(8):
        for v in range(256):
            tables[i, v] = crc32c.crc32c(bytes(i) + bytes((v,)) + bytes(7 - i)) ^ _CRC_OF_ZEROS
    return tables


ZeroAdvance = tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], tuple[int, ...]]
"""A linear map on 32-bit values as four byte tables: ``v`` maps to ``t[0][v & 255] ^
t[1][v >> 8 & 255] ^ t[2][v >> 16 & 255] ^ t[3][v >> 24]``."""


def _apply(tables: ZeroAdvance, v: int) -> int:
    return (
        tables[0][v & 0xFF]
        ^ tables[1][v >> 8 & 0xFF]
        ^ tables[2][v >> 16 & 0xFF]
        ^ tables[3][v >> 24]
    )


@functools.cache
def _zero_advance(k: int) -> ZeroAdvance:
    """How the crc32c of a string changes when ``2**k`` zero bytes follow it, as a linear map.

    ``crc(a + s) = crc(s) ^ advance(crc(a), len(s))``: the crc32c register is linear, and the
    initial and final inversions cancel out of the difference.
    """
    if k == 0:
        crc = crc32c.crc32c
        base = crc(b"\0", 0)
        columns = [crc(b"\0", 1 << b) ^ base for b in range(32)]
    else:
        half = _zero_advance(k - 1)
        columns = [_apply(half, _apply(half, 1 << b)) for b in range(32)]
    tables: list[tuple[int, ...]] = []
    for i in range(4):
        table = [0] * 256
        for byte in range(1, 256):
            low = byte & -byte
            table[byte] = table[byte ^ low] ^ columns[8 * i + low.bit_length() - 1]
        tables.append(tuple(table))
    return (tables[0], tables[1], tables[2], tables[3])


def _span_crc(before: int, after: int, length: int) -> int:
    """The crc32c of a ``length``-byte span ``s`` from ``before = crc(a)`` and
    ``after = crc(a + s)`` for any ``a``: ``O(log length)`` table lookups instead of a pass over
    the span."""
    while length:
        low = length & -length
        length ^= low
        t0, t1, t2, t3 = _zero_advance(low.bit_length() - 1)
        before = (
            t0[before & 0xFF] ^ t1[before >> 8 & 0xFF] ^ t2[before >> 16 & 0xFF] ^ t3[before >> 24]
        )
    return after ^ before


def _header_candidates(buf: memoryview, start: int, count: int) -> list[int]:
    """Positions ``p < count`` where ``buf[start + p:]`` begins with a header with a valid CRC.

    ``buf`` must hold ``count + 11`` bytes from ``start``. Vectorised: a few array operations per
    position, instead of a crc32c call each.
    """
    tables = _crc_tables()
    b = np.frombuffer(buf, dtype=np.uint8, count=count + HEADER_SIZE - 1, offset=start)
    crc = np.full(count, _CRC_OF_ZEROS, dtype=np.uint32)
    for i in range(8):
        crc ^= tables[i][b[i : i + count]]
    masked = ((crc >> np.uint32(15)) | (crc << np.uint32(17))) + np.uint32(MASK_DELTA)
    stored = b[8 : 8 + count].astype(np.uint32)
    for i in range(1, 4):
        stored |= b[8 + i : 8 + i + count].astype(np.uint32) << np.uint32(8 * i)
    positions: list[int] = np.flatnonzero(masked == stored).tolist()
    return positions


@dataclass(slots=True)
class Resync:
    """What resynchronising has learnt about the stream ahead, kept from one resynchronisation to
    the next so that each byte has its header CRC checked once and its data checksummed once.

    Positions are stream offsets; the methods that look at bytes take the reader's buffer ``buf``
    and the stream offset ``base`` of its first byte. ``prefix`` is the crc32c of the stream from
    ``anchor`` to ``cursor``; ``kept`` holds that CRC at the data start and end of every candidate
    the cursor has passed (``order``: their positions, ascending). A candidate's data CRC then
    follows from the two (:func:`_span_crc`), whatever length it declares and however the
    candidates overlap.
    """

    anchor: int
    cursor: int
    frontier: int
    """Header positions before it have been checked."""
    prefix: int = 0
    candidates: deque[tuple[int, int]] = field(default_factory=deque)
    """(position, declared length) of the valid-looking headers not yet tried, in stream order."""
    stops: list[int] = field(default_factory=list)
    """A heap of the data starts and ends of candidates, where the cursor keeps its CRC."""
    kept: dict[int, int] = field(default_factory=dict)
    order: deque[int] = field(default_factory=deque)

    def restart(self, first: int) -> None:
        """Prepares to look for a record at ``first`` or after (the stream before it was read)."""
        candidates = self.candidates
        while candidates and candidates[0][0] < first:
            candidates.popleft()
        if self.frontier < first:
            self.frontier = first
        if self.cursor < first:  # the bytes before ``first`` are gone: checksum from ``first``
            self.anchor = self.cursor = first
            self.prefix = 0
            self.kept.clear()
            self.order.clear()
            self.stops = [at + HEADER_SIZE + n for at, n in candidates]
            self.stops += [at + HEADER_SIZE for at, _ in candidates]
            heapq.heapify(self.stops)

    def add(self, at: int, length: int) -> None:
        """Adds the candidate header at ``at`` declaring ``length`` bytes of data."""
        self.candidates.append((at, length))
        heapq.heappush(self.stops, at + HEADER_SIZE)
        heapq.heappush(self.stops, at + HEADER_SIZE + length)

    def forget_before(self, position: int) -> None:
        """Drops the CRCs kept before ``position`` (no untried candidate needs them)."""
        order, kept = self.order, self.kept
        while order and order[0] < position:
            del kept[order.popleft()]

    def next_block(self) -> tuple[int, int]:
        """Where the buffer must start and end for :meth:`scan_block`: from the first byte still
        needed to the end of the last header of the next block of positions."""
        return min(self.cursor, self.frontier), self.frontier + _SCAN_BLOCK + HEADER_SIZE - 1

    def scan_block(self, buf: memoryview, base: int, end: int) -> bool:
        """Checks the header CRCs of the next block of positions whose headers end by ``end`` (the
        end of the stream read so far), adding the candidates; False when no position is left that
        could hold a header."""
        frontier = self.frontier
        count = min(end - (HEADER_SIZE - 1), frontier + _SCAN_BLOCK) - frontier
        if count <= 0:
            return False
        self._discover(buf, base, frontier + count)
        return True

    def _discover(self, buf: memoryview, base: int, limit: int) -> None:
        """Adds the candidates at positions from ``frontier`` to ``limit`` (excluded); the buffer
        holds the header bytes of them all."""
        unpack = U64.unpack_from
        while self.frontier < limit:
            frontier = self.frontier
            count = min(limit - frontier, _SCAN_BLOCK)
            for p in _header_candidates(buf, frontier - base, count):
                self.add(frontier + p, unpack(buf, frontier + p - base)[0])
            self.frontier = frontier + count

    def checks_out(self, buf: memoryview, base: int, at: int, length: int) -> bool:
        """Whether the data CRC of the candidate at ``at`` declaring ``length`` bytes is valid; the
        buffer holds the stream from the cursor (or ``at``, if before it) to the candidate's end."""
        data = at + HEADER_SIZE
        end = data + length
        self._checksum_to(buf, base, end)
        stored: int = U32.unpack_from(buf, end - base)[0]
        return mask(_span_crc(self.kept[data], self.kept[end], length)) == stored

    def _checksum_to(self, buf: memoryview, base: int, target: int) -> None:
        """Moves the cursor to ``target`` (in the buffer), keeping its CRC at every stop passed.

        Candidates whose data starts before ``target`` are found first, so that their stops are
        in the heap before the cursor passes them.
        """
        if target <= self.cursor:
            return
        self._discover(buf, base, target - (HEADER_SIZE - 1))
        crc = crc32c.crc32c
        view = memoryview(buf)
        stops, kept, order = self.stops, self.kept, self.order
        at, prefix = self.cursor, self.prefix
        while stops and stops[0] <= target:
            stop = heapq.heappop(stops)
            if stop < at:
                continue  # a stop of a candidate dropped unchecked
            if stop > at:
                prefix = crc(view[at - base : stop - base], prefix)
                at = stop
            if at not in kept:
                kept[at] = prefix
                order.append(at)
        if at < target:
            prefix = crc(view[at - base : target - base], prefix)
            at = target
        self.cursor, self.prefix = at, prefix
