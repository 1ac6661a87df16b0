"""TFRecord files, byte-compatible with TensorFlow's ``TFRecordWriter`` and ``TFRecordDataset``.

A TFRecord file is a sequence of records, each framed as::

    <u64 LE data length> <u32 LE masked crc32c of the 8 length bytes>
    <data> <u32 LE masked crc32c of data>

where ``masked(c) = ((c >> 15) | (c << 17)) + 0xa282ead8 (mod 2**32)``. The whole record stream
may be compressed: ``"gzip"`` or ``"zlib"``, as ``tf.io.TFRecordOptions(compression_type=...)``
with ``"GZIP"`` or ``"ZLIB"``.

Paths are written crash-safely: records go to a hidden temporary file next to the target, which
replaces the target only on a clean :meth:`TFRecordWriter.close`. Reading slices records out of
large buffered chunks; corruption is reported as :class:`~codegen.errors.DataError` naming the
file, record index and byte offset, or, with ``on_error="skip"``, passed over and reported as
:class:`SkippedSpan`.

Framing many records and checking many frames are one call each, :data:`FRAMES`: the C
accelerator's ``frame_records`` and ``scan_frames`` (``codegen/_speedups/frames.c``) when it is
built, else their pure-Python equivalents, :data:`PURE_PYTHON`.
"""

from __future__ import annotations

import errno
import functools
import heapq
import os
import secrets
import struct
import sys
import weakref
import zlib
from collections import deque
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Any, BinaryIO, Literal, Protocol

import crc32c
import numpy as np
from numpy.typing import NDArray

from codegen.errors import DataError, TfrGenError
from codegen.runtime import accel as _accel

if TYPE_CHECKING:
    from typing_extensions import Buffer

__all__ = [
    "FRAMES",
    "PURE_PYTHON",
    "Compression",
    "FrameCodec",
    "OnError",
    "SkippedSpan",
    "TFRecordReader",
    "TFRecordWriter",
    "read_tfrecord",
    "resolve_compression",
    "write_tfrecord",
]

Compression = Literal["gzip", "zlib"] | None
"""How the record stream is compressed: ``None`` (not at all), ``"gzip"`` or ``"zlib"``."""

OnError = Literal["raise", "skip"]
"""What a reader does with a corrupt or truncated record: raise :class:`DataError`, or skip it."""

_WBITS: dict[str, int] = {"gzip": 16 + 15, "zlib": 15}  # zlib window bits (+16: gzip container)
_MASK_DELTA = 0xA282EAD8
_U32_MASK = 0xFFFFFFFF
Record = bytes | memoryview
"""A record's data: ``bytes``, or a memoryview of a reader's buffer
(:meth:`TFRecordReader.views`)."""

_HEADER = struct.Struct("<QI")  # data length, masked crc of the length bytes
_U64 = struct.Struct("<Q")
_U32 = struct.Struct("<I")
_HEADER_SIZE = 12
_FRAME_SIZE = 16  # header plus data crc: the size of an empty record

_READ_CHUNK = 1 << 20  # bytes asked of an uncompressed file per read
_MAX_READ = 1 << 26  # largest step by which a reader's buffer grows for a large record
_COMPRESSED_CHUNK = 1 << 18  # compressed bytes fed to the decompressor at a time
_WRITE_CHUNK = 1 << 20  # framed bytes collected before they go to the file (or the compressor)
_SCAN_BLOCK = 1 << 18  # header positions checked per step while resynchronising
_HEADER_CRC_CACHE = 4096  # distinct record lengths whose header CRC is remembered
_WRITEBACK_STEP = 1 << 20  # bytes written to a temporary file between starts of their writeback
_START_WRITEBACK = sys.platform == "linux"  # where posix_fadvise(DONTNEED) starts writeback


def _masked_crc(data: Buffer) -> int:
    """The masked crc32c that TFRecord stores for ``data``."""
    return _mask(crc32c.crc32c(data))


def _mask(c: int) -> int:
    """The masked form of the crc32c ``c``, as TFRecord stores it."""
    return (((c >> 15) | (c << 17)) + _MASK_DELTA) & _U32_MASK


# ------------------------------------------------------------------------------------------ framing

_header_bytes: dict[int, bytes] = {}  # framed header by data length (bounded)
_header_crcs: dict[int, int] = {}  # stored header CRC by data length (bounded)


def _not_bytes(data: object) -> TypeError:
    """The error for a record that is not bytes."""
    return TypeError(f"TFRecordWriter.write expects bytes, got {type(data).__name__}")


def _frame_header(size: int) -> bytes:
    """The 12-byte header of a ``size``-byte record (remembered for the lengths seen, bounded)."""
    header = _header_bytes.get(size)
    if header is None:
        length = _U64.pack(size)
        header = length + _U32.pack(_masked_crc(length))
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
                raise _not_bytes(data)
            break
        c = crc(data)
        parts += (
            header(len(data)),
            data,
            _U32.pack((((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF),
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
    header = _HEADER.unpack_from
    footer = _U32.unpack_from
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


@dataclass(frozen=True, slots=True)
class FrameCodec:
    """The framing primitives that :class:`TFRecordWriter` and :class:`TFRecordReader` call once
    per batch of records, in C or in Python (same results, same errors).

    ``frame_records(records, start, limit) -> (framed, stop)`` frames ``records[start:stop]`` of a
    list or tuple of bytes, taking records while the framed size is below ``limit`` (at least one);
    a record that is not bytes ends the batch before it, or raises ``TypeError`` when first.

    ``scan_frames(buffer, start, verify, views=False) -> (records, stop)`` slices the data of the
    whole frames at ``buffer[start:]`` (``bytes``, or with ``views`` memoryviews of ``buffer``)
    and stops at the first frame that is cut off or, with ``verify``, fails a CRC check; ``stop``
    is its position.

    Both raise ``ValueError`` for a ``start`` out of range.
    """

    frame_records: Callable[[Sequence[bytes], int, int], tuple[bytes, int]]
    scan_frames: Callable[[Buffer, int, bool, bool], tuple[list[Record], int]]


PURE_PYTHON = FrameCodec(_frame_records, _scan_frames)
"""The pure-Python framing primitives, whichever implementation :data:`FRAMES` is."""


def _accelerated() -> FrameCodec | None:
    """The C accelerator's framing primitives, or ``None`` when it is off or not built."""
    module = _accel.speedups
    if module is None:
        return None
    frame_records = getattr(module, "frame_records", None)
    scan_frames = getattr(module, "scan_frames", None)
    if frame_records is None or scan_frames is None:
        raise ImportError(
            f"{getattr(module, '__file__', 'codegen._speedups')}: the codegen._speedups "
            "extension is out of date (it lacks frame_records and scan_frames); rebuild it with "
            "'python setup.py build_ext --inplace', reinstall tfr-gen, or set "
            f"{_accel.PURE_PYTHON_VARIABLE}=1"
        )
    return FrameCodec(frame_records, scan_frames)


FRAMES: FrameCodec = _accelerated() or PURE_PYTHON
"""The framing primitives in use: the C accelerator's when it is built, else :data:`PURE_PYTHON`."""


def resolve_compression(
    path: str | os.PathLike[str] | None, compression: Compression | Literal["auto"]
) -> Compression:
    """The compression to use for ``path``.

    ``"auto"`` picks by the path's suffix (case-insensitively): ``.gz`` is gzip, ``.zlib`` is zlib,
    anything else (and no path, as for a file object) is uncompressed. Any other value must be
    ``None``, ``"gzip"`` or ``"zlib"`` and is returned as is; an unknown name raises
    :class:`~codegen.errors.TfrGenError` (a ``ValueError``).
    """
    if compression == "auto":
        if path is None:
            return None
        name = os.fspath(path).lower()
        if name.endswith(".gz"):
            return "gzip"
        if name.endswith(".zlib"):
            return "zlib"
        return None
    if compression is None or compression == "gzip" or compression == "zlib":
        return compression
    raise TfrGenError(
        f"unknown TFRecord compression {compression!r}; "
        "expected one of None, 'gzip', 'zlib', 'auto'"
    )


def _stream_name(stream: BinaryIO) -> str:
    """The name errors use for a caller's file object: its ``name`` if a path, else ``<stream>``."""
    name = getattr(stream, "name", None)
    return name if isinstance(name, str) else "<stream>"


# ------------------------------------------------------------------------------------------ writing


def _discard_temporary(file: BinaryIO, temporary: str) -> None:
    """Closes and deletes an unfinished temporary file (its writer was aborted or collected)."""
    file.close()
    try:
        os.unlink(temporary)
    except FileNotFoundError:
        pass


def _fsync_directory(directory: str) -> None:
    """Makes a rename in ``directory`` durable (POSIX; tolerates filesystems that cannot)."""
    if os.name != "posix":
        return
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.ENOTSUP):
            raise
    finally:
        os.close(fd)


class TFRecordWriter:
    """Writes records to a TFRecord file, framed and compressed exactly as TensorFlow reads them.

    ``target`` is a path or a binary file object.

    For a path the writer is crash-safe: records go to a temporary file in the same directory
    (``.<name>.<random>.tmp``); a clean :meth:`close` flushes it, syncs it to disk and atomically
    renames it onto ``target`` (replacing an existing file). If a ``with`` block exits with an
    exception, or the writer is garbage collected without being closed, the temporary file is
    deleted and nothing appears under ``target``. While the temporary file grows, its writeback
    to disk is started a chunk at a time (on Linux), so that the closing ``fsync`` has little
    left to wait for.

    :meth:`write` appends one record, :meth:`write_many` any number (a list or tuple is framed in
    one call per chunk); either way records are framed in batches, by :data:`FRAMES`.

    For a file object, framed records are written to it in chunks (:meth:`flush` pushes what is
    pending); :meth:`close` finishes the compression stream and flushes the object but never
    closes it. That also happens when a ``with`` block exits with an exception, so the object
    always ends with a complete stream of the records written.

    ``compression`` is ``None``, ``"gzip"``, ``"zlib"`` or ``"auto"`` (see
    :func:`resolve_compression`; ``"auto"`` means uncompressed for a file object).
    """

    def __init__(
        self,
        target: str | os.PathLike[str] | BinaryIO,
        *,
        compression: Compression | Literal["auto"] = None,
    ) -> None:
        self._temporary: str | None
        self._finalizer: weakref.finalize[[BinaryIO, str], TFRecordWriter] | None
        if isinstance(target, str | os.PathLike):
            self.path: str = os.fspath(target)
            self.compression: Compression = resolve_compression(target, compression)
            self._final = os.path.abspath(self.path)  # unaffected by later changes of directory
            directory, name = os.path.split(self._final)
            self._directory = directory
            self._temporary = os.path.join(directory, f".{name}.{secrets.token_hex(6)}.tmp")
            self._file: BinaryIO = open(self._temporary, "xb")
            self._finalizer = weakref.finalize(
                self, _discard_temporary, self._file, self._temporary
            )
        else:
            self.path = _stream_name(target)
            self.compression = resolve_compression(None, compression)
            self._final = ""
            self._directory = ""
            self._temporary = None
            self._file = target
            self._finalizer = None
        self._compressor = (
            None
            if self.compression is None
            else zlib.compressobj(
                zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, _WBITS[self.compression]
            )
        )
        self._batch: list[bytes] = []  # records accepted, not framed yet (they follow the parts)
        self._parts: list[bytes] = []  # framed records not yet written
        self._pending = 0  # framed size of the batch and the parts
        self._count = 0
        self._closed = False
        self._written = 0  # bytes handed to the file
        self._flushing = 0  # bytes whose writeback to disk has been started
        self._hint_writeback = _START_WRITEBACK and self._temporary is not None

    @property
    def records_written(self) -> int:
        """How many records :meth:`write` and :meth:`write_many` have accepted."""
        return self._count

    def write(self, data: bytes) -> None:
        """Appends one record."""
        if self._closed:
            raise TfrGenError(f"{self.path}: cannot write to a closed TFRecordWriter")
        if not isinstance(data, bytes):
            raise _not_bytes(data)
        self._batch.append(data)
        self._count += 1
        self._pending += len(data) + 16
        if self._pending >= _WRITE_CHUNK:
            self._drain()

    def write_many(self, records: Iterable[bytes]) -> None:
        """Appends every record of ``records``, in order: the same bytes as :meth:`write` on each.

        A list or tuple is framed in one call per chunk of about 1 MiB; from any other iterable
        the records are collected as :meth:`write` collects them. A record that is not bytes
        raises ``TypeError`` (as does an exception of ``records``) after the records before it
        have been appended.
        """
        if self._closed:
            raise TfrGenError(f"{self.path}: cannot write to a closed TFRecordWriter")
        if isinstance(records, list | tuple):
            self._frame(records)
            return
        batch = self._batch
        for data in records:
            if not isinstance(data, bytes):
                raise _not_bytes(data)
            batch.append(data)
            self._count += 1
            self._pending += len(data) + 16
            if self._pending >= _WRITE_CHUNK:
                self._drain()

    def _frame(self, records: Sequence[bytes]) -> None:
        """Frames a list or tuple of records after those pending, writing each full chunk."""
        if self._batch:
            self._frame_batch()
        frame = FRAMES.frame_records
        start, count = 0, len(records)
        while start < count:
            framed, stop = frame(records, start, _WRITE_CHUNK - self._pending)
            self._parts.append(framed)
            self._count += stop - start
            self._pending += len(framed)
            if self._pending >= _WRITE_CHUNK:
                self._drain()
            start = stop

    def _frame_batch(self) -> None:
        """Frames the records collected by :meth:`write`, after the framed parts."""
        framed, _ = FRAMES.frame_records(self._batch, 0, sys.maxsize)
        self._parts.append(framed)
        self._batch.clear()

    def flush(self) -> None:
        """Hands every record written so far to the file and flushes it.

        A compressed stream gets a sync point, so everything written can be decompressed. For a
        path this reaches the temporary file only; the target appears on :meth:`close`.
        """
        if self._closed:
            raise TfrGenError(f"{self.path}: cannot flush a closed TFRecordWriter")
        self._drain()
        if self._compressor is not None:
            self._file.write(self._compressor.flush(zlib.Z_SYNC_FLUSH))
        self._file.flush()

    def close(self) -> None:
        """Finishes the file: for a path, flush, ``fsync`` and rename onto the target.

        Closing twice is a no-op. If finishing fails (for example the disk is full), the temporary
        file is deleted and the error re-raised.
        """
        if self._closed:
            return
        self._closed = True
        try:
            self._drain()
            if self._compressor is not None:
                self._file.write(self._compressor.flush(zlib.Z_FINISH))
            self._file.flush()
            if self._temporary is not None and self._finalizer is not None:
                os.fsync(self._file.fileno())
                self._file.close()
                os.replace(self._temporary, self._final)
                self._finalizer.detach()
                _fsync_directory(self._directory)
        except BaseException:
            if self._finalizer is not None:
                self._finalizer()
            raise

    def _drain(self) -> None:
        """Writes the collected records to the file, framed (through the compressor, if any)."""
        if self._batch:
            self._frame_batch()
        if not self._parts:
            return
        blob = b"".join(self._parts)
        self._parts.clear()
        self._pending = 0
        if self._compressor is not None:
            blob = self._compressor.compress(blob)
        if blob:
            self._file.write(blob)
            self._written += len(blob)
            if self._hint_writeback and self._written - self._flushing >= _WRITEBACK_STEP:
                self._start_writeback()

    def _start_writeback(self) -> None:
        """Starts writing the temporary file's new bytes to disk, so that the ``fsync`` of
        :meth:`close` finds less to wait for.

        On Linux ``posix_fadvise(DONTNEED)`` starts the writeback of a range's dirty pages and
        drops only its clean pages (the new bytes are dirty, so they stay cached). It is a hint: a
        file system that refuses it turns the hints off for this writer.
        """
        self._file.flush()
        try:
            os.posix_fadvise(
                self._file.fileno(),
                self._flushing,
                self._written - self._flushing,
                os.POSIX_FADV_DONTNEED,
            )
        except OSError:
            self._hint_writeback = False
        self._flushing = self._written

    def _abort(self) -> None:
        """Deletes the unfinished temporary file; nothing appears under the target path."""
        self._closed = True
        self._batch.clear()
        self._parts.clear()
        if self._finalizer is not None:
            self._finalizer()

    def __enter__(self) -> TFRecordWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is not None and self._temporary is not None:
            self._abort()
        else:
            self.close()


def write_tfrecord(
    path: str | os.PathLike[str],
    records: Iterable[bytes],
    *,
    compression: Compression | Literal["auto"] = "auto",
) -> int:
    """Writes ``records`` to ``path`` crash-safely (see :class:`TFRecordWriter`); returns the count.

    If iterating ``records`` raises, no file appears under ``path``.
    """
    with TFRecordWriter(path, compression=compression) as writer:
        writer.write_many(records)
    return writer.records_written


# ------------------------------------------------------------------------------------------ reading


@dataclass(frozen=True, slots=True)
class SkippedSpan:
    """A stretch of a TFRecord stream that a reader with ``on_error="skip"`` passed over.

    ``offset`` and ``length`` count bytes of the (uncompressed) record stream; ``reason`` says what
    was wrong at ``offset``. A compressed stream that is corrupt or cut short ends with a span of
    length 0 whose reason names the compression error (the bytes of a record it cut off are
    reported just before, as a truncated record).
    """

    path: str
    offset: int
    length: int
    reason: str


class _CompressedStreamError(Exception):
    """The compressed stream is corrupt or truncated (the reader reports it as a DataError)."""


class _Source(Protocol):
    """A stream of uncompressed record bytes."""

    def readinto(self, buffer: memoryview) -> int:
        """Fills the start of ``buffer`` with more bytes (at least one until the stream ends) and
        returns how many; 0 at the end."""
        ...


class _PlainSource:
    """The bytes of an uncompressed file."""

    def __init__(self, file: BinaryIO) -> None:
        self._file = file
        self._readinto = getattr(file, "readinto", None)

    def readinto(self, buffer: memoryview) -> int:
        if self._readinto is not None:
            count: int | None = self._readinto(buffer)
            if count is not None:
                return count
            return 0  # a non-blocking file without data: nothing more to read now
        data = self._file.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


class _InflatingSource:
    """The uncompressed bytes of a zlib stream or of one or more concatenated gzip members."""

    def __init__(self, file: BinaryIO, compression: Literal["gzip", "zlib"]) -> None:
        self._file = file
        self._name = compression
        self._wbits = _WBITS[compression]
        self._inflater = zlib.decompressobj(self._wbits)
        self._input = b""
        self._started = False

    def readinto(self, buffer: memoryview) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def read(self, size: int) -> bytes:
        """Up to ``size`` more bytes (at least one until the stream ends), ``b""`` at the end."""
        while True:
            if self._inflater.eof:
                rest = self._inflater.unused_data or self._file.read(_COMPRESSED_CHUNK)
                if not rest:
                    return b""
                if self._name != "gzip":
                    raise _CompressedStreamError("corrupt zlib stream: data after its end")
                self._inflater = zlib.decompressobj(self._wbits)  # the next gzip member
                self._input = rest
            elif not self._input:
                self._input = self._file.read(_COMPRESSED_CHUNK)
                if not self._input:
                    if not self._started:
                        return b""  # an empty file holds no records
                    raise _CompressedStreamError(
                        f"truncated {self._name} stream: the file ends inside compressed data"
                    )
                self._started = True
            try:
                out = self._inflater.decompress(self._input, size)
            except zlib.error as exc:
                raise _CompressedStreamError(f"corrupt {self._name} stream: {exc}") from None
            self._input = b"" if self._inflater.eof else self._inflater.unconsumed_tail
            if out:
                return out


def _new_buffer(size: int) -> Buffer:
    """A writable buffer of ``size`` bytes for the reader: from the accelerator's pool of large
    buffers when it is built (memory already paged in, given back when the last record viewing
    it goes), else a ``bytearray``."""
    return _accel.speedups.pooled_block(size) if _accel.speedups is not None else bytearray(size)


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
    b = np.frombuffer(buf, dtype=np.uint8, count=count + _HEADER_SIZE - 1, offset=start)
    crc = np.full(count, _CRC_OF_ZEROS, dtype=np.uint32)
    for i in range(8):
        crc ^= tables[i][b[i : i + count]]
    masked = ((crc >> np.uint32(15)) | (crc << np.uint32(17))) + np.uint32(_MASK_DELTA)
    stored = b[8 : 8 + count].astype(np.uint32)
    for i in range(1, 4):
        stored |= b[8 + i : 8 + i + count].astype(np.uint32) << np.uint32(8 * i)
    positions: list[int] = np.flatnonzero(masked == stored).tolist()
    return positions


@dataclass(slots=True)
class _Resync:
    """What resynchronising has learnt about the stream ahead, kept from one resynchronisation to
    the next so that each byte has its header CRC checked once and its data checksummed once.

    Positions are stream offsets. ``prefix`` is the crc32c of the stream from ``anchor`` to
    ``cursor``; ``kept`` holds that CRC at the data start and end of every candidate the cursor has
    passed (``order``: their positions, ascending). A candidate's data CRC then follows from the two
    (:func:`_span_crc`), whatever length it declares and however the candidates overlap.
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
            self.stops = [at + _HEADER_SIZE + n for at, n in candidates]
            self.stops += [at + _HEADER_SIZE for at, _ in candidates]
            heapq.heapify(self.stops)

    def add(self, at: int, length: int) -> None:
        """Adds the candidate header at ``at`` declaring ``length`` bytes of data."""
        self.candidates.append((at, length))
        heapq.heappush(self.stops, at + _HEADER_SIZE)
        heapq.heappush(self.stops, at + _HEADER_SIZE + length)

    def forget_before(self, position: int) -> None:
        """Drops the CRCs kept before ``position`` (no untried candidate needs them)."""
        order, kept = self.order, self.kept
        while order and order[0] < position:
            del kept[order.popleft()]


class TFRecordReader:
    """Iterates over the records of a TFRecord file, as ``bytes``.

    ``source`` is a path (opened here; closed by :meth:`close`, by the ``with`` block, or when
    iteration ends) or a binary file object (read from its current position, never closed).
    ``compression`` is ``None``, ``"gzip"`` (one or more concatenated members), ``"zlib"`` or
    ``"auto"`` (see :func:`resolve_compression`; uncompressed for a file object).
    ``verify_crc=False`` skips both CRC checks, as TensorFlow can; truncation is still detected.

    Errors are :class:`~codegen.errors.DataError` naming the file, the index of the record (the
    number of records yielded before it) and the byte offset of its header. For a compressed file
    offsets count bytes of the *uncompressed* record stream. The end of the file exactly at a
    record boundary ends iteration cleanly; errors are a corrupt length CRC, a corrupt data CRC, a
    truncated header or record, and a corrupt or truncated compressed stream.

    With ``on_error="skip"`` the reader never yields a record whose CRC failed. After a corrupt
    CRC it resynchronises on the next position where a header's length CRC and its record's data
    CRC are both valid; a truncated last record is skipped to the end of the stream. Every stretch
    passed over is reported as a :class:`SkippedSpan` to ``on_skip`` (if given) and counted in
    ``skipped_spans`` and ``skipped_bytes``. Resynchronising takes time linear in the bytes passed
    over, whatever lengths the candidate headers declare: the data CRC of a candidate comes from
    running CRCs at its two ends (:class:`_Resync`), not from a pass over its data.

    ``index`` is the number of records yielded so far and :attr:`offset` the stream offset of the
    next header. Memory stays within a few 1 MiB chunks plus the largest record; a header that
    declares more data than the file holds costs at most the rest of the file, never the length
    it declares.
    """

    def __init__(
        self,
        source: str | os.PathLike[str] | BinaryIO,
        *,
        compression: Compression | Literal["auto"] = None,
        verify_crc: bool = True,
        on_error: OnError = "raise",
        on_skip: Callable[[SkippedSpan], None] | None = None,
    ) -> None:
        if on_error != "raise" and on_error != "skip":
            raise TfrGenError(f"unknown on_error {on_error!r}; expected 'raise' or 'skip'")
        if on_skip is not None and on_error != "skip":
            raise TfrGenError("on_skip is only called with on_error='skip'")
        self._file: BinaryIO
        if isinstance(source, str | os.PathLike):
            self.path: str = os.fspath(source)
            self.compression: Compression = resolve_compression(source, compression)
            self._file = open(self.path, "rb", buffering=0)
            self._owns_file = True
        else:
            self.path = _stream_name(source)
            self.compression = resolve_compression(None, compression)
            self._file = source
            self._owns_file = False
        self._source: _Source = (
            _PlainSource(self._file)
            if self.compression is None
            else _InflatingSource(self._file, self.compression)
        )
        self._where = (
            "" if self.compression is None else f" (in the uncompressed {self.compression} stream)"
        )
        self._verify = verify_crc
        self._skip = on_error == "skip"
        self._on_skip = on_skip
        self.index = 0
        self.skipped_spans = 0
        self.skipped_bytes = 0
        self._buf = memoryview(b"")
        self._pos = 0  # position in _buf of the next header
        self._base = 0  # stream offset of _buf[0]
        self._eof = False
        self._stream_error: str | None = None
        self._resync_state: _Resync | None = None
        self._started = False
        self._records: Generator[bytes, None, None] = self._generate()  # type: ignore[assignment]

    @property
    def offset(self) -> int:
        """The byte offset of the next record's header in the (uncompressed) stream."""
        return self._base + self._pos

    def __iter__(self) -> Iterator[bytes]:
        return self._records

    def __next__(self) -> bytes:
        return next(self._records)

    def close(self) -> None:
        """Ends iteration and closes the file if the reader opened it."""
        self._records.close()
        if self._owns_file:
            self._file.close()

    def __enter__(self) -> TFRecordReader:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def views(self) -> Iterator[memoryview]:
        """The records as memoryviews of the reader's buffers instead of ``bytes`` copies: an
        iterator to take in place of the reader before any record is read.

        A view keeps its buffer (about 1 MiB of the stream) alive: decode it and let it go, do not
        collect many. Buffers come from the accelerator's pool when it is built, so a reader that
        views its records reuses memory that is already paged in rather than copying each record.
        """
        if self.index or self._started:
            raise TfrGenError(f"{self.path}: views() must be taken before any record is read")
        self._records.close()
        self._records = self._generate(True)  # type: ignore[assignment]
        return self._records  # type: ignore[return-value]

    def _generate(self, views: bool = False) -> Generator[Record, None, None]:
        """The records: every whole, valid frame of the current buffer is checked and sliced in
        one call; the first one that is not goes to :meth:`_advance`."""
        self._started = True
        verify = self._verify
        scan = FRAMES.scan_frames
        try:
            while True:
                pos = self._pos
                records, stop = scan(self._buf, pos, verify, views)
                for data in records:
                    # Literal numbers: this runs per record. Index and offset are exact at each
                    # yield (callers locate a record from them).
                    pos += len(data) + 16
                    self._pos = pos
                    self.index += 1
                    yield data
                self._pos = stop
                if not self._advance():
                    if self._stream_error is not None:
                        self._report(self.offset, 0, self._stream_error)
                    return
        finally:
            if self._owns_file:
                self._file.close()

    def _advance(self) -> bool:
        """Deals with the record at the current position, which the inner loop could not take.

        Reads more data, or raises for (or skips) a corrupt or truncated record. Returns False at
        the end of the stream.
        """
        available = self._fill(_HEADER_SIZE)
        if available == 0:
            return False
        if available < _HEADER_SIZE:
            return self._fail(
                f"truncated header: the file ends {available} bytes into a 12-byte record header"
            )
        length, stored = _HEADER.unpack_from(self._buf, self._pos)
        if self._verify:
            computed = _masked_crc(self._buf[self._pos : self._pos + 8])
            if computed != stored:
                return self._fail(
                    f"corrupt length CRC: stored {stored:#010x}, computed {computed:#010x}",
                    resync=True,
                )
        needed = _FRAME_SIZE + length
        available = self._fill(needed)
        if available < needed:
            return self._fail(
                f"truncated record: the file ends {available} bytes into a record that declares "
                f"{length} bytes of data ({needed} bytes with its framing)"
            )
        if self._verify:
            stored, computed = self._data_crcs(length)
            if computed != stored:
                return self._fail(
                    f"corrupt data CRC of a {length}-byte record: stored {stored:#010x}, "
                    f"computed {computed:#010x}",
                    resync=True,
                )
        return True

    def _data_crcs(self, length: int) -> tuple[int, int]:
        """The stored and computed data CRC of the ``length``-byte record at the current position.

        The buffer must hold the whole record.
        """
        start = self._pos + _HEADER_SIZE
        stored: int = _U32.unpack_from(self._buf, start + length)[0]
        return stored, _masked_crc(self._buf[start : start + length])

    def _fill(self, needed: int) -> int:
        """Reads until ``needed`` bytes follow the current position or the stream ends.

        Returns how many bytes follow it. Keeps only the bytes from the current position on.
        Reads are bounded, so a huge ``needed`` costs at most the data actually present.
        """
        buf, pos = self._buf, self._pos
        available = len(buf) - pos
        if available >= needed or self._eof:
            return available
        # A new buffer (from the accelerator's pool, when it is built) starts with the bytes kept;
        # it doubles when the stream fills it, so it is never much larger than the data read (a
        # declared length costs nothing until the data is there).
        view = memoryview(_new_buffer(available + _READ_CHUNK))
        view[:available] = buf[pos:]
        while available < needed:
            if available == len(view):
                grown = memoryview(_new_buffer(available + min(available, _MAX_READ)))
                grown[:available] = view[:available]
                view = grown
            try:
                count = self._source.readinto(view[available:])
            except _CompressedStreamError as exc:
                if not self._skip:
                    raise DataError(
                        f"{exc}{self._where}", path=self.path, index=self.index, offset=self.offset
                    ) from None
                self._stream_error = str(exc)
                count = 0
            if not count:
                self._eof = True
                break
            available += count
        self._base += pos
        self._buf = view[:available]
        self._pos = 0
        return available

    def _fail(self, reason: str, *, resync: bool = False) -> bool:
        """Raises DataError for the record at the current position, or skips it.

        Skipping a corrupt CRC (``resync``) scans for the next valid record and returns whether one
        was found; skipping a truncated record passes over the rest of the stream and returns False.
        """
        if not self._skip:
            raise DataError(
                f"{reason}{self._where}", path=self.path, index=self.index, offset=self.offset
            )
        if resync:
            return self._resync(self.offset, reason)
        rest = len(self._buf) - self._pos
        self._report(self.offset, rest, reason)
        self._pos += rest
        return False

    def _resync(self, start: int, reason: str) -> bool:
        """Moves to the first valid record after stream offset ``start``, or to the end.

        Reports the bytes passed over as one span and returns whether a record was found. Header
        CRCs are checked for a block of positions at a time; only positions whose header CRC is
        valid (candidates) have their record's data CRC checked, from running CRCs.
        """
        first = start + 1
        state = self._resync_state
        if state is None:
            state = self._resync_state = _Resync(anchor=first, cursor=first, frontier=first)
        else:
            state.restart(first)
        while True:
            if not state.candidates:
                if not self._scan_block(state):
                    end = self._base + len(self._buf)
                    self._report(start, end - start, reason)
                    self._pos = len(self._buf)
                    return False
                continue
            at, length = state.candidates.popleft()
            state.forget_before(at + _HEADER_SIZE)
            if self._checks_out(state, at, length):
                self._report(start, at - start, reason)
                self._pos = at - self._base
                return True

    def _keep_from(self, position: int) -> None:
        """Makes the buffer keep the stream from ``position`` on (at or after the buffer's
        start)."""
        self._pos = position - self._base

    def _scan_block(self, state: _Resync) -> bool:
        """Checks the header CRCs of the next block of positions, adding the candidates; False
        when no position is left that could hold a header."""
        frontier = state.frontier
        self._keep_from(min(state.cursor, frontier))
        available = self._fill(frontier + _SCAN_BLOCK + _HEADER_SIZE - 1 - self.offset)
        end = self.offset + available
        count = min(end - (_HEADER_SIZE - 1), frontier + _SCAN_BLOCK) - frontier
        if count <= 0:
            return False
        self._discover(state, frontier + count)
        return True

    def _discover(self, state: _Resync, limit: int) -> None:
        """Adds the candidates at positions from ``state.frontier`` to ``limit`` (excluded); the
        buffer holds the header bytes of them all."""
        buf, base, unpack = self._buf, self._base, _U64.unpack_from
        while state.frontier < limit:
            frontier = state.frontier
            count = min(limit - frontier, _SCAN_BLOCK)
            for p in _header_candidates(buf, frontier - base, count):
                state.add(frontier + p, unpack(buf, frontier + p - base)[0])
            state.frontier = frontier + count

    def _checks_out(self, state: _Resync, at: int, length: int) -> bool:
        """Whether the candidate at ``at`` declaring ``length`` bytes is whole and its data CRC
        valid."""
        data = at + _HEADER_SIZE
        end = data + length
        self._keep_from(min(state.cursor, at))
        needed = end + 4 - self.offset
        if self._fill(needed) < needed:
            return False  # truncated
        self._checksum_to(state, end)
        stored: int = _U32.unpack_from(self._buf, end - self._base)[0]
        return _mask(_span_crc(state.kept[data], state.kept[end], length)) == stored

    def _checksum_to(self, state: _Resync, target: int) -> None:
        """Moves the cursor to ``target`` (in the buffer), keeping its CRC at every stop passed.

        Candidates whose data starts before ``target`` are found first, so that their stops are
        in the heap before the cursor passes them.
        """
        if target <= state.cursor:
            return
        self._discover(state, target - (_HEADER_SIZE - 1))
        crc = crc32c.crc32c
        view, base = memoryview(self._buf), self._base
        stops, kept, order = state.stops, state.kept, state.order
        at, prefix = state.cursor, state.prefix
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
        state.cursor, state.prefix = at, prefix

    def _report(self, offset: int, length: int, reason: str) -> None:
        """Counts a skipped span and hands it to ``on_skip``."""
        self.skipped_spans += 1
        self.skipped_bytes += length
        if self._on_skip is not None:
            self._on_skip(SkippedSpan(self.path, offset, length, f"{reason}{self._where}"))


def read_tfrecord(
    path: str | os.PathLike[str],
    *,
    compression: Compression | Literal["auto"] = "auto",
    verify_crc: bool = True,
    on_error: OnError = "raise",
) -> Iterator[bytes]:
    """The records of the TFRecord file at ``path`` (see :class:`TFRecordReader`).

    The file is opened when iteration starts and closed when it ends or the iterator is dropped.
    """
    with TFRecordReader(
        path, compression=compression, verify_crc=verify_crc, on_error=on_error
    ) as reader:
        yield from reader
