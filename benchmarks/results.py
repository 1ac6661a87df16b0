"""The measured results of a run: one :class:`Row` per contender, grouped by workload."""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from benchmarks.contenders import BASELINES, Group


@dataclass(frozen=True, slots=True)
class Row:
    """One contender on one workload: the seconds of its timed runs, or why it was skipped."""

    group: Group
    contender: str
    seconds: tuple[float, ...] = ()
    skipped: str | None = None

    @property
    def median(self) -> float | None:
        """The median time of a run over all records (``None`` when skipped)."""
        return statistics.median(self.seconds) if self.seconds else None

    @property
    def fastest(self) -> float | None:
        """The time of the fastest run (``None`` when skipped)."""
        return min(self.seconds) if self.seconds else None


@dataclass(frozen=True, slots=True)
class WorkloadResult:
    """The rows of one workload; ``records`` records of ``total_bytes`` serialized bytes in all.

    ``byte_identical`` counts the records whose ``encode()`` bytes equal protobuf's deterministic
    serialization (the others hold the same message with map entries in another order).
    ``skipped`` says why a workload did not run (then there are no rows).
    """

    name: str
    description: str
    record: str
    records: int
    total_bytes: int
    rows: tuple[Row, ...]
    byte_identical: int = 0
    skipped: str | None = None

    def row(self, contender: str) -> Row | None:
        """The row of a contender, if it is in this result."""
        return next((r for r in self.rows if r.contender == contender), None)

    def records_per_s(self, row: Row) -> float | None:
        """Records handled per second (median run)."""
        return None if row.median is None else self.records / row.median

    def mb_per_s(self, row: Row) -> float | None:
        """Megabytes (10**6 bytes) of serialized records handled per second (median run)."""
        return None if row.median is None else self.total_bytes / row.median / 1e6

    def ratio(self, row: Row) -> float | None:
        """How many times faster than its group's baseline ``row`` is (``None``: one is missing)."""
        return self.speedup(row.contender, BASELINES[row.group])

    def speedup(self, contender: str, baseline: str, *, fastest: bool = False) -> float | None:
        """How many times faster the row ``contender`` is than the row ``baseline`` (medians, or the fastest
        runs; ``None`` when either did not run)."""
        row, base = self.row(contender), self.row(baseline)
        if row is None or base is None:
            return None
        mine, theirs = (row.fastest, base.fastest) if fastest else (row.median, base.median)
        if mine is None or theirs is None:
            return None
        return theirs / mine
