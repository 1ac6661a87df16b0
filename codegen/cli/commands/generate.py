"""``tfr-gen generate SCHEMA...``: one Python module per schema (also the default command)."""

from __future__ import annotations

import argparse
from typing import TextIO

from codegen.cli.commands.exitcodes import EXIT_ERROR, EXIT_FOUND, EXIT_OK
from codegen.cli.commands.messages import Messages, plural
from codegen.generator.api import display_path, generate

NAME = "generate"
HELP = "generate one Python module per schema (the default command)"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "schemas",
        nargs="+",
        metavar="SCHEMA",
        help="a schema file, or a directory of *.yaml schemas",
    )
    parser.add_argument(
        "-o",
        "--out",
        default="generated",
        metavar="DIR",
        help="output directory (default: generated)",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="write nothing; list the generated files that are missing or out of date and exit 1 if any",
    )


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    say = Messages(NAME, err)
    result = generate(args.schemas, out_dir=args.out, check=args.check)
    if not result.ok:
        for diagnostic in result.diagnostics:
            print(diagnostic, file=err)
        say.summary(f"{plural(len(result.diagnostics), 'error')}; nothing was written")
        return EXIT_ERROR
    if args.check:
        for path in result.stale:
            print(f"stale: {display_path(path)}", file=out)
        if result.stale:
            say.summary(
                f"{plural(len(result.stale), 'generated file')} out of date; run 'tfr-gen' to update"
            )
            return EXIT_FOUND
        Messages(NAME, out).summary(f"{plural(len(result.unchanged), 'generated file')} up to date")
        return EXIT_OK
    for path in result.written:
        print(f"wrote {display_path(path)}", file=out)
    Messages(NAME, out).summary(f"{len(result.written)} written, {len(result.unchanged)} unchanged")
    return EXIT_OK
