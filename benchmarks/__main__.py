"""``python -m benchmarks``: tfr-gen against protobuf, TensorFlow and vahidk's ``tfrecord``.

Builds deterministic data for every workload, checks that all paths agree on it, times every
contender on it in the same run, and prints records/s, MB/s and ratios with the machine, then
PASS/FAIL for each bar. Progress goes to stderr, the report to stdout.

Options: ``--quick`` (small sizes, a smoke run), ``--workloads NAME ...``, ``--rows WORD ...`` (some
rows only, with what their bars compare them to), ``--repeats N``,
``--markdown FILE``, ``--json FILE``, ``--plot FILE.png`` (needs matplotlib), ``--data-dir DIR``;
``--report-scan GB`` times only ``tfr-gen report`` over GB gigabytes of customer records
(:mod:`benchmarks.report_scan`) and prints its bars.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
from pathlib import Path

from benchmarks.bars import report_scan_bars
from benchmarks.report import format_markdown, format_text, to_json, write_plot
from benchmarks.report_scan import measure
from benchmarks.suite import Settings, run
from benchmarks.workloads import BY_NAME, ROOT, WORKLOADS, Workload

DEFAULT_REPEATS = 7
QUICK_REPEATS = 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description="Benchmark tfr-gen against protobuf, TensorFlow and vahidk's tfrecord.",
    )
    parser.add_argument(
        "--quick", action="store_true", help="small sizes and 2 repeats: a smoke run"
    )
    parser.add_argument(
        "--workloads",
        nargs="+",
        metavar="NAME",
        help=f"workloads to run, space- or comma-separated (default: all of {', '.join(BY_NAME)})",
    )
    parser.add_argument(
        "--rows",
        nargs="+",
        metavar="TEXT",
        help="run only the contenders whose name contains one of these, with their baselines and the rows"
        " their bars compare them with (e.g. --rows '4 shards' limit encode_batch to_arrow convert)",
    )
    parser.add_argument(
        "--repeats",
        type=int,
        help=f"timed rounds per workload (default {DEFAULT_REPEATS}, {QUICK_REPEATS} with --quick)",
    )
    parser.add_argument(
        "--markdown", type=Path, metavar="FILE", help="also write the report as Markdown"
    )
    parser.add_argument(
        "--json", type=Path, metavar="FILE", help="also write every measurement as JSON"
    )
    parser.add_argument(
        "--plot", type=Path, metavar="FILE.png", help="also plot records/s (needs matplotlib)"
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=ROOT / "benchmarks" / "_data",
        metavar="DIR",
        help="where the benchmark TFRecord files go (default: benchmarks/_data, git-ignored)",
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="seed of the generated data (default 0)"
    )
    parser.add_argument(
        "--report-scan",
        type=float,
        metavar="GB",
        help="run only tfr-gen report --html over GB gigabytes of customer records (the bar: 1),"
        " with its speed and peak memory",
    )
    return parser


def _selected(parser: argparse.ArgumentParser, names: list[str] | None) -> list[Workload]:
    if names is None:
        return list(WORKLOADS)
    wanted = [n.strip() for arg in names for n in arg.split(",") if n.strip()]
    unknown = [n for n in wanted if n not in BY_NAME]
    if unknown:
        parser.error(
            f"unknown workload(s) {', '.join(unknown)}; expected some of {', '.join(BY_NAME)}"
        )
    return [w for w in WORKLOADS if w.name in wanted]


def main(argv: list[str] | None = None) -> int:
    """Run the suite; the exit status is 0 when it ran (bars may still fail), 2 on bad options."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.report_scan is not None:
        if args.report_scan <= 0:
            parser.error(f"--report-scan must be positive, got {args.report_scan}")
        scan = measure(args.data_dir, args.report_scan, args.seed)
        sys.stdout.write(f"{scan}\n" + "".join(f"{line}\n" for line in report_scan_bars(scan)))
        return 0
    workloads = _selected(parser, args.workloads)
    repeats = (
        args.repeats
        if args.repeats is not None
        else QUICK_REPEATS
        if args.quick
        else DEFAULT_REPEATS
    )
    if repeats < 1:
        parser.error(f"--repeats must be at least 1, got {repeats}")
    if args.plot is not None and importlib.util.find_spec("matplotlib") is None:
        parser.error("--plot needs matplotlib: pip install 'tfr-gen[bench]'")
    settings = Settings(
        quick=args.quick,
        repeats=repeats,
        warmups=1,
        seed=args.seed,
        data_dir=args.data_dir,
        rows=tuple(args.rows or ()),
    )
    report = run(workloads, settings)
    sys.stdout.write(format_text(report))
    if args.markdown is not None:
        args.markdown.write_text(format_markdown(report), encoding="utf-8")
    if args.json is not None:
        args.json.write_text(json.dumps(to_json(report), indent=2) + "\n", encoding="utf-8")
    if args.plot is not None:
        write_plot(report, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
