"""``Record.dataset`` over open binary file objects: one or a sequence, read in the order given and
again for every epoch (compression detected per object), with the same order, counts, sharding by
rank and errors as over the same files named by path; what cannot work is refused clearly."""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any

import fsspec
import numpy as np
import pytest

from codegen.errors import DataError, TfrGenError
from codegen.runtime.io.writer import write_tfrecord
from support.modules import generated_module

Digit = generated_module("mnist").Digit


def digits(start: int, count: int) -> list[Any]:
    return [
        Digit(label=i, image=np.full(784, i % 256, dtype=np.int64))
        for i in range(start, start + count)
    ]


@pytest.fixture
def files(tmp_path: Path) -> list[Path]:
    """Three files, sorted by name as a dataset of paths reads them: plain, gzip and zlib."""
    paths = [tmp_path / "a.tfrecord", tmp_path / "b.tfrecord.gz", tmp_path / "c.tfrecord.zlib"]
    for n, path in enumerate(paths):
        Digit.write_tfrecord(path, digits(n * 20, 20))
    return paths


def buffers(paths: list[Path]) -> list[io.BytesIO]:
    return [io.BytesIO(path.read_bytes()) for path in paths]


def labels(dataset: Any) -> list[list[int]]:
    return [batch.label.tolist() for batch in dataset]


def test_one_file_object_reads_as_its_file(files: list[Path]) -> None:
    for path in files:
        dataset = Digit.dataset(io.BytesIO(path.read_bytes()), batch_size=8, epochs=2)
        assert labels(dataset) == labels(Digit.dataset(path, batch_size=8, epochs=2))
        assert dataset.files == ("<stream 0>",)


@pytest.mark.parametrize(
    "how",
    [
        {"shuffle_buffer": 16, "seed": 3, "epochs": 3},
        {"interleave": 2, "epochs": 2},
        {"interleave": 3, "shuffle_buffer": 5, "seed": 9},
    ],
)
def test_file_objects_give_the_records_of_their_files_in_the_same_order(
    files: list[Path], how: dict[str, Any]
) -> None:
    streams = Digit.dataset(buffers(files), batch_size=7, **how)
    paths = Digit.dataset(files, batch_size=7, **how)
    assert labels(streams) == labels(paths)
    assert labels(streams) == labels(paths)  # the next iterations: the streams read again


def test_files_opened_by_fsspec_and_open_read_alike(files: list[Path]) -> None:
    with (
        fsspec.open(f"file://{files[1]}", "rb") as remote,
        open(files[0], "rb") as local,
    ):
        dataset = Digit.dataset([local, remote], batch_size=None)
        assert [d.label for d in dataset] == list(range(40))
        assert dataset.files[0] == str(files[0])
        assert not local.closed and not remote.closed


def test_a_file_object_is_read_from_its_position_when_given(tmp_path: Path) -> None:
    Digit.write_tfrecord(tmp_path / "x.tfrecord", digits(0, 5))
    stream = io.BytesIO(b"header bytes" + (tmp_path / "x.tfrecord").read_bytes())
    stream.seek(len(b"header bytes"))
    read = Digit.dataset(stream, batch_size=None, epochs=2)
    assert [d.label for d in read] == [0, 1, 2, 3, 4] * 2


def test_counts_and_ranks_work_on_file_objects(files: list[Path]) -> None:
    dataset = Digit.dataset(buffers(files), batch_size=8, count=True)
    assert len(dataset) == 8 and dataset.state_dict()["files"] == [
        [f"<stream {i}>", path.stat().st_size] for i, path in enumerate(files)
    ]
    for world in (2, 5):  # fewer files than ranks: every rank reads every file
        seen = [
            d.label
            for rank in range(world)
            for d in Digit.dataset(buffers(files), batch_size=None, rank=rank, world_size=world)
        ]
        assert sorted(seen) == list(range(60))


def test_a_record_that_does_not_decode_is_named_by_stream_index_and_offset(
    tmp_path: Path,
) -> None:
    good = [d.encode() for d in digits(0, 3)]
    bad = b"\x0a\x09not an Example"  # a Features field that runs past the end
    write_tfrecord(tmp_path / "x.tfrecord", [*good, bad])
    offset = sum(len(r) + 16 for r in good)
    stream = io.BytesIO((tmp_path / "x.tfrecord").read_bytes())
    with pytest.raises(DataError, match=f"<stream 0>: record 3 at byte offset {offset}: "):
        list(Digit.dataset(stream, batch_size=2))
    skipped: list[Any] = []
    stream.seek(0)
    dataset = Digit.dataset(stream, batch_size=2, on_error="skip", on_skip=skipped.append)
    assert labels(dataset) == [[0, 1], [2]]
    assert [(s.path, s.index, s.offset) for s in skipped] == [("<stream 0>", 3, offset)]


def test_what_cannot_read_file_objects_is_refused_clearly(files: list[Path]) -> None:
    with pytest.raises(TypeError, match="give paths and URLs, or binary file objects, not a mix"):
        Digit.dataset([files[0], io.BytesIO(files[1].read_bytes())], batch_size=4)
    with open(files[0], encoding="latin-1") as text:
        with pytest.raises(TypeError, match="Dataset: .* is a text-mode file; open it in binary"):
            Digit.dataset(text, batch_size=4)
    read, write = os.pipe()
    with open(read, "rb") as pipe, open(write, "wb"):
        with pytest.raises(TypeError, match="cannot seek; reading it for every epoch needs a seek"):
            Digit.dataset(pipe, batch_size=4)
    with pytest.raises(TfrGenError, match="gzip-compressed; pass compression='gzip' or 'auto'"):
        Digit.dataset(io.BytesIO(files[1].read_bytes()), batch_size=4, compression=None)
    with pytest.raises(TfrGenError, match="a TFDS split is read from its directories"):
        Digit.dataset(io.BytesIO(files[0].read_bytes()), batch_size=4, split="train")
    for given in (io.BytesIO(files[0].read_bytes()), [io.BytesIO(files[0].read_bytes())]):
        with pytest.raises(TypeError, match="got BytesIO .file objects are read by Record.dataset"):
            Digit.random_access(given)


def test_dataloader_workers_cannot_share_file_objects(files: list[Path]) -> None:
    import torch  # a test dependency

    dataset = Digit.dataset(buffers(files), batch_size=4)
    loader = torch.utils.data.DataLoader(dataset.to_torch(), batch_size=None, num_workers=2)
    with pytest.raises(Exception, match="DataLoader workers cannot share the file objects"):
        list(loader)
    single = torch.utils.data.DataLoader(dataset.to_torch(), batch_size=None, num_workers=0)
    assert sorted(int(x) for batch in single for x in batch["label"]) == list(range(60))
