"""ReadAhead: a file's bytes fetched ahead in a background thread, unchanged and in order, within
its memory budget; FilesAhead: files fetched one after the other."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO, cast

import pytest

from codegen.runtime.io.prefetch import FilesAhead, ReadAhead
from codegen.runtime.io.reader import TFRecordReader
from codegen.runtime.io.writer import write_tfrecord


def file_parts(path: Path, size: int) -> Iterator[bytes]:
    """The bytes of the file at ``path`` in parts of ``size``."""
    with path.open("rb") as file:
        while part := file.read(size):
            yield part


def _threads() -> set[str]:
    return {t.name for t in threading.enumerate() if t.name.startswith("tfr-gen read-ahead")}


def test_read_ahead_gives_the_file_bytes_in_order(tmp_path: Path) -> None:
    data = bytes(range(256)) * 1000
    path = tmp_path / "x.bin"
    path.write_bytes(data)
    with ReadAhead(lambda: file_parts(path, 1000), str(path), depth=3) as ahead:
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
    with ReadAhead(lambda: file_parts(path, 4096), str(path)) as ahead:
        with TFRecordReader(cast("BinaryIO", ahead)) as reader:
            assert reader.path == str(path)
            assert list(reader) == records


def test_an_error_of_the_fetch_is_raised_after_the_bytes_before_it(tmp_path: Path) -> None:
    def failing() -> Iterator[bytes]:
        yield b"a" * 10
        yield b"a" * 10
        raise ConnectionResetError("connection reset by the store")

    with ReadAhead(failing, "s3://b/x") as ahead:
        assert ahead.read(20) == b"a" * 20
        with pytest.raises(ConnectionResetError, match="reset by the store"):
            ahead.read(1)


def test_a_file_that_cannot_be_opened_fails_the_first_read(tmp_path: Path) -> None:
    def missing() -> Iterator[bytes]:
        return file_parts(tmp_path / "missing", 10)

    with ReadAhead(missing, "missing") as ahead, pytest.raises(FileNotFoundError):
        ahead.read(1)


def test_closing_early_stops_the_thread(tmp_path: Path) -> None:
    path = tmp_path / "x.bin"
    path.write_bytes(b"z" * 1_000_000)
    ahead = ReadAhead(lambda: file_parts(path, 1000), "x", depth=2)
    assert ahead.read(5) == b"zzzzz"
    assert ahead.running  # two blocks wait to be read: the thread waits to queue the third
    ahead.close()
    assert not ahead.running and not _threads()
    assert ahead.read(5) == b""


class Counted:
    """Parts of ``size`` bytes, ``count`` of them, counting how many were asked for."""

    def __init__(self, count: int, size: int, fill: int = 0) -> None:
        self.count, self.size, self.fill = count, size, fill
        self.made = 0
        self.done = threading.Event()

    def __call__(self) -> Iterator[bytes]:
        for _ in range(self.count):
            self.made += 1
            yield bytes([self.fill]) * self.size
        self.done.set()


def settle() -> None:
    """Gives the fetch thread time to fetch all it may."""
    time.sleep(0.15)


def test_memory_stays_within_the_budget_whatever_the_file_size() -> None:
    depth, size = 2, 1000
    source = Counted(200, size)
    with ReadAhead(source, "big", depth=depth) as ahead:
        settle()
        assert source.made == depth + 1  # the queue is full and one more part waits to be queued
        buffer = bytearray(size)
        read = 0
        while count := ahead.readinto(buffer):
            read += count
            if read % (20 * size) == 0:
                settle()
                taken = read // size
                # depth parts queued, one waiting to be queued (the part being read is taken)
                assert taken + depth + 1 >= source.made >= min(200, taken + depth)
        assert read == 200 * size


def test_chained_files_are_fetched_one_after_the_other() -> None:
    first, second = Counted(2, 100, fill=1), Counted(3, 100, fill=2)
    sources = {0: first, 1: second}
    ahead = FilesAhead([0, 1], sources.get, str, chained=True)
    try:
        one = ahead.take(0)
        assert one is not None
        settle()
        assert second.made == 0  # the second waits for the first's last part
        assert one.read(100) == b"\x01" * 100
        assert first.done.wait(5)
        settle()
        assert second.made == 2  # fetched as soon as the first's parts had all arrived (one part
        # queued, one waiting to be)
        assert one.read() == b"\x01" * 100
        two = ahead.take(1)
        assert two is not None and two.read() == b"\x02" * 300
    finally:
        ahead.close()
    assert not _threads()


def test_a_file_passed_over_does_not_hold_up_the_next() -> None:
    sources = {k: Counted(50, 100, fill=k) for k in range(3)}
    ahead = FilesAhead([0, 1, 2], sources.get, str, chained=True)
    try:
        zero = ahead.take(0)
        assert zero is not None and len(zero.read()) == 5000
        two = ahead.take(2)  # file 1 is not read: its fetch stops, file 2's goes on
        assert two is not None and two.read() == b"\x02" * 5000
    finally:
        ahead.close()
    assert not _threads()
