"""The layers of the package: the import-linter contracts of pyproject.toml hold, and a forbidden
import or an import cycle added to a copy of ``codegen/`` breaks the contract that forbids it; no
module of ``codegen`` is part of an import cycle (an AST walk of its imports, stricter than the
contracts: a module that imports its own parent package closes a cycle through that package's
``__init__``); and importing the generator loads neither the runtime, protobuf nor the C
accelerator."""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import tomllib
from collections.abc import Iterator
from pathlib import Path

from support.paths import ROOT
from support.processes import PYTHON, tool

PYPROJECT = ROOT / "pyproject.toml"
CONTRACTS: list[dict[str, object]] = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"][
    "importlinter"
]["contracts"]
GENERATOR_CONTRACT = next(
    str(c["name"])
    for c in CONTRACTS
    if c["type"] == "forbidden" and "codegen.generator" in str(c["source_modules"])
)
"""The contract that keeps the runtime out of the generator."""
ACYCLIC_CONTRACT = next(str(c["name"]) for c in CONTRACTS if c["type"] == "acyclic_siblings")
"""The contract against import cycles between sibling modules and packages."""


def lint_imports(source_root: Path) -> tuple[int, dict[str, str], str]:
    """Run ``lint-imports`` with the repository's contracts on the ``codegen`` in ``source_root``:
    the exit code, each contract's verdict (``KEPT`` or ``BROKEN``) by name, and the report."""
    env = {**os.environ, "PYTHONPATH": str(source_root), "COLUMNS": "1000"}
    done = subprocess.run(
        [tool("lint-imports"), str(PYPROJECT), "--no-cache", "--no-logo"],
        cwd=source_root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    report = done.stdout + done.stderr
    verdicts = dict(re.findall(r"^(.+) (KEPT|BROKEN)$", done.stdout, flags=re.M))
    return done.returncode, verdicts, report


def copy_of_codegen(directory: Path) -> Path:
    """A copy of the package's sources (no built extension) in ``directory``; returns it."""
    shutil.copytree(
        ROOT / "codegen",
        directory / "codegen",
        ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.pyd"),
    )
    return directory


def add_import(root: Path, module: str, statement: str) -> None:
    """Insert ``statement`` among the module-level imports of ``module`` (a file under ``root``)."""
    path = root / (module.replace(".", "/") + ".py")
    text = path.read_text(encoding="utf-8")
    anchor = "from __future__ import annotations\n"
    assert anchor in text, path
    path.write_text(text.replace(anchor, f"{anchor}\n{statement}\n", 1), encoding="utf-8")


def add_sibling_cycle(root: Path) -> None:
    """Make ``codegen.runtime.codec.varint`` import ``wire``, which imports ``varint``."""
    wire = (root / "codegen" / "runtime" / "codec" / "wire.py").read_text(encoding="utf-8")
    assert "from codegen.runtime.codec.varint import" in wire
    add_import(root, "codegen.runtime.codec.varint", "import codegen.runtime.codec.wire")


# --- import-linter --------------------------------------------------------------------------------


def test_the_package_keeps_every_contract() -> None:
    code, verdicts, report = lint_imports(ROOT)
    assert code == 0, report
    assert verdicts == {str(c["name"]): "KEPT" for c in CONTRACTS}, report


def test_a_forbidden_import_breaks_its_contract(tmp_path: Path) -> None:
    root = copy_of_codegen(tmp_path)
    add_import(root, "codegen.generator.ir", "import codegen.runtime")
    code, verdicts, report = lint_imports(root)
    assert code != 0, report
    assert verdicts[GENERATOR_CONTRACT] == "BROKEN", report
    assert "codegen.generator.ir -> codegen.runtime" in report


def test_an_import_cycle_between_siblings_breaks_its_contract(tmp_path: Path) -> None:
    root = copy_of_codegen(tmp_path)
    add_sibling_cycle(root)
    code, verdicts, report = lint_imports(root)
    assert code != 0, report
    assert {name for name, verdict in verdicts.items() if verdict == "BROKEN"} == {
        ACYCLIC_CONTRACT
    }, report
    assert "No cycles are allowed in codegen.runtime.codec." in report


# --- import cycles between modules ----------------------------------------------------------------


def _module_name(package: Path, path: Path) -> str:
    parts = list(path.relative_to(package.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imported(statements: list[ast.stmt], module: str, is_package: bool) -> Iterator[str]:
    """The modules the statements import, at any depth but for ``if TYPE_CHECKING:`` blocks:
    ``import a.b`` imports ``a.b``; ``from a import b`` imports ``a`` (its ``__init__``) and ``a.b``
    (a module when there is one)."""
    for node in statements:
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            yield from _imported(node.orelse, module, is_package)
            continue
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            source = node.module or ""
            if node.level:
                base = module.split(".")[: None if is_package else -1]
                base = base[: len(base) - node.level + 1]
                source = ".".join([*base, *([source] if source else [])])
            yield source
            yield from (f"{source}.{alias.name}" for alias in node.names)
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.stmt):
                yield from _imported([child], module, is_package)
            elif isinstance(child, ast.ExceptHandler):
                yield from _imported(child.body, module, is_package)


def import_graph(package: Path) -> dict[str, set[str]]:
    """Each module of the package (a directory), with the modules of the package it imports."""
    paths = {_module_name(package, path): path for path in sorted(package.rglob("*.py"))}
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        imported = set(_imported(tree.body, name, path.name == "__init__.py"))
        graph[name] = {other for other in imported if other in paths and other != name}
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[set[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for other in sorted(graph[module]):
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in on_stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            component: set[str] = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == module:
                    break
            if len(component) > 1:
                cycles.append(component)

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return cycles


def test_no_module_of_the_package_is_part_of_an_import_cycle() -> None:
    graph = import_graph(ROOT / "codegen")
    assert {"codegen.runtime.codec.wire", "codegen.generator.ir"} <= set(graph)
    assert "codegen.runtime.codec.varint" in graph["codegen.runtime.codec.wire"]
    assert import_cycles(graph) == []


def test_the_cycle_check_finds_a_cycle_added_to_the_package(tmp_path: Path) -> None:
    root = copy_of_codegen(tmp_path)
    add_sibling_cycle(root)
    cycles = import_cycles(import_graph(root / "codegen"))
    assert len(cycles) == 1
    assert {"codegen.runtime.codec.varint", "codegen.runtime.codec.wire"} <= cycles[0]


def test_the_cycle_check_counts_imports_of_a_parent_package_but_not_type_checking_ones(
    tmp_path: Path,
) -> None:
    package = tmp_path / "pkg"
    (package / "sub").mkdir(parents=True)
    files = {
        "__init__.py": "from pkg.sub.child import VALUE\n",
        "sub/__init__.py": "",
        "sub/child.py": "from pkg import helper\nVALUE = helper.VALUE\n",
        "helper.py": "VALUE = 1\n",
        "typed.py": (
            "from typing import TYPE_CHECKING\n"
            "if TYPE_CHECKING:\n    from pkg import user\n"
            "else:\n    from . import helper\n"
        ),
        "user.py": "def f():\n    from .typed import helper\n    return helper\n",
    }
    for name, text in files.items():
        (package / name).write_text(text, encoding="utf-8")
    graph = import_graph(package)
    assert graph["pkg.sub.child"] == {"pkg", "pkg.helper"}  # the parent package's __init__ too
    assert graph["pkg.typed"] == {"pkg", "pkg.helper"}  # not pkg.user: a TYPE_CHECKING import
    assert graph["pkg.user"] == {"pkg.typed"}  # an import inside a function counts
    assert import_cycles(graph) == [{"pkg", "pkg.sub.child"}]


# --- what the generator loads ---------------------------------------------------------------------


def test_importing_the_generator_loads_neither_the_runtime_protobuf_nor_the_accelerator(
    tmp_path: Path,
) -> None:
    done = subprocess.run(
        [*PYTHON, "-X", "importtime", "-c", "import codegen.generate"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    loaded = re.findall(r"^import time:\s+\d+ \|\s+\d+ \|\s*(\S+)$", done.stderr, flags=re.M)
    assert {"codegen.generate", "codegen.generator.render", "codegen.errors"} <= set(loaded)
    unwanted = re.compile(r"codegen\.runtime(\..*)?|google\.protobuf(\..*)?|codegen\._speedups")
    assert [module for module in loaded if unwanted.fullmatch(module)] == []
