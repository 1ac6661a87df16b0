"""Writing files: atomically (:class:`AtomicFile`, :func:`write_atomic`), and TFRecord files
byte-compatible with TensorFlow's ``TFRecordWriter`` (:class:`TFRecordWriter`,
:func:`write_tfrecord`).

Every file is written crash-safely: its bytes go to a hidden temporary file next to the target,
which is synced to disk and renamed onto the target only when the writing finishes cleanly; on an
error, or when the writer is dropped unfinished, the temporary file is deleted and the target is
left as it was. A URL of an object store is written through
:class:`~codegen.runtime.io.urls.ObjectFile`: the object appears whole when the writing finishes
cleanly, or not at all (:func:`open_output`, :func:`write_file`). The temporary files, their
permissions and the errors that name the target come from :mod:`codegen.files`, whose
:func:`~codegen.files.write_atomic` this module exports.
"""

from __future__ import annotations

import os
import sys
import weakref
import zlib
from collections.abc import Iterable, Sequence
from types import TracebackType
from typing import BinaryIO, Protocol

import crc32c

from codegen.errors import TfrGenError
from codegen.files import (
    create_temporary,
    discard_temporary,
    fsync_directory,
    replace,
    write_atomic,
)
from codegen.runtime.io import framing
from codegen.runtime.io.compression import (
    Compression,
    CompressionArg,
    compressor,
    resolve_compression,
)
from codegen.runtime.io.files import PathLike, stream_name
from codegen.runtime.io.members import gzip_member
from codegen.runtime.io.urls import ObjectFile, StorageOptions, is_url, local_path
from codegen.runtime.io.whole import WholeOrNothing

__all__ = [
    "AtomicFile",
    "OutputFile",
    "TFRecordWriter",
    "fsync_directory",
    "open_output",
    "write_atomic",
    "write_file",
    "write_tfrecord",
]

_WRITE_CHUNK = 1 << 20  # framed bytes collected before they go to the file (or the compressor)
_MEMBER_CHUNK = (
    1 << 18
)  # framed bytes per gzip member: small enough that two threads share a file's
# inflating evenly and the first member is ready soon, large enough that headers cost nothing
_WRITEBACK_STEP = 1 << 20  # bytes written to a temporary file between starts of their writeback
_START_WRITEBACK = sys.platform == "linux"  # where posix_fadvise(DONTNEED) starts writeback
_RENAME_OPEN_FILES = os.name == "posix"  # where an open file can be renamed


class AtomicFile(WholeOrNothing):
    """A file that appears at ``path`` whole or not at all.

    Bytes go to a new temporary file in the same directory (``.<name>.<random>.tmp``, with the
    umask's permissions; :func:`codegen.files.create_temporary`), and errors name ``path``.
    :meth:`commit` flushes it, syncs it to disk, atomically renames it onto ``path`` (replacing an
    existing file) and syncs the directory. Discarding it (see :class:`WholeOrNothing`) deletes the
    temporary file, and nothing appears under ``path``; the temporary file is deleted even when closing it fails (a
    full disk). While the file grows, its writeback to disk is started a chunk at a time (on
    Linux), so that the ``fsync`` of :meth:`commit` has little left to wait for.

    The temporary file stays locked until it is renamed, so a killed writer's temporary file is
    recognised as stale; creating an ``AtomicFile`` removes the stale temporary files of its
    target (unless ``clean=False``, for targets whose names are never reused). :attr:`crc32c` is
    the crc32c of the bytes written so far, :attr:`size` their count.
    """

    def __init__(self, path: PathLike, *, clean: bool = True) -> None:
        self.name = os.fspath(path)  # as the caller gave it: errors name it
        self.path = os.path.abspath(self.name)  # unaffected by later changes of directory
        self.directory = os.path.dirname(self.path)
        self._file: BinaryIO
        self._file, self.temporary = create_temporary(self.name, clean=clean)
        self._finalizer = weakref.finalize(self, discard_temporary, self._file, self.temporary)
        self.crc32c = 0
        self._written = 0  # bytes handed to the file
        self._flushing = 0  # bytes whose writeback to disk has been started
        self._hint_writeback = _START_WRITEBACK

    def write(self, data: bytes) -> None:
        """Appends ``data`` to the temporary file."""
        self._file.write(data)
        self.crc32c = crc32c.crc32c(data, self.crc32c)
        self._written += len(data)
        if self._hint_writeback and self._written - self._flushing >= _WRITEBACK_STEP:
            self._start_writeback()

    @property
    def size(self) -> int:
        """How many bytes were written."""
        return self._written

    def flush(self) -> None:
        """Hands what was written to the operating system (the target appears on :meth:`commit`)."""
        self._file.flush()

    def _start_writeback(self) -> None:
        """Starts writing the file's new bytes to disk.

        On Linux ``posix_fadvise(DONTNEED)`` starts the writeback of a range's dirty pages and
        drops only its clean pages (the new bytes are dirty, so they stay cached). It is a hint: a
        file system that refuses it turns the hints off for this file.
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

    def commit(self) -> None:
        """Flushes, syncs and renames the temporary file onto the target, and syncs the directory.

        If that fails (for example the disk is full), the temporary file is deleted and the error
        re-raised.
        """
        try:
            self._file.flush()
            os.fsync(self._file.fileno())
            if _RENAME_OPEN_FILES:  # renamed while open, so it stays locked until renamed
                replace(self.temporary, self.path, name=self.name)
                self._finalizer.detach()
                self._file.close()
            else:
                self._file.close()
                replace(self.temporary, self.path, name=self.name)
                self._finalizer.detach()
            fsync_directory(self.directory)
        except BaseException:
            self._finalizer()
            raise


OutputFile = AtomicFile | ObjectFile
"""A file being written that appears whole under its name on ``commit()``, or not at all."""


def open_output(
    path: PathLike, *, storage_options: StorageOptions | None = None, clean: bool = True
) -> OutputFile:
    """A new file for ``path`` that appears whole on ``commit()`` or not at all: an
    :class:`AtomicFile` for a local path (or ``file://`` URL; ``clean`` as there), an
    :class:`~codegen.runtime.io.urls.ObjectFile` for a URL of another store (with
    ``storage_options``)."""
    if is_url(path):
        return ObjectFile(os.fspath(path), storage_options)
    return AtomicFile(local_path(path), clean=clean)


def write_file(
    path: PathLike, data: bytes | str, *, storage_options: StorageOptions | None = None
) -> None:
    """Replaces (or creates) the file or object at ``path`` with ``data`` (text as UTF-8) in one
    step: :func:`write_atomic` for a local path, one committed
    :class:`~codegen.runtime.io.urls.ObjectFile` for a URL."""
    if not is_url(path):
        write_atomic(local_path(path), data)
        return
    with ObjectFile(os.fspath(path), storage_options) as file:
        file.write(data.encode("utf-8") if isinstance(data, str) else data)


class _Sink(Protocol):
    """Where a :class:`TFRecordWriter` puts its bytes: an :class:`AtomicFile` or a caller's file."""

    def write(self, data: bytes, /) -> object: ...

    def flush(self) -> None: ...


class TFRecordWriter:
    """Writes records to a TFRecord file, framed and compressed exactly as TensorFlow reads them.

    ``target`` is a path, a URL (written with ``storage_options``) or a binary file object.

    For a path or URL the writer is crash-safe: records go to an :class:`AtomicFile` (or an
    :class:`~codegen.runtime.io.urls.ObjectFile`, see :func:`open_output`), which a clean
    :meth:`close` commits onto ``target`` (replacing an existing file). If a ``with`` block exits
    with an exception, or the writer is garbage collected without being closed, the temporary
    file is deleted (the upload aborted) and nothing appears under ``target``.

    :meth:`write` appends one record, :meth:`write_many` any number (a list or tuple is framed in
    one call per chunk); either way records are framed in batches, by
    :data:`~codegen.runtime.io.framing.FRAMES`.

    For a file object, framed records are written to it in chunks (:meth:`flush` pushes what is
    pending); :meth:`close` finishes the compression stream and flushes the object but never
    closes it. That also happens when a ``with`` block exits with an exception, so the object
    always ends with a complete stream of the records written.

    ``compression`` is ``"auto"`` (the default: by the name's suffix, ``.gz`` gzip, ``.zlib`` or
    ``.zz`` zlib, otherwise and for a file object uncompressed), ``None``, ``"gzip"`` or ``"zlib"``;
    one the name's suffix contradicts (``None`` for ``x.tfrecord.gz``) raises
    :class:`~codegen.errors.TfrGenError` (see
    :func:`~codegen.runtime.io.compression.resolve_compression`). A gzip file is one gzip member
    per chunk of about 256 KiB of framed records, each carrying its size, so that readers inflate
    several at once (:mod:`~codegen.runtime.io.members`); every gzip reader reads it whole.
    """

    def __init__(
        self,
        target: PathLike | BinaryIO,
        *,
        compression: CompressionArg = "auto",
        storage_options: StorageOptions | None = None,
    ) -> None:
        self._atomic: OutputFile | None
        self._file: _Sink
        if isinstance(target, str | os.PathLike):
            self.path: str = os.fspath(target)
            self.compression: Compression = resolve_compression(target, compression)
            self._atomic = self._file = open_output(self.path, storage_options=storage_options)
        else:
            self.path = stream_name(target)
            self.compression = resolve_compression(None, compression)
            self._atomic = None
            self._file = target
        self._compressor = None if self.compression != "zlib" else compressor(self.compression)
        self._members = 0  # gzip members written
        self._chunk = _MEMBER_CHUNK if self.compression == "gzip" else _WRITE_CHUNK
        self._batch: list[bytes] = []  # records accepted, not framed yet (they follow the parts)
        self._parts: list[bytes] = []  # framed records not yet written
        self._pending = 0  # framed size of the batch and the parts
        self._count = 0
        self._closed = False

    @property
    def records_written(self) -> int:
        """How many records :meth:`write` and :meth:`write_many` have accepted."""
        return self._count

    def write(self, data: bytes) -> None:
        """Appends one record."""
        if self._closed:
            raise TfrGenError(f"{self.path}: cannot write to a closed TFRecordWriter")
        if not isinstance(data, bytes):
            raise framing.not_bytes(data)
        self._batch.append(data)
        self._count += 1
        self._pending += len(data) + 16
        if self._pending >= self._chunk:
            self._drain()

    def write_many(self, records: Iterable[bytes]) -> None:
        """Appends every record of ``records``, in order: the same bytes as :meth:`write` on each.

        A list or tuple is framed in one call per chunk (about 1 MiB, 256 KiB for gzip); from any other iterable
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
                raise framing.not_bytes(data)
            batch.append(data)
            self._count += 1
            self._pending += len(data) + 16
            if self._pending >= self._chunk:
                self._drain()

    def _frame(self, records: Sequence[bytes]) -> None:
        """Frames a list or tuple of records after those pending, writing each full chunk."""
        if self._batch:
            self._frame_batch()
        frame = framing.FRAMES.frame_records
        start, count = 0, len(records)
        while start < count:
            framed, stop = frame(records, start, self._chunk - self._pending)
            self._parts.append(framed)
            self._count += stop - start
            self._pending += len(framed)
            if self._pending >= self._chunk:
                self._drain()
            start = stop

    def _frame_batch(self) -> None:
        """Frames the records collected by :meth:`write`, after the framed parts."""
        framed, _ = framing.FRAMES.frame_records(self._batch, 0, sys.maxsize)
        self._parts.append(framed)
        self._batch.clear()

    def flush(self) -> None:
        """Hands every record written so far to the file and flushes it.

        A zlib stream gets a sync point and a gzip stream ends its member, so everything written
        can be decompressed. For a
        path this reaches the temporary file only; the target appears on :meth:`close`.
        """
        if self._closed:
            raise TfrGenError(f"{self.path}: cannot flush a closed TFRecordWriter")
        self._drain()
        if self._compressor is not None:
            self._file.write(self._compressor.flush(zlib.Z_SYNC_FLUSH))
        self._file.flush()

    def close(self) -> None:
        """Finishes the file: for a path, commits it onto the target (see :class:`AtomicFile`).

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
            elif self.compression == "gzip" and not self._members:
                self._file.write(gzip_member(b""))  # an empty gzip stream: no records
            if self._atomic is not None:
                self._atomic.commit()
            else:
                self._file.flush()
        except BaseException:
            if self._atomic is not None:
                self._atomic.discard()
            raise

    def _drain(self) -> None:
        """Writes the collected records to the file, framed (as one gzip member, or through the
        zlib compressor, if compressed)."""
        if self._batch:
            self._frame_batch()
        if not self._parts:
            return
        blob = b"".join(self._parts)
        self._parts.clear()
        self._pending = 0
        if self._compressor is not None:
            blob = self._compressor.compress(blob)
        elif self.compression == "gzip":
            blob = gzip_member(blob)
            self._members += 1
        if blob:
            self._file.write(blob)

    def _abort(self) -> None:
        """Deletes the unfinished temporary file; nothing appears under the target path."""
        self._closed = True
        self._batch.clear()
        self._parts.clear()
        if self._atomic is not None:
            self._atomic.discard()

    def __enter__(self) -> TFRecordWriter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is not None and self._atomic is not None:
            self._abort()
        else:
            self.close()


def write_tfrecord(
    path: PathLike,
    records: Iterable[bytes],
    *,
    compression: CompressionArg = "auto",
    storage_options: StorageOptions | None = None,
) -> int:
    """Writes ``records`` to ``path`` (a path or a URL written with ``storage_options``)
    crash-safely (see :class:`TFRecordWriter`); returns the count.

    If iterating ``records`` raises, no file appears under ``path``.
    """
    with TFRecordWriter(path, compression=compression, storage_options=storage_options) as writer:
        writer.write_many(records)
    return writer.records_written
