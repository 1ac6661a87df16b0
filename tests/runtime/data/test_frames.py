"""``Record.scan_polars``: a lazy polars source that decodes only the columns a query uses and stops reading
once a row limit is met."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from codegen.errors import DataError
from codegen.runtime.codec import wire
from codegen.runtime.io.writer import write_tfrecord
from support.modules import generated_module

Customer: Any = generated_module("customer").Customer


def _records(count: int) -> list[Any]:
    return [
        Customer(
            age=i,
            movie=["m"] * (i % 3),
            movie_ratings=[1.5] * (i % 3),
            suggestion="odd" if i % 2 else "even",
            suggestion_purchased=0.25,
        )
        for i in range(count)
    ]


def _with_bad_movie(record: Any) -> bytes:
    """The record with its ``Movie`` feature as an int64 list, which the schema refuses."""
    features = {
        key: value for key, value in wire.parse_example(record.encode()).items() if key != b"Movie"
    }
    features[b"Movie"] = (3, b"\x0a\x01\x07")
    entries = [
        wire.map_entry(wire.key_field(key.decode()), bytes((kind << 3 | 2, len(body))) + body)
        for key, (kind, body) in sorted(features.items())
    ]
    return wire.example(entries)


def test_a_scan_gives_the_batches_columns(pl: Any, tmp_path: Path) -> None:
    records = _records(10)
    Customer.write_tfrecord(tmp_path / "a.tfrecord", records[:7])
    Customer.write_tfrecord(tmp_path / "b.tfrecord", records[7:])
    frame = Customer.scan_polars(str(tmp_path / "*.tfrecord"), batch_size=3).collect()
    expected = Customer.decode_batch([r.encode() for r in records]).to_polars()
    assert frame.equals(expected)
    odd = (
        Customer.scan_polars(str(tmp_path / "*.tfrecord"))
        .filter(pl.col("suggestion") == "odd")
        .select("age")
        .collect()
    )
    assert odd["age"].to_list() == [1, 3, 5, 7, 9]


def test_only_the_columns_asked_for_are_decoded(pl: Any, tmp_path: Path) -> None:
    records = _records(6)
    data = [r.encode() for r in records]
    data[4] = _with_bad_movie(records[4])
    write_tfrecord(tmp_path / "c.tfrecord", data)
    scan = Customer.scan_polars(str(tmp_path / "c.tfrecord"), batch_size=2)
    assert scan.select("age", "suggestion").collect()["age"].to_list() == list(range(6))
    with pytest.raises(DataError, match=r"c.tfrecord: record 4 at byte offset \d+: Customer.movie"):
        scan.collect()


def test_a_row_limit_stops_the_reading(pl: Any, tmp_path: Path) -> None:
    records = _records(9)
    data = [r.encode() for r in records]
    data[7] = b"\xff\xff not an Example"
    write_tfrecord(tmp_path / "d.tfrecord", data)
    scan = Customer.scan_polars(str(tmp_path / "d.tfrecord"), batch_size=3)
    assert scan.head(5).collect()["age"].to_list() == [0, 1, 2, 3, 4]
    with pytest.raises(DataError, match="d.tfrecord: record 7 at byte offset"):
        scan.collect()
