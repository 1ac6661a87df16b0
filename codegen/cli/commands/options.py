"""Argument types shared by the commands' options."""

from __future__ import annotations

import argparse

from codegen.runtime.io.compression import CompressionArg
from codegen.runtime.io.reader import DEFAULT_MAX_RECORD_BYTES

COMPRESSIONS: dict[str, CompressionArg] = {
    "auto": "auto",
    "none": None,
    "gzip": "gzip",
    "zlib": "zlib",
}
"""The values of ``--compression`` and the compression each means."""


def add_compression(parser: argparse.ArgumentParser) -> None:
    """The ``--compression`` option of a command that reads TFRecord files (``args.compression``
    holds the library's value: ``"auto"``, ``None``, ``"gzip"`` or ``"zlib"``)."""
    parser.add_argument(
        "--compression",
        choices=list(COMPRESSIONS),
        default="auto",
        type=str.lower,
        help="how the files are compressed (default: auto, detected from each file's first bytes);"
        " a declared compression the data contradicts is an error",
    )


def compression(args: argparse.Namespace) -> CompressionArg:
    """The compression ``--compression`` asked for."""
    return COMPRESSIONS[args.compression]


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
