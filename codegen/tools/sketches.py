"""Streaming summaries in bounded memory: quantiles of numbers and the most frequent values.

:class:`QuantileSketch` keeps a hierarchy of compactors (as in Manku, Rajagopalan and Lindsay's
and Karnin, Lang and Liberty's sketches): level ``h`` holds values that stand for ``2**h`` values
each, and a level that reaches ``capacity`` values is sorted and every other value moves up one
level, starting with the first or the second value in turns. The sketch is deterministic (the
same values in the same order give the same summary) and counts its own error: a compaction at
level ``h`` moves the rank of any value by at most ``2**h``, and :attr:`QuantileSketch.rank_error`
is the sum of those, so every rank the sketch gives is within ``rank_error`` of the true rank. That
sum is at most ``n * levels / capacity`` for ``n`` values (``levels``: about ``log2(n / capacity)``),
and it is 0 (the sketch is exact) until ``capacity`` values were seen. Memory: at most
``capacity`` values per level.

:class:`TopValues` counts values (Misra and Gries's frequent items, in batches): it holds at most
``SLACK * capacity`` values (plus one batch's), and when there are more it subtracts the
``capacity + 1``-th largest count from every count and drops those left at zero or below. Each
count it gives is at most :attr:`TopValues.count_error` below the true count, and that is at most
``n / (capacity + 1)`` for ``n`` values; it is 0 (all counts exact) while there are no more than
``SLACK * capacity`` distinct values.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from codegen.runtime.codec.batch import tally_joined

__all__ = ["QuantileSketch", "TopValues", "equal_width_edges"]

QUANTILE_CAPACITY = 2048
"""Values per compactor level of a :class:`QuantileSketch` (8 bytes each)."""
TOP_CAPACITY = 1000
"""Values a :class:`TopValues` keeps when it sheds counts."""
SLACK = 8
"""How many times ``capacity`` values a :class:`TopValues` holds before it sheds counts."""


class QuantileSketch:
    """Quantiles of a stream of numbers (NaN excluded by the caller) within a counted rank error.

    ``n`` counts the values added; ``low``/``high`` are their exact extremes; ``rank_error`` bounds
    the error of any rank the sketch gives (see the module's description).
    """

    def __init__(self, capacity: int = QUANTILE_CAPACITY) -> None:
        if capacity < 2 or capacity % 2:
            raise ValueError(f"capacity must be an even number >= 2, got {capacity}")
        self.capacity = capacity
        self.n = 0
        self.low = float("inf")
        self.high = float("-inf")
        self.rank_error = 0
        self._levels: list[list[NDArray[np.float64]]] = [[]]
        self._sizes: list[int] = [0]
        self._odd: list[bool] = [False]

    def update(self, values: NDArray[Any]) -> None:
        """Add numbers (any real dtype; read as float64)."""
        if not values.size:
            return
        array = np.asarray(values, dtype=np.float64).ravel()
        self.n += int(array.size)
        self.low = min(self.low, float(array.min()))
        self.high = max(self.high, float(array.max()))
        self._add(0, array)

    def _add(self, level: int, array: NDArray[np.float64]) -> None:
        while True:
            if level == len(self._levels):
                self._levels.append([])
                self._sizes.append(0)
                self._odd.append(False)
            self._levels[level].append(array)
            self._sizes[level] += int(array.size)
            if self._sizes[level] < self.capacity:
                return
            held = np.sort(np.concatenate(self._levels[level]))
            # An odd count keeps its largest value at this level, so that pairs are compacted.
            kept = held[len(held) - len(held) % 2 :]
            pairs = held[: len(held) - len(held) % 2]
            start = 1 if self._odd[level] else 0
            self._odd[level] = not self._odd[level]
            self._levels[level] = [kept] if kept.size else []
            self._sizes[level] = int(kept.size)
            self.rank_error += 1 << level
            array = pairs[start::2].copy()
            level += 1

    def _weighted(self) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Every value held, sorted, and the number of values each stands for."""
        values = []
        weights = []
        for level, arrays in enumerate(self._levels):
            for array in arrays:
                values.append(array)
                weights.append(np.full(array.size, float(1 << level)))
        if not values:
            return np.empty(0), np.empty(0)
        held = np.concatenate(values)
        order = np.argsort(held, kind="stable")
        return held[order], np.concatenate(weights)[order]

    @property
    def retained(self) -> int:
        """How many values the sketch holds."""
        return sum(self._sizes)

    def quantiles(self, fractions: Sequence[float]) -> list[float]:
        """The value at each fraction of the ranks (0: the least, 1: the greatest): the least
        held value whose rank (the values up to it) reaches ``fraction * n``; ``[]`` when empty."""
        if not self.n:
            return []
        values, weights = self._weighted()
        ranks = np.cumsum(weights)
        result = []
        for fraction in fractions:
            if fraction <= 0:
                result.append(self.low)
            elif fraction >= 1:
                result.append(self.high)
            else:
                index = int(np.searchsorted(ranks, fraction * ranks[-1], side="left"))
                result.append(float(values[min(index, len(values) - 1)]))
        return result

    def histogram(self, edges: NDArray[np.float64]) -> list[float]:
        """How many values fall in each bucket ``[edges[i], edges[i + 1])`` (the last bucket
        closed), estimated from the held values; each within ``2 * rank_error`` of the truth."""
        values, weights = self._weighted()
        counts, _ = np.histogram(values, bins=edges, weights=weights)
        return [float(c) for c in counts]

    def merge(self, other: QuantileSketch) -> None:
        """Add what ``other`` holds (its values keep their weights; the errors add up)."""
        self.n += other.n
        self.low = min(self.low, other.low)
        self.high = max(self.high, other.high)
        self.rank_error += other.rank_error
        for level, arrays in enumerate(other._levels):
            for array in arrays:
                if array.size:
                    self._add(level, array)


def equal_width_edges(low: float, high: float, buckets: int) -> NDArray[np.float64]:
    """``buckets + 1`` edges of equal-width buckets from ``low`` to ``high`` (one bucket of width
    1 around the value when they are equal)."""
    if low == high:
        return np.array([low - 0.5, low + 0.5])
    return np.linspace(low, high, buckets + 1)


class TopValues:
    """The most frequent values of a stream, with counts within :attr:`count_error`.

    Values are counted by their 64-bit FNV-1a hash (:func:`~codegen.runtime.codec.batch.hash_joined`:
    two values with the same hash would count as one), a batch's values grouped by
    :func:`~codegen.runtime.codec.batch.tally_joined` and merged into the held counts in numpy, and
    a value's bytes are kept once for each hash held.
    """

    def __init__(self, capacity: int = TOP_CAPACITY) -> None:
        self.capacity = capacity
        self.n = 0
        self.count_error = 0
        self._hashes: NDArray[np.uint64] = np.empty(0, dtype=np.uint64)  # sorted
        self._counts: NDArray[np.int64] = np.empty(0, dtype=np.int64)
        self._values: dict[int, bytes] = {}
        # The values first counted in the last batch, not copied out of its blob yet (most are
        # shed by the next batch when values seldom repeat): their hashes, the blob, and where
        # each starts and ends in it.
        self._fresh: (
            tuple[NDArray[np.uint64], memoryview | bytes, NDArray[np.int64], NDArray[np.int64]]
            | None
        ) = None

    def update(self, blob: memoryview | bytes, sizes: NDArray[np.int64]) -> None:
        """Count the values joined in ``blob`` (``sizes``: the size of each)."""
        if not sizes.size:
            return
        self.n += int(sizes.size)
        found, counts, where = tally_joined(blob, sizes)  # distinct, with a place of each
        held, totals = self._hashes, self._counts
        if held.size:
            at = np.searchsorted(held, found)
            known = held[np.minimum(at, held.size - 1)] == found
            totals = totals.copy()
            totals[at[known]] += counts[known]
            fresh = np.flatnonzero(~known)
            keys = np.concatenate((held, found[fresh]))
            totals = np.concatenate((totals, counts[fresh]))
            where = where[fresh]
        else:
            keys, totals = found, counts
        # keys[held.size:] are new, the value at where[i] in the batch being keys[held.size + i].
        trimmed = keys.size > SLACK * self.capacity
        kept = np.arange(keys.size)  # the places in keys that stay
        if trimmed:
            cut = int(np.partition(totals, keys.size - self.capacity - 1)[-self.capacity - 1])
            self.count_error += cut
            kept = np.flatnonzero(totals > cut)
            totals = totals - cut
        new = kept[kept >= held.size]
        order = kept[np.argsort(keys[kept])] if new.size else kept
        self._hashes, self._counts = keys[order], totals[order]
        self._settle()
        if trimmed:
            self._values = {
                key: value
                for key in self._hashes.tolist()
                if (value := self._values.get(key)) is not None
            }
        if new.size:
            place = where[new - held.size]
            ends = np.cumsum(sizes)
            self._fresh = (keys[new], blob, (ends - sizes)[place], ends[place])

    def _settle(self) -> None:
        """Copy the fresh values of the last batch that are still held into ``_values``."""
        if self._fresh is None:
            return
        hashes, blob, starts, ends = self._fresh
        self._fresh = None
        held = np.isin(hashes, self._hashes)
        if not held.any():
            return
        data = bytes(blob)
        slices = map(slice, starts[held].tolist(), ends[held].tolist())
        self._values.update(zip(hashes[held].tolist(), map(data.__getitem__, slices), strict=True))

    def update_list(self, values: Sequence[bytes]) -> None:
        """Count values given one by one."""
        self.update(b"".join(values), np.array([len(v) for v in values], dtype=np.int64))

    @property
    def distinct(self) -> int | None:
        """How many distinct values there were, when every one was kept (else ``None``)."""
        return int(self._hashes.size) if not self.count_error else None

    def counts(self) -> dict[bytes, int]:
        """Every value kept, with its count."""
        self._settle()
        return {
            self._values[key]: count
            for key, count in zip(self._hashes.tolist(), self._counts.tolist(), strict=True)
        }

    def top(self, k: int) -> list[tuple[bytes, int]]:
        """The ``k`` values with the largest counts (ties by value), with their counts."""
        return sorted(self.counts().items(), key=lambda item: (-item[1], item[0]))[:k]
