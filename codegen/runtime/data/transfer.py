"""Batches from PyTorch DataLoader worker processes to the main process through reused shared memory.

A DataLoader worker hands what it yields to the main process through a queue, and a tensor in it
travels through fresh shared memory every time: a new segment per tensor, whose pages fault in on
both sides, and a file descriptor passed per tensor; for a batch of columns that costs more than
reading and decoding it. So in a worker ``to_torch()`` yields a :class:`SharedBatch` instead (see
:func:`share`), and the main process receives the same dict of tensors it would have built itself:

* **Segments**: each worker owns segments of shared memory, anonymous files (``memfd_create``:
  nothing is named in ``/dev/shm``) made when needed and reused. A segment holds one batch: its
  arrays, copied into it once, 64-byte aligned after a header whose first byte says whether the
  main process may still hold the batch, and whose second says whether it has mapped the segment.
* **Sending**: a ``SharedBatch`` pickles (the DataLoader's queue) into the segment's number and
  size, where each array is in it (offset, dtype, shape), the batch's other values (strings) as
  they are, and, until the main process has mapped the segment, its file descriptor (passed over
  a Unix socket by ``multiprocessing``, as torch passes a tensor's).
* **Receiving**: unpickling in the main process maps each segment once and makes every array a
  tensor over the mapped memory (no copy). When the last of a batch's tensors (or of views of
  them) is freed, the segment's first byte is cleared and the worker may write a later batch there.
* **Never overwritten**: a worker writes only into a segment whose batch the main process has
  released; when every segment is held it makes a new one, so keeping any number of batches is
  safe (they cost memory as they would with fresh shared memory). It keeps at most :data:`KEEP`
  segments when they are free (the DataLoader's default ``prefetch_factor`` of 2, the batch in use
  and the one being made), and replaces a free segment too small for the next batch with a larger one.
* **Cleanup**: the memory has no name; it is freed once the worker and the main process have both
  closed and unmapped it, however the worker ends (a crash included). The main process forgets the
  segments of a worker that has ended when it next maps a new segment, and a segment the worker
  closed when a later batch from that worker says so; a batch still held keeps its memory mapped.

Where ``memfd_create`` or passing descriptors is not available (not Linux), workers yield tensors
as before (:data:`AVAILABLE`).
"""

from __future__ import annotations

import math
import mmap
import os
import threading
import weakref
from multiprocessing import reduction
from typing import Any

import numpy as np
import torch

from codegen.errors import TfrGenError
from codegen.runtime.data.tensors import leaf_tensors

__all__ = ["AVAILABLE", "KEEP", "SharedBatch", "share"]

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
"""Layout entries: an array; a list of arrays of one shape; of several shapes; any other value."""


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


class _Writer:
    """This worker process's segments (see the module docstring)."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.segments: list[_Segment] = []
        self.retired: list[int] = []
        self._made = 0

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

    def pack(self, leaves: dict[str, Any]) -> SharedBatch:
        """``leaves`` (see :mod:`codegen.runtime.data.tensors`) with their arrays copied into a
        free segment."""
        layout: list[tuple[Any, ...]] = []
        copies: list[tuple[int, Any]] = []
        size = _HEADER
        for name, leaf in leaves.items():
            if _shareable(leaf):
                layout.append((name, _ARRAY, size, leaf.dtype.str, leaf.shape))
                copies.append((size, leaf))
                size = _aligned(size + leaf.nbytes)
            elif _arrays(leaf):
                dtype = leaf[0].dtype
                shapes = [a.shape for a in leaf]
                if shapes.count(shapes[0]) == len(shapes):
                    layout.append((name, _SAME, size, dtype.str, shapes[0], len(shapes)))
                    count = math.prod(shapes[0]) * len(shapes)
                else:
                    layout.append((name, _LIST, size, dtype.str, shapes))
                    count = sum(math.prod(shape) for shape in shapes)
                copies.append((size, leaf))
                size = _aligned(size + count * dtype.itemsize)
            else:
                layout.append((name, _VALUE, leaf))
        segment = self.segment(size)
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
        retired, self.retired = self.retired, []
        return SharedBatch(self.pid, segment, tuple(retired), tuple(layout))


_writer: _Writer | None = None


def share(leaves: dict[str, Any]) -> SharedBatch:
    """A batch's leaves to send from a DataLoader worker: the arrays copied into one of the
    worker's segments (see the module docstring)."""
    global _writer
    if _writer is None or _writer.pid != os.getpid():
        _writer = _Writer()
    return _writer.pack(leaves)


class SharedBatch:
    """A batch in a worker's segment; unpickled in the main process, it is the batch's dict of
    tensors over the segment's memory."""

    __slots__ = ("layout", "pid", "retired", "segment")

    def __init__(
        self, pid: int, segment: _Segment, retired: tuple[int, ...], layout: tuple[Any, ...]
    ) -> None:
        self.pid = pid
        self.segment = segment
        self.retired = retired
        self.layout = layout

    def __reduce__(self) -> tuple[Any, ...]:
        segment = self.segment
        fd = None if segment.memory[_MAPPED] else reduction.DupFd(segment.fd)
        return (
            _receive,
            (self.pid, segment.number, segment.size, fd, self.retired, self.layout),
        )


# --- the main process ----------------------------------------------------------------------------

_lock = threading.Lock()
_segments: dict[tuple[int, int], mmap.mmap] = {}
"""The segments this process has mapped, by worker process id and segment number."""
_dtypes: dict[str, torch.dtype] = {}


def mapped() -> dict[tuple[int, int], int]:
    """The segments this process keeps mapped, by worker process id and segment number: their
    sizes."""
    with _lock:
        return {key: len(memory) for key, memory in _segments.items()}


def _ended(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def _map(pid: int, number: int, size: int, fd: Any, retired: tuple[int, ...]) -> mmap.mmap:
    """Segment ``number`` of worker ``pid``, mapped once (``fd`` passes its descriptor)."""
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
                _segments.pop((pid, gone), None)
            memory = _segments.get((pid, number))
            if memory is None:
                if received is None:
                    raise TfrGenError(
                        f"Dataset.to_torch: a batch from DataLoader worker {pid} is in shared memory"
                        f" {number}, which this process was never given"
                    )
                for key in [key for key in _segments if key[0] != pid and _ended(key[0])]:
                    del _segments[key]
                memory = mmap.mmap(received, size)
                memory[_MAPPED] = 1
                _segments[(pid, number)] = memory
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
    pid: int, number: int, size: int, fd: Any, retired: tuple[int, ...], layout: tuple[Any, ...]
) -> dict[str, Any]:
    """The dict of tensors of a :class:`SharedBatch`, unpickled in the main process."""
    memory = _map(pid, number, size, fd, retired)
    owner = memoryview(memory)  # every tensor holds it: freed with the last of them
    weakref.finalize(owner, _release, memory).atexit = False
    out: dict[str, Any] = {}
    for entry in layout:
        name, kind = entry[0], entry[1]
        if kind == _ARRAY:
            out[name] = _tensor(owner, *entry[2:])
        elif kind == _SAME:
            out[name] = _same(owner, *entry[2:])
        elif kind == _LIST:
            out[name] = _tensors(owner, *entry[2:])
        else:
            out[name] = leaf_tensors(entry[2])
    return out
