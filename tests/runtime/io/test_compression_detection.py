"""Compression detected from the data when reading, and chosen by the name when writing: every
combination of actual format, declared compression and file name."""

from __future__ import annotations

import io
import struct
from pathlib import Path

import pytest

from codegen.errors import TfrGenError
from codegen.runtime.io.compression import (
    Compression,
    CompressionArg,
    check_declared,
    detect_compression,
    resolve_compression,
)
from codegen.runtime.io.reader import TFRecordReader, read_tfrecord
from codegen.runtime.io.writer import TFRecordWriter, write_tfrecord
from support.framing import SOME_RECORDS, masked_crc

ACTUAL: list[Compression] = [None, "gzip", "zlib"]
DECLARED: list[CompressionArg] = ["auto", None, "gzip", "zlib"]
NAMES = ["x.tfrecord", "x.tfrecord.gz", "x.zlib", "x.zz"]

FALSE_ZLIB_LENGTH = 262520
"""A record length whose 8 length bytes start ``78 01`` (a valid zlib header) and go on as deflate
data that inflates without error: only the length CRC tells the plain framing apart."""


def stream(records: list[bytes], compression: Compression) -> bytes:
    out = io.BytesIO()
    with TFRecordWriter(out, compression=compression) as writer:
        writer.write_many(records)
    return out.getvalue()


def describe(compression: CompressionArg) -> str:
    return "uncompressed" if compression is None else f"{compression}-compressed"


def mismatch(actual: Compression) -> str:
    """The start of the error for a declared compression the data contradicts."""
    return f"this file is {describe(actual)}; pass compression={actual!r} or 'auto'"


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("declared", DECLARED)
@pytest.mark.parametrize("actual", ACTUAL)
def test_readers_go_by_the_data_not_the_name(
    tmp_path: Path, actual: Compression, declared: CompressionArg, name: str
) -> None:
    path = tmp_path / name
    path.write_bytes(stream(SOME_RECORDS, actual))
    if declared in ("auto", actual):
        assert list(read_tfrecord(path, compression=declared)) == SOME_RECORDS
        with TFRecordReader(path, compression=declared) as reader:
            assert reader.compression == actual
            assert list(reader) == SOME_RECORDS
        with path.open("rb") as file:
            assert list(TFRecordReader(file, compression=declared)) == SOME_RECORDS
    else:
        with pytest.raises(TfrGenError) as caught:
            list(read_tfrecord(path, compression=declared))
        assert str(caught.value) == (
            f"{path}: record 0 at byte offset 0: {mismatch(actual)}"
            f" (it was read as {describe(declared)})"
        )
        with path.open("rb") as file, pytest.raises(TfrGenError, match=mismatch(actual)):
            TFRecordReader(file, compression=declared)


def test_auto_is_the_default_of_every_reader(tmp_path: Path) -> None:
    path = tmp_path / "gzip-named-plain.tfrecord"
    path.write_bytes(stream(SOME_RECORDS, "gzip"))
    assert list(read_tfrecord(path)) == SOME_RECORDS
    assert list(TFRecordReader(path)) == SOME_RECORDS
    assert list(TFRecordReader(io.BytesIO(path.read_bytes()))) == SOME_RECORDS


def test_a_non_seekable_stream_is_detected_and_read_whole() -> None:
    class Pipe(io.RawIOBase):
        def __init__(self, data: bytes) -> None:
            self._data = io.BytesIO(data)

        def readable(self) -> bool:
            return True

        def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
            data = self._data.read(min(len(buffer), 5))  # short reads, as a pipe gives them
            buffer[: len(data)] = data
            return len(data)

    for actual in ACTUAL:
        reader = TFRecordReader(Pipe(stream(SOME_RECORDS, actual)))  # type: ignore[arg-type]
        assert reader.compression == actual
        assert list(reader) == SOME_RECORDS


def test_plain_data_that_starts_like_a_zlib_header_reads_as_plain(tmp_path: Path) -> None:
    length = struct.pack("<Q", FALSE_ZLIB_LENGTH)
    head = length + struct.pack("<I", masked_crc(length))
    assert head[:2] == b"\x78\x01" and (0x78 << 8 | 0x01) % 31 == 0
    assert detect_compression(head) is None  # the length CRC holds: plain framing
    damaged = head[:8] + bytes(4)
    assert detect_compression(damaged) == "zlib"  # the same bytes without a valid length CRC
    records = [bytes(FALSE_ZLIB_LENGTH), b"after"]
    path = tmp_path / "plain.tfrecord"
    write_tfrecord(path, records)
    assert path.read_bytes()[:2] == b"\x78\x01"
    assert list(read_tfrecord(path)) == records
    assert list(read_tfrecord(path, compression=None)) == records
    with pytest.raises(TfrGenError, match=mismatch(None)):
        read_tfrecord(path, compression="zlib").__next__()


@pytest.mark.parametrize("actual", ACTUAL)
def test_detection_from_the_first_bytes(actual: Compression) -> None:
    assert detect_compression(stream([b"x" * 40], actual)[:12]) == actual
    assert detect_compression(b"") is None
    assert check_declared("gzip", b"", "f") == "gzip"  # an empty file has any compression


def test_a_corrupt_compressed_header_is_reported_as_a_corrupt_stream() -> None:
    data = bytearray(stream(SOME_RECORDS, "gzip"))
    data[0] ^= 0xFF  # neither a gzip header nor plain framing any more
    with pytest.raises(TfrGenError, match="corrupt gzip stream"):
        list(TFRecordReader(io.BytesIO(bytes(data)), compression="gzip"))


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("declared", DECLARED)
def test_writers_go_by_the_name_and_refuse_a_contradiction(
    tmp_path: Path, declared: CompressionArg, name: str
) -> None:
    implied: Compression = {".tfrecord": None, ".gz": "gzip", ".zlib": "zlib", ".zz": "zlib"}[
        Path(name).suffix
    ]
    path = tmp_path / name
    if declared == "auto" or declared == implied or implied is None:
        expected = implied if declared == "auto" else declared
        assert write_tfrecord(path, SOME_RECORDS, compression=declared) == len(SOME_RECORDS)
        assert detect_compression(path.read_bytes()[:12]) == expected
        assert list(read_tfrecord(path)) == SOME_RECORDS
    else:
        suffix = Path(name).suffix
        with pytest.raises(TfrGenError) as caught:
            write_tfrecord(path, SOME_RECORDS, compression=declared)
        assert str(caught.value) == (
            f"{path}: the name ends in {suffix!r}, which says {implied}-compressed, but"
            f" compression={declared!r}; pass compression={implied!r} or 'auto',"
            " or name the file without that suffix"
        )
        assert not path.exists()


def test_writers_default_to_auto(tmp_path: Path) -> None:
    for name, expected in [("a.tfrecord.GZ", "gzip"), ("b.zz", "zlib"), ("c.tfrecord", None)]:
        write_tfrecord(tmp_path / name, [b"r"])
        with TFRecordWriter(tmp_path / ("w-" + name)) as writer:
            writer.write(b"r")
        for written in (name, "w-" + name):
            assert detect_compression((tmp_path / written).read_bytes()[:12]) == expected
    assert resolve_compression(None, "auto") is None  # a file object: uncompressed
