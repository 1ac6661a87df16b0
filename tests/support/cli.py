"""Running ``tfr-gen``: in-process, or as the installed command in a subprocess as a user runs it;
and its expected outputs (``tests/snapshots/``)."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from codegen.cli import main
from support.paths import SNAPSHOTS

UPDATE = os.environ.get("TFR_UPDATE_SNAPSHOTS") == "1"
"""``TFR_UPDATE_SNAPSHOTS=1`` rewrites the snapshots instead of comparing with them."""


class Terminal(io.StringIO):
    """A text stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def run_cli(*args: str, cwd: Path, err: io.StringIO | None = None) -> tuple[int, str, str]:
    """Run ``tfr-gen`` in ``cwd``: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), err if err is not None else io.StringIO()
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(cwd)
        code = main(list(args), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def assert_snapshot(name: str, text: str) -> None:
    """``text`` must equal ``tests/snapshots/<name>`` exactly; ``TFR_UPDATE_SNAPSHOTS=1``
    rewrites the file instead."""
    path = SNAPSHOTS / name
    if UPDATE:
        path.parent.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8", newline="\n")
        return
    assert path.exists(), f"no snapshot {path}; run the tests with TFR_UPDATE_SNAPSHOTS=1"
    expected = path.read_text(encoding="utf-8")
    assert text == expected, f"output differs from {path} (TFR_UPDATE_SNAPSHOTS=1 rewrites it)"


def tfr_gen_path() -> str:
    """The ``tfr-gen`` script installed beside the running interpreter (a test dependency: the
    package is installed to run the tests)."""
    found = shutil.which("tfr-gen", path=str(Path(sys.executable).parent))
    assert found, f"tfr-gen is not installed beside {sys.executable}; pip install -e '.[test]'"
    return found


def tfr_gen(
    *args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """``tfr-gen ARGS...`` run in ``cwd``: its exit code, stdout and stderr."""
    return subprocess.run(
        [tfr_gen_path(), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
        check=False,
    )


def shell(command: str, *, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """A shell pipeline (bash, ``pipefail`` on) with ``tfr-gen`` being the installed script."""
    script = f"set -o pipefail; tfr_gen={tfr_gen_path()!r}; {command}"
    return subprocess.run(
        ["bash", "-c", script],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
