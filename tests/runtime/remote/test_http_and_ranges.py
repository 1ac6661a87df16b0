"""Reading over HTTP and S3: indexed() takes random records by ranged reads, not the whole file; a
file read through is asked for in large blocks; the Dataset reads files served over HTTP."""

from __future__ import annotations

import random
from typing import Any

import fsspec
import numpy as np

from codegen.runtime.io.files import SEQUENTIAL_BLOCK
from codegen.runtime.io.indexed import INDEX_SUFFIX, IndexedReader, write_index
from codegen.runtime.io.reader import read_tfrecord
from codegen.runtime.io.writer import write_tfrecord
from support.modules import generated_module

RECORDS = [bytes([i % 251]) * (100 + i * 7919 % 3000) for i in range(2000)]
"""About 3 MB of records of varied sizes."""


def _picks() -> list[int]:
    return random.Random(15).sample(range(len(RECORDS)), 25) + [0, -1]


def test_http_random_access_reads_ranges_of_the_file(http_files: Any) -> None:
    local = http_files.directory / "r.tfrecord"
    write_tfrecord(local, RECORDS, compression=None)
    write_index(local)
    size = local.stat().st_size
    http_files.clear()
    with IndexedReader(http_files.url + "r.tfrecord") as remote, IndexedReader(local) as near:
        assert remote.index_path == http_files.url + "r.tfrecord" + INDEX_SUFFIX
        assert len(remote) == len(RECORDS)
        assert [remote[i] for i in _picks()] == [near[i] for i in _picks()]
    of_file = [r for r in http_files.requests if r.path == "/r.tfrecord" and r.method == "GET"]
    assert of_file and all(r.range is not None for r in of_file)
    assert sum(r.sent for r in of_file) < size / 4, (sum(r.sent for r in of_file), size)


def test_s3_random_access_equals_local_reads(s3: Any, tmp_path: Any) -> None:
    bucket = s3.new_bucket()
    local = tmp_path / "r.tfrecord"
    write_tfrecord(local, RECORDS, compression=None)
    url = f"{bucket}/data/r.tfrecord"
    fs = fsspec.filesystem("s3", **s3.storage_options)
    fs.put_file(str(local), url)
    info = write_index(url, storage_options=s3.storage_options)
    assert len(info.offsets) == len(RECORDS)
    with (
        IndexedReader(url, storage_options=s3.storage_options) as remote,
        IndexedReader(local) as near,
    ):
        assert remote.index_path == url + INDEX_SUFFIX
        assert [remote[i] for i in _picks()] == [near[i] for i in _picks()]
        assert remote[10:13] == RECORDS[10:13]


def test_a_file_read_through_is_asked_for_in_large_blocks(http_files: Any) -> None:
    local = http_files.directory / "r.tfrecord"
    write_tfrecord(local, RECORDS * 4, compression=None)  # about 13 MB
    size = local.stat().st_size
    http_files.clear()
    assert list(read_tfrecord(http_files.url + "r.tfrecord")) == RECORDS * 4
    gets = [r for r in http_files.requests if r.method == "GET" and r.path == "/r.tfrecord"]
    assert sum(r.sent for r in gets) == size
    assert len(gets) <= -(-size // SEQUENTIAL_BLOCK) + 1, [r.range for r in gets]


def test_the_dataset_reads_files_served_over_http(http_files: Any) -> None:
    digit = generated_module("mnist").Digit
    records = [digit(label=i, image=np.full(784, i, dtype=np.int64)) for i in range(50)]
    for k in range(3):
        digit.write_tfrecord(http_files.directory / f"d-{k}.tfrecord", records[k::3])
    files = [f"{http_files.url}d-{k}.tfrecord" for k in range(3)]
    dataset = digit.dataset(files, batch_size=None)
    assert [d.label for d in dataset] == [r.label for k in range(3) for r in records[k::3]]
