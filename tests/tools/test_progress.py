"""The progress bar of the data tools: drawn on a terminal only, at most once per interval, with the
rate and the time left, erased."""

from __future__ import annotations

import io

from codegen.tools.progress import Progress
from support.cli import Terminal


def test_progress_bar_draws_on_a_terminal_and_erases_itself() -> None:
    terminal = Terminal()
    now = [100.0]
    bar = Progress(terminal, 4_000_000, label="scan", interval=0.0, clock=lambda: now[0])
    now[0] = 102.0
    bar.update(1_000_000, 1234)
    now[0] = 108.0
    bar.update(4_000_000, 5000)
    bar.clear()
    first = (
        "scan [######..................]  25%  1.0 MB of 4.0 MB  1,234 records"
        "  500.0 kB/s  ETA 0:06"
    )
    second = (
        "scan [########################] 100%  4.0 MB of 4.0 MB  5,000 records"
        "  500.0 kB/s  ETA 0:00"
    )
    assert terminal.getvalue() == f"\r{first}\r{second}\r{' ' * len(second)}\r"
    piped = io.StringIO()
    bar = Progress(piped, 10, label="scan")
    bar.update(5, 1)
    bar.clear()
    assert piped.getvalue() == ""


def test_progress_bar_shows_long_times_left_in_hours() -> None:
    terminal = Terminal()
    now = [0.0]
    bar = Progress(terminal, 10**12, label="infer", interval=0.0, clock=lambda: now[0])
    now[0] = 10.0
    bar.update(10**8, 7)
    assert terminal.getvalue().endswith("  10.0 MB/s  ETA 27:46:30")


def test_progress_bar_redraws_at_most_once_per_interval() -> None:
    terminal = Terminal()
    bar = Progress(terminal, 100, label="x", interval=3600.0)
    for done in range(0, 100, 10):
        bar.update(done, done)
    assert terminal.getvalue().count("\r") == 1
