"""The quantile sketch and the frequent values: exact on small data, within the error they count
on large data, deterministic, and bounded in memory."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codegen.runtime.codec import batch as codec_batch
from codegen.tools.sketches import SLACK, QuantileSketch, TopValues, equal_width_edges
from support.speedups import import_speedups


def true_rank(sorted_values: np.ndarray, x: float) -> tuple[int, int]:
    """The ranks a value ``x`` may have: values strictly below it, values up to it."""
    return (
        int(np.searchsorted(sorted_values, x, side="left")),
        int(np.searchsorted(sorted_values, x, side="right")),
    )


def test_exact_below_capacity() -> None:
    sketch = QuantileSketch(capacity=64)
    values = np.array([5, 1, 4, 2, 3, 9, 7, 8, 6, 10], dtype=np.float64)
    sketch.update(values[:4])
    sketch.update(values[4:])
    assert (sketch.n, sketch.low, sketch.high, sketch.rank_error) == (10, 1.0, 10.0, 0)
    assert sketch.quantiles([0.0, 0.1, 0.25, 0.5, 0.75, 1.0]) == [1.0, 1.0, 3.0, 5.0, 8.0, 10.0]
    assert sketch.histogram(equal_width_edges(1, 10, 3)) == [3.0, 3.0, 4.0]


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.integers(-1000, 1000), min_size=1, max_size=3000),
    st.sampled_from([2, 8, 32]),
    st.integers(1, 500),
)
def test_ranks_within_the_counted_error(values: list[int], capacity: int, chunk: int) -> None:
    sketch = QuantileSketch(capacity=capacity)
    array = np.array(values, dtype=np.float64)
    for start in range(0, len(array), chunk):
        sketch.update(array[start : start + chunk])
    ordered = np.sort(array)
    n = len(array)
    assert sketch.n == n and sketch.low == ordered[0] and sketch.high == ordered[-1]
    assert sketch.rank_error <= n * (np.log2(max(n / capacity, 1)) + 2) / capacity
    fractions = [i / 20 for i in range(21)]
    for fraction, value in zip(fractions, sketch.quantiles(fractions), strict=True):
        below, upto = true_rank(ordered, value)
        target = fraction * n
        assert below - sketch.rank_error <= target <= upto + sketch.rank_error + 1
    edges = equal_width_edges(float(ordered[0]), float(ordered[-1]), 7)
    exact, _ = np.histogram(array, bins=edges)
    for estimate, truth in zip(sketch.histogram(edges), exact, strict=True):
        assert abs(estimate - truth) <= 2 * sketch.rank_error


def test_memory_stays_bounded_and_the_sketch_is_deterministic() -> None:
    values = np.random.default_rng(1).normal(size=200_000)
    sketches = [QuantileSketch(capacity=256), QuantileSketch(capacity=256)]
    for sketch in sketches:
        for start in range(0, len(values), 10_000):
            sketch.update(values[start : start + 10_000])
    first, second = sketches
    levels = int(np.ceil(np.log2(len(values) / 256))) + 1
    assert first.retained <= 256 * levels
    assert first.quantiles([0.1, 0.5, 0.9]) == second.quantiles([0.1, 0.5, 0.9])
    assert first.rank_error == second.rank_error > 0
    median = first.quantiles([0.5])[0]
    below, _ = true_rank(np.sort(values), median)
    assert abs(below - len(values) / 2) <= first.rank_error


def test_merge_adds_counts_and_errors() -> None:
    a, b = QuantileSketch(capacity=8), QuantileSketch(capacity=8)
    a.update(np.arange(0, 50, dtype=np.float64))
    b.update(np.arange(50, 100, dtype=np.float64))
    errors = a.rank_error + b.rank_error
    a.merge(b)
    assert (a.n, a.low, a.high) == (100, 0.0, 99.0)
    assert a.rank_error >= errors
    median = a.quantiles([0.5])[0]
    assert abs(median - 49.5) <= a.rank_error + 1


def test_odd_capacity_is_refused() -> None:
    with pytest.raises(ValueError, match="even"):
        QuantileSketch(capacity=7)


def test_top_values_are_exact_while_few() -> None:
    top = TopValues(capacity=1)
    top.update_list([b"b", b"a", b"b", b"c"])
    top.update(b"bad", np.array([1, 1, 1]))
    assert top.top(2) == [(b"b", 3), (b"a", 2)]
    assert (top.n, top.count_error, top.distinct) == (7, 0, 4)
    assert top.counts() == {b"a": 2, b"b": 3, b"c": 1, b"d": 1}


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 200), min_size=1, max_size=3000), st.integers(1, 10))
def test_top_counts_within_the_counted_error(items: list[int], capacity: int) -> None:
    values = [str(i).encode() for i in items]
    top = TopValues(capacity=capacity)
    for start in range(0, len(values), 37):
        top.update_list(values[start : start + 37])
    truth = Counter(values)
    assert top.n == len(values)
    assert top.count_error <= len(values) / (capacity + 1)
    assert len(top.counts()) <= SLACK * capacity
    for value, count in top.counts().items():
        assert truth[value] - top.count_error <= count <= truth[value]
    for value, count in truth.items():  # a value missing from the counts is rare enough
        if value not in top.counts():
            assert count <= top.count_error


def misra_gries(batches: list[list[bytes]], capacity: int) -> tuple[dict[bytes, int], int]:
    """The counts and count error :class:`TopValues` promises, by its definition, value by value."""
    counts: Counter[bytes] = Counter()
    error = 0
    for values in batches:
        counts.update(values)
        if len(counts) > SLACK * capacity:
            cut = sorted(counts.values(), reverse=True)[capacity]
            error += cut
            counts = Counter({v: c - cut for v, c in counts.items() if c > cut})
    return dict(counts), error


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.lists(st.integers(0, 60), max_size=80), max_size=12),
    st.integers(1, 4),
    st.booleans(),
)
def test_top_values_follow_their_definition_on_both_paths(
    batches: list[list[int]], capacity: int, accelerated: bool
) -> None:
    values = [[b"v%d" % i for i in batch] for batch in batches]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(codec_batch, "speedups", import_speedups() if accelerated else None)
        top = TopValues(capacity=capacity)
        for batch in values:
            top.update_list(batch)
    counts, error = misra_gries(values, capacity)
    assert (top.counts(), top.count_error) == (counts, error)
    assert top.n == sum(map(len, values))
    assert top.distinct == (len(counts) if not error else None)
