"""Statistics of TFRecord files without a schema: what ``tfr-gen stats`` prints.

Per file: size and record count. In all: records and their bytes, stretches that could not be read,
records whose bytes do not parse. Per key (of an Example's features, or of a SequenceExample's
context and feature lists): in how many records it appears, its list kinds, the fewest and most
values per feature, the minimum, maximum and mean of numbers (NaN counted apart; no mean where
both infinities occur), and for bytes the number of values of each length.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TextIO

from codegen.dtypes import Wire
from codegen.runtime.io.compression import CompressionArg
from codegen.runtime.io.reader import DEFAULT_MAX_RECORD_BYTES
from codegen.runtime.io.skips import OnError, SkippedSpan
from codegen.runtime.io.urls import StorageOptions
from codegen.tools.observe import KeyObservation, Observation
from codegen.tools.sampling import Sample
from codegen.tools.scan import ScannedRecord, Scanner
from codegen.tools.values import Json, float32_json, float32_text

__all__ = ["Stats", "collect_stats", "key_json", "stats_json", "stats_text"]

LENGTHS_SHOWN = 8
"""How many distinct value lengths of a bytes key the text form lists."""


@dataclass(slots=True)
class Stats:
    """What :func:`collect_stats` found. ``malformed`` lists (path, index, offset, message) per
    record whose bytes do not parse; ``interrupted`` says the scan ended on Ctrl-C."""

    paths: tuple[str, ...]
    sizes: tuple[int, ...]
    observation: Observation = field(default_factory=Observation)
    file_records: tuple[int, ...] = ()
    records: int = 0
    record_bytes: int = 0
    skipped_spans: int = 0
    skipped_bytes: int = 0
    malformed: list[tuple[str, int, int, str]] = field(default_factory=list)
    interrupted: bool = False


def collect_stats(
    paths: Sequence[str],
    *,
    progress: TextIO | None = None,
    on_error: OnError = "raise",
    on_skip: Callable[[SkippedSpan, int], None] | None = None,
    observation: Observation | None = None,
    sample: Sample | None = None,
    label: str = "stats",
    max_record_bytes: int | None = DEFAULT_MAX_RECORD_BYTES,
    compression: CompressionArg = "auto",
    storage_options: StorageOptions | None = None,
) -> Stats:
    """The statistics of every record of ``paths``; Ctrl-C ends the scan early (``interrupted``).

    ``progress`` is where a progress bar is drawn when it is a terminal. A corrupt or truncated
    stretch raises :class:`~codegen.errors.DataError`, or with ``on_error="skip"`` is counted and
    handed to ``on_skip`` with the number of records read before it in its file (the progress bar
    erased first). Records whose bytes do not parse are listed in ``malformed`` either way.
    ``observation`` (a new one by default) counts the records; with ``sample``, only the records
    it picks are counted (``records`` and ``record_bytes``; ``file_records`` counts all read).
    ``storage_options`` go to the fsspec store of files named by URL.
    """

    def skipped(span: SkippedSpan, index: int) -> None:
        scanner.clear_progress()
        if on_skip is not None:
            on_skip(span, index)

    scanner = Scanner(
        paths,
        on_skip=skipped if on_error == "skip" else None,
        on_error=on_error,
        progress=progress,
        label=label,
        max_record_bytes=max_record_bytes,
        compression=compression,
        storage_options=storage_options,
    )
    stats = Stats(scanner.paths, scanner.sizes)
    if observation is not None:
        stats.observation = observation
    malformed_bytes = 0

    def count(
        records: Sequence[bytes], item: Callable[[int], ScannedRecord], size: int | None = None
    ) -> None:
        nonlocal malformed_bytes
        for position, exc in stats.observation.add_batch(records, size):
            found = item(position)
            stats.malformed.append((found.path, found.index, found.offset, str(exc)))
            malformed_bytes += len(found.data)

    try:
        with scanner:
            for batch in scanner.batches():
                if sample is None:
                    count(batch.records, batch.item, batch.size)
                else:
                    chunk = sample.take(batch)
                    count([item.data for item in chunk], chunk.__getitem__)
            if sample is not None:
                for chunk in sample.finish():
                    count([item.data for item in chunk], chunk.__getitem__)
    except KeyboardInterrupt:
        stats.interrupted = True
    stats.file_records = tuple(scanner.file_records)
    # The records counted (a Ctrl-C may come in the middle of a batch the scanner handed out).
    stats.records = stats.observation.records + len(stats.malformed)
    stats.record_bytes = stats.observation.record_bytes + malformed_bytes
    stats.skipped_spans = scanner.skipped_spans
    stats.skipped_bytes = scanner.skipped_bytes
    return stats


def _number(value: float | int | None, kind: Wire) -> Json:
    if value is None or isinstance(value, int):
        return value
    return float32_json(value) if kind is Wire.FLOAT else _float64_json(value)


def _float64_json(value: float) -> Json:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return value


def key_json(seen: KeyObservation, is_list: bool) -> dict[str, Json]:
    """One key's statistics as a JSON object (``is_list``: a feature-list key)."""
    kinds = seen.list_kinds
    entry: dict[str, Json] = {
        "records": seen.records,
        "kinds": {kind.list_name: seen.kinds[kind] for kind in kinds},
    }
    if seen.kinds[0]:
        entry["without_list"] = seen.kinds[0]
    if is_list:
        entry["steps"] = {"min": seen.steps_min, "max": seen.steps_max}
    entry["values"] = {"min": seen.counts_min, "max": seen.counts_max, "total": seen.values}
    numeric = [kind for kind in kinds if kind is not Wire.BYTES]
    if numeric:
        kind = Wire.FLOAT if Wire.FLOAT in numeric else Wire.INT64
        entry["min"] = _number(seen.low, kind)
        entry["max"] = _number(seen.high, kind)
        mean = seen.mean
        entry["mean"] = None if mean is None else _float64_json(mean)
        entry["nan"] = seen.nans
    if Wire.BYTES in kinds:
        entry["utf8"] = seen.utf8
        entry["lengths"] = {str(n): seen.lengths[n] for n in sorted(seen.lengths)}
    return entry


def stats_json(stats: Stats) -> dict[str, Json]:
    """The statistics as one JSON object."""
    observation = stats.observation
    document: dict[str, Json] = {
        "files": [
            {"path": path, "bytes": size, "records": count}
            for path, size, count in zip(stats.paths, stats.sizes, stats.file_records, strict=False)
        ],
        "records": stats.records,
        "record_bytes": stats.record_bytes,
        "skipped_spans": stats.skipped_spans,
        "skipped_bytes": stats.skipped_bytes,
        "malformed_records": [
            {"file": path, "record": index, "offset": offset, "message": message}
            for path, index, offset, message in stats.malformed
        ],
        "kind": "sequence_example" if observation.is_sequence else "example",
    }
    section = "context" if observation.is_sequence else "features"
    document[section] = {key: key_json(seen, False) for key, seen in _by_key(observation.features)}
    if observation.is_sequence:
        document["feature_lists"] = {
            key: key_json(seen, True) for key, seen in _by_key(observation.feature_lists)
        }
    document["interrupted"] = stats.interrupted
    return document


def _by_key(table: dict[str, KeyObservation]) -> list[tuple[str, KeyObservation]]:
    return sorted(table.items(), key=lambda item: item[0].encode("utf-8"))


def _range(low: int | None, high: int | None) -> str:
    if low is None:
        return "-"
    return str(low) if low == high else f"{low}..{high}"


def _number_text(value: float | int | None, kinds: list[Wire]) -> str:
    if value is None:
        return "-"
    if isinstance(value, int):
        return str(value)
    return float32_text(value) if Wire.FLOAT in kinds else f"{value:.6g}"


def _row(key: str, seen: KeyObservation, is_list: bool) -> list[str]:
    kinds = seen.list_kinds
    cells = [key, str(seen.records), "+".join(k.list_name for k in kinds) or "no list"]
    if is_list:
        cells.append(_range(seen.steps_min, seen.steps_max))
    cells.append(_range(seen.counts_min, seen.counts_max))
    mean = seen.mean
    cells += [
        _number_text(seen.low, kinds),
        _number_text(seen.high, kinds),
        "-" if mean is None else f"{mean:.6g}",
    ]
    cells.append(str(seen.nans) if seen.nans else "")
    return cells


def _table(title: str, table: dict[str, KeyObservation], is_list: bool) -> list[str]:
    head = ["key", "records", "list"] + (["steps"] if is_list else [])
    head += ["values", "min", "max", "mean", "nan"]
    rows = [head] + [_row(key, seen, is_list) for key, seen in _by_key(table)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(head))]
    numeric = {1} | set(range(len(head) - 5, len(head)))
    lines = [f"{title}: {len(table)} key{'' if len(table) == 1 else 's'}"]
    for row in rows:
        cells = [
            cell.rjust(width) if i in numeric and row is not rows[0] else cell.ljust(width)
            for i, (cell, width) in enumerate(zip(row, widths, strict=True))
        ]
        lines.append("  " + "  ".join(cells).rstrip())
    lengths = [(key, seen) for key, seen in _by_key(table) if seen.lengths]
    if lengths:
        lines.append("  bytes lengths (length:count):")
        width = max(len(key) for key, _ in lengths)
        for key, seen in lengths:
            common = sorted(seen.lengths.items())
            shown = " ".join(f"{n}:{count}" for n, count in common[:LENGTHS_SHOWN])
            if len(common) > LENGTHS_SHOWN:
                shown += f" ... ({len(common)} lengths)"
            lines.append(f"    {key.ljust(width)}  {shown}")
    return lines


def stats_text(stats: Stats) -> str:
    """The statistics as aligned text."""
    observation = stats.observation
    files = len(stats.file_records)
    lines = [
        f"files: {files} ({sum(stats.sizes[:files]):,} bytes)",
        f"records: {stats.records:,} ({stats.record_bytes:,} bytes of data)",
    ]
    if stats.skipped_spans:
        lines.append(
            f"unreadable: {stats.skipped_spans} stretch{'' if stats.skipped_spans == 1 else 'es'}"
            f" ({stats.skipped_bytes:,} bytes) skipped"
        )
    for path, index, offset, message in stats.malformed:
        lines.append(f"malformed: {path}: record {index} at byte offset {offset}: {message}")
    if observation.is_sequence:
        lines += _table("context", observation.features, False)
        lines += _table("feature lists", observation.feature_lists, True)
    else:
        lines += _table("features", observation.features, False)
    if stats.interrupted:
        lines.append("interrupted: these statistics cover the records read before Ctrl-C")
    return "\n".join(lines)
