"""``--compression {auto,none,gzip,zlib}`` of the commands that read data: every combination of
actual format, declared compression and file name, in process and as the installed command; what
``convert`` does with it (TFRecord input only; a dataset's shards as its manifest says)."""

from __future__ import annotations

from pathlib import Path

import pytest

from codegen.runtime.data.shards import write_dataset
from codegen.runtime.io.compression import Compression
from codegen.runtime.io.reader import read_tfrecord
from codegen.runtime.io.writer import TFRecordWriter
from codegen.tools.convert import Converter
from support.cli import run_cli, tfr_gen

ACTUAL: list[Compression] = [None, "gzip", "zlib"]
OPTIONS = {"auto": "auto", "none": None, "gzip": "gzip", "zlib": "zlib"}
NAMES = ["x.tfrecord", "x.tfrecord.gz", "x.zlib"]
RECORD = bytes.fromhex("0a0c0a0a0a016112051a030a0101")  # Example {"a": int64_list [1]}
RECORDS = [RECORD, RECORD]

SCHEMA = """\
version: 1
records:
  One:
    features:
      a: {dtype: int64}
"""


def write(path: Path, actual: Compression) -> None:
    with path.open("wb") as file, TFRecordWriter(file, compression=actual) as writer:
        writer.write_many(RECORDS)


def describe(compression: str | None) -> str:
    return "uncompressed" if compression is None else f"{compression}-compressed"


def expect(code: int, out: str, err: str, actual: Compression, option: str) -> None:
    declared = OPTIONS[option]
    if option == "auto" or declared == actual:
        assert code == 0, err
    else:
        assert code != 0
        assert f"this file is {describe(actual)}; pass compression={actual!r} or 'auto'" in err
        assert f"(it was read as {describe(declared)})" in err
        assert "Traceback" not in err and "CRC" not in err


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("option", list(OPTIONS))
@pytest.mark.parametrize("actual", ACTUAL)
def test_every_reading_command(tmp_path: Path, actual: Compression, option: str, name: str) -> None:
    write(tmp_path / name, actual)
    (tmp_path / "s.yaml").write_text(SCHEMA)
    for command in (["cat"], ["stats"], ["infer"], ["validate", "s.yaml"], ["report"]):
        code, out, err = run_cli(*command, "--compression", option, name, cwd=tmp_path)
        expect(code, out, err, actual, option)
        if code == 0 and command == ["cat"]:
            assert out.count('"a"') == len(RECORDS)


@pytest.mark.parametrize("option", list(OPTIONS))
@pytest.mark.parametrize("actual", ACTUAL)
def test_convert_reads_tfrecord_input_as_declared(
    tmp_path: Path, actual: Compression, option: str
) -> None:
    write(tmp_path / "x.tfrecord", actual)
    (tmp_path / "s.yaml").write_text(SCHEMA)
    args = ("convert", "--compression", option, "s.yaml", "x.tfrecord", "x.parquet")
    code, out, err = run_cli(*args, cwd=tmp_path)
    expect(code, out, err, actual, option)
    assert (tmp_path / "x.parquet").exists() == (code == 0)
    if code == 0:
        code, _, err = run_cli("convert", "s.yaml", "x.parquet", "back.tfrecord", cwd=tmp_path)
        assert code == 0, err
        assert list(read_tfrecord(tmp_path / "back.tfrecord")) == RECORDS


def test_convert_to_tfrecord_refuses_a_declared_compression(tmp_path: Path) -> None:
    write(tmp_path / "x.tfrecord", None)
    (tmp_path / "s.yaml").write_text(SCHEMA)
    assert run_cli("convert", "s.yaml", "x.tfrecord", "x.parquet", cwd=tmp_path)[0] == 0
    args = ("convert", "--compression", "gzip", "s.yaml", "x.parquet", "y.tfrecord.gz")
    code, _, err = run_cli(*args, cwd=tmp_path)
    assert code == 2
    assert "the TFRecord output's compression follows its name" in err
    assert not (tmp_path / "y.tfrecord.gz").exists()


def test_convert_reads_a_dataset_with_its_manifests_compression(tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text(SCHEMA)
    info = Converter(str(tmp_path / "s.yaml"), None).info
    write_dataset(tmp_path / "data", RECORDS, schema=info, compression="zlib")
    code, _, err = run_cli("convert", "s.yaml", "data", "x.parquet", cwd=tmp_path)
    assert code == 0, err
    code, _, err = run_cli(
        "convert", "--compression", "none", "s.yaml", "data", "y.parquet", cwd=tmp_path
    )
    assert code == 0, err  # the shards are read as the manifest says, whatever was declared


@pytest.mark.parametrize("actual", ACTUAL)
def test_the_installed_command(tmp_path: Path, actual: Compression) -> None:
    write(tmp_path / "x.tfrecord", actual)
    for option in OPTIONS:
        result = tfr_gen("cat", "--compression", option, "x.tfrecord", cwd=tmp_path)
        expect(result.returncode, result.stdout, result.stderr, actual, option)


def test_an_unknown_compression_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(tmp_path / "x.tfrecord", None)
    code, _, _ = run_cli("cat", "--compression", "bz2", "x.tfrecord", cwd=tmp_path)
    assert code == 2
    assert "invalid choice: 'bz2'" in capsys.readouterr().err
