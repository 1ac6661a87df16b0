"""The statistics and drift report of ``tfr-gen report``, as one JSON document.

:func:`collect_dataset` scans the files of one dataset once (with a deterministic sample if asked)
into a detailed :class:`~codegen.tools.observe.Observation` and, with a schema's record, checks
them as ``validate --strict`` does. :func:`report_json` turns one or two datasets into the document
below (``"version"`` changes when a field changes meaning or goes; fields may be added). The HTML
page (:mod:`codegen.tools.report_page`) embeds exactly this document and draws it.

::

    {"format": "tfr-gen-report", "version": 1,
     "schema": {"path": "s.yaml", "record": "Customer"} | null,
     "datasets": [                                     # the files given, then those of --compare
       {"name": "data" | "compare", "files": [{"path", "bytes", "records"}], "kind": "example",
        "records": 100,                                # records counted (the sample's, if sampled)
        "records_read": 1000, "record_bytes": ..., "sample": {"size": 100, "seed": 0} | null,
        "skipped_spans": 0, "skipped_bytes": 0, "malformed_records": [...], "interrupted": false,
        "validation": null | {"summary": {...}, "problems": [...first 100...],
                              "anomalies": [...], "keys": [...]}}],    # as validate --strict gives
     "drift_threshold": 0.1 | null,
     "features": [
       {"section": "features" | "context" | "feature_lists", "key": "Age",
        "schema": null | {"name": "age", "dtype": "int64", "shape": [], "kind": "scalar",
                          "doc": "..." | null},
        "stats": [ENTRY | null, ...],                  # one per dataset; null: not in that dataset
        "drift": null | {"measure": "jensen_shannon" | "l_infinity", "value": 0.02,
                         "value_at": "the value" | null, "exceeded": false}}]}

ENTRY holds ``tfr-gen stats``'s fields for the key (records, kinds, values, min, max, mean, nan,
utf8, lengths, steps) and: ``presence`` (records with the key / records), ``value_counts``
(``[{"values": n, "features": how many}]``), for feature lists ``step_counts``
(``[{"steps": n, "lists": how many}]``); for numbers ``numbers``: ``count`` (finite values),
``inf``, ``quantiles`` (``[{"fraction", "value"}]``), ``rank_error`` (every quantile's rank is
within it: see :mod:`codegen.tools.sketches`) and ``histogram`` (``edges``, ``counts``: equal-width
buckets over the finite values, the same buckets for every dataset); for bytes ``top_values``
(``[{"value": text, "count": n}]``: UTF-8 text, else ``0x`` and hex; at most 100 characters, longer
values end in ``…``), ``count_error`` (each count is at most that much below the truth) and
``distinct`` (null when too many to count); for image features ``thumbnails`` (``data:`` URLs).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TextIO

import numpy as np

from codegen.dtypes import Wire
from codegen.errors import RecordError, TfrGenError
from codegen.generator.ir import FeatureIR, RecordIR
from codegen.generator.load import parse_schema
from codegen.runtime.io.compression import CompressionArg
from codegen.runtime.io.reader import DEFAULT_MAX_RECORD_BYTES
from codegen.runtime.io.urls import StorageOptions
from codegen.tools.anomalies import declared_keys
from codegen.tools.drift import jensen_shannon, l_infinity
from codegen.tools.dynamic import DynamicRecord, build_codec, select_record
from codegen.tools.inference import infer_record, schema_yaml
from codegen.tools.observe import KeyObservation, Observation, parse_record
from codegen.tools.sampling import Sample
from codegen.tools.scan import Scanner
from codegen.tools.sketches import equal_width_edges
from codegen.tools.statistics import Stats, collect_stats, key_json, stats_json
from codegen.tools.thumbnails import is_image, thumbnail
from codegen.tools.validation import Problem, Validation, validate_files
from codegen.tools.values import Json

__all__ = ["REPORT_VERSION", "Dataset", "collect_dataset", "drifted", "report_json"]

REPORT_VERSION = 1
"""The version of the document's structure."""
QUANTILES = (0.0, 0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 1.0)
"""The fractions whose quantiles the report gives."""
BUCKETS = 20
"""Buckets of a numeric histogram."""
TOP = 20
"""Most frequent values shown per bytes key."""
THUMBNAILS = 4
"""Pictures shown per image feature."""
PROBLEMS = 100
"""Problems listed per dataset (all are counted)."""
SHOWN = 100
"""Characters of a value shown."""


@dataclass(slots=True)
class Dataset:
    """What :func:`collect_dataset` found in one dataset."""

    name: str
    stats: Stats
    sample: tuple[int | float, int] | None = None
    validation: Validation | None = None
    problems: list[Problem] = field(default_factory=list)
    thumbnails: dict[str, list[str]] = field(default_factory=dict)
    """Pictures of each image feature (by key), from the first records that decode."""


def _inferred(observation: Observation) -> RecordIR | None:
    """The record ``tfr-gen infer`` would write for the observed records (``None``: none can)."""
    try:
        inferred = infer_record(observation, name="Inferred", doc="The observed records.")
        return select_record(parse_schema(schema_yaml(inferred), "<inferred>"), None)
    except TfrGenError:
        return None


def _thumbnails(
    record: RecordIR,
    paths: Sequence[str],
    compression: CompressionArg,
    max_record_bytes: int | None,
    storage_options: StorageOptions | None,
) -> dict[str, list[str]]:
    """Up to :data:`THUMBNAILS` pictures of each image feature of ``record`` (not of its feature
    lists), from the first records where it decodes: the scan stops when every feature has its
    pictures, and only the images shown (and those that fail) are decoded."""
    codecs = [(f.key, build_codec(record, f)) for f in record.features if is_image(f)]
    pictures: dict[str, list[str]] = {key: [] for key, _ in codecs}
    if not codecs:
        return pictures
    with Scanner(
        paths,
        limit=THUMBNAILS * 16,
        compression=compression,
        max_record_bytes=max_record_bytes,
        storage_options=storage_options,
    ) as scanner:
        for item in scanner:
            try:
                features, _ = parse_record(item.data)
            except RecordError:
                continue
            for key, codec in codecs:
                if len(pictures[key]) == THUMBNAILS:
                    continue
                try:
                    picture = thumbnail(DynamicRecord.decode_feature(codec, features))
                except RecordError:
                    continue
                if picture is not None:
                    pictures[key].append(picture)
            if all(len(shown) == THUMBNAILS for shown in pictures.values()):
                break
    return pictures


def collect_dataset(
    name: str,
    paths: Sequence[str],
    *,
    record: DynamicRecord | None = None,
    sample: int | float | None = None,
    seed: int = 0,
    progress: TextIO | None = None,
    compression: CompressionArg = "auto",
    max_record_bytes: int | None = DEFAULT_MAX_RECORD_BYTES,
    storage_options: StorageOptions | None = None,
) -> Dataset:
    """Scan ``paths`` (corrupt stretches passed over and counted); with ``record``, check them
    against it as ``validate --strict`` does (a second pass, over every record). ``compression`` is
    that of every file (``"auto"``: detected per file from its first bytes). Image features
    (``record``'s, or without it those of the schema inferred from the records: JPEG and PNG images
    by their signature, the tutorials' raw images by their shape key) get thumbnails. A record
    header declaring more than ``max_record_bytes`` is damage (skipped and counted).
    ``storage_options`` go to the fsspec store of files named by URL."""
    observation = Observation(detailed=True)
    stats = collect_stats(
        paths,
        progress=progress,
        on_error="skip",
        observation=observation,
        sample=None if sample is None else Sample(sample, seed),
        label=name,
        compression=compression,
        max_record_bytes=max_record_bytes,
        storage_options=storage_options,
    )
    dataset = Dataset(name, stats, None if sample is None else (sample, seed))
    if stats.interrupted:
        return dataset
    described = _inferred(observation) if record is None else record.record
    if described is not None:
        dataset.thumbnails = _thumbnails(
            described, paths, compression, max_record_bytes, storage_options
        )
    if record is not None:

        def found(problem: Problem) -> None:
            if len(dataset.problems) < PROBLEMS:
                dataset.problems.append(problem)

        dataset.validation = validate_files(
            record,
            paths,
            found,
            progress=progress,
            strict=True,
            compression=compression,
            max_record_bytes=max_record_bytes,
            storage_options=storage_options,
        )
    return dataset


def _dataset_json(dataset: Dataset) -> dict[str, Json]:
    stats = dataset.stats
    summary = stats_json(stats)
    document: dict[str, Json] = {
        "name": dataset.name,
        "files": summary["files"],
        "kind": summary["kind"],
        "records": stats.records,
        "records_read": sum(stats.file_records),
        "record_bytes": stats.record_bytes,
        "sample": None
        if dataset.sample is None
        else {"size": dataset.sample[0], "seed": dataset.sample[1]},
        "skipped_spans": stats.skipped_spans,
        "skipped_bytes": stats.skipped_bytes,
        "malformed_records": summary["malformed_records"],
        "interrupted": stats.interrupted,
        "validation": None,
    }
    validation = dataset.validation
    if validation is not None:
        document["validation"] = {
            "summary": validation.as_json(),
            "problems": [problem.as_json() for problem in dataset.problems],
            "anomalies": [anomaly.as_json() for anomaly in validation.anomalies],
            "keys": [profile.as_json() for profile in validation.profiles],
        }
    return document


def _shown(value: bytes) -> str:
    try:
        text = value.decode("utf-8")
    except UnicodeDecodeError:
        text = "0x" + value.hex()
    return text if len(text) <= SHOWN else text[: SHOWN - 1] + "…"


def _numeric(seen: KeyObservation) -> bool:
    kinds = seen.list_kinds
    return bool(kinds) and kinds[0] is not Wire.BYTES


def _entry(
    seen: KeyObservation,
    records: int,
    is_list: bool,
    edges: Sequence[float] | None,
    pictures: list[str] | None,
) -> dict[str, Json]:
    detail = seen.detail
    assert detail is not None, "the report's observations are detailed"
    entry = key_json(seen, is_list)
    entry["presence"] = seen.records / records if records else 0.0
    entry["value_counts"] = [
        {"values": n, "features": count} for n, count in sorted(detail.value_counts.items())
    ]
    if is_list:
        entry["step_counts"] = [
            {"steps": n, "lists": count} for n, count in sorted(detail.steps.items())
        ]
    sketch = detail.numbers
    if sketch.n or detail.infinities or seen.nans:
        numbers: dict[str, Json] = {
            "count": sketch.n,
            "inf": detail.infinities,
            "quantiles": [
                {"fraction": fraction, "value": value}
                for fraction, value in zip(QUANTILES, sketch.quantiles(QUANTILES), strict=False)
            ],
            "rank_error": sketch.rank_error,
        }
        if edges is not None and sketch.n:
            counts: list[Json] = list(sketch.histogram(np.asarray(edges)))
            numbers["histogram"] = {"edges": list(edges), "counts": counts}
        entry["numbers"] = numbers
    top = detail.top
    if top.n:
        entry["top_values"] = [
            {"value": _shown(value), "count": count} for value, count in top.top(TOP)
        ]
        entry["count_error"] = top.count_error
        entry["distinct"] = top.distinct
    if pictures is not None:
        entry["thumbnails"] = list(pictures)
    return entry


def _edges(seen: Sequence[KeyObservation | None]) -> list[float] | None:
    sketches = [s.detail.numbers for s in seen if s is not None and s.detail is not None]
    sketches = [sketch for sketch in sketches if sketch.n]
    if not sketches:
        return None
    low = min(sketch.low for sketch in sketches)
    high = max(sketch.high for sketch in sketches)
    return [float(edge) for edge in equal_width_edges(low, high, BUCKETS)]


def _drift(
    seen: Sequence[KeyObservation | None], edges: Sequence[float] | None, threshold: float | None
) -> dict[str, Json] | None:
    if len(seen) != 2 or seen[0] is None or seen[1] is None:
        return None
    a, b = seen[0].detail, seen[1].detail
    assert a is not None and b is not None, "the report's observations are detailed"
    value_at: str | None = None
    if _numeric(seen[0]) or _numeric(seen[1]):
        bins = np.asarray(edges) if edges is not None else np.array([0.0, 1.0])
        value = jensen_shannon(
            a.numbers.histogram(bins) if a.numbers.n else [0.0] * (len(bins) - 1),
            b.numbers.histogram(bins) if b.numbers.n else [0.0] * (len(bins) - 1),
            p_extra=(float(a.infinities), float(seen[0].nans)),
            q_extra=(float(b.infinities), float(seen[1].nans)),
        )
        measure = "jensen_shannon"
    else:
        value, at = l_infinity(a.top.counts(), b.top.counts())
        value_at = None if at is None else _shown(at)
        measure = "l_infinity"
    return {
        "measure": measure,
        "value": value,
        "value_at": value_at,
        "exceeded": threshold is not None and value > threshold,
    }


def _schema_json(feature: FeatureIR | None) -> Json:
    if feature is None:
        return None
    return {
        "name": feature.name,
        "dtype": feature.dtype.name,
        "shape": list(feature.shape),
        "kind": feature.kind.name,
        "doc": feature.doc,
    }


def report_json(
    datasets: Sequence[Dataset],
    *,
    schema: str | None = None,
    record: DynamicRecord | None = None,
    threshold: float | None = None,
) -> dict[str, Json]:
    """The report of one dataset, or of two side by side with their drift (see the module's
    description)."""
    declared = {} if record is None else declared_keys(record.record)
    keys: list[tuple[str, str]] = list(declared)
    tables = []
    for dataset in datasets:
        observation = dataset.stats.observation
        context = "context" if observation.is_sequence else "features"
        table = {(context, key): seen for key, seen in observation.features.items()}
        table.update({("feature_lists", key): s for key, s in observation.feature_lists.items()})
        tables.append(table)
        for where in sorted(table, key=lambda item: (item[0], item[1].encode("utf-8"))):
            if where not in declared and where not in keys:
                keys.append(where)
    features: list[Json] = []
    for section, key in keys:
        feature = declared.get((section, key))
        seen = [table.get((section, key)) for table in tables]
        edges = _edges(seen)
        features.append(
            {
                "section": section,
                "key": key,
                "schema": _schema_json(feature),
                "stats": [
                    None
                    if s is None
                    else _entry(
                        s,
                        d.stats.observation.records,
                        section == "feature_lists",
                        edges,
                        None if section == "feature_lists" else d.thumbnails.get(key),
                    )
                    for s, d in zip(seen, datasets, strict=True)
                ],
                "drift": _drift(seen, edges, threshold),
            }
        )
    return {
        "format": "tfr-gen-report",
        "version": REPORT_VERSION,
        "schema": None if record is None else {"path": schema, "record": record.name},
        "datasets": [_dataset_json(dataset) for dataset in datasets],
        "drift_threshold": threshold,
        "features": features,
    }


def drifted(document: dict[str, Json]) -> list[str]:
    """The keys whose drift exceeds the document's threshold."""
    found = []
    features = document["features"]
    assert isinstance(features, list)
    for feature in features:
        assert isinstance(feature, dict)
        drift = feature["drift"]
        if isinstance(drift, dict) and drift["exceeded"]:
            found.append(str(feature["key"]))
    return found
