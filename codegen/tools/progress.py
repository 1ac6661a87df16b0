"""A one-line progress bar for long scans, drawn with carriage returns on a terminal.

Nothing is drawn when the stream is not a terminal (output piped to a file or another program),
so the bar never ends up in captured output.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TextIO

_WIDTH = 24
"""Characters of the bar itself."""
_INTERVAL = 0.1
"""Seconds between redraws."""


def _size(n: int) -> str:
    """A byte count for people: ``812 B``, ``3.4 MB``, ``1.2 GB``."""
    if n < 1000:
        return f"{n} B"
    value = float(n)
    for unit in ("kB", "MB", "GB"):
        value /= 1000
        if value < 1000:
            return f"{value:.1f} {unit}"
    return f"{value / 1000:.1f} TB"


def _duration(seconds: float) -> str:
    """A time left for people: ``0:07``, ``12:30``, ``1:02:03``."""
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


class Progress:
    """A progress bar on ``stream`` for a scan of ``total`` bytes, with the rate so far and the
    time left at that rate (``ETA``).

    ``enabled`` defaults to whether ``stream`` is a terminal; ``interval`` is the least time
    between redraws, so :meth:`update` can be called for every record; ``clock`` gives the time
    in seconds. :meth:`clear` erases the bar.
    """

    def __init__(
        self,
        stream: TextIO,
        total: int,
        *,
        label: str,
        enabled: bool | None = None,
        interval: float = _INTERVAL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stream = stream
        self.total = total
        self.label = label
        self.enabled = stream.isatty() if enabled is None else enabled
        self.interval = interval
        self._clock = clock
        self._start = clock()
        self._next = 0.0
        self._drawn = 0

    def update(self, done: int, records: int) -> None:
        """Show ``done`` of ``total`` bytes and ``records`` records read, the rate so far and
        the time left at that rate (once per interval)."""
        if not self.enabled:
            return
        now = self._clock()
        if now < self._next:
            return
        self._next = now + self.interval
        fraction = min(done / self.total, 1.0) if self.total else 1.0
        filled = round(fraction * _WIDTH)
        line = (
            f"{self.label} [{'#' * filled}{'.' * (_WIDTH - filled)}] {fraction:4.0%}"
            f"  {_size(done)} of {_size(self.total)}  {records:,} records"
        )
        elapsed = now - self._start
        if elapsed > 0 and done:
            rate = done / elapsed
            line += f"  {_size(round(rate))}/s  ETA {_duration(max(self.total - done, 0) / rate)}"
        self.stream.write("\r" + line.ljust(self._drawn))
        self.stream.flush()
        self._drawn = len(line)

    def clear(self) -> None:
        """Erase the bar, leaving the cursor at the start of an empty line (call it before writing
        other text to the terminal; the next :meth:`update` draws the bar again)."""
        if self._drawn:
            self.stream.write("\r" + " " * self._drawn + "\r")
            self.stream.flush()
            self._drawn = 0
