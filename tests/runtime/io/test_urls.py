"""URLs through every reader and writer: ``memory://`` (fsspec's in-memory store), ``file://``
(mapped to local paths), an object store whose uploads finish only at commit (``objmem://``),
open file objects, ``storage_options`` and fsspec's configuration, missing plug-ins, and writes
that fail midway leaving no object under the final name."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import fsspec
import pytest
from fsspec.registry import known_implementations

from codegen.errors import MissingExtraError, TfrGenError
from codegen.runtime.io import urls
from codegen.runtime.io.files import file_size, open_input
from codegen.runtime.io.indexed import IndexedReader, write_index
from codegen.runtime.io.reader import TFRecordReader, read_tfrecord
from codegen.runtime.io.urls import is_url, local_path
from codegen.runtime.io.writer import TFRecordWriter, write_file, write_tfrecord
from support.stores import (
    ObjectMemoryFileSystem,
    UploadFailed,
    memory_bytes,
    memory_directory,
    object_store,
)

RECORDS = [f"record {i}".encode() * (i + 1) for i in range(200)]


@pytest.fixture
def root() -> Iterator[str]:
    with memory_directory() as directory:
        yield directory


@pytest.fixture
def store() -> Iterator[type[ObjectMemoryFileSystem]]:
    with object_store() as fs:
        yield fs


def test_urls_and_local_paths_are_told_apart() -> None:
    assert is_url("s3://bucket/x.tfrecord") and is_url("memory://x") and is_url("gs://b/k")
    assert is_url("simplecache::s3://bucket/x") and is_url("HTTPS://host/x")
    assert not is_url("data/x.tfrecord") and not is_url("/abs/x") and not is_url("C:\\x")
    assert not is_url("file:///tmp/x") and not is_url("local:///tmp/x")
    assert not is_url(Path("s3:/not/a/url"))
    assert local_path("file:///tmp/x.tfrecord") == "/tmp/x.tfrecord"
    assert local_path("file://rel/x") == os.path.join(os.getcwd(), "rel/x")
    assert local_path("data/x") == "data/x" and local_path(Path("/a/b")) == "/a/b"


@pytest.mark.parametrize("name", ["x.tfrecord", "x.tfrecord.gz", "x.tfrecord.zlib"])
def test_memory_urls_hold_the_same_bytes_as_local_files(
    root: str, tmp_path: Path, name: str
) -> None:
    assert write_tfrecord(f"{root}/{name}", RECORDS) == len(RECORDS)
    write_tfrecord(tmp_path / name, RECORDS)
    assert memory_bytes(f"{root}/{name}") == (tmp_path / name).read_bytes()
    assert list(read_tfrecord(f"{root}/{name}")) == RECORDS
    assert file_size(f"{root}/{name}") == (tmp_path / name).stat().st_size
    with TFRecordReader(f"{root}/{name}") as reader:
        assert list(reader) == RECORDS
        assert reader.compression == {".gz": "gzip", ".zlib": "zlib"}.get(Path(name).suffix)


def test_file_urls_are_local_paths(tmp_path: Path) -> None:
    url = f"file://{tmp_path}/x.tfrecord.gz"
    with TFRecordWriter(url) as writer:
        writer.write_many(RECORDS)
    assert writer.compression == "gzip"
    assert os.listdir(tmp_path) == ["x.tfrecord.gz"]  # written by rename: no temporary left
    assert list(read_tfrecord(url)) == list(read_tfrecord(tmp_path / "x.tfrecord.gz")) == RECORDS
    assert file_size(url) == (tmp_path / "x.tfrecord.gz").stat().st_size


def test_readers_take_open_file_objects(root: str, tmp_path: Path) -> None:
    write_tfrecord(tmp_path / "x.tfrecord.gz", RECORDS)
    write_tfrecord(f"{root}/y.tfrecord", RECORDS)
    with open(tmp_path / "x.tfrecord.gz", "rb") as file:
        assert list(read_tfrecord(file)) == RECORDS
        assert not file.closed  # a caller's file object is never closed
    with fsspec.open(f"{root}/y.tfrecord", "rb") as file:
        assert list(read_tfrecord(file)) == RECORDS
    with open_input(f"{root}/y.tfrecord") as file:
        assert list(TFRecordReader(file)) == RECORDS


def test_a_missing_object_is_named(root: str) -> None:
    with pytest.raises(
        TfrGenError, match=rf"{root}/absent.tfrecord: cannot read the file: No such"
    ):
        list(read_tfrecord(f"{root}/absent.tfrecord"))
    write_tfrecord(f"{root}/dir/x.tfrecord", RECORDS[:1])
    with pytest.raises(TfrGenError, match=rf"{root}/dir: cannot read the file: Is a directory"):
        list(read_tfrecord(f"{root}/dir"))


def test_a_failed_write_leaves_no_object(root: str) -> None:
    def failing() -> Iterator[bytes]:
        yield from RECORDS
        raise RuntimeError("the records ran out")

    write_tfrecord(f"{root}/kept.tfrecord", RECORDS[:3])
    for name in ("new.tfrecord", "kept.tfrecord"):
        with pytest.raises(RuntimeError, match="ran out"):
            write_tfrecord(f"{root}/{name}", failing())
    assert fsspec.filesystem("memory").ls(root, detail=False) == [f"{root[8:]}/kept.tfrecord"]
    assert list(read_tfrecord(f"{root}/kept.tfrecord")) == RECORDS[:3]  # the old object stays


def test_object_store_uploads_appear_only_when_finished(
    store: type[ObjectMemoryFileSystem],
) -> None:
    writer = TFRecordWriter("objmem://bucket/x.tfrecord")
    writer.write_many(RECORDS)
    writer.flush()
    assert store.uploaded > store.blocksize  # parts were sent...
    assert "/bucket/x.tfrecord" not in store.store  # ...but no object exists before the commit
    writer.close()
    assert store.committed == ["/bucket/x.tfrecord"] and not store.discarded
    assert list(read_tfrecord("objmem://bucket/x.tfrecord")) == RECORDS


def test_an_upload_that_fails_midway_leaves_no_object(
    store: type[ObjectMemoryFileSystem],
) -> None:
    write_tfrecord("objmem://bucket/x.tfrecord", RECORDS[:5])
    store.committed.clear()
    store.fail_after = store.uploaded + 3 * store.blocksize
    with pytest.raises(UploadFailed) as failed:
        write_tfrecord("objmem://bucket/x.tfrecord", RECORDS)
    assert str(failed.value) == (
        "objmem://bucket/x.tfrecord: cannot write it: the connection broke during the upload"
    )
    with pytest.raises(UploadFailed):
        write_tfrecord("objmem://bucket/y.tfrecord.gz", RECORDS * 20)
    assert store.discarded == ["/bucket/x.tfrecord", "/bucket/y.tfrecord.gz"]
    assert not store.committed and sorted(store.store) == ["/bucket/x.tfrecord"]
    assert list(read_tfrecord("objmem://bucket/x.tfrecord")) == RECORDS[:5]


def test_an_abandoned_writer_aborts_its_upload(store: type[ObjectMemoryFileSystem]) -> None:
    writer = TFRecordWriter("objmem://bucket/x.tfrecord")
    writer.write_many(RECORDS)
    del writer
    assert store.discarded == ["/bucket/x.tfrecord"] and not store.store


def test_a_store_that_cannot_defer_an_object_is_refused(
    store: type[ObjectMemoryFileSystem],
) -> None:
    with pytest.raises(
        TfrGenError, match="eager://b/x.tfrecord: the store cannot defer the creation"
    ):
        write_tfrecord("eager://b/x.tfrecord", RECORDS)
    assert not store.store and store.discarded == ["/b/x.tfrecord"]


def test_a_store_that_cannot_write_says_so() -> None:
    with pytest.raises(
        TfrGenError, match=r"^http://127.0.0.1:9/x.tfrecord: the store cannot write objects$"
    ):
        write_tfrecord("http://127.0.0.1:9/x.tfrecord", RECORDS)  # fails before any connection


def test_storage_options_and_fsspec_configuration_reach_the_store(
    store: type[ObjectMemoryFileSystem], monkeypatch: pytest.MonkeyPatch
) -> None:
    options = {"endpoint": "http://127.0.0.1:9", "key": "k"}
    write_tfrecord("objmem://bucket/x.tfrecord", RECORDS, storage_options=options)
    assert list(read_tfrecord("objmem://bucket/x.tfrecord", storage_options=options)) == RECORDS
    assert store.options and all(o == options for o in store.options)
    store.options.clear()
    store.clear_instance_cache()
    monkeypatch.setitem(fsspec.config.conf, "objmem", {"profile": "from-config"})
    write_file("objmem://bucket/y.json", "{}")
    assert store.options == [{"profile": "from-config"}]
    assert store.store["/bucket/y.json"].getvalue() == b"{}"


def test_a_missing_plug_in_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(
        known_implementations,
        "nostore",
        {"class": "no_such_plugin.NoStore", "err": "Install no-such-plugin to access NoStore"},
    )
    monkeypatch.setitem(urls.EXTRAS, "nostore", "nostore")
    message = (
        r"nostore://b/x.tfrecord: nostore:// URLs need an fsspec plug-in that is not installed"
        r" \(Install no-such-plugin to access NoStore\); pip install 'tfr-gen\[nostore\]'"
    )
    with pytest.raises(MissingExtraError, match=message):
        list(read_tfrecord("nostore://b/x.tfrecord"))
    with pytest.raises(MissingExtraError, match=message):
        write_tfrecord("nostore://b/x.tfrecord", RECORDS)
    assert (
        urls.EXTRAS["s3"] == "s3" and urls.EXTRAS["gs"] == "gcs" and urls.EXTRAS["https"] == "http"
    )
    with pytest.raises(TfrGenError, match="Protocol not known: unknownproto"):
        list(read_tfrecord("unknownproto://b/x.tfrecord"))


def test_indexed_reads_records_of_a_url(root: str, tmp_path: Path) -> None:
    write_tfrecord(f"{root}/x.tfrecord", RECORDS)
    with IndexedReader(f"{root}/x.tfrecord") as reader:
        assert reader.index_path is None and len(reader) == len(RECORDS)
        assert reader[7] == RECORDS[7] and reader[-1] == RECORDS[-1]
    info = write_index(f"{root}/x.tfrecord")
    assert len(info.offsets) == len(RECORDS)
    with IndexedReader(f"{root}/x.tfrecord") as reader:
        assert reader.index_path == f"{root}/x.tfrecord.index" and reader[3] == RECORDS[3]
    write_index(f"{root}/x.tfrecord", tmp_path / "x.index")
    with IndexedReader(f"{root}/x.tfrecord", index=tmp_path / "x.index") as reader:
        assert reader[199] == RECORDS[199]
