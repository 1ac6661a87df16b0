"""The distributions of one key's values, in bounded memory (for ``tfr-gen report``).

A :class:`KeyDetail` rides along a :class:`~codegen.tools.observe.KeyObservation` when an
:class:`~codegen.tools.observe.Observation` is ``detailed``: it counts how many features hold each
number of values, how many feature lists hold each number of steps, sketches the finite numbers
(:class:`~codegen.tools.sketches.QuantileSketch`; numbers are read as float64, so int64 values
beyond 2**53 are rounded), counts infinities apart and counts the most frequent bytes values
(:class:`~codegen.tools.sketches.TopValues`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from codegen.runtime.codec.batch import KeyScan
from codegen.tools.sketches import QuantileSketch, TopValues

__all__ = ["KeyDetail", "tally"]


def tally(numbers: NDArray[np.int64]) -> dict[int, int]:
    """How many times each of ``numbers`` (not negative) occurs, in increasing order: counted by
    ``np.bincount`` when they are small, as counts and lengths mostly are (no sort)."""
    if int(numbers.max()) < 1 << 16:
        counts = np.bincount(numbers)
        found = np.flatnonzero(counts)
        return dict(zip(found.tolist(), counts[found].tolist(), strict=True))
    found, counts = np.unique(numbers, return_counts=True)
    return dict(zip(found.tolist(), counts.tolist(), strict=True))


@dataclass(slots=True)
class KeyDetail:
    """The distributions of one key's features (see the module's description)."""

    value_counts: Counter[int] = field(default_factory=Counter)
    steps: Counter[int] = field(default_factory=Counter)
    numbers: QuantileSketch = field(default_factory=QuantileSketch)
    infinities: int = 0
    top: TopValues = field(default_factory=TopValues)

    def add_scan(self, scan: KeyScan, listed: NDArray[np.int64]) -> None:
        """Count the features of one key over a batch of records (bytes values joined);
        ``listed`` holds the value count of each of its features that has a list."""
        if listed.size:
            self.value_counts.update(tally(listed))
        if scan.ints.size:
            self._add_numbers(scan.ints)
        if scan.floats.size:
            self._add_numbers(scan.floats)
        if scan.sizes is not None and scan.sizes.size and scan.blob is not None:
            self.top.update(scan.blob, scan.sizes)
        elif scan.strings:
            self.top.update_list(scan.strings)

    def add_values(self, values: list[bytes] | NDArray[Any] | None) -> None:
        """Count one feature's decoded values (``None``: a feature with no list)."""
        if values is None:
            return
        self.value_counts[len(values)] += 1
        if isinstance(values, list):
            self.top.update_list(values)
        else:
            self._add_numbers(values)

    def add_steps(self, steps: int) -> None:
        """Count the length of one feature list."""
        self.steps[steps] += 1

    def _add_numbers(self, array: NDArray[Any]) -> None:
        if array.dtype.kind == "f":
            finite = np.isfinite(array)
            if not finite.all():
                self.infinities += int(np.isinf(array).sum())
                array = array[finite]
        self.numbers.update(array)
