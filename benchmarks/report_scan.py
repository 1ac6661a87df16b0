"""``tfr-gen report`` over a large file of customer-like records: its speed and its peak memory.

:func:`measure` writes the customer workload's records again and again into one file of the size
asked (and one of a sixteenth of it), runs ``tfr-gen report FILE --html PAGE`` once on each in a
fresh process, and gives the big run's MB/s and both runs' peak resident memory: with bounded
memory the two peaks are close whatever the size.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from benchmarks.prepare import prepare
from benchmarks.workloads import BY_NAME, Skip, load

_MAIN = "import sys; from codegen.cli import main; sys.exit(main(sys.argv[1:]))"
GB = 1_000_000_000
SMALL = 16
"""The small file is this many times smaller than the big one."""


@dataclass(frozen=True, slots=True)
class ReportScan:
    """One measurement: file sizes in bytes, seconds of the big run, peak memory in bytes."""

    big_bytes: int
    big_seconds: float
    big_peak: int
    small_bytes: int
    small_peak: int

    @property
    def mb_per_s(self) -> float:
        return self.big_bytes / self.big_seconds / 1e6

    def __str__(self) -> str:
        return (
            f"tfr-gen report --html over {self.big_bytes / 1e6:,.0f} MB of customer records: "
            f"{self.mb_per_s:,.1f} MB/s ({self.big_seconds:.1f} s); peak memory "
            f"{self.big_peak / 1e6:,.0f} MB, and {self.small_peak / 1e6:,.0f} MB over "
            f"{self.small_bytes / 1e6:,.0f} MB"
        )


def _write(path: Path, chunk: bytes, size: int) -> int:
    written = 0
    with open(path, "wb") as file:
        while written < size:
            file.write(chunk)
            written += len(chunk)
    return written


def _run(path: Path, page: Path) -> tuple[float, int]:
    """Seconds and peak resident bytes of ``tfr-gen report PATH --html PAGE`` in a new process."""
    command = [sys.executable, "-c", _MAIN, "report", str(path), "--html", str(page)]
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert process.stderr is not None
    with process.stderr:
        errors = process.stderr.read().decode(errors="replace")  # until the process ends
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise SystemExit(f"{' '.join(command)} exited {process.returncode}:\n{errors}")
    return seconds, usage.ru_maxrss * (1024 if sys.platform != "darwin" else 1)


def measure(data_dir: Path, gigabytes: float, seed: int = 0) -> ReportScan:
    """Write the files into ``data_dir`` (removed after), run the report on each, measure."""
    workload = BY_NAME["customer"]
    cls = load(workload)
    if isinstance(cls, Skip):
        raise SystemExit(f"customer records cannot be built here: {cls.reason}")
    prepared = prepare(workload, cls, workload.records, data_dir, seed)
    chunk = prepared.path.read_bytes()
    big, small = data_dir / "report-big.tfrecord", data_dir / "report-small.tfrecord"
    page = data_dir / "report.html"
    try:
        big_bytes = _write(big, chunk, int(gigabytes * GB))
        small_bytes = _write(small, chunk, int(gigabytes * GB / SMALL))
        _, small_peak = _run(small, page)
        seconds, big_peak = _run(big, page)
    finally:
        for path in (big, small, page):
            path.unlink(missing_ok=True)
    return ReportScan(big_bytes, seconds, big_peak, small_bytes, small_peak)
