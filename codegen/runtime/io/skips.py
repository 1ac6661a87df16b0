"""What readers of many files report with ``on_error="skip"``: the skipped pieces and their count.

Every piece of data a reader passes over is one :class:`SkippedSpan` handed to the ``on_skip``
callback:

* a corrupt or truncated stretch of a file (from :class:`~codegen.runtime.io.reader.TFRecordReader`);
* a whole file that cannot be opened (offset 0, its size as the length, the reason from the OS);
* a record whose CRCs are valid but which does not decode: a :class:`SkippedRecord`, the span of
  its framing (header, data and data CRC) plus its index in the file.

Without a callback each one is logged as a warning. :class:`SkipCounts` adds them up.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from codegen.errors import TfrGenError

__all__ = [
    "OnError",
    "OnSkip",
    "SkipCounts",
    "SkipReporter",
    "SkippedRecord",
    "SkippedSpan",
    "check_on_error",
    "describe",
]

OnError = Literal["raise", "skip"]
"""What a reader does with a corrupt or truncated record: raise
:class:`~codegen.errors.DataError`, or skip it."""


@dataclass(frozen=True, slots=True)
class SkippedSpan:
    """A stretch of a TFRecord stream that a reader with ``on_error="skip"`` passed over.

    ``offset`` and ``length`` count bytes of the (uncompressed) record stream; ``reason`` says what
    was wrong at ``offset``. A compressed stream that is corrupt or cut short ends with a span of
    length 0 whose reason names the compression error (the bytes of a record it cut off are
    reported just before, as a truncated record).
    """

    path: str
    offset: int
    length: int
    reason: str


OnSkip = Callable[[SkippedSpan], None]
"""The callback that receives every skipped piece of data."""


@dataclass(frozen=True, slots=True)
class SkippedRecord(SkippedSpan):
    """A record whose CRCs are valid but which does not decode, skipped with ``on_error="skip"``.

    ``offset`` is its header's byte offset in the (uncompressed) record stream, ``length`` its
    framed size (data plus 16 bytes), ``reason`` the decoder's message and ``index`` its 0-based
    index among the file's readable records.
    """

    index: int


def describe(skipped: SkippedSpan) -> str:
    """One line for people: ``a.tfrecord: byte offset 96: 45 bytes skipped: corrupt data CRC ...``
    (a record also names its index: ``a.tfrecord: record 2 at byte offset 160: ...``)."""
    where = f"byte offset {skipped.offset}"
    if isinstance(skipped, SkippedRecord):
        where = f"record {skipped.index} at {where}"
    return f"{skipped.path}: {where}: {skipped.length} bytes skipped: {skipped.reason}"


def _count(n: int, word: str, plural: str) -> str:
    return f"{n:,} {word if n == 1 else plural}"


@dataclass(slots=True)
class SkipCounts:
    """How much a reader skipped: ``spans`` (corrupt or truncated stretches and files that cannot
    be read), ``records`` (records that do not decode) and the ``bytes`` they cover together.

    Calling it with a skipped piece counts it, so an instance can be the ``on_skip`` callback.
    """

    spans: int = 0
    records: int = 0
    bytes: int = 0

    def __call__(self, skipped: SkippedSpan) -> None:
        if isinstance(skipped, SkippedRecord):
            self.records += 1
        else:
            self.spans += 1
        self.bytes += skipped.length

    def __bool__(self) -> bool:
        """Whether anything was skipped."""
        return bool(self.spans or self.records)

    def __str__(self) -> str:
        """``2 unreadable stretches and 1 record that does not decode (203 bytes)``."""
        parts = []
        if self.spans or not self.records:
            parts.append(_count(self.spans, "unreadable stretch", "unreadable stretches"))
        if self.records:
            parts.append(
                _count(self.records, "record that does not decode", "records that do not decode")
            )
        return f"{' and '.join(parts)} ({_count(self.bytes, 'byte', 'bytes')})"


class SkipReporter:
    """Counts every skipped piece in ``counts`` and hands it to ``on_skip``, or, without a
    callback, logs it as a warning on ``logger``."""

    def __init__(self, on_skip: OnSkip | None, logger: logging.Logger) -> None:
        self.on_skip = on_skip
        self.logger = logger
        self.counts = SkipCounts()

    def __call__(self, skipped: SkippedSpan) -> None:
        self.counts(skipped)
        if self.on_skip is not None:
            self.on_skip(skipped)
        else:
            self.logger.warning("%s", describe(skipped))


def check_on_error(on_error: object, on_skip: OnSkip | None, where: str) -> OnError:
    """``on_error`` if it is ``"raise"`` or ``"skip"``; :class:`TfrGenError` otherwise, and for an
    ``on_skip`` callback given without ``on_error="skip"``. ``where`` names the caller."""
    if on_error != "raise" and on_error != "skip":
        raise TfrGenError(f"{where}: unknown on_error {on_error!r}; expected 'raise' or 'skip'")
    if on_skip is not None and on_error != "skip":
        raise TfrGenError(f"{where}: on_skip is only called with on_error='skip'")
    return on_error
