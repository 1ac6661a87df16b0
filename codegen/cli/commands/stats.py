"""``tfr-gen stats FILE_OR_GLOB...``: what TFRecord files hold, key by key, without a schema.

With ``--on-error skip`` corrupt or truncated stretches are passed over: each one is reported on
stderr in ``validate``'s words, then a summary count; the statistics count them too.
"""

from __future__ import annotations

import argparse
import json
from typing import TextIO

from codegen.cli.commands.exitcodes import EXIT_INTERRUPTED, EXIT_OK
from codegen.cli.commands.messages import Messages
from codegen.cli.commands.options import (
    add_compression,
    add_max_record_bytes,
    add_storage_options,
    compression,
    storage_options,
)
from codegen.runtime.io.skips import SkipCounts, SkippedSpan
from codegen.tools.scan import expand_inputs
from codegen.tools.statistics import collect_stats, stats_json, stats_text
from codegen.tools.validation import span_problem

NAME = "stats"


def configure(parser: argparse.ArgumentParser) -> None:
    add_max_record_bytes(parser)
    add_compression(parser)
    add_storage_options(parser)
    parser.add_argument(
        "files", nargs="+", metavar="FILE_OR_GLOB", help="TFRecord files or glob patterns"
    )
    parser.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help="text: aligned tables; json: one JSON document",
    )
    parser.add_argument(
        "--on-error",
        choices=("raise", "skip"),
        default="raise",
        help="raise: stop at the first corrupt or truncated record (exit 2); skip: pass over it,"
        " report it on stderr and carry on (default: raise). Records whose bytes do not parse"
        " are listed as malformed either way",
    )


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    say = Messages(NAME, err)

    def report_span(span: SkippedSpan, index: int) -> None:
        say.warning(span_problem(span, index).text())

    options = storage_options(args)
    stats = collect_stats(
        expand_inputs(args.files, options),
        progress=err,
        on_error=args.on_error,
        compression=compression(args),
        on_skip=report_span if args.on_error == "skip" else None,
        max_record_bytes=args.max_record_bytes,
        storage_options=options,
    )
    if args.format == "json":
        print(json.dumps(stats_json(stats), indent=2, ensure_ascii=False), file=out)
    else:
        print(stats_text(stats), file=out)
    skipped = SkipCounts(spans=stats.skipped_spans, bytes=stats.skipped_bytes)
    if skipped:
        say.summary(f"skipped {skipped}")
    return EXIT_INTERRUPTED if stats.interrupted else EXIT_OK
