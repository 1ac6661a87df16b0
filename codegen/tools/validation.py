"""Checking records against a schema, feature by feature: what ``tfr-gen validate`` reports.

Each record is decoded the way the generated class decodes it (:mod:`codegen.tools.dynamic`), but
one feature at a time, so every feature that does not fit is reported, not only the first. A
:class:`Problem` names the file, the record index, the byte offset of the record's header, the key
and what was expected against what was found. Its ``kind`` is one of :data:`KINDS`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

import numpy as np

from codegen.dtypes import Kind, Wire
from codegen.errors import RecordError
from codegen.generator.ir import FeatureIR
from codegen.runtime.codec.batch import ABSENT, KeyScan, scan_keys
from codegen.runtime.codec.wire import decode_bytes_list, decode_float_list, decode_int64_list
from codegen.runtime.io.compression import CompressionArg
from codegen.runtime.io.reader import DEFAULT_MAX_RECORD_BYTES
from codegen.runtime.io.skips import SkippedSpan
from codegen.runtime.io.urls import StorageOptions
from codegen.tools.anomalies import (
    Anomaly,
    KeyProfile,
    KeyUsage,
    Where,
    declared_keys,
    find_anomalies,
    key_profiles,
    record_counts,
)
from codegen.tools.dynamic import DynamicRecord
from codegen.tools.observe import joined_utf8, parse_record
from codegen.tools.scan import ScannedBatch, ScannedRecord, Scanner
from codegen.tools.values import Json
from codegen.tools.wording import plural

__all__ = [
    "KINDS",
    "Problem",
    "Validation",
    "check_record",
    "diagnose",
    "diagnose_steps",
    "span_problem",
    "validate_files",
]

KINDS: Mapping[str, str] = {
    "missing": "missing feature",
    "list_kind": "wrong list kind",
    "count": "wrong value count",
    "range": "value out of range",
    "utf8": "invalid UTF-8",
    "malformed": "malformed data",
    "invalid": "invalid feature",
    "corrupt": "corrupt record",
    "truncated": "truncated file",
}
"""Every problem kind and how text output names it."""

_LIST_MESSAGES = {Wire.BYTES: "BytesList", Wire.FLOAT: "FloatList", Wire.INT64: "Int64List"}
_LIST_FEATURES = frozenset({"numeric_scalar", "numeric_tensor", "string_scalar", "string_list"})
"""The kinds of features whose values are one list of their dtype's list kind under their own key."""

Diagnosis = tuple[str, str, str]
"""Why a feature did not decode: (problem kind, expected, found)."""


@dataclass(frozen=True, slots=True)
class Problem:
    """One problem of one record (or of a stretch of a file that holds no readable record).

    ``index`` is the record's index in the file (for a skipped stretch: the number of records read
    before it), ``offset`` the byte offset of its header (of the stretch's start). ``key`` and
    ``feature`` (the attribute) are set for problems of one feature; ``expected``/``found`` say what
    did not fit; ``message`` is the full decoder message; ``length`` is a skipped stretch's size.
    """

    path: str
    index: int
    offset: int
    kind: str
    message: str
    key: str | None = None
    feature: str | None = None
    expected: str | None = None
    found: str | None = None
    length: int | None = None

    def text(self) -> str:
        """One line: ``data.tfrecord: record 3 at byte offset 412: missing feature: ...``."""
        where = f"{self.path}: record {self.index} at byte offset {self.offset}: {KINDS[self.kind]}"
        if self.key is not None and self.expected is not None:
            detail = (
                f"key {self.key!r} ({self.feature}): expected {self.expected}, found {self.found}"
            )
        elif self.key is not None:
            detail = f"key {self.key!r} ({self.feature}): {self.message}"
        elif self.length is not None:
            detail = f"{self.length} bytes skipped: {self.message}"
        else:
            detail = self.message
        return f"{where}: {detail}"

    def as_json(self) -> dict[str, Json]:
        """The problem as a JSON object (fields that do not apply are left out)."""
        fields: dict[str, Json] = {
            "file": self.path,
            "record": self.index,
            "offset": self.offset,
            "kind": self.kind,
        }
        for name in ("key", "feature", "expected", "found", "length"):
            value = getattr(self, name)
            if value is not None:
                fields[name] = value
        fields["message"] = self.message
        return fields


def span_problem(span: SkippedSpan, index: int) -> Problem:
    """The problem of a stretch a reader passed over; ``index`` counts the records before it."""
    kind = "truncated" if span.reason.startswith("truncated") else "corrupt"
    return Problem(span.path, index, span.offset, kind, span.reason, length=span.length)


def check_record(
    record: DynamicRecord, path: str, index: int, offset: int, data: bytes
) -> list[Problem]:
    """Every problem of one serialized record: one per feature that does not decode, or one for
    bytes that do not parse at all."""
    try:
        features, lists = record.parse(data)
    except RecordError as exc:
        return [Problem(path, index, offset, "malformed", str(exc))]
    problems: list[Problem] = []
    for feature, codec in zip(record.record.features, record.codecs, strict=True):
        try:
            record.decode_feature(codec, features)
        except RecordError as exc:
            diagnosis = diagnose(feature, features.get(codec.key.encode()))
            problems.append(_feature_problem(path, index, offset, feature, exc, diagnosis))
    for feature, sequence_codec in zip(record.record.sequence, record.sequence_codecs, strict=True):
        try:
            sequence_codec.decode(lists)
        except RecordError as exc:
            diagnosis = diagnose_steps(feature, lists.get(feature.key.encode()))
            problems.append(_feature_problem(path, index, offset, feature, exc, diagnosis))
    return problems


def _feature_problem(
    path: str,
    index: int,
    offset: int,
    feature: FeatureIR,
    error: RecordError,
    diagnosis: Diagnosis | None,
) -> Problem:
    """The problem of a feature whose codec raised ``error``, as ``diagnosis`` explains it."""
    if diagnosis is None:
        return Problem(path, index, offset, "invalid", str(error), feature.key, feature.name)
    kind, expected, found = diagnosis
    return Problem(
        path, index, offset, kind, str(error), feature.key, feature.name, expected, found
    )


def _values(count: int | None) -> str:
    return f"{count} value" if count == 1 else f"{count} values"


def _check_list(feature: FeatureIR, kind: int, body: bytes, where: str) -> Diagnosis | None:
    """What is wrong with one value list (of a feature, or of one step: ``where`` says which)
    against the feature's dtype and shape, or ``None``."""
    dtype, shape, wire = feature.dtype, feature.shape, feature.dtype.wire
    if kind != wire:
        return "list_kind", wire.list_name, f"{Wire(kind).list_name}{where}"
    try:
        values: Any = (
            decode_int64_list(body)
            if wire is Wire.INT64
            else decode_float_list(body)
            if wire is Wire.FLOAT
            else decode_bytes_list(body)
        )
    except RecordError as exc:
        return "malformed", f"a valid {_LIST_MESSAGES[wire]}", f"{exc}{where}"
    count = len(values)
    fixed = math.prod(d for d in shape if d is not None) if feature.is_fixed else None
    inner = math.prod(d for d in shape[1:] if d is not None)
    if fixed is not None and count != fixed:
        return "count", _values(fixed), f"{_values(count)}{where}"
    if fixed is None and count % inner:
        return "count", f"a multiple of {inner} values", f"{_values(count)}{where}"
    if wire is Wire.INT64 and dtype.lo is not None and dtype.hi is not None:
        bad = values[(values < dtype.lo) | (values > dtype.hi)]
        if bad.size:
            expected = f"{dtype.name} values in [{dtype.lo}, {dtype.hi}]"
            return "range", expected, f"value {int(bad[0])}{where}"
    if dtype.kind is Kind.STR:
        for i, item in enumerate(values):
            try:
                item.decode("utf-8")
            except UnicodeDecodeError:
                text = repr(item)
                text = text if len(text) <= 40 else text[:37] + "..."
                return "utf8", "valid UTF-8", f"value {i}{where}: {text}"
    return None


def diagnose(feature: FeatureIR, item: tuple[int, bytes] | None) -> Diagnosis | None:
    """Why the parsed feature ``item`` (``None``: absent) did not decode, after its codec refused
    it: (kind, expected, found); ``None`` when no specific check names the reason (for raw and
    ragged tensors, whose values span several keys, the codec's message always says it)."""
    if feature.kind.name not in _LIST_FEATURES:
        return None
    if item is None or item[0] == 0:
        count = math.prod(d for d in feature.shape if d is not None)
        found = "no such key" if item is None else "a Feature with no list"
        return "missing", f"{feature.dtype.wire.list_name} with {_values(count)}", found
    return _check_list(feature, item[0], item[1], "")


def diagnose_steps(feature: FeatureIR, steps: list[tuple[int, bytes]] | None) -> Diagnosis | None:
    """Why the feature list ``steps`` (``None``: absent) did not decode, after its codec refused
    it: (kind, expected, found), or ``None``. A step with no list holds no values."""
    if steps is None:
        return "missing", f"a feature list of {feature.dtype.wire.list_name}", "no such key"
    for t, (kind, body) in enumerate(steps):
        if kind:
            problem = _check_list(feature, kind, body, f" in step {t}")
            if problem is not None:
                return problem
        elif feature.is_fixed:
            expected = _values(math.prod(d for d in feature.shape if d is not None))
            return "count", expected, f"a Feature with no list in step {t}"
    return None


@dataclass(slots=True)
class Validation:
    """What :func:`validate_files` checked and found.

    ``bad_records`` counts the records with at least one problem; ``problems`` every problem
    reported (skipped stretches included). ``stopped`` says the scan ended at ``max_errors``,
    ``interrupted`` that it ended on Ctrl-C. ``undeclared`` maps every key of the data that the
    record does not read (``(section, key)``, see :mod:`codegen.tools.anomalies`) to the first
    record with it. With ``strict``, ``usage`` counts how the records use every key, and
    ``anomalies`` and ``profiles`` are what :func:`~codegen.tools.anomalies.find_anomalies` and
    :func:`~codegen.tools.anomalies.key_profiles` make of it.
    """

    files: int = 0
    file_records: list[int] = field(default_factory=list)
    records: int = 0
    bad_records: int = 0
    problems: int = 0
    skipped_spans: int = 0
    skipped_bytes: int = 0
    stopped: bool = False
    interrupted: bool = False
    undeclared: dict[tuple[str, str], Where] = field(default_factory=dict)
    usage: KeyUsage | None = None
    anomalies: list[Anomaly] = field(default_factory=list)
    profiles: list[KeyProfile] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        """Whether nothing was found: no problem, and no anomaly when strict."""
        return self.problems == 0 and not self.anomalies

    def summary(self) -> str:
        """One line: ``4 records in 1 file: 3 problems in 2 records``; unreadable stretches and
        anomalies are counted apart (``1 unreadable stretch skipped (312 bytes)``)."""
        found = []
        in_records = self.problems - self.skipped_spans
        if in_records:
            found.append(f"{plural(in_records, 'problem')} in {plural(self.bad_records, 'record')}")
        if self.skipped_spans:
            stretches = plural(self.skipped_spans, "unreadable stretch", "unreadable stretches")
            found.append(f"{stretches} skipped ({plural(self.skipped_bytes, 'byte')})")
        if self.anomalies:
            found.append(f"{plural(len(self.anomalies), 'anomaly', 'anomalies')} (--strict)")
        if self.stopped:
            found.append(f"stopped after {plural(self.problems, 'problem')} (--max-errors)")
        if self.interrupted:
            found.append("interrupted")
        if not in_records and not self.skipped_spans and not self.anomalies:
            found.insert(0, "no problems")
        head = f"{plural(self.records, 'record')} in {plural(self.files, 'file')}"
        return f"{head}: {'; '.join(found)}"

    def undeclared_summary(self) -> str | None:
        """One line naming the keys of the data that the record does not read, or ``None``."""
        if not self.undeclared:
            return None
        names = [
            f"{'feature list ' if section == 'feature_lists' else ''}{key!r}"
            f" (first: {where.text()})"
            for (section, key), where in list(self.undeclared.items())[:5]
        ]
        more = len(self.undeclared) - len(names)
        listed = ", ".join(names) + (f" and {more} more" if more else "")
        what = plural(len(self.undeclared), "key")
        return f"{what} of the data not in the schema, passed over: {listed}; --strict counts them"

    def as_json(self) -> dict[str, Json]:
        """The counts as a JSON object."""
        return {
            "files": self.files,
            "records": self.records,
            "records_with_problems": self.bad_records,
            "problems": self.problems,
            "skipped_spans": self.skipped_spans,
            "skipped_bytes": self.skipped_bytes,
            "anomalies": len(self.anomalies),
            "stopped": self.stopped,
            "interrupted": self.interrupted,
        }

    def undeclared_json(self) -> list[Json]:
        """The undeclared keys as JSON objects: section, key and first record."""
        return [
            {"section": section, "key": key, "example": where.as_json()}
            for (section, key), where in self.undeclared.items()
        ]


class _Stop(Exception):
    """Raised inside the scan when ``max_errors`` problems have been reported."""


@dataclass(frozen=True, slots=True)
class _ColumnRule:
    """What every record's feature of one key must be for the feature to decode, checked over a
    batch's :class:`~codegen.runtime.codec.batch.KeyScan` at once: a list of ``wire``'s kind
    with ``count`` values (or a multiple of ``inner``), integers in ``[lo, hi]``, text that is
    UTF-8; an absent key or a Feature with no list where the codec reads them."""

    key: bytes
    wire: Wire
    count: int | None
    inner: int
    lo: int | None
    hi: int | None
    text: bool
    absent_ok: bool
    kindless_ok: bool

    def fits(self, scan: KeyScan) -> bool:
        kinds = scan.kinds
        listed = kinds == self.wire
        if not listed.all():
            absent = kinds == ABSENT
            kindless = kinds == 0
            if (absent.any() and not self.absent_ok) or (kindless.any() and not self.kindless_ok):
                return False
            if not (listed | absent | kindless).all():
                return False  # another list kind
        counts = scan.counts[listed]
        if self.count is not None:
            if np.any(counts != self.count):
                return False
        elif self.inner != 1 and np.any(counts % self.inner):
            return False
        if self.lo is not None and self.hi is not None and scan.ints.size:
            if scan.ints.min() < self.lo or scan.ints.max() > self.hi:
                return False
        if self.text and scan.blob is not None and scan.sizes is not None:
            return joined_utf8(scan.blob, scan.sizes)
        return True


def _column_rule(record: DynamicRecord, feature: FeatureIR, codec: Any) -> _ColumnRule | None:
    """The rule of a feature whose values are one list under its own key, or ``None``."""
    if feature.kind.name not in _LIST_FEATURES or any(d == 0 for d in feature.shape):
        return None
    key = feature.key.encode("utf-8")

    def reads(features: dict[bytes, tuple[int, bytes]]) -> bool:
        try:
            record.decode_feature(codec, features)
        except RecordError:
            return False
        return True

    dtype = feature.dtype
    ranged = dtype.wire is Wire.INT64 and dtype.lo is not None and dtype.lo > -(2**63)
    return _ColumnRule(
        key=key,
        wire=dtype.wire,
        count=math.prod(d for d in feature.shape if d is not None) if feature.is_fixed else None,
        inner=math.prod(d for d in feature.shape[1:] if d is not None),
        lo=dtype.lo if ranged else None,
        hi=dtype.hi if ranged else None,
        text=dtype.kind is Kind.STR,
        absent_ok=reads({}),
        kindless_ok=reads({key: (0, b"")}),
    )


class _Checker:
    """Checks the batches of a scan against ``record``: problems to ``report``, and into
    ``result`` the records counted, undeclared keys and (with ``strict``) the use of every key.

    A batch of Examples is scanned at once (``scan_keys``, which also names the keys the record
    does not read): when every feature is a plain list whose column fits its rule
    (:class:`_ColumnRule`), or else when the batch decodes
    (:class:`~codegen.runtime.codec.batch.BatchCodec`), none of its records has a problem. Any
    other batch, and every batch of SequenceExamples, is checked record by record
    (:func:`check_record`), which finds every problem of every feature.
    """

    def __init__(
        self,
        record: DynamicRecord,
        result: Validation,
        report: Callable[[Problem], None],
        strict: bool,
    ) -> None:
        self.record = record
        self.result = result
        self.report = report
        self.usage = KeyUsage() if strict else None
        result.usage = self.usage
        self.declared = declared_keys(record.record)
        self.context = "context" if record.is_sequence else "features"
        self.example = not record.is_sequence
        rules = [
            _column_rule(record, f, c)
            for f, c in zip(record.record.features, record.codecs, strict=True)
        ]
        self.rules = [rule for rule in rules if rule is not None]
        self.codec = (
            record.batch_codec if self.example and len(self.rules) < len(rules) else None
        )  # for the features no rule covers
        self.keys: list[bytes] = [
            key.encode("utf-8") for section, key in self.declared if section == self.context
        ]  # the keys scanned: declared ones, then (strict) the others found
        self.joined = tuple(rule.key for rule in self.rules if rule.text)
        self.per_file: dict[str, int] = {}
        """Records checked per file."""

    def check(self, batch: ScannedBatch) -> None:
        if self.example and self._batch_fits(batch):
            return
        for item in batch:
            self._count(batch, 1)
            self._check_one(item)

    def _batch_fits(self, batch: ScannedBatch) -> bool:
        """Checks a batch of Examples at once; ``False`` (nothing counted) when it must be
        checked record by record."""
        records = batch.records
        discovered: dict[bytes, int] = {}  # keys not scanned for: first record with each
        while True:
            unrequested: dict[bytes, int] = {}
            irregular: list[int] = []
            try:
                scans = scan_keys(
                    records, self.keys, self.joined, unrequested=unrequested, irregular=irregular
                )
            except RecordError:
                return False
            discovered.update(unrequested)
            if self.usage is None or not unrequested:
                break
            self.keys.extend(sorted(unrequested, key=unrequested.__getitem__))  # count them too
        by_key = dict(zip(self.keys, scans, strict=True))
        if not all(rule.fits(by_key[rule.key]) for rule in self.rules):
            return False
        if self.codec is not None:
            try:
                self.codec.decode(records)
            except RecordError:
                return False
        self._count(batch, len(records))
        for key, index in discovered.items():
            self._undeclared(self.context, key.decode("utf-8"), batch.item(index))
        if self.usage is not None:
            self._use_batch(batch, by_key, irregular)
        return True

    def _count(self, batch: ScannedBatch, records: int) -> None:
        self.per_file[batch.path] = self.per_file.get(batch.path, 0) + records
        self.result.records += records

    def _undeclared(self, section: str, key: str, item: ScannedRecord | Where) -> None:
        if (section, key) in self.declared or (section, key) in self.result.undeclared:
            return
        where = item if isinstance(item, Where) else Where(item.path, item.index, item.offset)
        self.result.undeclared[(section, key)] = where

    def _check_one(self, item: ScannedRecord) -> None:
        problems = check_record(self.record, item.path, item.index, item.offset, item.data)
        if problems:
            self.result.bad_records += 1
            for problem in problems:
                self.report(problem)
        # An Example record reads no feature lists: a strict check counts them too.
        parse = parse_record if self.usage is not None and self.example else self.record.parse
        try:
            features, lists = parse(item.data)
        except RecordError:
            return  # a malformed record: its problem is reported, its keys are unknown
        where = Where(item.path, item.index, item.offset)
        self._use_record(where, features, lists)

    def _use_record(
        self,
        where: Where,
        features: Mapping[bytes, tuple[int, bytes]],
        lists: Mapping[bytes, Sequence[tuple[int, bytes]]],
    ) -> None:
        for key in features:
            self._undeclared(self.context, key.decode("utf-8"), where)
        for key in lists:
            self._undeclared("feature_lists", key.decode("utf-8"), where)
        if self.usage is not None:
            counts, steps = record_counts(features, lists)
            self.usage.add_record(where, counts, steps, self.record.is_sequence)

    def _use_batch(
        self, batch: ScannedBatch, scans: Mapping[bytes, KeyScan], irregular: list[int]
    ) -> None:
        """Counts the use of every key by a batch of Examples; one holding SequenceExamples
        (feature lists an Example record does not read) record by record."""
        assert self.usage is not None
        if irregular:
            for item in batch:
                features, lists = parse_record(item.data)
                self._use_record(Where(item.path, item.index, item.offset), features, lists)
            return
        offsets = batch.offsets()

        def locate(i: int) -> Where:
            return Where(batch.path, batch.index + i, offsets[i])

        columns = {
            key.decode("utf-8"): (scan.kinds != ABSENT, scan.counts) for key, scan in scans.items()
        }
        self.usage.add_batch(len(batch), columns, locate)


def validate_files(
    record: DynamicRecord,
    paths: Sequence[str],
    on_problem: Callable[[Problem], None],
    *,
    max_errors: int | None = None,
    progress: TextIO | None = None,
    strict: bool = False,
    max_record_bytes: int | None = DEFAULT_MAX_RECORD_BYTES,
    compression: CompressionArg = "auto",
    storage_options: StorageOptions | None = None,
) -> Validation:
    """Check every record of ``paths`` against ``record``, handing each problem to ``on_problem``
    in file order, and return the counts, the keys the record does not read and, with
    ``strict``, the anomalies of how the records use the keys
    (:mod:`codegen.tools.anomalies`).

    Corrupt and truncated stretches are passed over and reported as problems. The scan stops after
    ``max_errors`` problems, and on Ctrl-C (``KeyboardInterrupt``), returning what was checked so
    far with ``stopped`` or ``interrupted`` set. ``progress`` is where a progress bar is drawn when
    it is a terminal. ``storage_options`` go to the fsspec store of files named by URL.
    """
    result = Validation()

    def report(problem: Problem) -> None:
        result.problems += 1
        scanner.clear_progress()
        on_problem(problem)
        if max_errors is not None and result.problems >= max_errors:
            raise _Stop

    scanner = Scanner(
        paths,
        on_skip=lambda span, index: report(span_problem(span, index)),
        progress=progress,
        compression=compression,
        storage_options=storage_options,
        label="validate",
        max_record_bytes=max_record_bytes,
    )
    checker = _Checker(record, result, report, strict)
    try:
        with scanner:
            for batch in scanner.batches():
                checker.check(batch)
    except _Stop:
        result.stopped = True
    except KeyboardInterrupt:
        result.interrupted = True
    result.files = scanner.files
    result.file_records = [checker.per_file.get(path, 0) for path in scanner.paths[: scanner.files]]
    result.skipped_spans = scanner.skipped_spans
    result.skipped_bytes = scanner.skipped_bytes
    if checker.usage is not None and not result.stopped and not result.interrupted:
        result.anomalies = find_anomalies(record, checker.usage)
        result.profiles = key_profiles(record, checker.usage)
    return result
