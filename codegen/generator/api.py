"""The public generator API: schema files in, Python modules out (or a staleness check).

``generate()`` is what the ``tfr-gen`` command runs; library users call it the same way. Schema problems come back as
values (``GenerateResult.diagnostics``), all of them, from every file; nothing is written unless every schema is valid,
and each output file is replaced atomically.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from codegen.errors import Diagnostic, SchemaError
from codegen.files import write_atomic
from codegen.generator.load import load_schema
from codegen.generator.render import render

SCHEMA_SUFFIXES = (".yaml", ".yml")


@dataclass(frozen=True, slots=True)
class GeneratedModule:
    """One rendered module: where it goes, its source text, and the schema it came from."""

    path: Path
    source: str
    schema_path: Path


@dataclass(slots=True)
class GenerateResult:
    """What ``generate()`` did: modules rendered, files written, files found stale, and schema diagnostics."""

    modules: list[GeneratedModule] = field(default_factory=list)
    written: list[Path] = field(default_factory=list)
    stale: list[Path] = field(default_factory=list)
    unchanged: list[Path] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.diagnostics


def display_path(path: Path) -> str:
    """``path`` as shown in messages and headers: relative to the working directory when inside it, POSIX style."""
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def find_schemas(inputs: Sequence[Path]) -> tuple[list[Path], list[Diagnostic]]:
    """The schema files named by ``inputs`` (files, or directories searched for ``*.yaml``/``*.yml``), sorted."""
    found: list[Path] = []
    problems: list[Diagnostic] = []
    for item in inputs:
        if item.is_dir():
            found.extend(
                sorted(p for p in item.iterdir() if p.suffix in SCHEMA_SUFFIXES and p.is_file())
            )
        elif item.is_file():
            found.append(item)
        else:
            problems.append(
                Diagnostic(display_path(item), 1, 1, "no such schema file or directory")
            )
    return found, problems


def regenerate_command(schema_path: Path, out_dir: Path) -> str:
    return f"tfr-gen {display_path(schema_path)} --out {display_path(out_dir)}"


def render_modules(
    schema_paths: Sequence[Path], out_dir: Path
) -> tuple[list[GeneratedModule], list[Diagnostic]]:
    """Load, check and render every schema; diagnostics of all files together."""
    modules: list[GeneratedModule] = []
    problems: list[Diagnostic] = []
    owners: dict[str, Path] = {}
    for schema_path in schema_paths:
        shown = display_path(schema_path)
        try:
            schema = load_schema(schema_path, display_path=shown)
        except SchemaError as exc:
            problems.extend(exc.diagnostics)
            continue
        if schema.module in owners:
            other = display_path(owners[schema.module])
            problems.append(
                Diagnostic(
                    shown,
                    1,
                    1,
                    f"module name {schema.module!r} is also generated from {other}; rename one",
                )
            )
            continue
        owners[schema.module] = schema_path
        source = render(schema, command=regenerate_command(schema_path, out_dir))
        modules.append(GeneratedModule(out_dir / f"{schema.module}.py", source, schema_path))
    return modules, problems


def generate(
    inputs: Sequence[str | os.PathLike[str]],
    *,
    out_dir: str | os.PathLike[str] = "generated",
    check: bool = False,
) -> GenerateResult:
    """Generate one module per schema in ``inputs`` into ``out_dir``.

    With ``check=True`` nothing is written; ``result.stale`` lists the modules that are missing or differ. When any
    schema has errors, ``result.diagnostics`` holds all of them and nothing is written.
    """
    out = Path(out_dir)
    schema_paths, problems = find_schemas([Path(p) for p in inputs])
    modules, render_problems = render_modules(schema_paths, out)
    result = GenerateResult(modules=modules, diagnostics=problems + render_problems)
    if not result.ok:
        return result
    for module in modules:
        current = module.path.read_bytes() if module.path.is_file() else None
        if current == module.source.encode("utf-8"):
            result.unchanged.append(module.path)
        elif check:
            result.stale.append(module.path)
        else:
            module.path.parent.mkdir(parents=True, exist_ok=True)
            write_atomic(module.path, module.source)
            result.written.append(module.path)
    return result
