"""The data commands with URLs: ``memory://`` in process (``main()``), ``file://`` in the installed
command (a child process cannot see this process's memory), the store's options from fsspec's
environment configuration, and a missing store named without a traceback."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fsspec
import numpy as np
import pytest

from support.cli import run_cli, tfr_gen
from support.modules import generated_module
from support.paths import SCHEMAS
from support.stores import memory_directory

mnist = generated_module("mnist")
Digit = mnist.Digit
SCHEMA = str(SCHEMAS / "mnist.yaml")


def digits(count: int) -> list[Any]:
    return [Digit(label=i % 10, image=np.full(784, i, dtype=np.int64)) for i in range(count)]


@pytest.fixture
def root() -> Iterator[str]:
    with memory_directory() as directory:
        Digit.write_tfrecord(f"{directory}/a.tfrecord", digits(5))
        Digit.write_tfrecord(f"{directory}/b.tfrecord.gz", digits(3))
        yield directory


def test_reading_commands_take_memory_urls_and_globs(root: str, tmp_path: Path) -> None:
    code, out, err = run_cli("cat", f"{root}/a.tfrecord", "-n", "2", cwd=tmp_path)
    labels = [json.loads(line)["label"]["int64_list"] for line in out.splitlines()]
    assert (code, err, labels) == (0, "", [[0], [1]])
    code, out, _ = run_cli("stats", f"{root}/*.tfrecord*", "--format", "json", cwd=tmp_path)
    assert code == 0 and json.loads(out)["records"] == 8
    code, out, _ = run_cli("validate", SCHEMA, f"{root}/*", cwd=tmp_path)
    assert (code, out) == (0, "tfr-gen validate: Digit: 8 records in 2 files: no problems\n")
    code, _, _ = run_cli("infer", f"{root}/b.tfrecord.gz", "-o", "inferred.yaml", cwd=tmp_path)
    assert code == 0 and "image_raw" in (tmp_path / "inferred.yaml").read_text()
    code, out, _ = run_cli(
        "report", f"{root}/a.tfrecord", "--compare", f"{root}/b.tfrecord.gz", cwd=tmp_path
    )
    assert code == 0 and out
    code, out, _ = run_cli("index", f"{root}/a.tfrecord", cwd=tmp_path)
    assert (code, out) == (0, f"wrote {root}/a.tfrecord.index (5 records)\n")
    with Digit.indexed(f"{root}/a.tfrecord") as records:
        assert records.reader.index_path == f"{root}/a.tfrecord.index" and records[4].label == 4


def test_convert_reads_and_writes_urls(root: str, tmp_path: Path) -> None:
    code, out, err = run_cli(
        "convert", SCHEMA, f"{root}/*.tfrecord*", "digits.parquet", cwd=tmp_path
    )
    assert code == 0, err
    code, _, err = run_cli(
        "convert",
        SCHEMA,
        "digits.parquet",
        f"{root}/back.tfrecord.gz",
        "--to",
        "tfrecord",
        cwd=tmp_path,
    )
    assert code == 0, err
    assert [d.label for d in Digit.read_tfrecord(f"{root}/back.tfrecord.gz")] == [
        0,
        1,
        2,
        3,
        4,
        0,
        1,
        2,
    ]
    Digit.write_dataset(f"{root}/ds", digits(4), shards=2)
    code, _, err = run_cli("convert", SCHEMA, f"{root}/ds", f"{root}/ds.parquet", cwd=tmp_path)
    assert code == 0, err
    back = f"{root}/ds-back.tfrecord"
    code, _, err = run_cli(
        "convert", SCHEMA, f"{root}/ds.parquet", back, "--to", "tfrecord", cwd=tmp_path
    )
    assert code == 0, err
    assert [d.label for d in Digit.read_tfrecord(back)] == [0, 1, 2, 3]


def test_clean_looks_in_an_object_store(root: str, tmp_path: Path) -> None:
    manifest = Digit.write_dataset(f"{root}/ds", digits(4), shards=2)
    orphan = manifest.shards[0].file.replace(manifest.write_id or "", "0123456789abcdef")
    fsspec.filesystem("memory").pipe_file(f"{root}/ds/{orphan}", b"")
    code, out, _ = run_cli("clean", f"{root}/ds", cwd=tmp_path)
    assert code == 0 and out.splitlines() == [
        f"stale: {root}/ds/{orphan} (shard no manifest names)",
        "found 1 leftover file of killed writers",
    ]
    assert run_cli("clean", f"{root}/ds", "--remove", cwd=tmp_path)[0] == 0
    assert [d.label for d in Digit.read_dataset(f"{root}/ds")] == [0, 1, 2, 3]
    assert not fsspec.filesystem("memory").exists(f"{root}/ds/{orphan}")


def test_errors_name_the_url_without_a_traceback(root: str, tmp_path: Path) -> None:
    code, out, err = run_cli("stats", f"{root}/absent.tfrecord", cwd=tmp_path)
    assert (code, out) == (2, "") and f"{root}/absent.tfrecord: no such file" in err
    assert "Traceback" not in err
    code, out, err = run_cli("cat", "unknownproto://bucket/x.tfrecord", cwd=tmp_path)
    assert code == 2 and "Protocol not known: unknownproto" in err and "Traceback" not in err


def test_the_installed_command_reads_file_urls(tmp_path: Path) -> None:
    Digit.write_tfrecord(tmp_path / "a.tfrecord.gz", digits(6))
    Digit.write_dataset(tmp_path / "ds", digits(4), shards=2)
    url = f"file://{tmp_path}"
    done = tfr_gen("validate", SCHEMA, f"{url}/a.tfrecord.gz", f"{url}/ds/*.gz", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == "tfr-gen validate: Digit: 10 records in 3 files: no problems\n"
    done = tfr_gen("cat", f"{url}/a.tfrecord.gz", "-n", "1", cwd=tmp_path)
    assert done.returncode == 0 and json.loads(done.stdout)["label"] == {"int64_list": [0]}
