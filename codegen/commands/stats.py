"""``tfr-gen stats FILE_OR_GLOB...``: what TFRecord files hold, key by key, without a schema."""

from __future__ import annotations

import argparse
import json
from typing import TextIO

from codegen.commands.exitcodes import EXIT_INTERRUPTED, EXIT_OK
from codegen.tools.scan import expand_inputs
from codegen.tools.stats import collect_stats, stats_json, stats_text

NAME = "stats"
HELP = "statistics of TFRecord files per key: presence, list kinds, counts, ranges, lengths"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "files", nargs="+", metavar="FILE_OR_GLOB", help="TFRecord files or glob patterns"
    )
    parser.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help="text: aligned tables; json: one JSON document",
    )


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    stats = collect_stats(expand_inputs(args.files), progress=err)
    if args.format == "json":
        print(json.dumps(stats_json(stats), indent=2, ensure_ascii=False), file=out)
    else:
        print(stats_text(stats), file=out)
    return EXIT_INTERRUPTED if stats.interrupted else EXIT_OK
