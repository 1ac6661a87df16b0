"""Batches from PyTorch DataLoader worker processes to the main process through reused shared memory.

A DataLoader worker hands what it yields to the main process through a queue, and a tensor in it
travels through fresh shared memory every time: a new segment per tensor, whose pages fault in on
both sides, and a file descriptor passed per tensor; for a batch of columns that costs more than
reading and decoding it. So in a worker ``to_torch()`` yields a :class:`SharedBatch` instead (see
:func:`share`), and the main process receives the same dict of tensors it would have built itself:

* **Decoded in place**: with the C accelerator, a worker decodes its batches' large columns straight
  into shared memory: its pooled blocks (see ``codegen/_speedups/blocks.c``) are anonymous files
  (``memfd_create``: nothing is named in ``/dev/shm``) mapped after a header page, so such a column
  is not copied at all; the batch says which block it is in and where. The block's memory is not
  reused (for a later batch, or a file's bytes) until the main process has let the batch go.
* **Segments**: each worker owns segments of shared memory, anonymous files too, made when needed
  and reused. A segment holds the rest of one batch (small columns, and any array not in a shared
  block): its arrays, copied into it once, 64-byte aligned after a header. In a segment or a block,
  the header's first byte says whether the main process may still hold the batch, and its second
  whether it has mapped the memory.
* **Sending**: a ``SharedBatch`` pickles (the DataLoader's queue) into the numbers and sizes of its
  segment and blocks, where each array is in them (offset, dtype, shape), the batch's other values
  (strings) as they are, and, until the main process has mapped a segment or block, its file
  descriptor (passed over a Unix socket by ``multiprocessing``, as torch passes a tensor's).
* **Receiving**: unpickling in the main process maps each segment once and makes every array a
  tensor over the mapped memory (no copy). When the last of a batch's tensors (or of views of
  them) is freed, the first byte of its segment and of each of its blocks is cleared, and the worker
  may write a later batch there.
* **Never overwritten**: a worker writes only into a segment whose batch the main process has
  released; when every segment is held it makes a new one, so keeping any number of batches is
  safe (they cost memory as they would with fresh shared memory). It keeps at most :data:`KEEP`
  segments when they are free (the DataLoader's default ``prefetch_factor`` of 2, the batch in use
  and the one being made), and replaces a free segment too small for the next batch with a larger one.
* **Cleanup**: the memory has no name; it is freed once the worker and the main process have both
  closed and unmapped it, however the worker ends (a crash included). The main process forgets the
  segments and blocks of a worker that has ended when it next maps new memory, and those the worker
  closed when a later batch from that worker says so; a batch still held keeps its memory mapped.

Where ``memfd_create`` or passing descriptors is not available (not Linux), workers yield tensors
as before (:data:`AVAILABLE`).
"""

from __future__ import annotations

import math
import mmap
import os
import secrets
import threading
import weakref
from multiprocessing import reduction
from typing import Any

import numpy as np
import torch

import codegen.runtime.accel as accel
from codegen.errors import TfrGenError
from codegen.runtime.data.tensors import leaf_tensors

__all__ = ["AVAILABLE", "KEEP", "SharedBatch", "decode_into_shared_memory", "share"]

AVAILABLE = hasattr(os, "memfd_create") and reduction.HAVE_SEND_HANDLE
"""Whether batches from workers can travel through reused shared memory on this system."""

KEEP = 4
"""Segments a worker keeps while they are free (more are made while the main process holds them)."""

_HELD = 0
"""Header byte: 1 while the main process may hold the segment's batch (cleared when it frees it)."""
_MAPPED = 1
"""Header byte: 1 once the main process has mapped the segment (no descriptor is sent after)."""
_HEADER = 64
_ALIGN = 64
_SLACK = 1 << 20
"""Least room a new segment has beyond its first batch (batches of ragged columns vary in size)."""

_ARRAY, _SAME, _LIST, _VALUE = range(4)
"""Layout entries: an array; a list of arrays of one shape, or of several shapes (the arrays of
each in the segment, or in a shared block: its number), or any other value."""


def _aligned(offset: int) -> int:
    return -(-offset // _ALIGN) * _ALIGN


def _shareable(value: Any) -> bool:
    """Whether ``value`` is an array of numbers (or bools) in this machine's byte order."""
    return isinstance(value, np.ndarray) and value.dtype.kind in "biufc" and value.dtype.isnative


def _arrays(value: Any) -> bool:
    """Whether ``value`` is a non-empty list of arrays of numbers (or bools) of one dtype."""
    if not isinstance(value, list) or not value or not _shareable(value[0]):
        return False
    dtype = value[0].dtype
    return all(type(a) is np.ndarray and a.dtype == dtype for a in value)


class _Segment:
    """A worker's segment: an anonymous file of ``size`` bytes, mapped."""

    __slots__ = ("fd", "memory", "number", "size")

    def __init__(self, number: int, size: int) -> None:
        self.number = number
        self.size = size
        self.fd = os.memfd_create("tfr-gen-batch", os.MFD_CLOEXEC)
        try:
            os.ftruncate(self.fd, size)
            self.memory = mmap.mmap(self.fd, size)
        except BaseException:
            os.close(self.fd)
            raise

    def free(self) -> bool:
        return self.memory[_HELD] == 0

    def close(self) -> None:
        self.memory.close()
        os.close(self.fd)


class _Block:
    """A shared block of the accelerator (``Block.shared_memory()``): where it lies and how to send
    it."""

    __slots__ = ("block", "number", "fd", "size", "address", "header", "mapped")

    def __init__(self, block: Any, info: tuple[int, int, int, tuple[int, int], int]) -> None:
        self.block = block
        self.number, self.fd, self.size, (self.address, self.header), mapped = info
        self.mapped = bool(mapped)


def _shared_block(array: np.ndarray[Any, Any]) -> _Block | None:
    """The accelerator's shared block ``array`` lies in, when it is a C-contiguous array of one."""
    if not array.flags.c_contiguous:
        return None
    base: Any = array
    while isinstance(base, np.ndarray):
        base = base.base
    if isinstance(base, memoryview):
        base = base.obj
    method = getattr(base, "shared_memory", None)
    info = method() if method is not None else None
    return None if info is None else _Block(base, info)


class _Writer:
    """This worker process's segments and the shared blocks its batches hold (see the module
    docstring)."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        # This worker among those that had its process id (an id is reused once a process ends).
        self.worker = (self.pid, secrets.randbits(63))
        self.segments: list[_Segment] = []
        self.retired: list[int] = []
        self._made = 0
        self.blocks = _blocks_on == self.pid

    def segment(self, size: int) -> _Segment:
        """A free segment of at least ``size`` bytes, marked held."""
        free = [s for s in self.segments if s.free()]
        fits = [s for s in free if s.size >= size]
        if fits:
            chosen = min(fits, key=lambda s: s.size)
        else:
            if free:  # too small for this batch: a larger one takes its place
                self._retire(max(free, key=lambda s: s.size))
            room = max(size // 4, _SLACK)
            chosen = _Segment(self._made, -(-(size + room) // mmap.PAGESIZE) * mmap.PAGESIZE)
            self._made += 1
            self.segments.append(chosen)
        for extra in [s for s in self.segments if s is not chosen and s.free()]:
            if len(self.segments) <= KEEP:
                break
            self._retire(extra)
        chosen.memory[_HELD] = 1
        return chosen

    def _retire(self, segment: _Segment) -> None:
        self.segments.remove(segment)
        segment.close()
        self.retired.append(segment.number)

    def _in_block(self, leaf: Any, blocks: dict[int, _Block]) -> tuple[Any, ...] | None:
        """The layout entry (without its name) of an array, or a list of arrays one after the
        other, in one shared block (``blocks`` collects it), or ``None``."""
        if not self.blocks:
            return None
        arrays = [leaf] if isinstance(leaf, np.ndarray) else leaf
        found = _shared_block(arrays[0])
        if found is None:
            return None
        start = end = arrays[0].ctypes.data
        for array in arrays:
            if array.ctypes.data != end or not array.flags.c_contiguous:
                return None  # (copied into the segment)
            end += array.nbytes
        if not found.address <= start <= end <= found.address + found.size - found.header:
            return None
        found = blocks.setdefault(found.number, found)
        return _entry(leaf, found.number, found.header + start - found.address)[0]

    def pack(self, leaves: dict[str, Any]) -> SharedBatch:
        """``leaves`` (see :mod:`codegen.runtime.data.tensors`): the arrays in shared blocks as
        where they are, the others copied into a free segment."""
        layout: list[tuple[Any, ...]] = []
        copies: list[tuple[int, Any]] = []
        blocks: dict[int, _Block] = {}
        size = _HEADER
        for name, leaf in leaves.items():
            if not (_shareable(leaf) or _arrays(leaf)):
                layout.append((name, _VALUE, leaf))
            elif (placed := self._in_block(leaf, blocks)) is not None:
                layout.append((name, *placed))
            else:
                entry, nbytes = _entry(leaf, None, size)
                layout.append((name, *entry))
                copies.append((size, leaf))
                size = _aligned(size + nbytes)
        for found in blocks.values():
            found.block.hold()  # (its memory is not reused until the main process clears it)
        gone = accel.speedups.shared_retired() if self.blocks and accel.speedups else []
        segment = self.segment(size) if copies else None
        if segment is not None:
            _copy_into(segment, copies)
        retired, self.retired = self.retired, []
        return SharedBatch(self.worker, segment, tuple(retired), tuple(layout), blocks, tuple(gone))


def _entry(leaf: Any, key: int | None, offset: int) -> tuple[tuple[Any, ...], int]:
    """The layout entry (without its name) of an array or a list of arrays of one dtype at
    ``offset`` of the segment (``key`` ``None``) or of shared block ``key``, and their bytes."""
    if isinstance(leaf, np.ndarray):
        return (_ARRAY, key, offset, leaf.dtype.str, leaf.shape), leaf.nbytes
    dtype = leaf[0].dtype
    shapes = [a.shape for a in leaf]
    if shapes.count(shapes[0]) == len(shapes):
        entry = (_SAME, key, offset, dtype.str, shapes[0], len(shapes))
        return entry, math.prod(shapes[0]) * len(shapes) * dtype.itemsize
    count = sum(math.prod(shape) for shape in shapes)
    return (_LIST, key, offset, dtype.str, shapes), count * dtype.itemsize


def _copy_into(segment: _Segment, copies: list[tuple[int, Any]]) -> None:
    """Copies each array or list of arrays of ``copies`` into ``segment`` at its offset."""
    target = np.frombuffer(segment.memory, np.uint8)
    try:
        for offset, leaf in copies:
            if isinstance(leaf, np.ndarray):
                flat = np.ascontiguousarray(leaf).reshape(-1).view(np.uint8)
                target[offset : offset + flat.size] = flat
            else:
                flats = [a.reshape(-1) for a in leaf]
                dtype = leaf[0].dtype
                count = sum(a.size for a in flats)
                out = target[offset : offset + count * dtype.itemsize].view(dtype)
                np.concatenate(flats, out=out)
    finally:
        del target  # the segment may be closed later: no view of it outlives this


_writer: _Writer | None = None
_blocks_on = 0
"""The process that turned shared blocks on (:func:`decode_into_shared_memory`), if any."""


def decode_into_shared_memory() -> bool:
    """Makes the accelerator decode this process's large batch columns (and read its files) into
    shared memory, from now on: a DataLoader worker's, whose batches then reach the main process
    without a copy (see the module docstring). Whether it does (not without the accelerator, nor
    without ``memfd_create``). A process forked after it decodes into private memory again."""
    global _blocks_on
    pid = os.getpid()
    if _blocks_on == pid:
        return True
    if accel.speedups is None:
        return False
    try:
        accel.speedups.use_shared_blocks(True)
    except OSError:
        return False
    _blocks_on = pid
    return True


def share(leaves: dict[str, Any]) -> SharedBatch:
    """A batch's leaves to send from a DataLoader worker: the arrays copied into one of the
    worker's segments (see the module docstring)."""
    global _writer
    if _writer is None or _writer.pid != os.getpid():
        _writer = _Writer()
    return _writer.pack(leaves)


class SharedBatch:
    """A batch in a worker's segment and shared blocks; unpickled in the main process, it is the
    batch's dict of tensors over their memory."""

    __slots__ = ("blocks", "gone", "layout", "retired", "segment", "worker")

    def __init__(
        self,
        worker: tuple[int, int],
        segment: _Segment | None,
        retired: tuple[int, ...],
        layout: tuple[Any, ...],
        blocks: dict[int, _Block],
        gone: tuple[int, ...],
    ) -> None:
        self.worker = worker
        self.segment = segment
        self.retired = retired
        self.layout = layout
        self.blocks = blocks
        self.gone = gone

    def __reduce__(self) -> tuple[Any, ...]:
        segment = self.segment
        memory = None
        if segment is not None:
            fd = None if segment.memory[_MAPPED] else reduction.DupFd(segment.fd)
            memory = (segment.number, segment.size, fd)
        blocks = tuple(
            (number, b.size, None if b.mapped else reduction.DupFd(b.fd))
            for number, b in self.blocks.items()
        )
        return (_receive, (self.worker, memory, self.retired, self.layout, blocks, self.gone))


# --- the main process ----------------------------------------------------------------------------

_lock = threading.Lock()
_segments: dict[tuple[tuple[int, int], int], mmap.mmap] = {}
"""The segments (and shared blocks, by their negated numbers) this process has mapped, by worker
(process id and a random number: an id is reused once a process ends) and number."""
_dtypes: dict[str, torch.dtype] = {}


def mapped() -> dict[tuple[int, int], int]:
    """The segments (and shared blocks, by their negated numbers) this process keeps mapped, by
    worker process id and number: their sizes."""
    with _lock:
        return {(worker[0], number): len(memory) for (worker, number), memory in _segments.items()}


def _ended(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def _map(
    worker: tuple[int, int], number: int, size: int, fd: Any, retired: tuple[int, ...]
) -> mmap.mmap:
    """Segment ``number`` (a shared block: its negated number) of ``worker``, mapped once (``fd``
    passes its descriptor); ``retired``: the worker closed those since."""
    pid = worker[0]
    try:
        received = None if fd is None else fd.detach()
    except (OSError, EOFError) as exc:  # the worker's end of the socket closed
        raise TfrGenError(
            f"Dataset.to_torch: DataLoader worker {pid} ended before this process received the"
            f" shared memory of its batch ({exc or type(exc).__name__})"
        ) from exc
    try:
        with _lock:
            for gone in retired:
                _segments.pop((worker, gone), None)
            memory = _segments.get((worker, number))
            if memory is None:
                if received is None:
                    raise TfrGenError(
                        f"Dataset.to_torch: a batch from DataLoader worker {pid} is in shared memory"
                        f" {number}, which this process was never given"
                    )
                for key in [k for k in _segments if k[0] != worker and _ended(k[0][0])]:
                    del _segments[key]
                memory = mmap.mmap(received, size)
                memory[_MAPPED] = 1
                _segments[(worker, number)] = memory
            return memory
    finally:
        if received is not None:
            os.close(received)


def _release(memory: mmap.mmap) -> None:
    """The batch in ``memory`` is freed: the worker may write there again."""
    memory[_HELD] = 0


def _dtype(dtype: str) -> torch.dtype:
    found = _dtypes.get(dtype)
    if found is None:
        found = _dtypes[dtype] = torch.from_numpy(np.empty(0, np.dtype(dtype))).dtype
    return found


def _tensor(owner: memoryview, offset: int, dtype: str, shape: tuple[int, ...]) -> torch.Tensor:
    kind = _dtype(dtype)
    count = math.prod(shape)
    if count == 0:
        return torch.empty(shape, dtype=kind)
    return torch.frombuffer(owner, dtype=kind, count=count, offset=offset).view(shape)


def _tensors(
    owner: memoryview, offset: int, dtype: str, shapes: list[tuple[int, ...]]
) -> list[torch.Tensor]:
    kind = _dtype(dtype)
    counts = [math.prod(shape) for shape in shapes]
    total = sum(counts)
    if total == 0:
        return [torch.empty(shape, dtype=kind) for shape in shapes]
    flat = torch.frombuffer(owner, dtype=kind, count=total, offset=offset)
    return [
        piece.view(shape)
        for piece, shape in zip(flat.split_with_sizes(counts), shapes, strict=True)
    ]


def _same(
    owner: memoryview, offset: int, dtype: str, shape: tuple[int, ...], count: int
) -> list[torch.Tensor]:
    if not shape or shape[0] == 0 or math.prod(shape) == 0:
        return _tensors(owner, offset, dtype, [shape] * count)
    flat = _tensor(owner, offset, dtype, (count * shape[0], *shape[1:]))
    return list(flat.split_with_sizes([shape[0]] * count))


def _receive(
    worker: tuple[int, int],
    memory: tuple[int, int, Any] | None,
    retired: tuple[int, ...],
    layout: tuple[Any, ...],
    blocks: tuple[tuple[int, int, Any], ...],
    gone: tuple[int, ...],
) -> dict[str, Any]:
    """The dict of tensors of a :class:`SharedBatch`, unpickled in the main process: over its
    segment (``memory``: number, size, descriptor; ``retired``: the worker's segments closed since)
    and its shared blocks (``blocks``; ``gone``: the worker's blocks let go since), which are keyed
    by their negated numbers."""
    owners: dict[int, memoryview] = {}
    # Mapped (or found) first, every one, before any is given an owner whose end releases it.
    mapped = [
        (-number, _map(worker, -number, size, fd, tuple(-n for n in gone)))
        for number, size, fd in blocks
    ]
    if memory is not None:
        mapped.append((memory[0], _map(worker, *memory, retired)))
    for key, segment in mapped:
        owner = memoryview(segment)  # every tensor holds it: freed with the last of them
        weakref.finalize(owner, _release, segment).atexit = False
        owners[key] = owner
    out: dict[str, Any] = {}
    for entry in layout:
        name, kind = entry[0], entry[1]
        if kind == _VALUE:
            out[name] = leaf_tensors(entry[2])
            continue
        owner = owners[memory[0] if entry[2] is None else -entry[2]]  # type: ignore[index]
        if kind == _ARRAY:
            out[name] = _tensor(owner, *entry[3:])
        elif kind == _SAME:
            out[name] = _same(owner, *entry[3:])
        else:
            out[name] = _tensors(owner, *entry[3:])
    return out
