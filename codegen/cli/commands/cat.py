"""``tfr-gen cat FILE_OR_GLOB...``: print the records of TFRecord files, raw or decoded by a schema.

JSON lines are built a batch of records at a time (:mod:`codegen.tools.jsonlines`); text is for
people: long lists and long string or bytes values are cut (``--full`` prints them whole). With
several files, each JSON line is ``{"file": PATH, "record": INDEX, "value": RECORD}`` and each text
record starts with its file; with one file a JSON line is the record itself. ``--skip`` and ``-n``
count records over all the files.

With ``--on-error skip`` corrupt or truncated stretches and records that do not decode are passed
over: each one is reported on stderr (stretches in ``validate``'s words), then a summary count.
Output to a pipe that closes early (``tfr-gen cat big.tfrecord | head -1``) ends the command
quietly with status 0.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from typing import TextIO

from codegen.cli.commands.exitcodes import EXIT_ERROR, EXIT_OK
from codegen.cli.commands.messages import Messages
from codegen.cli.commands.options import (
    add_compression,
    add_max_record_bytes,
    add_storage_options,
    compression,
    positive,
    storage_options,
)
from codegen.errors import DataError, RecordError
from codegen.runtime.io.framing import FRAMING
from codegen.runtime.io.skips import SkipCounts, SkippedRecord, SkippedSpan
from codegen.tools.dynamic import DynamicRecord, load_record
from codegen.tools.jsonlines import JsonLines
from codegen.tools.observe import parse_record
from codegen.tools.scan import ScannedBatch, ScannedRecord, Scanner, expand_inputs
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


def configure(parser: argparse.ArgumentParser) -> None:
    add_max_record_bytes(parser)
    add_compression(parser)
    add_storage_options(parser)
    parser.add_argument(
        "files",
        nargs="+",
        metavar="FILE_OR_GLOB",
        help="TFRecord files or glob patterns (compression detected from the data)",
    )
    parser.add_argument("--schema", metavar="SCHEMA", help="decode the records with this schema")
    parser.add_argument(
        "--record", metavar="NAME", help="the schema's record (default: its only one)"
    )
    parser.add_argument(
        "-n", type=positive, dest="count", metavar="N", help="print at most N records in all"
    )
    parser.add_argument(
        "--skip", type=int, default=0, metavar="K", help="skip the first K records of all"
    )
    parser.add_argument(
        "--format",
        choices=("text", "json"),
        help="json: one JSON object per line; text: for reading"
        " (default: text on a terminal, json otherwise)",
    )
    parser.add_argument(
        "--full",
        action="store_true",
        help="text: print long lists and long string and bytes values whole (default: cut)",
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


def _raw_text(data: bytes, full: bool) -> list[str]:
    context, lists = parse_record(data)
    lines = [
        f"  {key.decode()!r}: {feature_text(*value, full=full)}"
        for key, value in sorted(context.items())
    ]
    if not lists:
        return lines
    lines = ["  context:"] + ["  " + line for line in lines] + ["  feature lists:"]
    for key, value in sorted(lists.items()):
        lines.append(f"    {key.decode()!r}: {len(value)} step{'' if len(value) == 1 else 's'}")
        shown = value if full else value[:TEXT_ITEMS]
        lines += [f"      {feature_text(*step, full=full)}" for step in shown]
        if len(shown) < len(value):
            lines.append("      ...")
    return lines


class _Printer:
    """Renders records as ``cat`` prints them: JSON lines or text, raw or decoded by ``record``;
    with ``several`` files each record names its file."""

    def __init__(
        self, record: DynamicRecord | None, as_json: bool, several: bool, full: bool
    ) -> None:
        self.record = record
        self.as_json = as_json
        self.several = several
        self.full = full
        self.json = JsonLines()

    def batch(self, batch: ScannedBatch) -> str | None:
        """The JSON lines of a batch built column by column, or ``None`` when it is printed
        record by record (text, SequenceExamples without a schema, records that do not
        decode)."""
        if not self.as_json:
            return None
        if self.record is None:
            text = self.json.raw(batch.records)
        else:
            codec = self.record.batch_codec
            try:
                columns = codec.decode(batch.records)
            except RecordError:
                return None
            text = self.json.decoded(self.record.names, columns, lambda: codec.rows(columns))
        if text is None or not self.several:
            return text
        prefix = f'{{"file": {json.dumps(batch.path, ensure_ascii=False)}, "record": '
        return "".join(
            f'{prefix}{index}, "value": {line}}}\n'
            for index, line in enumerate(text.split("\n")[:-1], start=batch.index)
        )

    def one(self, item: ScannedRecord) -> str:
        """One record as a JSON line or as text; :class:`RecordError` if it does not decode."""
        record, data = self.record, item.data
        if self.as_json:
            value: Json
            if record is None:
                value = _raw_json(data)
            else:
                value = {k: value_json(v) for k, v in record.decode(data).items()}
            if self.several:
                value = {"file": item.path, "record": item.index, "value": value}
            return json.dumps(value, ensure_ascii=False)
        where = f"{item.path}: " if self.several else ""
        head = f"{where}record {item.index} (byte offset {item.offset})"
        if record is None:
            return "\n".join([head, *_raw_text(data, self.full)])
        values = record.decode(data)
        body = [f"  {name} = {value_text(value, self.full)}" for name, value in values.items()]
        return "\n".join([f"{head}: {record.name}", *body])


def _window(
    batches: Iterator[ScannedBatch], skip: int, count: int | None
) -> Iterator[ScannedBatch]:
    """The batches cut to the records after the first ``skip`` and up to ``count`` in all."""
    seen = printed = 0
    for batch in batches:
        start = min(len(batch), max(skip - seen, 0))
        seen += len(batch)
        stop = len(batch) if count is None else min(len(batch), start + count - printed)
        if start < stop:
            first = batch.item(start)
            yield ScannedBatch(batch.path, first.index, first.offset, batch.records[start:stop])
            printed += stop - start
        if count is not None and printed >= count:
            return


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    say = Messages(NAME, err)
    if args.record and not args.schema:
        say.error("--record needs --schema")
        return EXIT_ERROR
    if args.skip < 0:
        say.error(f"--skip must not be negative, got {args.skip}")
        return EXIT_ERROR
    record: DynamicRecord | None = load_record(args.schema, args.record) if args.schema else None
    options = storage_options(args)
    paths = expand_inputs(args.files, options)
    as_json = args.format == "json" or (args.format is None and not out.isatty())
    printer = _Printer(record, as_json, len(paths) > 1, args.full)
    skipped = SkipCounts()
    skip = args.on_error == "skip"

    def report_span(span: SkippedSpan, index: int) -> None:
        skipped(span)
        say.warning(span_problem(span, index).text())

    scanner = Scanner(
        paths,
        on_skip=report_span if skip else None,
        on_error=args.on_error,
        max_record_bytes=args.max_record_bytes,
        compression=compression(args),
        storage_options=options,
    )
    for batch in _window(scanner.batches(), args.skip, args.count):
        text = printer.batch(batch)
        if text is not None:
            out.write(text)
            continue
        for item in batch:
            try:
                line = printer.one(item)
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
    if skipped:
        say.summary(f"skipped {skipped}")
    return EXIT_OK
