"""``tfr-gen validate SCHEMA FILE_OR_GLOB...``: check TFRecord files against a schema's record."""

from __future__ import annotations

import argparse
import json
from typing import TextIO

from codegen.cli.commands.exitcodes import EXIT_FOUND, EXIT_INTERRUPTED, EXIT_OK
from codegen.tools.dynamic import load_record
from codegen.tools.scan import expand_inputs
from codegen.tools.validation import Problem, validate_files
from codegen.tools.values import Json

NAME = "validate"
HELP = "check TFRecord files against a schema, reporting every problem with its position"


def positive(text: str) -> int:
    """An argparse type: a positive integer."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def configure(parser: argparse.ArgumentParser) -> None:
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
        "--format",
        choices=("text", "json"),
        default="text",
        help="text: one line per problem, then a summary; json: one JSON document",
    )


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    record = load_record(args.schema, args.record)
    paths = expand_inputs(args.files)
    found: list[Json] = []

    def on_problem(problem: Problem) -> None:
        if args.format == "json":
            found.append(problem.as_json())
        else:
            print(problem.text(), file=out)

    result = validate_files(record, paths, on_problem, max_errors=args.max_errors, progress=err)
    if args.format == "json":
        document: dict[str, Json] = {
            "schema": args.schema,
            "record": record.name,
            "files": [
                {"path": path, "records": count}
                for path, count in zip(paths, result.file_records, strict=False)
            ],
            "problems": found,
            "summary": result.as_json(),
        }
        print(json.dumps(document, indent=2, ensure_ascii=False), file=out)
    else:
        print(f"tfr-gen validate: {record.name}: {result.summary()}", file=out)
    if result.interrupted:
        return EXIT_INTERRUPTED
    return EXIT_OK if result.clean else EXIT_FOUND
