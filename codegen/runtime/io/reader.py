"""Reading TFRecord files, byte-compatible with TensorFlow's ``TFRecordDataset``: the records
(:class:`TFRecordReader`, :func:`read_tfrecord`) and the records decoded (:func:`read_decoded`).

Reading slices records out of large buffered chunks; corruption is reported as
:class:`~codegen.errors.DataError` naming the file, record index and byte offset, or, with
``on_error="skip"``, passed over (resynchronising on the next valid record, see
:mod:`~codegen.runtime.io.resync`) and reported as :class:`~codegen.runtime.io.skips.SkippedSpan`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Generator, Iterator, Sequence
from types import TracebackType
from typing import Any, BinaryIO, Protocol, TypeVar

from codegen.errors import DataError, RecordError, TfrGenError
from codegen.runtime.io import framing
from codegen.runtime.io.compression import (
    HEAD_SIZE,
    CompressedStreamError,
    Compression,
    CompressionArg,
    check_declared,
)
from codegen.runtime.io.files import (
    PathLike,
    Replay,
    binary_stream,
    new_buffer,
    open_input,
    read_head,
    stream_name,
)
from codegen.runtime.io.framing import FRAMING, HEADER, HEADER_SIZE, U32, Record, masked_crc
from codegen.runtime.io.members import InflatingAhead, MemberInflater, inflating_source
from codegen.runtime.io.resync import Resync
from codegen.runtime.io.skips import (
    OnError,
    OnSkip,
    SkippedRecord,
    SkippedSpan,
    SkipReporter,
    check_on_error,
)
from codegen.runtime.io.urls import StorageOptions

__all__ = [
    "DEFAULT_MAX_RECORD_BYTES",
    "TFRecordReader",
    "check_max_record_bytes",
    "read_decoded",
    "read_tfrecord",
]

T = TypeVar("T")

_log = logging.getLogger(__name__)
"""Where :func:`read_decoded` logs skipped pieces without an ``on_skip`` callback."""

_READ_CHUNK = 1 << 20  # bytes asked of an uncompressed file per read
_MAX_READ = 1 << 26  # largest step by which a reader's buffer grows for a large record

DEFAULT_MAX_RECORD_BYTES = 1 << 28
"""The largest record readers accept by default (256 MiB): a header that declares more is an
error before any of its data is read, so memory stays bounded whatever a file declares."""


def check_max_record_bytes(value: object) -> int | None:
    """``value`` if it is a positive int or ``None`` (no limit), else :class:`TfrGenError`."""
    if value is not None and (type(value) is not int or value < 1):
        raise TfrGenError(f"max_record_bytes must be a positive int or None, got {value!r}")
    return value


class _Source(Protocol):
    """A stream of uncompressed record bytes."""

    def readinto(self, buffer: memoryview) -> int:
        """Fills the start of ``buffer`` with more bytes (at least one until the stream ends) and
        returns how many; 0 at the end."""
        ...


class TFRecordReader:
    """Iterates over the records of a TFRecord file, as ``bytes``.

    ``source`` is a path or URL (opened here by :func:`~codegen.runtime.io.files.open_input`, with
    ``storage_options`` for a URL; closed by :meth:`close`, by the ``with`` block, or when
    iteration ends) or a binary file object (read from its current position, never closed).
    ``compression`` is ``"auto"`` (the default: detected from the first bytes, whatever the name,
    see :func:`~codegen.runtime.io.compression.detect_compression`), ``None``, ``"gzip"`` (one or
    more concatenated members) or ``"zlib"``; a declared compression the data contradicts raises
    :class:`~codegen.errors.TfrGenError` saying what the file is
    (:func:`~codegen.runtime.io.compression.check_declared`), also with ``on_error="skip"``.
    ``verify_crc=False`` skips both CRC checks, as TensorFlow can; truncation is still detected.
    ``max_record_bytes`` (default :data:`DEFAULT_MAX_RECORD_BYTES`, ``None`` for no limit) is the
    largest record accepted: a header that declares more is a :class:`DataError` (or, skipping, a
    corrupt stretch) before any of its data is read.

    Errors are :class:`~codegen.errors.DataError` naming the file, the index of the record (the
    number of records yielded before it) and the byte offset of its header. For a compressed file
    offsets count bytes of the *uncompressed* record stream. The end of the file exactly at a
    record boundary ends iteration cleanly; errors are a corrupt length CRC, a corrupt data CRC, a
    truncated header or record, and a corrupt or truncated compressed stream.

    With ``on_error="skip"`` the reader never yields a record whose CRC failed. After a corrupt
    CRC it resynchronises on the next position where a header's length CRC and its record's data
    CRC are both valid; a truncated last record is skipped to the end of the stream. Every stretch
    passed over is reported as a :class:`~codegen.runtime.io.skips.SkippedSpan` to ``on_skip`` (if
    given) and counted in ``skipped_spans`` and ``skipped_bytes``. Resynchronising takes time linear in the bytes passed
    over, whatever lengths the candidate headers declare: the data CRC of a candidate comes from
    running CRCs at its two ends (:class:`~codegen.runtime.io.resync.Resync`), not from a pass
    over its data.

    A reader belongs to the process that made it: continued in a process forked from it, it
    raises :class:`TfrGenError` (the two would share the file's position and each read part).

    ``index`` is the number of records yielded so far and :attr:`offset` the stream offset of the
    next header. Memory stays within a few 1 MiB chunks plus the largest record; a header that
    declares more data than the file holds costs at most the bytes actually read (of the rest of
    the file, or of ``max_record_bytes``), never the length it declares.
    """

    def __init__(
        self,
        source: PathLike | BinaryIO,
        *,
        compression: CompressionArg = "auto",
        verify_crc: bool = True,
        on_error: OnError = "raise",
        on_skip: OnSkip | None = None,
        max_record_bytes: int | None = DEFAULT_MAX_RECORD_BYTES,
        storage_options: StorageOptions | None = None,
    ) -> None:
        check_on_error(on_error, on_skip, "TFRecordReader")
        self._max_record = check_max_record_bytes(max_record_bytes)
        self._file: BinaryIO
        if isinstance(source, str | os.PathLike):
            self.path: str = os.fspath(source)
            self._file = open_input(self.path, storage_options=storage_options)
            self._owns_file = True
        else:
            self._file = binary_stream(source, "TFRecordReader")
            self.path = stream_name(self._file)
            self._owns_file = False
        try:
            head = read_head(self._file, HEAD_SIZE)
            self.compression: Compression = check_declared(compression, head, self.path)
        except BaseException:
            if self._owns_file:
                self._file.close()
            raise
        replay = Replay(head, self._file)
        self._source: _Source = (
            replay if self.compression is None else inflating_source(replay, self.compression)
        )
        self._where = (
            "" if self.compression is None else f" (in the uncompressed {self.compression} stream)"
        )
        self._pid = os.getpid()  # the file offset is shared with a fork(): one process reads
        self._read_size = _READ_CHUNK
        self._verify = verify_crc
        self._skip = on_error == "skip"
        self._on_skip = on_skip
        self.index = 0
        self.skipped_spans = 0
        self.skipped_bytes = 0
        self._buf = memoryview(b"")
        self._pos = 0  # position in _buf of the next header
        self._base = 0  # stream offset of _buf[0]
        self.batch_offset = 0
        """The offset of the first record's header of the last list :meth:`batches` gave."""
        self._eof = False
        self._stream_error: str | None = None
        self._resync_state: Resync | None = None
        self._started = False
        self._records: Generator[bytes, None, None] = self._generate()  # type: ignore[assignment]

    @property
    def offset(self) -> int:
        """The byte offset of the next record's header in the (uncompressed) stream."""
        return self._base + self._pos

    def __iter__(self) -> Iterator[bytes]:
        return self._records

    def __next__(self) -> bytes:
        return next(self._records)

    def close(self) -> None:
        """Ends iteration and closes the file if the reader opened it."""
        self._records.close()
        self._release()

    def __enter__(self) -> TFRecordReader:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def views(self) -> Iterator[memoryview]:
        """The records as memoryviews of the reader's buffers instead of ``bytes`` copies: an
        iterator to take in place of the reader before any record is read.

        A view keeps its buffer (about 1 MiB of the stream) alive: decode it and let it go, do not
        collect many. Buffers come from the accelerator's pool when it is built, so a reader that
        views its records reuses memory that is already paged in rather than copying each record.
        """
        if self.index or self._started:
            raise TfrGenError(f"{self.path}: views() must be taken before any record is read")
        self._records.close()
        self._records = self._generate(True)  # type: ignore[assignment]
        return self._records  # type: ignore[return-value]

    def batches(
        self, size: int = _READ_CHUNK, views: bool = False, spans: bool = False
    ) -> Iterator[Sequence[bytes]]:
        """The records in lists, one list per stretch of the stream the reader holds (about
        ``size`` bytes, 1 MiB by default, read at once): an iterator to take in place of the
        reader before any record is read, for callers that work on many records at once. With
        ``views``, the records are memoryviews of the reader's buffers, as :meth:`views` gives
        them (typed ``bytes``: every decoder takes any buffer). With ``spans`` (the accelerator's
        only), each list is a ``Spans`` of the buffer instead: no object per record until one is
        asked for, and ``scan_batch`` decodes them in place.

        After each list, :attr:`index` counts the records of all lists so far, :attr:`offset`
        is just past the list's last record and :attr:`batch_offset` is the offset of its first
        record's header (the list's frames lie one after the other between the two: its records
        hold ``offset - batch_offset - 16 * len(records)`` bytes); errors and skipped stretches are
        as for single records.
        """
        if self.index or self._started:
            raise TfrGenError(f"{self.path}: batches() must be taken before any record is read")
        if size < 1:
            raise ValueError(f"size must be positive, got {size}")
        if spans and framing.FRAMES.scan_spans is None:
            raise ValueError("batches(spans=True) needs the C accelerator")
        self._records.close()
        self._read_size = size
        batches = self._generate_batches(views, spans)
        self._records = batches  # type: ignore[assignment]  # close() ends it
        return batches

    def _generate_batches(self, views: bool, spans: bool) -> Generator[Sequence[bytes], None, None]:
        """The records a list (or Spans) at a time: every whole, valid frame of the current
        buffer in one call; the first one that is not goes to :meth:`_advance`."""
        self._started = True
        verify = self._verify
        scan_frames, scan_spans = framing.FRAMES.scan_frames, framing.FRAMES.scan_spans
        records: Sequence[Record]
        try:
            while True:
                if spans and scan_spans is not None:
                    records, stop = scan_spans(self._buf, self._pos, verify)
                else:
                    records, stop = scan_frames(self._buf, self._pos, verify, views)
                if self._max_record is not None and len(self._buf) - self._pos > self._max_record:
                    records, stop = self._within_limit(records, self._pos, stop)
                self.batch_offset = self._base + self._pos
                self._pos = stop
                if records:
                    self.index += len(records)
                    yield records  # type: ignore[misc]  # views stand in for bytes
                if not self._advance():
                    if self._stream_error is not None:
                        self._report(self.offset, 0, self._stream_error)
                    return
        finally:
            self._release()

    def _generate(self, views: bool = False) -> Generator[Record, None, None]:
        """The records: every whole, valid frame of the current buffer is checked and sliced in
        one call; the first one that is not goes to :meth:`_advance`."""
        self._started = True
        verify = self._verify
        scan = framing.FRAMES.scan_frames
        records: Sequence[Record]
        try:
            while True:
                pos = self._pos
                records, stop = scan(self._buf, pos, verify, views)
                if self._max_record is not None and len(self._buf) - pos > self._max_record:
                    records, stop = self._within_limit(records, pos, stop)
                for data in records:
                    # Literal numbers: this runs per record. Index and offset are exact at each
                    # yield (callers locate a record from them).
                    pos += len(data) + 16
                    self._pos = pos
                    self.index += 1
                    yield data
                self._pos = stop
                if not self._advance():
                    if self._stream_error is not None:
                        self._report(self.offset, 0, self._stream_error)
                    return
        finally:
            self._release()

    def _release(self) -> None:
        """Stops the source's worker threads, if any, and closes the file if the reader opened it:
        when iteration ends, fails, or is closed."""
        if isinstance(self._source, MemberInflater | InflatingAhead):
            self._source.close()
        if self._owns_file:
            self._file.close()

    def _within_limit(
        self, records: Sequence[Record], pos: int, stop: int
    ) -> tuple[Sequence[Record], int]:
        """The records scanned from ``pos`` to ``stop`` up to the first one larger than
        ``max_record_bytes`` (which :meth:`_advance` then refuses), and where they stop.

        Called only when the buffer holds more than ``max_record_bytes`` after ``pos``, as no
        record in it can be larger otherwise: the check costs nothing on the usual path."""
        limit = self._max_record
        assert limit is not None
        for i, data in enumerate(records):
            if len(data) > limit:
                return records[:i], pos + sum(len(r) + FRAMING for r in records[:i])
        return records, stop

    def _advance(self) -> bool:
        """Deals with the record at the current position, which the inner loop could not take.

        Reads more data, or raises for (or skips) a corrupt or truncated record. Returns False at
        the end of the stream.
        """
        available = self._fill(HEADER_SIZE)
        if available == 0:
            return False
        if available < HEADER_SIZE:
            return self._fail(
                f"truncated header: the file ends {available} bytes into a 12-byte record header"
            )
        length, stored = HEADER.unpack_from(self._buf, self._pos)
        if self._verify:
            computed = masked_crc(self._buf[self._pos : self._pos + 8])
            if computed != stored:
                return self._fail(
                    f"corrupt length CRC: stored {stored:#010x}, computed {computed:#010x}",
                    resync=True,
                )
        if self._max_record is not None and length > self._max_record:
            return self._fail(
                f"the record header declares {length} bytes of data, more than max_record_bytes"
                f" ({self._max_record})",
                resync=True,
            )
        needed = FRAMING + length
        available = self._fill(needed)
        if available < needed:
            return self._fail(
                f"truncated record: the file ends {available} bytes into a record that declares "
                f"{length} bytes of data ({needed} bytes with its framing)"
            )
        if self._verify:
            stored, computed = self._data_crcs(length)
            if computed != stored:
                return self._fail(
                    f"corrupt data CRC of a {length}-byte record: stored {stored:#010x}, "
                    f"computed {computed:#010x}",
                    resync=True,
                )
        return True

    def _data_crcs(self, length: int) -> tuple[int, int]:
        """The stored and computed data CRC of the ``length``-byte record at the current position.

        The buffer must hold the whole record.
        """
        start = self._pos + HEADER_SIZE
        stored: int = U32.unpack_from(self._buf, start + length)[0]
        return stored, masked_crc(self._buf[start : start + length])

    def _fill(self, needed: int) -> int:
        """Reads until ``needed`` bytes follow the current position or the stream ends.

        Returns how many bytes follow it. Keeps only the bytes from the current position on.
        Reads are bounded, so a huge ``needed`` costs at most the data actually present.
        """
        buf, pos = self._buf, self._pos
        available = len(buf) - pos
        if available >= needed or self._eof:
            return available
        if os.getpid() != self._pid:
            raise TfrGenError(
                f"{self.path}: this reader was opened in process {self._pid} and is read in process"
                f" {os.getpid()} after fork(): the processes share its file position, so neither"
                " would read the file whole; open a reader in each process"
            )
        if not available and isinstance(self._source, MemberInflater):
            # The inflater's bytes become the buffer when it hands them over (no copy).
            piece = self._source.take()
            if piece is not None:
                self._base += pos
                self._buf, self._pos = piece, 0
                if not piece:
                    self._eof = True
                if len(piece) >= needed or not piece:
                    return len(piece)
                buf, pos, available = piece, 0, len(piece)
        # A new buffer (from the accelerator's pool, when it is built) starts with the bytes kept;
        # it doubles when the stream fills it, so it is never much larger than the data read (a
        # declared length costs nothing until the data is there).
        view = memoryview(new_buffer(available + self._read_size))
        view[:available] = buf[pos:]
        while available < needed:
            if available == len(view):
                size = min(available + min(available, _MAX_READ), needed)
                grown = memoryview(new_buffer(size))
                grown[:available] = view[:available]
                view = grown
            try:
                count = self._source.readinto(view[available:])
            except CompressedStreamError as exc:
                if not self._skip:
                    raise DataError(
                        f"{exc}{self._where}", path=self.path, index=self.index, offset=self.offset
                    ) from None
                self._stream_error = str(exc)
                count = 0
            if not count:
                self._eof = True
                break
            available += count
        self._base += pos
        self._buf = view[:available]
        self._pos = 0
        return available

    def _fail(self, reason: str, *, resync: bool = False) -> bool:
        """Raises DataError for the record at the current position, or skips it.

        Skipping a corrupt CRC (``resync``) scans for the next valid record and returns whether one
        was found; skipping a truncated record passes over the rest of the stream and returns False.
        """
        if not self._skip:
            raise DataError(
                f"{reason}{self._where}", path=self.path, index=self.index, offset=self.offset
            )
        if resync:
            return self._resync(self.offset, reason)
        rest = len(self._buf) - self._pos
        self._report(self.offset, rest, reason)
        self._pos += rest
        return False

    def _resync(self, start: int, reason: str) -> bool:
        """Moves to the first valid record after stream offset ``start``, or to the end.

        Reports the bytes passed over as one span and returns whether a record was found. Header
        CRCs are checked for a block of positions at a time; only positions whose header CRC is
        valid (candidates) have their record's data CRC checked, from running CRCs.
        """
        first = start + 1
        state = self._resync_state
        if state is None:
            state = self._resync_state = Resync(anchor=first, cursor=first, frontier=first)
        else:
            state.restart(first)
        while True:
            if not state.candidates:
                if not self._scan_block(state):
                    end = self._base + len(self._buf)
                    self._report(start, end - start, reason)
                    self._pos = len(self._buf)
                    return False
                continue
            at, length = state.candidates.popleft()
            state.forget_before(at + HEADER_SIZE)
            if self._checks_out(state, at, length):
                self._report(start, at - start, reason)
                self._pos = at - self._base
                return True

    def _keep_from(self, position: int) -> None:
        """Makes the buffer keep the stream from ``position`` on (at or after the buffer's
        start)."""
        self._pos = position - self._base

    def _scan_block(self, state: Resync) -> bool:
        """Checks the header CRCs of the next block of positions, adding the candidates; False
        when no position is left that could hold a header."""
        keep, end = state.next_block()
        self._keep_from(keep)
        available = self._fill(end - self.offset)
        return state.scan_block(self._buf, self._base, self.offset + available)

    def _checks_out(self, state: Resync, at: int, length: int) -> bool:
        """Whether the candidate at ``at`` declaring ``length`` bytes is whole and its data CRC
        valid."""
        self._keep_from(min(state.cursor, at))
        needed = at + HEADER_SIZE + length + 4 - self.offset
        if self._fill(needed) < needed:
            return False  # truncated
        return state.checks_out(self._buf, self._base, at, length)

    def _report(self, offset: int, length: int, reason: str) -> None:
        """Counts a skipped span and hands it to ``on_skip``."""
        self.skipped_spans += 1
        self.skipped_bytes += length
        if self._on_skip is not None:
            self._on_skip(SkippedSpan(self.path, offset, length, f"{reason}{self._where}"))


def read_tfrecord(
    path: PathLike | BinaryIO,
    *,
    compression: CompressionArg = "auto",
    verify_crc: bool = True,
    on_error: OnError = "raise",
    max_record_bytes: int | None = DEFAULT_MAX_RECORD_BYTES,
    storage_options: StorageOptions | None = None,
) -> Iterator[bytes]:
    """The records of the TFRecord file at ``path`` (a path, a URL read with ``storage_options``,
    or an open binary file object; see :class:`TFRecordReader`).

    The file is opened when iteration starts and closed when it ends or the iterator is dropped;
    a file that cannot be opened raises :class:`~codegen.errors.TfrGenError` naming it.
    """
    check_max_record_bytes(max_record_bytes)
    with _open_reader(
        path,
        compression=compression,
        verify_crc=verify_crc,
        on_error=on_error,
        max_record_bytes=max_record_bytes,
        storage_options=storage_options,
    ) as reader:
        for records in reader.batches():  # a buffer's records at a time: no per-record upkeep
            yield from records


def _open_reader(path: PathLike | BinaryIO, **options: Any) -> TFRecordReader:
    """A :class:`TFRecordReader` of the file ``path``; :class:`TfrGenError` naming the file if it
    cannot be opened."""
    try:
        return TFRecordReader(path, **options)
    except OSError as exc:
        name = os.fspath(path) if isinstance(path, str | os.PathLike) else stream_name(path)
        raise TfrGenError(f"{name}: cannot read the file: {exc.strerror or exc}") from None


def read_decoded(
    path: PathLike | BinaryIO,
    decode: Callable[[bytes], T],
    *,
    compression: CompressionArg = "auto",
    on_error: OnError = "raise",
    on_skip: OnSkip | None = None,
    max_record_bytes: int | None = DEFAULT_MAX_RECORD_BYTES,
    storage_options: StorageOptions | None = None,
) -> Iterator[T]:
    """Decode every record of a TFRecord file (a path, a URL read with ``storage_options``, or an
    open binary file object); a record that does not decode is reported with its file position.

    ``on_error="skip"`` skips corrupt or truncated stretches of the file and records whose CRCs
    pass but which do not decode (a :class:`~codegen.runtime.io.skips.SkippedRecord`), each handed
    to ``on_skip`` (logged as a warning without it), instead of raising :class:`DataError`.
    """
    on_error = check_on_error(on_error, on_skip, "read_tfrecord")
    check_max_record_bytes(max_record_bytes)
    report = SkipReporter(on_skip, _log) if on_error == "skip" else None
    with _open_reader(
        path,
        compression=compression,
        on_error=on_error,
        on_skip=report,
        max_record_bytes=max_record_bytes,
        storage_options=storage_options,
    ) as reader:
        name = reader.path
        for data in reader:
            try:
                record = decode(data)
            except RecordError as exc:
                # The record's header starts 12 bytes before its data; 4 CRC bytes follow the data.
                offset = reader.offset - len(data) - FRAMING
                if report is None:
                    raise DataError(
                        str(exc), path=name, index=reader.index - 1, offset=offset
                    ) from exc
                report(SkippedRecord(name, offset, len(data) + FRAMING, str(exc), reader.index - 1))
                continue
            yield record
