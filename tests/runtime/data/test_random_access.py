"""Random access across many files (``Record.random_access``) and Grain pipelines over it: the same
files a Dataset reads, by global position, from several threads, and through Grain's loaders."""

from __future__ import annotations

import pickle
import threading
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from codegen.errors import DataError, SchemaMismatchError, TfrGenError
from codegen.runtime import write_tfrecord
from codegen.runtime.io.indexed import write_index
from support.messages import UNDECODABLE
from support.modules import generate_module
from support.shards import ITEM_SCHEMA, item

grain = pytest.importorskip("grain")

SIZES = (6, 0, 11, 3)


_Map: Any = grain.transforms.Map


class _Ids(_Map):  # type: ignore[misc]
    def map(self, element: Any) -> int:
        return int(element.id)


@pytest.fixture(scope="module")
def module(tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    return generate_module(ITEM_SCHEMA, "grain_items", tmp_path_factory.mktemp("grain_module"))


def plain_files(module: ModuleType, directory: Path) -> list[Path]:
    paths, first = [], 0
    for j, size in enumerate(SIZES):
        path = directory / f"part-{j}.tfrecord"
        write_tfrecord(path, [item(module, i).encode() for i in range(first, first + size)])
        paths.append(path)
        first += size
    write_index(paths[2])  # counted by its index; the others by a scan
    return paths


def test_records_by_global_position(module: ModuleType, tmp_path: Path) -> None:
    source = module.Item.random_access(plain_files(module, tmp_path))
    total = sum(SIZES)
    assert len(source) == total
    assert [source[i].id for i in range(total)] == list(range(total))
    assert source[-1].id == total - 1 and source[np.int64(7)].id == 7
    with pytest.raises(IndexError, match="out of range"):
        source[total]
    copy = pickle.loads(pickle.dumps(source))  # for worker processes: no open file inside
    assert [r.id for r in copy] == list(range(total))


def test_reads_from_many_threads_at_once_agree(module: ModuleType, tmp_path: Path) -> None:
    source = module.Item.random_access(plain_files(module, tmp_path))
    total = len(source)
    wrong: list[Any] = []

    def read(seed: int) -> None:
        for i in np.random.default_rng(seed).integers(0, total, 2000).tolist():
            if source[i].id != i:
                wrong.append(i)

    threads = [threading.Thread(target=read, args=(seed,)) for seed in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert wrong == []


def test_a_grain_pipeline_reads_every_record(module: ModuleType, tmp_path: Path) -> None:
    source = module.Item.random_access(plain_files(module, tmp_path))
    total = len(source)
    pipeline = (
        grain.MapDataset.source(source).shuffle(seed=3).map(lambda record: record.id).batch(4)
    )
    got = [int(i) for batch in pipeline for i in batch]
    assert sorted(got) == list(range(total)) and got != list(range(total))
    loader = grain.DataLoader(
        data_source=source,
        sampler=grain.samplers.IndexSampler(
            total, shard_options=grain.sharding.NoSharding(), shuffle=True, num_epochs=1, seed=5
        ),
        operations=[_Ids(), grain.transforms.Batch(5)],
        worker_count=0,
    )
    ids = [int(i) for batch in loader for i in batch]
    assert sorted(ids) == list(range(total))


def test_dataset_directories_are_checked_and_compressed_files_refused(
    module: ModuleType, tmp_path: Path
) -> None:
    manifest = module.Item.write_dataset(
        tmp_path / "data", (item(module, i) for i in range(9)), shards=2, compression=None
    )
    source = module.Item.random_access(tmp_path / "data")
    assert [source[i].id for i in range(len(source))] == list(range(9))
    assert source.files == manifest.paths
    other = generate_module(
        ITEM_SCHEMA.replace("id: {dtype: int64}", "id: {key: other_id, dtype: int64}"),
        "grain_other_items",
        tmp_path,
    )
    with pytest.raises(SchemaMismatchError):
        other.Item.random_access(tmp_path / "data")
    module.Item.write_dataset(tmp_path / "zipped", (item(module, i) for i in range(3)))
    with pytest.raises(TfrGenError, match="gzip-compressed file has no random access"):
        module.Item.random_access(tmp_path / "zipped")


def test_a_record_that_does_not_decode_names_its_file_and_index(
    module: ModuleType, tmp_path: Path
) -> None:
    path = tmp_path / "bad.tfrecord"
    write_tfrecord(path, [item(module, 0).encode(), UNDECODABLE])
    source = module.Item.random_access(path)
    with pytest.raises(DataError) as caught:
        source[1]
    assert caught.value.path == str(path) and caught.value.index == 1
