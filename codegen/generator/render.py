"""Rendering: IR -> formatted Python source.

Templates live in ``templates/`` (shipped inside the package as ``codegen/templates``). Every value a template prints
passes through one of the filters below, which turn it into a Python literal, a validated identifier or a safe
comment/docstring, so no schema content can change the structure of the generated code. The body is rendered before
the header so the header's imports are exactly what the body used. The result is formatted with ruff.
"""

from __future__ import annotations

import keyword
import math
import subprocess
import unicodedata
from collections.abc import Iterable
from pathlib import Path

import jinja2

from codegen import __version__
from codegen.generator.ir import FeatureIR, RecordIR, SchemaIR

_FIXED_IMPORTS = (
    "import dataclasses as _dc",
    "from collections.abc import Callable as _Callable",
    "from collections.abc import Iterator as _Iterator",
    "from collections.abc import Iterable as _Iterable",
    "from collections.abc import Sequence as _Sequence",
    "from typing import Any as _Any",
    "from typing import Unpack as _Unpack",
    "from typing import overload as _overload",
    "from typing import Self as _Self",
    "from codegen import runtime as _rt",
)


class RenderError(RuntimeError):
    """A template tried to print a value that is not safe Python source (a bug in tfr-gen, not in the schema)."""


class Imports:
    """The imports a rendered body used, collected while rendering and printed in the header."""

    def __init__(self, fixed: Iterable[str] = _FIXED_IMPORTS) -> None:
        self._lines: set[str] = set(fixed)

    def add(self, line: str) -> str:
        self._lines.add(line)
        return ""

    def lines(self) -> list[str]:
        # ruff's isort fixes the grouping and order afterwards; sorting here keeps the input deterministic.
        return sorted(self._lines)


def _template_dir() -> Path:
    """``codegen/templates`` in an installed wheel, else the repository's top-level ``templates/``."""
    package = Path(__file__).resolve().parents[1]
    packaged = package / "templates"
    return packaged if packaged.is_dir() else package.parent / "templates"


def ident(value: object) -> str:
    """A validated Python identifier (never a keyword)."""
    if not isinstance(value, str) or not value.isidentifier() or keyword.iskeyword(value):
        raise RenderError(f"not a safe identifier: {value!r}")
    return value


def pyrepr(value: object) -> str:
    """A Python literal for ``value``: str, bytes, int, float (nan/inf too), bool, None, or tuples/lists of them."""
    if value is None or isinstance(value, bool | int):
        return repr(value)
    if isinstance(value, float):
        if math.isnan(value):
            return 'float("nan")'
        if math.isinf(value):
            return 'float("inf")' if value > 0 else 'float("-inf")'
        return repr(value)
    if isinstance(value, str | bytes):
        return repr(value)  # repr escapes quotes, backslashes, newlines and non-printables
    if isinstance(value, tuple):
        inner = ", ".join(pyrepr(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, list):
        return "[" + ", ".join(pyrepr(v) for v in value) + "]"
    raise RenderError(f"no Python literal for {type(value).__name__} {value!r}")


def _printable(text: str) -> str:
    """``text`` with every line break and control character replaced, so it stays on one source line."""
    out = []
    for ch in text:
        if ch in "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029" or unicodedata.category(ch) in (
            "Cc",
            "Cs",
        ):
            out.append(" " if ch.isspace() else repr(ch)[1:-1])
        else:
            out.append(ch)
    return "".join(out)


def comment(value: object) -> str:
    """Text safe to print after ``#`` on one line."""
    if not isinstance(value, str):
        raise RenderError(f"comment text must be a string, got {value!r}")
    return _printable(value)


def comment_block(value: object, prefix: str = "# ") -> str:
    """Each line of ``value`` as a comment line starting with ``prefix``."""
    if not isinstance(value, str):
        raise RenderError(f"comment text must be a string, got {value!r}")
    return "\n".join((prefix + _printable(line)).rstrip() for line in value.splitlines() or [""])


def _docstring_text(text: str) -> str:
    # Keep line breaks, neutralise everything that could end or corrupt the literal.
    lines = [_printable(line).rstrip() for line in text.strip().splitlines()]
    body = "\n".join(lines).replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    if body.endswith('"'):
        body += " "
    return body


def docstring(value: object) -> str:
    """A triple-quoted docstring literal holding ``value``."""
    if not isinstance(value, str):
        raise RenderError(f"docstring text must be a string, got {value!r}")
    text = _docstring_text(value)
    return f'"""{text}\n"""' if "\n" in text else f'"""{text}"""'


def _describe(f: FeatureIR) -> str:
    shape = (
        "scalar"
        if not f.shape
        else "[" + ", ".join("null" if d is None else str(d) for d in f.shape) + "]"
    )
    parts = [f"{f.dtype.name} {shape}", f"key {f.key!r}"]
    if f.optional:
        parts.append("optional")
    if f.has_default:
        parts.append(f"default {f.default!r}")
    return ", ".join(parts)


def record_docstring(rec: RecordIR) -> str:
    """The record class's docstring: its doc, then one line per attribute."""
    head = rec.doc.strip() if rec.doc else f"A ``{rec.name}`` record (``tf.train.Example``)."
    lines = [head, "", "Attributes:"]
    for f in rec.features:
        lines.append(f"    {f.name}: {_describe(f)}." + (f" {f.doc.strip()}" if f.doc else ""))
    return docstring("\n".join(lines))


def _finalize(value: object) -> object:
    if isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    raise RenderError(f"a template printed a {type(value).__name__} without a filter: {value!r}")


def environment() -> jinja2.Environment:
    """The jinja2 environment used for every template."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(_template_dir()),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
        finalize=_finalize,
    )
    env.filters.update(
        ident=ident,
        pyrepr=pyrepr,
        pylist=lambda v: pyrepr(list(v)),
        comment=comment,
        comment_block=comment_block,
        docstring=docstring,
        record_docstring=record_docstring,
    )
    return env


def _module_doc(schema: SchemaIR) -> str:
    head = schema.doc.strip() if schema.doc else f"Records of the ``{schema.module}`` schema."
    names = ", ".join(r.name for r in schema.records)
    return f"{head}\n\nRecords: {names}. Schema version {schema.version}, fingerprint {schema.fingerprint[:16]}."


def render_source(schema: SchemaIR, *, command: str) -> str:
    """The generated module for ``schema`` (unformatted). ``command`` is shown as the way to regenerate it."""
    env = environment()
    imports = Imports()
    record_template = env.get_template("record.py.jinja")
    body = "\n\n".join(
        record_template.render(rec=rec, schema=schema, imports=imports) for rec in schema.records
    )
    exports = sorted(
        [
            "SCHEMA_CANONICAL",
            "SCHEMA_FINGERPRINT",
            "SCHEMA_VERSION",
            *(r.name for r in schema.records),
        ]
    )
    return env.get_template("module.py.jinja").render(
        schema=schema,
        body=body,
        imports=imports,
        exports=exports,
        tool_version=__version__,
        source=schema.source,
        command=command,
        module_doc=_module_doc(schema),
    )


def _ruff(args: list[str], source: str) -> str:
    from ruff.__main__ import find_ruff_bin

    proc = subprocess.run(
        [
            find_ruff_bin(),
            *args,
            "--isolated",
            "--target-version",
            "py311",
            "--stdin-filename",
            "generated.py",
            "-",
        ],
        input=source,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise RenderError(
            f"ruff {' '.join(args)} failed on generated code:\n{proc.stderr or proc.stdout}"
        )
    return proc.stdout


def format_source(source: str) -> str:
    """Sort imports and format with ruff (pinned version, default style, so output is reproducible)."""
    # The runtime package is a third-party import wherever generated code lives, whatever the working directory.
    isort = ["--config", 'lint.isort.known-third-party=["codegen"]']
    sorted_imports = _ruff(
        ["check", *isort, "--select", "I", "--fix", "--exit-zero", "--quiet"], source
    )
    return _ruff(["format", "--quiet"], sorted_imports)


def render(schema: SchemaIR, *, command: str) -> str:
    """The formatted generated module for ``schema``."""
    return format_source(render_source(schema, command=command))
