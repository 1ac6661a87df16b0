"""Parquet written on a thread of its own while batches decode: row groups in order, errors raised on the caller,
the thread ended on every path and nothing left behind; dictionary encoding only on the columns it pays for."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from codegen.tools import convert as convert_tool
from codegen.tools.convert import Converter, tfrecord_to_parquet
from codegen.tools.parquet_sink import ParquetSink, dictionary_columns, statistics_columns
from support.modules import generated_module
from support.paths import SCHEMAS


def _writer_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "tfr-gen parquet writer"]


class _Writer:
    """Records the tables written; fails on the write numbered ``fail_at`` (from 0)."""

    def __init__(self, fail_at: int | None = None) -> None:
        self.tables: list[Any] = []
        self.fail_at = fail_at
        self.release = threading.Event()
        self.release.set()

    def write_table(self, table: Any) -> None:
        self.release.wait()
        if len(self.tables) == self.fail_at:
            self.tables.append(None)
            raise OSError("No space left on device")
        self.tables.append(table)


def test_tables_are_written_in_order_and_the_thread_ends() -> None:
    writer = _Writer()
    sink = ParquetSink(writer)
    for number in range(5):
        sink.write(number)
    sink.close()
    assert writer.tables == [0, 1, 2, 3, 4]
    assert _writer_threads() == []
    sink.close()  # again: nothing to do
    with pytest.raises(ValueError, match="the sink is closed"):
        sink.write(5)


def test_an_error_of_the_writing_thread_is_raised_on_the_caller() -> None:
    writer = _Writer(fail_at=1)
    sink = ParquetSink(writer)
    sink.write("a")
    sink.write("b")  # fails on the thread
    with pytest.raises(OSError, match="No space left"):
        for table in ("c", "d", "e", "f"):  # raised at a later write (or at close)
            sink.write(table)
        sink.close()
    sink.stop()
    assert writer.tables[:2] == ["a", None]  # nothing written after the failure
    assert _writer_threads() == []
    with pytest.raises(OSError, match="No space left"):
        sink.close()


def test_stop_waits_for_the_queue_without_raising() -> None:
    writer = _Writer(fail_at=0)
    writer.release.clear()  # the thread waits inside its first write
    sink = ParquetSink(writer)
    sink.write("a")
    sink.write("b")  # queued while "a" is being written
    writer.release.set()
    sink.stop()
    assert writer.tables == [None]
    assert _writer_threads() == []


def test_dictionary_encoding_only_where_it_pays(pa: Any, pq: Any, tmp_path: Path) -> None:
    customer: Any = generated_module("customer")
    raw: Any = generated_module("raw_image")
    assert dictionary_columns(pa, customer.Customer.arrow_schema()) == [
        "movie.list.element",
        "suggestion",
    ]  # not the int64 age nor the float32 ratings and prices
    assert dictionary_columns(pa, raw.RawImage.arrow_schema()) == ["image.data.list.element"]
    records = [
        customer.Customer(
            age=i,
            movie=["a", "b"],
            movie_ratings=[1.0, 2.0],
            suggestion="s",
            suggestion_purchased=0.5,
        )
        for i in range(50)
    ]
    customer.Customer.write_tfrecord(tmp_path / "c.tfrecord", records)
    converter = Converter(str(SCHEMAS / "customer.yaml"), "Customer")
    tfrecord_to_parquet(converter, [str(tmp_path / "c.tfrecord")], str(tmp_path / "c.parquet"))
    meta = pq.ParquetFile(tmp_path / "c.parquet").metadata.row_group(0)
    dictionary = {
        meta.column(i).path_in_schema
        for i in range(meta.num_columns)
        if any("DICTIONARY" in encoding for encoding in meta.column(i).encodings)
    }
    assert dictionary == {"movie.list.element", "suggestion"}
    assert all(meta.column(i).statistics is not None for i in range(meta.num_columns))


def test_byte_tensors_and_images_get_no_dictionary_and_no_statistics(
    pa: Any, pq: Any, tmp_path: Path
) -> None:
    """Each value of a byte tensor or an encoded image is its own (a dictionary would only grow), and their
    minimum and maximum say nothing: their columns are written plain and without statistics."""
    raw: Any = generated_module("raw_image")
    rng = np.random.default_rng(1)
    records = [
        raw.RawImage(label=i, image=rng.integers(0, 4, (2, 3, 3), dtype=np.uint8))
        for i in range(40)
    ]
    raw.RawImage.write_tfrecord(tmp_path / "r.tfrecord", records)
    converter = Converter(str(SCHEMAS / "raw_image.yaml"), "RawImage")
    schema = converter.parquet_schema(pa)
    assert dictionary_columns(pa, schema) == []
    assert statistics_columns(pa, schema) == ["label"]
    tfrecord_to_parquet(converter, [str(tmp_path / "r.tfrecord")], str(tmp_path / "r.parquet"))
    meta = pq.ParquetFile(tmp_path / "r.parquet").metadata.row_group(0)
    columns = {meta.column(i).path_in_schema: meta.column(i) for i in range(meta.num_columns)}
    assert set(columns) == {"label", "image.shape.list.element", "image.data"}
    assert not any("DICTIONARY" in e for e in columns["image.data"].encodings)
    assert columns["label"].is_stats_set and not columns["image.data"].is_stats_set


def _files(module: Any, records: list[Any], directory: Path) -> list[str]:
    """The records in 5 files (a batch each for the converter: row groups of a few batches)."""
    paths = [str(directory / f"c{k}.tfrecord") for k in range(5)]
    for k, path in enumerate(paths):
        module.Customer.write_tfrecord(path, records[k * 60 : (k + 1) * 60])
    return paths


def test_row_groups_written_by_the_thread_read_back_whole(
    pq: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    customer: Any = generated_module("customer")
    records = [
        customer.Customer(
            age=i,
            movie=["m"] * (i % 4),
            movie_ratings=[0.5] * (i % 4),
            suggestion=str(i),
            suggestion_purchased=1.0,
        )
        for i in range(300)
    ]
    source = _files(customer, records, tmp_path)
    monkeypatch.setattr(convert_tool, "ROW_GROUP_ROWS", 64)
    converter = Converter(str(SCHEMAS / "customer.yaml"), "Customer")
    done = tfrecord_to_parquet(converter, source, str(tmp_path / "c.parquet"))
    assert done.records == 300
    assert pq.ParquetFile(tmp_path / "c.parquet").metadata.num_row_groups > 1
    back = customer.CustomerBatch.from_arrow(pq.read_table(tmp_path / "c.parquet"))
    assert back.records() == records
    assert _writer_threads() == []


def test_a_failed_write_leaves_no_output_and_no_thread(
    pq: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    customer: Any = generated_module("customer")
    records = [
        customer.Customer(
            age=i, movie=[], movie_ratings=[], suggestion="s", suggestion_purchased=0.0
        )
        for i in range(300)
    ]
    source = _files(customer, records, tmp_path)
    monkeypatch.setattr(convert_tool, "ROW_GROUP_ROWS", 64)
    written = []

    def failing(self: Any, table: Any, row_group_size: Any = None) -> None:
        written.append(table.num_rows)
        if len(written) == 2:
            raise OSError("No space left on device")

    monkeypatch.setattr(pq.ParquetWriter, "write_table", failing)
    converter = Converter(str(SCHEMAS / "customer.yaml"), "Customer")
    with pytest.raises(OSError, match="No space left"):
        tfrecord_to_parquet(converter, source, str(tmp_path / "c.parquet"))
    assert sorted(p.name for p in tmp_path.iterdir()) == [f"c{k}.tfrecord" for k in range(5)]
    assert len(written) == 2  # the thread wrote nothing after its error
    assert _writer_threads() == []
