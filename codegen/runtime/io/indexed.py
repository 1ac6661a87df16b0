"""Random access to the records of an uncompressed TFRecord file, through an index of their offsets.

Index file format, version 1 (``FILE.index`` beside ``FILE``; all integers little-endian)::

    offset  size  field
         0     8  magic b"TFRINDEX"
         8     4  u32 format version (1)
        12     4  u32 crc32c of bytes 16 to the end
        16     8  u64 record count N
        24     8  u64 size in bytes of the TFRecord file when it was indexed
        32     8  i64 modification time of the file then, in nanoseconds since the epoch
        40    8N  u64 byte offset of each record's header, in file order

An index is *stale* when the file's size or modification time differ from those it records (the
file was rewritten or appended to since). :class:`IndexedReader` uses ``FILE.index`` when it is
current and otherwise finds the offsets by reading the file once; an index passed explicitly must
be current and valid, or :class:`~codegen.errors.TfrGenError` says why. Reading a record checks its
length and data CRCs, as sequential reading does, and that the index is consistent with the file
around it: the record's frame ends exactly where the index puts the next record (or the file's
end), and the record before it ends exactly where it starts; an index that does not is refused
with a :class:`~codegen.errors.DataError` before the record's data is read. Reading every record
thus checks the whole chain of offsets. Compressed files have no index: their records
cannot be reached without decompressing everything before them.
"""

from __future__ import annotations

import operator
import os
import struct
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from types import TracebackType
from typing import BinaryIO, Generic, SupportsIndex, TypeVar, overload

import crc32c
import numpy as np
from numpy.typing import NDArray

from codegen.errors import DataError, RecordError, TfrGenError
from codegen.files import check_output
from codegen.runtime.io.compression import HEAD_SIZE, detect_compression, file_compression
from codegen.runtime.io.files import (
    FileStat,
    PathLike,
    binary_stream,
    open_input,
    read_head,
    stat_file,
    stream_name,
)
from codegen.runtime.io.framing import FRAMING, HEADER, HEADER_SIZE, U32, masked_crc
from codegen.runtime.io.reader import TFRecordReader
from codegen.runtime.io.urls import StorageOptions, is_url, local_path
from codegen.runtime.io.writer import write_file

__all__ = [
    "INDEX_SUFFIX",
    "IndexInfo",
    "IndexedReader",
    "IndexedRecords",
    "index_bytes",
    "read_index",
    "scan_offsets",
    "write_index",
]

T = TypeVar("T")

INDEX_SUFFIX = ".index"
"""An index file is named after its TFRecord file plus this suffix."""
MAGIC = b"TFRINDEX"
VERSION = 1
_HEADER = struct.Struct("<8sIIQQq")


@dataclass(frozen=True, slots=True)
class IndexInfo:
    """The offsets of a file's records and the file's ``size`` and ``mtime_ns`` they belong to."""

    offsets: NDArray[np.uint64]
    size: int
    mtime_ns: int

    def matches(self, stat: os.stat_result | FileStat) -> bool:
        """Whether the file described by ``stat`` is still the one indexed: the same size and
        modification time, or the same size when the store keeps no modification time (``0``: an
        HTTP server that sends none; the chain of offsets is still checked as records are read)."""
        same_time = stat.st_mtime_ns in (0, self.mtime_ns)
        return stat.st_size == self.size and same_time


def _uncompressed(path: str, storage_options: StorageOptions | None) -> None:
    _refuse_compressed(file_compression(path, storage_options=storage_options), path)


def _refuse_compressed(compression: str | None, path: str) -> None:
    if compression is not None:
        raise TfrGenError(
            f"{path}: a {compression}-compressed file cannot be indexed (its records can only be"
            " reached by decompressing everything before them); write it uncompressed for random"
            " access"
        )


def scan_offsets(path: PathLike, *, storage_options: StorageOptions | None = None) -> IndexInfo:
    """The offsets of every record of the uncompressed file at ``path`` (a path or URL), found by
    reading it.

    :class:`~codegen.errors.DataError` for a corrupt or truncated file; :class:`TfrGenError` for a
    compressed one, or one that changes while it is read.
    """
    name = os.fspath(path)
    _uncompressed(name, storage_options)
    before = stat_file(name, storage_options=storage_options)
    with TFRecordReader(name, storage_options=storage_options) as reader:
        offsets = _record_offsets(reader)
    after = stat_file(name, storage_options=storage_options)
    if (after.st_size, after.st_mtime_ns) != (before.st_size, before.st_mtime_ns):
        raise TfrGenError(f"{name}: the file changed while it was being indexed; try again")
    return IndexInfo(offsets, before.st_size, before.st_mtime_ns)


def _record_offsets(reader: TFRecordReader) -> NDArray[np.uint64]:
    """The offset of the header of each record ``reader`` reads (from the start of its stream)."""
    offsets: list[int] = []
    for data in reader:
        offsets.append(reader.offset - len(data) - FRAMING)
    return np.array(offsets, dtype=np.uint64)


def index_bytes(info: IndexInfo) -> bytes:
    """The index file contents for ``info``."""
    body = (
        struct.pack("<QQq", len(info.offsets), info.size, info.mtime_ns)
        + info.offsets.astype("<u8").tobytes()
    )
    return MAGIC + struct.pack("<II", VERSION, crc32c.crc32c(body)) + body


def write_index(
    path: PathLike,
    index: PathLike | None = None,
    *,
    storage_options: StorageOptions | None = None,
) -> IndexInfo:
    """Index the uncompressed TFRecord file at ``path`` into ``index`` (default ``path.index``);
    either may be a URL (reached with ``storage_options``).

    The index file is replaced atomically, with the umask's permissions. Errors as
    :func:`scan_offsets`, and an ``OSError`` naming a local index when it cannot be written there
    (checked before the file is read).
    """
    name = os.fspath(path)
    target = os.fspath(index) if index is not None else name + INDEX_SUFFIX
    if not is_url(target):
        check_output(local_path(target))  # before the scan: an index that cannot be written
    info = scan_offsets(name, storage_options=storage_options)
    write_file(target, index_bytes(info), storage_options=storage_options)
    return info


def read_index(index: PathLike, *, storage_options: StorageOptions | None = None) -> IndexInfo:
    """The contents of an index file; :class:`TfrGenError` naming what is wrong with it."""
    name = os.fspath(index)
    with open_input(name, buffered=True, storage_options=storage_options) as file:
        data = file.read()
    if len(data) < _HEADER.size or data[:8] != MAGIC:
        raise TfrGenError(f"{name}: not a tfr-gen index file (it does not start with {MAGIC!r})")
    _, version, crc, count, size, mtime_ns = _HEADER.unpack_from(data)
    if version != VERSION:
        raise TfrGenError(
            f"{name}: index format version {version}; this tfr-gen reads version {VERSION}"
        )
    if len(data) != _HEADER.size + 8 * count:
        raise TfrGenError(
            f"{name}: truncated or damaged index: {len(data)} bytes for {count} records"
            f" (expected {_HEADER.size + 8 * count})"
        )
    if crc32c.crc32c(data[16:]) != crc:
        raise TfrGenError(f"{name}: damaged index: its checksum does not match its contents")
    offsets = np.frombuffer(data, "<u8", count, _HEADER.size).astype(np.uint64)
    steps = np.diff(offsets.astype(np.int64))
    if count and (offsets[0] != 0 or np.any(steps < FRAMING) or int(offsets[-1]) + FRAMING > size):
        raise TfrGenError(f"{name}: damaged index: its offsets do not fit a {size}-byte file")
    return IndexInfo(offsets, size, mtime_ns)


def _position(i: SupportsIndex) -> int:
    """A record index (any integer, as ``operator.index`` takes it); ``TypeError`` naming what
    indexes records for anything else."""
    try:
        return operator.index(i)
    except TypeError:
        raise TypeError(
            f"records are indexed by an int or a slice (records[10:13]), not by {type(i).__name__}"
        ) from None


def _when(mtime_ns: int) -> str:
    return datetime.fromtimestamp(mtime_ns / 1e9, tz=UTC).isoformat(timespec="seconds")


class IndexedReader:
    """The records of an uncompressed TFRecord file by position: ``len(reader)``, ``reader[i]``.

    ``source`` is a path, a URL (read with ``storage_options``) or a seekable binary file object
    (records read by ``seek`` and ``read``, at the offsets of the file from its first byte; the
    caller's file is left open). ``index`` names the index file to use; it must be valid and
    current (else :class:`TfrGenError`; for a file object: indexed at its size). Without it,
    ``path + ".index"`` is used when it is valid and current, and otherwise (and always for a file
    object) the offsets are found by reading the file once (``index_path`` is then ``None``).
    ``reader[i]`` takes negative indexes and raises ``IndexError`` outside ``-len <= i < len``;
    ``reader[i:j:k]`` is the list of those records, as slicing a list gives them; a
    record whose CRCs fail, or that the file no longer holds, raises
    :class:`~codegen.errors.DataError` naming the file, index and offset. Reads are safe from
    several threads. Close the reader (or use ``with``) to close the file.
    """

    def __init__(
        self,
        source: PathLike | BinaryIO,
        *,
        index: PathLike | None = None,
        storage_options: StorageOptions | None = None,
    ) -> None:
        self._storage = storage_options
        self._owns_file = isinstance(source, str | os.PathLike)
        if isinstance(source, str | os.PathLike):
            self.path = os.fspath(source)
            _uncompressed(self.path, storage_options)
            self._file = open_input(self.path, buffered=True, storage_options=storage_options)
        else:
            self._file = binary_stream(source, "IndexedReader", seek_for="random access")
            self.path = stream_name(self._file)
        try:
            stat = self._stat()
            self.index_path: str | None
            if index is not None:
                self.index_path = os.fspath(index)
                info = read_index(self.index_path, storage_options=storage_options)
                if not info.matches(stat):
                    raise TfrGenError(
                        f"{self.index_path}: stale index of {self.path}: it was built for"
                        f" {info.size} bytes modified {_when(info.mtime_ns)}, the file now has"
                        f" {stat.st_size} bytes modified {_when(stat.st_mtime_ns)}; rebuild it with"
                        f" 'tfr-gen index {self.path}'"
                    )
            else:
                info = self._default_index(stat)
        except BaseException:
            self.close()
            raise
        self._offsets = info.offsets
        self._size = info.size
        self._lock = threading.Lock()

    def _stat(self) -> os.stat_result | FileStat:
        """The size and modification time of the file (a caller's file object: its size, after
        checking that it is uncompressed; no modification time)."""
        if not self._owns_file:
            self._file.seek(0)
            _refuse_compressed(detect_compression(read_head(self._file, HEAD_SIZE)), self.path)
            return FileStat(self._file.seek(0, os.SEEK_END), 0)
        if is_url(self.path):
            return stat_file(self.path, storage_options=self._storage)
        return os.fstat(self._file.fileno())

    def _default_index(self, stat: os.stat_result | FileStat) -> IndexInfo:
        """``path.index`` when valid and current, else the offsets found by a scan (a caller's
        file object: always a scan)."""
        self.index_path = None
        if not self._owns_file:
            self._file.seek(0)
            with TFRecordReader(self._file, compression=None) as reader:
                return IndexInfo(_record_offsets(reader), stat.st_size, 0)
        candidate = self.path + INDEX_SUFFIX
        try:
            info = read_index(candidate, storage_options=self._storage)
        except (OSError, TfrGenError):
            info = None
        if info is not None and info.matches(stat):
            self.index_path = candidate
            return info
        return scan_offsets(self.path, storage_options=self._storage)

    def __len__(self) -> int:
        return len(self._offsets)

    def offset(self, i: int) -> int:
        """The byte offset of record ``i``'s header (negative ``i`` counts from the end)."""
        n = len(self._offsets)
        j = i + n if i < 0 else i
        if not 0 <= j < n:
            raise IndexError(f"record index {i} out of range for {n} records in {self.path}")
        return int(self._offsets[j])

    @overload
    def __getitem__(self, i: int) -> bytes: ...

    @overload
    def __getitem__(self, i: slice) -> list[bytes]: ...

    def __getitem__(self, i: int | slice) -> bytes | list[bytes]:
        if isinstance(i, slice):
            return [self._read(j) for j in range(*i.indices(len(self._offsets)))]
        return self._read(_position(i))

    def _header(self, j: int, offset: int) -> int:
        """The data length in the header of record ``j`` at ``offset`` (the lock held), checked."""
        self._file.seek(offset)
        header = self._file.read(HEADER_SIZE)
        if len(header) < HEADER_SIZE:
            raise self._error(j, offset, f"truncated header: only {len(header)} of 12 bytes")
        length, stored = HEADER.unpack(header)
        computed = masked_crc(header[:8])
        if computed != stored:
            raise self._error(
                j,
                offset,
                f"corrupt length CRC: stored {stored:#010x}, computed {computed:#010x}",
            )
        return int(length)

    def _inconsistent(self, j: int, offset: int, reason: str) -> DataError:
        return self._error(
            j,
            offset,
            f"the index does not match the file: {reason}; rebuild it with 'tfr-gen index"
            f" {self.path}'",
        )

    def _read(self, i: int) -> bytes:
        offset = self.offset(i)
        n = len(self._offsets)
        j = i + n if i < 0 else i
        following = int(self._offsets[j + 1]) if j + 1 < n else self._size
        with self._lock:
            if j > 0:
                before = int(self._offsets[j - 1])
                if before + FRAMING + self._header(j - 1, before) != offset:
                    raise self._inconsistent(
                        j, offset, f"record {j - 1} does not end where the index puts record {j}"
                    )
            length = self._header(j, offset)
            if offset + FRAMING + length != following:
                where = f"record {j + 1}" if j + 1 < n else f"the file's end ({self._size} bytes)"
                raise self._inconsistent(
                    j,
                    offset,
                    f"the record's {length}-byte frame does not end where the index puts {where}",
                )
            rest = self._file.read(length + 4)
        if len(rest) < length + 4:
            raise self._error(
                j,
                offset,
                f"truncated record: the file ends {HEADER_SIZE + len(rest)} bytes into a record that"
                f" declares {length} bytes of data ({FRAMING + length} bytes with its framing)",
            )
        data = rest[:length]
        stored = U32.unpack_from(rest, length)[0]
        computed = masked_crc(data)
        if computed != stored:
            raise self._error(
                j,
                offset,
                f"corrupt data CRC of a {length}-byte record: stored {stored:#010x},"
                f" computed {computed:#010x}",
            )
        return data

    def _error(self, index: int, offset: int, reason: str) -> DataError:
        return DataError(reason, path=self.path, index=index, offset=offset)

    def __iter__(self) -> Iterator[bytes]:
        for i in range(len(self._offsets)):
            yield self[i]

    def close(self) -> None:
        """Close the file (a caller's file object is left open)."""
        if self._owns_file:
            self._file.close()

    def __enter__(self) -> IndexedReader:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class IndexedRecords(Generic[T]):
    """Decoded records of an uncompressed TFRecord file by position: ``len(records)``,
    ``records[i]`` (``decode(reader[i])``), ``records[i:j]`` (a list, as slicing a list gives it)
    and iteration in file order. ``source`` is a path, a URL or a seekable binary file object.

    A record that does not decode raises :class:`~codegen.errors.DataError` naming the file, index
    and offset. ``index`` is as for :class:`IndexedReader`.
    """

    def __init__(
        self,
        source: PathLike | BinaryIO,
        decode: Callable[[bytes], T],
        *,
        index: PathLike | None = None,
        storage_options: StorageOptions | None = None,
    ) -> None:
        self.reader = IndexedReader(source, index=index, storage_options=storage_options)
        self._decode = decode

    def __len__(self) -> int:
        return len(self.reader)

    @overload
    def __getitem__(self, i: int) -> T: ...

    @overload
    def __getitem__(self, i: slice) -> list[T]: ...

    def __getitem__(self, i: int | slice) -> T | list[T]:
        if isinstance(i, slice):
            return [self._record(j) for j in range(*i.indices(len(self.reader)))]
        return self._record(_position(i))

    def _record(self, i: int) -> T:
        data = self.reader[i]
        try:
            return self._decode(data)
        except RecordError as exc:
            j = i + len(self.reader) if i < 0 else i
            raise DataError(
                str(exc), path=self.reader.path, index=j, offset=self.reader.offset(i)
            ) from exc

    def __iter__(self) -> Iterator[T]:
        for i in range(len(self.reader)):
            yield self[i]

    def close(self) -> None:
        """Close the file."""
        self.reader.close()

    def __enter__(self) -> IndexedRecords[T]:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
