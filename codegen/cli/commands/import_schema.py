"""``tfr-gen import-schema schema.pbtxt``: a tfr-gen schema from a TFX schema (tensorflow-metadata's ``Schema``)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TextIO

from codegen.cli.commands.exitcodes import EXIT_ERROR
from codegen.cli.commands.imported import add_out_argument, import_target, write_imported
from codegen.cli.commands.messages import Messages
from codegen.errors import TfrGenError
from codegen.tools.tfmd import import_tfmd, load_tfmd

NAME = "import-schema"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "schema", metavar="SCHEMA_PBTXT", help="a TFX schema: text (schema.pbtxt) or binary"
    )
    add_out_argument(parser)
    parser.add_argument(
        "--record", metavar="NAME", default="Example", help="the record name (default: Example)"
    )


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    say = Messages(NAME, err)
    target = import_target(args.record, args.out, say)
    if target is None:
        return EXIT_ERROR
    source = Path(args.schema)
    try:
        record = import_tfmd(
            load_tfmd(source), name=args.record, doc=f"Imported from the TFX schema {source.name}."
        )
    except (OSError, TfrGenError) as exc:
        say.error(f"{source}: {exc}" if isinstance(exc, OSError) else str(exc))
        return EXIT_ERROR
    return write_imported(record, NAME, target, args.out, out, say)
