"""Shared fixtures and the session's checks of its environment.

TensorFlow is imported once per session; in CI a missing TensorFlow fails the run. In CI the
C accelerator must be importable (unless ``TFR_GEN_PURE_PYTHON=1`` turns it off): a session that
would otherwise test the pure-Python path alone fails before it collects anything. This module
imports no part of the runtime before that check (the runtime warns when the accelerator is
missing, and the tests turn warnings into errors).
"""

from __future__ import annotations

import collections
import os
import warnings
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import codegen


def pytest_sessionstart(session: pytest.Session) -> None:
    """In CI, stop at once when the runtime runs without ``codegen._speedups``."""
    if not os.environ.get("CI"):
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # AcceleratorWarning: reported below
        from codegen.runtime import accel
    if accel.speedups is not None or os.environ.get(accel.PURE_PYTHON_VARIABLE) == "1":
        return
    pytest.exit(
        f"CI needs the C accelerator, but the codegen the tests imported, {Path(codegen.__file__).parent},"
        f" runs without it: {accel.status()}. Install the package with `pip install .` (which builds"
        " the extension) and run pytest from the repository root as configured in pyproject.toml (the"
        " source tree never goes on sys.path), or build the extension in place with `python setup.py"
        f" build_ext --inplace`; {accel.PURE_PYTHON_VARIABLE}=1 runs the pure-Python path on purpose.",
        returncode=pytest.ExitCode.USAGE_ERROR,
    )


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


def _import_extra(name: str) -> Any:
    """An optional dependency of the test extra (skips outside CI when it is missing; fails in CI)."""
    import importlib

    try:
        return importlib.import_module(name)
    except ImportError as exc:  # pragma: no cover - depends on the environment
        if os.environ.get("CI"):
            pytest.fail(f"{name} is required in CI but cannot be imported: {exc!r}", pytrace=False)
        pytest.skip(f"{name} is not installed ({exc!r}); install the 'test' extra to run this test")


@pytest.fixture(scope="session")
def pa() -> Any:
    """The ``pyarrow`` module (skips outside CI when it is missing; fails in CI)."""
    return _import_extra("pyarrow")


@pytest.fixture(scope="session")
def pq() -> Any:
    """The ``pyarrow.parquet`` module (skips outside CI when it is missing; fails in CI)."""
    return _import_extra("pyarrow.parquet")


@pytest.fixture(scope="session")
def pd() -> Any:
    """The ``pandas`` module (skips outside CI when it is missing; fails in CI)."""
    return _import_extra("pandas")


@pytest.fixture(scope="session")
def pl() -> Any:
    """The ``polars`` module (skips outside CI when it is missing; fails in CI)."""
    return _import_extra("polars")


@pytest.fixture(scope="session")
def duckdb() -> Any:
    """The ``duckdb`` module (skips outside CI when it is missing; fails in CI)."""
    return _import_extra("duckdb")


@pytest.fixture(scope="session")
def matplotlib() -> Any:
    """The ``matplotlib`` module (skips outside CI when it is missing; fails in CI)."""
    return _import_extra("matplotlib")


@pytest.fixture(scope="session")
def tfds() -> Any:
    """The ``tensorflow_datasets`` module (skips outside CI when it is missing; fails in CI)."""
    return _import_extra("tensorflow_datasets")


@pytest.fixture(scope="session")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A headless Chromium driven by selenium (skips outside CI when Debian's ``chromium``,
    ``chromium-driver`` or selenium is missing; fails in CI)."""
    from support.browser import launch, missing

    why = missing()
    if why is not None:
        if os.environ.get("CI"):
            pytest.fail(f"a browser is required in CI: {why}", pytrace=False)
        pytest.skip(why)
    driver = launch(tmp_path_factory.mktemp("chromium-profile"))
    yield driver
    driver.quit()


@pytest.fixture(scope="session")
def matrix(tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    """The generated matrix module (one record per list dtype and shape form, plus ``Edges``)."""
    from support.matrix import build_matrix

    return build_matrix(tmp_path_factory.mktemp("matrix"))


@pytest.fixture(autouse=True)
def _restore_deflate() -> Iterator[None]:
    """A test that switches the deflate implementation (``use_deflate``) switches it for itself."""
    from codegen.runtime.io.compression import use_deflate

    before = use_deflate()
    yield
    use_deflate(before)


@pytest.fixture(scope="session")
def s3() -> Iterator[Any]:
    """An S3 server (moto) on 127.0.0.1 and s3fs: a ``support.servers.ObjectStore`` (skips outside
    CI when moto or s3fs is missing; fails in CI)."""
    from support.servers import s3_store, start_moto

    _import_extra("s3fs")
    _import_extra("moto.server")
    server = start_moto()
    try:
        yield s3_store(server)
    finally:
        server.stop()


@pytest.fixture
def s3_calls(monkeypatch: pytest.MonkeyPatch) -> collections.Counter[str]:
    """The S3 operations s3fs calls from now on, counted by name."""
    import s3fs

    calls: collections.Counter[str] = collections.Counter()
    call = s3fs.S3FileSystem._call_s3

    async def counted(self: Any, method: str, *args: Any, **kwargs: Any) -> Any:
        calls[method] += 1
        return await call(self, method, *args, **kwargs)

    monkeypatch.setattr(s3fs.S3FileSystem, "_call_s3", counted)
    return calls


@pytest.fixture(scope="session")
def gcs() -> Iterator[Any]:
    """A GCS emulator (gcp-storage-emulator) on 127.0.0.1 and gcsfs: a
    ``support.servers.ObjectStore`` (skips outside CI when either is missing; fails in CI)."""
    from support.servers import GCS_NO_GRPC, gcs_store, start_gcs_emulator

    os.environ.update(GCS_NO_GRPC)
    _import_extra("gcsfs")
    _import_extra("gcp_storage_emulator")
    server = start_gcs_emulator()
    try:
        yield gcs_store(server)
    finally:
        server.stop()


@pytest.fixture
def http_files(tmp_path: Path) -> Iterator[Any]:
    """An HTTP server of ``tmp_path`` on 127.0.0.1 answering Range requests, which records the
    requests it answers: a ``support.servers.HttpFiles`` (fsspec's HTTP file system needs aiohttp:
    skips outside CI when it is missing; fails in CI)."""
    from support.servers import serve_directory

    _import_extra("aiohttp")
    with serve_directory(tmp_path) as files:
        yield files
