"""Writing a file atomically (``AtomicFile``, ``write_atomic``), syncing a directory, and opening a
file for reading (``open_input``)."""

from __future__ import annotations

import errno
import gc
import io
import os
from pathlib import Path

import pytest

from codegen.runtime.io.files import open_input
from codegen.runtime.io.writer import AtomicFile, fsync_directory, write_atomic


def names(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def test_write_atomic_creates_and_replaces_a_file(tmp_path: Path) -> None:
    path = tmp_path / "manifest.json"
    write_atomic(path, "first\n")
    assert path.read_bytes() == b"first\n"
    write_atomic(path, b"\x00second")
    assert path.read_bytes() == b"\x00second"
    assert names(tmp_path) == ["manifest.json"]


def test_text_is_written_as_utf8_without_newline_translation(tmp_path: Path) -> None:
    path = tmp_path / "schema.yaml"
    write_atomic(path, "caf\u00e9\r\nline\n")
    assert path.read_bytes() == "caf\u00e9\r\nline\n".encode()


def test_a_relative_path_is_written_in_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    write_atomic("bare.txt", "x")
    assert (tmp_path / "bare.txt").read_text() == "x"
    assert names(tmp_path) == ["bare.txt"]


def test_the_target_appears_only_on_commit(tmp_path: Path) -> None:
    path = tmp_path / "out.bin"
    path.write_bytes(b"old")
    file = AtomicFile(path)
    file.write(b"new")
    file.flush()
    assert path.read_bytes() == b"old"
    [temporary] = [n for n in names(tmp_path) if n != "out.bin"]
    assert temporary.startswith(".out.bin.") and temporary.endswith(".tmp")
    assert (tmp_path / temporary).read_bytes() == b"new"
    file.commit()
    assert path.read_bytes() == b"new"
    assert names(tmp_path) == ["out.bin"]


def test_an_exception_in_the_block_leaves_the_target_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "out.bin"
    path.write_bytes(b"old")
    with pytest.raises(KeyError), AtomicFile(path) as file:
        file.write(b"half")
        raise KeyError("source failed")
    assert path.read_bytes() == b"old"
    assert names(tmp_path) == ["out.bin"]


def test_an_uncommitted_file_that_is_collected_leaves_nothing(tmp_path: Path) -> None:
    file = AtomicFile(tmp_path / "out.bin")
    file.write(b"data")
    assert len(names(tmp_path)) == 1
    del file
    gc.collect()
    assert names(tmp_path) == []


def test_a_failed_rename_deletes_the_temporary_and_raises(tmp_path: Path) -> None:
    target = tmp_path / "taken"
    target.mkdir()
    (target / "inside").write_text("kept")
    with pytest.raises(OSError):
        write_atomic(target, "text")
    assert names(tmp_path) == ["taken"]
    assert names(target) == ["inside"]


def test_a_missing_directory_is_an_os_error_and_creates_nothing(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        write_atomic(tmp_path / "missing" / "file.txt", "text")
    assert names(tmp_path) == []


@pytest.mark.skipif(os.name != "posix", reason="directories are synced on POSIX only")
def test_fsync_directory_tolerates_only_directories_that_cannot_be_synced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []
    failure = errno.EINVAL

    def fsync(fd: int) -> None:
        calls.append(fd)
        raise OSError(failure, os.strerror(failure))

    monkeypatch.setattr(os, "fsync", fsync)
    fsync_directory(str(tmp_path))  # a file system that cannot sync a directory
    failure = errno.ENOTSUP
    fsync_directory(str(tmp_path))
    failure = errno.EIO
    with pytest.raises(OSError) as raised:
        fsync_directory(str(tmp_path))
    assert raised.value.errno == errno.EIO
    assert len(calls) == 3


def test_open_input_reads_bytes_unbuffered_or_buffered(tmp_path: Path) -> None:
    path = tmp_path / "data.bin"
    path.write_bytes(b"0123456789")
    with open_input(path) as raw:
        assert isinstance(raw, io.RawIOBase)
        assert raw.read() == b"0123456789"
    with open_input(str(path), buffered=True) as buffered:
        assert isinstance(buffered, io.BufferedReader)
        buffered.seek(4)
        assert buffered.read(3) == b"456"
    with pytest.raises(FileNotFoundError):
        open_input(tmp_path / "missing.bin")
