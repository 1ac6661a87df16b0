"""Shared fixtures. TensorFlow is imported once per session; in CI a missing TensorFlow fails the run."""

from __future__ import annotations

import os
from types import ModuleType
from typing import Any

import pytest

from support.matrix import build_matrix


def _import_tensorflow() -> Any:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    try:
        import tensorflow as tf
    except Exception as exc:  # pragma: no cover - depends on the environment
        if os.environ.get("CI"):
            pytest.fail(
                f"TensorFlow is required in CI but cannot be imported: {exc!r}", pytrace=False
            )
        pytest.skip(
            f"TensorFlow is not installed ({exc!r}); install the 'test' extra to run this test"
        )
    return tf


@pytest.fixture(scope="session")
def tf() -> Any:
    """The ``tensorflow`` module (skips outside CI when it is missing; fails in CI)."""
    return _import_tensorflow()


@pytest.fixture(scope="session")
def matrix(tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    """The generated matrix module (one record per list dtype and shape form, plus ``Edges``)."""
    return build_matrix(tmp_path_factory.mktemp("matrix"))
