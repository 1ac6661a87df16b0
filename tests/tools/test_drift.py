"""Drift measures on known distributions, as TFDV defines them."""

from __future__ import annotations

import math

import pytest

from codegen.tools.drift import jensen_shannon, l_infinity


def test_l_infinity() -> None:
    assert l_infinity({b"a": 5, b"b": 5}, {b"a": 50, b"b": 50}) == (0.0, b"a")
    assert l_infinity({b"a": 3, b"b": 1}, {b"a": 1, b"b": 1, b"c": 2}) == (0.5, b"a")
    assert l_infinity({b"a": 1}, {b"b": 7}) == (1.0, b"a")
    assert l_infinity({}, {}) == (0.0, None)


def test_jensen_shannon_of_known_histograms() -> None:
    assert jensen_shannon([1, 2, 3], [10, 20, 30]) == 0.0
    assert jensen_shannon([4, 0], [0, 9]) == 1.0
    # P = (1/2, 1/2), Q = (1, 0): M = (3/4, 1/4).
    expected = (0.5 * math.log2(0.5 / 0.75) + 0.5 * math.log2(0.5 / 0.25) + math.log2(1 / 0.75)) / 2
    assert jensen_shannon([1, 1], [2, 0]) == pytest.approx(expected)
    assert jensen_shannon([0, 0], [1, 1]) == 0.0


def test_infinities_and_nans_get_buckets_of_their_own() -> None:
    # The same finite histograms; one side's infinities and NaNs are mass the other lacks.
    assert jensen_shannon([1, 1], [1, 1], p_extra=(2.0, 0.0), q_extra=(2.0, 0.0)) > 0
    assert jensen_shannon([1, 1], [1, 1], p_extra=(0.0, 3.0), q_extra=(0.0, 3.0)) > 0
    with pytest.raises(ValueError, match="same buckets"):
        jensen_shannon([1], [1, 2])
