"""Loading schema files: YAML text -> checked IR (:class:`codegen.ir.SchemaIR`).

``parse_schema`` and ``load_schema`` raise :class:`~codegen.errors.SchemaError` carrying every
problem of the file, each as ``path:line:col: message``.
"""

from __future__ import annotations

import pathlib

from codegen.errors import Diagnostic, SchemaError
from codegen.ir import SchemaIR
from codegen.lower import lower
from codegen.schema.canonical import canonical_json, fingerprint, parse_canonical
from codegen.schema.loader import MAX_BYTES, decode_text, load_yaml
from codegen.schema.model import FeatureDoc, RecordDoc, SchemaDoc

__all__ = [
    "MAX_BYTES",
    "FeatureDoc",
    "RecordDoc",
    "SchemaDoc",
    "canonical_json",
    "fingerprint",
    "load_schema",
    "parse_canonical",
    "parse_schema",
]


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
