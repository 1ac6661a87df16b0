"""The data tools' inputs: glob patterns expanded in order, and the scanner's limit and record positions."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from codegen.errors import TfrGenError
from codegen.runtime.codec import wire
from codegen.runtime.io.writer import write_tfrecord
from codegen.tools.progress import Progress
from codegen.tools.scan import Scanner, expand_inputs


def test_inputs_expand_globs_in_order_once(tmp_path: Path) -> None:
    for name in ("b.tfrecord", "a.tfrecord", "sub/c.tfrecord"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_bytes(b"")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(tmp_path)
        assert expand_inputs(["*.tfrecord", "a.tfrecord", "**/c.*"]) == [
            "a.tfrecord",
            "b.tfrecord",
            "sub/c.tfrecord",
        ]
        with pytest.raises(TfrGenError, match="sub: is a directory"):
            expand_inputs(["sub"])


def test_scanner_limit_and_positions(tmp_path: Path) -> None:
    records = [wire.example([]), b"xyz", wire.example([])]
    write_tfrecord(tmp_path / "a.tfrecord", records)
    write_tfrecord(tmp_path / "b.tfrecord.zlib", records)
    paths = [str(tmp_path / "a.tfrecord"), str(tmp_path / "b.tfrecord.zlib")]
    with Scanner(paths, limit=4) as scanner:
        seen = [(Path(r.path).name, r.index, r.offset, r.data) for r in scanner]
    assert seen == [
        ("a.tfrecord", 0, 0, records[0]),
        ("a.tfrecord", 1, 18, b"xyz"),
        ("a.tfrecord", 2, 37, records[2]),
        ("b.tfrecord.zlib", 0, 0, records[0]),
    ]
    assert (scanner.files, scanner.file_records, scanner.records) == (2, [3, 1], 4)


def test_scanner_progress_counts_each_file_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The bar's position after each file is the bytes of the files read so far, in file bytes
    (headers and CRCs included), ending at the total."""
    records = [wire.example([]), b"xyz" * 100, wire.example([])]
    paths = []
    for name in ("a", "b", "c"):
        write_tfrecord(tmp_path / f"{name}.tfrecord", records)
        paths.append(str(tmp_path / f"{name}.tfrecord"))
    shown: list[int] = []
    monkeypatch.setattr(Progress, "update", lambda self, done, records: shown.append(done))
    with Scanner(paths, progress=io.StringIO()) as scanner:
        assert sum(1 for _ in scanner.batches()) == 3
    size = (tmp_path / "a.tfrecord").stat().st_size
    assert shown == sorted(shown)  # one batch per file: after it, and after the file
    assert set(shown) == {size, 2 * size, 3 * size}
    assert shown[-1] == scanner.total_bytes


def test_scanner_batches_know_their_bytes_and_positions(tmp_path: Path) -> None:
    """Each batch's size is its records' bytes and its offsets are those of the records one by
    one, across files, compressed or not, with a limit that cuts a batch."""
    records = [wire.example([]), b"xyz" * 100, b"", b"q" * 70_000] * 40
    write_tfrecord(tmp_path / "a.tfrecord", records)
    write_tfrecord(tmp_path / "b.tfrecord.gz", records)
    paths = [str(tmp_path / "a.tfrecord"), str(tmp_path / "b.tfrecord.gz")]
    with Scanner(paths) as scanner:
        one_by_one = [(r.path, r.index, r.offset, r.data) for r in scanner]
    for limit in (None, len(records) + 7):
        with Scanner(paths, limit=limit) as scanner:
            batches = list(scanner.batches())
        assert len(batches) > 2
        assert all(batch.size == sum(map(len, batch.records)) for batch in batches)
        seen = [(r.path, r.index, r.offset, r.data) for batch in batches for r in batch]
        assert seen == one_by_one[:limit]
        assert scanner.record_bytes == sum(len(r[3]) for r in seen)
