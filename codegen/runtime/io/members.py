"""Gzip streams made of members that carry their size, so that a reader inflates several at once.

A gzip file is any number of members (RFC 1952), and every gzip reader (TensorFlow's, ``gzip``,
``zcat``) reads them all. :class:`~codegen.runtime.io.writer.TFRecordWriter` writes each chunk of
about 256 KiB of framed records as one member (:func:`gzip_member`) whose header has an extra field
(``FEXTRA``) with the subfield ``TR`` holding the member's size in bytes, as BGZF does for
genomics data. Knowing where the next member starts, :class:`MemberInflater` reads members ahead
and inflates them in worker threads (the accelerated deflate releases the GIL), so inflating runs
on several cores while the reader frames and checks records. When the reader needs members whose
task no worker has started yet (the workers are behind, most when another core is busy), it
inflates them itself instead of waiting.

A sized member is inflated in one call of libdeflate (the ``deflate`` package, a default
dependency) when it is installed: it inflates a whole buffer about 1.3-1.8 times as fast as ISA-L or
zlib inflate a stream, most on data that is mostly literals (floats); else by ISA-L's gzip reader.
A member inflates "whole" when its bytes make exactly the size its trailer declares, with the
CRC-32 the trailer holds.

A member without that subfield (any other writer's, TensorFlow's included), one cut short or one
that does not inflate whole and alone makes the rest of the stream go through the sequential
:class:`~codegen.runtime.io.compression.InflatingSource` from that member's start: what a reader
yields and the errors it raises are those of reading the stream sequentially. A sequential stream
(that rest, or a zlib stream) is inflated by :class:`InflatingAhead` in one worker thread a few
pieces ahead of the reader, which frames and checks records meanwhile.
"""

from __future__ import annotations

import os
import queue
import struct
import threading
import zlib
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor, wait
from types import ModuleType
from typing import Literal, NamedTuple

import codegen.runtime.accel as accel
from codegen.runtime.io.compression import InflatingSource, current_deflate, use_deflate
from codegen.runtime.io.files import Replay, new_buffer


def _load_libdeflate() -> ModuleType | None:
    try:
        import deflate
    except ImportError:
        return None
    return deflate


_LIBDEFLATE = _load_libdeflate()


def _bind_libdeflate() -> bool:
    """Whether the accelerator inflates members itself, with the ``deflate`` package's libdeflate
    (``codegen/_speedups/inflate.c``): into pooled buffers, one hand-over of the GIL a member."""
    path = getattr(getattr(_LIBDEFLATE, "_deflate", None), "__file__", None)
    return accel.speedups is not None and path is not None and accel.speedups.bind_libdeflate(path)


_BOUND = _bind_libdeflate()

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


def _declared(member: memoryview) -> int:
    """The uncompressed size the trailer of ``member`` (a whole member) declares."""
    return int(_ISIZE.unpack_from(member, len(member) - _ISIZE.size)[0])


def _cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # (not Linux)
        return os.cpu_count() or 1


INFLATE_THREADS = max(1, min(4, _cores()))
"""Worker threads a :class:`MemberInflater` reads and inflates members in: as many as the cores this
process may use, four at most. The reader's thread mostly frames and checks records, which takes
less time than inflating, so it shares a core with them."""
_AHEAD = max(4, 2 * INFLATE_THREADS)  # workers' tasks (or pieces) made ahead of the one read
# A member is read whole, and its bytes inflated into a buffer of the size its trailer declares,
# before anything checks them: a member declared larger than this, or whose trailer declares more
# than deflate can make of its size, goes to the sequential source (memory bounded by data read).
_MAX_MEMBER = 1 << 23
_MAX_INFLATED = 1 << 23
_MAX_RATIO = 1032  # deflate makes at most about 1032 bytes of each byte it is given
_THREAD_NAME = "tfr-gen-inflate"  # a sequential stream's worker thread
_MEMBER_THREAD_NAME = "tfr-gen-inflate-members"  # the threads every MemberInflater shares
_KEPT = 4 * _AHEAD  # buffers kept for later members, of this reader or the next
_KEPT_BYTES = 32 << 20
_kept: list[bytearray] = []  # oldest first
_kept_lock = threading.Lock()


_TASK_START = 1 << 18  # bytes a worker's first task inflates (at least one member)
_TASK_BYTES = 1 << 21  # and its tasks once the stream is under way
_POOLED = 1 << 18  # the accelerator's pool keeps buffers of this size or more for reuse
_CHUNK = 1 << 20
"""Bytes of a gzip file read at a time (its members are taken from them)."""


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


_workers_lock = threading.Lock()
_workers: tuple[int, ThreadPoolExecutor] | None = None  # (the process id, its threads)


def member_workers() -> ThreadPoolExecutor:
    """The :data:`INFLATE_THREADS` threads that read and inflate the members of every
    :class:`MemberInflater` of this process: started by the first reader that needs them and kept
    for the next (a Dataset opens a reader per shard), so no reader waits for threads to start. A
    forked child (a DataLoader worker) makes its own: the parent's threads are not in it."""
    global _workers
    with _workers_lock:
        if _workers is None or _workers[0] != os.getpid():
            _workers = (os.getpid(), ThreadPoolExecutor(INFLATE_THREADS, _MEMBER_THREAD_NAME))
        return _workers[1]


def _forget_workers() -> None:
    """In a child just forked: the parent's threads and lock state are not the child's."""
    global _workers, _workers_lock
    _workers, _workers_lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_workers)


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


def _inflate_member(
    deflate: ModuleType | None, member: memoryview, out: memoryview | None
) -> memoryview | None:
    """The bytes the gzip member ``member`` (written by :func:`gzip_member`: a header of
    :data:`MEMBER_HEADER_SIZE` bytes) inflates to, or ``None`` unless it inflates whole: to the
    size its trailer declares, with the CRC-32 the trailer holds.

    With ``deflate`` (ISA-L) the bytes go into ``out``, a kept buffer of that size (see
    :func:`_inflate_into`), given back if they do not. Without, the ``deflate`` package's libdeflate
    inflates the member's deflate data in one call, without the GIL, into a new buffer, which the
    reader keeps (:meth:`MemberInflater.take`). The package does not say where the deflate data
    ended: a member with other bytes between its deflate data and its trailer (no writer makes one)
    inflates whole here when its trailer is right, where the accelerator
    (:func:`_inflate_members`) and reading in order find those bytes wrong.
    """
    crc, size = _TRAILER.unpack_from(member, len(member) - _TRAILER.size)
    if deflate is not None:
        assert out is not None
        if _inflate_into(deflate, member, out):
            return out
        _give(out.obj)  # type: ignore[arg-type]
        return None
    assert _LIBDEFLATE is not None
    body = member[MEMBER_HEADER_SIZE : len(member) - _TRAILER.size]
    try:  # (at least one byte: the package makes nothing of a size of 0 without inflating)
        inflated = _LIBDEFLATE.deflate_decompress(body, max(size, 1))
    except (_LIBDEFLATE.DeflateError, ValueError):
        return None
    if len(inflated) != size or _LIBDEFLATE.crc32(inflated) != crc:
        return None
    return memoryview(inflated)


def _inflate_members(
    deflate: ModuleType | None, members: list[memoryview], outs: list[memoryview | None]
) -> list[memoryview | None]:
    """What :func:`_inflate_member` makes of each of ``members`` (``outs``: ISA-L's buffers). With
    libdeflate and the accelerator, one call inflates them all without the GIL, each into a pooled
    block (memory already paged in, back in the pool when the reader lets it go)."""
    if deflate is None and _BOUND and (speedups := accel.speedups) is not None:
        sizes = [_declared(member) for member in members]
        blocks = [memoryview(speedups.pooled_block(max(size, _POOLED)))[:size] for size in sizes]
        whole = speedups.inflate_members(members, MEMBER_HEADER_SIZE, blocks)  # type: ignore[arg-type]
        return [block if ok else None for block, ok in zip(blocks, whole, strict=True)]
    return [
        _inflate_member(deflate, member, out) for member, out in zip(members, outs, strict=True)
    ]


class _Place(NamedTuple):
    """What reading found at the next place of the stream (its number: ``at``)."""

    at: int
    member: memoryview | None = None
    """A sized member, read whole (``None``: none starts here)."""
    out: memoryview | None = None
    """Its bytes (``None``: it does not inflate whole)."""
    rest: bytes | None = None
    """Without a member: the bytes read that start no sized member (``None``: the end of the file,
    or an error)."""
    error: BaseException | None = None
    """Without a member: what reading the file raised."""


class _Raising:
    """A file whose reads raise ``error``: the rest of a stream after a read that failed."""

    def __init__(self, error: BaseException) -> None:
        self._error = error

    def read(self, size: int, /) -> bytes:
        raise self._error


class MemberInflater:
    """The uncompressed bytes of a gzip stream, its sized members read and inflated ahead by the
    process's worker threads (:func:`member_workers`; at most :data:`_AHEAD` tasks of a few members
    ahead).

    A worker reads the next members under a lock (so the members are read in order, and numbered),
    then inflates them; the reader's thread only takes their bytes in order. A stream whose first
    member is its only one (a small file) is read and inflated in the reader's thread: no task is
    handed out. :meth:`close` cancels the stream's tasks and waits for those under way (a reader
    calls it when it ends, early or not): after it no worker touches the file.
    """

    def __init__(self, file: Replay) -> None:
        self._file = file
        # ISA-L's gzip reader, or None: libdeflate (see _inflate_member).
        self._deflate = None if _LIBDEFLATE is not None else current_deflate()
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()  # held while a worker reads the file
        self._chunk = memoryview(b"")  # bytes of the file read and not yet taken
        self._reads = 0  # the index of the next place to read
        self._tasks = 0  # the workers' tasks handed out
        self._done = False  # no more places to read (the end, or no sized member there)
        self._pending: deque[Future[list[_Place]]] = deque()
        self._ready: dict[int, _Place] = {}  # places read and inflated, by index
        self._want = 0  # the index of the place whose bytes come next
        self._after_member = False  # a member has been inflated (the stream is past its start)
        self._out = memoryview(b"")
        self._current: memoryview | None = None  # the bytes being handed out
        self._sequential: InflatingAhead | None = None
        self._ended = False

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

    def take(self) -> memoryview | None:
        """The next bytes of the stream handed over whole, for the caller to keep (no copy): the
        rest of a member that libdeflate inflated; empty at the end of the stream. ``None`` when
        the next bytes are not the caller's to keep (ISA-L's buffers are reused; a stream read in
        order): :meth:`readinto` them."""
        while not self._out:
            if self._sequential is not None:
                return None
            if not self._next():
                return memoryview(b"")
        if self._deflate is not None:
            return None
        out, self._out, self._current = self._out, memoryview(b""), None
        return out

    def close(self) -> None:
        """Stops the workers' tasks of this stream (waiting for members being read or inflated) and
        drops what was read ahead."""
        self._stop()
        self._ready.clear()
        if self._current is not None:  # the bytes handed out last: no longer read
            self._out = memoryview(b"")
            self._let_go()
        if self._sequential is not None:
            self._sequential.close()

    def _next(self) -> bool:
        """Makes the next member's bytes current, or switches to the sequential source; False at
        the end of the stream."""
        if self._ended:
            return False
        if self._current is not None:  # the previous member's bytes are all handed out
            self._let_go()
        place = self._place()
        if place.out is not None:
            self._current = self._out = place.out
            self._after_member = True
            return True
        if place.error is not None:
            self.close()
            raise place.error
        if place.member is None and place.rest is None:
            self._ended = True
            return False
        # From this place on the sequential source reads (and finds what is wrong, if anything):
        # the bytes read ahead, then the rest of the file.
        rest: list[bytes | memoryview] = []
        after: BaseException | None = None
        for later in [place, *(p for p in self._stop() if p.at > place.at)]:
            if later.error is not None:
                after = later.error
                break
            rest.append(later.member if later.member is not None else later.rest or b"")
        self._ready.clear()
        source = Replay(b"".join(rest), self._file if after is None else _Raising(after))
        self._sequential = InflatingAhead(
            InflatingSource(source, "gzip", after_member=self._after_member)
        )
        return True

    def _place(self) -> _Place:
        """The next place of the stream, read and inflated (waiting for it), with more read
        ahead."""
        want = self._want
        self._want += 1
        if want == 0:
            first = self._read_one()
            if first.member is None or not self._peek(1):  # no task for a stream of one place
                self._done = True
            else:  # the workers start on the places after the first while the reader inflates it
                self._pool = member_workers()
                self._read_ahead()
            return first if first.member is None else self._inflated([first])[0]
        while want not in self._ready:
            self._read_ahead()
            if not self._pending:  # every place up to the end was read
                return _Place(want)
            for place in self._result(self._pending.popleft()):
                self._ready[place.at] = place
        return self._ready.pop(want)

    def _read_ahead(self) -> None:
        """Hands the workers places to read and inflate, up to :data:`_AHEAD` ahead."""
        while self._pool is not None and not self._done and len(self._pending) < _AHEAD:
            self._pending.append(self._pool.submit(self._read_and_inflate))

    def _result(self, task: Future[list[_Place]]) -> list[_Place]:
        """The places of ``task``: a task no worker has started yet runs in the reader's thread
        rather than waiting its turn (when the workers are behind, most when they get little of
        another core, the reader inflates instead of waiting for them)."""
        return self._read_and_inflate() if task.cancel() else task.result()

    def _stop(self) -> list[_Place]:
        """Stops the workers' tasks of this stream, waiting for those under way; the places they
        read ahead, in the order of the stream."""
        with self._lock:
            self._done = True  # no task reads more: one that starts now returns nothing
        # (A task cancelled before it started is not waited for: it is done only once a worker
        # takes it off the queue, which could be long after, when the workers are busy.)
        started = [task for task in self._pending if not task.cancel()]
        self._pool = None
        wait(started)
        for future in started:
            self._ready.update((place.at, place) for place in future.result())
        self._pending.clear()
        return [self._ready[i] for i in sorted(self._ready)]

    def _read_and_inflate(self) -> list[_Place]:
        """A worker's task: the next places of the file, read and inflated (none once reading is
        done). A task takes the next member, and those after it that the bytes read already hold
        whole, up to a declared size that grows from :data:`_TASK_START` to :data:`_TASK_BYTES`
        (the first members reach the reader soon; later ones are inflated many at a time, the
        worker waiting for the GIL once for them all)."""
        places: list[_Place] = []
        with self._lock:
            limit, declared = min(_TASK_BYTES, _TASK_START << self._tasks), 0
            self._tasks += 1
            while not self._done and declared < limit and (not places or self._whole_member()):
                try:
                    place = self._read_one()
                except BaseException as exc:  # raised in the reader's thread at its place
                    place = _Place(self._reads - 1, error=exc)
                places.append(place)
                if place.member is None:
                    self._done = True
                else:
                    declared += _declared(place.member)
        return self._inflated(places)

    def _read_one(self) -> _Place:
        """Reads the next place: a sized member, the bytes that start none, or nothing at the end
        of the file (with the lock held, or before the workers start)."""
        index, self._reads = self._reads, self._reads + 1
        header = self._peek(MEMBER_HEADER_SIZE)
        if not header:
            return _Place(index)
        size = member_size(bytes(header))
        if size is not None and len(self._peek(size)) == size:
            (uncompressed,) = _ISIZE.unpack_from(self._chunk, size - _ISIZE.size)
            if uncompressed <= min(_MAX_INFLATED, _MAX_RATIO * size):
                member, self._chunk = self._chunk[:size], self._chunk[size:]
                return _Place(index, member)
        # No sized member starts here (or it is cut short, or declares too much): the rest read.
        rest, self._chunk = bytes(self._chunk), memoryview(b"")
        return _Place(index, rest=rest)

    def _peek(self, count: int) -> memoryview:
        """The next ``count`` bytes of the file (fewer only at its end), not taken: read a chunk
        of at least :data:`_CHUNK` bytes at a time (one read for several members)."""
        if len(self._chunk) < count:
            kept = self._chunk
            buffer = memoryview(new_buffer(max(count, _CHUNK) + len(kept)))
            buffer[: len(kept)] = kept
            got = len(kept) + _read_into(self._file, buffer[len(kept) :])
            self._chunk = buffer[:got]
        return self._chunk[:count]

    def _whole_member(self) -> bool:
        """Whether the bytes read and not yet taken start with a whole sized member."""
        size = member_size(bytes(self._chunk[:MEMBER_HEADER_SIZE]))
        return size is not None and len(self._chunk) >= size

    def _inflated(self, places: list[_Place]) -> list[_Place]:
        """``places`` with the bytes of their members (see :func:`_inflate_members`)."""
        members = [place.member for place in places if place.member is not None]
        if not members:
            return places
        outs = [self._buffer(member) for member in members]
        made = iter(_inflate_members(self._deflate, members, outs))
        return [p if p.member is None else p._replace(out=next(made)) for p in places]

    def _buffer(self, member: memoryview) -> memoryview | None:
        """The kept buffer ISA-L inflates ``member`` into (libdeflate makes its own)."""
        if self._deflate is None:
            return None
        return _take(_declared(member))

    def _let_go(self) -> None:
        """Done with the current member's bytes: ISA-L's buffer is kept for a later member."""
        if self._deflate is not None and self._current is not None:
            _give(self._current.obj)  # type: ignore[arg-type]
        self._current = None


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
    if compression == "gzip" and (
        _LIBDEFLATE is not None or hasattr(current_deflate(), "_GzipReader")
    ):
        return MemberInflater(file)  # (an ISA-L without the gzip reader it uses: in order)
    return InflatingAhead(InflatingSource(file, compression))
