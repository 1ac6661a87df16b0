"""The multi-file Dataset: every record exactly once per epoch across workers and ranks, seeded
shuffling, epochs, interleaving, batching, errors naming the file and offset, and skipping bad data
with ``on_error="skip"``."""

from __future__ import annotations

import gzip
import importlib.util
import os
import pickle
from collections import Counter
from collections.abc import Generator
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any
from unittest import mock

import pytest

from codegen.errors import DataError, TfrGenError
from codegen.runtime import write_tfrecord
from codegen.runtime.codec.columns import Ragged
from codegen.runtime.data.dataset import Dataset, Shard, record_dataset
from codegen.runtime.io.skips import SkipCounts, SkippedRecord, SkippedSpan
from support.framing import frame_offsets
from support.messages import UNDECODABLE
from support.modules import generate_module
from support.shards import ITEM_SCHEMA, SIZES, item, write_shards


@pytest.fixture(scope="module")
def module(tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    return generate_module(ITEM_SCHEMA, "loader_items", tmp_path_factory.mktemp("loader_module"))


@pytest.fixture
def shards(module: ModuleType, tmp_path: Path) -> list[Path]:
    return write_shards(module, tmp_path)


def batches(module: ModuleType, files: Any, **options: Any) -> Dataset[Any]:
    options.setdefault("batch_size", 4)
    return Dataset.of_batches(files, module.ItemBatch.decode, module.Item.decode, **options)


def ids(dataset: Dataset[Any]) -> list[int]:
    return [
        i for item in dataset for i in (item.id.tolist() if hasattr(item, "records") else [item.id])
    ]


@mock.patch("torch.utils.data.get_worker_info")
def shard_ids(
    module: ModuleType, files: Any, workers: int, ranks: int, info: mock.Mock, **options: Any
) -> list[list[int]]:
    """The ids each (rank, worker) reads, DataLoader workers stood in for by ``get_worker_info``."""
    out = []
    for rank in range(ranks):
        for worker in range(workers):
            info.return_value = SimpleNamespace(id=worker, num_workers=workers)
            dataset = batches(module, files, rank=rank, world_size=ranks, **options)
            assert dataset.shard() == Shard(rank * workers + worker, ranks * workers)
            out.append(ids(dataset))
    return out


@pytest.mark.parametrize("workers", [1, 2, 4])
@pytest.mark.parametrize("files", [8, 3], ids=["by-file", "by-record"])
def test_every_record_is_read_once_per_epoch_across_workers_and_ranks(
    module: ModuleType, tmp_path: Path, workers: int, files: int
) -> None:
    pytest.importorskip("torch")
    sizes = SIZES[:files]
    paths = write_shards(module, tmp_path, sizes)
    per_shard = shard_ids(
        module, [str(p) for p in paths], workers, 2, shuffle_buffer=5, seed=1, epochs=2
    )
    assert len(per_shard) == 2 * workers
    total = sum(sizes)
    assert Counter(i for got in per_shard for i in got) == Counter({i: 2 for i in range(total)})
    for got in per_shard:  # each epoch reads the shard's records once
        half = len(got) // 2
        assert sorted(got[:half]) == sorted(got[half:]) and len(set(got[:half])) == half
    if files >= 2 * workers:  # shard by file: a shard's records come from its own files
        owners = {
            i: j for j, first in enumerate(_firsts(sizes)) for i in range(first, first + sizes[j])
        }
        for s, got in enumerate(per_shard):
            assert {owners[i] % (2 * workers) for i in got} <= {s}


def _firsts(sizes: tuple[int, ...]) -> list[int]:
    return [sum(sizes[:j]) for j in range(len(sizes))]


def test_without_torch_there_is_one_shard(module: ModuleType, shards: list[Path]) -> None:
    with mock.patch.dict("sys.modules", {"torch": None, "torch.distributed": None}):
        dataset = batches(module, shards)
        assert dataset.shard() == Shard(0, 1)
        assert sorted(ids(dataset)) == list(range(sum(SIZES)))


def test_an_initialised_torch_distributed_gives_rank_and_world_size(
    module: ModuleType, shards: list[Path]
) -> None:
    distributed = SimpleNamespace(is_available=lambda: True, is_initialized=lambda: True)
    distributed.get_rank = lambda: 1
    distributed.get_world_size = lambda: 3
    with mock.patch.dict("sys.modules", {"torch": None, "torch.distributed": distributed}):
        assert batches(module, shards).shard() == Shard(1, 3)
        assert batches(module, shards, rank=0, world_size=2).shard() == Shard(0, 2)


def test_no_shuffle_reads_files_in_sorted_order(module: ModuleType, shards: list[Path]) -> None:
    reversed_names = [str(p) for p in reversed(shards)]
    assert ids(batches(module, reversed_names)) == list(range(sum(SIZES)))
    assert ids(batches(module, str(shards[0].parent / "part-0*"))) == list(range(sum(SIZES)))


def test_shuffling_is_fixed_by_seed_and_epoch(module: ModuleType, shards: list[Path]) -> None:
    total = sum(SIZES)
    first = ids(batches(module, shards, shuffle_buffer=10, seed=7, epochs=3))
    assert first == ids(batches(module, shards, shuffle_buffer=10, seed=7, epochs=3))
    epochs = [first[k * total : (k + 1) * total] for k in range(3)]
    assert all(sorted(e) == list(range(total)) for e in epochs)
    assert len({tuple(e) for e in epochs}) == 3, "every epoch has its own order"
    assert epochs[0] != list(range(total))
    assert ids(batches(module, shards, shuffle_buffer=10, seed=8)) != epochs[0]
    unseeded = batches(module, shards, shuffle_buffer=10)
    once = ids(unseeded)
    unseeded.set_epoch(0)
    assert ids(unseeded) == once, "seed=None picks one seed per Dataset"


def test_batches_do_not_span_epochs_and_drop_remainder_drops_the_last(
    module: ModuleType, shards: list[Path]
) -> None:
    total = sum(SIZES)  # 51: batches of 4 leave 3 in every epoch
    kept = [len(b) for b in batches(module, shards, batch_size=4, epochs=2)]
    assert kept == ([4] * (total // 4) + [total % 4]) * 2
    dropped = [len(b) for b in batches(module, shards, batch_size=4, epochs=2, drop_remainder=True)]
    assert dropped == [4] * (total // 4) * 2
    assert [len(b) for b in batches(module, shards, epochs=0)] == []


def test_interleave_takes_turns_and_refills_from_the_next_file(
    module: ModuleType, tmp_path: Path
) -> None:
    paths = write_shards(module, tmp_path, (3, 1, 2, 2))  # ids 0-2 | 3 | 4-5 | 6-7
    assert ids(batches(module, paths, interleave=2)) == [0, 3, 1, 4, 2, 5, 6, 7]
    assert ids(batches(module, paths, interleave=3)) == [0, 3, 4, 1, 6, 5, 2, 7]
    assert ids(batches(module, paths, interleave=9)) == [0, 3, 4, 6, 1, 5, 7, 2]


def test_records_one_by_one(module: ModuleType, shards: list[Path]) -> None:
    records = list(Dataset.of_records(shards, module.Item.decode, shuffle_buffer=4, seed=3))
    assert sorted(r.id for r in records) == list(range(sum(SIZES)))
    assert all(r == item(module, r.id) for r in records)
    with pytest.raises(TfrGenError, match="needs a dataset of batches"):
        Dataset.of_records(shards, module.Item.decode).to_torch()


def test_a_record_class_dataset_gives_batches_or_records(
    module: ModuleType, shards: list[Path]
) -> None:
    def dataset(**options: Any) -> Dataset[Any]:
        return record_dataset(shards, module.Item.decode, module.ItemBatch.decode, **options)

    assert [len(b) for b in dataset(batch_size=20, drop_remainder=True)] == [20, 20]
    assert [r.id for r in dataset(batch_size=None, interleave=2)][:4] == [0, 7, 1, 8]
    with pytest.raises(TfrGenError, match="batch_size and drop_remainder need a decode_batch"):
        dataset(batch_size=None, drop_remainder=True)


def test_stopping_early_closes_the_files(module: ModuleType, shards: list[Path]) -> None:
    stream = batches(module, shards, batch_size=2, interleave=3, epochs=None).__iter__()
    assert isinstance(stream, Generator) and len(next(stream)) == 2
    stream.close()  # an unclosed file would be reported as an error when collected


def test_a_dataset_pickles_for_spawned_workers(module: ModuleType, shards: list[Path]) -> None:
    dataset = batches(module, shards, shuffle_buffer=6)
    assert ids(pickle.loads(pickle.dumps(dataset))) == ids(dataset)
    assert ids(pickle.loads(pickle.dumps(Dataset.of_records(shards, module.Item.decode)))) == ids(
        batches(module, shards)
    )


def test_batches_hold_the_columns(module: ModuleType, shards: list[Path]) -> None:
    (first, *_) = batches(module, shards, batch_size=5)
    assert first.id.tolist() == [0, 1, 2, 3, 4]
    assert isinstance(first.tokens, Ragged) and first.tokens.row(3).tolist() == [0, 1, 2]
    assert first.name == [f"item {i}" for i in range(5)]


def test_a_corrupt_shard_names_file_and_offset(module: ModuleType, tmp_path: Path) -> None:
    paths = write_shards(module, tmp_path, (4, 6))
    data = bytearray(paths[0].read_bytes())
    length = int.from_bytes(data[:8], "little")
    second = 16 + length  # the header of record 1
    data[second + 12] ^= 0xFF
    paths[0].write_bytes(bytes(data))
    with pytest.raises(DataError) as info:
        ids(batches(module, paths))
    assert (
        info.value.path == str(paths[0]) and info.value.offset == second and info.value.index == 1
    )
    assert "corrupt data CRC" in str(info.value)


@pytest.mark.parametrize("batch_size", [None, 3])
def test_a_record_that_does_not_decode_names_file_index_and_offset(
    module: ModuleType, tmp_path: Path, batch_size: int | None
) -> None:
    good = [item(module, i).encode() for i in range(3)]
    path = tmp_path / "bad.tfrecord"
    write_tfrecord(path, [good[0], good[1], b"\x0a\x05\x0a", good[2]])
    dataset: Dataset[Any]
    if batch_size is None:
        dataset = Dataset.of_records(path, module.Item.decode)
    else:
        dataset = batches(module, path, batch_size=batch_size)
    with pytest.raises(DataError) as info:
        list(dataset)
    assert (info.value.path, info.value.index) == (str(path), 2)
    assert info.value.offset == sum(16 + len(g) for g in good[:2])
    assert "Item: Example" in str(info.value)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"batch_size": 0}, "batch_size must be an int >= 1, got 0"),
        ({"shuffle_buffer": -1}, "shuffle_buffer must be an int >= 0"),
        ({"epochs": 1.5}, "epochs must be an int >= 0, got 1.5"),
        ({"interleave": 0}, "interleave must be an int >= 1"),
        ({"seed": -1}, "seed must be an int >= 0 or None, got -1"),
        ({"rank": 1}, "give both rank and world_size, or neither"),
        ({"rank": 0, "world_size": 0}, "world_size must be an int >= 1, got 0"),
        ({"rank": "0", "world_size": 2}, "rank must be an int >= 0, got '0'"),
        ({"rank": 2, "world_size": 2}, r"rank must be in \[0, 2\), got 2"),
        ({"compression": "lz4"}, "unknown TFRecord compression 'lz4'"),
        ({"on_error": "warn"}, "Dataset: unknown on_error 'warn'; expected 'raise' or 'skip'"),
        ({"on_skip": print}, "Dataset: on_skip is only called with on_error='skip'"),
    ],
)
def test_bad_options_are_refused(
    module: ModuleType, shards: list[Path], options: dict[str, Any], message: str
) -> None:
    with pytest.raises(TfrGenError, match=message):
        batches(module, shards, **options)


def test_bad_file_names_are_refused(module: ModuleType, shards: list[Path]) -> None:
    directory = shards[0].parent
    with pytest.raises(TfrGenError, match="no file matches"):
        batches(module, str(directory / "nothing-*"))
    with pytest.raises(
        TfrGenError,
        match="is a directory without a dataset manifest .*; name its files with a glob",
    ):
        batches(module, directory)
    with pytest.raises(TfrGenError, match="no such file"):
        batches(module, [shards[0], directory / "missing.tfrecord"])
    with pytest.raises(TfrGenError, match="no files given"):
        batches(module, [])


# --- on_error="skip" ------------------------------------------------------------------------------


def _edit_stream(path: Path, edit: Any) -> None:
    """Edits the uncompressed record stream of a file (compressing it again when it is gzip)."""
    raw = path.read_bytes()
    compressed = path.suffix == ".gz"
    stream = edit(gzip.decompress(raw) if compressed else raw)
    path.write_bytes(gzip.compress(stream) if compressed else stream)


def damaged_shards(module: ModuleType, directory: Path) -> tuple[list[Path], set[int], set[Any]]:
    """Files of SIZES[:4] (ids 0-32) with: a corrupt record in the middle of file 0 (id 3), an
    undecodable record with valid CRCs in file 2 (id 12 replaced), and file 3's (gzip) last record
    cut short (id 23). Returns the files, the good ids, and (path, offset, length) of each skip."""
    paths = write_shards(module, directory, SIZES[:4])
    payloads = [item(module, i).encode() for i in range(sum(SIZES[:4]))]
    first = _firsts(SIZES)
    frames0 = frame_offsets(payloads[: SIZES[0]])
    _edit_stream(paths[0], lambda d: d[: frames0[3] + 20] + b"\xff" + d[frames0[3] + 21 :])
    bad = 12
    file2 = payloads[first[2] : first[2] + SIZES[2]]
    file2[bad - first[2]] = UNDECODABLE
    write_tfrecord(paths[2], file2)
    file3 = payloads[first[3] : first[3] + SIZES[3]]
    _edit_stream(paths[3], lambda d: d[:-5])
    skips = {
        (str(paths[0]), frames0[3], 16 + len(payloads[3])),
        (str(paths[2]), frame_offsets(file2)[bad - first[2]], 16 + len(UNDECODABLE)),
        (str(paths[3]), frame_offsets(file3)[-1], 16 + len(file3[-1]) - 5),
    }
    good = set(range(sum(SIZES[:4]))) - {3, bad, first[3] + SIZES[3] - 1}
    return paths, good, skips


@pytest.mark.parametrize("workers", [1, 3])
@pytest.mark.parametrize("batch_size", [None, 4])
def test_skip_reads_each_good_record_once_and_reports_each_skip_once_across_shards(
    module: ModuleType, tmp_path: Path, workers: int, batch_size: int | None
) -> None:
    pytest.importorskip("torch")
    paths, good, skips = damaged_shards(module, tmp_path)
    reports: list[SkippedSpan] = []
    options = {"on_error": "skip", "on_skip": reports.append, "epochs": 2, "seed": 5}
    per_shard = _shard_items(module, paths, workers, 2, batch_size, shuffle_buffer=3, **options)
    assert Counter(i for got in per_shard for i in got) == Counter({i: 2 for i in good})
    assert Counter((r.path, r.offset, r.length) for r in reports) == Counter(
        {skip: 2 for skip in skips}
    )
    (record,) = {r for r in reports if isinstance(r, SkippedRecord)}
    assert record.index == 5 and record.reason.startswith("Item: Example: length 5 at byte")


@mock.patch("torch.utils.data.get_worker_info")
def _shard_items(
    module: ModuleType,
    files: Any,
    workers: int,
    ranks: int,
    batch_size: int | None,
    info: mock.Mock,
    **options: Any,
) -> list[list[int]]:
    """The ids each (rank, worker) reads, as :func:`shard_ids` but batches or records."""
    out = []
    for rank in range(ranks):
        for worker in range(workers):
            info.return_value = SimpleNamespace(id=worker, num_workers=workers)
            dataset = record_dataset(
                files,
                module.Item.decode,
                module.ItemBatch.decode,
                batch_size=batch_size,
                rank=rank,
                world_size=ranks,
                **options,
            )
            out.append(ids(dataset))
    return out


def test_a_record_that_does_not_decode_leaves_the_owners_of_the_others_as_they_were(
    module: ModuleType, tmp_path: Path
) -> None:
    pytest.importorskip("torch")
    paths = write_shards(module, tmp_path, (9, 6))  # 2 files, 2 ranks x 3 workers: by record
    intact = _shard_items(module, paths, 3, 2, 2)
    write_tfrecord(
        paths[0], [UNDECODABLE if i == 4 else item(module, i).encode() for i in range(9)]
    )
    skipped = _shard_items(module, paths, 3, 2, 2, on_error="skip", on_skip=lambda _: None)
    assert skipped == [[i for i in got if i != 4] for got in intact]
    assert sum(4 in got for got in intact) == 1


def test_a_batch_with_a_bad_record_keeps_the_others_and_fills_up(
    module: ModuleType, tmp_path: Path
) -> None:
    path = tmp_path / "bad.tfrecord"
    payloads = [item(module, i).encode() for i in range(7)]
    payloads[1:1] = [UNDECODABLE]
    payloads[6:6] = [UNDECODABLE]
    write_tfrecord(path, payloads)  # ids 0, bad, 1 2 3 4, bad, 5 6
    reports: list[SkippedSpan] = []
    dataset = batches(module, path, batch_size=3, on_error="skip", on_skip=reports.append)
    assert [b.id.tolist() for b in dataset] == [[0, 1, 2], [3, 4, 5], [6]]
    frames = frame_offsets(payloads)
    assert reports == [
        SkippedRecord(str(path), frames[1], 18, reports[0].reason, 1),
        SkippedRecord(str(path), frames[6], 18, reports[1].reason, 6),
    ]
    assert dataset.skipped == SkipCounts(spans=0, records=2, bytes=36)
    dropped = batches(module, path, batch_size=3, drop_remainder=True, on_error="skip")
    assert [b.id.tolist() for b in dropped] == [[0, 1, 2], [3, 4, 5]]
    assert [r.id for r in Dataset.of_records(path, module.Item.decode, on_error="skip")] == list(
        range(7)
    )


def test_a_file_that_disappears_is_skipped_and_reported_once(
    module: ModuleType, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    paths = write_shards(module, tmp_path, (3, 4, 2))
    whole = [batches(module, paths, on_error="skip", interleave=k) for k in (1, 2)]
    by_record = [  # 3 files, 4 shards: every shard reads every file
        batches(module, paths, on_error="skip", interleave=2, rank=r, world_size=4)
        for r in range(4)
    ]
    raising = batches(module, paths)
    paths[1].unlink()
    for dataset in whole:
        assert sorted(ids(dataset)) == [0, 1, 2, 7, 8]
        assert dataset.skipped == SkipCounts(spans=1, records=0, bytes=0)
    assert sorted(i for dataset in by_record for i in ids(dataset)) == [0, 1, 2, 7, 8]
    assert [dataset.skipped.spans for dataset in by_record] == [0, 1, 0, 0]
    assert [r.getMessage() for r in caplog.records] == [
        f"{paths[1]}: byte offset 0: 0 bytes skipped: cannot read the file: No such file"
        " or directory"
    ] * 3
    with pytest.raises(FileNotFoundError):
        ids(raising)


def test_to_torch_skips_too(module: ModuleType, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    paths, good, _ = damaged_shards(module, tmp_path)
    dataset = batches(module, paths, batch_size=5, on_error="skip")
    assert sorted(i for b in dataset.to_torch() for i in b["id"].tolist()) == sorted(good)
    assert dataset.skipped == SkipCounts(spans=2, records=1, bytes=dataset.skipped.bytes)


@pytest.mark.parametrize("shuffle_buffer", [0, 5])
def test_batches_are_spans_of_the_readers_buffers_unless_shuffled(
    module: ModuleType, shards: list[Path], shuffle_buffer: int
) -> None:
    seen: list[type] = []

    def decode_batch(data: Any) -> Any:
        seen.append(type(data))
        assert all(type(record) is bytes for record in data)  # an item is a copy of its span
        return module.ItemBatch.decode(data)

    dataset = Dataset.of_batches(
        shards, decode_batch, module.Item.decode, batch_size=4, shuffle_buffer=shuffle_buffer
    )
    assert sorted(i for batch in dataset for i in batch.id.tolist()) == list(range(sum(SIZES)))
    accelerated = importlib.util.find_spec("codegen._speedups") is not None and not os.environ.get(
        "TFR_GEN_PURE_PYTHON"
    )
    if accelerated and not shuffle_buffer:
        assert set(seen) == {importlib.import_module("codegen._speedups").Spans}
    else:
        assert set(seen) == {list}
