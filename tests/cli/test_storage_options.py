"""``--storage-option KEY=VALUE``: every command that reads or writes data passes the options to the
fsspec store of its URLs (a store here that refuses to open without the right token), values read
as JSON when they are JSON, and a malformed item is an error naming it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fsspec
import numpy as np
import pytest

from codegen.runtime.io.writer import write_file
from support.cli import run_cli
from support.modules import generated_module
from support.paths import SCHEMAS
from support.stores import ObjectMemoryFileSystem, object_store

Digit = generated_module("mnist").Digit
SCHEMA = str(SCHEMAS / "mnist.yaml")

OPTIONS = {"token": "sesame", "retries": 3, "verify": False, "client_kwargs": {"region": "x"}}
"""What the guarded store must be opened with."""
ITEMS = [
    "--storage-option=token=sesame",
    "--storage-option",
    "retries=3",
    "--storage-option",
    "verify=false",
    "--storage-option",
    'client_kwargs={"region": "x"}',
]
"""The same options on the command line."""


class GuardedFileSystem(ObjectMemoryFileSystem):
    """``guarded://``: :class:`ObjectMemoryFileSystem` that refuses to open without
    :data:`OPTIONS` (as a store refuses without credentials)."""

    protocol = "guarded"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if kwargs != OPTIONS:
            raise PermissionError(f"guarded: access denied with options {kwargs}")
        super().__init__(*args, **kwargs)


def digits(count: int) -> list[Any]:
    return [Digit(label=i, image=np.full(784, i, dtype=np.int64)) for i in range(count)]


@pytest.fixture
def root() -> Iterator[str]:
    with object_store():
        fsspec.register_implementation("guarded", GuardedFileSystem, clobber=True)
        GuardedFileSystem.clear_instance_cache()
        root = "guarded://data"
        records = digits(6)
        Digit.write_tfrecord(f"{root}/a.tfrecord", records[:4], storage_options=OPTIONS)
        Digit.write_tfrecord(f"{root}/b.tfrecord.gz", records[4:], storage_options=OPTIONS)
        Digit.write_dataset(f"{root}/ds", records, shards=2, storage_options=OPTIONS)
        yield root


COMMANDS: dict[str, list[str]] = {
    "cat": ["cat", "{root}/*.tfrecord*", "-n", "1"],
    "stats": ["stats", "{root}/a.tfrecord"],
    "validate": ["validate", SCHEMA, "{root}/*.tfrecord*"],
    "infer": ["infer", "{root}/b.tfrecord.gz"],
    "report": ["report", "{root}/a.tfrecord", "--compare", "{root}/b.tfrecord.gz"],
    "index": ["index", "{root}/a.tfrecord"],
    "convert to parquet": ["convert", SCHEMA, "{root}/ds", "{root}/ds.parquet"],
    "convert to tfrecord": ["convert", SCHEMA, "local.parquet", "{root}/back.tfrecord"],
    "convert to a dataset": ["convert", SCHEMA, "local.parquet", "{root}/back/", "--shards", "2"],
    "convert from parquet at a URL": ["convert", SCHEMA, "{root}/p.parquet", "back.tfrecord"],
    "clean": ["clean", "{root}/ds"],
}


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_data_command_passes_its_storage_options_to_the_store(
    root: str, tmp_path: Path, name: str
) -> None:
    Digit.write_tfrecord(tmp_path / "local.tfrecord", digits(3))
    assert run_cli("convert", SCHEMA, "local.tfrecord", "local.parquet", cwd=tmp_path)[0] == 0
    parquet = (tmp_path / "local.parquet").read_bytes()
    write_file(f"{root}/p.parquet", parquet, storage_options=OPTIONS)
    arguments = [word.format(root=root) for word in COMMANDS[name]]
    code, out, err = run_cli(*arguments, cwd=tmp_path)
    assert code == 2 and "access denied" in err and "Traceback" not in err
    code, out, err = run_cli(*arguments, *ITEMS, cwd=tmp_path)
    assert (code, "error" in err) == (0, False), err
    assert out or err


def test_the_options_reach_the_store_with_their_json_values(root: str, tmp_path: Path) -> None:
    code, out, err = run_cli("cat", f"{root}/a.tfrecord", *ITEMS, "--skip", "3", cwd=tmp_path)
    assert (code, err) == (0, "")
    assert json.loads(out)["label"] == {"int64_list": [3]}
    assert OPTIONS in GuardedFileSystem.options


@pytest.mark.parametrize(
    ("item", "expected"),
    [
        ("endpoint_url=http://127.0.0.1:9000", "http://127.0.0.1:9000"),
        ("anon=true", True),
        ("size=5", 5),
        ("ratio=0.5", 0.5),
        ('key="123"', "123"),
        ("key=", ""),
        ("key={not json", "{not json"),
        ("key=a=b", "a=b"),
        ("key=null", None),
    ],
)
def test_a_value_is_json_when_it_parses_as_json_else_a_string(item: str, expected: Any) -> None:
    from codegen.cli.commands.options import storage_option

    assert storage_option(item) == (item.split("=", 1)[0], expected)


@pytest.mark.parametrize("item", ["endpoint_url", "=value", " =value", "a key=1"])
def test_a_malformed_item_is_an_error_naming_it(
    item: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run_cli("stats", "x.tfrecord", "--storage-option", item, cwd=tmp_path)
    assert (code, out) == (2, "")
    err = capsys.readouterr().err  # argparse's usage errors go to the process's stderr
    assert "argument --storage-option: expected KEY=VALUE" in err and repr(item) in err
    assert "Traceback" not in err


def test_a_key_given_twice_is_an_error_naming_it(tmp_path: Path) -> None:
    arguments = ["--storage-option", "anon=true", "--storage-option", "anon=false"]
    code, out, err = run_cli("stats", "memory://x/a.tfrecord", *arguments, cwd=tmp_path)
    assert (code, out) == (2, "")
    assert err == "tfr-gen stats: error: --storage-option anon: given twice\n"
