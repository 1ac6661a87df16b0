"""``tfr-gen index``: the documented index file beside each file, and the files it cannot index."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import crc32c
import pytest

from codegen.errors import TfrGenError
from codegen.runtime.io.indexed import IndexedReader
from codegen.runtime.io.writer import write_tfrecord
from support.cli import run_cli
from support.framing import SOME_RECORDS, flip_byte, frame_offsets


def test_index_command_writes_the_documented_format(tmp_path: Path) -> None:
    data = tmp_path / "r.tfrecord"
    write_tfrecord(data, SOME_RECORDS)
    code, out, err = run_cli("index", "r.tfrecord", cwd=data.parent)
    assert (code, out, err) == (0, "wrote r.tfrecord.index (5 records)\n", "")
    raw = (data.parent / "r.tfrecord.index").read_bytes()
    stat = os.stat(data)
    offsets = frame_offsets(SOME_RECORDS)
    body = struct.pack("<QQq", 5, stat.st_size, stat.st_mtime_ns) + struct.pack("<5Q", *offsets)
    assert raw == b"TFRINDEX" + struct.pack("<II", 1, crc32c.crc32c(body)) + body


def test_compressed_and_corrupt_files_cannot_be_indexed(tmp_path: Path) -> None:
    write_tfrecord(tmp_path / "c.tfrecord.gz", SOME_RECORDS)
    write_tfrecord(tmp_path / "bad.tfrecord", SOME_RECORDS)
    flip_byte(tmp_path / "bad.tfrecord", frame_offsets(SOME_RECORDS)[1] + 12)
    code, out, err = run_cli(
        "index", "c.tfrecord.gz", "bad.tfrecord", "none.tfrecord", cwd=tmp_path
    )
    assert (code, out) == (2, "")
    lines = err.splitlines()
    assert lines[0] == (
        "tfr-gen index: error: c.tfrecord.gz: a gzip-compressed file cannot be indexed (its records"
        " can only be reached by decompressing everything before them); write it uncompressed for"
        " random access"
    )
    assert lines[1].startswith(
        "tfr-gen index: error: bad.tfrecord: record 1 at byte offset 16: corrupt data CRC of a"
        " 1-byte record: stored "
    )
    assert lines[2:] == [
        "tfr-gen index: error: none.tfrecord: No such file or directory",
        "tfr-gen index: 3 of 3 files not indexed",
    ]
    with pytest.raises(TfrGenError, match="gzip-compressed"):
        IndexedReader(tmp_path / "c.tfrecord.gz")
