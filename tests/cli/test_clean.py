"""``tfr-gen clean``: what killed writers left (stale temporary files, stale locks, shards no
manifest names) is listed, removed with ``--remove``, and a dataset being written is left alone."""

from __future__ import annotations

import os
import signal
import subprocess
import textwrap
from pathlib import Path

import numpy as np
import pytest

from codegen import files
from codegen.runtime.data import shards
from support.cli import run_cli
from support.modules import generated_module
from support.paths import GENERATED
from support.processes import PYTHON

Digit = generated_module("mnist").Digit


def digits(count: int) -> list[object]:
    return [Digit(label=i, image=np.zeros(784, np.int64)) for i in range(count)]


def killed_write(directory: Path) -> None:
    """A ``write_dataset`` killed in its third shard: it leaves two shards, a temporary file and
    its lock."""
    script = textwrap.dedent(
        f"""\
        import os, signal, sys
        import numpy as np
        sys.path.append({str(GENERATED)!r})
        from mnist import Digit

        def records():
            for i in range(10):
                if i == 5:
                    os.kill(os.getpid(), signal.SIGKILL)
                yield Digit(label=i, image=np.zeros(784, np.int64))

        Digit.write_dataset({str(directory)!r}, records(), max_records_per_shard=2, overwrite=True)
        """
    )
    assert subprocess.run([*PYTHON, "-c", script], check=False).returncode == -signal.SIGKILL
    for path in directory.glob(".*.tmp"):
        old = path.stat().st_mtime - 2 * files.STALE_AFTER
        os.utime(path, (old, old))


def test_clean_lists_then_removes_what_a_killed_writer_left(tmp_path: Path) -> None:
    manifest = Digit.write_dataset(tmp_path, digits(3))
    killed_write(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    code, out, err = run_cli("clean", ".", cwd=tmp_path)
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[-1] == "found 4 leftover files of killed writers"
    assert sorted(line.split(" (")[1] for line in lines[:-1]) == [
        "lock of a writer that is gone)",
        "shard no manifest names)",
        "shard no manifest names)",
        "temporary file)",
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # listing changes nothing
    code, out, err = run_cli("clean", ".", "--remove", cwd=tmp_path)
    assert (code, err, out.splitlines()[-1]) == (
        0,
        "",
        "removed 4 leftover files of killed writers",
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [manifest.shards[0].file, "digit.manifest.json"]
    )
    assert [d.label for d in Digit.read_dataset(tmp_path)] == [0, 1, 2]


def test_clean_leaves_a_dataset_being_written_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    outputs: list[str] = []

    def clean_during_the_write(step: str) -> None:
        if step == "publish":
            outputs.append(run_cli("clean", ".", "--remove", cwd=tmp_path)[1])

    monkeypatch.setattr(shards, "COMMIT_HOOK", clean_during_the_write)
    Digit.write_dataset(tmp_path, digits(6), max_records_per_shard=2)
    assert outputs == ["removed 0 leftover files of killed writers\n"]
    assert [d.label for d in Digit.read_dataset(tmp_path)] == list(range(6))
