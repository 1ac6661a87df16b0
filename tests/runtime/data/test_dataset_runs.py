"""Records handed over a reader's buffer at a time: the shuffle buffer played 1024 draws at a time
on arrays gives exactly the order of the buffer drawn from record by record, for any buffer size
and stream length, shards take their records from every buffer, and batches made of slices of the
buffers' runs are those made record by record."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from codegen.errors import DataError, RecordError
from codegen.runtime import accel, write_tfrecord
from codegen.runtime.data.dataset import Dataset, _RunTape, _shuffled, _Tape

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


class Ids(list[tuple[int, int]]):
    """A batch: the ``(file, index)`` each record names; ``len`` is its records."""

    def to_dict(self) -> dict[str, object]:
        return {"ids": list(self)}


def record_id(data: bytes) -> tuple[int, int]:
    """A record's ``(file, index)``; a record that starts with ``bad`` does not decode."""
    if data.startswith(b"bad"):
        raise RecordError(f"record {data[:12]!r} is bad")
    file, index = data.split(b":")[:2]
    return int(file), int(index)


def ids_batch(data: Sequence[bytes]) -> Ids:
    return Ids(map(record_id, data))


@pytest.fixture(scope="module")
def bad_shards(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """Three files of about 3 MB (three reader buffers each) with undecodable records in some of
    them, one of them the first record of a buffer."""
    paths = []
    for j in range(3):
        path = tmp_path_factory.mktemp("runs") / f"part-{j}.tfrecord"
        records = [f"{j}:{i}:".encode() + bytes(1000) for i in range(3000)]
        for i in (5, 1048, 2999) if j != 1 else ():
            records[i] = b"bad" + records[i]
        write_tfrecord(path, records)
        paths.append(str(path))
    return paths


def flat(batches: Iterator[Ids]) -> list[list[tuple[int, int]]]:
    return [list(batch) for batch in batches]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("batch_size", [7, 1000, 1024])
def test_batches_of_runs_equal_batches_of_raw_records(
    bad_shards: list[str], threads: int, batch_size: int
) -> None:
    """Batches made of slices of the readers' runs (a Spans each, with the accelerator) are those
    made record by record: skipped records, the records that fill their batches up, positions."""
    options: dict[str, Any] = {"batch_size": batch_size, "num_threads": threads}
    runs = Dataset.of_batches(bad_shards, ids_batch, record_id, on_error="skip", **options)
    raw = Dataset.of_batches(bad_shards, ids_batch, record_id, on_error="skip", **options)
    raw._views = False  # the reference: raw records taken one by one from the tape
    assert isinstance(raw._tape(raw.shard(), 0, None), _Tape)
    if accel.speedups is not None:
        assert isinstance(runs._tape(runs.shard(), 0, None), _RunTape)
    expected = flat(iter(raw))
    assert flat(iter(runs)) == expected
    assert sum(map(len, expected)) == 9000 - 6
    assert runs.skipped == raw.skipped
    assert runs.skipped.records == 6
    with pytest.raises(DataError, match=r"part-0\.tfrecord.*record 5 .*is bad"):
        list(Dataset.of_batches(bad_shards, ids_batch, record_id, **options))


@pytest.mark.parametrize("taken", [0, 1, 4, 8])
def test_a_state_taken_between_batches_of_runs_resumes_exactly(
    bad_shards: list[str], taken: int
) -> None:
    options: dict[str, Any] = {"batch_size": 1000, "num_threads": 2, "on_error": "skip"}
    whole = flat(iter(Dataset.of_batches(bad_shards, ids_batch, record_id, **options)))
    first = Dataset.of_batches(bad_shards, ids_batch, record_id, **options)
    batches = iter(first)
    before = [list(next(batches)) for _ in range(taken)]
    state = first.state_dict()
    again = Dataset.of_batches(bad_shards, ids_batch, record_id, **options)
    again.load_state_dict(state)
    assert before + flat(iter(again)) == whole
