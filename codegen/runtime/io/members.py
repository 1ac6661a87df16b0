"""Gzip streams made of members that carry their size, so that a reader inflates several at once.

A gzip file is any number of members (RFC 1952), and every gzip reader (TensorFlow's, ``gzip``,
``zcat``) reads them all. :class:`~codegen.runtime.io.writer.TFRecordWriter` writes each chunk of
about 256 KiB of framed records as one member (:func:`gzip_member`) whose header has an extra field
(``FEXTRA``) with the subfield ``TR`` holding the member's size in bytes, as BGZF does for
genomics data. Knowing where the next member starts, :class:`MemberInflater` reads members ahead
and inflates them in worker threads (the accelerated deflate releases the GIL), so inflating runs
on several cores while the reader frames and checks records.

A member without that subfield (any other writer's, TensorFlow's included), one cut short or one
that does not inflate whole and alone makes the rest of the stream go through the sequential
:class:`~codegen.runtime.io.compression.InflatingSource` from that member's start: what a reader
yields and the errors it raises are those of reading the stream sequentially. A sequential stream
(that rest, or a zlib stream) is inflated by :class:`InflatingAhead` in one worker thread a few
pieces ahead of the reader, which frames and checks records meanwhile.
"""

from __future__ import annotations

import queue
import struct
import threading
import zlib
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from types import ModuleType
from typing import Literal

from codegen.runtime.io.compression import InflatingSource, current_deflate, use_deflate
from codegen.runtime.io.files import Replay, read_head

__all__ = [
    "INFLATE_THREADS",
    "InflatingAhead",
    "MEMBER_HEADER_SIZE",
    "MemberInflater",
    "gzip_member",
    "inflating_source",
    "member_size",
]

# ID1 ID2 CM FLG(FEXTRA) MTIME XFL OS(unknown) XLEN, then the subfield: SI1 SI2 LEN and the size.
_PREFIX = b"\x1f\x8b\x08\x04" + bytes(4) + b"\x00\xff" + struct.pack("<H", 12) + b"TR"
_PREFIX += struct.pack("<H", 8)
_SIZE = struct.Struct("<Q")
_TRAILER = struct.Struct("<II")
_ISIZE = struct.Struct("<I")  # the trailer's uncompressed size (modulo 2**32)
MEMBER_HEADER_SIZE = len(_PREFIX) + _SIZE.size
"""The size of the header of a member written by :func:`gzip_member` (24 bytes)."""

INFLATE_THREADS = 2
"""Worker threads a :class:`MemberInflater` inflates members in."""
_AHEAD = 2 * INFLATE_THREADS  # members (or sequential pieces) made ahead of the one being read
# A member is read whole, and its bytes inflated into a buffer of the size its trailer declares,
# before anything checks them: a member declared larger than this, or whose trailer declares more
# than deflate can make of its size, goes to the sequential source (memory bounded by data read).
_MAX_MEMBER = 1 << 23
_MAX_INFLATED = 1 << 23
_MAX_RATIO = 1032  # deflate makes at most about 1032 bytes of each byte it is given
_THREAD_NAME = "tfr-gen-inflate"
_KEPT = 4 * _AHEAD  # buffers kept for later members, of this reader or the next
_KEPT_BYTES = 32 << 20
_kept: list[bytearray] = []  # oldest first
_kept_lock = threading.Lock()


def _take(size: int) -> memoryview:
    """``size`` bytes of the smallest kept buffer that holds them (or of a new one, with room for
    a quarter more). Buffers are reused from member to member and from reader to reader: fresh memory
    would be paged in again for every member."""
    with _kept_lock:
        fits = [i for i, buffer in enumerate(_kept) if len(buffer) >= size]
        buffer = _kept.pop(min(fits, key=lambda i: len(_kept[i]))) if fits else None
    if buffer is None:
        buffer = bytearray(size + size // 4)
    return memoryview(buffer)[:size]


def _give(buffer: bytearray) -> None:
    """Keeps ``buffer`` (no longer used) for a later member, within :data:`_KEPT` buffers and
    :data:`_KEPT_BYTES` bytes (the oldest are let go)."""
    with _kept_lock:
        _kept.append(buffer)
        while len(_kept) > _KEPT or sum(map(len, _kept)) > _KEPT_BYTES:
            del _kept[0]


def gzip_member(data: bytes) -> bytes:
    """``data`` as one gzip member whose header carries its size (deflated by the implementation
    of :func:`~codegen.runtime.io.compression.use_deflate`, at its default level)."""
    deflate = current_deflate()
    body = deflate.compress(data, deflate.Z_DEFAULT_COMPRESSION, -15)
    size = MEMBER_HEADER_SIZE + len(body) + _TRAILER.size
    trailer = _TRAILER.pack(deflate.crc32(data), len(data) & 0xFFFFFFFF)
    return b"".join((_PREFIX, _SIZE.pack(size), body, trailer))


def member_size(header: bytes) -> int | None:
    """The size a member header written by :func:`gzip_member` declares, or ``None`` if
    ``header`` (its first :data:`MEMBER_HEADER_SIZE` bytes) is not one."""
    if len(header) < MEMBER_HEADER_SIZE or not header.startswith(_PREFIX):
        return None
    (size,) = _SIZE.unpack_from(header, len(_PREFIX))
    return int(size) if MEMBER_HEADER_SIZE < size <= _MAX_MEMBER else None


def _read_into(file: Replay, view: memoryview) -> int:
    """Fills ``view`` with the next bytes of ``file`` and returns how many (fewer only at its
    end)."""
    got = 0
    while got < len(view):
        count = file.readinto(view[got:])
        if not count:
            break
        got += count
    return got


def _inflate_into(deflate: ModuleType, member: memoryview, out: memoryview) -> bool:
    """Inflates the gzip member ``member`` into ``out``, which its trailer says it fills; whether
    it did so exactly (else it is corrupt, cut short, or not one member: nothing after its end).

    ISA-L's gzip reader (``isal_zlib._GzipReader``, what ``isal.igzip`` reads with) inflates
    straight into ``out`` without the GIL: the buffers are reused from member to member, where
    memory fresh from each worker thread's allocator would be paged in again for every member.
    """
    try:
        reader = deflate._GzipReader(member)
        got = 0
        while got < len(out):
            count = reader.readinto(out[got:])
            if not count:
                return False
            got += count
        return not reader.readinto(bytearray(1))
    except (EOFError, OSError, zlib.error, deflate.error):
        return False


class MemberInflater:
    """The uncompressed bytes of a gzip stream, its sized members inflated ahead in
    :data:`INFLATE_THREADS` worker threads (at most a few members in memory at once).

    :meth:`close` stops the workers (a reader calls it when it ends, early or not); the workers
    start with the first read.
    """

    def __init__(self, file: Replay) -> None:
        self._file = file
        self._deflate = current_deflate()
        self._pool: ThreadPoolExecutor | None = None
        # Each member read ahead: whether it inflated whole, the member, and its uncompressed bytes.
        # (None: the last and only member, inflated in the reader's thread when its turn comes.)
        self._pending: deque[tuple[Future[bool] | None, memoryview, memoryview]] = deque()
        self._rest: bytes | None = None  # bytes read that start no sized member
        self._end = False  # the file is read to its end
        self._after_member = False  # a member has been inflated (the stream is past its start)
        self._out = memoryview(b"")
        self._current: bytearray | None = None  # the buffer of the bytes being handed out
        self._sequential: InflatingAhead | None = None

    def readinto(self, buffer: memoryview) -> int:
        """Fills the start of ``buffer`` with more bytes (at least one until the stream ends) and
        returns how many; 0 at the end. Errors are those of
        :class:`~codegen.runtime.io.compression.InflatingSource`."""
        while not self._out:
            if self._sequential is not None:
                return self._sequential.readinto(buffer)
            if not self._next():
                return 0
        count = min(len(buffer), len(self._out))
        buffer[:count] = self._out[:count]
        self._out = self._out[count:]
        return count

    def close(self) -> None:
        """Stops the worker threads (waiting for a member being inflated) and drops what was read
        ahead."""
        for future, *_ in self._pending:
            if future is not None:
                future.cancel()
        self._pending.clear()
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        if self._current is not None:  # the bytes handed out last: no longer read
            self._out = memoryview(b"")
            _give(self._current)
            self._current = None
        if self._sequential is not None:
            self._sequential.close()

    def _next(self) -> bool:
        """Makes the next member's bytes current, or switches to the sequential source; False at
        the end of the stream."""
        self._read_ahead()
        if not self._pending:
            if self._rest is None:
                return False
            self._fall_back(self._rest)
            return True
        if self._current is not None:  # the previous member's bytes are all handed out
            _give(self._current)
            self._current = None
        future, member, out = self._pending.popleft()
        whole = _inflate_into(self._deflate, member, out) if future is None else future.result()
        if not whole:  # from this member on, the sequential source finds what is wrong
            rest: list[bytes | memoryview] = [member]
            rest += (later for _, later, _ in self._pending)
            rest.append(self._rest or b"")
            self.close()  # the workers are done with what follows
            self._fall_back(b"".join(rest))
            return True
        _give(member.obj)  # type: ignore[arg-type]  # its worker is done with it
        self._current = out.obj  # type: ignore[assignment]
        self._after_member = True
        self._out = out
        return True

    def _read_ahead(self) -> None:
        """Reads sized members and hands them to the workers, up to a few ahead (a stream of one
        member, such as a small file, is inflated in the reader's thread: no thread to start)."""
        while self._rest is None and not self._end and len(self._pending) < _AHEAD:
            header = read_head(self._file, MEMBER_HEADER_SIZE)
            if not header:
                self._end = True
                break
            size = member_size(header)
            if size is None:
                self._rest = header
                break
            member = _take(size)
            member[:MEMBER_HEADER_SIZE] = header
            got = MEMBER_HEADER_SIZE + _read_into(self._file, member[MEMBER_HEADER_SIZE:])
            if got < size:
                self._rest = bytes(member[:got])
                break
            (uncompressed,) = _ISIZE.unpack_from(member, size - _ISIZE.size)
            if uncompressed > min(_MAX_INFLATED, _MAX_RATIO * size):
                self._rest = bytes(member)
                break
            self._pending.append((None, member, _take(uncompressed)))
        if len(self._pending) == 1 and self._pool is None and (self._end or self._rest is not None):
            return
        for i, (future, member, out) in enumerate(self._pending):
            if future is None:
                if self._pool is None:
                    self._pool = ThreadPoolExecutor(INFLATE_THREADS, _THREAD_NAME)
                self._pending[i] = (
                    self._pool.submit(_inflate_into, self._deflate, member, out),
                    member,
                    out,
                )

    def _fall_back(self, rest: bytes) -> None:
        """Reads the rest of the stream, starting with ``rest``, sequentially."""
        source = Replay(rest, self._file)
        self._sequential = InflatingAhead(
            InflatingSource(source, "gzip", after_member=self._after_member)
        )


class InflatingAhead:
    """The pieces of an :class:`~codegen.runtime.io.compression.InflatingSource`, made in a worker
    thread up to :data:`_AHEAD` pieces (of at most 1 MiB) ahead of the reader.

    The reader gets the same bytes and the same errors, at the same places, as from the source
    itself. The first two pieces are made in the reader's thread, so a small stream starts no
    thread; :meth:`close` stops the worker (a reader calls it when it ends, early or not).
    """

    def __init__(self, source: InflatingSource) -> None:
        self._source = source
        self._pieces: queue.Queue[bytes | BaseException | None] = queue.Queue(_AHEAD)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._out = memoryview(b"")
        self._end = False
        self._inline = 2  # pieces made in the reader's thread before the worker starts

    def readinto(self, buffer: memoryview) -> int:
        """Fills the start of ``buffer`` with more bytes (at least one until the stream ends) and
        returns how many; 0 at the end. Errors are the source's."""
        while not self._out:
            if self._end:
                return 0
            if self._inline:  # a small stream ends within these: no thread to start
                self._inline -= 1
                made = self._source.inflate()
                if made is None:
                    self._end = True
                    return 0
                self._out = memoryview(made)
                continue
            if self._thread is None:
                self._thread = threading.Thread(target=self._inflate, name=_THREAD_NAME)
                self._thread.start()
            piece = self._pieces.get()
            if piece is None or isinstance(piece, BaseException):
                self._end = True
                if piece is not None:
                    raise piece
                return 0
            self._out = memoryview(piece)
        count = min(len(buffer), len(self._out))
        buffer[:count] = self._out[:count]
        self._out = self._out[count:]
        return count

    def close(self) -> None:
        """Stops the worker thread (waiting for the piece being made) and drops what it made."""
        self._stop.set()
        if self._thread is not None:
            while self._thread.is_alive():
                try:  # make room for the piece the worker may be handing over
                    self._pieces.get(timeout=0.01)
                except queue.Empty:
                    pass
            self._thread.join()
            self._thread = None

    def _inflate(self) -> None:
        """The worker: the source's pieces into the queue, then ``None`` (the end) or the error."""
        try:
            while not self._stop.is_set():
                piece = self._source.inflate()
                if piece is None:
                    break
                if piece:
                    self._pieces.put(piece)
        except BaseException as exc:  # handed to the reader, which raises it
            self._pieces.put(exc)
            return
        self._pieces.put(None)


def inflating_source(
    file: Replay, compression: Literal["gzip", "zlib"]
) -> InflatingSource | MemberInflater | InflatingAhead:
    """The source of the uncompressed bytes of ``file``. With the accelerated deflate: a
    :class:`MemberInflater` for gzip, an :class:`InflatingAhead` for zlib. With the standard
    library's zlib, the plain sequential
    :class:`~codegen.runtime.io.compression.InflatingSource`."""
    if use_deflate() != "isal":
        return InflatingSource(file, compression)
    if compression == "gzip" and hasattr(current_deflate(), "_GzipReader"):
        return MemberInflater(file)  # (an ISA-L without the gzip reader it uses: in order)
    return InflatingAhead(InflatingSource(file, compression))
