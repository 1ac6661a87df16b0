"""``tfr-gen report FILE_OR_GLOB... [--compare OTHER...] [--html PAGE]``: statistics and drift.

Scans the files (and those of ``--compare``) once each with bounded memory and writes the report
(:mod:`codegen.tools.report`): ``--html`` writes it as one self-contained page, ``--format json``
prints its JSON document, the default text lists the datasets and, when comparing, the drift of
every feature. With ``--schema`` the features show their schema's doc, dtype and shape, and the
files are also checked as ``validate --strict`` checks them. ``--max-drift`` makes the command exit
1 when a feature drifts more than that.
"""

from __future__ import annotations

import argparse
import json
from typing import TextIO

from codegen.cli.commands.exitcodes import EXIT_ERROR, EXIT_FOUND, EXIT_INTERRUPTED, EXIT_OK
from codegen.cli.commands.messages import Messages
from codegen.cli.commands.options import (
    add_compression,
    add_max_record_bytes,
    add_storage_options,
    compression,
    storage_options,
)
from codegen.files import write_atomic
from codegen.tools.dynamic import load_record
from codegen.tools.report import collect_dataset, drifted, report_json
from codegen.tools.report_page import report_html
from codegen.tools.sampling import parse_sample
from codegen.tools.scan import expand_inputs
from codegen.tools.values import Json
from codegen.tools.wording import plural

NAME = "report"


def _sample(text: str) -> int | float:
    try:
        return parse_sample(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _threshold(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"expected a number from 0 to 1, got {text!r}")
    return value


def configure(parser: argparse.ArgumentParser) -> None:
    add_compression(parser)
    parser.add_argument(
        "files", nargs="+", metavar="FILE_OR_GLOB", help="TFRecord files or glob patterns"
    )
    parser.add_argument(
        "--compare",
        nargs="+",
        metavar="FILE_OR_GLOB",
        help="a second dataset (e.g. eval against train): distributions side by side and drift",
    )
    parser.add_argument("--html", metavar="PAGE", help="write the report as one HTML file")
    parser.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help="what to print: text (datasets and drift) or json (the report's JSON document)",
    )
    parser.add_argument("--schema", metavar="SCHEMA", help="describe and check by this schema")
    parser.add_argument(
        "--record", metavar="NAME", help="the schema's record (default: the only one)"
    )
    parser.add_argument(
        "--max-drift",
        type=_threshold,
        metavar="X",
        help="exit 1 when a feature's drift exceeds X (L-infinity distance for bytes, "
        "Jensen-Shannon divergence for numbers; both from 0 to 1)",
    )
    parser.add_argument(
        "--sample",
        type=_sample,
        metavar="N_OR_FRACTION",
        help="count a deterministic sample of each dataset: N records, or a fraction such as 0.1",
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="the seed of --sample's choice (default: 0)"
    )
    add_max_record_bytes(parser)
    add_storage_options(parser)


def _text(document: dict[str, Json]) -> list[str]:
    lines = []
    datasets = document["datasets"]
    assert isinstance(datasets, list)
    for dataset in datasets:
        assert isinstance(dataset, dict)
        files = dataset["files"]
        assert isinstance(files, list)
        lines.append(
            f"{dataset['name']}: {plural(int(str(dataset['records'])), 'record')}"
            f" in {plural(len(files), 'file')}"
        )
    features = document["features"]
    assert isinstance(features, list)
    lines.append(f"features: {len(features)}")
    for feature in features:
        assert isinstance(feature, dict)
        drift = feature["drift"]
        if isinstance(drift, dict):
            measure = "L-infinity" if drift["measure"] == "l_infinity" else "Jensen-Shannon"
            mark = "  (exceeds --max-drift)" if drift["exceeded"] else ""
            lines.append(f"  {feature['key']}: {measure} {float(str(drift['value'])):.4f}{mark}")
    return lines


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    say = Messages(NAME, err)
    if args.schema is None and args.record is not None:
        say.error("--record needs --schema")
        return EXIT_ERROR
    record = None if args.schema is None else load_record(args.schema, args.record)
    options = storage_options(args)
    groups = [("data", expand_inputs(args.files, options))]
    if args.compare:
        groups.append(("compare", expand_inputs(args.compare, options)))
    datasets = []
    for name, paths in groups:
        dataset = collect_dataset(
            name,
            paths,
            record=record,
            sample=args.sample,
            seed=args.seed,
            progress=err,
            compression=compression(args),
            max_record_bytes=args.max_record_bytes,
            storage_options=options,
        )
        datasets.append(dataset)
        if dataset.stats.interrupted:
            break
    document = report_json(datasets, schema=args.schema, record=record, threshold=args.max_drift)
    if args.html is not None:
        write_atomic(args.html, report_html(document))
    if args.format == "json":
        print(json.dumps(document, indent=2, ensure_ascii=False, allow_nan=False), file=out)
    else:
        print("\n".join(_text(document)), file=out)
        if args.html is not None:
            say.summary(f"wrote {args.html}")
    if any(dataset.stats.interrupted for dataset in datasets):
        return EXIT_INTERRUPTED
    exceeded = drifted(document)
    if exceeded:
        where = ", ".join(exceeded)
        say.summary(
            f"drift above {args.max_drift:g} in {plural(len(exceeded), 'feature')}: {where}"
        )
        return EXIT_FOUND
    return EXIT_OK
