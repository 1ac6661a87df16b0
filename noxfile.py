"""The repository's tasks: ``nox -s NAME`` (``nox -l`` lists them; plain ``nox`` runs the checks).

Every session runs in the environment nox is started from (``default_venv_backend = "none"``),
the one CONTRIBUTING.md sets up: tfr-gen installed editable with the ``test`` and ``dev`` extras
and the C accelerator built in place. A virtual environment per session would reinstall
TensorFlow and PyTorch (gigabytes) for each one and test a freshly built copy of the package
instead of the working tree. Arguments after ``--`` go to the session's command
(``nox -s tests -- -k dataset``, ``nox -s fuzz -- 300``).
"""

from __future__ import annotations

import nox

nox.options.default_venv_backend = "none"
nox.options.sessions = ["lint", "typecheck", "tests", "tests_pure"]

PURE_PYTHON_TESTS = [
    "tests/runtime/codec/test_wire.py",
    "tests/runtime/codec/test_wire_properties.py",
    "tests/runtime/codec/test_features.py",
    "tests/runtime/codec/test_tensors.py",
    "tests/runtime/codec/test_sequences.py",
    "tests/integration/test_generated_records.py",
    "tests/tf/test_conformance.py",
    "tests/integration/test_fuzz_properties.py",
    "tests/integration/test_corpus.py",
]
"""The codec and record tests that the pure-Python path (no C accelerator) must pass too."""

FUZZ_SECONDS = "60"
"""How long ``nox -s fuzz`` runs each target without an argument (as CI does)."""


@nox.session
def lint(session: nox.Session) -> None:
    """ruff check, ruff format --check (Python and Markdown code blocks), lint-imports."""
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
    session.run("lint-imports")


@nox.session
def typecheck(session: nox.Session) -> None:
    """mypy --strict, as configured in pyproject.toml: the package, generated/, the tests, the
    benchmarks, the fuzz targets and the examples."""
    session.run("mypy", *session.posargs)


@nox.session
def tests(session: nox.Session) -> None:
    """The whole test suite on two cores."""
    session.run("pytest", "-n", "2", *session.posargs)


@nox.session
def tests_pure(session: nox.Session) -> None:
    """The codec and record tests on the pure-Python path (TFR_GEN_PURE_PYTHON=1)."""
    session.run(
        "pytest",
        "-n",
        "2",
        "-q",
        *PURE_PYTHON_TESTS,
        *session.posargs,
        env={"TFR_GEN_PURE_PYTHON": "1"},
    )


@nox.session
def regenerate(session: nox.Session) -> None:
    """Regenerate generated/ from schemas/ and the C contract header from codegen/kinds.py (tests fail while
    either is stale)."""
    session.run("tfr-gen", "schemas", "--out", "generated")
    with open("codegen/_speedups/contract.h", "w", encoding="utf-8") as header:
        session.run("python", "-m", "codegen.kinds", stdout=header)


@nox.session
def benchmarks(session: nox.Session) -> None:
    """The full benchmark, about 2 minutes on a quiet machine (options after --)."""
    session.run("python", "-m", "benchmarks", *session.posargs)


@nox.session
def fuzz(session: nox.Session) -> None:
    """Each atheris fuzz target for SECONDS s: nox -s fuzz -- SECONDS (default 60; the fuzz extra)."""
    session.run(".ci/fuzz", *(session.posargs or [FUZZ_SECONDS]))
