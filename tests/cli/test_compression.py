"""``--compression {auto,none,gzip,zlib}`` of the commands that read data: every combination of
actual format, declared compression and file name, in process and as the installed command."""

from __future__ import annotations

from pathlib import Path

import pytest

from codegen.runtime.io.compression import Compression
from codegen.runtime.io.writer import TFRecordWriter
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
    for command in (["cat"], ["stats"], ["infer"], ["validate", "s.yaml"]):
        code, out, err = run_cli(*command, "--compression", option, name, cwd=tmp_path)
        expect(code, out, err, actual, option)
        if code == 0 and command == ["cat"]:
            assert out.count('"a"') == len(RECORDS)


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
