"""Checking records against a schema, feature by feature: what ``tfr-gen validate`` reports.

Each record is decoded the way the generated class decodes it (:mod:`codegen.tools.dynamic`), but
one feature at a time, so every feature that does not fit is reported, not only the first. A
:class:`Problem` names the file, the record index, the byte offset of the record's header, the key
and what was expected against what was found. Its ``kind`` is one of :data:`KINDS`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from codegen.dtypes import Kind, Wire
from codegen.errors import RecordError
from codegen.generator.ir import FeatureIR
from codegen.runtime.codec.wire import decode_bytes_list, decode_float_list, decode_int64_list
from codegen.runtime.io.skips import SkippedSpan
from codegen.tools.dynamic import DynamicRecord
from codegen.tools.scan import Scanner
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
    ``interrupted`` that it ended on Ctrl-C.
    """

    files: int = 0
    file_records: tuple[int, ...] = ()
    records: int = 0
    bad_records: int = 0
    problems: int = 0
    skipped_spans: int = 0
    skipped_bytes: int = 0
    stopped: bool = False
    interrupted: bool = False

    @property
    def clean(self) -> bool:
        """Whether nothing was found."""
        return self.problems == 0

    def summary(self) -> str:
        """One line: ``4 records in 1 file: 3 problems in 2 records``; unreadable stretches are
        counted apart (``1 unreadable stretch skipped (312 bytes)``)."""
        found = []
        in_records = self.problems - self.skipped_spans
        if in_records:
            found.append(f"{plural(in_records, 'problem')} in {plural(self.bad_records, 'record')}")
        if self.skipped_spans:
            stretches = plural(self.skipped_spans, "unreadable stretch", "unreadable stretches")
            found.append(f"{stretches} skipped ({plural(self.skipped_bytes, 'byte')})")
        if self.stopped:
            found.append(f"stopped after {plural(self.problems, 'problem')} (--max-errors)")
        if self.interrupted:
            found.append("interrupted")
        if not in_records and not self.skipped_spans:
            found.insert(0, "no problems")
        head = f"{plural(self.records, 'record')} in {plural(self.files, 'file')}"
        return f"{head}: {'; '.join(found)}"

    def as_json(self) -> dict[str, Json]:
        """The counts as a JSON object."""
        return {
            "files": self.files,
            "records": self.records,
            "records_with_problems": self.bad_records,
            "problems": self.problems,
            "skipped_spans": self.skipped_spans,
            "skipped_bytes": self.skipped_bytes,
            "stopped": self.stopped,
            "interrupted": self.interrupted,
        }


class _Stop(Exception):
    """Raised inside the scan when ``max_errors`` problems have been reported."""


def validate_files(
    record: DynamicRecord,
    paths: Sequence[str],
    on_problem: Callable[[Problem], None],
    *,
    max_errors: int | None = None,
    progress: TextIO | None = None,
) -> Validation:
    """Check every record of ``paths`` against ``record``, handing each problem to ``on_problem``
    in file order, and return the counts.

    Corrupt and truncated stretches are passed over and reported as problems. The scan stops after
    ``max_errors`` problems, and on Ctrl-C (``KeyboardInterrupt``), returning what was checked so
    far with ``stopped`` or ``interrupted`` set. ``progress`` is where a progress bar is drawn when
    it is a terminal.
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
        label="validate",
    )
    try:
        with scanner:
            for item in scanner:
                problems = check_record(record, item.path, item.index, item.offset, item.data)
                if problems:
                    result.bad_records += 1
                    for problem in problems:
                        report(problem)
    except _Stop:
        result.stopped = True
    except KeyboardInterrupt:
        result.interrupted = True
    result.files = scanner.files
    result.file_records = tuple(scanner.file_records)
    result.records = scanner.records
    result.skipped_spans = scanner.skipped_spans
    result.skipped_bytes = scanner.skipped_bytes
    return result
