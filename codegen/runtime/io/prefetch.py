"""Reading a remote file ahead of its reader: :class:`ReadAhead` fetches the file in large blocks
in a background thread while the records already fetched are decoded.

A store far away answers each request after a round trip, so a reader that asks for its next
megabyte only when it needs it waits for the network as long as it decodes. A :class:`ReadAhead`
starts reading as soon as it is made: a thread opens the file and reads ``block_size`` bytes at
a time (one ranged request each), keeping at most ``depth`` blocks ready; the network I/O
releases the GIL, so fetching and decoding overlap. A dataset makes the next file's
:class:`ReadAhead` while it reads the current one, so the next shard is on its way before the
current one ends.

Errors of the thread (the file cannot be opened, the connection fails) are raised by the read
that reaches them, after every block fetched before them, as the file itself would raise them.
:meth:`ReadAhead.close` stops the thread and waits for it (at most the rest of one block's
fetch); nothing is left running after it.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, BinaryIO

if TYPE_CHECKING:
    from typing_extensions import Buffer

__all__ = ["BLOCK_SIZE", "DEPTH", "FilesAhead", "ReadAhead"]

BLOCK_SIZE = 1 << 23
"""The bytes a :class:`ReadAhead` asks of its file per request (8 MiB)."""
DEPTH = 2
"""How many fetched blocks a :class:`ReadAhead` keeps ready."""


class ReadAhead:
    """The bytes of the file ``open()`` opens, fetched ahead in a background thread.

    ``name`` names the file (``self.name``, as readers name a file object in errors). The thread
    starts at once; read with :meth:`readinto` or :meth:`read`, sequentially, and :meth:`close`
    when done (or use ``with``). ``block_size`` bytes are read per request and at most ``depth``
    blocks wait to be read, so memory stays within ``(depth + 2) * block_size``.
    """

    def __init__(
        self,
        open: Callable[[], BinaryIO],  # noqa: A002 - what it does
        name: str,
        *,
        block_size: int = BLOCK_SIZE,
        depth: int = DEPTH,
    ) -> None:
        self.name = name
        self._open = open
        self._block_size = block_size
        self._blocks: queue.Queue[bytes | BaseException] = queue.Queue(depth)
        self._stop = threading.Event()
        self._current = memoryview(b"")
        self._ended = False
        self._thread = threading.Thread(target=self._fetch, name=f"tfr-gen read-ahead {name}")
        self._thread.daemon = True
        self._thread.start()

    def _fetch(self) -> None:
        """The thread: the file's blocks, then ``b""`` (or the error that stopped it)."""
        try:
            with self._open() as file:
                while not self._stop.is_set():
                    block = file.read(self._block_size)
                    if not self._put(block) or not block:
                        return
        except BaseException as exc:  # noqa: BLE001 - handed to the reader, raised there
            self._put(exc)

    def _put(self, item: bytes | BaseException) -> bool:
        """Queues ``item`` unless the reader closed meanwhile (then ``False``)."""
        while not self._stop.is_set():
            try:
                self._blocks.put(item, timeout=0.05)
            except queue.Full:
                continue
            return True
        return False

    @property
    def running(self) -> bool:
        """Whether the thread still runs (it ends at the end of the file, an error or :meth:`close`)."""
        return self._thread.is_alive()

    def readinto(self, buffer: Buffer) -> int:
        """Fills the start of ``buffer`` with the next bytes (at least one until the file ends)
        and returns how many; 0 at the end."""
        view = memoryview(buffer).cast("B")
        if not self._current:
            if self._ended:
                return 0
            item = self._blocks.get()
            if isinstance(item, BaseException):
                self._ended = True
                raise item
            if not item:
                self._ended = True
                return 0
            self._current = memoryview(item)
        count = min(len(view), len(self._current))
        view[:count] = self._current[:count]
        self._current = self._current[count:]
        return count

    def read(self, size: int = -1) -> bytes:
        """Up to ``size`` more bytes (all the rest for a negative ``size``; ``b""`` at the end)."""
        parts: list[bytes] = []
        wanted = size if size >= 0 else None
        while wanted is None or wanted > 0:
            chunk = bytearray(self._block_size if wanted is None else wanted)
            count = self.readinto(chunk)
            if count == 0:
                break
            parts.append(bytes(chunk[:count]))
            if wanted is not None:
                wanted -= count
        return b"".join(parts)

    def close(self) -> None:
        """Stops the thread, waits for it and lets go of the blocks fetched."""
        self._stop.set()
        self._thread.join()
        self._current = memoryview(b"")
        self._ended = True
        while not self._blocks.empty():
            self._blocks.get_nowait()

    def __enter__(self) -> ReadAhead:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class FilesAhead:
    """:class:`ReadAhead` s of the files ``order`` (keys of ``open``), each started while the file
    before it is read: :meth:`take` hands out a file's and starts the next one's.

    ``open(key)`` opens a file for its read-ahead, or is ``None`` for a file read directly (a local
    file: the operating system reads ahead). :meth:`close` stops every read-ahead handed out or
    started; a read-ahead read to its end has stopped by itself.
    """

    def __init__(
        self,
        order: Sequence[int],
        open: Callable[[int], Callable[[], BinaryIO] | None],  # noqa: A002 - what it does
        name: Callable[[int], str],
    ) -> None:
        self._order = list(order)
        self._open = open
        self._name = name
        self._started: dict[int, ReadAhead] = {}
        self._given: list[ReadAhead] = []

    def _start(self, key: int) -> ReadAhead | None:
        opener = self._open(key)
        if opener is None:
            return None
        return ReadAhead(opener, self._name(key), block_size=BLOCK_SIZE)

    def take(self, key: int) -> ReadAhead | None:
        """The read-ahead of file ``key`` (``None`` for a file read directly); starts the next
        file's."""
        ahead = self._started.pop(key, None) or self._start(key)
        if ahead is not None:
            self._given = [a for a in self._given if a.running]
            self._given.append(ahead)
        position = self._order.index(key) if key in self._order else len(self._order)
        following = self._order[position + 1 : position + 2]
        for after in following:
            if after not in self._started:
                started = self._start(after)
                if started is not None:
                    self._started[after] = started
        return ahead

    def close(self) -> None:
        """Stops every read-ahead."""
        for ahead in [*self._given, *self._started.values()]:
            ahead.close()
        self._given.clear()
        self._started.clear()
