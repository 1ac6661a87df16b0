"""``tfr-gen clean DIR...``: list (and with ``--remove`` remove) what killed writers left."""

from __future__ import annotations

import argparse
from typing import TextIO

from codegen.cli.commands.exitcodes import EXIT_ERROR, EXIT_OK
from codegen.cli.commands.messages import Messages, plural
from codegen.cli.commands.options import add_storage_options, storage_options
from codegen.errors import TfrGenError
from codegen.runtime.data.cleanup import find_leftovers, remove_leftovers

NAME = "clean"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("directories", nargs="+", metavar="DIR", help="directories to look in")
    parser.add_argument(
        "--remove",
        action="store_true",
        help="remove what is listed (by default it is only listed)",
    )
    add_storage_options(parser)


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    say = Messages(NAME, err)
    failed = 0
    total = 0
    options = storage_options(args)
    clean = remove_leftovers if args.remove else find_leftovers
    for directory in args.directories:
        try:
            found = clean(directory, storage_options=options)
        except (TfrGenError, OSError) as exc:
            say.error(f"{directory}: {getattr(exc, 'strerror', None) or exc}")
            failed += 1
            continue
        for item in found:
            print(
                f"{'removed' if args.remove else 'stale'}: {directory}/{item.name} ({item.kind})",
                file=out,
            )
        total += len(found)
    verb = "removed" if args.remove else "found"
    print(f"{verb} {plural(total, 'leftover file')} of killed writers", file=out)
    return EXIT_ERROR if failed else EXIT_OK
