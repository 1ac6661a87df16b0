"""``tfr-gen convert SCHEMA IN... OUT``: TFRecord files, a glob or a dataset directory to Parquet, or back.

The direction follows the suffixes (``OUT.parquet``: to Parquet; ``IN.parquet``: to TFRecord) or ``--to``. Parquet goes
to one TFRecord file, or to a dataset directory (shards and a manifest, committed at once) when ``OUT`` is a directory,
ends with ``/``, or a dataset option is given (``--shards``, ``--max-records-per-shard``, ``--shard-compression``,
``--prefix``, ``--overwrite``). The records are decoded and encoded by the schema's record (``--record`` when it has
several), streaming a batch at a time with a progress bar on a terminal; the output appears whole or not at all. The
Parquet file keeps the schema (and a dataset's manifest) in its metadata, and converting it back checks that this schema
reads it.
"""

from __future__ import annotations

import argparse
import os
from typing import TextIO

from codegen.cli.commands.exitcodes import EXIT_ERROR, EXIT_OK
from codegen.cli.commands.messages import Messages
from codegen.cli.commands.options import (
    add_compression,
    add_max_record_bytes,
    add_storage_options,
    compression,
    storage_options,
)
from codegen.errors import MissingExtraError
from codegen.runtime.io.compression import Compression
from codegen.tools.convert import (
    Converter,
    parquet_to_dataset,
    parquet_to_tfrecord,
    tfrecord_to_parquet,
)

NAME = "convert"

_PARQUET = (".parquet", ".pq")


def configure(parser: argparse.ArgumentParser) -> None:
    add_compression(parser)
    parser.add_argument("schema", metavar="SCHEMA", help="the schema file of the records")
    parser.add_argument(
        "inputs",
        nargs="+",
        metavar="IN",
        help="TFRecord files, glob patterns or one dataset directory; or Parquet files",
    )
    parser.add_argument(
        "output",
        metavar="OUT",
        help="the Parquet or TFRecord file to write (.gz/.zlib: compressed), or a dataset directory",
    )
    parser.add_argument(
        "--record", metavar="NAME", help="the schema's record (default: its only one)"
    )
    parser.add_argument(
        "--to",
        choices=("parquet", "tfrecord"),
        help="what to write (default: by the suffixes of OUT and IN)",
    )
    dataset = parser.add_argument_group(
        "Parquet to a dataset directory (OUT an existing directory, or ending in /, or one of these given)"
    )
    shards = dataset.add_mutually_exclusive_group()
    shards.add_argument(
        "--shards",
        type=int,
        metavar="N",
        help="write N shards of even size (collects the records first)",
    )
    shards.add_argument(
        "--max-records-per-shard",
        type=int,
        metavar="N",
        help="start a new shard every N records (streams; default: one shard)",
    )
    dataset.add_argument(
        "--shard-compression",
        choices=("gzip", "zlib", "none"),
        default=None,
        help="the shards' compression (default: gzip)",
    )
    dataset.add_argument(
        "--prefix",
        help="the shards' and manifest's name prefix (default: the record in snake_case)",
    )
    dataset.add_argument(
        "--overwrite", action="store_true", help="replace a dataset of that prefix already in OUT"
    )
    parser.add_argument(
        "--parquet-compression",
        default="snappy",
        choices=("snappy", "zstd", "gzip", "lz4", "brotli", "none"),
        help="the Parquet codec (default: snappy)",
    )
    add_max_record_bytes(parser)
    add_storage_options(parser)


def _direction(args: argparse.Namespace) -> str | None:
    if args.to:
        return str(args.to)
    if args.output.endswith(_PARQUET):
        return "parquet"
    if all(path.endswith(_PARQUET) for path in args.inputs):
        return "tfrecord"
    return None


def _to_dataset(args: argparse.Namespace) -> bool:
    """Whether Parquet goes to a dataset directory rather than one TFRecord file."""
    return (
        os.path.isdir(args.output)
        or args.output.endswith(("/", os.sep))
        or args.shards is not None
        or args.max_records_per_shard is not None
        or args.shard_compression is not None
        or args.prefix is not None
        or args.overwrite
    )


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    say = Messages(NAME, err)
    direction = _direction(args)
    if direction is None:
        say.error(
            f"cannot tell the direction from {args.output!r}: name OUT .parquet, or give --to"
        )
        return EXIT_ERROR
    if direction == "tfrecord" and args.compression != "auto":
        say.error(
            "--compression is how TFRecord input is compressed; the TFRecord output's compression"
            " follows its name (.gz: gzip, .zlib or .zz: zlib, else none)"
        )
        return EXIT_ERROR
    dataset = _to_dataset(args)
    if dataset and direction != "tfrecord":
        say.error(
            f"{args.output!r}: a dataset directory and its options are for Parquet to TFRecord; "
            "Parquet is written to one .parquet file"
        )
        return EXIT_ERROR
    options = storage_options(args)
    try:
        converter = Converter(args.schema, args.record)
        if direction == "parquet":
            done = tfrecord_to_parquet(
                converter,
                args.inputs,
                args.output,
                compression=args.parquet_compression,
                progress=err,
                tfrecord_compression=compression(args),
                max_record_bytes=args.max_record_bytes,
                storage_options=options,
            )
        elif dataset:
            shard_compression: Compression = {"gzip": "gzip", "zlib": "zlib", "none": None}[
                args.shard_compression or "gzip"
            ]
            done = parquet_to_dataset(
                converter,
                args.inputs,
                args.output,
                shards=args.shards,
                max_records_per_shard=args.max_records_per_shard,
                compression=shard_compression,
                prefix=args.prefix,
                overwrite=args.overwrite,
                progress=err,
                storage_options=options,
            )
        else:
            done = parquet_to_tfrecord(
                converter, args.inputs, args.output, progress=err, storage_options=options
            )
    except MissingExtraError as exc:
        say.error(str(exc))
        return EXIT_ERROR
    what = "the dataset " if dataset else ""
    say.summary(f"wrote {done.records:,} records to {what}{args.output} ({done.bytes:,} bytes)")
    return EXIT_OK
