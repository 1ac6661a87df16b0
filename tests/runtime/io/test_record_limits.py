"""Memory bounded by the bytes read: ``max_record_bytes`` refuses a record header that declares
more before any of its data is read (plain, gzip and zlib files, the dataset reader and the
command line), under an address-space limit no read can exceed; and the file errors of
``read_tfrecord``."""

from __future__ import annotations

import gzip
import resource
import subprocess
import textwrap
import zlib
from pathlib import Path

import pytest

from codegen.errors import DataError, TfrGenError
from codegen.runtime.data.dataset import Dataset
from codegen.runtime.io.reader import (
    DEFAULT_MAX_RECORD_BYTES,
    TFRecordReader,
    read_decoded,
    read_tfrecord,
)
from codegen.runtime.io.skips import SkippedSpan
from codegen.runtime.io.writer import write_tfrecord
from support.framing import frame, frame_header
from support.processes import PYTHON

LIMIT = 1 << 30
"""The address space of the child processes below (1 GiB)."""


def _bomb(length: int, data: int) -> bytes:
    """A record stream: one record header that declares ``length`` bytes, then ``data`` zeros."""
    return frame_header(length) + bytes(data)


def _gzip_bomb(path: Path, length: int, zeros: int) -> None:
    """``path`` (gzip): a header declaring ``length`` bytes, then ``zeros`` zero bytes, compressed
    a chunk at a time (a few hundred kilobytes on disk)."""
    with gzip.open(path, "wb", compresslevel=1) as file:
        file.write(frame_header(length))
        chunk = bytes(1 << 24)
        for _ in range(zeros >> 24):
            file.write(chunk)


@pytest.mark.parametrize("compression", [None, "gzip", "zlib"])
def test_a_record_larger_than_the_limit_is_an_error_before_its_data_is_read(
    tmp_path: Path, compression: str | None
) -> None:
    records = [b"small", b"x" * 1000, b"after"]
    stream = b"".join(frame(r) for r in records)
    suffix = {None: "", "gzip": ".gz", "zlib": ".zlib"}[compression]
    path = tmp_path / f"r.tfrecord{suffix}"
    packed = {None: stream, "gzip": gzip.compress(stream), "zlib": zlib.compress(stream)}
    path.write_bytes(packed[compression])
    with pytest.raises(DataError) as failure:
        list(read_tfrecord(path, max_record_bytes=999))
    assert (failure.value.path, failure.value.index, failure.value.offset) == (str(path), 1, 21)
    assert "declares 1000 bytes of data, more than max_record_bytes (999)" in str(failure.value)
    assert list(read_tfrecord(path, max_record_bytes=1000)) == records
    assert list(read_tfrecord(path, max_record_bytes=None)) == records
    spans: list[SkippedSpan] = []
    with TFRecordReader(
        path, compression="auto", max_record_bytes=999, on_error="skip", on_skip=spans.append
    ) as reader:
        assert list(reader) == [b"small", b"after"]
    assert [(s.offset, s.length) for s in spans] == [(21, 1016)]


def test_max_record_bytes_is_checked(tmp_path: Path) -> None:
    write_tfrecord(tmp_path / "r.tfrecord", [b"a"])
    for bad in (0, -1, True, 1.5):
        with pytest.raises(TfrGenError, match="max_record_bytes must be a positive int or None"):
            TFRecordReader(tmp_path / "r.tfrecord", max_record_bytes=bad)  # type: ignore[arg-type]
    assert DEFAULT_MAX_RECORD_BYTES == 256 << 20


def test_the_dataset_loader_has_a_max_record_bytes(tmp_path: Path) -> None:
    records = [b"small", b"x" * 1000, b"after"]
    path = tmp_path / "r.tfrecord"
    write_tfrecord(path, records)
    assert Dataset.of_records(path, bytes).max_record_bytes == DEFAULT_MAX_RECORD_BYTES
    limited = Dataset.of_records(path, bytes, max_record_bytes=999)
    assert limited.max_record_bytes == 999
    with pytest.raises(DataError) as failure:
        list(limited)
    assert (failure.value.path, failure.value.index, failure.value.offset) == (str(path), 1, 21)
    assert "more than max_record_bytes (999)" in str(failure.value)
    assert list(Dataset.of_records(path, bytes, max_record_bytes=1000)) == records
    assert list(Dataset.of_records(path, bytes, max_record_bytes=None)) == records
    spans: list[SkippedSpan] = []
    skipping = Dataset.of_records(
        path, bytes, max_record_bytes=999, on_error="skip", on_skip=spans.append, count=True
    )
    assert len(skipping) == 2  # the counting pass has the same limit
    assert list(skipping) == [b"small", b"after"]
    assert [(s.offset, s.length) for s in spans] == [(21, 1016)]
    for bad in (0, -1, True, 1.5):
        with pytest.raises(TfrGenError, match="max_record_bytes must be a positive int or None"):
            Dataset.of_records(path, bytes, max_record_bytes=bad)  # type: ignore[arg-type]


def test_reading_a_missing_file_names_it(tmp_path: Path) -> None:
    missing = tmp_path / "missing.tfrecord"
    with pytest.raises(TfrGenError, match=f"{missing}: cannot read the file: No such file"):
        list(read_tfrecord(missing))
    with pytest.raises(TfrGenError, match=f"{missing}: cannot read the file: No such file"):
        list(read_decoded(missing, bytes))


def _limited(script: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Runs ``script`` in a Python child whose address space is limited to :data:`LIMIT`."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))

    return subprocess.run(
        [*PYTHON, "-c", script, *args],
        capture_output=True,
        text=True,
        preexec_fn=limit,
        check=False,
        timeout=300,
    )


READ = textwrap.dedent(
    """\
    import sys
    from codegen.errors import DataError
    from codegen.runtime.io.reader import read_tfrecord
    try:
        for _ in read_tfrecord(sys.argv[1]):
            pass
    except DataError as exc:
        print("DataError", exc.index, exc.offset, exc.reason)
    """
)


@pytest.mark.parametrize("name", ["huge.tfrecord", "huge.tfrecord.gz"])
def test_a_header_declaring_2_to_the_62_bytes_costs_nothing_under_a_1_gib_limit(
    tmp_path: Path, name: str
) -> None:
    path = tmp_path / name
    stream = frame(b"ok") + _bomb(1 << 62, 1 << 20)
    path.write_bytes(gzip.compress(stream) if name.endswith(".gz") else stream)
    done = _limited(READ, str(path))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(
        f"DataError 1 18 the record header declares {1 << 62} bytes of data, more than"
        " max_record_bytes"
    )


def test_a_gzip_bomb_within_the_limit_ends_in_a_data_error_not_a_memory_error(
    tmp_path: Path,
) -> None:
    path = tmp_path / "bomb.tfrecord.gz"
    _gzip_bomb(path, DEFAULT_MAX_RECORD_BYTES, 200 << 20)  # 200 MiB of the declared 256 MiB
    assert path.stat().st_size < 1 << 20
    done = _limited(READ, str(path))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("DataError 0 0 truncated record: the file ends")


def test_the_command_line_reports_running_out_of_memory_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "bomb.tfrecord.gz"
    _gzip_bomb(path, 1 << 31, 1 << 30)  # 1 GiB of zeros, more than the child may hold
    script = "import sys; from codegen.cli.main import main; sys.exit(main(sys.argv[1:]))"
    done = _limited(script, "cat", str(path), "--max-record-bytes", str(1 << 32))
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "tfr-gen cat: error: out of memory (a record larger than the memory available?"
        " --max-record-bytes limits the records read)\n"
    )
    done = _limited(script, "cat", str(path))
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        f"tfr-gen cat: error: {path}: record 0 at byte offset 0: the record header declares"
        f" {1 << 31} bytes of data, more than max_record_bytes ({DEFAULT_MAX_RECORD_BYTES}) (in"
        " the uncompressed gzip stream)\n"
    )
