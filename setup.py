"""The build of tfr-gen: the optional C accelerator and the templates inside the package.

Project metadata lives in pyproject.toml; this file adds what setuptools cannot say there:

* ``codegen._speedups`` (the C sources in ``codegen/_speedups/``, which share ``speedups.h``), an optional
  extension: a machine without a C compiler still builds and installs the pure-Python package
  (the runtime then uses ``codegen/runtime/codec/wire.py`` alone).
* the top-level ``templates/`` copied into the wheel as ``codegen/templates/`` (an editable
  install reads them from ``templates/`` itself).

Development: ``pip install -e .`` once, then ``python setup.py build_ext --inplace`` after each
change to a C file.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from setuptools import Extension, setup  # type: ignore[import-untyped]
from setuptools.command.build_ext import build_ext  # type: ignore[import-untyped]
from setuptools.command.build_py import build_py  # type: ignore[import-untyped]

ROOT = Path(__file__).resolve().parent
UNIX_FLAGS = ["-O2", "-Wall"]
"""Compiler flags for gcc and clang (they come after Python's own, so -O2 wins over its -O3)."""


class BuildExt(build_ext):  # type: ignore[misc]
    """``build_ext`` with numpy's headers, compiling with ``UNIX_FLAGS`` on gcc-like compilers."""

    def build_extensions(self) -> None:
        import numpy  # a build requirement: the plan decoder makes arrays with numpy's C API

        for extension in self.extensions:
            extension.include_dirs = [*extension.include_dirs, numpy.get_include()]
        if self.compiler.compiler_type in ("unix", "mingw32", "cygwin"):
            for extension in self.extensions:
                extension.extra_compile_args = [*extension.extra_compile_args, *UNIX_FLAGS]
        super().build_extensions()


class BuildPy(build_py):  # type: ignore[misc]
    """``build_py`` that also copies ``templates/`` into the package as ``codegen/templates``."""

    def run(self) -> None:
        super().run()
        if self.editable_mode:
            return
        target = Path(self.build_lib) / "codegen" / "templates"
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(
            ROOT / "templates", target, ignore=shutil.ignore_patterns("__pycache__", "*.py[cod]")
        )


setup(
    ext_modules=[
        Extension(
            "codegen._speedups",
            sorted(str(p.relative_to(ROOT)) for p in (ROOT / "codegen" / "_speedups").glob("*.c")),
            depends=["codegen/_speedups/speedups.h", "codegen/_speedups/contract.h"],
            # dlopen (inflate.c): in libc since glibc 2.34, in libdl before
            libraries=["dl"] if sys.platform.startswith("linux") else [],
            optional=True,
        )
    ],
    cmdclass={"build_ext": BuildExt, "build_py": BuildPy},
)
