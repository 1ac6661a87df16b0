"""``tfr-gen infer FILE_OR_GLOB...``: write a schema that describes existing TFRecord files."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TextIO

from codegen.cli.commands.exitcodes import EXIT_ERROR, EXIT_INTERRUPTED, EXIT_OK
from codegen.cli.commands.messages import Messages, plural
from codegen.cli.commands.options import (
    add_compression,
    add_max_record_bytes,
    add_storage_options,
    compression,
    positive,
    storage_options,
)
from codegen.files import check_output, write_atomic
from codegen.generator import naming
from codegen.generator.load import parse_schema
from codegen.runtime.io.skips import SkippedSpan
from codegen.tools.inference import describe_sources, infer_record, record_name_for, schema_yaml
from codegen.tools.observe import Observation
from codegen.tools.scan import Scanner, expand_inputs

NAME = "infer"

STDOUT_SCHEMA = "inferred.yaml"
"""The file name the schema is checked under when it is printed rather than written."""


def configure(parser: argparse.ArgumentParser) -> None:
    add_max_record_bytes(parser)
    add_compression(parser)
    add_storage_options(parser)
    parser.add_argument(
        "files", nargs="+", metavar="FILE_OR_GLOB", help="TFRecord files or glob patterns"
    )
    parser.add_argument(
        "-o", "--out", metavar="SCHEMA", help="write the schema to this file (default: stdout)"
    )
    parser.add_argument(
        "--name", metavar="RECORD", help="the record name (default: from the first file's name)"
    )
    parser.add_argument(
        "--limit", type=positive, metavar="N", help="read at most N records (default: all)"
    )


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    say = Messages(NAME, err)
    schema_path = Path(args.out) if args.out else Path(STDOUT_SCHEMA)
    problem = naming.module_name_problem(schema_path.stem, schema_path.suffix or ".yaml")
    if problem is not None:
        say.error(f"{schema_path}: {problem}")
        return EXIT_ERROR
    if args.out:
        check_output(schema_path)  # before the scan, which may take long
    options = storage_options(args)
    paths = expand_inputs(args.files, options)
    name = args.name or record_name_for(paths[0])
    problem = naming.record_name_problem(name)
    if problem is not None:
        say.error(f"--name: {problem}")
        return EXIT_ERROR

    def skipped(span: SkippedSpan, index: int) -> None:
        say.warning(
            f"{span.path}: record {index} at byte offset {span.offset}:"
            f" {span.length} bytes skipped: {span.reason}"
        )

    observation = Observation()
    scanner = Scanner(
        paths,
        on_skip=skipped,
        progress=err,
        label="infer",
        limit=args.limit,
        max_record_bytes=args.max_record_bytes,
        compression=compression(args),
        storage_options=options,
    )
    say.before = scanner.clear_progress
    try:
        with scanner:
            for batch in scanner.batches():
                for position, exc in observation.add_batch(batch.records, batch.size):
                    item = batch.item(position)
                    say.warning(
                        f"{item.path}: record {item.index} at byte offset {item.offset}:"
                        f" skipped a malformed record: {exc}"
                    )
    except KeyboardInterrupt:
        say.summary(
            f"interrupted after {plural(observation.records, 'record')} of {scanner.files} of"
            f" {plural(len(paths), 'file')}; no schema written"
        )
        return EXIT_INTERRUPTED
    if not observation.records:
        say.error(f"no readable records in {', '.join(paths)}")
        return EXIT_ERROR
    record = infer_record(
        observation, name=name, doc=describe_sources(paths[: scanner.files], observation.records)
    )
    text = schema_yaml(record)
    parse_schema(text, str(schema_path))  # the generator accepts what is written, or this raises
    for key, reason in record.left_out:
        say.warning(f"key {key!r} left out: {reason}")
    for warning in record.warnings:
        say.warning(warning)
    summary = (
        f"{record.name}: {len(record.features) + len(record.sequence)} features"
        f" from {observation.records:,} records"
    )
    if args.out:
        write_atomic(schema_path, text)
        print(f"wrote {args.out} ({summary})", file=out)
    else:
        out.write(text)
        say.summary(summary)
    return EXIT_OK
