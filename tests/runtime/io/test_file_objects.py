"""Readers of one file take an open binary file object as well as a path: ``read_tfrecord`` and
``TFRecordReader`` (compression detected from the object's bytes), ``indexed`` (random access by
seek and read, its index found by a scan or given), an ``io.BytesIO`` and a file fsspec opened alike;
a text-mode file or an object that is no file is a ``TypeError`` saying so."""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any

import fsspec
import numpy as np
import pytest

from codegen.errors import DataError, TfrGenError
from codegen.runtime.io.indexed import IndexedReader, write_index
from codegen.runtime.io.reader import TFRecordReader, read_tfrecord
from codegen.runtime.io.writer import write_tfrecord
from support.modules import generated_module

Digit = generated_module("mnist").Digit
RECORDS = [bytes([i]) * (i * 7 + 1) for i in range(40)]


def digits(count: int) -> list[Any]:
    return [Digit(label=i, image=np.full(784, i, dtype=np.int64)) for i in range(count)]


@pytest.mark.parametrize("suffix", [".tfrecord", ".tfrecord.gz", ".tfrecord.zlib"])
@pytest.mark.parametrize("opener", ["bytesio", "fsspec"])
def test_readers_detect_the_compression_of_a_file_object(
    tmp_path: Path, suffix: str, opener: str
) -> None:
    path = tmp_path / f"x{suffix}"
    write_tfrecord(path, RECORDS)
    if opener == "bytesio":
        file: Any = io.BytesIO(path.read_bytes())
    else:
        file = fsspec.open(f"file://{path}", "rb").open()
    with file:
        assert list(read_tfrecord(file)) == RECORDS
        file.seek(0)
        with TFRecordReader(file) as reader:
            assert list(reader) == RECORDS
            assert (
                reader.compression
                == {"": None, ".gz": "gzip", ".zlib": "zlib"}[path.suffix.replace(".tfrecord", "")]
            )
        assert not file.closed  # the caller's file stays open


def test_a_declared_compression_the_file_object_contradicts_is_an_error(tmp_path: Path) -> None:
    write_tfrecord(tmp_path / "x.tfrecord.gz", RECORDS)
    with open(tmp_path / "x.tfrecord.gz", "rb") as file:
        with pytest.raises(TfrGenError, match="gzip-compressed; pass compression='gzip'"):
            list(read_tfrecord(file, compression=None))


@pytest.mark.parametrize("opener", ["bytesio", "fsspec", "open"])
def test_indexed_reads_a_file_object_by_seek_and_read(tmp_path: Path, opener: str) -> None:
    path = tmp_path / "digits.tfrecord"
    records = digits(30)
    Digit.write_tfrecord(path, records)
    file: Any
    if opener == "bytesio":
        file = io.BytesIO(path.read_bytes())
    elif opener == "fsspec":
        file = fsspec.open(f"file://{path}", "rb").open()
    else:
        file = open(path, "rb")
    with file:
        file.read(5)  # a position of the caller's: records are at offsets from the first byte
        with Digit.indexed(file) as found:
            assert len(found) == 30 and found.reader.index_path is None  # found by a scan
            assert found[17] == records[17] and found[-1] == records[-1]
            assert found[3:6] == records[3:6]
            assert list(found) == records
        assert not file.closed


def test_indexed_takes_the_index_of_a_file_object(tmp_path: Path) -> None:
    path = tmp_path / "x.tfrecord"
    write_tfrecord(path, RECORDS)
    write_index(path)
    with open(path, "rb") as file, IndexedReader(file, index=f"{path}.index") as reader:
        assert reader.index_path == f"{path}.index"
        assert reader[25] == RECORDS[25] and len(reader) == 40
    grown = io.BytesIO(path.read_bytes() + path.read_bytes()[:16])
    with pytest.raises(TfrGenError, match="stale index of <stream>: it was built for"):
        IndexedReader(grown, index=f"{path}.index")


def test_indexed_checks_the_records_of_a_file_object(tmp_path: Path) -> None:
    path = tmp_path / "x.tfrecord"
    write_tfrecord(path, RECORDS)
    data = bytearray(path.read_bytes())
    with IndexedReader(io.BytesIO(bytes(data))) as reader:
        offset = reader.offset(10)
    data[offset + 16] ^= 0xFF  # the record's first data byte
    with pytest.raises(DataError, match=f"<stream>: record 10 at byte offset {offset}: corrupt"):
        IndexedReader(io.BytesIO(bytes(data)))  # the scan reads every record
    write_index(path)
    with IndexedReader(io.BytesIO(bytes(data)), index=f"{path}.index") as reader:
        assert reader[9] == RECORDS[9]
        with pytest.raises(
            DataError, match=f"<stream>: record 10 at byte offset {offset}: corrupt"
        ):
            reader[10]


def test_indexed_refuses_a_compressed_file_object(tmp_path: Path) -> None:
    write_tfrecord(tmp_path / "x.tfrecord.gz", RECORDS)
    with open(tmp_path / "x.tfrecord.gz", "rb") as file:
        with pytest.raises(TfrGenError, match="a gzip-compressed file cannot be indexed"):
            IndexedReader(file)
        assert not file.closed


def test_indexed_needs_a_file_object_that_can_seek(tmp_path: Path) -> None:
    write_tfrecord(tmp_path / "x.tfrecord", RECORDS)
    read, write = os.pipe()
    with open(read, "rb") as pipe, open(write, "wb") as sink:
        sink.write((tmp_path / "x.tfrecord").read_bytes()[:100])
        with pytest.raises(TypeError, match="cannot seek; random access needs a seekable binary"):
            IndexedReader(pipe)


def test_a_text_mode_file_is_a_type_error_saying_so(tmp_path: Path) -> None:
    path = tmp_path / "x.tfrecord"
    write_tfrecord(path, RECORDS)
    expected = f"{path} is a text-mode file; open it in binary mode"
    with open(path, encoding="latin-1") as text:
        with pytest.raises(TypeError, match=f"TFRecordReader: {expected}"):
            list(read_tfrecord(text))  # type: ignore[arg-type]
        with pytest.raises(TypeError, match=f"IndexedReader: {expected}"):
            Digit.indexed(text)
    with fsspec.open(f"file://{path}", "r", encoding="latin-1") as text:
        with pytest.raises(TypeError, match="is a text-mode file; open it in binary mode"):
            TFRecordReader(text)
    with pytest.raises(TypeError, match="expects a path, a URL or a binary file object, got int"):
        TFRecordReader(3)  # type: ignore[arg-type]
