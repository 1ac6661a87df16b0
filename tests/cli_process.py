"""Running the installed ``tfr-gen`` command in a subprocess, as a user runs it. This module holds no
tests."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path


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
