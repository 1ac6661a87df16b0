"""JSON lines of many records at once: what ``tfr-gen cat --format json`` prints, built column by
column.

The text is exactly what rendering each record alone gives (:func:`codegen.tools.values`'s JSON
forms through ``json.dumps(..., ensure_ascii=False)``), but the work is done per column of a batch:
the values of a key are turned into text together (integers by ``str``, float32 values once per
distinct value, plain ASCII strings straight from their joined bytes), joined into one text per
record with separators placed by numpy, and the lines are put together by one ``str.join`` per
group of records that hold the same keys.

:meth:`JsonLines.raw` renders Examples without a schema (``{"key": {"int64_list": [...]}}``),
:meth:`JsonLines.decoded` the columns of a :class:`~codegen.runtime.codec.batch.BatchCodec`
(``{"attribute": value}``). A batch they cannot render (a SequenceExample, a record that does not
parse) is left to per-record rendering: :meth:`JsonLines.raw` returns ``None`` for it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from json.encoder import encode_basestring
from typing import Any

import numpy as np
import numpy.typing as npt

from codegen.dtypes import Wire
from codegen.errors import RecordError
from codegen.runtime.codec.batch import ABSENT, KeyScan, scan_keys
from codegen.runtime.codec.columns import Masked, Ragged
from codegen.tools.values import bytes_json, float32_json, value_json

__all__ = ["FloatTexts", "JsonLines"]

_END = "\x00"
"""Ends each record's text in a joined run (a character no JSON text holds unescaped)."""


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False)


_SMALL_INTS = np.array([str(n) for n in range(1 << 12)], dtype=object)
"""The texts of the integers below 4096 (ages, labels, counts), looked up rather than made."""


def _int_texts(values: npt.NDArray[np.integer[Any]]) -> list[str]:
    if values.size and 0 <= values.min() and values.max() < len(_SMALL_INTS):
        texts: list[str] = _SMALL_INTS[values].tolist()
        return texts
    return list(map(str, values.tolist()))


class FloatTexts:
    """The JSON text of float32 values, each distinct bit pattern made once and remembered (up to
    :attr:`LIMIT` of them) in a sorted table that a batch is looked up in with numpy."""

    LIMIT = 1 << 16

    def __init__(self) -> None:
        self._patterns = np.empty(0, np.uint32)
        self._texts = np.empty(0, dtype=object)

    def __call__(self, values: npt.NDArray[np.floating[Any]]) -> list[str]:
        bits = values.astype(np.float32, copy=False).view(np.uint32).reshape(-1)
        at = self._find(bits)
        if at is None:
            self._learn(bits)
            at = self._find(bits)
            assert at is not None
        texts: list[str] = self._texts[at].tolist()
        return texts

    def _find(self, bits: npt.NDArray[np.uint32]) -> npt.NDArray[np.intp] | None:
        """Where each pattern is in the table, or ``None`` when one is not."""
        patterns = self._patterns
        if not patterns.size:
            return None if bits.size else np.empty(0, np.intp)
        at = np.minimum(np.searchsorted(patterns, bits), patterns.size - 1)
        return at if bool(np.all(patterns[at] == bits)) else None

    def _learn(self, bits: npt.NDArray[np.uint32]) -> None:
        """Adds the patterns of ``bits`` (starting afresh when the table is full)."""
        if self._patterns.size > self.LIMIT:
            self._patterns, self._texts = self._patterns[:0], self._texts[:0]
        new = np.setdiff1d(bits, self._patterns)
        texts = []
        for value in new.view(np.float32).tolist():
            number = float32_json(value)
            texts.append(repr(number) if isinstance(number, float) else _json(number))
        patterns = np.concatenate([self._patterns, new])
        order = np.argsort(patterns, kind="stable")
        self._patterns = patterns[order]
        self._texts = np.concatenate([self._texts, np.array(texts, dtype=object)])[order]


def _bytes_texts(values: Sequence[bytes]) -> list[str]:
    try:
        return list(map(encode_basestring, map(bytes.decode, values)))
    except UnicodeDecodeError:
        return [_json(bytes_json(value)) for value in values]


def _strings(values: list[Any]) -> list[str] | None:
    """The JSON texts of a column of ``str`` or of ``bytes`` values (as a batch decodes them),
    or ``None`` for anything else."""
    try:
        return list(map(encode_basestring, values))
    except TypeError:
        pass
    try:
        return _bytes_texts(values)
    except (TypeError, AttributeError):
        return None


_ESCAPED = re.compile('[\x00-\x1f"\\\\]')
"""The characters a JSON string escapes (``ensure_ascii=False``)."""


def _plain_texts(values: list[Any]) -> bool:
    """Whether ``values`` are ``str`` whose JSON strings are their text between quotes."""
    try:
        return _ESCAPED.search("".join(values)) is None
    except TypeError:
        return False


def _runs(
    texts: Sequence[str],
    counts: npt.NDArray[np.int64],
    head: str,
    tail: str,
    empty: str,
    separator: str = ", ",
) -> list[str]:
    """Per record: ``head + separator.join(its texts) + tail``, or ``empty`` when it has none;
    the records' texts follow one another in ``texts``, ``counts[i]`` of them for record ``i``."""
    held = counts > 0
    if not held.any():
        return [empty] * len(counts)
    pieces = [separator] * (2 * len(texts))  # text, separator, text, ...
    pieces[::2] = texts
    closing = tail + _END + head
    for at in (2 * np.cumsum(counts[held]) - 1).tolist():  # after each record's last text
        pieces[at] = closing
    runs = (head + "".join(pieces)).split(_END)[:-1]
    if held.all():
        return runs
    return _scatter(len(counts), empty, held, runs)


def _scatter(size: int, fill: str, mask: npt.NDArray[np.bool_], values: list[str]) -> list[str]:
    """``size`` texts: ``values`` where ``mask`` is set, in order, ``fill`` elsewhere."""
    result = [fill] * size
    for at, value in zip(np.flatnonzero(mask).tolist(), values, strict=True):
        result[at] = value
    return result


def _plain_ascii(data: bytes) -> bool:
    """Whether the JSON string of each value in ``data`` is its bytes between quotes: ASCII
    without ``"``, ``\\`` or control characters."""
    return (
        data.isascii()
        and b'"' not in data
        and b"\\" not in data
        and (not data or int(np.frombuffer(data, np.uint8).min()) >= 0x20)
    )


def _blob_runs(
    blob: memoryview, sizes: npt.NDArray[np.int64], counts: npt.NDArray[np.int64], head: str,
    tail: str, empty: str,
) -> list[str]:  # fmt: skip
    """:func:`_runs` of the JSON strings of byte strings joined in ``blob`` (``sizes``: the size
    of each): when the bytes are plain ASCII (:func:`_plain_ascii`), each value is its bytes
    between quotes, and the separators are put in the whole at once."""
    data = bytes(blob)
    if not _plain_ascii(data):
        return _runs(_bytes_texts(_split(data, sizes)), counts, head, tail, empty)
    held = counts > 0
    if not held.any():
        return [empty] * len(counts)
    # Mark the end of each value in the bytes (neither mark can be in plain ASCII): \x01 between
    # the values of a record, \x00 after its last; then the marks become the JSON separators.
    ends = np.cumsum(sizes)
    marks = np.ones(len(sizes), np.uint8)
    marks[np.cumsum(counts[held]) - 1] = 0
    marked = np.insert(np.frombuffer(data, np.uint8), ends, marks).tobytes().decode("ascii")
    text = marked.replace("\x01", '", "').replace(_END, '"' + tail + _END + head + '"')
    runs = (head + '"' + text).split(_END)[:-1]
    return runs if held.all() else _scatter(len(counts), empty, held, runs)


@dataclass(frozen=True, slots=True)
class _Column:
    """The JSON text of one value per record, as ``head + texts[i] + tail``."""

    texts: list[str]
    head: str = ""
    tail: str = ""


_LISTS = {Wire.INT64: "int64_list", Wire.FLOAT: "float_list", Wire.BYTES: "bytes_list"}


def _single_values(scan: KeyScan, wire: Wire, floats: FloatTexts) -> _Column | None:
    """The column of a key that holds one value of ``wire``'s kind in every record: the values'
    texts, the list around them in ``head`` and ``tail``; ``None`` for another key."""
    if not (scan.kinds == wire).all() or not (scan.counts == 1).all():
        return None
    head, tail = f'{{"{_LISTS[wire]}": [', "]}"
    if wire is Wire.INT64:
        return _Column(_int_texts(scan.ints), head, tail)
    if wire is Wire.FLOAT:
        return _Column(floats(scan.floats), head, tail)
    assert scan.blob is not None and scan.sizes is not None
    data = bytes(scan.blob)
    if not _plain_ascii(data):
        return _Column(_bytes_texts(_split(data, scan.sizes)), head, tail)
    ends = np.cumsum(scan.sizes)
    marked = np.insert(np.frombuffer(data, np.uint8), ends, np.uint8(0)).tobytes()
    return _Column(marked.decode("ascii").split(_END)[:-1], head + '"', '"' + tail)


def _feature_texts(scan: KeyScan, floats: FloatTexts) -> _Column:
    """The JSON text of each record's ``Feature`` of one key (``{}`` for one with no list, ``""``
    for an absent key), as :func:`codegen.tools.values.feature_json` gives it."""
    kinds = scan.kinds
    result: list[str] | None = None
    for wire, name in _LISTS.items():
        mask = kinds == wire
        if not mask.any():
            continue
        single = _single_values(scan, wire, floats)
        if single is not None:
            return single
        counts = scan.counts[mask]
        head, tail, empty = f'{{"{name}": [', "]}", f'{{"{name}": []}}'
        if wire is Wire.INT64:
            texts = _runs(_int_texts(scan.ints), counts, head, tail, empty)
        elif wire is Wire.FLOAT:
            texts = _runs(floats(scan.floats), counts, head, tail, empty)
        else:
            assert scan.blob is not None and scan.sizes is not None
            texts = _blob_runs(scan.blob, scan.sizes, counts, head, tail, empty)
        if result is None and mask.all():
            return _Column(texts)  # the usual key: one list kind in every record
        if result is None:
            result = _scatter(len(kinds), "", kinds == 0, ["{}"] * int(np.sum(kinds == 0)))
        for at, text in zip(np.flatnonzero(mask).tolist(), texts, strict=True):
            result[at] = text
    if result is None:
        result = ["{}" if k == 0 else "" for k in kinds.tolist()]
    return _Column(result)


def _split(data: bytes, sizes: npt.NDArray[np.int64]) -> list[bytes]:
    ends = np.cumsum(sizes).tolist()
    return [data[a:b] for a, b in zip([0, *ends[:-1]], ends, strict=True)]


def _lines(names: Sequence[str], columns: Sequence[_Column], present: npt.NDArray[np.bool_]) -> str:
    """The lines (``"\\n"`` after each) of the records: ``{"name": text, ...}`` of the present
    ``columns`` of each record; ``present[k, i]`` says whether record ``i`` has column ``k``."""
    size = int(present.shape[1])
    if not size or not names:
        return "{}\n" * size
    quoted = [_json(name) for name in names]
    if present.all():  # the usual batch: every record has every key
        return _group_lines(quoted, columns, size)
    patterns, group = np.unique(present.T, axis=0, return_inverse=True)
    group = group.reshape(-1)
    lines = np.empty(size, dtype=object)
    arrays = [np.array(column.texts, dtype=object) for column in columns]
    for number, pattern in enumerate(patterns):
        members = np.flatnonzero(group == number)
        used = [k for k in range(len(names)) if pattern[k]]
        subset = [
            _Column(arrays[k][members].tolist(), columns[k].head, columns[k].tail) for k in used
        ]
        text = _group_lines([quoted[k] for k in used], subset, len(members))
        lines[members] = [line + "\n" for line in text.split("\n")[:-1]]
    joined: str = "".join(lines.tolist())
    return joined


def _group_lines(quoted: Sequence[str], columns: Sequence[_Column], size: int) -> str:
    """The lines of ``size`` records that all have the columns: ``{"name": text, ...}\\n``."""
    if not columns:
        return "{}\n" * size
    width = 2 * len(columns) + 1
    pieces = [""] * width * size
    before = "{"
    for k, (name, column) in enumerate(zip(quoted, columns, strict=True)):
        pieces[2 * k :: width] = [before + name + ": " + column.head] * size
        pieces[2 * k + 1 :: width] = column.texts
        before = column.tail + ", "
    pieces[width - 1 :: width] = [columns[-1].tail + "}\n"] * size
    return "".join(pieces)


class JsonLines:
    """Renders batches of records as JSON lines, remembering across batches the keys seen
    (:meth:`raw` scans a batch for them, and again when it holds others) and the text of float
    values."""

    def __init__(self) -> None:
        self.keys: list[bytes] = []
        self.floats: dict[object, FloatTexts] = {}
        """A table of float texts per key or column (small tables are quick to look up in)."""

    def raw(self, records: Sequence[bytes]) -> str | None:
        """The JSON lines of Examples without a schema (keys in byte order), or ``None`` when a
        record is not an Example that parses (the caller renders those batches record by
        record)."""
        keys = self.keys
        try:
            while True:
                unrequested: dict[bytes, int] = {}
                irregular: list[int] = []
                scans = scan_keys(records, keys, keys, unrequested=unrequested, irregular=irregular)
                if irregular:
                    return None
                if not unrequested:
                    break
                keys.extend(unrequested)
        except RecordError:
            return None
        order = sorted(range(len(keys)), key=keys.__getitem__)
        held = [k for k in order if np.any(scans[k].kinds != ABSENT)]
        names = [keys[k].decode("utf-8") for k in held]
        columns = [_feature_texts(scans[k], self._floats(keys[k])) for k in held]
        present = np.array([scans[k].kinds != ABSENT for k in held], dtype=np.bool_)
        return _lines(names, columns, present.reshape(len(held), len(records)))

    def decoded(
        self,
        names: Sequence[str],
        columns: Sequence[Any],
        rows: Callable[[], list[tuple[Any, ...]]],
    ) -> str:
        """The JSON lines of a decoded batch: ``{"name": value, ...}`` per record, attributes in
        ``names`` order; ``rows()`` gives each record's values for the columns whose layout is
        rendered record by record (nested lists, arrays of several dimensions)."""
        size = len(columns[0]) if columns else 0
        texts: list[_Column] = []
        per_record: list[tuple[Any, ...]] | None = None
        for k, column in enumerate(columns):
            rendered = self._value_texts(column, size, self._floats(k))
            if rendered is None:
                per_record = rows() if per_record is None else per_record
                rendered = [_json(value_json(row[k])) for row in per_record]
            texts.append(_Column(rendered))
        return _lines(names, texts, np.ones((len(names), size), dtype=np.bool_))

    def _floats(self, column: object) -> FloatTexts:
        table = self.floats.get(column)
        if table is None:
            table = self.floats[column] = FloatTexts()
        return table

    def _value_texts(self, column: Any, size: int, floats: FloatTexts) -> list[str] | None:
        """The JSON text of each record's value in a column of a decoded batch, or ``None`` for
        a layout rendered record by record."""
        if isinstance(column, Masked):
            inner = self._value_texts(column.values, size, floats)
            if inner is None:
                return None
            present = np.asarray(column.present, dtype=np.bool_).tolist()
            return [text if held else "null" for text, held in zip(inner, present, strict=True)]
        if isinstance(column, np.ndarray) and column.ndim == 1:
            return _scalars(column, floats)
        if isinstance(column, Ragged) and column.row_splits.ndim == 1:
            values = column.values
            counts = np.diff(column.row_splits).astype(np.int64)
            if isinstance(values, np.ndarray) and values.ndim == 1:
                return _runs(_scalars(values, floats), counts, "[", "]", "[]")
            if isinstance(values, list):
                if _plain_texts(values):  # each JSON string is the text between quotes
                    return _runs(values, counts, '["', '"]', "[]", '", "')
                texts = _strings(values)
                return None if texts is None else _runs(texts, counts, "[", "]", "[]")
            return None
        if isinstance(column, list) and len(column) == size:
            return _strings(column)
        return None


def _scalars(values: npt.NDArray[Any], floats: FloatTexts) -> list[str]:
    """The JSON texts of the numbers or booleans of a 1-D array."""
    kind = values.dtype.kind
    if kind == "b":
        texts: list[str] = np.where(values, "true", "false").tolist()
        return texts
    if kind == "f":
        return floats(values)
    return _int_texts(values)
