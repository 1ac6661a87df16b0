"""ReadAhead: a file's bytes fetched ahead in a background thread, unchanged and in order."""

from __future__ import annotations

import io
import threading
from pathlib import Path
from typing import BinaryIO, cast

import pytest

from codegen.runtime.io.prefetch import ReadAhead
from codegen.runtime.io.reader import TFRecordReader
from codegen.runtime.io.writer import write_tfrecord


def _threads() -> set[str]:
    return {t.name for t in threading.enumerate() if t.name.startswith("tfr-gen read-ahead")}


def test_read_ahead_gives_the_file_bytes_in_order(tmp_path: Path) -> None:
    data = bytes(range(256)) * 1000
    path = tmp_path / "x.bin"
    path.write_bytes(data)
    with ReadAhead(lambda: path.open("rb"), str(path), block_size=1000, depth=3) as ahead:
        parts = [ahead.read(7), ahead.read(3000)]
        buffer = bytearray(50_000)
        while count := ahead.readinto(buffer):
            parts.append(bytes(buffer[:count]))
        assert ahead.read(10) == b""
    assert b"".join(parts) == data
    assert not _threads()


def test_records_read_through_read_ahead_equal_the_file_read_directly(tmp_path: Path) -> None:
    path = tmp_path / "r.tfrecord"
    records = [bytes([i % 251]) * (i * 37 % 5000) for i in range(400)]
    write_tfrecord(path, records, compression=None)
    with ReadAhead(lambda: path.open("rb"), str(path), block_size=4096) as ahead:
        with TFRecordReader(cast("BinaryIO", ahead)) as reader:
            assert reader.path == str(path)
            assert list(reader) == records


def test_an_error_of_the_fetch_is_raised_after_the_bytes_before_it(tmp_path: Path) -> None:
    class Failing(io.BytesIO):
        def read(self, size: int | None = -1) -> bytes:
            if self.tell() >= 20:
                raise ConnectionResetError("connection reset by the store")
            return super().read(size)

    with ReadAhead(lambda: Failing(b"a" * 100), "s3://b/x", block_size=10) as ahead:
        assert ahead.read(20) == b"a" * 20
        with pytest.raises(ConnectionResetError, match="reset by the store"):
            ahead.read(1)


def test_a_file_that_cannot_be_opened_fails_the_first_read(tmp_path: Path) -> None:
    def missing() -> BinaryIO:
        return (tmp_path / "missing").open("rb")

    with ReadAhead(missing, "missing") as ahead, pytest.raises(FileNotFoundError):
        ahead.read(1)


def test_closing_early_stops_the_thread(tmp_path: Path) -> None:
    path = tmp_path / "x.bin"
    path.write_bytes(b"z" * 1_000_000)
    ahead = ReadAhead(lambda: path.open("rb"), "x", block_size=1000, depth=2)
    assert ahead.read(5) == b"zzzzz"
    assert ahead.running  # two blocks wait to be read: the thread waits to queue the third
    ahead.close()
    assert not ahead.running and not _threads()
    assert ahead.read(5) == b""
