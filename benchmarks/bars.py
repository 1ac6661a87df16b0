"""The speed-ups the suite requires, checked against a run's results.

Each bar compares two rows of one workload in one run (medians): per-record ``encode``/``decode``
against protobuf, ``decode_batch`` and the ``Dataset`` against TensorFlow's batched pipeline, the
``Dataset`` against vahidk's loader, the ``Dataset`` decoding in 2 threads against TensorFlow's
best-practice pipeline and against the single-threaded ``Dataset`` over 4 shards (epochs of at least
64 MB: steady state), the single-threaded ``Dataset`` against the limit of reading its file
(``Workload.limit_bar``), a PyTorch DataLoader with 2 persistent workers against the single-threaded
``Dataset`` over the same shards (``Workload.workers_bar``), the
writer against ``tf.io.TFRecordWriter``, gzip writing (ISA-L) and reading (libdeflate) against the
standard library's zlib, the ``Dataset`` over shards in a local S3 server against s3fs reading their
bytes, ``to_arrow``'s cost over ``decode_batch``, ``encode_batch`` against
per-record encoding, ``convert`` against a pyarrow baseline, and on the JPEG workload the
``Dataset`` against TensorFlow's image pipeline (with the same pixels: the decoders agree exactly).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from benchmarks.contenders import (
    CLI_CONVERT,
    GZIP_READ,
    GZIP_WRITE,
    LIMIT,
    PROTOBUF_BUILD,
    PROTOBUF_PARSE,
    STDLIB_GZIP_READ,
    STDLIB_GZIP_WRITE,
    TF_BEST_PIPELINE,
    TF_IMAGE_PIPELINE,
    TF_PIPELINE,
    TF_PYARROW_PARQUET,
    TF_WRITE,
    TFRGEN_CONSTRUCT_ENCODE,
    TFRGEN_DATALOADER,
    TFRGEN_DATASET,
    TFRGEN_DATASET_SHARDS,
    TFRGEN_DATASET_THREADS,
    TFRGEN_DECODE,
    TFRGEN_DECODE_BATCH,
    TFRGEN_ENCODE,
    TFRGEN_ENCODE_BATCH,
    TFRGEN_TO_ARROW,
    TFRGEN_WRITE,
    VAHIDK_READ,
)
from benchmarks.objectstore import S3_DATASET, S3_RAW
from benchmarks.report_scan import ReportScan
from benchmarks.results import WorkloadResult
from benchmarks.workloads import BY_NAME, Workload

DATASET_VS_TF = 0.8
"""The ``Dataset`` end to end from files, against TensorFlow's pipeline, on every workload."""
DATASET_VS_VAHIDK = 10.0
"""The ``Dataset`` end to end from files, against vahidk's ``tfrecord_loader``, on every workload."""
DATASET_VS_TF_BEST = 6.0
"""The ``Dataset`` over 4 shards against TensorFlow's best-practice pipeline over the same shards, on
every workload (a 2-core bar: TensorFlow parses on every core)."""
WRITE_VS_TF = 1.0
"""``write_tfrecord`` against ``tf.io.TFRecordWriter`` with the same bytes, on every workload."""
TO_ARROW_VS_DECODE_BATCH = 1 / 1.1
"""``decode_batch`` then ``to_arrow`` against ``decode_batch`` alone: Arrow adds at most 10%, on every workload.
Compared by their fastest runs (see :data:`BY_FASTEST`)."""
ENCODE_BATCH_VS_CONSTRUCT = 5.0
"""``encode_batch`` from columns against per-record construct+encode, on every workload but encoded images (whose
encoding is compressing each image to JPEG)."""
ENCODE_BATCH_VS_ENCODE = 2.0
"""``encode_batch`` from columns against per-record ``encode`` of records already built, on every workload but
encoded images."""
CONVERT_VS_PYARROW = 3.0
"""``tfr-gen convert`` TFRecord -> snappy Parquet against TensorFlow's parse plus pyarrow, on every workload."""
REPORT_MB_PER_S = 100.0
"""``tfr-gen report --html`` over 1 GB of customer records (``--report-scan``), in MB/s."""
REPORT_MEMORY_GROWTH = 1.25
"""Peak memory of that run at most this many times that over a file 16 times smaller."""
REPORT_MEMORY_SLACK = 32_000_000
"""Bytes of peak memory the big run may add to that bound (allocator noise)."""
GZIP_WRITE_VS_STDLIB = 4.0
"""``write_tfrecord`` of a gzip file through ISA-L against the standard library's zlib, same records."""
GZIP_READ_VS_STDLIB = 1.8
"""Reading a gzip file's records with the accelerated deflate (sized members read and inflated by libdeflate in
worker threads) against the standard library's zlib (sequential), same file (as ``write_tfrecord`` writes it)."""
S3_DATASET_VS_RAW = 0.8
"""The ``Dataset`` over 4 shards in a local S3 server against s3fs reading the same objects' bytes alone, on every
workload whose records the other readers decode as well (``Workload.shared_bars``: not encoded images)."""


BY_FASTEST = frozenset({(TFRGEN_TO_ARROW, TFRGEN_DECODE_BATCH)})
"""Bars whose rows are compared by their fastest runs rather than their medians: the two rows do the same work
but for a few percent (both decode the same batches, one of them also converts them), so a bar of 10% is a
question of the cost without interference, which on a loaded machine the medians of short runs (a few batches)
do not answer; the fastest of the interleaved runs does (each row's best round against the other's)."""


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
    fastest: bool = False
    """The ratio is that of the fastest runs (else of the medians)."""

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
        if self.fastest and self.ratio is not None:
            measured += " (fastest runs)"
        return (
            f"{self.verdict}  {self.workload}: {self.contender} {measured} {self.baseline} "
            f"(bar >= {self.required:g}x)"
        )


def required(workload: Workload) -> tuple[tuple[str, str, float], ...]:
    """The bars of ``workload``: (contender, baseline, least speed-up), in report order."""
    shared = workload.shared_bars
    bars = (
        (TFRGEN_ENCODE, PROTOBUF_BUILD, workload.encode_bar),
        (TFRGEN_DECODE, PROTOBUF_PARSE, workload.decode_bar),
        (TFRGEN_DECODE_BATCH, TF_PIPELINE, workload.batch_bar),
        (TFRGEN_DATASET, TF_PIPELINE, DATASET_VS_TF if shared else None),
        (TFRGEN_DATASET, VAHIDK_READ, DATASET_VS_VAHIDK if shared else None),
        (TFRGEN_DATASET_THREADS, TF_BEST_PIPELINE, DATASET_VS_TF_BEST if shared else None),
        (TFRGEN_DATASET, LIMIT, workload.limit_bar),
        (TFRGEN_DATASET_THREADS, TFRGEN_DATASET_SHARDS, workload.threads_bar),
        (TFRGEN_DATALOADER, TFRGEN_DATASET_SHARDS, workload.workers_bar),
        (TFRGEN_DATASET, TF_IMAGE_PIPELINE, workload.image_bar),
        (TFRGEN_WRITE, TF_WRITE, WRITE_VS_TF),
        (GZIP_WRITE, STDLIB_GZIP_WRITE, GZIP_WRITE_VS_STDLIB),
        (GZIP_READ, STDLIB_GZIP_READ, GZIP_READ_VS_STDLIB),
        # The Dataset against s3fs fetching the bytes alone, and columnar against per-record
        # encoding: not on encoded images, whose Dataset decodes every JPEG (s3fs decodes nothing)
        # and whose encoding is JPEG compression, either way.
        (S3_DATASET, S3_RAW, S3_DATASET_VS_RAW if shared else None),
        (TFRGEN_TO_ARROW, TFRGEN_DECODE_BATCH, TO_ARROW_VS_DECODE_BATCH),
        (
            TFRGEN_ENCODE_BATCH,
            TFRGEN_CONSTRUCT_ENCODE,
            ENCODE_BATCH_VS_CONSTRUCT if shared else None,
        ),
        (TFRGEN_ENCODE_BATCH, TFRGEN_ENCODE, ENCODE_BATCH_VS_ENCODE if shared else None),
        (CLI_CONVERT, TF_PYARROW_PARQUET, CONVERT_VS_PYARROW),
    )
    return tuple((c, b, r) for c, b, r in bars if r is not None)


def report_scan_bars(scan: ReportScan) -> list[str]:
    """PASS/FAIL lines of the ``--report-scan`` bars: its speed, and peak memory that does not grow
    with the file."""
    speed = "PASS" if scan.mb_per_s >= REPORT_MB_PER_S else "FAIL"
    bound = scan.small_peak * REPORT_MEMORY_GROWTH + REPORT_MEMORY_SLACK
    memory = "PASS" if scan.big_peak <= bound else "FAIL"
    return [
        f"{speed}  report-scan: {scan.mb_per_s:,.1f} MB/s (bar >= {REPORT_MB_PER_S:g} MB/s)",
        f"{memory}  report-scan: peak memory {scan.big_peak / 1e6:,.0f} MB over "
        f"{scan.big_bytes / 1e6:,.0f} MB, {scan.small_peak / 1e6:,.0f} MB over "
        f"{scan.small_bytes / 1e6:,.0f} MB (bar: at most {REPORT_MEMORY_GROWTH:g}x + "
        f"{REPORT_MEMORY_SLACK / 1e6:g} MB)",
    ]


def evaluate(results: Sequence[WorkloadResult]) -> list[Bar]:
    """The bars of every workload in ``results``, in result order (``SKIP`` where a row is
    missing)."""
    bars: list[Bar] = []
    for result in results:
        for contender, baseline, least in required(BY_NAME[result.name]):
            fastest = (contender, baseline) in BY_FASTEST
            ratio = result.speedup(contender, baseline, fastest=fastest)
            bars.append(Bar(result.name, contender, baseline, least, ratio, fastest))
    return bars
