"""Batches decoded by several threads: the same batches, in the same order, as one thread gives
(shuffled or not, with bad records skipped, resumed), and no wrong value when threads decode at
once while earlier batches' columns stay alive."""

from __future__ import annotations

import sys
import threading
from collections.abc import Generator
from pathlib import Path
from types import ModuleType
from typing import Any, cast

import numpy as np
import pytest

from codegen.errors import TfrGenError
from codegen.runtime import write_tfrecord
from codegen.runtime.data.dataset import Dataset
from support.messages import UNDECODABLE
from support.modules import generate_module, generated_module
from support.paths import ROOT
from support.shards import ITEM_SCHEMA, item, write_shards

WORKLOADS = ("customer", "mnist", "embedding", "raw_image", "sentence")
"""Generated modules (``generated/``) whose sample records the threads decode."""


@pytest.fixture(scope="module")
def module(tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    return generate_module(ITEM_SCHEMA, "thread_items", tmp_path_factory.mktemp("thread_module"))


def sample_records(name: str, count: int) -> tuple[Any, list[Any]]:
    """The record class of ``generated/<name>.py`` and ``count`` of its records, from the
    benchmark workloads' value makers (seeded)."""
    if str(ROOT) not in sys.path:
        sys.path.append(str(ROOT))  # after the installed package: only adds ``benchmarks``
    from benchmarks.workloads import WORKLOADS as ALL

    workload = next(w for w in ALL if w.module == name)
    cls = getattr(generated_module(name), workload.record)
    rng = np.random.default_rng(7)
    spec = cls.feature_spec()
    return cls, [cls(**workload.make_values(rng, spec)) for _ in range(count)]


def write_files(directory: Path, records: list[Any], files: int) -> list[Path]:
    paths = []
    per_file = -(-len(records) // files)
    for j in range(files):
        path = directory / f"part-{j}.tfrecord{'.gz' if j % 2 else ''}"
        chunk = records[j * per_file : (j + 1) * per_file]
        write_tfrecord(path, [r.encode() for r in chunk], compression="gzip" if j % 2 else None)
        paths.append(path)
    return paths


def batch_records(dataset: Dataset[Any]) -> list[list[Any]]:
    return [batch.records() for batch in dataset]


@pytest.mark.parametrize("name", WORKLOADS)
@pytest.mark.parametrize("shuffle", [0, 37])
def test_threaded_batches_equal_single_threaded(name: str, shuffle: int, tmp_path: Path) -> None:
    cls, records = sample_records(name, 150)
    paths = write_files(tmp_path, records, 4)
    options: dict[str, Any] = {"batch_size": 16, "shuffle_buffer": shuffle, "seed": 3, "epochs": 2}
    one = batch_records(cls.dataset(paths, num_threads=1, **options))
    assert sum(len(b) for b in one) == 2 * len(records)
    if not shuffle:
        assert [r for b in one[: len(one) // 2] for r in b] == records
    for threads in (2, 4):
        assert batch_records(cls.dataset(paths, num_threads=threads, **options)) == one


@pytest.mark.parametrize("drop_remainder", [False, True])
def test_threads_skip_bad_records_as_one_thread_does(
    module: ModuleType, tmp_path: Path, drop_remainder: bool
) -> None:
    payloads = [item(module, i).encode() for i in range(40)]
    for at in (1, 9, 10, 23, 38):  # bad records in several batches read ahead at once
        payloads.insert(at, UNDECODABLE)
    write_tfrecord(tmp_path / "bad.tfrecord", payloads)
    (tmp_path / "corrupt.tfrecord").write_bytes(b"\x05" * 40)  # no readable frame at all
    paths = [
        tmp_path / "bad.tfrecord",
        tmp_path / "corrupt.tfrecord",
        *write_shards(module, tmp_path),
    ]

    def run(threads: int) -> tuple[list[list[int]], Any, list[Any]]:
        reports: list[Any] = []
        dataset = Dataset.of_batches(
            paths,
            module.ItemBatch.decode,
            module.Item.decode,
            batch_size=4,
            drop_remainder=drop_remainder,
            on_error="skip",
            on_skip=reports.append,
            shuffle_buffer=6,
            seed=5,
            num_threads=threads,
        )
        return [b.id.tolist() for b in dataset], dataset.skipped, reports

    one = run(1)
    assert one[1].records == 5
    assert run(2) == one
    assert run(3) == one


def test_threaded_resume_goes_on_where_one_thread_was(module: ModuleType, tmp_path: Path) -> None:
    paths = write_shards(module, tmp_path)
    options: dict[str, Any] = {"batch_size": 3, "shuffle_buffer": 4, "seed": 2, "epochs": 2}

    def dataset(threads: int) -> Dataset[Any]:
        return Dataset.of_batches(
            paths, module.ItemBatch.decode, module.Item.decode, num_threads=threads, **options
        )

    whole = [b.id.tolist() for b in dataset(1)]
    for k in (0, 5, len(whole) // 2 + 1, len(whole) - 1):
        first = dataset(3)
        it = cast("Generator[Any]", iter(first))
        head = [next(it).id.tolist() for _ in range(k)]
        state = first.state_dict()
        it.close()
        resumed = dataset(2)
        resumed.load_state_dict(state)
        assert head + [b.id.tolist() for b in resumed] == whole


def test_num_threads_is_checked_and_chosen_from_the_cores(
    module: ModuleType, tmp_path: Path
) -> None:
    paths = write_shards(module, tmp_path)
    with pytest.raises(TfrGenError, match="num_threads"):
        Dataset.of_batches(
            paths, module.ItemBatch.decode, module.Item.decode, batch_size=2, num_threads=0
        )
    dataset = Dataset.of_batches(paths, module.ItemBatch.decode, module.Item.decode, batch_size=2)
    assert dataset.num_threads is None and dataset._threads() == 1
    threaded = Dataset.of_batches(
        paths, module.ItemBatch.decode, module.Item.decode, batch_size=2, num_threads=3
    )
    assert threaded._threads() == 3


def test_four_threads_decoding_at_once_give_no_wrong_value() -> None:
    """Four threads decode batches of every workload at once (in parallel with the accelerator,
    which decodes without the GIL), each keeping the columns of all its
    batches alive (their Blocks' memory must not be reused), and compare every value with a
    batch decoded alone beforehand."""
    cases = []
    for name in WORKLOADS:
        cls, records = sample_records(name, 96)
        data = [r.encode() for r in records]
        chunks = [data[i : i + 24] for i in range(0, len(data), 24)]
        cases.append((cls, chunks, [cls.decode_batch(chunk).records() for chunk in chunks]))
    errors: list[str] = []
    start = threading.Barrier(4)

    def work(seed: int) -> None:
        rng = np.random.default_rng(seed)
        kept: list[tuple[Any, list[Any]]] = []
        start.wait()
        for _ in range(60):
            cls, chunks, expected = cases[int(rng.integers(len(cases)))]
            j = int(rng.integers(len(chunks)))
            kept.append((cls.decode_batch(chunks[j]), expected[j]))
        for batch, want in kept:
            if batch.records() != want:
                errors.append(f"thread {seed}: a {type(batch).__name__} differs")

    threads = [threading.Thread(target=work, args=(seed,)) for seed in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
