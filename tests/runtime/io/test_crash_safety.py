"""Crash safety of every way of writing records: a writer killed with SIGKILL at any moment leaves
only complete files under their final names.

A child process writes in a loop, replacing the same files again and again: a record class's
``write_tfrecord``, the runtime ``TFRecordWriter`` with gzip (flushing as it goes) and the record
class's ``write_dataset`` (shards plus a manifest, overwriting the previous dataset). It reports
each write as it starts and once it is closed. A first child writes every target to the end, so
the kills replace existing files whatever the machine's load. Then the parent kills children at a
random moment (seeded) during a write of each kind in turn, and after each kill checks that every
file under a final name reads without error and holds all the records of one write that had
finished (or was killed after its rename), that shards hold contiguous records of one write, and
that a manifest, when there is one, matches its shards. Temporary files are hidden (their names
start with a dot) and may be left behind.
"""

from __future__ import annotations

import random
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from codegen.runtime.io.reader import read_tfrecord
from support.modules import generated_module
from support.paths import GENERATED
from support.processes import PYTHON

KILLS = 12
"""Children killed: four during (or just after) each kind of write."""
WRITE_SECONDS = (0.01, 0.03, 0.1)
"""About how long each kind of write takes (file, gzip stream, dataset): the kill comes at a random
moment within that time after the write starts."""
SEED = 20240611

CHILD = """
import random, sys
sys.path.insert(0, sys.argv[1])
from basics import Basics
from codegen.runtime.io.writer import TFRecordWriter

out, first, last = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])


def records(i):
    rng = random.Random(i)
    count = 20 + i * 37 % 180
    return [
        Basics(my_ints=[i, j], my_float=float(j), my_bytes=rng.randbytes(rng.randrange(3000)))
        for j in range(count)
    ]


i = first
while last < 0 or i <= last:
    k = i // 3 % 2
    target = ("plain-%d.tfrecord" % k, "stream-%d.tfrecord.gz" % k, "dataset")[i % 3]
    batch = records(i)
    print("start", i, target, flush=True)
    if i % 3 == 0:
        Basics.write_tfrecord(out + "/" + target, batch)
    elif i % 3 == 1:
        with TFRecordWriter(out + "/" + target, compression="gzip") as writer:
            for j, record in enumerate(batch):
                writer.write(record.encode())
                if j % 4 == 3:
                    writer.flush()
    else:
        Basics.write_dataset(
            out + "/dataset", batch, max_records_per_shard=4,
            compression="gzip" if i % 2 else None, overwrite=True,
        )
    print("closed", i, target, flush=True)
    i += 1
"""
"""The child: argv is the generated modules' directory, the output directory, the first write's
number and the last one (-1: write until killed). Write ``i`` holds ``count(i)`` records
``my_ints=[i, j]`` for ``j`` in order."""


def count(i: int) -> int:
    """How many records the child's write number ``i`` holds (as ``CHILD`` computes it)."""
    return 20 + i * 37 % 180


@dataclass
class Log:
    """What the children reported, per target (a file, or ``dataset``): its last closed write, and
    the writes killed since then (each may or may not have reached its rename)."""

    closed: dict[str, int] = field(default_factory=dict)
    killed: dict[str, set[int]] = field(default_factory=dict)
    in_flight: tuple[int, str] | None = None
    next_write: int = 0
    kills_in_flight: int = 0

    def add(self, line: str) -> None:
        event, number, target = line.split()
        if event == "start":
            self.in_flight = (int(number), target)
            self.next_write = int(number) + 1
        else:
            self.closed[target] = int(number)
            self.killed[target] = set()
            self.in_flight = None

    def kill(self) -> None:
        if self.in_flight is not None:
            number, target = self.in_flight
            self.killed.setdefault(target, set()).add(number)
            self.kills_in_flight += 1
        self.in_flight = None

    def allowed(self, target: str) -> set[int]:
        """The writes whose records may be under ``target``."""
        closed = {self.closed[target]} if target in self.closed else set()
        return closed | self.killed.get(target, set())


@pytest.fixture(scope="module")
def basics() -> ModuleType:
    return generated_module("basics")


def write_of(records: list[Any], where: Path, *, whole: bool = True) -> int:
    """The number of the write that made ``records``, after checking they are all of it, in order,
    and (``whole``) all of its records."""
    numbers = {int(r.my_ints[0]) for r in records}
    assert len(numbers) == 1, f"{where}: records of writes {sorted(numbers)}"
    number = numbers.pop()
    indices = [int(r.my_ints[1]) for r in records]
    first = 0 if whole else indices[0]
    expected = range(count(number)) if whole else range(first, first + len(indices))
    assert indices == list(expected), f"{where}: records {indices} of write {number}"
    return number


def check_files(out: Path, log: Log, basics: ModuleType) -> None:
    """Every file under a final name is complete and holds one allowed write; every manifest
    matches its shards."""
    cls = basics.Basics
    for path in out.iterdir():
        if path.is_file() and not path.name.startswith("."):
            records = [cls.decode(data) for data in read_tfrecord(path)]
            assert write_of(records, path) in log.allowed(path.name), path
    for target in log.closed:
        assert (out / target).exists(), f"{target} was closed but is gone"
    dataset = out / "dataset"
    shards = [p for p in dataset.glob("*") if not p.name.startswith(".")]
    for path in shards:
        if ".tfrecord" in path.name:  # not the manifest, nor a killed writer's lock
            records = [cls.decode(data) for data in read_tfrecord(path)]
            if records:
                write_of(records, path, whole=False)
    if not (dataset / "basics.manifest.json").exists():
        assert "dataset" not in log.closed or log.killed["dataset"], "the manifest is gone"
        return
    manifest = cls.dataset_manifest(dataset)
    records = list(cls.read_dataset(dataset))
    assert len(records) == manifest.record_count
    assert write_of(records, dataset) in log.allowed("dataset")


def write_all_targets(out: Path, log: Log) -> None:
    """Runs a child to the end of writes 0 to 5, so that every target exists before the kills."""
    done = subprocess.run(
        [*PYTHON, "-c", CHILD, str(GENERATED), str(out), "0", "5"],
        stdout=subprocess.PIPE,
        text=True,
        check=True,
    )
    for line in done.stdout.splitlines(keepends=True):
        log.add(line)


def run_child(out: Path, log: Log, kind: int, rng: random.Random) -> None:
    """Starts a child and kills it at a random moment of its first write of ``kind`` (0: a file,
    1: a gzip stream, 2: a dataset)."""
    with subprocess.Popen(
        [*PYTHON, "-c", CHILD, str(GENERATED), str(out), str(log.next_write), "-1"],
        stdout=subprocess.PIPE,
        text=True,
    ) as proc:
        assert proc.stdout is not None
        while True:
            line = proc.stdout.readline()
            assert line.endswith("\n"), f"the child stopped with {proc.wait()}"
            log.add(line)
            if log.in_flight is not None and log.in_flight[0] % 3 == kind:
                break
        time.sleep(rng.uniform(0, WRITE_SECONDS[kind]))
        proc.send_signal(signal.SIGKILL)
        rest = proc.stdout.read()
        assert proc.wait() == -signal.SIGKILL
    for line in rest.splitlines(keepends=True):
        if line.endswith("\n"):
            log.add(line)
    log.kill()


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_killed_writers_leave_only_complete_files(tmp_path: Path, basics: ModuleType) -> None:
    rng = random.Random(SEED)
    log = Log()
    write_all_targets(tmp_path, log)
    targets = {"plain-0.tfrecord", "stream-0.tfrecord.gz", "dataset"}
    assert set(log.closed) == targets | {"plain-1.tfrecord", "stream-1.tfrecord.gz"}, log.closed
    check_files(tmp_path, log, basics)
    for kill in range(KILLS):
        run_child(tmp_path, log, kill % 3, rng)
        check_files(tmp_path, log, basics)
    assert log.kills_in_flight >= KILLS // 2, "too few kills came during a write"
