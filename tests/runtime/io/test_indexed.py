"""Random access to records by position (:class:`IndexedReader`, :class:`IndexedRecords`): with an
index file (``write_index``), stale or damaged ones, and without one."""

from __future__ import annotations

import os
import re
import struct
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codegen.errors import DataError, RecordError, TfrGenError
from codegen.runtime.io.indexed import (
    IndexedReader,
    IndexedRecords,
    IndexInfo,
    index_bytes,
    read_index,
    scan_offsets,
    write_index,
)
from codegen.runtime.io.reader import read_tfrecord
from codegen.runtime.io.writer import write_tfrecord
from support.framing import SOME_RECORDS, flip_byte, frame, frame_offsets
from support.modules import generated_module
from support.tutorial import customer_records, tf_customers, tf_write


@pytest.fixture
def data(tmp_path: Path) -> Path:
    path = tmp_path / "r.tfrecord"
    write_tfrecord(path, SOME_RECORDS)
    return path


def test_reader_uses_the_index_and_checks_every_record(data: Path) -> None:
    write_index(data)
    with IndexedReader(data) as reader:
        assert reader.index_path == f"{data}.index"
        assert len(reader) == 5
        assert [reader[i] for i in range(5)] == SOME_RECORDS
        assert reader[-1] == b"last" and reader[-5] == b""
        assert list(reader) == SOME_RECORDS
        for bad in (5, -6, 100):
            with pytest.raises(IndexError, match=f"record index {bad} out of range for 5 records"):
                reader[bad]


def test_without_an_index_file_the_offsets_come_from_a_scan(data: Path) -> None:
    with IndexedReader(data) as reader:
        assert reader.index_path is None
        assert reader[3] == SOME_RECORDS[3]


def test_a_stale_default_index_is_rebuilt_and_an_explicit_one_refused(data: Path) -> None:
    write_index(data)
    write_tfrecord(data, SOME_RECORDS + [b"appended"])
    with IndexedReader(data) as reader:
        assert reader.index_path is None and len(reader) == 6 and reader[5] == b"appended"
    size = sum(len(r) + 16 for r in SOME_RECORDS)
    with pytest.raises(TfrGenError) as caught:
        IndexedReader(data, index=f"{data}.index")
    message = str(caught.value)
    assert message.startswith(f"{data}.index: stale index of {data}: it was built for {size} bytes")
    assert f"the file now has {size + 24} bytes" in message
    assert message.endswith(f"; rebuild it with 'tfr-gen index {data}'")


def test_damaged_index_files_are_refused_with_the_reason(data: Path) -> None:
    index = data.parent / "r.tfrecord.index"
    write_index(data)
    good = index.read_bytes()
    cases = {
        b"NOTINDEX" + good[8:]: "not a tfr-gen index file",
        good[:8] + struct.pack("<I", 2) + good[12:]: "index format version 2",
        good[:-8]: "truncated or damaged index: 72 bytes for 5 records (expected 80)",
        good[:-1] + b"\x01": "damaged index: its checksum does not match",
    }
    for content, message in cases.items():
        index.write_bytes(content)
        with pytest.raises(TfrGenError, match=re.escape(message)):
            read_index(index)
        with IndexedReader(data) as reader:  # the default index is ignored: scanned instead
            assert reader.index_path is None and reader[4] == b"last"
    info = scan_offsets(data)
    info.offsets[2] = 1
    index.write_bytes(index_bytes(info))
    with pytest.raises(TfrGenError, match=f"its offsets do not fit a {info.size}-byte file"):
        read_index(index)


def test_corrupt_records_raise_data_error_with_their_position(data: Path) -> None:
    write_index(data)
    offsets = frame_offsets(SOME_RECORDS)
    stat = os.stat(data)
    flip_byte(data, offsets[2] + 20)
    flip_byte(data, offsets[3] + 9)
    os.utime(data, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # keep the index current
    with IndexedReader(data) as reader:
        assert reader.index_path is not None and reader[1] == b"a"
        with pytest.raises(
            DataError, match=f"record 2 at byte offset {offsets[2]}: corrupt data CRC of a 200-byte"
        ):
            reader[2]
        with pytest.raises(
            DataError, match=f"record 3 at byte offset {offsets[3]}: corrupt length CRC"
        ):
            reader[-2]


def test_a_file_cut_short_after_indexing_reports_truncation(data: Path) -> None:
    write_index(data)
    stat = os.stat(data)
    offsets = frame_offsets(SOME_RECORDS)
    data.write_bytes(data.read_bytes()[: offsets[4] + 14])
    os.utime(data, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    with pytest.raises(TfrGenError, match="stale index"):
        IndexedReader(data, index=f"{data}.index")


def test_records_of_tensorflow_and_generated_files_decode_by_position(
    tf: Any, tmp_path: Path
) -> None:
    customer = generated_module("customer")
    tf_write(tf, tmp_path / "tf.tfrecord", tf_customers(tf))
    records = customer_records()
    customer.Customer.write_tfrecord(tmp_path / "ours.tfrecord", records)
    for name in ("tf.tfrecord", "ours.tfrecord"):
        write_index(tmp_path / name)
        with IndexedRecords(tmp_path / name, customer.Customer.decode) as decoded:
            assert len(decoded) == 3 and decoded.reader.index_path is not None
            assert decoded[-1] == records[2] and list(decoded) == records
    with IndexedRecords(tmp_path / "tf.tfrecord", generated_module("mnist").Digit.decode) as digits:
        with pytest.raises(
            DataError, match="record 1 at byte offset [0-9]+: Digit.label"
        ) as caught:
            digits[1]
        assert isinstance(caught.value.__cause__, RecordError)


def test_reads_from_several_threads_agree(data: Path) -> None:
    with IndexedReader(data) as reader:
        results: list[list[bytes]] = []

        def work() -> None:
            results.append([reader[i % 5] for i in range(200)])

        threads = [threading.Thread(target=work) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert results == [[SOME_RECORDS[i % 5] for i in range(200)]] * 4


@settings(max_examples=40, deadline=None)
@given(st.lists(st.binary(max_size=300), max_size=20), st.data())
def test_any_file_reads_back_by_position(
    tmp_path_factory: pytest.TempPathFactory, records: list[bytes], draw: st.DataObject
) -> None:
    path = tmp_path_factory.mktemp("h") / "h.tfrecord"
    write_tfrecord(path, records)
    assert list(read_tfrecord(path)) == records
    write_index(path)
    with IndexedReader(path) as reader:
        assert len(reader) == len(records)
        if records:
            i = draw.draw(st.integers(-len(records), len(records) - 1))
            assert reader[i] == records[i]


def test_records_are_sliced_and_iterated_like_a_list(tmp_path: Path) -> None:
    customer = generated_module("customer").Customer
    customers = [
        customer(
            age=20 + i, movie=["m"], movie_ratings=[1.0], suggestion="s", suggestion_purchased=0.0
        )
        for i in range(20)
    ]
    customer.write_tfrecord(tmp_path / "c.tfrecord", customers)
    with customer.indexed(tmp_path / "c.tfrecord") as records:
        assert records[10:13] == customers[10:13]
        assert records[-3:] == customers[-3:]
        assert records[::7] == customers[::7]
        assert records[13:10] == []
        assert list(records) == customers
        with pytest.raises(TypeError, match=r"an int or a slice \(records\[10:13\]\), not by str"):
            records["3"]
    with IndexedReader(tmp_path / "c.tfrecord") as reader:
        assert reader[1:3] == [c.encode() for c in customers[1:3]]


def _lying_index(path: Path, offsets: list[int]) -> Path:
    """An index of ``path`` with a valid checksum and the file's real size and time, but the
    given ``offsets``."""
    stat = os.stat(path)
    index = path.parent / (path.name + ".index")
    info = IndexInfo(np.array(offsets, np.uint64), stat.st_size, stat.st_mtime_ns)
    index.write_bytes(index_bytes(info))
    return index


def test_an_index_that_drops_records_is_refused_as_records_are_read(tmp_path: Path) -> None:
    path = tmp_path / "r.tfrecord"
    records = [b"record %d" % i for i in range(6)]
    write_tfrecord(path, records)
    offsets = frame_offsets(records)
    index = _lying_index(path, offsets[::2])
    with IndexedReader(path, index=index) as reader:
        assert len(reader) == 3
        with pytest.raises(DataError, match="the index does not match the file") as first:
            reader[0]
        assert (first.value.index, first.value.offset) == (0, 0)
        assert "does not end where the index puts record 1" in str(first.value)
        with pytest.raises(DataError, match="record 1 does not end where the index puts record 2"):
            reader[2]
        with pytest.raises(DataError, match="index does not match"):
            list(reader)


def test_an_index_pointing_at_a_record_hidden_in_another_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "r.tfrecord"
    hidden = b"forged"
    records = [b"first", b"x" * 7 + frame(hidden) + b"y" * 9, b"last"]
    write_tfrecord(path, records)
    offsets = frame_offsets(records)
    inside = offsets[1] + 12 + 7  # the hidden frame in record 1's data
    index = _lying_index(path, [offsets[0], offsets[1], inside, offsets[2]])
    with IndexedReader(path, index=index) as reader:
        assert reader[0] == b"first"
        for i in (1, 2):
            with pytest.raises(DataError, match="the index does not match the file"):
                reader[i]
    tail = _lying_index(path, [offsets[0], inside])  # the hidden frame as the last record
    with IndexedReader(path, index=tail) as reader:
        with pytest.raises(DataError, match="does not end where the index puts record 1"):
            reader[0]
        with pytest.raises(DataError, match="record 0 does not end where the index puts record 1"):
            reader[1]
