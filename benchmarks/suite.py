"""One benchmark run: every contender on every selected workload, in one process."""

from __future__ import annotations

import datetime
import importlib.util
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from benchmarks import bars
from benchmarks.contenders import BASELINES, EPOCH_BYTES, Contender, Environment, contenders
from benchmarks.machine import machine_info
from benchmarks.objectstore import missing as s3_missing
from benchmarks.objectstore import stop_server
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
    """Run only the contenders whose name holds one of these (with their groups' baselines and the
    rows their bars compare them with); empty: every contender."""


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
    arrow_missing = None
    if importlib.util.find_spec("pyarrow") is None:
        arrow_missing = "pyarrow is not installed; install the 'arrow' extra"
    scratch.mkdir(parents=True, exist_ok=True)
    return Environment(
        tf=tf,
        tf_missing=tf_missing,
        vahidk_missing=vahidk_missing,
        scratch=scratch,
        arrow_missing=arrow_missing,
        s3_missing=s3_missing(),
    )


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
    entries = contenders(prepared, replace(env, epoch_bytes=0 if settings.quick else EPOCH_BYTES))
    if settings.rows:
        entries = _chosen(entries, settings.rows, workload)
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


def _chosen(entries: list[Contender], words: Sequence[str], workload: Workload) -> list[Contender]:
    """The contenders named by ``words``, their groups' baselines and the rows their bars compare them with."""
    wanted = {c.name for c in entries if any(word in c.name for word in words)}
    for contender, baseline, _ in bars.required(workload):
        if contender in wanted:
            wanted.add(baseline)
    wanted |= {BASELINES[c.group] for c in entries if c.name in wanted}
    return [c for c in entries if c.name in wanted]


def run(workloads: Sequence[Workload], settings: Settings) -> RunReport:
    """Run every workload and collect the report."""
    machine = machine_info()
    env = load_environment(settings.data_dir / "written")
    try:
        results = tuple(run_workload(w, settings, env) for w in workloads)
    finally:
        stop_server()
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
