"""Rendering: IR -> the generated module's source, already formatted.

Templates live in ``templates/`` (shipped inside the package as ``codegen/templates``): ``module.py.jinja`` around
one ``record.py.jinja`` per record, and one template per feature kind (``features/<kind>.py.jinja``, from the registry
of feature kinds :data:`codegen.kinds.KINDS`) exporting the macros ``attr_type``, ``param`` and ``batch_type``. Every
value a template prints passes through one of the filters below, which turn it into a Python literal, a validated
identifier or a safe comment/docstring, so no schema content can change the structure of the generated code. The body
is rendered before the header so the header's imports are exactly what the body used.

The templates write each statement on one line; :func:`codegen.generator.layout.reflow` then splits long lines as
ruff's formatter does, and literals are written as the formatter writes them (double quotes unless that needs more
escapes), so the output needs no formatter and does not depend on one being installed.
"""

from __future__ import annotations

import keyword
import math
import re
import unicodedata
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import jinja2

from codegen import ABI_VERSION, __version__
from codegen.generator.ir import FeatureIR, RecordIR, SchemaIR
from codegen.generator.layout import INDENT, WIDTH, reflow, text_width, wrap
from codegen.kinds import KINDS

__all__ = ["RenderError", "environment", "render", "render_source"]

_IMPORTS: tuple[tuple[str, ...], ...] = (
    ("from __future__ import annotations",),
    (
        "import dataclasses as _dc",
        "from collections.abc import Iterable as _Iterable",
        "from typing import Any as _Any",
        "from typing import Self as _Self",
        "from typing import TypedDict as _TypedDict",
    ),
    (
        "import numpy as _np",
        "import numpy.typing as _npt",
        "from codegen.runtime import _abi as _rt",
    ),
)
"""Every import a generated module may have, in sections and in the order isort (ruff's ``I`` rules) sorts them:
``from __future__``, the standard library, then numpy and the runtime (third-party wherever the module is used)."""

_ALWAYS = (
    "from __future__ import annotations",
    "import dataclasses as _dc",
    "from typing import Any as _Any",
    "from typing import Self as _Self",
    "from typing import TypedDict as _TypedDict",
    "from codegen.runtime import _abi as _rt",
)

SEP = "\x1f"
"""What the templates' list macros print after each item; ``pytuple`` and ``pyargs`` join the items."""


class RenderError(RuntimeError):
    """A template tried to print a value that is not safe Python source (a bug in tfr-gen, not in the schema)."""


class Imports:
    """The imports a rendered body used, collected while rendering and printed in the header."""

    def __init__(self) -> None:
        self._lines: set[str] = set(_ALWAYS)

    def add(self, line: str) -> str:
        if not any(line in section for section in _IMPORTS):
            raise RenderError(f"a template imports {line!r}, which render.py does not know")
        self._lines.add(line)
        return ""

    def groups(self) -> list[list[str]]:
        """The used imports by section, each in isort's order; empty sections left out."""
        groups = [[line for line in section if line in self._lines] for section in _IMPORTS]
        return [group for group in groups if group]


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


def _escape(ch: str, quote: str) -> str:
    if ch == "\\":
        return "\\\\"
    if ch == quote:
        return "\\" + quote
    if ch == "\n":
        return "\\n"
    if ch == "\r":
        return "\\r"
    if ch == "\t":
        return "\\t"
    if ch.isprintable():
        return ch
    return repr(ch)[1:-1]  # \xNN, \uNNNN or \UNNNNNNNN, as repr writes them


def _quoted(text: str, prefix: str = "") -> str:
    """A string literal for ``text`` quoted as the formatter quotes it: double quotes, unless the text holds more
    double than single quotes."""
    quote = "'" if text.count('"') > text.count("'") else '"'
    return prefix + quote + "".join(_escape(ch, quote) for ch in text) + quote


def _bytes_literal(data: bytes) -> str:
    """A bytes literal for ``data``, quoted like a string literal, every byte outside printable ASCII escaped."""
    text = data.decode("latin-1")
    quote = "'" if text.count('"') > text.count("'") else '"'
    out = []
    for byte in data:
        ch = chr(byte)
        if ch in (quote, "\\") or ch in "\n\r\t":
            out.append(_escape(ch, quote))
        elif 0x20 <= byte < 0x7F:
            out.append(ch)
        else:
            out.append(f"\\x{byte:02x}")
    return "b" + quote + "".join(out) + quote


def pyrepr(value: object) -> str:
    """A Python literal for ``value``: str, bytes, int, float (nan/inf too), bool, None, or tuples/lists of them."""
    if value is None or isinstance(value, bool | int):
        return repr(value)
    if isinstance(value, float):
        if math.isnan(value):
            return 'float("nan")'
        if math.isinf(value):
            return 'float("inf")' if value > 0 else 'float("-inf")'
        return repr(value).replace("e+", "e")  # the formatter writes 1e16, not 1e+16
    if isinstance(value, str):
        return _quoted(value)
    if isinstance(value, bytes):
        return _bytes_literal(value)
    if isinstance(value, tuple):
        inner = ", ".join(pyrepr(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, list):
        return "[" + ", ".join(pyrepr(v) for v in value) + "]"
    raise RenderError(f"no Python literal for {type(value).__name__} {value!r}")


def _items(text: object) -> list[str]:
    if not isinstance(text, str):
        raise RenderError(f"a list macro printed {text!r}")
    return [item for item in text.split(SEP) if item]


def pytuple(text: object) -> str:
    """The items a list macro printed (each followed by :data:`SEP`) as a tuple display."""
    items = _items(text)
    return f"({items[0]},)" if len(items) == 1 else "(" + ", ".join(items) + ")"


def pyargs(text: object) -> str:
    """The items a list macro printed as comma-separated arguments or parameters."""
    return ", ".join(_items(text))


def pystring_chunks(value: object, indent: int) -> str:
    """``value`` as one string literal if it fits on a line at ``indent`` after a keyword, else as an implicit
    concatenation in parentheses whose parts each fit on a line at ``indent``."""
    if not isinstance(value, str):
        raise RenderError(f"pystring_chunks needs a string, got {value!r}")
    whole = _quoted(value)
    if text_width(whole) <= WIDTH - indent:
        return whole
    parts: list[str] = []
    start = 0
    while start < len(value):
        end = start + 1
        while end < len(value) and text_width(_quoted(value[start : end + 1])) <= WIDTH - indent:
            end += 1
        parts.append(_quoted(value[start:end]))
        start = end
    return "(" + " ".join(parts) + ")"


_LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"


def _printable(text: str) -> str:
    """``text`` with every line break, control, format (bidirectional and zero-width) and surrogate character
    replaced by a space or its escape sequence, so it stays on one line and reads as it will display."""
    out = []
    for ch in text:
        if ch in _LINE_BREAKS or unicodedata.category(ch) in ("Cc", "Cf", "Cs"):
            out.append(" " if ch.isspace() else repr(ch)[1:-1])
        else:
            out.append(ch)
    return "".join(out)


def comment(value: object) -> str:
    """Text safe to print after ``#`` on one line."""
    if not isinstance(value, str):
        raise RenderError(f"comment text must be a string, got {value!r}")
    return _printable(value)


def _docstring_lines(text: str, width: int) -> list[str]:
    """The lines of a docstring holding ``text``: line breaks kept, long lines wrapped at ``width``, everything that
    could end or corrupt the literal neutralised."""
    lines: list[str] = []
    for line in text.strip().splitlines():
        safe = _printable(line).rstrip().replace("\\", "\\\\")
        lines.extend(wrap(safe, max(width, 20)))
    body = "\n".join(lines).replace('"""', '\\"\\"\\"')
    if body.startswith('"'):
        body = " " + body
    return body.split("\n")


def _ends_with_quote(text: str) -> bool:
    """Whether ``text`` ends with a ``"`` that is not escaped (it would run into the closing quotes)."""
    if not text.endswith('"'):
        return False
    backslashes = len(text) - 1 - len(text[:-1].rstrip("\\"))
    return backslashes % 2 == 0


def docstring(value: object, indent: int = 0) -> str:
    """A triple-quoted docstring literal holding ``value``, for a statement at ``indent`` columns."""
    if not isinstance(value, str):
        raise RenderError(f"docstring text must be a string, got {value!r}")
    lines = _docstring_lines(value, WIDTH - indent - 6)
    space = " " if _ends_with_quote(lines[-1]) else ""
    if len(lines) == 1 and text_width(lines[0] + space) + indent + 6 <= WIDTH:
        return f'"""{lines[0]}{space}"""'
    pad = " " * indent
    rest = "".join(f"\n{pad}{line}" if line else "\n" for line in lines[1:])
    return f'"""{lines[0]}{rest}\n{pad}"""'


def _shape(f: FeatureIR) -> str:
    if not f.shape:
        return "scalar"
    return "[" + ", ".join("null" if d is None else str(d) for d in f.shape) + "]"


def attribute_docstring(f: FeatureIR) -> str:
    """The docstring of one attribute: its dtype, shape, key, optional or default, then its doc."""
    parts = [f"{f.dtype.name} {_shape(f)}", f"key {f.key!r}"]
    if f.template == "sequence_feature":
        parts[0] = f"{f.dtype.name} steps of {_shape(f)}"
    if f.optional:
        parts.append("optional")
    if f.has_default:
        parts.append(f"default {f.default!r}")
    text = ", ".join(parts) + "." + (f" {f.doc.strip()}" if f.doc else "")
    return docstring(text, INDENT)


def record_docstring(rec: RecordIR) -> str:
    """The record class's docstring: its doc (each attribute documents itself)."""
    message = "SequenceExample" if rec.kind == "sequence" else "Example"
    head = rec.doc.strip() if rec.doc else f"A ``{rec.name}`` record (``tf.train.{message}``)."
    return docstring(head, INDENT)


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
        pytuple=pytuple,
        pyargs=pyargs,
        pystring_chunks=pystring_chunks,
        comment=comment,
        docstring=docstring,
        attribute_docstring=attribute_docstring,
        record_docstring=record_docstring,
    )
    env.globals.update(SEP=SEP)
    return env


def _kind_templates(env: jinja2.Environment) -> dict[str, Any]:
    """The template module of each feature kind of the registry, by kind name."""
    return {kind.name: env.get_template(f"features/{kind.name}.py.jinja").module for kind in KINDS}


def _module_doc(schema: SchemaIR) -> str:
    head = schema.doc.strip() if schema.doc else f"Records of the ``{schema.module}`` schema."
    names = ", ".join(r.name for r in schema.records)
    return f"{head}\n\nRecords: {names}. Schema version {schema.version}, fingerprint {schema.fingerprint[:16]}."


def _exports(names: Iterable[str]) -> list[str]:
    """``__all__`` in isort's order (ruff's RUF022): SCREAMING_CASE, then CamelCase, then the rest, each in natural
    order (digit runs compared as numbers)."""

    def key(name: str) -> tuple[int, list[tuple[int, int, str]]]:
        group = 0 if name.isupper() and len(name) > 1 else 1 if name[:1].isupper() else 2
        parts = re.split(r"(\d+)", name)
        return group, [(0, int(p), "") if p.isdigit() else (1, 0, p) for p in parts if p]

    return sorted(names, key=key)


def render_source(schema: SchemaIR, *, command: str) -> str:
    """The generated module for ``schema`` with each statement on one line. ``command`` is shown as the way to
    regenerate it."""
    env = environment()
    imports = Imports()
    kinds = _kind_templates(env)
    record_template = env.get_template("record.py.jinja")
    body = "\n\n\n".join(
        record_template.render(rec=rec, schema=schema, imports=imports, kinds=kinds).strip("\n")
        for rec in schema.records
    )
    names = ["SCHEMA"]
    for rec in schema.records:
        names.extend((rec.name, f"{rec.name}Batch", f"{rec.name}Tensors"))
    return env.get_template("module.py.jinja").render(
        schema=schema,
        body=body,
        imports=imports,
        exports=_exports(names),
        tool_version=__version__,
        abi=ABI_VERSION,
        source=schema.source,
        command=command,
        module_doc=_module_doc(schema),
    )


def render(schema: SchemaIR, *, command: str) -> str:
    """The generated module for ``schema``, formatted."""
    return reflow(render_source(schema, command=command))
