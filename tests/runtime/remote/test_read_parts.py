"""read_parts: an object's bytes in parts, one ranged request each, on every store (memory, HTTP,
S3, GCS); no request for the size of an object of one part; objects that are not there."""

from __future__ import annotations

import collections
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import fsspec
import pytest

from codegen.runtime.io.urls import read_parts

PART = 1000

SIZES = [0, 1, PART - 1, PART, PART + 1, 2 * PART, 3 * PART + 17]


class Place:
    """Where objects are put for a test: ``put(name, data)`` gives the URL of the object."""

    def __init__(
        self, put: Callable[[str, bytes], str], options: dict[str, Any] | None, prefix: str
    ) -> None:
        self.put = put
        self.options = options
        self.prefix = prefix


@pytest.fixture(params=["memory", "http", "s3", "gcs"])
def place(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Place]:
    if request.param == "memory":
        root = f"memory://parts-{uuid.uuid4().hex[:12]}"
        fs = fsspec.filesystem("memory")

        def put_memory(name: str, data: bytes) -> str:
            fs.pipe_file(f"{root}/{name}", data)
            return f"{root}/{name}"

        yield Place(put_memory, None, root)
        fs.rm(root, recursive=True)
        return
    if request.param == "http":
        files = request.getfixturevalue("http_files")

        def put_http(name: str, data: bytes) -> str:
            (files.directory / name).parent.mkdir(parents=True, exist_ok=True)
            (files.directory / name).write_bytes(data)
            return f"{files.url}{name}"

        yield Place(put_http, None, files.url.rstrip("/"))
        return
    store = request.getfixturevalue(request.param)
    bucket = store.new_bucket()

    def put_store(name: str, data: bytes) -> str:
        store.fs.pipe_file(f"{bucket}/{name}", data)
        return f"{bucket}/{name}"

    yield Place(put_store, store.storage_options, bucket)


@pytest.mark.parametrize("size", SIZES)
def test_the_parts_are_the_object_bytes_in_order(place: Place, size: int) -> None:
    data = bytes(i * 7 % 256 for i in range(size))
    url = place.put(f"o-{size}", data)
    parts = [bytes(p) for p in read_parts(url, place.options, PART)]
    assert b"".join(parts) == data
    assert all(len(p) == PART for p in parts[:-1])
    assert len(parts) == -(-size // PART)


def test_missing_objects_and_directories_are_named(place: Place) -> None:
    place.put("dir/inside", b"x")
    with pytest.raises(FileNotFoundError) as missing:
        list(read_parts(f"{place.prefix}/no-such-object", place.options, PART))
    assert missing.value.filename == f"{place.prefix}/no-such-object"
    if not place.prefix.startswith("http"):  # HTTP has no directories
        with pytest.raises(IsADirectoryError):
            list(read_parts(f"{place.prefix}/dir", place.options, PART))


def test_an_object_of_one_part_takes_one_request(
    s3: Any, s3_calls: collections.Counter[str]
) -> None:
    bucket = s3.new_bucket()
    s3.fs.pipe_file(f"{bucket}/small", b"s" * PART)
    s3.fs.pipe_file(f"{bucket}/large", b"l" * (3 * PART + 1))
    s3_calls.clear()
    assert sum(map(len, read_parts(f"{bucket}/small", s3.storage_options, PART))) == PART
    assert s3_calls == {"get_object": 1}
    s3_calls.clear()
    assert sum(map(len, read_parts(f"{bucket}/large", s3.storage_options, PART))) == 3 * PART + 1
    assert s3_calls == {"get_object": 4, "head_object": 1}


def test_parts_are_fetched_as_they_are_taken(http_files: Any) -> None:
    (http_files.directory / "o").write_bytes(b"o" * (5 * PART))
    http_files.clear()
    parts = read_parts(f"{http_files.url}o", None, PART)
    next(parts)
    gets = [r for r in http_files.requests if r.method == "GET"]
    assert [r.range for r in gets] == [f"bytes=0-{PART}"]  # a part and one byte: is there more?
    assert len(b"".join(map(bytes, parts))) == 4 * PART
    gets = [r for r in http_files.requests if r.method == "GET"]
    assert [r.range for r in gets[1:]] == [
        f"bytes={k * PART}-{k * PART + PART - 1}" for k in range(1, 5)
    ]


def test_a_store_that_ignores_ranges_gives_the_whole_object_as_one_part(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fs = fsspec.filesystem("memory")
    fs.pipe_file("/ignores/o", b"w" * (3 * PART))
    monkeypatch.setattr(
        type(fs), "cat_file", lambda self, path, start=None, end=None, **kw: b"w" * (3 * PART)
    )
    assert [len(p) for p in read_parts("memory://ignores/o", None, PART)] == [3 * PART]
    fs.pipe_file("/ignores/p", b"w" * (PART + 1))
    monkeypatch.setattr(
        type(fs), "cat_file", lambda self, path, start=None, end=None, **kw: b"w" * (PART + 1)
    )
    with pytest.raises(OSError, match="returned 1001 bytes for the 1 bytes at offset 1000"):
        list(read_parts("memory://ignores/p", None, PART))
