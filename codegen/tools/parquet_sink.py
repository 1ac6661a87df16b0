"""Writing Parquet while the next batch decodes: :class:`ParquetSink`, and the writer options that suit a record's
columns (:func:`writer_options`).

``tfr-gen convert`` decodes TFRecord batches on the calling thread and hands finished row groups to a
:class:`ParquetSink`, whose thread writes them (pyarrow releases the GIL while it encodes and compresses), so
decoding and writing overlap once a file has more than one row group. The queue between them holds at most
:data:`QUEUED` row groups: memory stays bounded by a few row groups. An error of the writing thread is raised on
the calling thread at its next :meth:`~ParquetSink.write` or at :meth:`~ParquetSink.close`; the thread always ends
before ``close`` returns, whatever happened.

Dictionary encoding pays for strings, bytes and narrow integers (at most 16 bits: few distinct values, and Parquet
stores them as 32-bit integers without it); on floats and wider integers (measurements, embeddings, ids) it
mostly costs time for a dictionary that overflows its page and falls back to plain encoding anyway, so those
columns are written plain. Statistics are kept: they are cheap and let readers skip row groups.
"""

from __future__ import annotations

import queue
import threading
from typing import Any

from codegen.tools.parquet_layout import LAYOUT

__all__ = ["QUEUED", "ParquetSink", "dictionary_columns", "statistics_columns", "writer_options"]

QUEUED = 1
"""Row groups waiting for the writing thread at most (one more is being written, one more being gathered)."""

_DONE = object()


class ParquetSink:
    """Writes tables to a ``pyarrow.parquet.ParquetWriter`` on a thread of its own.

    :meth:`write` queues a table (waiting while :data:`QUEUED` tables wait); :meth:`close` waits for the queued
    tables to be written and the thread to end, then raises the first error the thread met; :meth:`stop` (for a
    caller that is failing already) waits the same and raises nothing. Neither closes the ``ParquetWriter``: its
    owner does, after them.
    """

    def __init__(self, writer: Any) -> None:
        self._writer = writer
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=QUEUED)
        self._error: BaseException | None = None
        self._closed = False
        self._thread = threading.Thread(
            target=self._run, name="tfr-gen parquet writer", daemon=True
        )
        self._thread.start()

    def _run(self) -> None:
        while True:
            table = self._queue.get()
            if table is _DONE:
                return
            if self._error is not None:
                continue  # drain what was queued before the caller saw the error
            try:
                self._writer.write_table(table)
            except BaseException as exc:  # noqa: BLE001  (raised on the calling thread)
                self._error = exc

    def write(self, table: Any) -> None:
        """Queue ``table`` for writing (an earlier table's error is raised here)."""
        if self._closed:
            raise ValueError("ParquetSink.write: the sink is closed")
        self._raise()
        self._queue.put(table)

    def close(self) -> None:
        """Wait for every queued table and the thread's end; raise the first error writing met."""
        self.stop()
        self._raise()

    def stop(self) -> None:
        """Wait for every queued table and the thread's end (again: nothing to do)."""
        if not self._closed:
            self._closed = True
            self._queue.put(_DONE)
            self._thread.join()

    def _raise(self) -> None:
        error = self._error
        if error is not None:
            raise error


def dictionary_columns(pa: Any, schema: Any) -> list[str]:
    """The Parquet column paths of ``schema``'s leaves that dictionary encoding pays for: strings, bytes and
    integers of at most 16 bits (paths as pyarrow names them: ``list.element`` for a list level), but not the
    binary values of a field with a ``tfr.layout`` (encoded images and byte tensors: each value its own)."""
    paths: list[str] = []

    def walk(kind: Any, path: str) -> None:
        if pa.types.is_struct(kind):
            for index in range(kind.num_fields):
                child = kind.field(index)
                walk(child.type, f"{path}.{child.name}")
        elif (
            pa.types.is_list(kind)
            or pa.types.is_large_list(kind)
            or pa.types.is_fixed_size_list(kind)
        ):
            walk(kind.value_type, f"{path}.list.element")
        elif (
            pa.types.is_string(kind)
            or pa.types.is_binary(kind)
            or (pa.types.is_integer(kind) and kind.bit_width <= 16)
        ):
            paths.append(path)

    for field in schema:
        if not _laid_out(field):
            walk(field.type, field.name)
    return paths


def _laid_out(field: Any) -> bool:
    """Whether ``field`` holds encoded images or byte tensors (see :mod:`codegen.tools.parquet_layout`)."""
    return bool(field.metadata) and LAYOUT in field.metadata


def statistics_columns(pa: Any, schema: Any) -> list[str] | bool:
    """The fields whose Parquet columns keep statistics: all but those of encoded images and byte tensors, whose
    minimum and maximum (whole images compared byte by byte) tell a reader nothing (``True``: all)."""
    kept = [field.name for field in schema if not _laid_out(field)]
    return True if len(kept) == len(schema) else kept


def writer_options(pa: Any, schema: Any) -> dict[str, Any]:
    """``ParquetWriter`` options for a record's columns (see the module docstring)."""
    return {
        "use_dictionary": dictionary_columns(pa, schema) or False,
        "write_statistics": statistics_columns(pa, schema),
    }
