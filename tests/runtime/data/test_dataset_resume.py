"""Epochs and resuming: every iteration (a ``for`` loop, a DataLoader epoch with or without
persistent workers) runs a new epoch with its own order, ``set_epoch`` sets it, and a state saved
mid-run and loaded into a dataset rebuilt from scratch (in a new process, through
``StatefulDataLoader`` workers too) finishes the run as if it had not stopped."""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from codegen.errors import TfrGenError
from codegen.runtime import write_tfrecord
from codegen.runtime.data.dataset import Dataset
from codegen.runtime.io.compression import Compression
from support.messages import UNDECODABLE
from support.modules import generate_module
from support.processes import PYTHON
from support.shards import ITEM_SCHEMA, SIZES, item, write_shards

torch = pytest.importorskip("torch")
stateful = pytest.importorskip("torchdata.stateful_dataloader")

MODULE = "resume_items"


@pytest.fixture(scope="module")
def module(tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    return generate_module(ITEM_SCHEMA, MODULE, tmp_path_factory.mktemp("resume_module"))


def ids(batches: Any) -> list[int]:
    out: list[int] = []
    for batch in batches:
        out.extend(batch["id"].tolist() if isinstance(batch, dict) else batch.id.tolist())
    return out


def loader(dataset: Dataset[Any], workers: int, persistent: bool = False, **options: Any) -> Any:
    return torch.utils.data.DataLoader(
        dataset.to_torch(),
        batch_size=None,
        num_workers=workers,
        persistent_workers=persistent,
        **options,
    )


def dataset(module: ModuleType, files: Any, **options: Any) -> Dataset[Any]:
    options.setdefault("batch_size", 4)
    result: Dataset[Any] = module.Item.dataset(files, **options)
    return result


@pytest.mark.parametrize(
    ("workers", "persistent"), [(0, False), (2, False), (2, True)], ids=["main", "fresh", "kept"]
)
def test_every_dataloader_epoch_has_a_new_order_fixed_by_the_seed(
    module: ModuleType, tmp_path: Path, workers: int, persistent: bool
) -> None:
    paths = write_shards(module, tmp_path)
    every = list(range(sum(SIZES)))
    data = dataset(module, paths, shuffle_buffer=10, seed=5)
    epochs = loader(data, workers, persistent)
    first, second, third = ids(epochs), ids(epochs), ids(epochs)
    assert sorted(first) == sorted(second) == sorted(third) == every
    assert len({tuple(first), tuple(second), tuple(third)}) == 3
    again = dataset(module, paths, shuffle_buffer=10, seed=5)
    assert ids(loader(again, workers, persistent)) == first  # the same seed, the same epochs
    again.set_epoch(2)
    assert ids(loader(again, workers, persistent)) == third
    in_process = dataset(module, paths, shuffle_buffer=10, seed=5)
    if workers == 0:  # for loops over the dataset itself advance the same way
        assert [ids(in_process) for _ in range(3)] == [first, second, third]


def test_the_order_of_an_epoch_is_the_same_in_a_new_process(
    module: ModuleType, tmp_path: Path
) -> None:
    paths = write_shards(module, tmp_path)
    data = dataset(module, paths, shuffle_buffer=10, seed=9)
    ids(data)
    expected = ids(data)  # epoch 1
    script = f"""
        data = {MODULE}.Item.dataset({[str(p) for p in paths]!r}, batch_size=4, shuffle_buffer=10, seed=9)
        data.set_epoch(1)
        print(json.dumps([i for b in data for i in b.id.tolist()]))
    """
    assert json.loads(_run(module, script)) == expected


def _run(module: ModuleType, script: str) -> str:
    """Runs ``script`` in a new Python process that imports ``module`` (and json); its output."""
    directory = str(Path(module.__file__ or "").parent)
    head = f"import json, sys\nsys.path.insert(0, {directory!r})\nimport {MODULE}\n"
    done = subprocess.run(
        [*PYTHON, "-c", head + textwrap.dedent(script)],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def write_damaged(module: ModuleType, directory: Path, compression: Compression) -> list[Path]:
    """Seven files of uneven sizes; one holds a record that does not decode."""
    paths = []
    first = 0
    for j, size in enumerate((9, 1, 14, 6, 0, 11, 5)):
        path = directory / f"part-{j}.tfrecord{'.gz' if compression else ''}"
        records = [item(module, i).encode() for i in range(first, first + size)]
        if j == 2:
            records.insert(5, UNDECODABLE)
        write_tfrecord(path, records, compression=compression)
        paths.append(path)
        first += size
    return paths


def _resumed(
    build: Any, workers: int, stop_after: int, *, roundtrip: bool = True
) -> tuple[list[int], list[int]]:
    """One uninterrupted run's ids, and those of a run stopped after ``stop_after`` batches, saved,
    rebuilt from scratch and finished."""
    whole = ids(
        stateful.StatefulDataLoader(build().to_torch(), batch_size=None, num_workers=workers)
    )
    first = stateful.StatefulDataLoader(build().to_torch(), batch_size=None, num_workers=workers)
    taken: list[int] = []
    batches = iter(first)
    for _ in range(stop_after):
        taken.extend(next(batches)["id"].tolist())
    state = first.state_dict()
    del batches, first
    if roundtrip:
        state = json.loads(json.dumps(state))
    second = stateful.StatefulDataLoader(build().to_torch(), batch_size=None, num_workers=workers)
    second.load_state_dict(state)
    return whole, taken + ids(second)


@pytest.mark.parametrize("shuffle", [0, 6], ids=["ordered", "shuffled"])
@pytest.mark.parametrize("workers", [0, 2])
@pytest.mark.parametrize("ranks", [1, 2])
@pytest.mark.parametrize("compression", [None, "gzip"])
def test_a_resumed_run_finishes_as_the_uninterrupted_one(
    module: ModuleType,
    tmp_path: Path,
    shuffle: int,
    workers: int,
    ranks: int,
    compression: Compression,
) -> None:
    paths = write_damaged(module, tmp_path, compression)
    for rank in range(ranks):

        def build(rank: int = rank) -> Dataset[Any]:
            return dataset(
                module,
                paths,
                shuffle_buffer=shuffle,
                seed=4,
                epochs=2,
                interleave=2,
                rank=rank,
                world_size=ranks,
                on_error="skip",
                on_skip=lambda skipped: None,
            )

        one_epoch = build()
        one_epoch.epochs = 1
        epoch_end = len(list(one_epoch))  # in the main process: the exact end of epoch 0
        for stop_after in (2, epoch_end):
            whole, resumed = _resumed(build, workers, stop_after)
            assert resumed == whole
        assert len(whole) > 0


def test_a_state_saved_after_an_iteration_resumes_with_the_next_epoch(
    module: ModuleType, tmp_path: Path
) -> None:
    workers = 0
    paths = write_shards(module, tmp_path)
    options: dict[str, Any] = {"shuffle_buffer": 10, "seed": 2}
    run = stateful.StatefulDataLoader(
        dataset(module, paths, **options).to_torch(), batch_size=None, num_workers=workers
    )
    first = ids(run)
    state = json.loads(json.dumps(run.state_dict()))
    second = ids(run)
    assert sorted(first) == sorted(second) and first != second
    resumed = stateful.StatefulDataLoader(
        dataset(module, paths, **options).to_torch(), batch_size=None, num_workers=workers
    )
    resumed.load_state_dict(state)
    assert ids(resumed) == second  # not epoch 0 again, not epoch 2


def test_a_state_resumes_in_a_new_process(module: ModuleType, tmp_path: Path) -> None:
    paths = write_damaged(module, tmp_path, "gzip")
    options = "batch_size=4, shuffle_buffer=5, seed=1, epochs=2, on_error='skip'"
    data = dataset(module, paths, shuffle_buffer=5, seed=1, epochs=2, on_error="skip")
    whole = ids(data)
    data.set_epoch(0)
    batches = iter(data)
    taken = [i for _ in range(6) for i in next(batches).id.tolist()]
    state = data.state_dict()
    assert len(json.dumps(state)) < 2000
    script = f"""
        data = {MODULE}.Item.dataset({[str(p) for p in paths]!r}, {options})
        data.load_state_dict(json.loads({json.dumps(state)!r}))
        print(json.dumps([i for b in data for i in b.id.tolist()]))
    """
    assert taken + json.loads(_run(module, script)) == whole


def test_a_plain_dataloader_in_the_main_process_resumes_through_the_dataset(
    module: ModuleType, tmp_path: Path
) -> None:
    paths = write_shards(module, tmp_path)
    data = dataset(module, paths, shuffle_buffer=7, seed=3, batch_size=3)
    whole = ids(loader(data, 0))
    data.set_epoch(0)
    batches = iter(loader(data, 0))
    taken = [i for _ in range(4) for i in next(batches)["id"].tolist()]
    state = data.state_dict()
    rebuilt = dataset(module, paths, shuffle_buffer=7, seed=3, batch_size=3)
    rebuilt.load_state_dict(state)
    assert taken + ids(loader(rebuilt, 0)) == whole


def test_records_one_by_one_resume_too(module: ModuleType, tmp_path: Path) -> None:
    paths = write_damaged(module, tmp_path, None)

    def build() -> Dataset[Any]:
        return dataset(
            module,
            paths,
            batch_size=None,
            shuffle_buffer=4,
            seed=8,
            epochs=2,
            on_error="skip",
            on_skip=lambda skipped: None,
        )

    whole = [r.id for r in build()]
    for stop_after in (1, 40, 53, 54, 55):
        data = build()
        records = iter(data)
        taken = [next(records).id for _ in range(stop_after)]
        state = data.state_dict()
        rebuilt = build()
        rebuilt.load_state_dict(state)
        assert taken + [r.id for r in rebuilt] == whole


def test_a_state_of_other_data_is_refused(module: ModuleType, tmp_path: Path) -> None:
    paths = write_shards(module, tmp_path)
    data = dataset(module, paths, shuffle_buffer=7, seed=3)
    next(iter(data))
    state = data.state_dict()
    assert {"files", "fingerprint", "seed", "epoch", "consumed"} <= set(state)
    assert state["fingerprint"] == module.SCHEMA.fingerprint
    with pytest.raises(TfrGenError, match="saved for other data: its files"):
        dataset(module, paths[:-1], shuffle_buffer=7, seed=3).load_state_dict(state)
    with pytest.raises(TfrGenError, match="saved for other data: its schema fingerprint"):
        dataset(module, paths, shuffle_buffer=7, seed=3).load_state_dict(
            {**state, "fingerprint": "0" * 64}
        )
    with pytest.raises(TfrGenError, match="saved for other data: its options"):
        dataset(module, paths, shuffle_buffer=8, seed=3).load_state_dict(state)
    with pytest.raises(TfrGenError, match="the state's seed 3 is not this dataset's 4"):
        dataset(module, paths, shuffle_buffer=7, seed=4).load_state_dict(state)
    with pytest.raises(TfrGenError, match=r"state is of shard \[0, 1\]; this process reads"):
        dataset(module, paths, shuffle_buffer=7, seed=3, rank=1, world_size=2).load_state_dict(
            state
        )
    with pytest.raises(TfrGenError, match="not a dataset state"):
        data.load_state_dict({"epoch": 1})
    # the same name, another size: another file
    write_tfrecord(paths[0], [item(module, 0).encode()])
    with pytest.raises(TfrGenError, match="saved for other data: its files"):
        dataset(module, paths, shuffle_buffer=7, seed=3).load_state_dict(state)


def test_a_state_loaded_in_the_main_process_is_refused_by_dataloader_workers(
    module: ModuleType, tmp_path: Path
) -> None:
    paths = write_shards(module, tmp_path)
    data = dataset(module, paths, seed=3)
    batches = iter(data)
    next(batches)
    state = data.state_dict()
    assert (state["epoch"], state["consumed"]) == (0, 4)
    rebuilt = dataset(module, paths, seed=3)
    rebuilt.load_state_dict(state)  # fits this process's shard, not the workers'
    with pytest.raises(
        Exception, match="does not fit DataLoader workers; use torchdata's Stateful"
    ):
        ids(loader(rebuilt, 2))
