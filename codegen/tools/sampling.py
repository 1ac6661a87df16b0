"""Deterministic samples of the records of a scan (``tfr-gen report --sample``).

A :class:`Sample` draws one number per record from a generator seeded with ``seed``, in the order
the records are read, so the same files and seed give the same sample. A fraction keeps each record
whose number is below it (Bernoulli sampling: about that fraction of the records, kept as they are
read); a count keeps the records with the ``count`` smallest numbers (a uniform sample of exactly
that many, or every record when there are fewer), held until the end of the scan: memory for
``count`` records, whatever the size of the files.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from codegen.tools.scan import ScannedBatch, ScannedRecord

__all__ = ["Sample", "parse_sample"]

Chunk = list[ScannedRecord]


def parse_sample(text: str) -> int | float:
    """A ``--sample`` argument: a whole number of records (``1000``) or a fraction in (0, 1]
    (``0.05``); :class:`ValueError` otherwise."""
    try:
        count = int(text)
    except ValueError:
        fraction = float(text)
        if not 0 < fraction <= 1:
            raise ValueError(f"a fraction must be in (0, 1], got {text}") from None
        return fraction
    if count < 1:
        raise ValueError(f"a number of records must be at least 1, got {text}")
    return count


class Sample:
    """Picks records from the batches of a scan; see the module's description."""

    def __init__(self, size: int | float, seed: int) -> None:
        self.size = size
        self._random = np.random.default_rng(seed)
        self._kept: list[ScannedRecord] = []
        self._keys = np.empty(0)

    def take(self, batch: ScannedBatch) -> Chunk:
        """The records of ``batch`` kept now (with a count: none until :meth:`finish`)."""
        keys = self._random.random(len(batch))
        if isinstance(self.size, float):
            return [batch.item(int(i)) for i in np.flatnonzero(keys < self.size)]
        count = self.size
        if len(self._kept) >= count:
            threshold = np.partition(self._keys, count - 1)[count - 1]
            chosen = np.flatnonzero(keys < threshold)
        else:
            chosen = np.arange(len(batch))
        if chosen.size:
            self._kept.extend(batch.item(int(i)) for i in chosen)
            self._keys = np.concatenate([self._keys, keys[chosen]])
        if len(self._kept) > 2 * count:
            self._prune(count)
        return []

    def _prune(self, count: int) -> None:
        best = np.sort(np.argpartition(self._keys, count - 1)[:count])
        self._kept = [self._kept[int(i)] for i in best]
        self._keys = self._keys[best]

    def finish(self, chunk: int = 1024) -> Iterator[Chunk]:
        """The records a count kept, in the order they were read, ``chunk`` at a time."""
        if isinstance(self.size, float):
            return
        if len(self._kept) > self.size:
            self._prune(self.size)
        kept, self._kept = self._kept, []
        for start in range(0, len(kept), chunk):
            yield kept[start : start + chunk]
