"""Where the I/O layer meets the file system for reading: the one function that opens a file's
bytes (:func:`open_input`), and how files are named in arguments and errors.

A path is a local path, a ``file://`` URL (read as the local path it names) or a URL of any fsspec
store (see :mod:`codegen.runtime.io.urls`). Files are written through
:class:`~codegen.runtime.io.writer.AtomicFile` (local) or :class:`~codegen.runtime.io.urls.ObjectFile`.
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, BinaryIO, Protocol

import codegen.runtime.accel as accel
from codegen.runtime.io.urls import StorageOptions, filesystem, is_url, local_path, open_url

if TYPE_CHECKING:
    from typing_extensions import Buffer

__all__ = [
    "FileStat",
    "RANDOM_BLOCK",
    "SEQUENTIAL_BLOCK",
    "PathLike",
    "Readable",
    "Replay",
    "binary_stream",
    "file_size",
    "is_directory",
    "new_buffer",
    "open_input",
    "read_head",
    "stat_file",
    "stream_name",
]

PathLike = str | os.PathLike[str]
"""A file path argument: a local path or a URL."""

SEQUENTIAL_BLOCK = 1 << 23
"""The bytes read ahead per request to a store when a file is read through (8 MiB)."""
RANDOM_BLOCK = 1 << 12
"""The bytes read ahead per request to a store for reads at random positions (4 KiB)."""


def open_input(
    path: PathLike, *, buffered: bool = False, storage_options: StorageOptions | None = None
) -> BinaryIO:
    """The file at ``path``, opened to read its bytes (``OSError`` when it cannot be).

    A local path (or ``file://`` URL) is opened with ``open``: unbuffered by default, for readers
    that fill large buffers of their own with ``readinto``; ``buffered`` for small reads at random
    positions. A URL of another store is opened by fsspec with ``storage_options``
    (:func:`~codegen.runtime.io.urls.open_url`); the file object it returns is seekable and has
    ``readinto``. Each request to the store asks for :data:`SEQUENTIAL_BLOCK` bytes ahead of what
    is read (large sequential reads: few round trips), or, ``buffered``, for
    :data:`RANDOM_BLOCK` bytes (random access: a record and its neighbours' headers, not the file).
    """
    if is_url(path):
        block = RANDOM_BLOCK if buffered else SEQUENTIAL_BLOCK
        return open_url(os.fspath(path), storage_options, block_size=block, cache_type="readahead")
    return open(local_path(path), "rb", buffering=-1 if buffered else 0)


def file_size(path: PathLike, *, storage_options: StorageOptions | None = None) -> int:
    """The size in bytes of the file at ``path`` (a path or URL; ``OSError`` when it cannot be
    found)."""
    if is_url(path):
        fs, name = filesystem(os.fspath(path), storage_options)
        return int(fs.size(name))
    return os.path.getsize(local_path(path))


def is_directory(path: PathLike, *, storage_options: StorageOptions | None = None) -> bool:
    """Whether ``path`` (a path or URL) names a directory (on an object store: a prefix that
    objects' keys start with)."""
    if is_url(path):
        fs, name = filesystem(os.fspath(path), storage_options)
        return bool(fs.isdir(name))
    return os.path.isdir(local_path(path))


@dataclass(frozen=True, slots=True)
class FileStat:
    """What identifies a version of a file: its size and modification time (as ``os.stat_result``
    names them)."""

    st_size: int
    st_mtime_ns: int


def stat_file(path: PathLike, *, storage_options: StorageOptions | None = None) -> FileStat:
    """The size and modification time of the file at ``path`` (a path or URL; ``OSError`` when it
    cannot be found). A store that keeps no modification time gives 0."""
    if not is_url(path):
        stat = os.stat(local_path(path))
        return FileStat(stat.st_size, stat.st_mtime_ns)
    fs, name = filesystem(os.fspath(path), storage_options)
    size = int(fs.size(name))
    try:
        modified = fs.modified(name)
    except (NotImplementedError, KeyError, AttributeError):
        return FileStat(size, 0)
    return FileStat(size, int(modified.timestamp() * 1e9))


def stream_name(stream: BinaryIO) -> str:
    """The name errors use for a caller's file object: its ``name`` if a path, else ``<stream>``."""
    name = getattr(stream, "name", None)
    return name if isinstance(name, str) else "<stream>"


def binary_stream(source: object, who: str, *, seek_for: str | None = None) -> BinaryIO:
    """``source``, a caller's file object, checked to be one that ``who`` can read bytes from:
    ``TypeError`` for a text-mode file (naming it and asking for ``"rb"``), for an object that is
    not a file, and, with ``seek_for`` (what needs it to seek), for a file that cannot seek."""
    if isinstance(source, io.TextIOBase):
        name = stream_name(source)  # type: ignore[arg-type]
        raise TypeError(
            f"{who}: {name} is a text-mode file; open it in binary mode (open(path, 'rb'),"
            " fsspec.open(url, 'rb'))"
        )
    if not callable(getattr(source, "read", None)):
        raise TypeError(
            f"{who} expects a path, a URL or a binary file object, got {type(source).__name__}"
        )
    stream: BinaryIO = source  # type: ignore[assignment]
    if seek_for and not (callable(getattr(stream, "seekable", None)) and stream.seekable()):
        raise TypeError(
            f"{who}: {stream_name(stream)} cannot seek; {seek_for} needs a seekable binary file"
            " object (a local file, io.BytesIO, a file opened by fsspec)"
        )
    return stream


def new_buffer(size: int) -> Buffer:
    """A writable buffer of ``size`` bytes for a file's bytes (a reader's, a gzip stream's): from
    the accelerator's pool of large buffers when it is built (memory already paged in and
    page-aligned, given back when the last view of it goes), else a ``bytearray``."""
    return accel.speedups.pooled_block(size) if accel.speedups is not None else bytearray(size)


def read_head(file: BinaryIO | Readable, size: int) -> bytes:
    """The next ``size`` bytes of ``file`` (fewer only at its end), for a look at how it starts."""
    head = b""
    while len(head) < size:
        more = file.read(size - len(head))
        if not more:
            break
        head += more
    return head


class Readable(Protocol):
    """A source of bytes read in order."""

    def read(self, size: int, /) -> bytes:
        """Up to ``size`` more bytes, ``b""`` at the end."""
        ...


class Replay:
    """A file's bytes again from ``head`` on: ``head`` (bytes already read from ``file``), then
    the rest of ``file``; for readers that looked at a stream's first bytes before reading it, or
    that read ahead of where they go on from."""

    def __init__(self, head: bytes, file: BinaryIO | Readable) -> None:
        self._head = head
        self._file = file
        self._readinto = getattr(file, "readinto", None)

    def read(self, size: int) -> bytes:
        """Up to ``size`` more bytes (``b""`` at the end)."""
        if self._head:
            data, self._head = self._head[:size], self._head[size:]
            return data
        return self._file.read(size)

    def readinto(self, buffer: memoryview) -> int:
        """Fills the start of ``buffer`` with more bytes and returns how many (0 at the end)."""
        if self._head or self._readinto is None:
            data = self.read(len(buffer))
            buffer[: len(data)] = data
            return len(data)
        count: int | None = self._readinto(buffer)
        return 0 if count is None else count
