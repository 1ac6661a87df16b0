"""Output files: the umask's permissions for every file tfr-gen writes, the output location checked
before any scan, and errors that name the user's path, never a temporary file."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from codegen import files
from codegen.runtime.codec import wire
from codegen.runtime.io.indexed import write_index
from codegen.runtime.io.writer import write_tfrecord
from support.cli import shell, tfr_gen
from support.modules import generated_module
from support.paths import ROOT

RECORD = wire.example([wire.map_entry(wire.key_field("x"), wire.int64_scalar_feature(7))])


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize("umask", [0o022, 0o077])
def test_every_output_gets_the_permissions_of_the_umask(tmp_path: Path, umask: int) -> None:
    (tmp_path / "schemas").mkdir()
    (tmp_path / "schemas" / "customer.yaml").write_text(
        (ROOT / "schemas" / "customer.yaml").read_text()
    )
    write_tfrecord(tmp_path / "x.tfrecord", [RECORD] * 3)
    os.chmod(tmp_path / "x.tfrecord", 0o644)
    script = (
        f"umask {umask:03o} && $tfr_gen schemas --out generated"
        " && $tfr_gen infer x.tfrecord -o inferred.yaml && $tfr_gen index x.tfrecord"
    )
    done = shell(script, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    expected = 0o666 & ~umask
    for written in ("generated/customer.py", "inferred.yaml", "x.tfrecord.index"):
        assert _mode(tmp_path / written) == expected, written


def test_library_writers_get_the_permissions_of_the_umask(tmp_path: Path) -> None:
    basics = generated_module("basics")
    old = os.umask(0o027)
    try:
        write_tfrecord(tmp_path / "a.tfrecord", [RECORD])
        files.write_atomic(tmp_path / "a.txt", "text\n")
        write_index(tmp_path / "a.tfrecord")
        record = basics.Basics(my_ints=[1], my_float=1.0, my_bytes=b"")
        basics.Basics.write_dataset(tmp_path / "d", [record], compression=None)
    finally:
        os.umask(old)
    written = ["a.tfrecord", "a.txt", "a.tfrecord.index", "d/basics.manifest.json"]
    written += [str(p.relative_to(tmp_path)) for p in (tmp_path / "d").glob("*.tfrecord")]
    assert len(written) == 5
    for name in written:
        assert _mode(tmp_path / name) == 0o640, name
    assert (tmp_path / "a.txt").read_bytes() == b"text\n"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_infer_checks_where_the_schema_goes_before_reading_the_data(tmp_path: Path) -> None:
    # The data is damaged: a scan would stop on it. The missing directory is reported first.
    (tmp_path / "big.tfrecord").write_bytes(b"\x05" * 40)
    done = tfr_gen("infer", "big.tfrecord", "-o", "missing_dir/x.yaml", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "tfr-gen infer: error: missing_dir/x.yaml: cannot write it: the directory missing_dir"
        " does not exist\n"
    )
    (tmp_path / "file").write_text("")
    done = tfr_gen("infer", "big.tfrecord", "-o", "file/x.yaml", cwd=tmp_path)
    assert done.stderr == (
        "tfr-gen infer: error: file/x.yaml: cannot write it: file is not a directory\n"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.tfrecord", "file"]


def test_write_errors_name_the_path_given_never_a_temporary_file(tmp_path: Path) -> None:
    os.chdir(tmp_path)
    with pytest.raises(FileNotFoundError) as caught:
        write_tfrecord("nodir/x.tfrecord", [RECORD])
    assert caught.value.filename == "nodir/x.tfrecord"
    assert str(caught.value) == (
        "[Errno 2] cannot write it: the directory nodir does not exist: 'nodir/x.tfrecord'"
    )
    assert ".tmp" not in str(caught.value)
    (tmp_path / "adir").mkdir()
    with pytest.raises(OSError) as replaced:
        files.write_atomic("adir", b"x")
    assert replaced.value.filename == "adir"
    assert "it is a directory" in str(replaced.value)
    assert [p.name for p in tmp_path.iterdir()] == ["adir"]


def test_index_blames_the_index_it_cannot_write_not_the_data(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "r.tfrecord"
    write_tfrecord(data, [RECORD] * 2)
    (tmp_path / "r.tfrecord.index").mkdir()  # in its way
    done = tfr_gen("index", "r.tfrecord", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.splitlines()[0] == (
        "tfr-gen index: error: r.tfrecord.index: cannot write it: it is a directory"
    )
    # A read-only directory (emulated: the tests may run as root, whom permissions do not stop).
    (tmp_path / "r.tfrecord.index").rmdir()
    real_access = os.access
    monkeypatch.setattr(
        os, "access", lambda p, mode: False if Path(p) == tmp_path else real_access(p, mode)
    )
    scanned: list[str] = []
    monkeypatch.setattr(
        "codegen.runtime.io.indexed.scan_offsets", lambda path: scanned.append(path)
    )
    with pytest.raises(PermissionError) as caught:
        write_index(data)
    assert caught.value.filename == f"{data}.index"
    assert caught.value.strerror == f"cannot write it: no permission to create files in {tmp_path}"
    assert scanned == []  # refused before the file was read
