"""Datasets at URLs: the commit protocol over fsspec stores (:class:`FsspecStore`): every dataset
entry with ``memory://`` and ``file://`` URLs, ``storage_options`` passed through, writes that fail
midway or are killed leave no object under a final name and no manifest, and the writer's lock."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fsspec
import numpy as np
import pytest

from codegen.errors import TfrGenError
from codegen.runtime.data.manifest import load_manifest
from codegen.runtime.data.store import FsspecStore, LocalStore, WriterBusyError, open_store
from support.modules import generated_module
from support.paths import GENERATED, TESTS
from support.processes import PYTHON
from support.stores import (
    ObjectMemoryFileSystem,
    UploadFailed,
    memory_directory,
    object_store,
    register,
)

mnist = generated_module("mnist")
Digit = mnist.Digit


def digits(first: int, count: int) -> list[Any]:
    return [
        Digit(label=i, image=np.full(784, i % 256, dtype=np.int64))
        for i in range(first, first + count)
    ]


def labels(directory: str, **options: Any) -> list[int]:
    return [d.label for d in Digit.read_dataset(directory, **options)]


@pytest.fixture
def root() -> Iterator[str]:
    with memory_directory() as directory:
        yield directory


@pytest.fixture
def store() -> Iterator[type[ObjectMemoryFileSystem]]:
    with object_store() as fs:
        yield fs


@pytest.fixture(params=["memory", "file"])
def directory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "file":
        yield f"file://{tmp_path}/ds"
        return
    with memory_directory() as root:
        yield f"{root}/ds"


def test_every_dataset_entry_takes_a_url(directory: str) -> None:
    manifest = Digit.write_dataset(directory, digits(0, 25), shards=3)
    assert labels(directory) == list(range(25))
    assert Digit.dataset_manifest(directory).record_count == 25
    assert load_manifest(directory, "digit").write_id == manifest.write_id
    for files in (directory, f"{directory}/*.tfrecord.gz", f"{directory}/digit.manifest.json"):
        dataset = Digit.dataset(files, batch_size=10)
        assert sorted(int(x) for b in dataset for x in b.label) == list(range(25))
    assert len(Digit.dataset(directory, batch_size=10)) == 3  # counts from the manifest
    assert sorted(d.label for d in Digit.dataset([directory], batch_size=None, count=True)) == list(
        range(25)
    )
    Digit.write_dataset(directory, digits(40, 3), overwrite=True)
    assert labels(directory) == [40, 41, 42]
    names = open_store(directory).names()
    assert len(names) == 2 and "digit.manifest.json" in names  # the old shards were removed


def test_file_urls_use_the_local_store(tmp_path: Path) -> None:
    assert isinstance(open_store(f"file://{tmp_path}"), LocalStore)
    assert isinstance(open_store(tmp_path), LocalStore)
    assert isinstance(open_store("memory://x"), FsspecStore)
    Digit.write_dataset(f"file://{tmp_path}", digits(0, 3))
    assert labels(str(tmp_path)) == [0, 1, 2]


def test_storage_options_reach_the_store_from_every_entry(
    store: type[ObjectMemoryFileSystem],
) -> None:
    options = {"endpoint": "http://127.0.0.1:9", "token": "t"}
    url = "objmem://bucket/ds"
    Digit.write_dataset(url, digits(0, 12), shards=2, storage_options=options)
    assert labels(url, storage_options=options) == list(range(12))
    assert Digit.dataset_manifest(url, storage_options=options).record_count == 12
    dataset = Digit.dataset(f"{url}/*.gz", batch_size=5, storage_options=options)
    assert sum(len(b) for b in dataset) == 12
    assert store.options and all(o == options for o in store.options)
    finished = [name for name in store.committed if not name.endswith(".lock")]
    assert len(finished) == 3  # two shards and the manifest, each one finished upload


def test_a_dataset_upload_that_fails_midway_leaves_the_previous_dataset(
    store: type[ObjectMemoryFileSystem],
) -> None:
    url = "objmem://bucket/ds"
    Digit.write_dataset(url, digits(0, 10), shards=2)
    before = sorted(store.store)
    store.fail_after = store.uploaded + 30_000  # inside the second shard of the next write
    with pytest.raises(UploadFailed):
        Digit.write_dataset(url, digits(100, 40), shards=4, compression=None, overwrite=True)
    assert store.discarded and sorted(store.store) == before  # no new object, the lock removed
    assert labels(url) == list(range(10))


def test_a_failed_record_stream_leaves_no_manifest_and_no_shard(root: str) -> None:
    def failing() -> Iterator[Any]:
        yield from digits(0, 7)
        raise RuntimeError("the source broke")

    with pytest.raises(RuntimeError, match="source broke"):
        Digit.write_dataset(f"{root}/ds", failing(), max_records_per_shard=3)
    assert open_store(f"{root}/ds").names() == []
    with pytest.raises(TfrGenError, match="cannot list the dataset directory: it holds no objects"):
        Digit.dataset_manifest(f"{root}/ds")


def test_a_second_writer_is_refused_while_the_lock_exists(root: str) -> None:
    url = f"{root}/ds"
    Digit.write_dataset(url, digits(0, 2))
    lock = {"write_id": "0123456789abcdef", "pid": 7, "host": "elsewhere", "since": 0}
    fsspec.filesystem("memory").pipe_file(f"{url}/digit.lock", json.dumps(lock).encode())
    with pytest.raises(
        WriterBusyError,
        match=r"digit.lock: another writer is writing this dataset \(write 0123456789abcdef,"
        r" process 7 on elsewhere, since 1970-01-01 00:00:00 UTC\).*delete the lock object",
    ):
        Digit.write_dataset(url, digits(5, 2), overwrite=True)
    assert open_store(url).lock_held("digit.lock")
    fsspec.filesystem("memory").rm_file(f"{url}/digit.lock")
    Digit.write_dataset(url, digits(5, 2), overwrite=True)
    assert labels(url) == [5, 6] and not open_store(url).lock_held("digit.lock")


def run_killed_writer(url: str, *, at: int) -> int:
    """Runs ``Digit.write_dataset(url, overwrite=True)`` of one shard in a child process that kills
    itself with SIGKILL after ``at`` records; returns its exit status."""
    script = textwrap.dedent(
        f"""\
        import os, signal, sys
        import numpy as np
        sys.path[:0] = [{str(GENERATED)!r}, {str(TESTS)!r}]
        from support.stores import register
        from mnist import Digit

        register()

        def records():
            for i in range(1000):
                if i == {at}:
                    os.kill(os.getpid(), signal.SIGKILL)
                yield Digit(label=i, image=np.full(784, i % 256, dtype=np.int64))

        Digit.write_dataset({url!r}, records(), compression=None, overwrite=True)
        """
    )
    return subprocess.run([*PYTHON, "-c", script], check=False).returncode


def test_a_killed_writer_leaves_no_object_under_a_final_name_and_no_manifest(
    tmp_path: Path,
) -> None:
    register()
    url = f"objlocal://{tmp_path}/ds"
    assert isinstance(open_store(url), FsspecStore)
    assert run_killed_writer(url, at=600) == -signal.SIGKILL  # several MiB into its shard
    assert sorted(os.listdir(tmp_path / "ds")) == ["digit.lock"]  # no shard, no manifest
    os.remove(tmp_path / "ds" / "digit.lock")  # the store cannot tell its writer is gone
    Digit.write_dataset(url, digits(0, 4))
    assert run_killed_writer(url, at=600) == -signal.SIGKILL
    assert labels(url) == [0, 1, 2, 3]  # the previous dataset, untouched
    with pytest.raises(WriterBusyError, match="delete the lock object"):
        Digit.write_dataset(url, digits(9, 1), overwrite=True)


def test_random_access_reads_records_of_a_url(store: type[ObjectMemoryFileSystem]) -> None:
    options = {"token": "t"}
    Digit.write_dataset(
        "objmem://bucket/ds", digits(0, 9), shards=3, compression=None, storage_options=options
    )
    source = Digit.random_access("objmem://bucket/ds", storage_options=options)
    assert len(source) == 9 and source[4].label == 4 and source[-1].label == 8
    assert all(o == options for o in store.options)


def test_a_store_without_conditional_create_still_refuses_a_second_writer(
    store: type[ObjectMemoryFileSystem],
) -> None:
    url = "noexcl://bucket/ds"
    Digit.write_dataset(url, digits(0, 2))
    assert labels(url) == [0, 1] and not open_store(url).lock_held("digit.lock")
    store.store["/bucket/ds/digit.lock"] = store.store["/bucket/ds/digit.manifest.json"]
    with pytest.raises(WriterBusyError, match="noexcl://bucket/ds/digit.lock: another writer"):
        Digit.write_dataset(url, digits(5, 2), overwrite=True)


def test_dataloader_workers_read_a_dataset_at_a_url_once(
    store: type[ObjectMemoryFileSystem],
) -> None:
    import torch  # a test dependency

    options = {"token": "t"}
    Digit.write_dataset("objmem://bucket/ds", digits(0, 30), shards=4, storage_options=options)
    dataset = Digit.dataset(
        "objmem://bucket/ds", batch_size=4, shuffle_buffer=8, storage_options=options
    )
    loader = torch.utils.data.DataLoader(dataset.to_torch(), batch_size=None, num_workers=2)
    assert sorted(int(x) for batch in loader for x in batch["label"]) == list(range(30))
