"""``tfr-gen export-schema SCHEMA --format tfmd``: the TFX schema (tensorflow-metadata's ``Schema``) of a record."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TextIO

from codegen.cli.commands.exitcodes import EXIT_ERROR, EXIT_OK
from codegen.cli.commands.messages import Messages
from codegen.errors import SchemaError, TfrGenError
from codegen.files import check_output, write_atomic
from codegen.generator.load import load_schema
from codegen.tools.tfmd import export_tfmd

NAME = "export-schema"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("schema", metavar="SCHEMA", help="a tfr-gen schema file")
    parser.add_argument(
        "--format",
        choices=["tfmd"],
        required=True,
        help="tfmd: a tensorflow_metadata Schema (schema.pbtxt)",
    )
    parser.add_argument(
        "-o", "--out", metavar="FILE", help="write it to this file (default: stdout)"
    )
    parser.add_argument(
        "--record", metavar="NAME", help="the record (default: the schema's only record)"
    )


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    say = Messages(NAME, err)
    if args.out:
        check_output(Path(args.out))
    try:
        schema = load_schema(Path(args.schema))
    except SchemaError as exc:
        say.error(str(exc))
        return EXIT_ERROR
    names = [r.name for r in schema.records]
    if args.record is None and len(names) > 1:
        say.error(
            f"{args.schema} has {len(names)} records ({', '.join(names)}); choose one with --record"
        )
        return EXIT_ERROR
    record = next((r for r in schema.records if args.record in (None, r.name)), None)
    if record is None:
        say.error(f"{args.schema} has no record {args.record!r}; its records: {', '.join(names)}")
        return EXIT_ERROR
    try:
        exported = export_tfmd(record)
    except TfrGenError as exc:
        say.error(str(exc))
        return EXIT_ERROR
    for diagnostic in exported.diagnostics:
        say.warning(diagnostic)
    text = exported.text()
    if args.out:
        write_atomic(Path(args.out), text)
        print(
            f"wrote {args.out} ({record.name}: {len(exported.message.feature)} features)", file=out
        )
    else:
        out.write(text)
    return EXIT_OK
