"""One benchmark run: every contender on every selected workload, in one process."""

from __future__ import annotations

import datetime
import importlib.util
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from benchmarks import bars
from benchmarks.contenders import BASELINES, Environment, contenders
from benchmarks.machine import machine_info
from benchmarks.prepare import prepare, verify
from benchmarks.report import RunReport
from benchmarks.results import Row, WorkloadResult
from benchmarks.timing import measure
from benchmarks.workloads import Skip, Workload, load


@dataclass(frozen=True, slots=True)
class Settings:
    """How to run: ``quick`` sizes or not, timed ``repeats`` after ``warmups`` rounds, the data
    ``seed``, and ``data_dir`` for the generated TFRecord files."""

    quick: bool
    repeats: int
    warmups: int
    seed: int
    data_dir: Path
    rows: tuple[str, ...] = ()
    """Run only the contenders whose name holds one of these (and the baselines they are compared
    with); empty: every contender."""

    def keeps(self, name: str) -> bool:
        """Whether the contender ``name`` runs (see :attr:`rows`)."""
        return not self.rows or any(part in name for part in self.rows)


def _progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def load_environment(scratch: Path) -> Environment:
    """TensorFlow and vahidk's ``tfrecord`` if installed (vahidk is only looked up: it runs in a
    subprocess), and ``scratch`` for written files."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    _progress("importing TensorFlow ...")
    try:
        import tensorflow as tf
    except ImportError as exc:
        tf, tf_missing = (
            None,
            f"TensorFlow is not installed ({exc}); install the 'tensorflow' extra",
        )
    else:
        tf_missing = ""
    vahidk_missing = None
    if importlib.util.find_spec("tfrecord") is None:
        vahidk_missing = "vahidk's tfrecord is not installed; install the 'bench' extra"
    scratch.mkdir(parents=True, exist_ok=True)
    return Environment(tf=tf, tf_missing=tf_missing, vahidk_missing=vahidk_missing, scratch=scratch)


def run_workload(workload: Workload, settings: Settings, env: Environment) -> WorkloadResult:
    """Prepare, verify and time one workload (a skipped result when it cannot run here)."""
    cls = load(workload)
    if isinstance(cls, Skip):
        _progress(f"skipped: {workload.name}: {cls.reason}")
        return WorkloadResult(
            workload.name, workload.description, workload.record, 0, 0, (), skipped=cls.reason
        )
    count = workload.quick_records if settings.quick else workload.records
    _progress(f"{workload.name}: building {count:,} records ...")
    prepared = prepare(workload, cls, count, settings.data_dir, settings.seed)
    checked = verify(prepared)
    if checked.problems:
        raise SystemExit(
            f"{workload.name}: tfr-gen and protobuf disagree on the benchmark data:\n  "
            + "\n  ".join(checked.problems)
        )
    identical = count - checked.reordered
    _progress(f"{workload.name}: verified: same messages and values as protobuf")
    entries = contenders(prepared, env)
    if settings.rows:
        kept = {c.name for c in entries if settings.keeps(c.name)}
        kept |= {BASELINES[c.group] for c in entries if c.name in kept}
        kept |= {b for c, b, _ in bars.required(workload) if c in kept}
        entries = [c for c in entries if c.name in kept]
    try:
        seconds = measure(
            entries, count, warmups=settings.warmups, repeats=settings.repeats, where=workload.name
        )
    finally:
        for written in env.scratch.glob(f"{workload.name}.*"):
            written.unlink()
    rows = tuple(Row(c.group, c.name, tuple(seconds.get(c.name, ())), c.skipped) for c in entries)
    return WorkloadResult(
        workload.name,
        workload.description,
        workload.record,
        count,
        prepared.total_bytes,
        rows,
        byte_identical=identical,
    )


def run(workloads: Sequence[Workload], settings: Settings) -> RunReport:
    """Run every workload and collect the report."""
    machine = machine_info()
    env = load_environment(settings.data_dir / "written")
    results = tuple(run_workload(w, settings, env) for w in workloads)
    timing = (
        f"median of {settings.repeats} timed rounds after {settings.warmups} warm-up round(s), "
        "contenders interleaved in each round"
    )
    run_settings = {
        "mode": "quick (small sizes: a smoke run, not a measurement)"
        if settings.quick
        else "default sizes",
        "timing": timing,
        "seed": str(settings.seed),
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
    }
    return RunReport(machine, run_settings, results, tuple(bars.evaluate(results)))
