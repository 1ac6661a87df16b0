"""Sharded datasets with a manifest: layout, order, atomicity, overwrite rules, manifest checks,
schema checks between the writer's and the reader's generated modules, and reading damaged
datasets with ``on_error="skip"``."""

from __future__ import annotations

import gzip
import inspect
import json
import logging
import os
import re
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import crc32c
import pytest

from codegen.compat import ChangeKind
from codegen.errors import DataError, SchemaMismatchError, TfrGenError
from codegen.runtime.data.manifest import MANIFEST_SUFFIX, Manifest, default_prefix, load_manifest
from codegen.runtime.data.schemainfo import SchemaInfo
from codegen.runtime.data.shards import read_dataset, write_dataset
from codegen.runtime.io.compression import Compression, detect_compression
from codegen.runtime.io.reader import read_tfrecord
from codegen.runtime.io.skips import SkipCounts, SkippedRecord, SkippedSpan
from codegen.runtime.io.writer import write_tfrecord
from support.framing import frame_offsets
from support.messages import UNDECODABLE
from support.modules import generate_module

V1 = textwrap.dedent(
    """\
    version: 1
    records:
      DatasetItem:
        features:
          id: {dtype: int32}
          name: {dtype: string}
    """
)
V2 = V1.replace("version: 1", "version: 2").replace("int32", "int64") + (
    "      score: {dtype: float32, default: 0.5}\n"
)
V3 = V1.replace("version: 1", "version: 3").replace(
    "{dtype: string}", "{key: title, dtype: string}"
) + ("      label: {dtype: int64}\n")
RENAMED = V1.replace("DatasetItem:", "Item:")


@pytest.fixture(scope="module")
def versions(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, ModuleType]]:
    tmp = tmp_path_factory.mktemp("dataset_modules")
    texts = {"dataset_v1": V1, "dataset_v2": V2, "dataset_v3": V3, "dataset_renamed": RENAMED}
    modules = {name: generate_module(text, name, tmp) for name, text in texts.items()}
    yield modules
    for name in modules:
        del sys.modules[name]


def info(module: ModuleType, record: str = "DatasetItem") -> SchemaInfo:
    schema = module.SCHEMA
    return SchemaInfo(module.__name__, record, schema.version, schema.fingerprint, schema.canonical)


def items(module: ModuleType, n: int) -> list[Any]:
    return [module.DatasetItem(id=i, name=f"item {i}") for i in range(n)]


def write(module: ModuleType, directory: Path, records: list[Any], **options: Any) -> Any:
    return write_dataset(directory, (r.encode() for r in records), schema=info(module), **options)


def read(
    module: ModuleType, directory: Path, record: str = "DatasetItem", **options: Any
) -> list[Any]:
    cls = getattr(module, record)
    return list(read_dataset(directory, cls.decode, schema=info(module, record), **options))


def test_shards_hold_contiguous_runs_and_the_manifest_describes_them(
    versions: dict[str, ModuleType], tmp_path: Path
) -> None:
    v1 = versions["dataset_v1"]
    records = items(v1, 10)
    manifest = write(v1, tmp_path, records, shards=3)
    assert manifest.write_id is not None and re.fullmatch("[0-9a-f]{16}", manifest.write_id)
    names = [f"dataset_item-{manifest.write_id}-{i:05d}-of-00003.tfrecord.gz" for i in range(3)]
    assert sorted(os.listdir(tmp_path)) == sorted([*names, "dataset_item.manifest.json"])
    assert [s.records for s in manifest.shards] == [4, 3, 3] and manifest.record_count == 10
    shard_ids = [[v1.DatasetItem.decode(d).id for d in read_tfrecord(p)] for p in manifest.paths]
    assert shard_ids == [[0, 1, 2, 3], [4, 5, 6], [7, 8, 9]]
    data = json.loads((tmp_path / "dataset_item.manifest.json").read_text())
    assert (
        data["module"] == "dataset_v1" and data["record"] == "DatasetItem" and data["version"] == 1
    )
    assert data["fingerprint"] == v1.SCHEMA.fingerprint and data["compression"] == "gzip"
    assert data["schema"] == json.loads(v1.SCHEMA.canonical) and data["record_count"] == 10
    assert data["format_version"] == 2 and data["write_id"] == manifest.write_id
    assert data["shards"] == [
        {
            "file": name,
            "records": n,
            "bytes": (tmp_path / name).stat().st_size,
            "crc32c": crc32c.crc32c((tmp_path / name).read_bytes()),
        }
        for name, n in zip(names, [4, 3, 3], strict=True)
    ]
    assert load_manifest(tmp_path) == manifest
    assert read(v1, tmp_path) == records


@pytest.mark.parametrize(
    ("count", "per_shard", "expected"),
    [(10, 4, [4, 4, 2]), (8, 4, [4, 4]), (0, 4, [0]), (3, None, [3])],
)
def test_streaming_shards_by_size(
    versions: dict[str, ModuleType],
    tmp_path: Path,
    count: int,
    per_shard: int | None,
    expected: list[int],
) -> None:
    v1 = versions["dataset_v1"]
    records = items(v1, count)
    manifest = write(v1, tmp_path, records, max_records_per_shard=per_shard, compression=None)
    assert [s.records for s in manifest.shards] == expected
    assert all(s.file.endswith(f"-of-{len(expected):05d}.tfrecord") for s in manifest.shards)
    assert read(v1, tmp_path) == records


def test_more_shards_than_records_leaves_some_empty(
    versions: dict[str, ModuleType], tmp_path: Path
) -> None:
    v1 = versions["dataset_v1"]
    manifest = write(v1, tmp_path, items(v1, 2), shards=4, compression="zlib", prefix="tiny")
    assert [s.records for s in manifest.shards] == [1, 1, 0, 0]
    assert manifest.shards[3].file == f"tiny-{manifest.write_id}-00003-of-00004.tfrecord.zlib"
    assert [r.id for r in read(v1, tmp_path)] == [0, 1]


def test_a_compatible_newer_reader_reads_the_dataset(
    versions: dict[str, ModuleType], tmp_path: Path
) -> None:
    write(versions["dataset_v1"], tmp_path, items(versions["dataset_v1"], 5), shards=2)
    got = read(versions["dataset_v2"], tmp_path)
    assert [(r.id, r.name, r.score) for r in got] == [(i, f"item {i}", 0.5) for i in range(5)]


def test_a_breaking_reader_is_refused_naming_every_change(
    versions: dict[str, ModuleType], tmp_path: Path
) -> None:
    write(versions["dataset_v1"], tmp_path, items(versions["dataset_v1"], 5), shards=2)
    v3 = versions["dataset_v3"]
    with pytest.raises(SchemaMismatchError) as caught:
        read_dataset(tmp_path, v3.DatasetItem.decode, schema=info(v3))  # refused before iterating
    error = caught.value
    assert [c.kind for c in error.changes] == [ChangeKind.KEY_CHANGED, ChangeKind.FEATURE_ADDED]
    message = str(error)
    assert "was written as dataset_v1.DatasetItem (version 1" in message
    assert "which dataset_v3.DatasetItem (version 3" in message and "2 of 2 change(s)" in message
    assert "breaking (blocks reading): records.DatasetItem.features.name.key" in message
    assert "forward (blocks reading): records.DatasetItem.features.label" in message
    with pytest.raises(DataError) as unchecked:  # without the check, the first record fails
        read(v3, tmp_path, check_schema=False)
    assert unchecked.value.index == 0 and unchecked.value.path.endswith(
        "-00000-of-00002.tfrecord.gz"
    )
    assert "required feature is missing" in str(unchecked.value)


def test_a_renamed_record_reads_the_only_dataset_of_the_directory(
    versions: dict[str, ModuleType], tmp_path: Path
) -> None:
    write(versions["dataset_v1"], tmp_path, items(versions["dataset_v1"], 3))
    got = read(versions["dataset_renamed"], tmp_path, record="Item")
    assert [r.id for r in got] == [0, 1, 2]


def test_an_existing_dataset_is_only_replaced_with_overwrite(
    versions: dict[str, ModuleType], tmp_path: Path
) -> None:
    v1 = versions["dataset_v1"]
    write(v1, tmp_path, items(v1, 9), shards=3)
    with pytest.raises(TfrGenError, match="prefix 'dataset_item' already exists.*overwrite=True"):
        write(v1, tmp_path, items(v1, 1))
    manifest = write(v1, tmp_path, items(v1, 2), shards=2, overwrite=True)
    assert sorted(os.listdir(tmp_path)) == sorted(
        [*(s.file for s in manifest.shards), "dataset_item.manifest.json"]
    )
    assert [r.id for r in read(v1, tmp_path)] == [0, 1]
    write(v1, tmp_path, items(v1, 1), prefix="other")  # another prefix is another dataset
    with pytest.raises(TfrGenError, match="2 datasets \\(dataset_item, other\\); pass prefix="):
        load_manifest(tmp_path)
    assert load_manifest(tmp_path, "other").record_count == 1


def test_shards_without_a_manifest_are_a_killed_writes_and_the_next_write_removes_them(
    versions: dict[str, ModuleType], tmp_path: Path
) -> None:
    v1 = versions["dataset_v1"]
    manifest = write(v1, tmp_path, items(v1, 2))
    Path(manifest.path).unlink()  # as if the writer had died before its commit
    with pytest.raises(TfrGenError, match="no such manifest.*did not finish"):
        read(v1, tmp_path, prefix="dataset_item")
    (tmp_path / "dataset_item-00000-of-00001.tfrecord.gz").write_bytes(b"format 1 leftover")
    (tmp_path / "dataset_item-0123456789abcdef-00003.tfrecord.gz").write_bytes(b"unnumbered")
    (tmp_path / "dataset_items-00000-of-00001.tfrecord.gz").write_bytes(b"another dataset")
    again = write(v1, tmp_path, items(v1, 3))  # no dataset: no overwrite needed
    assert sorted(os.listdir(tmp_path)) == sorted(
        [
            again.shards[0].file,
            "dataset_item.manifest.json",
            "dataset_items-00000-of-00001.tfrecord.gz",
        ]
    )
    assert len(read(v1, tmp_path)) == 3


def test_a_failed_write_leaves_no_files_and_the_old_dataset_intact(
    versions: dict[str, ModuleType], tmp_path: Path
) -> None:
    v1 = versions["dataset_v1"]
    write(v1, tmp_path, items(v1, 3))
    before = sorted(os.listdir(tmp_path))

    def failing() -> Iterator[bytes]:
        for record in items(v1, 5):
            yield record.encode()
        raise RuntimeError("source failed")

    with pytest.raises(RuntimeError, match="source failed"):
        write_dataset(tmp_path, failing(), schema=info(v1), max_records_per_shard=2, overwrite=True)
    assert sorted(os.listdir(tmp_path)) == before
    assert [r.id for r in read(v1, tmp_path)] == [0, 1, 2]


def _edit_manifest(directory: Path, **changes: Any) -> None:
    path = directory / ("dataset_item" + MANIFEST_SUFFIX)
    data = json.loads(path.read_text())
    for name, value in changes.items():
        data[name] = value(data[name]) if callable(value) else value
    path.write_text(json.dumps(data))


def test_shards_are_checked_against_the_manifest(
    versions: dict[str, ModuleType], tmp_path: Path
) -> None:
    v1 = versions["dataset_v1"]
    manifest = write(v1, tmp_path, items(v1, 4), shards=2, compression=None)
    first = Path(manifest.paths[0])
    first.write_bytes(first.read_bytes()[:-1])
    with pytest.raises(TfrGenError, match="has .* bytes but the manifest lists"):
        read(v1, tmp_path)
    write(v1, tmp_path, items(v1, 4), shards=2, compression=None, overwrite=True)

    def counts(first: int, second: int) -> Any:
        def edit(shards: list[dict[str, Any]]) -> list[dict[str, Any]]:
            shards[0]["records"], shards[1]["records"] = first, second
            return shards

        return edit

    _edit_manifest(tmp_path, shards=counts(3, 1))
    with pytest.raises(DataError, match="ends after 2 records; its manifest lists 3") as short:
        read(v1, tmp_path)
    assert short.value.index == 2
    _edit_manifest(tmp_path, shards=counts(1, 3))
    with pytest.raises(DataError, match="more records than the 1 its manifest lists") as long:
        read(v1, tmp_path)
    assert long.value.index == 1


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        ({"format": "other"}, "not a tfr-gen dataset manifest"),
        ({"format_version": 3}, "format version 3 is not supported"),
        ({"format_version": True}, "format version True is not supported"),
        ({"write_id": "../x"}, "write id '../x' is not 16 hex digits"),
        ({"write_id": None}, "'write_id' must be a string"),
        ({"fingerprint": "0" * 64}, "does not match fingerprint 0000000000000000"),
        ({"record": "Missing"}, "has no record 'Missing'"),
        ({"version": "1"}, "'version' must be an integer"),
        ({"compression": "bz2"}, "unknown compression 'bz2'"),
        ({"record_count": 5}, "'record_count' is not the sum"),
        ({"shards": []}, "'shards' must be a non-empty list"),
        ({"shards": [{"file": "../x", "records": 2, "bytes": 1}]}, "file '../x' should be"),
    ],
)
def test_malformed_manifests_are_errors(
    versions: dict[str, ModuleType], tmp_path: Path, edit: dict[str, Any], message: str
) -> None:
    v1 = versions["dataset_v1"]
    write(v1, tmp_path, items(v1, 2))
    _edit_manifest(tmp_path, **edit)
    with pytest.raises(TfrGenError, match=message):
        load_manifest(tmp_path)


def test_manifest_errors_for_missing_and_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(TfrGenError, match="no dataset manifest"):
        load_manifest(tmp_path)
    (tmp_path / "x.manifest.json").write_text("{not json")
    with pytest.raises(TfrGenError, match="cannot read the manifest"):
        load_manifest(tmp_path)
    with pytest.raises(TfrGenError, match="cannot list the dataset directory"):
        load_manifest(tmp_path / "absent")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"shards": 0}, "shards must be a positive int"),
        ({"max_records_per_shard": True}, "max_records_per_shard must be a positive int"),
        ({"shards": 2, "max_records_per_shard": 2}, "not both"),
        ({"compression": "bz2"}, "unknown dataset compression 'bz2'"),
        ({"prefix": "a/b"}, "invalid dataset prefix 'a/b'"),
        ({"prefix": ".hidden"}, "invalid dataset prefix"),
    ],
)
def test_write_arguments_are_checked(
    versions: dict[str, ModuleType], tmp_path: Path, options: dict[str, Any], message: str
) -> None:
    with pytest.raises(TfrGenError, match=message):
        write(versions["dataset_v1"], tmp_path, [], **options)
    assert os.listdir(tmp_path) == []


def test_default_prefix_is_the_record_name_in_snake_case() -> None:
    assert default_prefix("Customer") == "customer"
    assert default_prefix("MovieRating") == "movie_rating"
    assert default_prefix("HTTPLog2Go") == "http_log2_go"


# --- on_error="skip" ------------------------------------------------------------------------------


def _damage(path: str, compression: Compression, edit: Callable[[bytes], bytes]) -> None:
    """Edits the uncompressed record stream of a shard (compressing it again if it was)."""
    raw = Path(path).read_bytes()
    stream = edit(gzip.decompress(raw) if compression == "gzip" else raw)
    Path(path).write_bytes(gzip.compress(stream) if compression == "gzip" else stream)


def _sizes_as_they_are(directory: Path) -> None:
    """Updates the manifest's shard sizes to the files' (so only the records differ from it)."""

    def edit(shards: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for shard in shards:
            shard["bytes"] = (directory / shard["file"]).stat().st_size
            shard["crc32c"] = crc32c.crc32c((directory / shard["file"]).read_bytes())
        return shards

    _edit_manifest(directory, shards=edit)


def _flip(offset: int) -> Callable[[bytes], bytes]:
    return lambda data: data[:offset] + bytes([data[offset] ^ 0xFF]) + data[offset + 1 :]


@pytest.fixture
def damaged(
    versions: dict[str, ModuleType], tmp_path: Path, request: pytest.FixtureRequest
) -> tuple[Manifest, list[bytes]]:
    """Three shards of four records: in shard 0 record 1's data is corrupt, shard 1's record 1 has
    valid CRCs but does not decode, and shard 2's last record is cut short."""
    v1 = versions["dataset_v1"]
    compression: Compression = request.param
    payloads = [record.encode() for record in items(v1, 12)]
    payloads[5] = UNDECODABLE
    manifest = write_dataset(tmp_path, payloads, schema=info(v1), shards=3, compression=compression)
    frames = frame_offsets(payloads[:4])
    _damage(manifest.paths[0], compression, _flip(frames[1] + 12))
    _damage(manifest.paths[2], compression, lambda data: data[:-3])
    _sizes_as_they_are(tmp_path)
    return manifest, payloads


@pytest.mark.parametrize("damaged", [None, "gzip"], indirect=True)
def test_skip_reads_every_good_record_once_and_reports_every_skip(
    versions: dict[str, ModuleType],
    damaged: tuple[Manifest, list[bytes]],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    manifest, payloads = damaged
    compression = manifest.compression
    where = "" if compression is None else " (in the uncompressed gzip stream)"
    reports: list[SkippedSpan] = []
    records = read(versions["dataset_v1"], tmp_path, on_error="skip", on_skip=reports.append)
    assert [r.id for r in records] == [0, 2, 3, 4, 6, 7, 8, 9, 10]
    shard = frame_offsets(payloads[:4])
    assert [(type(r), r.path, r.offset, r.length) for r in reports] == [
        (SkippedSpan, manifest.paths[0], shard[1], 16 + len(payloads[1])),
        (SkippedRecord, manifest.paths[1], shard[1], 16 + len(UNDECODABLE)),
        (
            SkippedSpan,
            manifest.paths[2],
            frame_offsets(payloads[8:])[3],
            16 + len(payloads[11]) - 3,
        ),
    ]
    assert reports[0].reason.startswith("corrupt data CRC of a") and reports[0].reason.endswith(
        where
    )
    assert isinstance(reports[1], SkippedRecord) and reports[1].index == 1
    assert reports[1].reason.startswith("DatasetItem: Example: length 5 at byte offset 1")
    assert (
        reports[2].reason.startswith("truncated record: the file ends")
        and where in reports[2].reason
    )
    warnings = [r.getMessage() for r in caplog.records]
    assert warnings == [
        f"{manifest.paths[0]}: the shard holds 3 readable records; its manifest lists 4",
        f"{manifest.paths[2]}: the shard holds 3 readable records; its manifest lists 4",
        f"dataset {manifest.path}: skipped 2 unreadable stretches and 1 record that does not"
        f" decode ({sum(r.length for r in reports)} bytes)",
    ]


@pytest.mark.parametrize("damaged", [None, "gzip"], indirect=True)
def test_raise_mode_stops_at_the_first_damage_as_before(
    versions: dict[str, ModuleType], damaged: tuple[Manifest, list[bytes]], tmp_path: Path
) -> None:
    manifest, payloads = damaged
    v1 = versions["dataset_v1"]
    with pytest.raises(DataError, match="corrupt data CRC") as corrupt:
        read(v1, tmp_path)
    assert (corrupt.value.path, corrupt.value.index) == (manifest.paths[0], 1)
    assert corrupt.value.offset == frame_offsets(payloads)[1]
    os.unlink(manifest.paths[0])
    with pytest.raises(TfrGenError, match="the shard is missing: the dataset was overwritten"):
        read(v1, tmp_path)
    assert read(v1, tmp_path, on_error="skip")[0].id == 4  # the log takes the reports


def test_a_missing_shard_is_reported_whole_and_logged_without_a_callback(
    versions: dict[str, ModuleType], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    v1 = versions["dataset_v1"]
    manifest = write(v1, tmp_path, items(v1, 6), shards=3)
    os.unlink(manifest.paths[1])
    assert [r.id for r in v1.DatasetItem.read_dataset(tmp_path, on_error="skip")] == [0, 1, 4, 5]
    size = manifest.shards[1].size
    assert [r.getMessage() for r in caplog.records] == [
        f"{manifest.paths[1]}: byte offset 0: {size} bytes skipped: the shard is missing: the"
        " dataset was overwritten or removed after its manifest was read, or the shard was deleted",
        f"dataset {manifest.path}: skipped 1 unreadable stretch ({size} bytes)",
    ]
    assert all(r.levelno == logging.WARNING for r in caplog.records)


def test_skip_counts_can_be_the_callback(versions: dict[str, ModuleType], tmp_path: Path) -> None:
    v1 = versions["dataset_v1"]
    payloads = [record.encode() for record in items(v1, 5)]
    payloads[1] = payloads[3] = UNDECODABLE
    write_dataset(tmp_path, payloads, schema=info(v1), shards=2, compression="zlib")
    counts = SkipCounts()
    records = v1.DatasetItem.read_dataset(tmp_path, on_error="skip", on_skip=counts)
    assert [r.id for r in records] == [0, 2, 4]
    assert counts == SkipCounts(spans=0, records=2, bytes=2 * (16 + len(UNDECODABLE)))
    assert str(counts) == "2 records that do not decode (36 bytes)"


def test_skip_mode_reads_a_shard_whose_size_or_count_differ_and_logs_it(
    versions: dict[str, ModuleType], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    v1 = versions["dataset_v1"]
    manifest = write(v1, tmp_path, items(v1, 4), shards=2, compression=None)
    extra = items(v1, 5)[4].encode()
    with open(manifest.paths[1], "ab") as file:  # a valid record appended after writing
        file.write(Path(manifest.paths[0]).read_bytes()[: 16 + len(extra)])
    reports: list[SkippedSpan] = []
    assert [r.id for r in read(v1, tmp_path, on_error="skip", on_skip=reports.append)] == [
        0,
        1,
        2,
        3,
        0,
    ]
    assert reports == []
    size = Path(manifest.paths[1]).stat().st_size
    assert [r.getMessage() for r in caplog.records] == [
        f"{manifest.paths[1]}: the shard has {size} bytes but the manifest lists"
        f" {manifest.shards[1].size}; reading it all the same",
        f"{manifest.paths[1]}: the shard holds 3 readable records; its manifest lists 2",
    ]
    with pytest.raises(TfrGenError, match="has .* bytes but the manifest lists"):
        read(v1, tmp_path)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"on_error": "ignore"},
            "read_dataset: unknown on_error 'ignore'; expected 'raise' or 'skip'",
        ),
        ({"on_skip": print}, "read_dataset: on_skip is only called with on_error='skip'"),
    ],
)
def test_reader_policy_arguments_are_checked_at_once(
    versions: dict[str, ModuleType], tmp_path: Path, options: dict[str, Any], message: str
) -> None:
    v1 = versions["dataset_v1"]
    write(v1, tmp_path, items(v1, 1))
    with pytest.raises(TfrGenError, match=re.escape(message)):
        read_dataset(tmp_path, v1.DatasetItem.decode, schema=info(v1), **options)


@pytest.mark.parametrize(
    ("compression", "suffix", "magic"),
    [
        ("auto", ".tfrecord.gz", "gzip"),
        ("gzip", ".tfrecord.gz", "gzip"),
        ("zlib", ".tfrecord.zlib", "zlib"),
        (None, ".tfrecord", None),
    ],
)
def test_auto_compression_writes_gzip_shards_named_for_it(
    versions: dict[str, ModuleType],
    tmp_path: Path,
    compression: Any,
    suffix: str,
    magic: Compression,
) -> None:
    v1 = versions["dataset_v1"]
    manifest = write(v1, tmp_path, items(v1, 3), compression=compression)
    assert manifest.compression == magic and manifest.paths[0].endswith(suffix)
    assert detect_compression(Path(manifest.paths[0]).read_bytes()[:12]) == magic
    assert [r.id for r in read(v1, tmp_path)] == [0, 1, 2]


def test_write_dataset_and_write_tfrecord_both_default_to_auto() -> None:
    for function in (write_dataset, write_tfrecord):
        assert inspect.signature(function).parameters["compression"].default == "auto"
