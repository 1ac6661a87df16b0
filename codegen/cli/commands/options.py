"""Argument types shared by the commands' options."""

from __future__ import annotations

import argparse
import json
from typing import Any

from codegen.errors import TfrGenError
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


def storage_option(text: str) -> tuple[str, Any]:
    """An argparse type: ``KEY=VALUE``, the value parsed as JSON when it is JSON (numbers,
    ``true``/``false``, ``null``, objects, lists, quoted strings), else taken as a string."""
    key, equals, value = text.partition("=")
    key = key.strip()
    if not equals or not key or any(char.isspace() for char in key):
        raise argparse.ArgumentTypeError(
            f"expected KEY=VALUE (such as endpoint_url=http://127.0.0.1:9000 or"
            f' client_kwargs=\'{{"region_name": "eu-west-1"}}\'), got {text!r}'
        )
    try:
        parsed: Any = json.loads(value)
    except ValueError:
        parsed = value
    return key, parsed


def add_storage_options(parser: argparse.ArgumentParser) -> None:
    """``--storage-option KEY=VALUE`` (repeatable): options of the fsspec store of the command's
    URLs (``args.storage_options``, a list of pairs; :func:`storage_options` makes the mapping)."""
    parser.add_argument(
        "--storage-option",
        dest="storage_options",
        action="append",
        type=storage_option,
        default=[],
        metavar="KEY=VALUE",
        help="an option of the fsspec store of the URLs given (credentials, endpoint_url, ...),"
        " passed to its filesystem; repeat for several. VALUE is read as JSON when it is JSON"
        " (numbers, true/false, objects), else as a string. Without it, the store's own"
        " configuration and FSSPEC_* environment variables apply",
    )


def storage_options(args: argparse.Namespace) -> dict[str, Any] | None:
    """The ``storage_options`` that ``--storage-option`` gave (``None`` without any: fsspec's
    configuration applies); a key given twice is an error naming it."""
    options: dict[str, Any] = {}
    for key, value in args.storage_options:
        if key in options:
            raise TfrGenError(f"--storage-option {key}: given twice")
        options[key] = value
    return options or None
