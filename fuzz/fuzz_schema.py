"""Atheris target: any bytes as a schema file and as a canonical schema.

Each input is decoded as a schema file is (UTF-8, size limit) and parsed with ``parse_schema``; a
schema that parses must render to Python source that compiles and must load back from its
canonical form with the same fingerprint. The input is also parsed as a canonical form with
``parse_canonical``. The only error allowed is :class:`~codegen.errors.SchemaError`; anything else
is a crash. Run: ``python fuzz/fuzz_schema.py CORPUS [SEEDS]``.
"""

from __future__ import annotations

import sys

import atheris

with atheris.instrument_imports(include=["codegen"]):
    from codegen.errors import SchemaError
    from codegen.generator.load import parse_canonical, parse_schema
    from codegen.generator.render import render_source
    from codegen.generator.schema.loader import decode_text


def test_one_input(data: bytes) -> None:
    try:
        text = decode_text(data, "fuzz.yaml")
    except SchemaError:
        return
    try:
        schema = parse_schema(text, "fuzz.yaml")
    except SchemaError:
        pass
    else:
        compile(render_source(schema, command="tfr-gen"), "<generated>", "exec")
        again = parse_canonical(schema.canonical, module="fuzz", source="fuzz.json")
        if again.fingerprint != schema.fingerprint:
            raise AssertionError("the canonical form loads back with another fingerprint")
    try:
        parse_canonical(text, module="fuzz", source="fuzz.json")
    except SchemaError:
        pass


if __name__ == "__main__":
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()
