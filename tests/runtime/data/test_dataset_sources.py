"""What a Dataset reads and counts: ``write_dataset`` directories and manifests with their schema
check, record counts from manifests, indexes or a counting pass (``len()``), and
``equal_batches`` giving every rank and worker the same number of batches."""

from __future__ import annotations

import itertools
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any
from unittest import mock

import pytest

from codegen.errors import SchemaMismatchError, TfrGenError
from codegen.runtime import write_tfrecord
from codegen.runtime.data.dataset import Dataset
from codegen.runtime.io.indexed import write_index
from support.modules import generate_module
from support.shards import ITEM_SCHEMA, SIZES, item, write_shards

BREAKING = ITEM_SCHEMA.replace("version: 1", "version: 2").replace(
    "id: {dtype: int64}", "id: {key: item_id, dtype: int64}"
)
NEWER = ITEM_SCHEMA.replace("version: 1", "version: 2") + (
    "      score: {dtype: float32, default: 0.5}\n"
)


@pytest.fixture(scope="module")
def modules(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, ModuleType]]:
    tmp = tmp_path_factory.mktemp("source_modules")
    texts = {"src_items": ITEM_SCHEMA, "src_breaking": BREAKING, "src_newer": NEWER}
    found = {name: generate_module(text, name, tmp) for name, text in texts.items()}
    yield found
    for name in found:
        del sys.modules[name]


def ids(dataset: Dataset[Any]) -> list[int]:
    return [i for batch in dataset for i in batch.id.tolist()]


def write_items(module: ModuleType, directory: Path, count: int, shards: int) -> Any:
    return module.Item.write_dataset(
        directory, (item(module, i) for i in range(count)), shards=shards
    )


def test_a_dataset_directory_or_its_manifest_reads_its_shards(
    modules: dict[str, ModuleType], tmp_path: Path
) -> None:
    items = modules["src_items"]
    manifest = write_items(items, tmp_path / "data", 40, 3)
    for files in (tmp_path / "data", manifest.path, str(tmp_path / "data" / "*")):
        dataset = items.Item.dataset(files, batch_size=8)
        assert dataset.files == manifest.paths  # a glob's manifest and shards are one dataset
        assert sorted(ids(dataset)) == list(range(40))
        assert len(dataset) == 5  # from the manifest, nothing read


def test_a_dataset_is_checked_against_the_readers_schema(
    modules: dict[str, ModuleType], tmp_path: Path
) -> None:
    write_items(modules["src_items"], tmp_path, 10, 2)
    newer = modules["src_newer"].Item.dataset(tmp_path, batch_size=None)
    assert [(r.id, r.score) for r in newer] == [(i, 0.5) for i in range(10)]
    breaking = modules["src_breaking"].Item
    with pytest.raises(
        SchemaMismatchError, match=r"breaking \(blocks reading\).*features\.id\.key"
    ):
        breaking.dataset(tmp_path, batch_size=4)
    unchecked = breaking.dataset(tmp_path, batch_size=4, check_schema=False)
    with pytest.raises(TfrGenError, match="required feature is missing"):
        list(unchecked)


def test_len_needs_record_counts_from_an_index_or_a_counting_pass(
    modules: dict[str, ModuleType], tmp_path: Path
) -> None:
    items = modules["src_items"]
    paths = write_shards(items, tmp_path)
    dataset = items.Item.dataset(paths, batch_size=5)
    with pytest.raises(TypeError, match="record count of .* is not known.*count=True"):
        len(dataset)
    counted = items.Item.dataset(paths, batch_size=5, count=True)
    # files are batched separately only at epoch ends: one stream of sum(SIZES) records
    assert len(counted) == -(-sum(SIZES) // 5) == len(list(counted))
    assert len(items.Item.dataset(paths, batch_size=5, count=True, epochs=3)) == 3 * len(counted)
    records = items.Item.dataset(paths, batch_size=None, count=True)
    assert len(records) == sum(SIZES)
    with pytest.raises(TypeError, match="without end"):
        len(items.Item.dataset(paths, batch_size=5, count=True, epochs=None))
    plain = [p for p in paths if p.suffix == ".tfrecord"]
    for path in plain:
        write_index(path)
    indexed = items.Item.dataset(plain, batch_size=2, drop_remainder=True)
    total = sum(SIZES[0::2])
    assert len(indexed) == total // 2 == len(list(indexed))
    write_tfrecord(plain[0], [item(items, 1000).encode()])  # the index is stale now
    with pytest.raises(TypeError, match="is not known"):
        len(items.Item.dataset(plain, batch_size=2))


UNEVEN = (11, 97, 13, 40, 9, 64, 30)


@mock.patch("torch.utils.data.get_worker_info")
def _per_shard(
    module: ModuleType, files: Any, ranks: int, workers: int, info: mock.Mock, **options: Any
) -> list[list[list[int]]]:
    """The batches (as id lists) each (rank, worker) reads."""
    out = []
    for rank in range(ranks):
        for worker in range(workers):
            info.return_value = SimpleNamespace(id=worker, num_workers=workers)
            dataset = module.Item.dataset(files, rank=rank, world_size=ranks, **options)
            got = [batch.id.tolist() for batch in dataset]
            assert len(dataset) == len(got)
            out.append(got)
    return out


@pytest.mark.parametrize("ranks", [2, 3])
@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("shuffle", [0, 50])
def test_equal_batches_give_every_rank_and_worker_the_same_batch_count(
    modules: dict[str, ModuleType], tmp_path: Path, ranks: int, workers: int, shuffle: int
) -> None:
    items = modules["src_items"]
    paths = write_shards(items, tmp_path, UNEVEN)
    total = sum(UNEVEN)
    options: dict[str, Any] = {"batch_size": 8, "count": True, "shuffle_buffer": shuffle, "seed": 3}
    uneven = _per_shard(items, paths, ranks, workers, **options)
    assert len({len(batches) for batches in uneven}) > 1, "the shards differ without the option"

    dropped = _per_shard(items, paths, ranks, workers, equal_batches="drop", **options)
    counts = {len(batches) for batches in dropped}
    assert len(counts) == 1
    seen = Counter(i for batches in dropped for batch in batches for i in batch)
    assert all(len(batch) == 8 for batches in dropped for batch in batches)
    assert max(seen.values()) == 1  # nothing twice; the remainder of each shard left out
    least = min(len(sum(batches, [])) for batches in uneven)
    assert len(seen) == len(dropped) * (least // 8 * 8)

    padded = _per_shard(items, paths, ranks, workers, equal_batches="pad", **options)
    assert len({len(batches) for batches in padded}) == 1
    assert all(len(batch) == 8 for batches in padded for batch in batches)
    seen = Counter(i for batches in padded for batch in batches for i in batch)
    assert set(seen) == set(range(total))  # every record, some of them twice to pad
    for before, after in zip(uneven, padded, strict=True):
        mine = sum(before, [])
        extra = sum(after, [])[len(mine) :]
        assert sum(after, [])[: len(mine)] == mine  # the epoch first, then its first records again
        assert extra == list(itertools.islice(itertools.cycle(mine), len(extra)))


def test_equal_batches_need_counts_and_records_to_pad_with(
    modules: dict[str, ModuleType], tmp_path: Path
) -> None:
    items = modules["src_items"]
    paths = write_shards(items, tmp_path, (3, 0))
    with pytest.raises(TypeError, match="is not known"):
        list(items.Item.dataset(paths, batch_size=2, equal_batches="pad"))
    empty = items.Item.dataset(
        paths, batch_size=2, equal_batches="pad", count=True, rank=1, world_size=2
    )
    with pytest.raises(TfrGenError, match="shard 1 of 2 read no record"):
        list(empty)
    with pytest.raises(TfrGenError, match="equal_batches must be"):
        items.Item.dataset(paths, batch_size=2, equal_batches="even")
    with pytest.raises(TfrGenError, match="leave out drop_remainder"):
        items.Item.dataset(paths, batch_size=2, equal_batches="drop", drop_remainder=True)


def test_a_shard_changed_after_its_manifest_was_written_is_refused_or_skipped(
    modules: dict[str, ModuleType], tmp_path: Path
) -> None:
    items = modules["src_items"]
    manifest = write_items(items, tmp_path / "data", 40, 2)
    first, second = manifest.paths
    items.Item.write_tfrecord(second, [item(items, 100)])  # valid records, other bytes
    dataset = items.Item.dataset(tmp_path / "data", batch_size=8)
    with pytest.raises(TfrGenError, match="changed or replaced after the dataset was written"):
        ids(dataset)
    skipped: list[Any] = []
    dataset = items.Item.dataset(
        tmp_path / "data", batch_size=8, on_error="skip", on_skip=skipped.append
    )
    assert ids(dataset) == list(range(20))  # the first shard only
    assert [span.path for span in skipped] == [second]
    assert "its manifest lists" in skipped[0].reason


def replace_second_shard(items: ModuleType, directory: Path) -> tuple[Any, str]:
    """A 2-shard dataset of ids 0-39 (uncompressed) whose second shard is replaced by valid records
    of other ids (60-79), of the same size."""
    manifest = items.Item.write_dataset(
        directory, (item(items, i) for i in range(40)), shards=2, compression=None
    )
    other = items.Item.write_dataset(
        directory.parent / "other",
        (item(items, i) for i in range(40, 80)),
        shards=2,
        compression=None,
    )
    second = manifest.paths[1]
    Path(second).write_bytes(Path(other.paths[1]).read_bytes())
    assert Path(second).stat().st_size == manifest.shards[1].size
    return manifest, second


@pytest.mark.parametrize(
    ("batch_size", "interleave", "shuffle_buffer"), [(8, 1, 0), (None, 2, 0), (8, 1, 16)]
)
def test_a_shard_replaced_by_one_of_the_same_size_is_refused(
    modules: dict[str, ModuleType],
    tmp_path: Path,
    batch_size: int | None,
    interleave: int,
    shuffle_buffer: int,
) -> None:
    items = modules["src_items"]
    _, second = replace_second_shard(items, tmp_path / "data")
    dataset = items.Item.dataset(
        tmp_path / "data",
        batch_size=batch_size,
        interleave=interleave,
        shuffle_buffer=shuffle_buffer,
        seed=0,
    )
    crc = r"the shard's crc32c is [0-9a-f]{8} but the manifest lists [0-9a-f]{8}"
    with pytest.raises(TfrGenError, match=rf"^{second}: {crc}: it was changed or replaced"):
        list(dataset)


def test_a_replaced_shard_is_reported_when_skipping(
    modules: dict[str, ModuleType], tmp_path: Path
) -> None:
    items = modules["src_items"]
    manifest, second = replace_second_shard(items, tmp_path / "data")
    skipped: list[Any] = []
    dataset = items.Item.dataset(
        tmp_path / "data", batch_size=8, on_error="skip", on_skip=skipped.append
    )
    assert ids(dataset) == list(range(20)) + list(range(60, 80))  # read in the same pass
    (span,) = skipped
    assert (span.path, span.offset, span.length) == (second, manifest.shards[1].size, 0)
    assert "crc32c" in span.reason and span.reason.endswith("its records were read")
    assert dataset.skipped.spans == 1


def test_shards_are_checksummed_in_the_pass_that_reads_them(
    modules: dict[str, ModuleType], tmp_path: Path
) -> None:
    """Each shard is opened once per epoch (no second read for the checksum), and an intact
    dataset reads whole, with a format version 1 manifest's shards (no crc32c) read unchecked."""
    from codegen.runtime.data import sources
    from codegen.runtime.io.files import open_input

    items = modules["src_items"]
    manifest = write_items(items, tmp_path / "data", 40, 4)
    opened: list[str] = []

    def counted(path: str, **options: Any) -> Any:
        opened.append(path)
        return open_input(path, **options)

    with mock.patch.object(sources, "open_input", counted):
        dataset = items.Item.dataset(tmp_path / "data", batch_size=8, epochs=2)
        assert sorted(ids(dataset)) == sorted(list(range(40)) * 2)
    assert sorted(opened) == sorted(manifest.paths * 2)
