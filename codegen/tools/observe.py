"""What the records of a data set hold, key by key, without a schema (for ``infer``, ``stats``).

Every record is read as a ``tf.train.SequenceExample`` (an ``Example`` reads as one whose context
is its ``features`` and that has no feature lists). :class:`Observation` keeps, per context key and
per feature-list key, a :class:`KeyObservation`: in how many records the key appears, which list
kinds it holds, how many values per feature, numeric ranges and sums, and for bytes whether all are
UTF-8 and how many there are of each length.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from codegen.dtypes import Wire
from codegen.errors import RecordError
from codegen.runtime.accel import speedups
from codegen.runtime.codec.batch import ABSENT, KeyScan, scan_keys
from codegen.runtime.codec.images import SIGNATURES, image_format
from codegen.runtime.codec.wire import (
    decode_bytes_list,
    decode_float_list,
    decode_int64_list,
    parse_example,
    parse_sequence_example,
)
from codegen.tools.profile import KeyDetail, tally

__all__ = [
    "SAMPLES",
    "SAMPLE_BYTES",
    "KeyObservation",
    "Observation",
    "joined_utf8",
    "parse_record",
]

FeatureValue = tuple[int, bytes]
"""A parsed ``Feature``: (list kind, list body), as the wire parser gives it (kind 0: no list)."""
Values = list[bytes] | NDArray[np.int64] | NDArray[np.float32] | None
"""The decoded values of one ``Feature``: bytes, numbers, or ``None`` when it holds no list."""

_BATCH = 1 << 16
"""How many numbers of a key wait before they are reduced together."""
_BYTES, _INT64 = int(Wire.BYTES), int(Wire.INT64)
"""The least and greatest list kinds, as plain numbers for numpy (an enum member costs more)."""


def parse_record(
    data: bytes,
) -> tuple[dict[bytes, FeatureValue], dict[bytes, list[FeatureValue]]]:
    """The features (an Example's, or a SequenceExample's context) and feature lists of a record.

    Bytes with feature lists are a SequenceExample; others (bytes that parse as an Example but not
    as a SequenceExample too) are an Example, read by the Example's rules. Bytes that parse as
    neither raise the Example parser's :class:`RecordError`.
    """
    try:
        context, lists = parse_sequence_example(data)
    except RecordError:
        return parse_example(data), {}
    if lists:
        return context, lists
    return parse_example(data), {}


@dataclass(slots=True)
class KeyObservation:
    """What one key held across the records seen.

    ``records`` counts the records the key appears in; ``kinds`` how many features of each list
    kind it held (kind 0: a ``Feature`` with no list); ``counts_min``/``counts_max`` the fewest and
    most values in one feature with a list, ``values`` all of them. Numbers add to ``low``,
    ``high``, ``total``, ``numbers`` and ``nans`` (NaN is left out of the others); bytes to
    ``lengths`` (value length -> how many), ``utf8`` (whether every one is valid UTF-8), ``nul``
    (whether one holds a NUL byte), ``images`` (how many start as a JPEG or PNG image, by format) and
    ``short`` (the values of at most 16 bytes, up to 1024 distinct ones). For a
    feature-list key every step is a feature, and ``steps_min``/``steps_max`` are the fewest and
    most steps of one list. ``detail``, when set, counts the distributions too.
    """

    records: int = 0
    kinds: Counter[int] = field(default_factory=Counter)
    counts_min: int | None = None
    counts_max: int | None = None
    values: int = 0
    utf8: bool = True
    nul: bool = False
    images: Counter[str] = field(default_factory=Counter)
    _short: Counter[bytes] = field(default_factory=Counter, init=False, repr=False)
    lengths: Counter[int] = field(default_factory=Counter)
    steps_min: int | None = None
    steps_max: int | None = None
    detail: KeyDetail | None = None
    # Numbers wait in _pending and are reduced in batches: numpy costs little per value but much
    # per call, and most features hold a few values.
    _pending: list[NDArray[Any]] = field(default_factory=list, init=False, repr=False)
    _pending_size: int = field(default=0, init=False, repr=False)
    # Extremes per number kind ("i" int64, "f" float32), so that they do not depend on which
    # numbers were reduced together.
    _lows: dict[str, float | int] = field(default_factory=dict, init=False, repr=False)
    _highs: dict[str, float | int] = field(default_factory=dict, init=False, repr=False)
    _total: float = field(default=0.0, init=False, repr=False)
    _numbers: int = field(default=0, init=False, repr=False)
    _nans: int = field(default=0, init=False, repr=False)
    # Once ``short`` is full (its values no longer change): its values, by probe, and how many
    # more of each batches have held since ``short`` was last read.
    _kept: KeptValues | None = field(default=None, init=False, repr=False)
    _kept_counts: NDArray[np.int64] | None = field(default=None, init=False, repr=False)

    @property
    def short(self) -> Counter[bytes]:
        """The values of at most 16 bytes, up to 1024 distinct ones, with how many there were."""
        counts, self._kept_counts = self._kept_counts, None
        if counts is not None and self._kept is not None:
            found = np.flatnonzero(counts)
            short, kept = self._short, self._kept.values
            for i, count in zip(found.tolist(), counts[found].tolist(), strict=True):
                short[kept[i]] += count
        return self._short

    @property
    def low(self) -> float | int | None:
        """The smallest number (NaN aside), or ``None`` when there was none."""
        self._reduce()
        return min(self._lows.values()) if self._lows else None

    @property
    def high(self) -> float | int | None:
        """The largest number (NaN aside), or ``None`` when there was none."""
        self._reduce()
        return max(self._highs.values()) if self._highs else None

    @property
    def total(self) -> float:
        """The sum of the numbers (NaN aside)."""
        self._reduce()
        return self._total

    @property
    def mean(self) -> float | None:
        """The mean of the numbers (NaN aside); ``None`` when there were none, or when it is
        undefined (both infinities among them)."""
        self._reduce()
        if not self._numbers or math.isnan(self._total):
            return None
        return self._total / self._numbers

    @property
    def numbers(self) -> int:
        """How many numbers there were (NaN aside)."""
        self._reduce()
        return self._numbers

    @property
    def nans(self) -> int:
        """How many NaN values there were."""
        self._reduce()
        return self._nans

    @property
    def listed(self) -> int:
        """How many features held a list (of any kind)."""
        return sum(n for kind, n in self.kinds.items() if kind)

    @property
    def list_kinds(self) -> list[Wire]:
        """The list kinds held, most frequent first."""
        return [Wire(kind) for kind, _ in self.kinds.most_common() if kind]

    def add_feature(self, kind: int, values: Values) -> None:
        """Count one ``Feature``: its list kind and decoded values (``None`` for kind 0)."""
        self.kinds[kind] += 1
        if self.detail is not None:
            self.detail.add_values(values)
        if values is None:
            return
        if isinstance(values, list):
            count = len(values)
            self.lengths.update(len(item) for item in values)
            if self.utf8 and not _all_utf8(values):
                self.utf8 = False
            self._add_bytes(values)
        else:
            count = int(values.size)
            self._add_numbers(values)
        self.values += count
        self.counts_min = count if self.counts_min is None else min(self.counts_min, count)
        self.counts_max = count if self.counts_max is None else max(self.counts_max, count)

    def _add_numbers(self, array: NDArray[Any]) -> None:
        self._pending.append(array)
        self._pending_size += array.size
        if self._pending_size >= _BATCH:
            self._reduce()

    def _reduce(self) -> None:
        """Fold the pending numbers into the running extremes, sum and counts, ints and floats
        apart (an empty array adds nothing, whatever its dtype)."""
        if not self._pending:
            return
        pending = self._pending[:]
        self._pending.clear()
        self._pending_size = 0
        for kind in ("i", "f"):
            arrays = [a for a in pending if a.dtype.kind == kind and a.size]
            if arrays:
                self._fold(kind, arrays[0] if len(arrays) == 1 else np.concatenate(arrays))

    def _fold(self, kind: str, array: NDArray[Any]) -> None:
        if kind == "f":
            nan = np.isnan(array)
            nans = int(nan.sum())
            if nans:
                self._nans += nans
                array = array[~nan]
        if not array.size:
            return
        low, high = array.min().item(), array.max().item()
        self._lows[kind] = min(self._lows.get(kind, low), low)
        self._highs[kind] = max(self._highs.get(kind, high), high)
        with np.errstate(invalid="ignore", over="ignore"):  # inf + -inf: a NaN mean, no warning
            self._total += float(array.sum(dtype=np.float64))
        self._numbers += int(array.size)

    def add_scan(self, scan: KeyScan) -> int:
        """Count the features of one key over a batch of records, as :meth:`add_feature` would
        one by one (the bytes values joined, as ``scan_keys`` gives them for a ``joined`` key);
        returns how many of the records have the key."""
        kinds = scan.kinds
        held = kinds[kinds != ABSENT]
        present = int(held.size)
        if not present:
            return 0
        self.records += present
        listed = scan.counts[(kinds >= _BYTES) & (kinds <= _INT64)]
        if self.detail is not None:
            self.detail.add_scan(scan, listed)
        found, first = np.unique(held, return_index=True)
        for kind in found[np.argsort(first)].tolist():  # in the order the records show them
            self.kinds[kind] += int(np.count_nonzero(held == kind))
        if listed.size:
            self.values += int(listed.sum())
            low, high = int(listed.min()), int(listed.max())
            self.counts_min = low if self.counts_min is None else min(self.counts_min, low)
            self.counts_max = high if self.counts_max is None else max(self.counts_max, high)
        if scan.ints.size:
            self._add_numbers(scan.ints)
        if scan.floats.size:
            self._add_numbers(scan.floats)
        if scan.sizes is not None and scan.sizes.size and scan.blob is not None:
            self.lengths.update(tally(scan.sizes))
            if self.utf8 and not joined_utf8(scan.blob, scan.sizes):
                self.utf8 = False
            self._add_joined(scan.blob, scan.sizes)
        return present

    def _add_bytes(self, values: Sequence[bytes]) -> None:
        """Note NUL bytes, image signatures and short values (see the class docstring)."""
        for value in values:
            if not self.nul and b"\0" in value:
                self.nul = True
            form = image_format(value)
            if form is not None:
                self.images[form] += 1
        self._add_short([value for value in values if len(value) <= _SHORT])

    def _add_joined(self, blob: memoryview, sizes: NDArray[np.int64]) -> None:
        """:meth:`_add_bytes` of the values joined in ``blob`` (``sizes`` their lengths), over all
        of them at once; once the short values kept are chosen, they are counted in place and
        only the few whose probe they share become ``bytes``."""
        if len(self._short) >= _SHORT_KEPT and self._kept is None:
            self._kept = KeptValues.of(list(self._short))
        nul, images, picked, counts = joined_traits(blob, sizes, self._kept)
        if nul:
            self.nul = True
        for form, seen in zip(SIGNATURES, images, strict=True):
            if seen:
                self.images[form] += seen
        if self._kept is not None:  # (added to short when it is read)
            if self._kept_counts is None:
                self._kept_counts = counts.copy()
            else:
                self._kept_counts += counts
        if not picked.size:
            return
        ends = np.cumsum(sizes)[picked]
        data = bytes(blob)
        self._add_short(
            list(map(data.__getitem__, map(slice, (ends - sizes[picked]).tolist(), ends.tolist())))
        )

    def _add_short(self, values: list[bytes]) -> None:
        """Count short values: those already counted, and new ones while fewer than the limit are
        (as one by one, in order: a value first seen when the table is full is never counted)."""
        short = self._short
        for value, count in Counter(values).items():  # in the order of first appearance
            if value in short or len(short) < _SHORT_KEPT:
                short[value] += count

    def add_steps(self, steps: int) -> None:
        """Count the length of one feature list (its steps are counted by :meth:`add_feature`)."""
        if self.detail is not None:
            self.detail.add_steps(steps)
        self.steps_min = steps if self.steps_min is None else min(self.steps_min, steps)
        self.steps_max = steps if self.steps_max is None else max(self.steps_max, steps)


_SHORT = 16
"""The longest bytes value :attr:`KeyObservation.short` keeps."""
_SHORT_KEPT = 1024
"""How many distinct short values it keeps."""


_PROBE_BITS = 15
"""The size of the table that finds the short values among those kept (:class:`KeptValues`):
2**15 int16, 64 KiB, which stays in a core's cache while a batch's values are looked up (with
1024 values kept, one value in 32 that is not kept is compared with one that is, and about 3% of
the kept ones share their probe with another)."""


def _probes(
    blob: memoryview | bytes, starts: NDArray[np.int64], sizes: NDArray[np.int64]
) -> NDArray[np.int64]:
    """A number below ``2**_PROBE_BITS`` for each value at ``starts`` (``sizes`` their lengths) in
    ``blob``, from its length and five of its bytes: equal values give equal numbers."""
    joined = np.frombuffer(blob, np.uint8)
    if not joined.size:
        return np.zeros(sizes.size, dtype=np.int64)
    mix = np.uint64(0x9E3779B97F4A7C15)
    probe = sizes.astype(np.uint64)
    last = np.maximum(sizes - 1, 0)
    held = sizes > 0  # an empty value reads no byte
    for at in (0, 1, last // 2, last - 1, last):
        place = np.minimum(starts + np.clip(at, 0, last), joined.size - 1)
        probe = (probe + np.where(held, joined[place], 0).astype(np.uint64)) * mix
    return (probe >> np.uint64(64 - _PROBE_BITS)).astype(np.int64)


@dataclass(frozen=True, slots=True)
class KeptValues:
    """The short values a :class:`KeyObservation` keeps, once they are all chosen, indexed by
    probe: ``table[p]`` is ``i + 1`` when ``values[i]`` is the only one whose :func:`_probes` is
    ``p``, -1 when several share ``p``, 0 when none has it; ``joined`` holds the values one after
    another, ``ends`` the end of each."""

    values: list[bytes]
    joined: bytes
    ends: NDArray[np.int64]
    table: NDArray[np.int16]

    @classmethod
    def of(cls, values: list[bytes]) -> KeptValues:
        """The index of ``values`` (at most 32767 of them)."""
        lengths = np.array([len(v) for v in values], dtype=np.int64)
        ends = np.cumsum(lengths)
        joined = b"".join(values)
        probes, first, shared = np.unique(
            _probes(joined, ends - lengths, lengths), return_index=True, return_counts=True
        )
        table = np.zeros(1 << _PROBE_BITS, dtype=np.int16)
        table[probes] = np.where(shared == 1, first + 1, -1)
        return cls(values, joined, ends, table)


def joined_traits(
    blob: memoryview | bytes, sizes: NDArray[np.int64], kept: KeptValues | None
) -> tuple[bool, list[int], NDArray[np.int64], NDArray[np.int64]]:
    """What :meth:`KeyObservation._add_joined` notes of the values joined in ``blob`` (``sizes``:
    the size of each): whether one holds a NUL byte, how many start with each of
    :data:`~codegen.runtime.codec.images.SIGNATURES` (in its order), the indexes of values of at
    most :data:`_SHORT` bytes, and how many values equal each of ``kept.values``.

    Without ``kept``, every short value's index is given (and no count). With it, a short value
    whose probe only one kept value has is counted if it is that value (else it is none of them),
    and one whose probe several have is given by its index, to be compared after. In one pass of
    the accelerator's ``joined_traits`` when it is built. :class:`ValueError` when the sizes do
    not add up to the blob's size."""
    signatures = tuple(SIGNATURES.values())
    if speedups is not None:
        sizes = np.ascontiguousarray(sizes, dtype=np.int64)
        nul, found, picked, tallies = (
            speedups.joined_traits(blob, sizes, signatures, _SHORT, None, b"", b"")
            if kept is None
            else speedups.joined_traits(
                blob, sizes, signatures, _SHORT, kept.table, kept.joined, kept.ends
            )
        )
        return (
            nul,
            list(found),
            np.frombuffer(picked, dtype=np.int64),
            np.frombuffer(tallies, dtype=np.int64),
        )
    joined = np.frombuffer(blob, np.uint8)
    if np.any(sizes < 0) or int(sizes.sum()) != joined.size:
        raise ValueError("the sizes do not add up to the blob's size")
    starts = np.cumsum(sizes) - sizes
    images = []
    for signature in signatures:
        at = starts[sizes >= len(signature)]
        match = np.ones(at.size, dtype=np.bool_)
        for i, octet in enumerate(signature):
            match &= joined[at + i] == octet
        images.append(int(np.count_nonzero(match)))
    nul = not bool(joined.all())
    short = np.flatnonzero(sizes <= _SHORT)
    if kept is None:
        return nul, images, short.astype(np.int64, copy=False), np.zeros(0, dtype=np.int64)
    entry = kept.table[_probes(blob, starts[short], sizes[short])].astype(np.int64)
    single = np.flatnonzero(entry > 0)
    index = entry[single] - 1
    lengths = np.diff(kept.ends, prepend=0)
    rows = _padded(np.frombuffer(kept.joined, np.uint8), kept.ends - lengths, lengths)
    values = _padded(joined, starts[short][single], sizes[short][single])
    equal = (sizes[short][single] == lengths[index]) & (values == rows[index]).all(axis=1)
    counts = np.bincount(index[equal], minlength=len(kept.values)).astype(np.int64)
    return nul, images, short[entry < 0].astype(np.int64, copy=False), counts


def _padded(
    joined: NDArray[np.uint8], starts: NDArray[np.int64], sizes: NDArray[np.int64]
) -> NDArray[np.uint8]:
    """The short values at ``starts`` in ``joined`` (``sizes`` their lengths) as rows of
    :data:`_SHORT` bytes, zeros after each value's end."""
    columns = np.arange(_SHORT)
    if not joined.size:
        return np.zeros((sizes.size, _SHORT), dtype=np.uint8)
    places = np.minimum(starts[:, None] + columns, joined.size - 1)
    return np.where(columns < sizes[:, None], joined[places], 0).astype(np.uint8)


def joined_utf8(blob: memoryview, sizes: NDArray[np.int64]) -> bool:
    """Whether every one of the values joined in ``blob`` (``sizes``: the size of each) is valid
    UTF-8: the whole is, and no value starts inside a character (on a continuation byte)."""
    data = bytes(blob)
    if data.isascii():
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    starts = np.cumsum(sizes)[:-1]
    starts = starts[starts < len(data)]
    octets = np.frombuffer(data, np.uint8)
    return not bool(np.any((octets[starts] & 0xC0) == 0x80))


def _all_utf8(items: Sequence[bytes]) -> bool:
    try:
        for item in items:
            if not item.isascii():
                item.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


SAMPLES = 64
"""How many records an :class:`Observation` keeps whole (the first ones, up to
:data:`SAMPLE_BYTES` in all)."""

SAMPLE_BYTES = 64 << 20


@dataclass(slots=True)
class Observation:
    """Every record seen so far, key by key.

    ``records`` counts them, ``record_bytes`` their serialized bytes, ``sequences`` those with feature
    lists. ``features`` observes the
    context keys (an Example's features), ``feature_lists`` the feature-list keys, each by key in
    first-seen order. With ``detailed``, each key's observation has a
    :class:`~codegen.tools.profile.KeyDetail`.
    """

    records: int = 0
    record_bytes: int = 0
    sequences: int = 0
    features: dict[str, KeyObservation] = field(default_factory=dict)
    feature_lists: dict[str, KeyObservation] = field(default_factory=dict)
    detailed: bool = False
    samples: list[bytes] = field(default_factory=list)
    """The first :data:`SAMPLES` records counted, kept whole: what relations between keys that
    per-key counts cannot show are checked on (see :meth:`sample_values`)."""
    _sampled: int = field(default=0, init=False, repr=False)
    _keys: list[bytes] = field(default_factory=list, init=False, repr=False)
    """The context keys a batch is scanned for: every one seen in a batch so far."""

    @property
    def is_sequence(self) -> bool:
        """Whether the records are SequenceExamples (some record had feature lists)."""
        return self.sequences > 0

    def add_batch(
        self, records: Sequence[bytes], size: int | None = None
    ) -> list[tuple[int, RecordError]]:
        """Count the records of a batch (``size``: their bytes, when the caller knows them);
        returns (position in the batch, error) of each malformed one, which is not counted (the
        others are).

        A batch of Examples is scanned in one ``scan_keys`` call per pass (a second pass when it
        holds keys not seen before); a batch with a malformed record or a SequenceExample is
        counted record by record (:meth:`add`), with the same result.
        """
        try:
            if self._add_examples(records, size):
                return []
        except RecordError:
            pass
        malformed = []
        for position, data in enumerate(records):
            try:
                self.add(data)
            except RecordError as exc:
                malformed.append((position, exc))
        return malformed

    def _add_examples(self, records: Sequence[bytes], size: int | None) -> bool:
        """Counts a batch of Examples from ``scan_keys``; ``False`` (nothing counted) when one of
        the records has fields besides an Example's (a SequenceExample)."""
        keys = self._keys
        unrequested: dict[bytes, int] = {}
        irregular: list[int] = []
        scans = scan_keys(records, keys, keys, unrequested=unrequested, irregular=irregular)
        if irregular:
            return False
        if unrequested:
            keys.extend(sorted(unrequested, key=unrequested.__getitem__))
            scans = scan_keys(records, keys, keys)
        self.records += len(records)
        self.record_bytes += sum(map(len, records)) if size is None else size
        self._sample(records)
        for key, scan in zip(keys, scans, strict=True):
            name = key.decode("utf-8")
            entry = self.features.get(name)
            if entry is None:
                entry = self._new()
                if not entry.add_scan(scan):
                    continue  # seen in earlier batches only: no entry yet
                self.features[name] = entry
            else:
                entry.add_scan(scan)
        return True

    def add(self, data: bytes) -> None:
        """Count one serialized record; :class:`RecordError` if malformed (nothing is counted)."""
        context, lists = parse_record(data)
        # Decode every list body before counting anything: a malformed record leaves no trace.
        features = [(key, _decoded(key, value, "feature")) for key, value in context.items()]
        steps = [
            (key, [_decoded(key, step, "feature list") for step in value])
            for key, value in lists.items()
        ]
        self.records += 1
        self.record_bytes += len(data)
        self._sample((data,))
        if lists:
            self.sequences += 1
        for key, (kind, values) in features:
            self._entry(self.features, key).add_feature(kind, values)
        for key, decoded in steps:
            seen = self._entry(self.feature_lists, key)
            seen.add_steps(len(decoded))
            for kind, values in decoded:
                seen.add_feature(kind, values)

    def _sample(self, records: Sequence[bytes]) -> None:
        for data in records[: max(0, SAMPLES - len(self.samples))]:
            if self._sampled + len(data) > SAMPLE_BYTES:
                return
            self._sampled += len(data)
            self.samples.append(bytes(data))

    def sample_values(self) -> list[dict[str, tuple[int, Values]]]:
        """Each sampled record's context features: key -> (list kind, values)."""
        rows = []
        for data in self.samples:
            context, _ = parse_record(data)
            rows.append(
                {
                    key.decode("utf-8"): _decoded(key, value, "feature")
                    for key, value in context.items()
                }
            )
        return rows

    def _new(self) -> KeyObservation:
        return KeyObservation(detail=KeyDetail()) if self.detailed else KeyObservation()

    def _entry(self, table: dict[str, KeyObservation], raw_key: bytes) -> KeyObservation:
        """The observation of ``raw_key`` (UTF-8, as the wire parser checked), one record more."""
        key = raw_key.decode("utf-8")
        seen = table.get(key)
        if seen is None:
            seen = table[key] = self._new()
        seen.records += 1
        return seen


def _decoded(raw_key: bytes, feature: FeatureValue, where: str) -> tuple[int, Values]:
    """A parsed feature's kind and values; :class:`RecordError` naming the key if malformed."""
    kind, body = feature
    try:
        if kind == Wire.BYTES:
            return kind, decode_bytes_list(body)
        if kind == Wire.FLOAT:
            return kind, decode_float_list(body)
        if kind == Wire.INT64:
            return kind, decode_int64_list(body)
    except RecordError as exc:
        raise RecordError(f"{where} {raw_key.decode('utf-8')!r}: {exc}") from None
    return kind, None
