"""``tfr-gen generate SCHEMA...``: one Python module per schema (also the default command).

A directory is searched recursively and mirrored in the output directory as packages. ``--check``
writes nothing and exits 1 when a module is missing or out of date, or a generated module's schema
is gone (an orphan); ``--clean`` removes such orphans (only files whose header says tfr-gen
generated them). Every hint gives the exact command to run.
"""

from __future__ import annotations

import argparse
import shlex
from typing import TextIO

from codegen.cli.commands.exitcodes import EXIT_ERROR, EXIT_FOUND, EXIT_OK
from codegen.cli.commands.messages import Messages, plural
from codegen.generator.api import display_path, generate

NAME = "generate"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "schemas",
        nargs="+",
        metavar="SCHEMA",
        help="a schema file, or a directory searched recursively for *.yaml schemas (its"
        " subdirectories become packages of the output)",
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
        help="write nothing; list the generated files that are missing, out of date or orphaned"
        " (their schema is gone) and exit 1 if any",
    )
    parser.add_argument(
        "--clean",
        action="store_true",
        help="also delete orphaned generated modules (only files tfr-gen generated)",
    )


def command_line(args: argparse.Namespace, *, clean: bool) -> str:
    """The exact ``tfr-gen`` command that regenerates what ``args`` names."""
    words = ["tfr-gen", *args.schemas, "--out", args.out] + (["--clean"] if clean else [])
    return shlex.join(words)


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    say = Messages(NAME, err)
    result = generate(args.schemas, out_dir=args.out, check=args.check, clean=args.clean)
    if not result.ok:
        for diagnostic in result.diagnostics:
            print(diagnostic, file=err)
        say.summary(f"{plural(len(result.diagnostics), 'error')}; nothing was written")
        return EXIT_ERROR
    if args.check:
        for path in result.stale:
            print(f"stale: {display_path(path)}", file=out)
        for path in result.orphans:
            print(f"orphaned: {display_path(path)} (its schema is gone)", file=out)
        if result.stale or result.orphans:
            found = []
            if result.stale:
                found.append(f"{plural(len(result.stale), 'generated file')} out of date")
            if result.orphans:
                found.append(f"{plural(len(result.orphans), 'orphaned generated file')}")
            say.summary(
                f"{' and '.join(found)}; run"
                f" '{command_line(args, clean=bool(result.orphans))}' to update"
            )
            return EXIT_FOUND
        Messages(NAME, out).summary(f"{plural(len(result.unchanged), 'generated file')} up to date")
        return EXIT_OK
    for path in result.written:
        print(f"wrote {display_path(path)}", file=out)
    for path in result.removed:
        print(f"removed {display_path(path)} (its schema is gone)", file=out)
    summary = f"{len(result.written)} written, {len(result.unchanged)} unchanged"
    if result.removed:
        summary += f", {len(result.removed)} removed"
    Messages(NAME, out).summary(summary)
    if result.orphans and not result.removed:
        say.warning(
            f"{plural(len(result.orphans), 'generated file')} whose schema is gone:"
            f" {', '.join(display_path(p) for p in result.orphans)};"
            f" run '{command_line(args, clean=True)}' to remove"
        )
    return EXIT_OK
