"""Child processes of the tests: Python, and the tools of the test environment."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

PYTHON = (sys.executable, "-P")
"""This interpreter without the working directory on ``sys.path`` (``-P``): a child imports the
``codegen`` the tests import (the installed package), not the source tree it runs in."""


def tool(name: str) -> str:
    """The path of the command-line tool ``name`` of this environment: next to this interpreter
    first, then on ``PATH`` (the tools are test dependencies)."""
    found = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    assert found, f"{name} is a test dependency of tfr-gen"
    return found
