"""Reading the records of many TFRecord files in one pass, for the data tools.

:func:`expand_inputs` turns command-line arguments (files or glob patterns) into files;
:class:`Scanner` yields every readable record of them with its file, index and byte offset, passes
over corrupt or truncated stretches (reporting each one) or raises for them, counts what it read
and drives a :class:`~codegen.tools.progress.Progress` bar. Compression is detected per file from
its first bytes, unless a compression is declared (which the data must not contradict).
"""

from __future__ import annotations

import glob
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import TextIO

from codegen.errors import TfrGenError
from codegen.runtime.io.compression import CompressionArg
from codegen.runtime.io.files import file_size, open_input
from codegen.runtime.io.reader import DEFAULT_MAX_RECORD_BYTES, TFRecordReader
from codegen.runtime.io.skips import OnError, SkippedSpan
from codegen.runtime.io.urls import StorageOptions, filesystem, is_url, local_path
from codegen.runtime.io.urls import glob as glob_urls
from codegen.tools.progress import Progress

__all__ = ["ScannedRecord", "Scanner", "expand_inputs"]

BATCH_BYTES = 2 << 20
"""About the bytes of a file :meth:`Scanner.batches` reads into one batch: work on a batch costs
per call as well as per record, and larger batches gain little more while their columns reach the
sizes the accelerator's buffer pool keeps."""


def expand_inputs(
    arguments: Sequence[str], storage_options: StorageOptions | None = None
) -> list[str]:
    """The files named by ``arguments``: existing paths as given, others as glob patterns.

    Each argument is a local path or a URL of an fsspec store (see
    :mod:`codegen.runtime.io.urls`; a ``file://`` URL is the local path it names), opened with
    ``storage_options`` (without them, fsspec's configuration applies:
    ``FSSPEC_<PROTOCOL>_<OPTION>`` environment variables). ``**`` in a pattern recurses; each
    pattern's matches are sorted; a file named twice is read once. :class:`TfrGenError` for a
    pattern that matches no file, or for a directory.
    """
    files: list[str] = []
    for argument in arguments:
        if is_url(argument):
            matches = _url_matches(argument, storage_options)
            if matches is None:
                raise TfrGenError(
                    f"{argument}: is a directory; give TFRecord files or a pattern such as"
                    f" '{argument.rstrip('/')}/*'"
                )
        elif os.path.exists(local_path(argument)):
            matches = [local_path(argument)]
        else:
            pattern = local_path(argument)
            matches = sorted(p for p in glob.glob(pattern, recursive=True) if not os.path.isdir(p))
        if not matches:
            raise TfrGenError(f"{argument}: no such file, and no file matches it as a pattern")
        for path in matches:
            if not is_url(path) and os.path.isdir(path):
                raise TfrGenError(
                    f"{path}: is a directory; give TFRecord files or a pattern such as '{path}/*'"
                )
            if path not in files:
                files.append(path)
    return files


def _url_matches(url: str, storage_options: StorageOptions | None) -> list[str] | None:
    """The files a URL names: itself if it is a file, its glob's matches if it has wildcards,
    ``None`` for a directory."""
    fs, path = filesystem(url, storage_options)
    if fs.isfile(path):
        return [url]
    if glob.has_magic(path):
        return glob_urls(url, storage_options)
    return None if fs.isdir(path) else []


@dataclass(frozen=True, slots=True)
class ScannedRecord:
    """One record read by a :class:`Scanner`: its file, index in the file, offset and data.

    ``index`` counts the records read before it in the file (corrupt stretches passed over are not
    records); ``offset`` is the byte offset of its header in the uncompressed record stream.
    """

    path: str
    index: int
    offset: int
    data: bytes


@dataclass(frozen=True, slots=True)
class ScannedBatch:
    """Consecutive records of one file read by :meth:`Scanner.batches`: ``records[i]`` is the
    record ``index + i`` of ``path``, and the first one's header is at byte ``offset``;
    ``size`` is the records' bytes (``-1``: not counted)."""

    path: str
    index: int
    offset: int
    records: Sequence[bytes]
    size: int = -1

    def __len__(self) -> int:
        return len(self.records)

    def offsets(self) -> list[int]:
        """The byte offset of each record's header (12 header bytes, data, 4 CRC bytes each)."""
        positions = [self.offset]
        for data in self.records[:-1]:
            positions.append(positions[-1] + len(data) + 16)
        return positions

    def item(self, i: int) -> ScannedRecord:
        """Record ``i`` of the batch, with its position."""
        offset = self.offset + sum(len(data) + 16 for data in self.records[:i])
        return ScannedRecord(self.path, self.index + i, offset, self.records[i])

    def __iter__(self) -> Iterator[ScannedRecord]:
        path, index = self.path, self.index
        for i, (offset, data) in enumerate(zip(self.offsets(), self.records, strict=True)):
            yield ScannedRecord(path, index + i, offset, data)


class Scanner:
    """Iterates over the records of ``paths`` in order, reading each file once: record by record
    (iterating the scanner) or a list at a time (:meth:`batches`, for work on many records at
    once).

    A corrupt or truncated stretch of a file is passed over (the reader's skip mode, the default:
    ``validate`` and ``infer`` report such stretches as findings) and handed to ``on_skip`` with the
    number of records read before it in its file; with ``on_error="raise"`` it raises
    :class:`~codegen.errors.DataError` instead. ``limit`` stops after that many records in all;
    ``max_record_bytes`` is the largest record read (see
    :class:`~codegen.runtime.io.reader.TFRecordReader`).
    The counters (``files``, ``records``, ``record_bytes``, ``skipped_spans``, ``skipped_bytes``,
    and ``file_records``: records per file started) describe what was read so far, also after an
    interruption (a batch counts once it is handed out).

    ``compression`` is that of every file (``"auto"``: detected per file); ``storage_options`` go
    to the fsspec store of files named by URL.

    With a ``progress`` stream that is a terminal, a progress bar labelled ``label`` is drawn on it
    while records are read; leaving the scanner's ``with`` block erases it.
    """

    def __init__(
        self,
        paths: Sequence[str],
        *,
        on_skip: Callable[[SkippedSpan, int], None] | None = None,
        on_error: OnError = "skip",
        progress: TextIO | None = None,
        label: str = "scan",
        limit: int | None = None,
        max_record_bytes: int | None = DEFAULT_MAX_RECORD_BYTES,
        compression: CompressionArg = "auto",
        storage_options: StorageOptions | None = None,
    ) -> None:
        self.paths = tuple(paths)
        self.compression: CompressionArg = compression
        self.storage_options = storage_options
        self.sizes = tuple(file_size(path, storage_options=storage_options) for path in self.paths)
        self.total_bytes = sum(self.sizes)
        self.on_skip = on_skip
        self.on_error = on_error
        self.progress = (
            None if progress is None else Progress(progress, self.total_bytes, label=label)
        )
        self.limit = limit
        self.max_record_bytes = max_record_bytes
        self.files = 0
        self.file_records: list[int] = []
        self.records = 0
        self.record_bytes = 0
        self.skipped_spans = 0
        self.skipped_bytes = 0

    def __enter__(self) -> Scanner:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.clear_progress()

    def clear_progress(self) -> None:
        """Erase the progress bar, if one is drawn (before other output goes to the terminal)."""
        if self.progress is not None:
            self.progress.clear()

    def _skipped(self, span: SkippedSpan) -> None:
        self.skipped_spans += 1
        self.skipped_bytes += span.length
        if self.on_skip is not None:
            self.on_skip(span, self.file_records[-1])

    def _read(self) -> Iterator[ScannedBatch]:
        """The batches of every file, in order; counts the files, and the records as the caller
        takes them (:meth:`_count`), up to ``limit``."""
        done = 0
        progress = self.progress
        for path, file_bytes in zip(self.paths, self.sizes, strict=True):
            if self.limit is not None and self.records >= self.limit:
                return
            self.files += 1
            self.file_records.append(0)
            with (
                open_input(path, buffered=True, storage_options=self.storage_options) as file,
                TFRecordReader(
                    file,
                    compression=self.compression,
                    on_error=self.on_error,
                    on_skip=self._skipped if self.on_error == "skip" else None,
                    max_record_bytes=self.max_record_bytes,
                ) as reader,
            ):
                for records in reader.batches(BATCH_BYTES):
                    first = reader.index - len(records)
                    offset = reader.batch_offset
                    size = reader.offset - offset - 16 * len(records)
                    if self.limit is not None and self.records + len(records) > self.limit:
                        records = records[: self.limit - self.records]
                        size = sum(map(len, records))
                    yield ScannedBatch(path, first, offset, records, size)
                    if progress is not None:
                        progress.update(done + file.tell(), self.records)
                    if self.limit is not None and self.records >= self.limit:
                        return
            done += file_bytes
            if progress is not None:
                progress.update(done, self.records)

    def _count(self, records: int, size: int) -> None:
        self.records += records
        self.file_records[-1] += records
        self.record_bytes += size

    def batches(self) -> Iterator[ScannedBatch]:
        """The records of every file, a list at a time (one per buffer the reader fills, about
        ``BATCH_BYTES`` of the stream), in order; each batch is counted as it is handed out."""
        for batch in self._read():
            self._count(len(batch.records), batch.size)
            yield batch

    def __iter__(self) -> Iterator[ScannedRecord]:
        for batch in self._read():
            for item in batch:
                self._count(1, len(item.data))
                yield item
