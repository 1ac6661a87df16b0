"""Record-level helpers shared by every generated record class: equality, protobuf interop, file reading."""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterator
from typing import Any, Literal, Protocol, TypeVar

import numpy as np

from codegen.errors import DataError, RecordError
from codegen.runtime.skips import FRAMING, SkippedRecord, SkipReporter, check_on_error
from codegen.runtime.tfrecord import (
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

ExampleMessage = Any
"""A ``tensorflow.Example`` protobuf message (its class is built at run time, so it is typed loosely)."""

SequenceExampleMessage = Any
"""A ``tensorflow.SequenceExample`` protobuf message (typed loosely, like :data:`ExampleMessage`)."""


class ProtoMessage(Protocol):
    """Any protobuf message object: what ``from_proto`` accepts."""

    def SerializeToString(self, **kwargs: Any) -> bytes: ...  # noqa: N802 - protobuf's method name


def arrays_equal(a: np.ndarray[Any, Any] | None, b: np.ndarray[Any, Any] | None) -> bool:
    """Whether two optional arrays hold the same shape and values (``None`` equals only ``None``)."""
    if a is None or b is None:
        return a is b
    return a.shape == b.shape and bool(np.array_equal(a, b))


def values_equal(a: object, b: object) -> bool:
    """Deep equality of nested lists/tuples of arrays, scalars and strings; arrays compare by shape and values."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and arrays_equal(a, b)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(values_equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def message_bytes(message: ProtoMessage, full_name: str) -> bytes:
    """The serialized bytes of ``message``, after checking it is a ``full_name`` message (from any descriptor pool)."""
    descriptor = getattr(message, "DESCRIPTOR", None)
    got = getattr(descriptor, "full_name", type(message).__name__)
    if got != full_name:
        raise RecordError(f"expected a {full_name} protobuf message, got {got}")
    return message.SerializeToString()


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
    decode (a :class:`~codegen.runtime.skips.SkippedRecord`), each handed to ``on_skip`` (logged as a warning without
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
