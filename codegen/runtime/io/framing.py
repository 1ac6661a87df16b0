"""TFRecord framing: how each record is laid out in a TFRecord stream, and its checksums.

A TFRecord stream is a sequence of records, each framed as::

    <u64 LE data length> <u32 LE masked crc32c of the 8 length bytes>
    <data> <u32 LE masked crc32c of data>

where ``masked(c) = ((c >> 15) | (c << 17)) + 0xa282ead8 (mod 2**32)``.

Framing many records and checking many frames are one call each, :data:`FRAMES`: the C
accelerator's ``frame_records`` and ``scan_frames`` (``codegen/_speedups/frames.c``) when it is
built, else their pure-Python equivalents, :data:`PURE_PYTHON`. Writers and readers look
:data:`FRAMES` up on this module at each batch, so replacing it here switches them all.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import crc32c

import codegen.runtime.accel as _accel

if TYPE_CHECKING:
    from typing_extensions import Buffer

__all__ = [
    "FRAMES",
    "FRAMING",
    "HEADER",
    "HEADER_SIZE",
    "MASK_DELTA",
    "PURE_PYTHON",
    "U32",
    "U64",
    "FrameCodec",
    "Record",
    "mask",
    "masked_crc",
    "not_bytes",
]

MASK_DELTA = 0xA282EAD8
"""What masking adds to a rotated crc32c."""
_U32_MASK = 0xFFFFFFFF

Record = bytes | memoryview
"""A record's data: ``bytes``, or a memoryview of a reader's buffer
(:meth:`~codegen.runtime.io.reader.TFRecordReader.views`)."""

HEADER = struct.Struct("<QI")
"""A record's header: its data length and the masked crc32c of those 8 bytes."""
U64 = struct.Struct("<Q")
U32 = struct.Struct("<I")
HEADER_SIZE = 12
FRAMING = 16
"""Bytes a record's framing adds to its data: the 12-byte header and the 4-byte data CRC (the
size of an empty record)."""

_HEADER_CRC_CACHE = 4096  # distinct record lengths whose header (CRC) is remembered


def mask(c: int) -> int:
    """The masked form of the crc32c ``c``, as TFRecord stores it."""
    return (((c >> 15) | (c << 17)) + MASK_DELTA) & _U32_MASK


def masked_crc(data: Buffer) -> int:
    """The masked crc32c that TFRecord stores for ``data``."""
    return mask(crc32c.crc32c(data))


_header_bytes: dict[int, bytes] = {}  # framed header by data length (bounded)
_header_crcs: dict[int, int] = {}  # stored header CRC by data length (bounded)


def not_bytes(data: object) -> TypeError:
    """The error for a record that is not bytes."""
    return TypeError(f"TFRecordWriter.write expects bytes, got {type(data).__name__}")


def _frame_header(size: int) -> bytes:
    """The 12-byte header of a ``size``-byte record (remembered for the lengths seen, bounded)."""
    header = _header_bytes.get(size)
    if header is None:
        length = U64.pack(size)
        header = length + U32.pack(masked_crc(length))
        if len(_header_bytes) < _HEADER_CRC_CACHE:
            _header_bytes[size] = header
    return header


def _frame_records(records: Sequence[bytes], start: int, limit: int) -> tuple[bytes, int]:
    """Frames ``records[start:stop]`` as a TFRecord stream and returns it with ``stop``.

    Records are taken while the framed size is below ``limit``, and at least one when ``start <
    len(records)``: ``stop`` is ``len(records)`` or the first index not taken. A record that is not
    bytes ends the batch before it, or raises ``TypeError`` when it would be the first.
    ``records`` must be a list or a tuple.
    """
    if not isinstance(records, list | tuple):
        raise TypeError(
            f"frame_records expects a list or tuple of bytes, got {type(records).__name__}"
        )
    count = len(records)
    if not 0 <= start <= count:
        raise ValueError(f"start {start} is out of range for {count} records")
    parts: list[bytes] = []
    crc = crc32c.crc32c
    header = _frame_header
    total = 0
    stop = start
    while stop < count and (total < limit or stop == start):
        data = records[stop]
        if not isinstance(data, bytes):
            if stop == start:
                raise not_bytes(data)
            break
        c = crc(data)
        parts += (
            header(len(data)),
            data,
            U32.pack((((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF),
        )
        total += len(data) + 16
        stop += 1
    return b"".join(parts), stop


def _scan_frames(
    buffer: Buffer, start: int, verify: bool, views: bool = False
) -> tuple[list[Record], int]:
    """The data of the whole frames at ``buffer[start:]``, in order (``bytes``, or with ``views``
    memoryviews of ``buffer``), and the position after the last one taken.

    The first frame that is cut off by the end of the buffer or, when ``verify`` is true, whose
    length CRC or data CRC is wrong, is not taken and ends the scan (the caller examines it).
    """
    source: Any = memoryview(buffer) if views or type(buffer) is not bytes else buffer
    size = len(source)
    if not 0 <= start <= size:
        raise ValueError(f"start {start} is out of range for a buffer of {size} bytes")
    copy = not views and type(source) is not bytes
    records: list[Record] = []
    header = HEADER.unpack_from
    footer = U32.unpack_from
    crc = crc32c.crc32c
    header_crcs = _header_crcs
    pos = start
    # Literal numbers rather than the module's constants: this loop runs per record.
    while pos + 16 <= size:
        length, stored = header(source, pos)
        if verify and header_crcs.get(length) != stored:
            c = crc(source[pos : pos + 8])
            if (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF != stored:
                break
            if len(header_crcs) < _HEADER_CRC_CACHE:
                header_crcs[length] = stored
        stop = pos + 12 + length
        if stop + 4 > size:
            break
        data = source[pos + 12 : stop]
        if verify:
            c = crc(data)
            if (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF != footer(source, stop)[0]:
                break
        records.append(bytes(data) if copy else data)
        pos = stop + 4
    return records, pos


class ScanFrames(Protocol):
    """The signature of ``scan_frames`` (``views`` is false unless given)."""

    def __call__(
        self, buffer: Buffer, start: int, verify: bool, views: bool = False, /
    ) -> tuple[list[Record], int]: ...


@dataclass(frozen=True, slots=True)
class FrameCodec:
    """The framing primitives that writers and readers call once per batch of records, in C or in
    Python (same results, same errors).

    ``frame_records(records, start, limit) -> (framed, stop)`` frames ``records[start:stop]`` of a
    list or tuple of bytes, taking records while the framed size is below ``limit`` (at least one);
    a record that is not bytes ends the batch before it, or raises ``TypeError`` when first.

    ``scan_frames(buffer, start, verify, views=False) -> (records, stop)`` slices the data of the
    whole frames at ``buffer[start:]`` (``bytes``, or with ``views`` memoryviews of ``buffer``)
    and stops at the first frame that is cut off or, with ``verify``, fails a CRC check; ``stop``
    is its position.

    ``scan_spans(buffer, start, verify) -> (records, stop)`` (the accelerator's only, else
    ``None``) scans alike and gives the records as one ``Spans`` of ``buffer``: a sequence of
    ``bytes`` without an object per record, which ``scan_batch`` reads in place. The buffer must
    not change while it lives.

    Both raise ``ValueError`` for a ``start`` out of range.
    """

    frame_records: Callable[[Sequence[bytes], int, int], tuple[bytes, int]]
    scan_frames: ScanFrames
    scan_spans: Callable[[Buffer, int, bool], tuple[Sequence[bytes], int]] | None = None


PURE_PYTHON = FrameCodec(_frame_records, _scan_frames)
"""The pure-Python framing primitives, whichever implementation :data:`FRAMES` is."""


def _accelerated() -> FrameCodec | None:
    """The C accelerator's framing primitives, or ``None`` when it is off or not built."""
    module = _accel.speedups
    if module is None:
        return None
    frame_records = getattr(module, "frame_records", None)
    scan_frames = getattr(module, "scan_frames", None)
    scan_spans = getattr(module, "scan_spans", None)
    if frame_records is None or scan_frames is None or scan_spans is None:
        raise ImportError(
            f"{getattr(module, '__file__', 'codegen._speedups')}: the codegen._speedups "
            "extension is out of date (it lacks frame_records, scan_frames or scan_spans); rebuild"
            " it with "
            "'python setup.py build_ext --inplace', reinstall tfr-gen, or set "
            f"{_accel.PURE_PYTHON_VARIABLE}=1"
        )
    return FrameCodec(frame_records, scan_frames, scan_spans)


FRAMES: FrameCodec = _accelerated() or PURE_PYTHON
"""The framing primitives in use: the C accelerator's when it is built, else :data:`PURE_PYTHON`."""
