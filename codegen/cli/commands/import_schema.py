"""``tfr-gen import-schema schema.pbtxt``: a tfr-gen schema from a TFX schema (tensorflow-metadata's ``Schema``)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TextIO

from codegen.cli.commands.exitcodes import EXIT_ERROR, EXIT_OK
from codegen.cli.commands.messages import Messages
from codegen.errors import TfrGenError
from codegen.files import check_output, write_atomic
from codegen.generator import naming
from codegen.generator.load import parse_schema
from codegen.tools.inference import schema_yaml
from codegen.tools.tfmd import import_tfmd, load_tfmd

NAME = "import-schema"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "schema", metavar="SCHEMA_PBTXT", help="a TFX schema: text (schema.pbtxt) or binary"
    )
    parser.add_argument(
        "-o",
        "--out",
        metavar="SCHEMA",
        help="write the tfr-gen schema to this file (default: stdout)",
    )
    parser.add_argument(
        "--record", metavar="NAME", default="Example", help="the record name (default: Example)"
    )


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    say = Messages(NAME, err)
    target = Path(args.out) if args.out else Path("imported.yaml")
    problem = naming.record_name_problem(args.record) or naming.module_name_problem(
        target.stem, target.suffix or ".yaml"
    )
    if problem is not None:
        say.error(problem)
        return EXIT_ERROR
    if args.out:
        check_output(target)
    source = Path(args.schema)
    try:
        record = import_tfmd(
            load_tfmd(source), name=args.record, doc=f"Imported from the TFX schema {source.name}."
        )
    except (OSError, TfrGenError) as exc:
        say.error(f"{source}: {exc}" if isinstance(exc, OSError) else str(exc))
        return EXIT_ERROR
    text = schema_yaml(record).replace(
        "Inferred by 'tfr-gen infer'", "Imported by 'tfr-gen import-schema'"
    )
    parse_schema(text, str(target))  # the generator accepts what is written, or this raises
    for name, reason in record.left_out:
        say.warning(f"feature {name!r} left out: {reason}")
    if args.out:
        write_atomic(target, text)
        print(f"wrote {args.out} ({record.name}: {len(record.features)} features)", file=out)
    else:
        out.write(text)
    return EXIT_OK
