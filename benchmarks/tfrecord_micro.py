"""Micro-benchmark of TFRecord file I/O: tfr-gen's runtime against TensorFlow, in the same run.

Cases: 100k records of 100 bytes and 10k records of 10 kB, uncompressed. For each it prints
records/s and MB/s (of record data) for

* writing: ``write_tfrecord`` (includes the fsync and rename of its crash-safe close) against
  ``tf.io.TFRecordWriter``;
* reading raw records (no parsing): ``read_tfrecord`` against iterating
  ``tf.data.TFRecordDataset`` one element at a time, and batched by 1024 (TensorFlow's fastest
  path to Python),

with the throughput ratio ours/TF (on the batched row: ours, one record at a time, against
TensorFlow batched). Each figure is the best of ``--repeat`` runs over a file in the page cache.

Run: ``python benchmarks/tfrecord_micro.py [--repeat N]``
"""

from __future__ import annotations

import argparse
import os
import random
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from codegen.runtime.io.reader import read_tfrecord
from codegen.runtime.io.writer import write_tfrecord

CASES = [("100k x 100 B", 100_000, 100), ("10k x 10 kB", 10_000, 10_000)]


def best_seconds(run: Callable[[], int], repeat: int, expected: int) -> float:
    """The fastest of ``repeat`` runs of ``run``, which must return the record count."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        count = run()
        best = min(best, time.perf_counter() - start)
        if count != expected:
            raise RuntimeError(f"expected {expected} records, got {count}")
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure (best is kept)")
    args = parser.parse_args()

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf

    tf_module: Any = tf
    print(f"{'case':<14} {'operation':<22} {'records/s':>12} {'MB/s':>9} {'ours/TF':>8}")
    with tempfile.TemporaryDirectory() as tmp:
        for name, count, size in CASES:
            rng = random.Random(0)
            records = [rng.randbytes(size) for _ in range(count)]
            megabytes = count * size / 1e6
            ours_path = Path(tmp, "ours.tfrecord")
            tf_path = Path(tmp, "tf.tfrecord")

            def ours_write(path: Path = ours_path, data: list[bytes] = records) -> int:
                return write_tfrecord(path, data, compression=None)

            def tf_write(path: Path = tf_path, data: list[bytes] = records) -> int:
                with tf_module.io.TFRecordWriter(str(path)) as writer:
                    for record in data:
                        writer.write(record)
                return len(data)

            def ours_read(path: Path = ours_path) -> int:
                return sum(1 for _ in read_tfrecord(path, compression=None))

            def tf_read(path: Path = tf_path) -> int:
                return sum(1 for _ in tf_module.data.TFRecordDataset(str(path)))

            def tf_read_batched(path: Path = tf_path) -> int:
                dataset = tf_module.data.TFRecordDataset(str(path)).batch(1024)
                return sum(int(batch.shape[0]) for batch in dataset)

            timings = {
                label: best_seconds(run, args.repeat, count)
                for label, run in [
                    ("write ours", ours_write),
                    ("write TF", tf_write),
                    ("read ours", ours_read),
                    ("read TF", tf_read),
                    ("read TF batched", tf_read_batched),
                ]
            }
            speedup = {  # throughput of ours over that of TensorFlow's path
                "write ours": timings["write TF"] / timings["write ours"],
                "read ours": timings["read TF"] / timings["read ours"],
                "read TF batched": timings["read TF batched"] / timings["read ours"],
            }
            for label, seconds in timings.items():
                ratio = f"{speedup[label]:.2f}x" if label in speedup else ""
                print(
                    f"{name:<14} {label:<22} {count / seconds:>12,.0f} "
                    f"{megabytes / seconds:>9.1f} {ratio:>8}"
                )


if __name__ == "__main__":
    main()
