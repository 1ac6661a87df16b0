"""The project's own code stays typed and formatted (generated code is checked in test_generate.py)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ["codegen", "tests", "benchmarks", "fuzz", "examples", "setup.py"]


def _ruff() -> str:
    found = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    assert found, "ruff is a dependency of tfr-gen"
    return found


def test_ruff_check_and_format_pass() -> None:
    check = subprocess.run([_ruff(), "check", *SOURCES], cwd=ROOT, capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
    fmt = subprocess.run(
        [_ruff(), "format", "--check", *SOURCES], cwd=ROOT, capture_output=True, text=True
    )
    assert fmt.returncode == 0, fmt.stdout + fmt.stderr


def test_package_passes_mypy_strict(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--cache-dir", str(tmp_path), "codegen"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
