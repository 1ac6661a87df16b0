"""Schema content can never change the structure of generated code."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from codegen.generator.api import regenerate_command
from codegen.generator.load import parse_schema
from codegen.generator.render import render
from support.modules import module_from_source
from support.paths import ROOT

TEMPLATES = ROOT / "templates"
SAFE_FILTERS = {
    "ident",
    "pyrepr",
    "pylist",
    "pytuple",
    "pyargs",
    "pystring_chunks",
    "comment",
    "docstring",
    "attribute_docstring",
    "record_docstring",
}
TRUSTED_EXPRESSIONS = {
    "body",
    "line",
    "SEP",
}  # rendered by our own code: the records' template, the import lines, the list separator
MACRO_CALL = re.compile(
    r"^(kinds\[f\.template\]|common)\.\w+\(.*\)$|^(codec_var|args|array|items|ragged|masked|close)\(.*\)$"
    r"|^imports\.add\(\"[^\"]*\"\)$"
)

EVIL_KEY = '\'"); import os; os.system("x") #'
EVIL_DOC = 'Ends a docstring """ then code: import os; os.system("x") \\ and a backslash\n# and a comment line'


def test_every_template_expression_passes_a_safe_filter() -> None:
    expressions = []
    for path in TEMPLATES.rglob("*.jinja"):
        for expr in re.findall(r"\{\{(.*?)\}\}", path.read_text(), flags=re.S):
            expressions.append((path.name, expr.strip()))
    assert len(expressions) > 30
    for name, expr in expressions:
        if expr in TRUSTED_EXPRESSIONS or MACRO_CALL.match(expr):
            continue
        last_filter = expr.rsplit("|", 1)[-1].strip().split("(")[0] if "|" in expr else None
        assert last_filter in SAFE_FILTERS, (
            f"{name}: '{{{{ {expr} }}}}' prints a value without a safe filter"
        )


def test_injection_shaped_keys_and_docs_become_literals(monkeypatch: pytest.MonkeyPatch) -> None:
    text = f"""\
version: 1
doc: {json.dumps(EVIL_DOC)}
records:
  Evil:
    doc: {json.dumps(EVIL_DOC)}
    features:
      payload: {{key: {json.dumps(EVIL_KEY)}, dtype: string, doc: {json.dumps(EVIL_DOC)}}}
      count: {{key: "a\\nb\\u2028c", dtype: int64, default: 3}}
"""
    schema = parse_schema(text, "evil.yaml")
    source = render(schema, command="tfr-gen evil.yaml")
    tree = ast.parse(source)
    calls = {
        ast.unparse(node.func)
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and "system" in ast.unparse(node.func)
    }
    assert not calls
    imported = {
        a.name
        for n in ast.walk(tree)
        if isinstance(n, ast.Import | ast.ImportFrom)
        for a in n.names
    }
    assert "os" not in imported
    called: list[str] = []

    def system(command: str) -> int:
        called.append(command)
        return 0

    monkeypatch.setattr("os.system", system)
    module = module_from_source(source, "evil_schema_module")
    assert called == []
    record = module.Evil(payload="x")
    assert record.count == 3
    assert module.Evil.decode(record.encode()) == record
    assert [info.key for info in module.Evil.feature_spec()] == [EVIL_KEY, "a\nb\u2028c"]
    assert EVIL_DOC.splitlines()[0].strip() in (module.__doc__ or "")


def test_bidirectional_and_zero_width_characters_of_docs_are_escaped_in_docstrings() -> None:
    text = (
        "version: 1\n"
        'doc: "Module \\u202eevil\\u202c doc"\n'
        "records:\n"
        "  Item:\n"
        '    doc: "Record \\u2066hidden\\u2069 and \\u200bzero width"\n'
        "    features:\n"
        '      a: {dtype: int64, doc: "Feature \\u202dforced\\u202c"}\n'
    )
    schema = parse_schema(text, "bidi.yaml")
    assert "\u202e" in (schema.doc or "")  # the characters themselves
    source = render(schema, command="tfr-gen bidi.yaml")
    assert not any(0x2000 <= ord(ch) <= 0x206F or 0x202A <= ord(ch) <= 0x202E for ch in source)
    module = module_from_source(source, "bidi")
    docs = [module.__doc__, module.Item.__doc__]
    assert "Module \\u202eevil\\u202c doc" in docs[0]  # the escapes, as text
    assert "Record \\u2066hidden\\u2069 and \\u200bzero width" in docs[1]
    assert "Feature \\\\u202dforced\\\\u202c" in source  # escaped in an attribute docstring


def test_the_regenerate_command_is_shell_quoted() -> None:
    assert regenerate_command(Path("my schemas/a;rm -rf $HOME.yaml"), Path("out dir")) == (
        "tfr-gen 'my schemas/a;rm -rf $HOME.yaml' --out 'out dir'"
    )
