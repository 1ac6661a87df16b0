"""How far two distributions of a feature are apart, as TensorFlow Data Validation measures it.

- :func:`l_infinity` for categorical values (bytes and strings): each side's value counts are
  divided by that side's total, and the distance is the largest absolute difference of one value's
  two frequencies (0: the same frequencies, 1: disjoint values).
- :func:`jensen_shannon` for numbers: two histograms over the same buckets, with the infinite values
  of each side in a bucket of their own that the other side does not share and the NaN values as
  well, each normalized to sum to 1; the divergence is ``(KL(P||M) + KL(Q||M)) / 2`` with
  ``M = (P + Q) / 2`` and base-2 logarithms, capped at 1 (0: the same histograms, 1: disjoint).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

__all__ = ["jensen_shannon", "l_infinity"]


def l_infinity(a: Mapping[bytes, float], b: Mapping[bytes, float]) -> tuple[float, bytes | None]:
    """The L-infinity distance of two value counts, and the value where it is reached
    (``None`` when both are empty)."""
    total_a = sum(a.values())
    total_b = sum(b.values())
    best: tuple[float, bytes | None] = (0.0, None)
    for value in sorted(set(a) | set(b)):
        p = a.get(value, 0.0) / total_a if total_a else 0.0
        q = b.get(value, 0.0) / total_b if total_b else 0.0
        if abs(p - q) > best[0] or best[1] is None:
            best = (abs(p - q), value)
    return best


def jensen_shannon(
    p_counts: Sequence[float],
    q_counts: Sequence[float],
    *,
    p_extra: tuple[float, float] = (0.0, 0.0),
    q_extra: tuple[float, float] = (0.0, 0.0),
) -> float:
    """The Jensen-Shannon divergence of two histograms over the same buckets; ``*_extra`` are each
    side's (infinite, NaN) counts. 0 when either side holds nothing."""
    if len(p_counts) != len(q_counts):
        raise ValueError("the histograms must have the same buckets")
    p = list(p_counts)
    q = list(q_counts)
    for own, other in ((p_extra[0], 0.0), (0.0, q_extra[0])):  # infinities: mismatching buckets
        if own or other:
            p.append(own)
            q.append(other)
    if p_extra[1] or q_extra[1]:  # NaN: one bucket each, mismatching
        p += [0.0, p_extra[1]]
        q += [q_extra[1], 0.0]
    total_p, total_q = sum(p), sum(q)
    if not total_p or not total_q:
        return 0.0
    divergence = 0.0
    for x, y in zip(p, q, strict=True):
        x /= total_p
        y /= total_q
        m = (x + y) / 2
        if x > 0:
            divergence += x * math.log2(x / m) / 2
        if y > 0:
            divergence += y * math.log2(y / m) / 2
    return min(max(divergence, 0.0), 1.0)
