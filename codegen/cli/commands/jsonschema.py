"""``tfr-gen json-schema``: the JSON Schema of schema files, for editors and linters."""

from __future__ import annotations

import argparse
import json
from typing import TextIO

from codegen.cli.commands.exitcodes import EXIT_OK
from codegen.generator.schema.model import SchemaDoc

NAME = "json-schema"

DIALECT = "https://json-schema.org/draft/2020-12/schema"
"""The JSON Schema dialect pydantic writes."""


def json_schema() -> dict[str, object]:
    """The JSON Schema of a schema document, with ``$schema`` and ``title`` first."""
    body = SchemaDoc.model_json_schema()
    return {"$schema": DIALECT, "title": body.pop("title", "tfr-gen schema"), **body}


def configure(parser: argparse.ArgumentParser) -> None:
    """``json-schema`` takes no options."""


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    print(json.dumps(json_schema(), indent=2, ensure_ascii=False), file=out)
    return EXIT_OK
