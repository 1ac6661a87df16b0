"""Schema texts with mistakes, and what the generator says about them."""

from __future__ import annotations

import pytest

from codegen.errors import SchemaError
from codegen.generator.load import parse_schema


def problems(text: str, path: str = "s.yaml") -> list[str]:
    """The diagnostics (``file:line:col: message``) of the schema ``text``, which must fail."""
    with pytest.raises(SchemaError) as info:
        parse_schema(text, path)
    return [str(d) for d in info.value.diagnostics]


def records_schema(text: str) -> str:
    """A schema whose records mapping is ``text`` (written at line 2, column 10)."""
    return f"version: 1\nrecords: {text}\n"
