"""Writing a file atomically (``AtomicFile``, ``write_atomic``), syncing a directory, and opening a
file for reading (``open_input``)."""

from __future__ import annotations

import errno
import gc
import io
import os
import signal
import subprocess
import textwrap
from pathlib import Path
from typing import BinaryIO

import crc32c
import pytest

from codegen import files
from codegen.runtime.io import writer
from codegen.runtime.io.files import open_input
from codegen.runtime.io.writer import AtomicFile, TFRecordWriter, fsync_directory, write_atomic
from support.processes import PYTHON


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


class FullDisk(io.RawIOBase):
    """A temporary file on a full disk: writes are buffered, and flushing or closing fails with
    ENOSPC (the descriptor is closed all the same, as ``close(2)`` does)."""

    def __init__(self, file: BinaryIO) -> None:
        self.file = file

    def writable(self) -> bool:
        return True

    def write(self, data: object) -> int:
        return len(memoryview(data))  # type: ignore[arg-type]

    def fileno(self) -> int:
        return self.file.fileno()

    def flush(self) -> None:
        if not self.file.closed:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def close(self) -> None:
        if not self.file.closed:
            self.file.close()
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_a_full_disk_leaves_no_temporary_file_even_when_closing_fails_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(path: str, *, clean: bool = True) -> tuple[BinaryIO, str]:
        file, temporary = files.create_temporary(path, clean=clean)
        return FullDisk(file), temporary  # type: ignore[return-value]

    monkeypatch.setattr(writer, "create_temporary", full)
    path = tmp_path / "data.tfrecord"
    with pytest.raises(OSError) as failure:
        with TFRecordWriter(path) as out:
            out.write(b"x" * 1000)
    assert failure.value.errno == errno.ENOSPC
    assert names(tmp_path) == []
    file = AtomicFile(path)
    file.write(b"data")
    with pytest.raises(OSError):
        file.commit()
    assert names(tmp_path) == []


def test_atomic_file_tracks_the_crc32c_and_size_of_its_bytes(tmp_path: Path) -> None:
    with AtomicFile(tmp_path / "out.bin") as file:
        file.write(b"hello ")
        file.write(b"world")
    assert file.crc32c == crc32c.crc32c(b"hello world") and file.size == 11


def _killed_writer(target: Path) -> Path:
    """The temporary file a writer of ``target`` killed mid-write leaves, aged past the grace
    period of a new temporary file."""
    script = textwrap.dedent(
        f"""\
        import os, signal
        from codegen.runtime.io.writer import AtomicFile
        file = AtomicFile({str(target)!r})
        file.write(b"half")
        file.flush()
        os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    done = subprocess.run([*PYTHON, "-c", script], check=False)
    assert done.returncode == -signal.SIGKILL
    [temporary] = [p for p in target.parent.iterdir() if p.name.startswith(f".{target.name}.")]
    old = temporary.stat().st_mtime - 2 * files.STALE_AFTER
    os.utime(temporary, (old, old))
    return temporary


def test_a_killed_writers_temporary_file_is_removed_by_the_next_write_not_a_live_ones(
    tmp_path: Path,
) -> None:
    target = tmp_path / "out.bin"
    stale = _killed_writer(target)
    live = AtomicFile(tmp_path / "other.bin")
    old = os.stat(live.temporary).st_mtime - 2 * files.STALE_AFTER
    os.utime(live.temporary, (old, old))
    assert files.stale_temporaries(tmp_path) == [str(stale)]
    write_atomic(target, b"new")
    assert names(tmp_path) == sorted(["out.bin", os.path.basename(live.temporary)])
    live.commit()
    assert names(tmp_path) == ["other.bin", "out.bin"]


def test_an_unlocked_temporary_file_is_stale_only_after_the_grace_period(tmp_path: Path) -> None:
    fresh = tmp_path / ".out.bin.0123456789ab.tmp"
    fresh.write_bytes(b"")
    assert files.stale_temporaries(tmp_path) == []
    old = fresh.stat().st_mtime - 2 * files.STALE_AFTER
    os.utime(fresh, (old, old))
    (tmp_path / ".not-a-temporary.tmp").write_bytes(b"")
    assert files.stale_temporaries(tmp_path, "other.bin") == []
    assert files.remove_stale_temporaries(tmp_path, "out.bin") == [str(fresh)]
    assert names(tmp_path) == [".not-a-temporary.tmp"]


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
