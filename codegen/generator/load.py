"""Schema text to checked IR (:class:`codegen.generator.ir.SchemaIR`): a document from
:mod:`codegen.generator.schema`, lowered by :func:`codegen.generator.lower.lower`.

Every function raises :class:`~codegen.errors.SchemaError` carrying every problem of the file, each as
``path:line:col: message``.
"""

from __future__ import annotations

import pathlib

from codegen.errors import Diagnostic, SchemaError
from codegen.generator.ir import SchemaIR
from codegen.generator.lower import lower
from codegen.generator.schema.canonical import load_canonical
from codegen.generator.schema.loader import MAX_BYTES, decode_text, load_yaml

__all__ = ["load_schema", "parse_canonical", "parse_schema"]


def parse_schema(text: str, path: str) -> SchemaIR:
    """The IR of schema ``text``; ``path`` is the file it came from (its stem names the module)."""
    return lower(load_yaml(text, path), module=pathlib.PurePath(path).stem, source=path)


def load_schema(path: pathlib.Path, *, display_path: str | None = None) -> SchemaIR:
    """The IR of the schema file at ``path`` (its stem names the module).

    Messages and ``SchemaIR.source`` show ``display_path`` (default: ``path`` as given). A file that
    cannot be read is reported as a :class:`SchemaError` too.
    """
    shown = str(path) if display_path is None else display_path
    try:
        with open(path, "rb") as file:
            data = file.read(MAX_BYTES + 1)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise SchemaError(
            [Diagnostic(shown, 1, 1, f"cannot read the schema file: {reason}")]
        ) from None
    return lower(load_yaml(decode_text(data, shown), shown), module=path.stem, source=shown)


def parse_canonical(text: str, *, module: str, source: str) -> SchemaIR:
    """The IR of a schema given in canonical form (as embedded in generated modules).

    The schema is checked like a schema file, and ``text`` must be exactly its canonical form; every
    problem raises :class:`SchemaError` (at line 1, column 1 unless the JSON itself is malformed).
    """
    lowered = lower(load_canonical(text, source), module=module, source=source)
    if lowered.canonical != text:
        raise SchemaError(
            [
                Diagnostic(
                    source,
                    1,
                    1,
                    "invalid canonical schema: the text is not the canonical form of the schema it"
                    " describes",
                )
            ]
        )
    return lowered
