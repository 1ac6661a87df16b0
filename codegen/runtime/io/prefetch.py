"""Reading a remote file ahead of its reader: :class:`ReadAhead` fetches the file in large parts
in a background thread while the records already fetched are decoded.

A store far away answers each request after a round trip, so a reader that asks for its next
megabyte only when it needs it waits for the network as long as it decodes. A :class:`ReadAhead`
starts fetching as soon as it is made: a thread takes the file's parts from an iterator (for an
object of a store, :func:`~codegen.runtime.io.urls.read_parts`: one ranged request per part of
:data:`PART_SIZE` bytes), keeping at most ``depth`` parts ready; the network I/O releases the
GIL, so fetching and decoding overlap. A dataset makes the next file's :class:`ReadAhead` while it
reads the current one; :class:`FilesAhead` can chain them (``after``), so that the next file's
fetch starts the moment the current one's last part has arrived: the files are fetched one after
the other, without pause and without two fetches sharing the connection, the first file first.

Memory: a :class:`ReadAhead` holds at most ``depth`` parts ready, the part being read and the part
being fetched; chained, the next file's fetch starts only once the current file holds no part
being fetched, so a chained pair holds at most ``2 * depth + 2`` parts: :data:`READ_AHEAD_BUDGET`
with the defaults, whatever the size of the files.

Errors of the thread (the file cannot be opened, the connection fails) are raised by the read
that reaches them, after every part fetched before them, as the file itself would raise them.
:meth:`ReadAhead.close` stops the thread and waits for it (at most the rest of one part's
fetch); nothing is left running after it.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterable, Sequence
from types import TracebackType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing_extensions import Buffer

__all__ = ["DEPTH", "PART_SIZE", "READ_AHEAD_BUDGET", "FilesAhead", "ReadAhead"]

PART_SIZE = 1 << 24
"""The bytes of a remote file asked for per request by a dataset's read-ahead (16 MiB)."""
DEPTH = 1
"""How many fetched parts a :class:`ReadAhead` keeps ready beside the one being read."""
READ_AHEAD_BUDGET = (2 * DEPTH + 2) * PART_SIZE
"""The most memory a dataset's read-ahead of a file and the next holds (64 MiB)."""

_END = memoryview(b"")


class ReadAhead:
    """The bytes of a file, fetched ahead in a background thread: the parts that ``parts()``
    iterates over, in order.

    ``name`` names the file (``self.name``, as readers name a file object in errors). The thread
    starts at once (with ``after``, once that read-ahead has fetched its last part or stopped);
    read with :meth:`readinto` or :meth:`read`, sequentially, and :meth:`close` when done (or use
    ``with``). At most ``depth`` parts wait to be read, so memory stays within ``depth + 2`` parts.
    """

    def __init__(
        self,
        parts: Callable[[], Iterable[Buffer]],
        name: str,
        *,
        depth: int = DEPTH,
        after: ReadAhead | None = None,
    ) -> None:
        self.name = name
        self._parts = parts
        self._after = after
        self._blocks: queue.Queue[memoryview | BaseException] = queue.Queue(depth)
        self._stop = threading.Event()
        self._fetched = threading.Event()
        self._current = _END
        self._ended = False
        self._thread = threading.Thread(target=self._fetch, name=f"tfr-gen read-ahead {name}")
        self._thread.daemon = True
        self._thread.start()

    def _fetch(self) -> None:
        """The thread: the file's parts, then an empty one (or the error that stopped it)."""
        try:
            if self._after is not None and not self._after.wait_fetched(self._stop):
                return
            self._after = None
            for part in self._parts():
                view = memoryview(part).cast("B")
                if view and not self._put(view):
                    return
            self._fetched.set()  # before the end is queued: a chained fetch starts at once
            self._put(_END)
        except BaseException as exc:  # noqa: BLE001 - handed to the reader, raised there
            self._fetched.set()
            self._put(exc)
        finally:
            self._fetched.set()  # also when stopped

    def wait_fetched(self, stop: threading.Event) -> bool:
        """Waits until this file's last part has arrived (or its fetch stopped); ``False`` if
        ``stop`` was set first."""
        while not self._fetched.wait(0.05):
            if stop.is_set():
                return False
        return not stop.is_set()

    def _put(self, item: memoryview | BaseException) -> bool:
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
            self._current = item
        count = min(len(view), len(self._current))
        view[:count] = self._current[:count]
        self._current = self._current[count:]
        return count

    def read(self, size: int = -1) -> bytes:
        """Up to ``size`` more bytes (all the rest for a negative ``size``; ``b""`` at the end)."""
        parts: list[bytes] = []
        wanted = size if size >= 0 else None
        while wanted is None or wanted > 0:
            chunk = bytearray(max(len(self._current), 1 << 20) if wanted is None else wanted)
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
        self._current = _END
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
    """:class:`ReadAhead` s of the files ``order`` (keys of ``parts``), each started while the file
    before it is read: :meth:`take` hands out a file's and starts the next one's.

    ``parts(key)`` gives what iterates over a file's parts for its read-ahead, or is ``None`` for
    a file read directly (a local file: the operating system reads ahead). ``chained``: each
    read-ahead fetches after the one started before it (for files read one after the other; files
    read by turns need their fetches side by side). :meth:`close` stops every read-ahead handed out
    or started; a read-ahead read to its end has stopped by itself.
    """

    def __init__(
        self,
        order: Sequence[int],
        parts: Callable[[int], Callable[[], Iterable[Buffer]] | None],
        name: Callable[[int], str],
        *,
        chained: bool = False,
    ) -> None:
        self._order = list(order)
        self._parts = parts
        self._name = name
        self._chained = chained
        self._last: ReadAhead | None = None
        self._started: dict[int, ReadAhead] = {}
        self._given: list[ReadAhead] = []

    def _start(self, key: int) -> ReadAhead | None:
        parts = self._parts(key)
        if parts is None:
            return None
        after = self._last if self._chained else None
        self._last = ReadAhead(parts, self._name(key), after=after)
        return self._last

    def take(self, key: int) -> ReadAhead | None:
        """The read-ahead of file ``key`` (``None`` for a file read directly); starts the next
        file's."""
        position = self._order.index(key) if key in self._order else len(self._order)
        for passed in [k for k in self._started if k != key and k in self._order[:position]]:
            self._started.pop(passed).close()  # a file passed over unread (nor is it waited for)
        ahead = self._started.pop(key, None) or self._start(key)
        if ahead is not None:
            self._given = [a for a in self._given if a.running]
            self._given.append(ahead)
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
        self._last = None
