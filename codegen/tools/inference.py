"""Inferring a schema from records: what ``tfr-gen infer`` writes.

Per key, from an :class:`~codegen.tools.observe.Observation` of the records:

* dtype: ``int64`` for an Int64List, ``float32`` for a FloatList, and for a BytesList ``string``
  when every value is valid UTF-8 without NUL bytes (and there is at least one), else ``bytes``;
* layouts other tools write: a BytesList whose every value is a JPEG or PNG image is an encoded
  image (``encoding: jpeg``, ``png`` or ``image``); a one-value BytesList ``S`` holding the raw
  bytes of a small int32 array, whose products match the byte counts of a one-value BytesList
  ``X`` in the same records, is the image tutorials' layout (``X`` a raw uint8 tensor with
  ``shape_from: {key: S, dtype: int32, encoding: raw}``); ``<name>/ragged_flat_values`` with
  ``<name>/ragged_row_lengths_<i>`` is a ragged feature under TensorFlow Datasets' key names; a
  one-value BytesList ``X`` beside int64 scalars named ``...height``, ``...width`` (and
  optionally ``...channels``), whose byte count in every sampled record (the first
  :data:`~codegen.tools.observe.SAMPLES`) is their product (times one fixed channel count when
  there is no channels feature), is the Object Detection layout: ``X`` a raw uint8 tensor
  ``[null, null, C]`` with ``shape_from: [<height key>, <width key>]`` (keys sharing ``X``'s
  prefix preferred);
* shape: the same number ``n`` of values in every feature gives ``[]`` (``n == 1``) or ``[n]``;
  varying (or always zero) counts give ``[null]``. For a feature list the shape is one step's (a
  step with no list holds no values);
* ``optional: true`` for a fixed-shape feature some record lacks (a ``[null]`` feature that is
  absent reads as no values), and for a feature list some record lacks;
* names: the key itself when it is a valid feature name, else a snake_case name made from it
  (unique, never reserved) plus ``key:``.

Two warnings come with the schema (``InferredRecord.warnings``): a sample of fewer than
:data:`FEW_RECORDS` records fixes shapes (``[]``, ``[n]``) from too little data to trust, and int64
features whose values all fit a narrower integer dtype (``uint8`` ... ``int32``) are named with
it, as a suggestion: the schema keeps ``int64``, since more data may not fit.

Features are sorted by key. A key that holds different list kinds in different records cannot be
described and raises :class:`~codegen.errors.TfrGenError`. A key that never holds a list, and the
empty key (a schema cannot name it), are left out and listed in ``InferredRecord.left_out``.
SequenceExamples none of whose feature lists is left are described by an Example record: an
Example's features are read from the same field as a SequenceExample's context.
"""

from __future__ import annotations

import keyword
import math
import os
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import yaml

from codegen.dtypes import Wire
from codegen.errors import SchemaError, TfrGenError
from codegen.generator import naming
from codegen.generator.schema.loader import load_yaml
from codegen.tools.observe import KeyObservation, Observation

__all__ = [
    "FEW_RECORDS",
    "InferredFeature",
    "InferredRecord",
    "describe_sources",
    "feature_names",
    "infer_record",
    "record_name_for",
    "schema_yaml",
    "yaml_scalar",
]

HEADER = "# Inferred by 'tfr-gen infer': review the dtypes, shapes, names and optional features."
"""The comment that opens an inferred schema."""


@dataclass(frozen=True, slots=True)
class InferredFeature:
    """One inferred feature: attribute name, key, dtype name, shape and whether it is optional."""

    name: str
    key: str
    dtype: str
    shape: tuple[int | None, ...]
    optional: bool
    encoding: str = "list"
    shape_from: str | tuple[str, ...] | None = None
    """The key of the raw int32 array holding the shape (the tutorials' layout), or the keys of
    the int64 scalars holding each ``null`` dimension (the Object Detection layout)."""
    shape_list: bool = False
    """Whether the ``shape_from`` key holds the shape as an Int64List (TFDS's dynamic tensors)."""
    row_lengths_from: tuple[str, ...] = ()
    doc: str | None = None

    def flow(self) -> str:
        """The feature's fields on one line, as a schema writes them (``key``, ``shape`` and
        ``optional`` only when they are not the defaults):
        ``{key: Movie Ratings, dtype: float32, shape: [null]}``."""
        fields = [] if self.key == self.name else [f"key: {yaml_scalar(self.key)}"]
        fields.append(f"dtype: {self.dtype}")
        if self.shape:
            dims = ", ".join("null" if d is None else str(d) for d in self.shape)
            fields.append(f"shape: [{dims}]")
        if self.encoding != "list":
            fields.append(f"encoding: {self.encoding}")
        if isinstance(self.shape_from, tuple):
            keys = ", ".join(yaml_scalar(key) for key in self.shape_from)
            fields.append(f"shape_from: [{keys}]")
        elif self.shape_from is not None and self.shape_list:
            fields.append(f"shape_from: {{key: {yaml_scalar(self.shape_from)}}}")
        elif self.shape_from is not None:
            fields.append(
                f"shape_from: {{key: {yaml_scalar(self.shape_from)}, dtype: int32, encoding: raw}}"
            )
        if self.row_lengths_from:
            keys = ", ".join(yaml_scalar(key) for key in self.row_lengths_from)
            fields.append(f"row_lengths_from: [{keys}]")
        if self.optional:
            fields.append("optional: true")
        if self.doc is not None:
            fields.append(f"doc: {yaml_scalar(self.doc)}")
        return "{" + ", ".join(fields) + "}"


@dataclass(frozen=True, slots=True)
class InferredRecord:
    """An inferred record.

    For Example data (``is_sequence`` false) ``features`` are its features; for SequenceExample
    data they are the context and ``sequence`` holds the feature lists. ``left_out`` holds
    ``(key, reason)`` for each key the schema leaves out.
    """

    name: str
    doc: str
    is_sequence: bool
    features: tuple[InferredFeature, ...]
    sequence: tuple[InferredFeature, ...]
    left_out: tuple[tuple[str, str], ...]
    warnings: tuple[str, ...] = ()
    """What to review before trusting the schema (see the module docstring)."""


FEW_RECORDS = 20
"""Fewer records than this are too few to fix a feature's shape from."""

_NARROW_INTS = ("uint8", "int8", "uint16", "int16", "uint32", "int32")
_MAX_LISTED = 8


def _listed(items: Sequence[str]) -> str:
    shown = ", ".join(items[:_MAX_LISTED])
    return shown + (f" and {len(items) - _MAX_LISTED} more" if len(items) > _MAX_LISTED else "")


def _narrowest(seen: KeyObservation) -> str | None:
    """The narrowest integer dtype holding every value seen, when it is narrower than int64."""
    low, high = seen.low, seen.high
    if low is None or high is None:
        return None
    for dtype in _NARROW_INTS:
        info = np.iinfo(dtype)
        if info.min <= low and high <= info.max:
            return dtype
    return None


def _warnings(
    total: int, features: Sequence[tuple[InferredFeature, KeyObservation]]
) -> tuple[str, ...]:
    """The warnings of an inferred record (see the module docstring)."""
    warnings = []
    fixed = [f.name for f, _ in features if f.encoding == "list" and None not in f.shape]
    if total < FEW_RECORDS and fixed:
        warnings.append(
            f"only {total} record{'' if total == 1 else 's'} seen: the fixed shapes of"
            f" {_listed(fixed)} may vary in more data; infer from at least {FEW_RECORDS} records"
            " or review them"
        )
    narrow = []
    for feature, seen in features:
        if feature.dtype == "int64" and feature.encoding == "list" and not feature.row_lengths_from:
            dtype = _narrowest(seen)
            if dtype is not None:
                narrow.append(f"{feature.name} ({seen.low}..{seen.high}: {dtype})")
    if narrow:
        warnings.append(
            f"int64 features whose values fit a narrower dtype: {_listed(narrow)}; declare it"
            " where every value always will"
        )
    return tuple(warnings)


def _dtype(key: str, seen: KeyObservation, what: str) -> str:
    kinds = seen.list_kinds
    if len(kinds) > 1:
        held = " and ".join(f"{seen.kinds[kind]} {kind.list_name}" for kind in kinds)
        raise TfrGenError(
            f"{what} {key!r} holds {held} features; a schema needs one list kind per key"
        )
    if kinds[0] is Wire.INT64:
        return "int64"
    if kinds[0] is Wire.FLOAT:
        return "float32"
    return "string" if seen.utf8 and seen.values and not seen.nul else "bytes"


def _shape(seen: KeyObservation) -> tuple[int | None, ...]:
    low, high = seen.counts_min, seen.counts_max
    if low is not None and low == high and low > 0:
        return () if low == 1 else (low,)
    return (None,)


def _feature(
    name: str, key: str, seen: KeyObservation, what: str, *, absent: bool
) -> InferredFeature:
    """The feature of one key; ``absent`` says whether some record lacks it."""
    is_list = what == "feature list"
    # A step with no list holds no values, which only a variable step shape allows.
    shape = (None,) if is_list and seen.kinds[0] else _shape(seen)
    optional = absent and (None not in shape or is_list)
    return InferredFeature(name, key, _dtype(key, seen, what), shape, optional)


def _sorted(table: dict[str, KeyObservation]) -> list[tuple[str, KeyObservation]]:
    return sorted(table.items(), key=lambda item: item[0].encode("utf-8"))


def infer_record(observation: Observation, *, name: str, doc: str) -> InferredRecord:
    """The record that describes every observed record (rules in the module docstring).

    :class:`TfrGenError` when no schema can: a key with several list kinds, or no key with values
    at all.
    """
    problem = naming.record_name_problem(name)
    if problem is not None:
        raise TfrGenError(problem)
    total = observation.records
    left_out: list[tuple[str, str]] = []

    def describable(key: str, seen: KeyObservation) -> bool:
        if not key:
            left_out.append((key, "a schema cannot name the empty key"))
        elif not seen.listed:
            left_out.append((key, "it never holds a value list"))
        return bool(key) and seen.listed > 0

    kept = [(key, seen) for key, seen in _sorted(observation.features) if describable(key, seen)]
    steps = [
        (key, seen) for key, seen in _sorted(observation.feature_lists) if describable(key, seen)
    ]
    if not kept and not steps:
        raise TfrGenError("no feature of the records holds a value list; there is nothing to infer")
    # Without a feature list to describe, the context reads as an Example's features would.
    is_sequence = bool(steps)
    layouts = _Layouts(dict(kept), observation.sample_values())
    kept = [(key, seen) for key, seen in kept if key not in layouts.companions]
    names = feature_names([layouts.name_key(key) for key, _ in kept] + [key for key, _ in steps])
    features = tuple(
        layouts.feature(_feature(attribute, key, seen, "key", absent=seen.listed < total), seen)
        for attribute, (key, seen) in zip(names[: len(kept)], kept, strict=True)
    )
    sequence = tuple(
        _feature(attribute, key, seen, "feature list", absent=seen.records < total)
        for attribute, (key, seen) in zip(names[len(kept) :], steps, strict=True)
    )
    observed = [seen for _, seen in kept] + [seen for _, seen in steps]
    return InferredRecord(
        name=name,
        doc=doc,
        is_sequence=is_sequence,
        features=features,
        sequence=sequence,
        left_out=tuple(left_out),
        warnings=_warnings(total, list(zip((*features, *sequence), observed, strict=True))),
    )


_RAGGED_VALUES = "/ragged_flat_values"
_DIMENSION_WORDS = (("height", "h", "rows"), ("width", "w", "cols"), ("channels", "depth"))
"""The last words of the keys that hold an image's height, width and (optionally) channels."""


class _Layouts:
    """The layouts of other tools found among an Example's keys (see the module docstring)."""

    def __init__(
        self,
        table: dict[str, KeyObservation],
        samples: list[dict[str, tuple[int, Any]]] | None = None,
    ) -> None:
        self.table = table
        self.companions: set[str] = set()
        self.ragged: dict[str, tuple[str, ...]] = {}
        self.shapes: dict[str, str] = {}
        for key, seen in table.items():
            if key.endswith(_RAGGED_VALUES) and seen.list_kinds:
                self._find_ragged(key)
        for key, seen in table.items():
            if key not in self.companions and _single_bytes(seen):
                self._find_tutorial_shape(key, seen)
        self.dimensions: dict[str, tuple[tuple[str, ...], int | None]] = {}
        if samples:
            for key, seen in table.items():
                if (
                    key not in self.companions
                    and key not in self.shapes
                    and _single_bytes(seen)
                    and not seen.images
                ):
                    self._find_dimensions(key, seen, samples)

    def _find_dimensions(
        self, key: str, seen: KeyObservation, samples: list[dict[str, tuple[int, Any]]]
    ) -> None:
        """``key`` as raw uint8 pixels whose height, width (and channels) are int64 scalar
        features, when every sampled record's byte count is their product (times a fixed
        channel count when there is no channels feature)."""
        scalars = {
            other: values
            for other, values in self.table.items()
            if other not in self.companions
            and values.list_kinds == [Wire.INT64]
            and values.counts_min == values.counts_max == 1
            and values.records == seen.records
        }
        prefix = key.rsplit("/", 1)[0] + "/" if "/" in key else ""
        dims: list[str] = []
        for words in _DIMENSION_WORDS:
            found = sorted(
                (not other.startswith(prefix), other)
                for other in scalars
                if _words(other) and _words(other)[-1].lower() in words
            )
            if found:
                dims.append(found[0][1])
            elif words is not _DIMENSION_WORDS[-1]:
                return
        channels: set[int] = set()
        for row in samples:
            if key not in row:
                continue
            blob = row[key][1]
            product = math.prod(int(row[dim][1][0]) for dim in dims if dim in row)
            if not all(dim in row for dim in dims) or product <= 0 or len(blob[0]) % product:
                return
            channels.add(len(blob[0]) // product)
        if len(channels) != 1 or (len(dims) == 3 and channels != {1}):
            return
        self.dimensions[key] = (tuple(dims), None if len(dims) == 3 else channels.pop())
        self.companions.update(dims)

    def _find_ragged(self, key: str) -> None:
        prefix = key[: -len(_RAGGED_VALUES)]
        lengths: list[str] = []
        while (found := f"{prefix}/ragged_row_lengths_{len(lengths)}") in self.table:
            if self.table[found].list_kinds != [Wire.INT64]:
                return
            lengths.append(found)
        if lengths:
            self.ragged[key] = tuple(lengths)
            self.companions.update(lengths)

    def _find_tutorial_shape(self, key: str, seen: KeyObservation) -> None:
        products = _int32_products(seen)
        if products is None:
            return
        for other, values in self.table.items():
            if (
                other != key
                and other not in self.companions
                and other not in self.shapes
                and _single_bytes(values)
                and values.records == seen.records
                and values.lengths == products
            ):
                self.shapes[other] = key
                self.companions.add(key)
                return

    def name_key(self, key: str) -> str:
        """The key a feature's attribute name is made from (a ragged feature's own name)."""
        return key[: -len(_RAGGED_VALUES)] if key in self.ragged else key

    def feature(self, plain: InferredFeature, seen: KeyObservation) -> InferredFeature:
        """``plain`` as the layout it is part of describes it."""
        key = plain.key
        if key in self.ragged:
            shape = (None,) * (len(self.ragged[key]) + 1)
            return replace(plain, shape=shape, row_lengths_from=self.ragged[key], optional=False)
        if key in self.dimensions:
            dims, channels = self.dimensions[key]
            return replace(
                plain,
                dtype="uint8",
                shape=(None, None, channels),
                encoding="raw",
                shape_from=dims,
            )
        if key in self.shapes:
            rank = len(next(iter(self.table[self.shapes[key]].short))) // 4
            return replace(
                plain,
                dtype="uint8",
                shape=(None,) * rank,
                encoding="raw",
                shape_from=self.shapes[key],
            )
        if plain.dtype == "bytes" and seen.values and sum(seen.images.values()) == seen.values:
            forms = sorted(seen.images)
            encoding = forms[0] if len(forms) == 1 else "image"
            channels = None
            return replace(plain, dtype="uint8", shape=(None, None, channels), encoding=encoding)
        return plain


def _single_bytes(seen: KeyObservation) -> bool:
    """Whether the key holds one bytes value in every feature."""
    return seen.list_kinds == [Wire.BYTES] and seen.counts_min == seen.counts_max == 1


def _int32_products(seen: KeyObservation) -> Counter[int] | None:
    """How many values hold each element count, when every value is the raw bytes of a small int32 array of one
    length (a shape); else ``None``."""
    if sum(seen.short.values()) != seen.values or not seen.short:
        return None
    sizes = {len(value) for value in seen.short}
    if len(sizes) != 1 or (size := sizes.pop()) % 4 or not size:
        return None
    products: Counter[int] = Counter()
    for value, count in seen.short.items():
        dims = np.frombuffer(value, "<i4")
        if (dims < 0).any():
            return None
        products[int(np.prod(dims.astype(np.int64)))] += count
    return products


def _words(text: str) -> list[str]:
    """The ASCII words of ``text``, camelCase split: ``"myKey 2"`` -> ``["my", "Key", "2"]``."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    split = re.sub(r"([a-z0-9])([A-Z])|([A-Z])([A-Z][a-z])", r"\1\3_\2\4", ascii_text)
    return re.findall(r"[A-Za-z0-9]+", split)


def _snake_name(key: str) -> str:
    """A valid feature name made from ``key``: ``"Movie Ratings"`` -> ``"movie_ratings"``."""
    name = "_".join(_words(key)).lower() or "feature"
    if name[0].isdigit():
        name = "f_" + name
    if naming.feature_name_problem(name) is not None:  # a keyword, reserved or builtin name
        name += "_"
    return name


def feature_names(keys: Sequence[str]) -> list[str]:
    """One distinct, valid feature name per key, in order.

    A key that is a valid feature name is its own name (its first occurrence: a key may be both a
    context key and a feature-list key); the others get :func:`_snake_name`, numbered (``_2``,
    ``_3``...) when it is taken.
    """
    own = {key for key in keys if naming.feature_name_problem(key) is None}
    taken = set(own)
    names: list[str] = []
    for key in keys:
        if key in own:
            own.discard(key)
            names.append(key)
            continue
        base = name = _snake_name(key)
        number = 1
        while name in taken:
            number += 1
            name = f"{base}_{number}"
        taken.add(name)
        names.append(name)
    return names


def record_name_for(path: str) -> str:
    """A record name from a data file's name: ``customer_1.tfrecord`` -> ``Customer1``."""
    stem = os.path.basename(path).split(".")[0]
    name = "".join(word[:1].upper() + word[1:] for word in _words(stem)) or "Record"
    if name[0].isdigit():
        name = "Record" + name
    if keyword.iskeyword(name):
        name += "Record"
    return name


def describe_sources(paths: Sequence[str], records: int) -> str:
    """The doc line of an inferred record: ``Inferred from 3 records of customer.tfrecord.``"""
    names = [os.path.basename(path) for path in paths]
    shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more files" if len(names) > 3 else "")
    return f"Inferred from {records} record{'' if records == 1 else 's'} of {shown}."


def _reads_back(scalar: str, text: str) -> bool:
    """Whether the schema loader reads the YAML ``scalar`` as the string ``text``."""
    try:
        document = load_yaml(f"[{scalar}]", "<scalar>")
    except SchemaError:
        return False
    return document.data == [text] and not document.diagnostics


def yaml_scalar(text: str) -> str:
    """``text`` as a one-line YAML scalar that the schema loader reads back as exactly ``text``:
    plain or quoted as PyYAML writes it, or else double-quoted with every character outside
    printable ASCII escaped (PyYAML breaks lines at some characters, folds others such as U+0085
    into spaces, and leaves plain what YAML 1.2 reads as a number, such as ``0E0``)."""
    written: str = yaml.safe_dump(
        [text], default_flow_style=True, allow_unicode=True, width=math.inf
    )
    scalar = written.strip()[1:-1]  # inside "[...]"
    if not any(char in scalar for char in "\n\r\x85\u2028\u2029") and _reads_back(scalar, text):
        return scalar
    escaped = []
    for char in text:
        code = ord(char)
        if char in '"\\':
            escaped.append("\\" + char)
        elif 0x20 <= code < 0x7F:
            escaped.append(char)
        elif code <= 0xFF:
            escaped.append(f"\\x{code:02x}")
        elif code <= 0xFFFF:
            escaped.append(f"\\u{code:04x}")
        else:
            escaped.append(f"\\U{code:08x}")
    return '"' + "".join(escaped) + '"'


def _section(title: str, features: Iterable[InferredFeature]) -> list[str]:
    return [f"    {title}:"] + [f"      {f.name}: {f.flow()}" for f in features]


def schema_yaml(record: InferredRecord) -> str:
    """The schema file text of one inferred record, one line per feature."""
    lines = [HEADER, "version: 1", "records:", f"  {record.name}:"]
    lines.append(f"    doc: {yaml_scalar(record.doc)}")
    if not record.is_sequence:
        lines += _section("features", record.features)
    else:
        if record.features:
            lines += _section("context", record.features)
        lines += _section("sequence", record.sequence)
    return "\n".join(lines) + "\n"
