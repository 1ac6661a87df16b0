"""Argument types shared by the commands' options."""

from __future__ import annotations

import argparse

from codegen.runtime.io.reader import DEFAULT_MAX_RECORD_BYTES


def positive(text: str) -> int:
    """An argparse type: a positive integer."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def add_max_record_bytes(parser: argparse.ArgumentParser) -> None:
    """``--max-record-bytes N``: the largest record the command reads (``args.max_record_bytes``)."""
    parser.add_argument(
        "--max-record-bytes",
        type=positive,
        default=DEFAULT_MAX_RECORD_BYTES,
        metavar="N",
        help=(
            "the largest record to read, in bytes (default %(default)s): a record header declaring"
            " more is reported as damage, before any of its data is read"
        ),
    )
