"""How data uses a schema's keys: what ``tfr-gen validate --strict`` reports beyond problems.

A record can decode without a problem and still not be what its schema describes: a key the schema
does not declare (a typo on one side) is passed over, an optional feature that is never present
reads as ``None`` everywhere, a feature with a default or a variable length that is absent reads
as its default or as no values. :class:`KeyUsage` counts, for every key of the data (an Example's
features; a SequenceExample's context and feature lists), the records that have it, the first
record that has it and the first that lacks it, and how many records hold each number of values
(of steps, for a feature list) with the first of them. :func:`find_anomalies` turns that into
:class:`Anomaly` values, and :func:`key_profiles` into the value-count distribution of each key.

Positions are :class:`Where` values: the file, the record's index in it and the byte offset of
its header, as problems give them.

JSON forms (``validate --strict --format json``, under ``"strict"``)::

    "anomalies": [
      {"kind": "undeclared_key" | "never_present" | "partly_present",
       "section": "features" | "context" | "feature_lists",
       "key": "Suggestion", "feature": "suggestion" | null,    # null: not declared
       "records": 60, "total": 100,                            # records with the key, checked
       "example": {"file": "c.tfrecord", "record": 3, "offset": 412},
       "message": "..."}                                       # the text form's detail
    ],
    "keys": [
      {"section": "features", "key": "Movie", "feature": "movie", "records": 100,
       "value_counts": [{"values": 2, "records": 40,
                         "example": {"file": "c.tfrecord", "record": 0, "offset": 0}}, ...]}
    ]

``undeclared_key``: the example is the first record with the key. ``never_present``: a declared
feature that may be absent (optional, with a default, or of variable length) in no record; the
example is the first record checked. ``partly_present``: a feature that is not optional but reads
without error when absent (its default, or no values) present in some records only; the example is
the first record without it. Value counts are sorted by the number of values.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from codegen.dtypes import Wire
from codegen.errors import RecordError
from codegen.generator.ir import FeatureIR, RecordIR
from codegen.runtime.codec.wire import decode_bytes_list, decode_float_list, decode_int64_list
from codegen.tools.dynamic import DynamicRecord
from codegen.tools.values import Json
from codegen.tools.wording import plural

__all__ = [
    "ANOMALY_KINDS",
    "Anomaly",
    "KeyProfile",
    "KeyUsage",
    "KeyUse",
    "Where",
    "declared_keys",
    "find_anomalies",
    "key_profiles",
    "record_counts",
]

ANOMALY_KINDS: Mapping[str, str] = {
    "undeclared_key": "undeclared key",
    "never_present": "never present",
    "partly_present": "partly present",
}
"""Every anomaly kind and how text output names it."""

SECTIONS = ("features", "context", "feature_lists")
"""Where a key is: an Example's features, a SequenceExample's context or its feature lists."""


@dataclass(frozen=True, slots=True)
class Where:
    """A record: its file, its index in the file and the byte offset of its header."""

    path: str
    index: int
    offset: int

    def text(self) -> str:
        return f"{self.path}: record {self.index} at byte offset {self.offset}"

    def as_json(self) -> dict[str, Json]:
        return {"file": self.path, "record": self.index, "offset": self.offset}


Locate = Callable[[int], Where]
"""The position of a record of a batch, by its position in the batch."""


@dataclass(slots=True)
class KeyUse:
    """One key over the records counted: ``records`` have it; ``first``/``first_absent`` are the
    first record with it and without it; ``counts`` maps a number of values (of steps, for a
    feature list) to how many records hold it and the first of them."""

    records: int = 0
    first: Where | None = None
    first_absent: Where | None = None
    counts: dict[int, tuple[int, Where]] = field(default_factory=dict)

    def add(self, where: Where, count: int | None) -> None:
        """Count one record: ``count`` values (negative: a list that does not decode, counted as
        present only), or ``None`` when it lacks the key."""
        if count is None:
            if self.first_absent is None:
                self.first_absent = where
            return
        self.records += 1
        if self.first is None:
            self.first = where
        if count < 0:
            return
        seen = self.counts.get(count)
        self.counts[count] = (1, where) if seen is None else (seen[0] + 1, seen[1])

    def add_batch(
        self, present: npt.NDArray[np.bool_], counts: npt.NDArray[np.int64], locate: Locate
    ) -> None:
        """Count a batch at once: ``present[i]`` says whether record ``i`` has the key and
        ``counts[i]`` how many values it holds then; as :meth:`add` on each record."""
        held = np.flatnonzero(present)
        if held.size < present.size and self.first_absent is None:
            self.first_absent = locate(int(np.flatnonzero(~present)[0]))
        if not held.size:
            return
        self.records += int(held.size)
        if self.first is None:
            self.first = locate(int(held[0]))
        values, first, number = np.unique(counts[held], return_index=True, return_counts=True)
        for count, at, n in zip(values.tolist(), first.tolist(), number.tolist(), strict=True):
            seen = self.counts.get(count)
            self.counts[count] = (
                (n, locate(int(held[at]))) if seen is None else (seen[0] + n, seen[1])
            )


@dataclass(slots=True)
class KeyUsage:
    """The use of every key over the records counted: ``records`` of them, the first at
    ``first``; ``keys`` by (section, key) in the order first seen."""

    records: int = 0
    first: Where | None = None
    keys: dict[tuple[str, str], KeyUse] = field(default_factory=dict)

    def use(self, section: str, key: str, *, before: bool) -> KeyUse:
        """The :class:`KeyUse` of ``key`` in ``section``; ``before`` says whether records were
        counted before the current one (or batch), which then all lacked a key first seen now."""
        entry = self.keys.get((section, key))
        if entry is None:
            entry = KeyUse(first_absent=self.first if before else None)
            self.keys[(section, key)] = entry
        return entry

    def add_record(
        self, where: Where, features: Mapping[str, int], lists: Mapping[str, int], sequence: bool
    ) -> None:
        """Count one record: its features (key -> values; a SequenceExample's context) and
        feature lists (key -> steps)."""
        before = self.records > 0
        if self.first is None:
            self.first = where
        self.records += 1
        context = "context" if sequence else "features"
        for section, found in ((context, features), ("feature_lists", lists)):
            for key, count in found.items():
                self.use(section, key, before=before).add(where, count)
            for (other, key), entry in self.keys.items():
                if other == section and key not in found:
                    entry.add(where, None)

    def add_batch(
        self,
        size: int,
        scans: Mapping[str, tuple[npt.NDArray[np.bool_], npt.NDArray[np.int64]]],
        locate: Locate,
    ) -> None:
        """Count a batch of ``size`` Examples from the presence and value counts of each of its
        keys (``scans``: key -> (present, counts) per record; every key of the batch)."""
        if not size:
            return
        before = self.records > 0
        if self.first is None:
            self.first = locate(0)
        self.records += size
        for key, (present, counts) in scans.items():
            self.use("features", key, before=before).add_batch(present, counts, locate)
        absent = np.zeros(size, np.bool_)
        for (section, key), entry in self.keys.items():
            if section == "features" and key not in scans:
                entry.add_batch(absent, absent.astype(np.int64), locate)


@dataclass(frozen=True, slots=True)
class Anomaly:
    """One finding of ``validate --strict`` (see the module's JSON form)."""

    kind: str
    section: str
    key: str
    feature: str | None
    records: int
    total: int
    example: Where | None
    message: str

    def text(self) -> str:
        """One line: ``c.tfrecord: record 0 at byte offset 0: undeclared key: ...``."""
        where = f"{self.example.text()}: " if self.example is not None else ""
        return f"{where}{ANOMALY_KINDS[self.kind]}: {self.message}"

    def as_json(self) -> dict[str, Json]:
        return {
            "kind": self.kind,
            "section": self.section,
            "key": self.key,
            "feature": self.feature,
            "records": self.records,
            "total": self.total,
            "example": None if self.example is None else self.example.as_json(),
            "message": self.message,
        }


@dataclass(frozen=True, slots=True)
class KeyProfile:
    """The value counts of one key: (number of values, records, first record), by number."""

    section: str
    key: str
    feature: str | None
    records: int
    counts: tuple[tuple[int, int, Where], ...]

    def text(self, shown: int = 6) -> str:
        """``key 'Movie' (movie) in 100 records: 2 values in 40 (first ...); ...``."""
        name = f"key {self.key!r}" + (f" ({self.feature})" if self.feature else " (undeclared)")
        if self.section == "feature_lists":
            name = "feature list " + name[4:]
        unit = "step" if self.section == "feature_lists" else "value"
        parts = [
            f"{plural(count, unit)} in {records:,} (first: {where.text()})"
            for count, records, where in self.counts[:shown]
        ]
        if len(self.counts) > shown:
            parts.append(f"{len(self.counts) - shown} more counts")
        return f"{name} in {plural(self.records, 'record')}: {'; '.join(parts)}"

    def as_json(self) -> dict[str, Json]:
        return {
            "section": self.section,
            "key": self.key,
            "feature": self.feature,
            "records": self.records,
            "value_counts": [
                {"values": count, "records": records, "example": where.as_json()}
                for count, records, where in self.counts
            ],
        }


def declared_keys(record: RecordIR) -> dict[tuple[str, str], FeatureIR]:
    """(section, key) -> the feature of every key the record reads, companions included (a
    companion maps to the feature it belongs to)."""
    context = "context" if record.kind == "sequence" else "features"
    keys = {(context, key): feature for key, feature, _ in RecordIR.wire_order(record.features)}
    keys.update((("feature_lists", f.key), f) for f in record.sequence)
    return keys


def _absence(codec: Any) -> str | None:
    """``"optional"``, ``"silent"`` (not optional, but decodes when absent: its default or no
    values) or ``None`` (absence is a problem ``validate`` reports) for a feature's codec."""
    if codec.optional:
        return "optional"
    try:
        codec.decode({})
    except RecordError:
        return None
    return "silent"


def find_anomalies(record: DynamicRecord, usage: KeyUsage) -> list[Anomaly]:
    """The anomalies of ``usage`` against ``record``: undeclared keys first (in the order first
    seen), then declared features in schema order."""
    total = usage.records
    declared = declared_keys(record.record)
    found: list[Anomaly] = []
    for (section, key), entry in usage.keys.items():
        if (section, key) in declared or not entry.records:
            continue
        what = "feature list" if section == "feature_lists" else "key"
        found.append(
            Anomaly(
                "undeclared_key", section, key, None, entry.records, total, entry.first,
                f"{what} {key!r} is in {entry.records:,} of {plural(total, 'record')} but not in"
                f" the schema's record {record.name}",
            )
        )  # fmt: skip
    context = "context" if record.is_sequence else "features"
    sections = [(context, f, c) for f, c in zip(record.record.features, record.codecs, strict=True)]
    sections += [
        ("feature_lists", f, c)
        for f, c in zip(record.record.sequence, record.sequence_codecs, strict=True)
    ]
    for section, feature, codec in sections:
        allowed = _absence(codec)
        use = usage.keys.get((section, feature.key))
        present = use.records if use is not None else 0
        name = f"key {feature.key!r} ({feature.name})"
        if not total or allowed is None:
            continue
        if not present:
            why = "optional" if allowed == "optional" else "it reads as its default or as no values"
            found.append(
                Anomaly(
                    "never_present", section, feature.key, feature.name, 0, total, usage.first,
                    f"{name} is in none of the {plural(total, 'record')} ({why}): is the key"
                    " spelled as the data spells it?",
                )
            )  # fmt: skip
        elif present < total and allowed == "silent" and use is not None:
            found.append(
                Anomaly(
                    "partly_present", section, feature.key, feature.name, present, total,
                    use.first_absent,
                    f"{name} is in {present:,} of {plural(total, 'record')}; the others read"
                    " it as its default or as no values",
                )
            )  # fmt: skip
    return found


def key_profiles(record: DynamicRecord, usage: KeyUsage) -> list[KeyProfile]:
    """The value counts of every key of the data: declared keys in schema order (companions
    after their feature), then undeclared ones in the order first seen."""
    declared = declared_keys(record.record)
    order = {name: i for i, name in enumerate(declared)}
    keys = sorted(usage.keys.items(), key=lambda item: order.get(item[0], len(order)))
    profiles = []
    for (section, key), entry in keys:
        if not entry.records:
            continue
        feature = declared.get((section, key))
        counts = tuple(
            (count, records, where) for count, (records, where) in sorted(entry.counts.items())
        )
        name = feature.name if feature is not None else None
        profiles.append(KeyProfile(section, key, name, entry.records, counts))
    return profiles


def record_counts(
    features: Mapping[bytes, tuple[int, bytes]], lists: Mapping[bytes, Sequence[tuple[int, bytes]]]
) -> tuple[dict[str, int], dict[str, int]]:
    """Key -> values of each feature (0 for a Feature with no list, -1 for a list that does not
    decode), and key -> steps of each feature list, of a parsed record."""
    return (
        {key.decode("utf-8"): _value_count(kind, body) for key, (kind, body) in features.items()},
        {key.decode("utf-8"): len(steps) for key, steps in lists.items()},
    )


def _value_count(kind: int, body: bytes) -> int:
    try:
        if kind == Wire.INT64:
            return int(decode_int64_list(body).size)
        if kind == Wire.FLOAT:
            return int(decode_float_list(body).size)
        if kind == Wire.BYTES:
            return len(decode_bytes_list(body))
    except RecordError:
        return -1
    return 0
