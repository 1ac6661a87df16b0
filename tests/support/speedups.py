"""The C accelerator ``codegen._speedups`` for the tests that compare it with the pure-Python code."""

from __future__ import annotations

import importlib
import os
from types import ModuleType

import pytest

from codegen.runtime import accel


def speedups_module() -> ModuleType:
    """The extension module; fails in CI when it cannot be imported, else skips the test."""
    try:
        return importlib.import_module("codegen._speedups")
    except ImportError as exc:
        if os.environ.get("CI"):
            pytest.fail(f"codegen._speedups is required in CI but cannot be imported: {exc!r}")
        pytest.skip(
            f"codegen._speedups is not built ({exc!r}); build it with 'pip install -e .' or "
            "'python setup.py build_ext --inplace'"
        )


def import_speedups() -> accel.Speedups:
    """The extension as the runtime sees it (:class:`~codegen.runtime.accel.Speedups`)."""
    module = speedups_module()
    assert isinstance(module, accel.Speedups)
    return module
