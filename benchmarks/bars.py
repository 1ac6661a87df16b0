"""The speed-ups over protobuf the suite requires, checked against a run's results."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from benchmarks.contenders import BASELINES, TFRGEN_DECODE, TFRGEN_ENCODE, Group
from benchmarks.results import WorkloadResult
from benchmarks.workloads import BY_NAME


@dataclass(frozen=True, slots=True)
class Bar:
    """``contender`` must be at least ``required`` times faster than ``baseline`` on ``workload``.

    ``ratio`` is the measured speed-up (``None`` when the workload or a row did not run).
    """

    workload: str
    contender: str
    baseline: str
    required: float
    ratio: float | None

    @property
    def passed(self) -> bool:
        return self.ratio is not None and self.ratio >= self.required

    @property
    def verdict(self) -> str:
        """``PASS``, ``FAIL``, or ``SKIP`` when nothing was measured."""
        if self.ratio is None:
            return "SKIP"
        return "PASS" if self.passed else "FAIL"

    def __str__(self) -> str:
        measured = "not measured" if self.ratio is None else f"{self.ratio:.2f}x"
        return (
            f"{self.verdict}  {self.workload}: {self.contender} {measured} {self.baseline} "
            f"(bar >= {self.required:g}x)"
        )


def evaluate(results: Sequence[WorkloadResult]) -> list[Bar]:
    """The bars of every workload in ``results`` that has any, in result order."""
    bars: list[Bar] = []
    for result in results:
        workload = BY_NAME[result.name]
        checks: tuple[tuple[str, Group, float | None], ...] = (
            (TFRGEN_ENCODE, "encode", workload.encode_bar),
            (TFRGEN_DECODE, "decode", workload.decode_bar),
        )
        for contender, group, required in checks:
            if required is None:
                continue
            row = result.row(contender)
            ratio = None if row is None else result.ratio(row)
            bars.append(Bar(result.name, contender, BASELINES[group], required, ratio))
    return bars
