"""Deterministic samples of a scan: the same seed picks the same records, a count keeps exactly
that many (in reading order) with bounded memory, a fraction about that share."""

from __future__ import annotations

import pytest

from codegen.runtime.io.writer import write_tfrecord
from codegen.tools.sampling import Sample, parse_sample
from codegen.tools.scan import ScannedRecord, Scanner


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    directory = tmp_path_factory.mktemp("sampling")
    paths = []
    for part in range(3):
        path = directory / f"part{part}.tfrecord"
        write_tfrecord(path, [f"{part}:{i}".encode() for i in range(3000)])
        paths.append(str(path))
    return paths


def sample(files: list[str], size: int | float, seed: int) -> list[ScannedRecord]:
    picker = Sample(size, seed)
    taken: list[ScannedRecord] = []
    with Scanner(files) as scanner:
        for batch in scanner.batches():
            taken += picker.take(batch)
            assert len(picker._kept) <= 2 * size + len(batch)
    for chunk in picker.finish(chunk=100):
        assert len(chunk) <= 100
        taken += chunk
    return taken


def test_a_count_keeps_that_many_in_reading_order(files: list[str]) -> None:
    first = sample(files, 500, seed=7)
    assert len(first) == 500
    assert first == sample(files, 500, seed=7)
    assert first != sample(files, 500, seed=8)
    order = [(files.index(r.path), r.index) for r in first]
    assert order == sorted(order)
    for record in first:
        assert record.data == f"{files.index(record.path)}:{record.index}".encode()
        assert record.offset == sum(
            16 + len(f"{files.index(record.path)}:{i}") for i in range(record.index)
        )
    assert {r.path for r in first} == set(files)  # drawn from every file
    assert len(sample(files, 20_000, seed=0)) == 9000  # fewer records than asked: all of them


def test_a_fraction_keeps_about_that_share(files: list[str]) -> None:
    first = sample(files, 0.1, seed=3)
    assert 700 <= len(first) <= 1100
    assert first == sample(files, 0.1, seed=3)
    assert len(sample(files, 1.0, seed=3)) == 9000


@pytest.mark.parametrize(("text", "value"), [("10", 10), ("0.25", 0.25), ("1.0", 1.0), ("1", 1)])
def test_parse_sample(text: str, value: float) -> None:
    parsed = parse_sample(text)
    assert parsed == value and type(parsed) is type(value)


@pytest.mark.parametrize("text", ["0", "-3", "1.5", "0.0", "ten"])
def test_parse_sample_refuses(text: str) -> None:
    with pytest.raises(ValueError):
        parse_sample(text)
