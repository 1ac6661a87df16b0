"""The report of a run: a text table for the terminal, a Markdown table, JSON and a plot."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.bars import Bar
from benchmarks.contenders import BASELINES, GROUPS
from benchmarks.results import Row, WorkloadResult
from codegen.errors import MissingExtraError

NOTES = (
    "before timing, every record is checked: encode() gives the message protobuf builds from the "
    "same values, and decode() gives the values protobuf parse+access gives.",
    "records/s and MB/s are of the median run over all records; MB = 10**6 bytes of serialized "
    "Examples (TFRecord framing not counted).",
    "ratio = how many times faster than the group's baseline: encode/decode rows against protobuf, "
    "read and write rows against TensorFlow, scan rows (tfr-gen commands reading the whole file, "
    "in-process, output discarded) against tfr-gen's raw read_tfrecord.",
    "per-record rows (encode, decode) drop each result before the next record, as a streaming "
    "loop does, so no contender is timed paging in fresh memory for thousands of kept results.",
    "bars compare two rows of one workload; decode_batch and dataset are also held against TF's "
    "pipeline, dataset against vahidk's loader.",
    "protobuf rows use its fastest idioms (arrays in via tolist(), out via "
    "np.array(repeated field, dtype)).",
    "TF read rows yield batched tensors; tfr-gen read_tfrecord yields one decoded record object "
    "per record.",
    "tfr-gen write_tfrecord includes its crash-safe close (fsync, rename); TFRecordWriter does "
    "not sync. Every run starts after os.sync(), so no run's fsync waits for another's data.",
    "vahidk tfrecord_loader runs in a subprocess (its protos clash with TensorFlow's); its time is "
    "its own loop.",
    "rows over 4 shards read epochs of at least 64 MB (the shards, then hard links to them under "
    "other names), so that a loader's start of epoch (readers opened, DataLoader workers' iterators "
    "started, first batches awaited) is part of a steady state, not most of the run; their time is "
    "that of one pass over the records (the epoch's time divided by its passes).",
)
"""What the numbers mean, printed under every table."""


@dataclass(frozen=True, slots=True)
class RunReport:
    """Everything a run measured, and where (``machine``) and how (``settings``)."""

    machine: dict[str, str]
    settings: dict[str, str]
    workloads: tuple[WorkloadResult, ...]
    bars: tuple[Bar, ...]


def _number(value: float | None, digits: int = 0) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def _ratio(result: WorkloadResult, row: Row) -> str:
    if row.contender == BASELINES[row.group]:
        return "baseline"
    ratio = result.ratio(row)
    return "-" if ratio is None else f"{ratio:.2f}x"


def _cells(result: WorkloadResult, row: Row) -> tuple[str, str, str]:
    """Records/s, MB/s and ratio of a row (a skip reason in the first when it was skipped)."""
    if row.skipped is not None:
        return f"skipped: {row.skipped}", "", ""
    return _number(result.records_per_s(row)), _number(result.mb_per_s(row), 1), _ratio(result, row)


def _headline(result: WorkloadResult) -> str:
    if result.skipped is not None:
        return f"skipped: {result.name}: {result.skipped}"
    return (
        f"{result.name} ({result.record}: {result.description}): {result.records:,} records, "
        f"{result.total_bytes / 1e6:.2f} MB serialized; encode() byte-identical to protobuf's "
        f"deterministic serialization for {result.byte_identical:,}/{result.records:,}"
    )


def format_text(report: RunReport) -> str:
    """The report as plain text: machine, one table per workload, the bars, the notes."""
    lines = ["tfr-gen benchmarks", ""]
    width = max(len(key) for key in report.machine)
    lines += [f"  {key.ljust(width)}  {value}" for key, value in report.machine.items()]
    lines += [f"  {key.ljust(width)}  {value}" for key, value in report.settings.items()]
    name_width = max((len(r.contender) for w in report.workloads for r in w.rows), default=10)
    for result in report.workloads:
        lines += ["", _headline(result)]
        if result.skipped is not None:
            continue
        lines.append(
            f"  {'contender'.ljust(name_width + 2)}  {'records/s':>12}  {'MB/s':>9}  {'ratio':>8}"
        )
        for group in GROUPS:
            rows = [r for r in result.rows if r.group == group]
            if not rows:
                continue
            lines.append(f"  {group} (ratio against {BASELINES[group]})")
            for row in rows:
                speed, size, ratio = _cells(result, row)
                if row.skipped is not None:
                    lines.append(f"    {row.contender.ljust(name_width)}  {speed}")
                else:
                    lines.append(
                        f"    {row.contender.ljust(name_width)}  {speed:>12}  {size:>9}  {ratio:>8}"
                    )
    if report.bars:
        lines += ["", "bars"]
        lines += [f"  {bar}" for bar in report.bars]
    lines += ["", "notes"]
    lines += [f"  - {note}" for note in NOTES]
    return "\n".join(lines) + "\n"


def format_markdown(report: RunReport) -> str:
    """The report as Markdown: the machine, one table of every workload, the bars, the notes."""
    machine = "; ".join(f"{key}: {value}" for key, value in report.machine.items())
    settings = "; ".join(f"{key}: {value}" for key, value in report.settings.items())
    lines = [f"Machine: {machine}.", "", f"Run: {settings}.", ""]
    lines += ["| workload | contender | records/s | MB/s | ratio |", "|---|---|---:|---:|---:|"]
    skipped: list[str] = []
    for result in report.workloads:
        if result.skipped is not None:
            skipped.append(_headline(result))
            continue
        for row in result.rows:
            speed, size, ratio = _cells(result, row)
            lines.append(f"| {result.name} | {row.contender} | {speed} | {size} | {ratio} |")
    lines.append("")
    lines += [f"- {line}" for line in skipped]
    if report.bars:
        lines += ["", "| bar | workload | measured | required |", "|---|---|---:|---:|"]
        for bar in report.bars:
            measured = "-" if bar.ratio is None else f"{bar.ratio:.2f}x"
            what = f"{bar.verdict}: {bar.contender} vs {bar.baseline}"
            lines.append(f"| {what} | {bar.workload} | {measured} | >= {bar.required:g}x |")
    lines += [""] + [f"- {note}" for note in NOTES]
    return "\n".join(lines) + "\n"


def to_json(report: RunReport) -> dict[str, Any]:
    """The report as JSON-ready data, with every run's seconds."""
    workloads: list[dict[str, Any]] = []
    for result in report.workloads:
        rows = [
            {
                "group": row.group,
                "contender": row.contender,
                "baseline": BASELINES[row.group],
                "skipped": row.skipped,
                "seconds": list(row.seconds),
                "median_seconds": row.median,
                "records_per_s": result.records_per_s(row),
                "mb_per_s": result.mb_per_s(row),
                "ratio": result.ratio(row),
            }
            for row in result.rows
        ]
        workloads.append(
            {
                "name": result.name,
                "record": result.record,
                "description": result.description,
                "records": result.records,
                "total_bytes": result.total_bytes,
                "byte_identical": result.byte_identical,
                "skipped": result.skipped,
                "rows": rows,
            }
        )
    bars = [
        {
            "workload": bar.workload,
            "contender": bar.contender,
            "baseline": bar.baseline,
            "required": bar.required,
            "ratio": bar.ratio,
            "verdict": bar.verdict,
        }
        for bar in report.bars
    ]
    return {
        "machine": report.machine,
        "settings": report.settings,
        "workloads": workloads,
        "bars": bars,
        "notes": list(NOTES),
    }


def write_plot(report: RunReport, path: Path) -> None:
    """A PNG of records/s per contender (log scale), one panel per workload that ran."""
    try:
        import matplotlib
    except ImportError as exc:
        raise MissingExtraError("--plot needs matplotlib: pip install 'tfr-gen[bench]'") from exc
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter

    results = [r for r in report.workloads if r.skipped is None]
    if not results:
        figure, axis = plt.subplots(figsize=(6, 1.5))
        axis.text(0.5, 0.5, "no workload ran", ha="center", va="center")
        axis.set_axis_off()
        figure.savefig(path, dpi=120)
        plt.close(figure)
        return
    palette = plt.get_cmap("tab10")  # ten colours
    colors = {group: palette(i % 10) for i, group in enumerate(GROUPS)}
    ran = [[r for r in result.rows if r.median is not None] for result in results]
    heights = [1.2 + 0.2 * len(rows) for rows in ran]  # a readable line per row
    figure, axes = plt.subplots(
        len(results), 1, figsize=(12, sum(heights)), squeeze=False, height_ratios=heights
    )
    for axis, result, rows in zip(axes[:, 0], results, ran, strict=True):
        speeds = [result.records_per_s(r) or 0.0 for r in rows]
        axis.barh([r.contender for r in rows], speeds, color=[colors[r.group] for r in rows])
        axis.set_xscale("log")
        axis.xaxis.set_minor_formatter(NullFormatter())
        axis.invert_yaxis()
        axis.set_title(f"{result.name}: {result.records:,} records")
        axis.set_xlabel("records/s (median run, log scale)")
        for y, (row, speed) in enumerate(zip(rows, speeds, strict=True)):
            axis.text(speed, y, f" {_ratio(result, row)}", va="center", fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
