"""``tfr-gen index FILE...``: write ``FILE.index`` beside each uncompressed TFRecord file."""

from __future__ import annotations

import argparse
from typing import TextIO

from codegen.cli.commands.exitcodes import EXIT_ERROR, EXIT_OK
from codegen.cli.commands.messages import Messages, plural
from codegen.cli.commands.options import add_storage_options, storage_options
from codegen.errors import TfrGenError
from codegen.runtime.io.indexed import INDEX_SUFFIX, write_index

NAME = "index"


def configure(parser: argparse.ArgumentParser) -> None:
    add_storage_options(parser)
    parser.add_argument("files", nargs="+", metavar="FILE", help="uncompressed TFRecord files")


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    say = Messages(NAME, err)
    failed = 0
    options = storage_options(args)
    for path in args.files:
        try:
            info = write_index(path, storage_options=options)
        except TfrGenError as exc:
            say.error(str(exc))
            failed += 1
            continue
        except OSError as exc:
            say.error(f"{exc.filename or path}: {exc.strerror or exc}")
            failed += 1
            continue
        count = len(info.offsets)
        print(f"wrote {path}{INDEX_SUFFIX} ({count:,} record{'' if count == 1 else 's'})", file=out)
    if failed:
        say.summary(f"{failed} of {plural(len(args.files), 'file')} not indexed")
        return EXIT_ERROR
    return EXIT_OK
