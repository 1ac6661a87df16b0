"""The loopback storage servers the remote tests use work as their stores do."""

from __future__ import annotations

from typing import Any

import fsspec


def test_s3_server_stores_lists_and_reads_ranges(s3: Any) -> None:
    bucket = s3.new_bucket()
    fs = fsspec.filesystem("s3", **s3.storage_options)
    fs.pipe(f"{bucket}/a/x.bin", bytes(range(256)) * 4)
    assert fs.glob(f"{bucket}/a/*.bin") == [f"{bucket[5:]}/a/x.bin"]
    assert fs.cat_file(f"{bucket}/a/x.bin", start=10, end=14) == bytes([10, 11, 12, 13])
    assert fs.size(f"{bucket}/a/x.bin") == 1024


def test_gcs_emulator_stores_lists_and_reads_ranges(gcs: Any) -> None:
    bucket = gcs.new_bucket()
    fs = fsspec.filesystem("gcs", **gcs.storage_options)
    fs.pipe(f"{bucket}/a/x.bin", bytes(range(256)) * 4)
    assert fs.glob(f"{bucket}/a/*.bin") == [f"{bucket[5:]}/a/x.bin"]
    assert fs.cat_file(f"{bucket}/a/x.bin", start=10, end=14) == bytes([10, 11, 12, 13])
    assert fs.size(f"{bucket}/a/x.bin") == 1024


def test_http_server_answers_ranges_and_records_them(http_files: Any) -> None:
    (http_files.directory / "x.bin").write_bytes(bytes(range(256)) * 4)
    fs = fsspec.filesystem("http")
    url = http_files.url + "x.bin"
    assert fs.cat_file(url, start=10, end=14) == bytes([10, 11, 12, 13])
    assert fs.size(url) == 1024
    ranged = [r for r in http_files.requests if r.method == "GET"]
    assert [(r.range, r.sent) for r in ranged] == [("bytes=10-13", 4)]
