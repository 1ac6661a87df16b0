"""Records handed over a reader's buffer at a time: the shuffle buffer played 1024 draws at a time
on arrays gives exactly the order of the buffer drawn from record by record, for any buffer size
and stream length, and shards take their records from every buffer."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from codegen.runtime import write_tfrecord
from codegen.runtime.data.dataset import Dataset, _shuffled

Raw = tuple[bytes, int, int]


def one_by_one(records: Iterator[Raw], size: int, rng: np.random.Generator) -> Iterator[Raw]:
    """The shuffle buffer's definition: each next record takes the place of the one drawn."""
    buffer: list[Raw] = []
    for raw in records:
        buffer.append(raw)
        if len(buffer) == size:
            break
    draws: list[int] = []
    for raw in records:
        if not draws:
            draws = rng.integers(0, size, 1024).tolist()
        slot = draws.pop()
        yield buffer[slot]
        buffer[slot] = raw
    for slot in rng.permutation(len(buffer)).tolist():
        yield buffer[slot]


@pytest.mark.parametrize(
    ("size", "count"),
    [
        (1, 0),
        (1, 5),
        (5, 3),
        (5, 5),
        (2, 3000),
        (7, 1024 + 7),
        (7, 2048 + 7),
        (100, 5000),
        (5000, 4999),
        (3000, 9000),
    ],
)
def test_draws_played_at_once_give_the_record_by_record_order(size: int, count: int) -> None:
    records = [(bytes([i % 256]), i % 3, i) for i in range(count)]
    expected = list(one_by_one(iter(records), size, np.random.default_rng([4, size])))
    got = list(_shuffled(iter(records), size, np.random.default_rng([4, size])))
    assert got == expected
    assert sorted(r[2] for r in got) == list(range(count))


@pytest.mark.parametrize("shuffle_buffer", [0, 700])
def test_shards_of_files_read_in_many_buffers_take_their_records_once(
    tmp_path: Path, shuffle_buffer: int
) -> None:
    """Records past a reader's first buffer (runs that start at an index > 0) go to the shard
    that owns ``(file + index) % count``, when every shard reads every file."""
    paths = []
    for j in range(2):
        path = tmp_path / f"part-{j}.tfrecord"
        write_tfrecord(path, [f"{j}:{i}:".encode() + bytes(1000) for i in range(3000)])
        paths.append(str(path))
    seen: list[tuple[int, int]] = []
    for rank in range(3):
        dataset = Dataset.of_records(
            paths, bytes, rank=rank, world_size=3, shuffle_buffer=shuffle_buffer, seed=5
        )
        for data in dataset:
            file, index = map(int, data.split(b":")[:2])
            assert (file + index) % 3 == rank
            seen.append((file, index))
    assert sorted(seen) == [(j, i) for j in range(2) for i in range(3000)]
