"""``tfr-gen cat FILE``: print the records of a TFRecord file, raw or decoded by a schema.

With ``--on-error skip`` corrupt or truncated stretches and records that do not decode are passed
over: each one is reported on stderr (stretches in ``validate``'s words), then a summary count.
"""

from __future__ import annotations

import argparse
import json
from typing import TextIO

from codegen.cli.commands.exitcodes import EXIT_ERROR, EXIT_OK
from codegen.cli.commands.messages import Messages
from codegen.cli.commands.validate import positive
from codegen.errors import DataError, RecordError
from codegen.runtime.io.framing import FRAMING
from codegen.runtime.io.skips import SkipCounts, SkippedRecord, SkippedSpan
from codegen.tools.dynamic import DynamicRecord, load_record
from codegen.tools.observe import parse_record
from codegen.tools.scan import Scanner
from codegen.tools.validation import span_problem
from codegen.tools.values import (
    TEXT_ITEMS,
    Json,
    feature_json,
    feature_text,
    value_json,
    value_text,
)

NAME = "cat"
HELP = "print the records of a TFRecord file as JSON lines or readable text"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE", help="a TFRecord file (.gz/.zlib: compressed)")
    parser.add_argument("--schema", metavar="SCHEMA", help="decode the records with this schema")
    parser.add_argument(
        "--record", metavar="NAME", help="the schema's record (default: its only one)"
    )
    parser.add_argument(
        "-n", type=positive, dest="count", metavar="N", help="print at most N records"
    )
    parser.add_argument("--skip", type=int, default=0, metavar="K", help="skip the first K records")
    parser.add_argument(
        "--format",
        choices=("text", "json"),
        help="json: one JSON object per line; text: for reading"
        " (default: text on a terminal, json otherwise)",
    )
    parser.add_argument(
        "--on-error",
        choices=("raise", "skip"),
        default="raise",
        help="raise: stop at the first corrupt, truncated or undecodable record (exit 2);"
        " skip: pass over it, report it on stderr and carry on (default: raise)",
    )


def _raw_json(data: bytes) -> Json:
    """A record without a schema: ``{key: {"int64_list": [...]}}``, or for a SequenceExample
    ``{"context": {...}, "feature_lists": {key: [feature per step]}}``; keys sorted."""
    context, lists = parse_record(data)
    features: dict[str, Json] = {
        key.decode(): feature_json(*value) for key, value in sorted(context.items())
    }
    if not lists:
        return features
    steps: dict[str, Json] = {
        key.decode(): [feature_json(*step) for step in value]
        for key, value in sorted(lists.items())
    }
    return {"context": features, "feature_lists": steps}


def _raw_text(data: bytes) -> list[str]:
    context, lists = parse_record(data)
    lines = [
        f"  {key.decode()!r}: {feature_text(*value)}" for key, value in sorted(context.items())
    ]
    if not lists:
        return lines
    lines = ["  context:"] + ["  " + line for line in lines] + ["  feature lists:"]
    for key, value in sorted(lists.items()):
        lines.append(f"    {key.decode()!r}: {len(value)} step{'' if len(value) == 1 else 's'}")
        lines += [f"      {feature_text(*step)}" for step in value[:TEXT_ITEMS]]
        if len(value) > TEXT_ITEMS:
            lines.append("      ...")
    return lines


def _render(
    record: DynamicRecord | None, data: bytes, index: int, offset: int, as_json: bool
) -> str:
    """One record as a JSON line or as text (raw without a record to decode it with)."""
    if record is None:
        if as_json:
            return json.dumps(_raw_json(data), ensure_ascii=False)
        return "\n".join([f"record {index} (byte offset {offset})"] + _raw_text(data))
    values = record.decode(data)
    if as_json:
        return json.dumps({k: value_json(v) for k, v in values.items()}, ensure_ascii=False)
    body = [f"  {name} = {value_text(value)}" for name, value in values.items()]
    return "\n".join([f"record {index} (byte offset {offset}): {record.name}"] + body)


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    say = Messages(NAME, err)
    if args.record and not args.schema:
        say.error("--record needs --schema")
        return EXIT_ERROR
    if args.skip < 0:
        say.error(f"--skip must not be negative, got {args.skip}")
        return EXIT_ERROR
    record: DynamicRecord | None = load_record(args.schema, args.record) if args.schema else None
    as_json = args.format == "json" or (args.format is None and not out.isatty())
    skipped = SkipCounts()

    def report_span(span: SkippedSpan, index: int) -> None:
        skipped(span)
        say.warning(span_problem(span, index).text())

    skip = args.on_error == "skip"
    scanner = Scanner([args.file], on_skip=report_span if skip else None, on_error=args.on_error)
    printed = 0
    for item in scanner:
        if item.index < args.skip:
            continue
        if args.count is not None and printed >= args.count:
            break
        try:
            line = _render(record, item.data, item.index, item.offset, as_json)
        except RecordError as exc:
            if not skip:
                raise DataError(
                    str(exc), path=item.path, index=item.index, offset=item.offset
                ) from None
            length = len(item.data) + FRAMING
            skipped(SkippedRecord(item.path, item.offset, length, str(exc), item.index))
            say.warning(
                f"{item.path}: record {item.index} at byte offset {item.offset}:"
                f" skipped a record that does not decode: {exc}"
            )
            continue
        print(line, file=out)
        printed += 1
    if skipped:
        say.summary(f"skipped {skipped}")
    return EXIT_OK
