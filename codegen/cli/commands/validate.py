"""``tfr-gen validate SCHEMA FILE_OR_GLOB...``: check TFRecord files against a schema's record.

Every problem of every record is printed with its position; keys of the data that the schema
does not declare are named in one warning. ``--strict`` also reports how the data uses the keys
(:mod:`codegen.tools.anomalies`): undeclared keys, features never present or present in part of
the records only, and the value-count distribution of every key, each with counts and a record;
it exits 1 when it finds an anomaly.
"""

from __future__ import annotations

import argparse
import json
from typing import TextIO

from codegen.cli.commands.exitcodes import EXIT_FOUND, EXIT_INTERRUPTED, EXIT_OK
from codegen.cli.commands.messages import Messages
from codegen.cli.commands.options import (
    add_compression,
    add_max_record_bytes,
    add_storage_options,
    compression,
    positive,
    storage_options,
)
from codegen.tools.dynamic import load_record
from codegen.tools.scan import expand_inputs
from codegen.tools.validation import Problem, validate_files
from codegen.tools.values import Json

NAME = "validate"


def configure(parser: argparse.ArgumentParser) -> None:
    add_max_record_bytes(parser)
    add_compression(parser)
    add_storage_options(parser)
    parser.add_argument("schema", metavar="SCHEMA", help="the schema file")
    parser.add_argument(
        "files", nargs="+", metavar="FILE_OR_GLOB", help="TFRecord files or glob patterns"
    )
    parser.add_argument(
        "--record", metavar="NAME", help="the record to check against (default: the only one)"
    )
    parser.add_argument(
        "--max-errors", type=positive, metavar="N", help="stop after N problems (default: never)"
    )
    parser.add_argument(
        "--strict",
        action="store_true",
        help="also report keys the schema does not declare, features never present or present"
        " in part of the records only, and the value counts of every key; exit 1 on any",
    )
    parser.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help="text: one line per problem, then a summary; json: one JSON document",
    )


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    say = Messages(NAME, err)
    record = load_record(args.schema, args.record)
    options = storage_options(args)
    paths = expand_inputs(args.files, options)
    found: list[Json] = []

    def on_problem(problem: Problem) -> None:
        if args.format == "json":
            found.append(problem.as_json())
        else:
            print(problem.text(), file=out)

    result = validate_files(
        record,
        paths,
        on_problem,
        max_errors=args.max_errors,
        progress=err,
        strict=args.strict,
        max_record_bytes=args.max_record_bytes,
        compression=compression(args),
        storage_options=options,
    )
    if args.format == "json":
        document: dict[str, Json] = {
            "schema": args.schema,
            "record": record.name,
            "files": [
                {"path": path, "records": count}
                for path, count in zip(paths, result.file_records, strict=False)
            ],
            "problems": found,
            "undeclared_keys": result.undeclared_json(),
        }
        if args.strict:
            document["strict"] = {
                "anomalies": [anomaly.as_json() for anomaly in result.anomalies],
                "keys": [profile.as_json() for profile in result.profiles],
            }
        document["summary"] = result.as_json()
        print(json.dumps(document, indent=2, ensure_ascii=False), file=out)
    else:
        for anomaly in result.anomalies:
            print(anomaly.text(), file=out)
        if result.profiles:
            print("value counts per key (first: the first record holding that many):", file=out)
            for profile in result.profiles:
                print(f"  {profile.text()}", file=out)
        Messages(NAME, out).summary(f"{record.name}: {result.summary()}")
    undeclared = result.undeclared_summary()
    if undeclared is not None and not args.strict:
        say.warning(undeclared)
    if result.interrupted:
        return EXIT_INTERRUPTED
    return EXIT_OK if result.clean else EXIT_FOUND
