"""The dataset commit protocol: one commit point (the manifest's publication), shard names unique
to their write, exclusive writers, readers that refuse replaced or changed shards, writes killed
or out of disk space at the dangerous steps, and the manifests of format version 1."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import textwrap
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import pytest

from codegen import files
from codegen.errors import TfrGenError
from codegen.runtime.data import shards
from codegen.runtime.data.manifest import load_manifest
from codegen.runtime.data.store import WriterBusyError
from support.modules import generated_module
from support.paths import GENERATED
from support.processes import PYTHON

mnist = generated_module("mnist")
Digit = mnist.Digit


def digits(first: int, count: int) -> list[Any]:
    return [
        Digit(label=i, image=np.full(784, i % 256, dtype=np.int64))
        for i in range(first, first + count)
    ]


def labels(directory: Path) -> list[int]:
    return [d.label for d in Digit.read_dataset(directory)]


def names(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def run_writer(directory: Path, stop_at: str | None, *, first: int = 100, count: int = 20) -> int:
    """Runs ``Digit.write_dataset(overwrite=True)`` of ``count`` digits in a child process that
    kills itself with SIGKILL at the commit step ``stop_at`` (``"shard"``: inside its second
    shard); returns its exit status."""
    script = textwrap.dedent(
        f"""\
        import os, signal, sys
        import numpy as np
        sys.path.append({str(GENERATED)!r})
        from codegen.runtime.data import shards
        from mnist import Digit

        def hook(step):
            if step == {stop_at!r}:
                os.kill(os.getpid(), signal.SIGKILL)

        shards.COMMIT_HOOK = hook

        def records():
            for i in range({first}, {first + count}):
                if i == {first + 7} and {stop_at!r} == "shard":
                    os.kill(os.getpid(), signal.SIGKILL)
                yield Digit(label=i, image=np.full(784, i % 256, dtype=np.int64))

        Digit.write_dataset({str(directory)!r}, records(), max_records_per_shard=5, overwrite=True)
        """
    )
    return subprocess.run([*PYTHON, "-c", script], check=False).returncode


def age_temporaries(directory: Path) -> None:
    """Makes every temporary file in ``directory`` older than the grace period of new ones."""
    for path in directory.glob(".*.tmp"):
        old = path.stat().st_mtime - 2 * files.STALE_AFTER
        os.utime(path, (old, old))


@pytest.mark.parametrize("stop_at", ["shard", "publish"])
def test_a_write_killed_before_its_commit_leaves_the_previous_dataset_readable(
    tmp_path: Path, stop_at: str
) -> None:
    Digit.write_dataset(tmp_path, digits(0, 10), shards=3)
    before = load_manifest(tmp_path)
    assert run_writer(tmp_path, stop_at) == -signal.SIGKILL
    assert load_manifest(tmp_path) == before
    assert labels(tmp_path) == list(range(10))
    assert (tmp_path / "digit.lock").exists()  # the killed writer's lock, held by no one now
    age_temporaries(tmp_path)
    after = Digit.write_dataset(tmp_path, digits(50, 4), overwrite=True)
    assert labels(tmp_path) == list(range(50, 54))
    assert names(tmp_path) == sorted([after.shards[0].file, "digit.manifest.json"])


def test_a_write_killed_after_its_commit_leaves_the_new_dataset_and_the_next_write_cleans_up(
    tmp_path: Path,
) -> None:
    Digit.write_dataset(tmp_path, digits(0, 10), shards=3)
    assert run_writer(tmp_path, "published") == -signal.SIGKILL
    assert labels(tmp_path) == list(range(100, 120))
    new = load_manifest(tmp_path)
    assert len(names(tmp_path)) == 3 + len(new.shards) + 2  # old shards, new ones, manifest, lock
    Digit.write_dataset(tmp_path, digits(0, 1), prefix="other")  # other datasets are left alone
    with pytest.raises(TfrGenError, match="prefix 'digit' already exists"):
        Digit.write_dataset(tmp_path, digits(0, 1))
    Digit.write_dataset(tmp_path, digits(7, 2), overwrite=True)
    assert sum(name.startswith("digit-") for name in names(tmp_path)) == 1


class FullDisk:
    """A temporary file on a full disk: every write fails with ENOSPC."""

    def __init__(self, file: BinaryIO) -> None:
        self.file = file

    def write(self, data: bytes) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.file, name)


def test_a_full_disk_at_the_commit_leaves_the_previous_dataset_and_no_new_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    Digit.write_dataset(tmp_path, digits(0, 42), max_records_per_shard=1)
    before = names(tmp_path)
    real = files.create_temporary

    def full_for_manifests(path: str, *, clean: bool = True) -> tuple[Any, str]:
        file, temporary = real(path, clean=clean)
        return (FullDisk(file) if str(path).endswith(".manifest.json") else file), temporary

    monkeypatch.setattr(files, "create_temporary", full_for_manifests)
    with pytest.raises(OSError) as failure:
        Digit.write_dataset(tmp_path, digits(100, 42), max_records_per_shard=1, overwrite=True)
    assert failure.value.errno == errno.ENOSPC
    assert names(tmp_path) == before
    assert labels(tmp_path) == list(range(42))
    monkeypatch.undo()
    with pytest.raises(TfrGenError, match="already exists"):  # the dataset is still there
        Digit.write_dataset(tmp_path, digits(0, 1))


def test_a_second_writer_of_a_dataset_fails_while_the_first_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    errors: list[BaseException] = []

    def second_writer(step: str) -> None:
        if step != "publish":
            return
        for overwrite in (False, True):
            try:
                Digit.write_dataset(tmp_path, digits(500, 3), overwrite=overwrite)
            except WriterBusyError as exc:
                errors.append(exc)

    monkeypatch.setattr(shards, "COMMIT_HOOK", second_writer)
    Digit.write_dataset(tmp_path, digits(0, 5))
    assert len(errors) == 2
    assert all(
        f"{tmp_path / 'digit.lock'}: another writer is writing this dataset (write " in str(e)
        and f"process {os.getpid()} on " in str(e)
        for e in errors
    )
    assert labels(tmp_path) == list(range(5))
    assert names(tmp_path) == sorted(
        [load_manifest(tmp_path).shards[0].file, "digit.manifest.json"]
    )


def test_of_two_concurrent_writers_exactly_one_wins(tmp_path: Path) -> None:
    script = textwrap.dedent(
        """\
        import sys
        import numpy as np
        sys.path.append(sys.argv[1])
        from codegen.errors import TfrGenError
        from mnist import Digit
        first = int(sys.argv[3])
        records = [Digit(label=i, image=np.zeros(784, np.int64)) for i in range(first, first + 40)]
        try:
            Digit.write_dataset(sys.argv[2], records, max_records_per_shard=1,
                                overwrite=sys.argv[4] == "1")
        except TfrGenError as exc:
            print(type(exc).__name__, exc)
            sys.exit(3)
        """
    )
    for overwrite in ("0", "1"):
        target = tmp_path / overwrite
        command = [*PYTHON, "-c", script, str(GENERATED), str(target)]
        children = [
            subprocess.Popen([*command, str(first), overwrite], stdout=subprocess.PIPE, text=True)
            for first in (0, 1000)
        ]
        outputs = [child.communicate()[0] for child in children]
        codes = sorted(child.returncode for child in children)
        got = labels(target)
        assert got in (list(range(40)), list(range(1000, 1040)))
        if codes == [0, 3]:
            loser = outputs[[c.returncode for c in children].index(3)]
            assert loser.startswith(("WriterBusyError", "TfrGenError")), loser
        else:  # with overwrite=True the second may also start after the first finished
            assert codes == [0, 0] and overwrite == "1"
        assert len(names(target)) == 41  # the winner's shards and manifest, nothing else


def test_reading_during_an_overwrite_fails_instead_of_mixing_records(tmp_path: Path) -> None:
    Digit.write_dataset(tmp_path, digits(0, 40), max_records_per_shard=10, compression=None)
    reader = Digit.read_dataset(tmp_path)
    assert [next(reader).label for _ in range(15)] == list(range(15))
    Digit.write_dataset(
        tmp_path, digits(100, 40), max_records_per_shard=10, compression=None, overwrite=True
    )
    rest: list[int] = []
    with pytest.raises(TfrGenError, match="the shard is missing: the dataset was overwritten"):
        rest.extend(digit.label for digit in reader)
    assert rest == list(range(15, 20))  # the rest of the open shard, then the error: no mix


def test_a_shard_replaced_by_one_of_the_same_size_is_refused(tmp_path: Path) -> None:
    manifest = Digit.write_dataset(tmp_path / "a", digits(0, 20), shards=2, compression=None)
    other = Digit.write_dataset(tmp_path / "b", digits(100, 20), shards=2, compression=None)
    Path(manifest.paths[1]).write_bytes(Path(other.paths[1]).read_bytes())  # same size, valid
    reader = Digit.read_dataset(tmp_path / "a")
    with pytest.raises(TfrGenError, match="shard's crc32c is .* but the manifest lists .*replaced"):
        for _ in reader:
            pass


def test_a_manifest_of_format_version_1_is_still_read(tmp_path: Path) -> None:
    manifest = Digit.write_dataset(tmp_path, digits(0, 6), shards=2)
    data = json.loads(Path(manifest.path).read_text())
    data["format_version"] = 1
    del data["write_id"]
    for shard in data["shards"]:
        old = shard["file"].replace(f"-{manifest.write_id}", "")
        os.rename(tmp_path / shard["file"], tmp_path / old)
        shard["file"] = old
        del shard["crc32c"]
    Path(manifest.path).write_text(json.dumps(data))
    loaded = load_manifest(tmp_path)
    assert loaded.write_id is None and [s.crc32c for s in loaded.shards] == [None, None]
    assert labels(tmp_path) == list(range(6))
    Digit.write_dataset(tmp_path, digits(9, 1), overwrite=True)  # replaces it, old shards too
    assert labels(tmp_path) == [9] and len(names(tmp_path)) == 2


def test_a_deeply_nested_manifest_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "digit.manifest.json").write_text("[" * 200_000 + "]" * 200_000)
    with pytest.raises(TfrGenError, match="cannot read the manifest: nested too deeply"):
        load_manifest(tmp_path)
