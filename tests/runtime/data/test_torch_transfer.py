"""Batches from DataLoader workers through the workers' reused shared memory, and ``to_torch()``
without copies: tensors over the columns in-process, over a reused segment from a worker, never
one a held batch still uses, nothing left behind."""

from __future__ import annotations

import gc
import itertools
import os
import pickle
import subprocess
from collections.abc import Iterator
from multiprocessing.reduction import ForkingPickler
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from codegen.runtime import write_tfrecord
from codegen.runtime.codec.columns import Masked, Ragged
from codegen.runtime.data.dataset import Dataset
from support.modules import generate_module, generated_module
from support.paths import GENERATED
from support.processes import PYTHON
from support.shards import ITEM_SCHEMA, SIZES, write_shards

torch = pytest.importorskip("torch")
from codegen.runtime.data import transfer  # noqa: E402  (needs torch)
from codegen.runtime.data.pytorch import TorchBatches  # noqa: E402
from codegen.runtime.data.tensors import leaves, tensors  # noqa: E402

pytestmark = pytest.mark.skipif(not transfer.AVAILABLE, reason="needs memfd_create (Linux)")


@pytest.fixture(scope="module")
def module(tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    return generate_module(ITEM_SCHEMA, "transfer_items", tmp_path_factory.mktemp("transfer"))


def _dataset(module: ModuleType, tmp_path: Path, **options: Any) -> Dataset[Any]:
    paths = write_shards(module, tmp_path)
    return Dataset.of_batches(
        paths, module.ItemBatch.decode, module.Item.decode, batch_size=3, **options
    )


def _check(batch: dict[str, Any]) -> list[int]:
    """The ids of a batch of items, after checking every value against its id."""
    ids: list[int] = batch["id"].tolist()
    splits = batch["tokens.row_splits"].tolist()
    values = batch["tokens.values"]
    assert values.dtype == torch.int32 and splits[0] == 0 and len(splits) == len(ids) + 1
    rows = [values[a:b].tolist() for a, b in zip(splits[:-1], splits[1:], strict=True)]
    assert rows == [list(range(i % 4)) for i in ids]
    assert batch["name"] == [f"item {i}" for i in ids]
    return ids


def _segments() -> set[tuple[int, int]]:
    return set(transfer.mapped())


def test_in_process_tensors_are_the_columns_memory(module: ModuleType, tmp_path: Path) -> None:
    columns: list[dict[str, Any]] = []

    def keep(batch: Any) -> dict[str, Any]:
        columns.append(batch.to_dict())
        return columns[-1]

    seen = 0
    for batch in TorchBatches(_dataset(module, tmp_path), keep):
        column = columns[-1]
        assert batch["id"].data_ptr() == column["id"].ctypes.data
        assert np.shares_memory(batch["id"].numpy(), column["id"])
        assert np.shares_memory(batch["tokens.values"].numpy(), column["tokens"].values)
        assert np.shares_memory(batch["tokens.row_splits"].numpy(), column["tokens"].row_splits)
        seen += len(_check(batch))
    assert seen == sum(SIZES)


def test_a_batch_travels_through_a_segment_and_comes_back_equal() -> None:
    columns = {
        "dense": np.arange(6, dtype=np.uint16).reshape(3, 2),
        "nested": Ragged(
            Ragged(np.arange(5, dtype=np.float32).reshape(5, 1), np.array([0, 2, 2, 5])),
            np.array([0, 1, 3, 3]),
        ),
        "masked": Masked(np.array([1.5, 0.0, 2.5]), np.array([True, False, True])),
        "texts": ["a", "b", "c"],
        "images": [np.full((2, 2, 3), i, np.uint8) for i in range(3)],
        "shapes": [np.full((i, 2), i, np.int64) for i in range(3)],
        "empty": np.zeros((3, 0), np.float64),
    }
    expected = tensors(columns)
    shared = transfer.share(leaves(columns))
    received = ForkingPickler.loads(ForkingPickler.dumps(shared))
    assert received.keys() == expected.keys()
    for name, value in expected.items():
        got = received[name]
        if isinstance(value, torch.Tensor):
            assert got.dtype == value.dtype and torch.equal(got, value), name
        elif value and isinstance(value[0], torch.Tensor):
            assert [(t.dtype, t.tolist()) for t in got] == [(t.dtype, t.tolist()) for t in value]
        else:
            assert got == value, name
    assert not received["dense"].is_shared(), "a view of the segment, not torch's shared memory"
    again = pickle.loads(ForkingPickler.dumps(transfer.share(leaves(columns))))
    assert again["dense"].data_ptr() != received["dense"].data_ptr(), "the first is still held"
    first = received["dense"].data_ptr()
    del received, again, got
    gc.collect()
    reused = pickle.loads(ForkingPickler.dumps(transfer.share(leaves(columns))))
    assert reused["dense"].data_ptr() == first, "a released segment is reused"
    assert torch.equal(reused["dense"], expected["dense"])


def _segment(batch: Any) -> Any:
    assert batch.segment is not None
    return batch.segment


def test_a_writer_keeps_few_segments_and_grows_them() -> None:
    writer = transfer._Writer()
    small = {"x": np.zeros(10, np.int64)}
    for _ in range(10):
        held = [writer.pack(small) for _ in range(6)]  # all held at once: 6 segments
        assert len({_segment(batch).number for batch in held}) == 6
        for batch in held:
            transfer._release(_segment(batch).memory)
        del held
    transfer._release(_segment(writer.pack(small)).memory)
    assert len(writer.segments) == transfer.KEEP, "the free segments beyond KEEP are closed"
    big = {"x": np.zeros(1 << 19, np.int64)}  # 4 MiB: larger than any segment so far
    batch = writer.pack(big)
    assert _segment(batch).size >= (1 << 22) and len(writer.segments) == transfer.KEEP
    assert batch.retired, "a free segment too small for the batch was closed"


def _loader(dataset: Dataset[Any], **options: Any) -> Any:
    return torch.utils.data.DataLoader(dataset.to_torch(), batch_size=None, **options)


def test_worker_batches_reuse_a_few_segments(module: ModuleType, tmp_path: Path) -> None:
    loader = _loader(
        _dataset(module, tmp_path, shuffle_buffer=4, seed=1), num_workers=2, persistent_workers=True
    )
    orders = []
    batches = 0
    for _ in range(3):
        ids: list[int] = []
        for batch in loader:
            assert not batch["id"].is_shared(), "not through fresh shared memory"
            ids += _check(batch)
            batches += 1
        assert sorted(ids) == list(range(sum(SIZES)))
        orders.append(ids)
    assert orders[0] != orders[1] != orders[2], "each epoch has its own order"
    pids = {worker.pid for worker in loader._iterator._workers}
    segments = {key for key in _segments() if key[0] in pids}
    assert {pid for pid, _ in segments} == pids
    assert len(segments) <= 2 * (transfer.KEEP + 1) < batches


def test_the_dataloaders_own_way_is_still_there(module: ModuleType, tmp_path: Path) -> None:
    dataset = _dataset(module, tmp_path)
    loader = torch.utils.data.DataLoader(
        dataset.to_torch(shared_memory=False), batch_size=None, num_workers=2
    )
    ids = []
    for batch in loader:
        assert batch["id"].is_shared()
        ids += _check(batch)
    assert sorted(ids) == list(range(sum(SIZES)))


def test_batches_kept_alive_are_never_overwritten(module: ModuleType, tmp_path: Path) -> None:
    loader = _loader(_dataset(module, tmp_path, seed=2, shuffle_buffer=5), num_workers=2)
    kept = [batch for _ in range(2) for batch in loader]  # two epochs, nothing freed
    assert len(kept) > 4 * (transfer.KEEP + 1)
    ids = [i for batch in kept for i in _check(batch)]
    assert sorted(ids) == sorted(list(range(sum(SIZES))) * 2)
    spans = sorted(
        (t.data_ptr(), t.data_ptr() + t.nbytes)
        for batch in kept
        for t in (batch["id"], batch["tokens.values"], batch["tokens.row_splits"])
        if t.nbytes
    )
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(spans)), "two held tensors overlap"


_CRASH = """
import os, signal, sys
sys.path.append(sys.argv[1])
import torch, raw_image
dataset = raw_image.RawImage.dataset(sys.argv[2:], batch_size=4)
loader = iter(torch.utils.data.DataLoader(dataset.to_torch(), batch_size=None, num_workers=2))
next(loader)
signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # torch's handler would raise anywhere, even in except
pids = [worker.pid for worker in loader._workers]
print(os.getpid(), *pids, flush=True)
os.kill(pids[0], signal.SIGKILL)
try:
    for _ in range(100):
        next(loader)
except Exception as exc:  # the DataLoader's RuntimeError, or ours when the batch was on its way
    print("DataLoader worker" in str(exc), flush=True)
"""


def test_nothing_is_left_behind_when_workers_end_or_die(tmp_path: Path) -> None:
    paths = [str(path) for path in _images(tmp_path)]
    dataset = generated_module("raw_image").RawImage.dataset(paths, batch_size=4)
    previous: set[int] = set()
    for _ in range(2):  # workers that end after each epoch: their segments are forgotten
        batches = iter(
            torch.utils.data.DataLoader(dataset.to_torch(), batch_size=None, num_workers=2)
        )
        pids = {worker.pid for worker in batches._workers}
        assert sum(len(batch["label"]) for batch in batches) == 80
        mapped = {pid for pid, _ in _segments()}
        assert pids <= mapped and previous.isdisjoint(mapped)
        previous = pids
    done = subprocess.run(
        [*PYTHON, "-c", _CRASH, str(GENERATED), *paths], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    *numbers, caught = done.stdout.split()
    assert caught == "True", done.stdout
    shm = os.listdir("/dev/shm")  # torch names its segments torch_<pid>_...; ours have no name
    assert not [name for name in shm for pid in numbers if f"_{pid}_" in name or "tfr-gen" in name]


def _images(tmp_path: Path) -> Iterator[Path]:
    raw = generated_module("raw_image")
    rng = np.random.default_rng(5)
    for k in range(2):
        path = tmp_path / f"images-{k}.tfrecord"
        records = [
            raw.RawImage(label=k * 100 + i, image=rng.integers(0, 256, (4 + i % 3, 5, 3), np.uint8))
            for i in range(40)
        ]
        write_tfrecord(path, (r.encode() for r in records), compression=None)
        yield path


def test_lists_of_images_come_through_workers_exactly(tmp_path: Path) -> None:
    raw = generated_module("raw_image")
    paths = list(_images(tmp_path))
    expected = {int(r.label): r.image for path in paths for r in raw.RawImage.read_tfrecord(path)}
    dataset = raw.RawImage.dataset(paths, batch_size=16)
    loader = torch.utils.data.DataLoader(
        dataset.to_torch(), batch_size=None, num_workers=2, persistent_workers=True
    )
    for _ in range(2):
        seen = []
        for batch in loader:
            for label, image in zip(batch["label"].tolist(), batch["image"], strict=True):
                assert image.dtype == torch.uint8
                assert np.array_equal(image.numpy(), expected[label])
                seen.append(label)
        assert sorted(seen) == sorted(expected)


def test_workers_started_by_spawn_send_through_segments_too(tmp_path: Path) -> None:
    raw = generated_module("raw_image")
    paths = list(_images(tmp_path))
    loader = torch.utils.data.DataLoader(
        raw.RawImage.dataset(paths, batch_size=16).to_torch(),
        batch_size=None,
        num_workers=2,
        multiprocessing_context="spawn",
    )
    labels = []
    for batch in loader:
        assert not batch["label"].is_shared()
        labels += batch["label"].tolist()
    assert sorted(labels) == sorted(k * 100 + i for k in range(2) for i in range(40))


def _digits(tmp_path: Path, count: int = 3000) -> tuple[list[str], dict[int, np.ndarray[Any, Any]]]:
    """MNIST-like records in 2 files: a batch of 1024 has a 6 MiB pixel column, decoded into a
    pooled block (large columns are)."""
    mnist = generated_module("mnist")
    rng = np.random.default_rng(11)
    pixels = {i: rng.integers(0, 256, 784, dtype=np.int64) for i in range(count)}
    paths = []
    for k in range(2):
        path = tmp_path / f"digits-{k}.tfrecord"
        mnist.Digit.write_tfrecord(
            path, [mnist.Digit(label=i, image=pixels[i]) for i in range(k, count, 2)]
        )
        paths.append(str(path))
    return paths, pixels


def test_large_columns_come_from_the_workers_blocks_without_a_copy(tmp_path: Path) -> None:
    """A worker decodes a batch's large columns into shared memory, and the main process's tensors
    view that memory: the pixel column is in a shared block (a negative number among the mapped
    memory), not copied into a segment; small columns still go through a segment. Batches kept
    alive are never overwritten, however many there are."""
    paths, pixels = _digits(tmp_path)
    mnist = generated_module("mnist")
    loader = _loader(mnist.Digit.dataset(paths, batch_size=1024), num_workers=2)
    kept = [batch for _ in range(2) for batch in loader]  # two epochs, nothing freed
    labels = [label for batch in kept for label in batch["label"].tolist()]
    assert sorted(labels) == sorted(list(pixels) * 2)
    for batch in kept:
        image = batch["image"]
        assert image.shape == (len(batch["label"]), 784) and not image.is_shared()
        for label, row in zip(batch["label"].tolist(), image, strict=True):
            assert np.array_equal(row.numpy(), pixels[label])
    pids = {worker.pid for worker in loader._iterator._workers} if loader._iterator else set()
    numbers = {number for pid, number in _segments() if not pids or pid in pids}
    assert any(number < 0 for number in numbers), "no shared block was mapped"
    spans = sorted((t.data_ptr(), t.data_ptr() + t.nbytes) for b in kept for t in (b["image"],))
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(spans)), "two held batches overlap"


def test_a_released_block_is_reused_by_a_later_batch(tmp_path: Path) -> None:
    """Once the main process lets a batch go, its block's memory decodes a later one: a worker
    keeps a few blocks, not one per batch."""
    paths, pixels = _digits(tmp_path, 6000)
    mnist = generated_module("mnist")
    loader = _loader(mnist.Digit.dataset(paths, batch_size=1024), num_workers=2)
    addresses = set()
    batches = 0
    for _ in range(3):
        for batch in loader:
            label = int(batch["label"][0])
            assert np.array_equal(batch["image"][0].numpy(), pixels[label])
            addresses.add(batch["image"].data_ptr())
            batches += 1
            del batch
    assert batches == 18 and len(addresses) < batches


_FORK = """
import os, sys
import codegen._speedups as sp
from codegen.runtime.data import transfer
assert transfer.decode_into_shared_memory()
block = sp.pooled_block(1 << 20)
assert block.shared_memory() is not None
del block  # its memory waits in the pool
assert sp.pool_stats()[0] == 1
pid = os.fork()
if pid == 0:  # the child never takes the parent's shared memory, and makes private memory
    ok = sp.pool_stats() == (0, 0) and sp.pooled_block(1 << 20).shared_memory() is None
    os._exit(0 if ok else 3)
_, status = os.waitpid(pid, 0)
again = sp.pooled_block(1 << 20)
print(os.waitstatus_to_exitcode(status), sp.pool_stats()[0], again.shared_memory() is not None)
"""


def test_a_forked_child_never_takes_the_parents_shared_memory() -> None:
    """Shared memory is the parent's as much as the child's after a fork: the child's pool lets it
    go (the parent keeps and reuses it) and makes private memory until it turns shared blocks on."""
    done = subprocess.run([*PYTHON, "-c", _FORK], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["0", "0", "True"]
