"""Fixtures of the codec tests (the runtime is imported when a test asks for them, after the
session's check of the C accelerator in ``tests/conftest.py``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from codegen.runtime.accel import Speedups


@pytest.fixture(scope="module")
def sp() -> Speedups:
    """The ``codegen._speedups`` module (fails in CI when it cannot be imported, else skips)."""
    from support.speedups import import_speedups

    return import_speedups()
