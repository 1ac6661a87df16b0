"""TFRecord files agree with TensorFlow's writer and reader, in both directions."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from codegen.errors import DataError
from codegen.runtime.io.compression import Compression, Deflate, use_deflate
from codegen.runtime.io.members import MEMBER_HEADER_SIZE, member_size
from codegen.runtime.io.reader import TFRecordReader, read_tfrecord
from codegen.runtime.io.writer import write_tfrecord

# (our compression, TensorFlow's compression_type, file suffix)
KINDS: list[tuple[Compression, str, str]] = [
    (None, "", ".tfrecord"),
    ("gzip", "GZIP", ".tfrecord.gz"),
    ("zlib", "ZLIB", ".tfrecord.zlib"),
]
KIND_IDS = ["none", "gzip", "zlib"]


def sample_records() -> list[bytes]:
    """Empty, small and large records (one larger than a read chunk)."""
    rng = random.Random(7)
    records = [rng.randbytes(rng.choice([0, 1, 50, 3000])) for _ in range(500)]
    records.insert(250, rng.randbytes(3 << 20))
    return records


def tf_write(tf: Any, path: Path, records: list[bytes], compression_type: str) -> None:
    options = tf.io.TFRecordOptions(compression_type=compression_type)
    with tf.io.TFRecordWriter(str(path), options) as writer:
        for record in records:
            writer.write(record)


def tf_read(tf: Any, path: Path, compression_type: str) -> list[bytes]:
    dataset = tf.data.TFRecordDataset(str(path), compression_type=compression_type)
    return [bytes(tensor.numpy()) for tensor in dataset]


DEFLATES: list[Deflate] = ["isal", "zlib"]  # ISA-L (the default) and the standard library


@pytest.mark.parametrize("deflate", DEFLATES)
@pytest.mark.parametrize(("compression", "tf_type", "suffix"), KINDS, ids=KIND_IDS)
def test_we_read_tensorflow_files(
    tf: Any, tmp_path: Path, compression: Compression, tf_type: str, suffix: str, deflate: Deflate
) -> None:
    use_deflate(deflate)
    records = sample_records()
    path = tmp_path / f"tf{suffix}"
    tf_write(tf, path, records, tf_type)
    assert list(read_tfrecord(path, compression=compression)) == records
    assert list(read_tfrecord(path)) == records  # "auto": detected
    plain_name = tmp_path / "tf-any-compression.tfrecord"  # as many TensorFlow users name them
    tf_write(tf, plain_name, records, tf_type)
    assert list(read_tfrecord(plain_name)) == records


@pytest.mark.parametrize("deflate", DEFLATES)
@pytest.mark.parametrize(("compression", "tf_type", "suffix"), KINDS, ids=KIND_IDS)
def test_tensorflow_reads_our_files(
    tf: Any, tmp_path: Path, compression: Compression, tf_type: str, suffix: str, deflate: Deflate
) -> None:
    use_deflate(deflate)
    records = sample_records()
    path = tmp_path / f"ours{suffix}"
    write_tfrecord(path, records, compression=compression)
    assert tf_read(tf, path, tf_type) == records


@pytest.mark.parametrize("deflate", DEFLATES)
def test_tensorflow_reads_our_gzip_files_of_sized_members(
    tf: Any, tmp_path: Path, deflate: Deflate
) -> None:
    use_deflate(deflate)
    rng = random.Random(8)
    records = [rng.randbytes(rng.randrange(40_000)) for _ in range(200)]
    path = tmp_path / "ours.tfrecord.gz"
    write_tfrecord(path, records)
    data, members, start = path.read_bytes(), 0, 0
    while start < len(data):
        size = member_size(data[start : start + MEMBER_HEADER_SIZE])
        assert size is not None
        start, members = start + size, members + 1
    assert members >= 3
    assert tf_read(tf, path, "GZIP") == records
    write_tfrecord(tmp_path / "empty.tfrecord.gz", [])
    assert tf_read(tf, tmp_path / "empty.tfrecord.gz", "GZIP") == []


def test_uncompressed_files_are_byte_identical(tf: Any, tmp_path: Path) -> None:
    records = sample_records()
    write_tfrecord(tmp_path / "ours.tfrecord", records)
    tf_write(tf, tmp_path / "tf.tfrecord", records, "")
    assert (tmp_path / "ours.tfrecord").read_bytes() == (tmp_path / "tf.tfrecord").read_bytes()


def test_concatenated_gzip_files_read_alike(tf: Any, tmp_path: Path) -> None:
    write_tfrecord(tmp_path / "a.gz", [b"one", b"two"])
    tf_write(tf, tmp_path / "b.gz", [b"three"], "GZIP")
    both = tmp_path / "both.gz"
    both.write_bytes((tmp_path / "a.gz").read_bytes() + (tmp_path / "b.gz").read_bytes())
    assert list(read_tfrecord(both)) == tf_read(tf, both, "GZIP") == [b"one", b"two", b"three"]


def _flip(data: bytes, position: int) -> bytes:
    changed = bytearray(data)
    changed[position] ^= 0x10
    return bytes(changed)


# Corruptions of a stream of three 50-byte records (headers at 0, 66 and 132; 198 bytes), as
# functions of the uncompressed stream bytes and the compressed file bytes.
CORRUPTIONS: dict[str, tuple[str, Any]] = {
    "length": ("", lambda raw, _: _flip(raw, 66 + 2)),
    "length-crc": ("", lambda raw, _: _flip(raw, 66 + 10)),
    "data": ("", lambda raw, _: _flip(raw, 66 + 30)),
    "data-crc": ("", lambda raw, _: _flip(raw, 66 + 63)),
    "cut-data": ("", lambda raw, _: raw[: 66 + 40]),
    "cut-data-crc": ("", lambda raw, _: raw[: 66 + 64]),
    "gzip-trailing-garbage": ("GZIP", lambda _, packed: packed + b"garbage"),
    "gzip-checksum": ("GZIP", lambda _, packed: _flip(packed, len(packed) - 6)),
    "gzip-not-gzip": ("GZIP", lambda raw, _: raw),
}


@pytest.mark.parametrize("corruption", list(CORRUPTIONS))
def test_files_tensorflow_rejects_we_reject(tf: Any, tmp_path: Path, corruption: str) -> None:
    tf_type, corrupt = CORRUPTIONS[corruption]
    records = [bytes([i]) * 50 for i in range(3)]
    tf_write(tf, tmp_path / "raw", records, "")
    tf_write(tf, tmp_path / "packed", records, tf_type)
    path = tmp_path / "bad"
    path.write_bytes(corrupt((tmp_path / "raw").read_bytes(), (tmp_path / "packed").read_bytes()))
    with pytest.raises(tf.errors.DataLossError):
        tf_read(tf, path, tf_type)
    compression: Compression = "gzip" if tf_type == "GZIP" else None
    with pytest.raises(DataError) as caught, TFRecordReader(path, compression=compression) as r:
        list(r)
    assert caught.value.path == str(path)


@pytest.mark.parametrize(
    ("tf_type", "cut"),
    [("", 66 + 5), ("GZIP", -8), ("ZLIB", -2)],
    ids=["header", "gzip", "zlib"],
)
def test_stricter_than_tensorflow_on_truncated_tails(
    tf: Any, tmp_path: Path, tf_type: str, cut: int
) -> None:
    """TensorFlow ends silently at a cut header or compressed stream; we report it.

    Skipping yields exactly the records TensorFlow yields.
    """
    records = [bytes([i]) * 50 for i in range(3)]
    tf_write(tf, tmp_path / "full", records, tf_type)
    path = tmp_path / "cut"
    path.write_bytes((tmp_path / "full").read_bytes()[:cut])
    compression: Compression = {"": None, "GZIP": "gzip", "ZLIB": "zlib"}[tf_type]
    tf_records = tf_read(tf, path, tf_type)
    with pytest.raises(DataError), TFRecordReader(path, compression=compression) as reader:
        list(reader)
    with TFRecordReader(path, compression=compression, on_error="skip") as reader:
        assert list(reader) == tf_records
        assert reader.skipped_spans >= 1
