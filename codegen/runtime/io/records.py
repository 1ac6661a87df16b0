"""Record-level helpers shared by every generated record class: equality, protobuf interop, file reading."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator
from typing import Literal, TypeVar

from codegen.errors import DataError, RecordError
from codegen.runtime.io.skips import FRAMING, SkippedRecord, SkipReporter, check_on_error
from codegen.runtime.io.tfrecord import (
    Compression,
    OnError,
    SkippedSpan,
    TFRecordReader,
    resolve_compression,
)

_log = logging.getLogger(__name__)
"""Where skipped pieces go without an ``on_skip`` callback."""

T = TypeVar("T")

PathLike = str | os.PathLike[str]
"""A file path argument."""

CompressionArg = Compression | Literal["auto"]
"""``None``, ``"gzip"``, ``"zlib"``, or ``"auto"`` (by the path's ``.gz``/``.zlib`` suffix)."""


def read_decoded(
    path: PathLike,
    decode: Callable[[bytes], T],
    *,
    compression: CompressionArg = None,
    on_error: OnError = "raise",
    on_skip: Callable[[SkippedSpan], None] | None = None,
) -> Iterator[T]:
    """Decode every record of a TFRecord file; a record that does not decode is reported with its file position.

    ``on_error="skip"`` skips corrupt or truncated stretches of the file and records whose CRCs pass but which do not
    decode (a :class:`~codegen.runtime.io.skips.SkippedRecord`), each handed to ``on_skip`` (logged as a warning without
    it), instead of raising :class:`DataError`.
    """
    on_error = check_on_error(on_error, on_skip, "read_tfrecord")
    resolved = resolve_compression(path, compression)
    report = SkipReporter(on_skip, _log) if on_error == "skip" else None
    with TFRecordReader(path, compression=resolved, on_error=on_error, on_skip=report) as reader:
        for data in reader:
            try:
                record = decode(data)
            except RecordError as exc:
                # The record's header starts 12 bytes before its data; 4 CRC bytes follow the data.
                offset = reader.offset - len(data) - FRAMING
                if report is None:
                    raise DataError(
                        str(exc), path=os.fspath(path), index=reader.index - 1, offset=offset
                    ) from exc
                report(
                    SkippedRecord(
                        os.fspath(path), offset, len(data) + FRAMING, str(exc), reader.index - 1
                    )
                )
                continue
            yield record
