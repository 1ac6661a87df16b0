"""``tfr-gen diff OLD NEW`` / ``tfr-gen diff --against REV DIR...``: schema changes and whether
they keep data readable.

Every change is printed with its classification and position; the exit code is 1 when a change
breaks ``--mode``, when the schema changed (beyond docs) but ``version`` did not increase, or when
``version`` went down; 2 for invalid schemas and unreadable inputs.
"""

from __future__ import annotations

import argparse
import json
import os
from dataclasses import dataclass, field
from pathlib import PurePath
from typing import TextIO

from codegen.cli.commands.exitcodes import EXIT_ERROR, EXIT_FOUND, EXIT_OK
from codegen.cli.commands.messages import Messages, plural
from codegen.compat import (
    Change,
    ChangeKind,
    Classification,
    Locations,
    Mode,
    Position,
    compare_schemas,
    overall,
)
from codegen.errors import Diagnostic, SchemaError
from codegen.generator.ir import Location, SchemaIR
from codegen.generator.lower import lower
from codegen.generator.naming import SCHEMA_SUFFIXES
from codegen.generator.schema.loader import decode_text, load_yaml
from codegen.tools.gitfiles import GIT_PREFIX, Repository, read_spec

NAME = "diff"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "inputs",
        nargs="+",
        metavar="SCHEMA",
        help="OLD and NEW schema, each a path or git:REV:path; with --against, schema files or"
        " directories of *.yaml schemas",
    )
    parser.add_argument(
        "--against",
        metavar="REV",
        help="compare every schema given (or in the directories given) with its version at git"
        " revision REV; new schemas are fine, deleted ones are breaking",
    )
    parser.add_argument(
        "--mode",
        choices=[m.value for m in Mode],
        default=Mode.BACKWARD.value,
        help="what every change must keep: backward (new readers read old data; the default),"
        " forward (old readers read new data), full (both) or none",
    )
    parser.add_argument(
        "--format",
        choices=["text", "json"],
        default="text",
        help="text for people (default) or json for tools",
    )


@dataclass(frozen=True, slots=True)
class _Version:
    """One side of a comparison: what it is called, and its schema with positions."""

    name: str
    schema: SchemaIR
    locations: Locations


@dataclass(slots=True)
class SchemaDiff:
    """The comparison of one schema: its two versions (either may be missing), changes, problems."""

    old: str | None
    new: str | None
    status: str  # "changed", "unchanged", "added" or "removed"
    old_version: int | None = None
    new_version: int | None = None
    changes: list[Change] = field(default_factory=list)
    problems: list[Diagnostic] = field(default_factory=list)

    def violations(self, mode: Mode) -> list[Change]:
        return [c for c in self.changes if not mode.allows(c.classification)]

    def ok(self, mode: Mode) -> bool:
        return not self.problems and not self.violations(mode)

    def to_json(self, mode: Mode) -> dict[str, object]:
        return {
            "old": self.old,
            "new": self.new,
            "status": self.status,
            "old_version": self.old_version,
            "new_version": self.new_version,
            "classification": overall(self.changes).value,
            "ok": self.ok(mode),
            "problems": [str(p) for p in self.problems],
            "changes": [
                {**c.to_json(), "violates": not mode.allows(c.classification)} for c in self.changes
            ],
        }


def _load(name: str, data: bytes) -> _Version:
    """A schema from the bytes of its file; ``name`` is what messages show (its stem names the
    module). Raises :class:`SchemaError`."""
    document = load_yaml(decode_text(data, name), name)
    schema = lower(document, module=PurePath(name).stem, source=name)
    locations = {
        ".".join(str(part) for part in path): Location(name, mark.line, mark.col)
        for path, mark in document.positions.keys.items()
    }
    return _Version(name, schema, locations)


def _read(spec: str) -> _Version:
    try:
        data = read_spec(spec)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise SchemaError(
            [Diagnostic(spec, 1, 1, f"cannot read the schema file: {reason}")]
        ) from None
    return _load(spec, data)


def compare(old: _Version, new: _Version) -> SchemaDiff:
    """Every change from ``old`` to ``new``, and the version problems."""
    changes = compare_schemas(
        json.loads(old.schema.canonical),
        json.loads(new.schema.canonical),
        old_locations=old.locations,
        new_locations=new.locations,
    )
    before, after = old.schema.version, new.schema.version
    where = new.locations.get("version") or Location(new.name, 1, 1)
    problems: list[Diagnostic] = []
    semantic = [c for c in changes if c.kind.semantic]
    if after < before:
        problems.append(_problem(where, f"version went down from {before} to {after}"))
    elif semantic and after == before:
        problems.append(
            _problem(
                where,
                f"the schema changed ({len(semantic)} change(s) beyond docs) but version is still"
                f" {after}; increase it",
            )
        )
    status = "changed" if changes else "unchanged"
    return SchemaDiff(old.name, new.name, status, before, after, changes, problems)


def _problem(where: Position, message: str) -> Diagnostic:
    return Diagnostic(where.path, where.line, where.col, message)


def _pair(old_spec: str, new_spec: str) -> SchemaDiff:
    return compare(_read(old_spec), _read(new_spec))


def _against(rev: str, inputs: list[str]) -> list[tuple[str, bytes | None]]:
    """``(path, content at rev or None)`` of every schema that ``inputs`` name now or at ``rev``:
    files as given, and the ``*.yaml``/``*.yml`` files of directories (now or at ``rev``)."""
    found: list[tuple[str, bytes | None]] = []
    for item in inputs:
        repository = Repository(item, rev)
        then = repository.files(item)  # empty unless a directory at rev
        if os.path.isdir(item) or (then and not os.path.exists(item)):
            now = os.listdir(item) if os.path.isdir(item) else []
            paths = {p for p in (os.path.join(item, n) for n in now) if os.path.isfile(p)}
            schemas = sorted(p for p in paths | set(then) if p.endswith(SCHEMA_SUFFIXES))
        else:
            schemas = [item]
        found.extend((path, repository.read(path)) for path in schemas)
    return found


def _against_diffs(rev: str, inputs: list[str]) -> tuple[list[SchemaDiff], list[Diagnostic]]:
    diffs: list[SchemaDiff] = []
    errors: list[Diagnostic] = []
    for path, before in _against(rev, inputs):
        old_name = f"{GIT_PREFIX}{rev}:{path}"
        try:
            if not os.path.exists(path):
                if before is None:
                    message = f"no such schema file, now or at revision {rev!r}"
                    raise SchemaError([Diagnostic(path, 1, 1, message)])
                diffs.append(_removed(_load(old_name, before), path))
            elif before is None:
                diffs.append(SchemaDiff(None, path, "added", None, _read(path).schema.version))
            else:
                diffs.append(compare(_load(old_name, before), _read(path)))
        except SchemaError as exc:
            errors.extend(exc.diagnostics)
    return diffs, errors


def _removed(old: _Version, path: str) -> SchemaDiff:
    change = Change(
        "",
        ChangeKind.SCHEMA_REMOVED,
        Classification.BREAKING,
        f"schema {path} was deleted: its module is gone and nothing reads the data it described",
        Location(old.name, 1, 1),
    )
    return SchemaDiff(old.name, None, "removed", old.schema.version, None, [change])


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    mode = Mode(args.mode)
    inputs: list[str] = args.inputs
    if args.against is None and len(inputs) != 2:
        Messages(NAME, err).error(f"expected OLD and NEW, got {plural(len(inputs), 'argument')}")
        return EXIT_ERROR
    if args.against is None:
        try:
            diffs, errors = [_pair(inputs[0], inputs[1])], []
        except SchemaError as exc:
            diffs, errors = [], list(exc.diagnostics)
    else:
        diffs, errors = _against_diffs(args.against, inputs)
    if errors:
        for diagnostic in errors:
            print(diagnostic, file=err)
        Messages(NAME, err).summary(f"{plural(len(errors), 'error')} in the schemas")
        return EXIT_ERROR
    ok = all(d.ok(mode) for d in diffs)
    if args.format == "json":
        report = {"mode": mode.value, "ok": ok, "schemas": [d.to_json(mode) for d in diffs]}
        print(json.dumps(report, indent=2), file=out)
    else:
        _print_text(diffs, mode, out)
    return EXIT_OK if ok else EXIT_FOUND


def _print_text(diffs: list[SchemaDiff], mode: Mode, out: TextIO) -> None:
    changes = violations = problems = 0
    for diff in diffs:
        if diff.status == "added":
            print(f"{diff.new}: new schema (version {diff.new_version})", file=out)
            continue
        head = f"{diff.old} (version {diff.old_version})"
        if diff.status == "removed":
            print(f"{head}: deleted", file=out)
        else:
            summary = f"{len(diff.changes)} change(s), {overall(diff.changes).value}"
            print(f"{head} -> {diff.new} (version {diff.new_version}): {summary}", file=out)
        bad = diff.violations(mode)
        for change in diff.changes:
            flag = f" (violates --mode {mode.value})" if change in bad else ""
            print(
                f"  {change.where()}: {change.classification.value}{flag}: {change.message}",
                file=out,
            )
        for problem in diff.problems:
            print(f"  {problem}", file=out)
        changes += len(diff.changes)
        violations += len(bad)
        problems += len(diff.problems)
    verdict = "ok" if not violations and not problems else "not ok"
    print(
        f"tfr-gen diff: {len(diffs)} schema(s), {changes} change(s), {violations} violating"
        f" --mode {mode.value}, {problems} version problem(s): {verdict}",
        file=out,
    )
