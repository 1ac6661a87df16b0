"""The contenders: one small function per way of doing a job, all timed on the same prepared data.

Groups, each with the baseline its ratios are taken against:

* ``encode`` (vs ``protobuf build+serialize``): Python values -> ``Example`` bytes, per record;
* ``decode`` (vs ``protobuf parse+access``): ``Example`` bytes -> the Python values, per record
  (or per column, for ``decode_batch``);
* ``read`` (vs TensorFlow's ``tf.data`` pipeline): a TFRecord file -> parsed records (or batches);
  with the same records split into :data:`SHARDS` files, tfr-gen's ``Dataset`` against TensorFlow's
  best-practice pipeline (parallel reads, parallel parsing, prefetching), and the ``limit`` row:
  what reading the file costs at the least (page-cache reads in large chunks, crc32c over them and
  one copy of the bytes, as a reader that checks and hands over every record must do);
* ``write`` (vs TensorFlow's ``TFRecordWriter``): serialized records -> a TFRecord file;
* ``s3 read`` (vs s3fs reading the objects' bytes): the :data:`SHARDS` files in a local S3 server
  (moto, on 127.0.0.1) through tfr-gen's ``Dataset`` (see :mod:`benchmarks.objectstore`);
* ``scan`` (vs tfr-gen's ``read_tfrecord`` of raw bytes): the ``tfr-gen`` commands that read a
  whole file (``stats``, ``cat --format json``, ``infer``, ``validate``, ``report --html``), run in-process
  as the command line runs them, their output thrown away;
* ``convert`` (vs a pyarrow baseline built on TensorFlow's parse): the TFRecord file -> a snappy Parquet file.

``tfr-gen encode_batch`` (columns -> ``Example`` bytes, batches built once from the records) and ``tfr-gen
decode_batch+to_arrow`` (bytes -> Arrow record batches) sit in the ``encode`` and ``decode`` groups.

Each contender's ``run()`` does the whole job once over all records and returns an
:class:`Outcome` with the number of records it handled. Per-record contenders drop each result
before the next record, as a streaming loop does: keeping thousands of decoded records alive would
time the kernel's first touch of the memory they hold (page faults, the same absolute cost for
every contender) rather than the work. A contender whose library is missing is
listed with the reason it was skipped.
"""

from __future__ import annotations

import importlib.util
import io
import json
import mmap
import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence, Sized
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol, cast

import crc32c

from benchmarks.objectstore import S3_DATASET, S3_RAW, s3_dataset, s3_raw
from benchmarks.prepare import Prepared
from benchmarks.workloads import ROOT
from codegen.cli import main as cli_main
from codegen.kinds import IMAGE_ENCODINGS
from codegen.runtime import read_tfrecord, write_tfrecord
from codegen.runtime.data.dataset import Dataset
from codegen.runtime.io.compression import Deflate, use_deflate
from codegen.runtime.tf.parse import parse_specs

Group = Literal[
    "encode", "decode", "read", "write", "gzip write", "gzip read", "s3 read", "scan", "convert"
]

GROUPS: tuple[Group, ...] = (
    "encode",
    "decode",
    "read",
    "write",
    "gzip write",
    "gzip read",
    "s3 read",
    "scan",
    "convert",
)
"""The groups, in report order."""

TFRGEN_ENCODE = "tfr-gen encode"
TFRGEN_CONSTRUCT_ENCODE = "tfr-gen construct+encode"
TFRGEN_ENCODE_BATCH = "tfr-gen encode_batch(1024) (columns)"
PROTOBUF_BUILD = "protobuf build+serialize"
TFRGEN_DECODE = "tfr-gen decode"
PROTOBUF_PARSE = "protobuf parse+access"
TFRGEN_DECODE_BATCH = "tfr-gen decode_batch(1024) (columns)"
TFRGEN_TO_ARROW = "tfr-gen decode_batch(1024)+to_arrow"
TFRGEN_DATASET = "tfr-gen dataset(batch_size=1024) (columns)"
TFRGEN_DATASET_THREADS = "tfr-gen dataset(batch_size=1024, num_threads=2) over 4 shards"
TFRGEN_RESUME = "tfr-gen dataset resume at mid-file (re-read, no decoding)"
TF_PIPELINE = "TF TFRecordDataset.batch(1024).map(Record.tf_parse)"
TF_IMAGE_PIPELINE = "TF map(parse_example+decode_jpeg, AUTOTUNE).batch(1024).prefetch"
TF_RAW_READ = "TF TFRecordDataset.batch(1024) (raw bytes)"
TFRGEN_DATASET_SHARDS = "tfr-gen dataset(batch_size=1024) over 4 shards"
TFRGEN_DATALOADER = "tfr-gen DataLoader(to_torch(), 2 workers, persistent) over 4 shards"
TF_BEST_PIPELINE = "TF best practice: 4 shards, parallel reads+map, prefetch"
LIMIT = "limit: 8 MiB reads + crc32c + one copy"
TFRGEN_READ = "tfr-gen read_tfrecord (decoded records)"
TFRGEN_RAW_READ = "tfr-gen runtime read_tfrecord (raw bytes)"
VAHIDK_READ = "vahidk tfrecord_loader"
TFRGEN_WRITE = "tfr-gen write_tfrecord"
TF_WRITE = "TF TFRecordWriter"
GZIP_WRITE = "tfr-gen write_tfrecord gzip (ISA-L)"
STDLIB_GZIP_WRITE = "tfr-gen write_tfrecord gzip (stdlib zlib)"
TF_GZIP_WRITE = "TF TFRecordWriter GZIP"
GZIP_READ = "tfr-gen runtime read_tfrecord gzip (libdeflate, members inflated ahead, raw bytes)"
STDLIB_GZIP_READ = "tfr-gen runtime read_tfrecord gzip (stdlib zlib, raw bytes)"
TF_GZIP_READ = "TF TFRecordDataset GZIP .batch(1024) (raw bytes)"
CLI_STATS = "tfr-gen stats FILE"
CLI_CAT = "tfr-gen cat --format json FILE"
CLI_INFER = "tfr-gen infer FILE"
CLI_VALIDATE = "tfr-gen validate SCHEMA FILE"
CLI_CONVERT = "tfr-gen convert SCHEMA FILE OUT.parquet"
TF_PYARROW_PARQUET = "TF parse_example -> pyarrow -> Parquet"
CLI_REPORT = "tfr-gen report --html PAGE FILE"

BASELINES: dict[Group, str] = {
    "encode": PROTOBUF_BUILD,
    "decode": PROTOBUF_PARSE,
    "read": TF_PIPELINE,
    "write": TF_WRITE,
    "gzip write": STDLIB_GZIP_WRITE,
    "gzip read": STDLIB_GZIP_READ,
    "s3 read": S3_RAW,
    "scan": TFRGEN_RAW_READ,
    "convert": TF_PYARROW_PARQUET,
}
"""The row each group's ratios are taken against."""

NAMES: tuple[str, ...] = (
    TFRGEN_ENCODE,
    TFRGEN_CONSTRUCT_ENCODE,
    TFRGEN_ENCODE_BATCH,
    PROTOBUF_BUILD,
    TFRGEN_DECODE,
    PROTOBUF_PARSE,
    TFRGEN_DECODE_BATCH,
    TFRGEN_TO_ARROW,
    TFRGEN_DATASET,
    TFRGEN_DATASET_THREADS,
    TFRGEN_RESUME,
    TF_PIPELINE,
    TF_IMAGE_PIPELINE,
    TF_RAW_READ,
    TFRGEN_DATASET_SHARDS,
    TFRGEN_DATALOADER,
    TF_BEST_PIPELINE,
    LIMIT,
    TFRGEN_READ,
    TFRGEN_RAW_READ,
    VAHIDK_READ,
    TFRGEN_WRITE,
    TF_WRITE,
    GZIP_WRITE,
    STDLIB_GZIP_WRITE,
    TF_GZIP_WRITE,
    GZIP_READ,
    STDLIB_GZIP_READ,
    TF_GZIP_READ,
    S3_DATASET,
    S3_RAW,
    CLI_STATS,
    CLI_CAT,
    CLI_INFER,
    CLI_VALIDATE,
    CLI_REPORT,
    CLI_CONVERT,
    TF_PYARROW_PARQUET,
)
"""Every contender, in report order."""

_VAHIDK_TYPES = {"int64_list": "int", "float_list": "float", "bytes_list": "byte"}


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one run did: how many records, and its time when the contender measured it itself."""

    records: int
    seconds: float | None = None


@dataclass(frozen=True, slots=True)
class Contender:
    """One way of doing a group's job (``run`` is ``None`` when ``skipped`` says why not)."""

    name: str
    group: Group
    run: Callable[[], Outcome] | None
    skipped: str | None = None


@dataclass(frozen=True, slots=True)
class Environment:
    """What the contenders may use: TensorFlow (``None``: ``tf_missing`` says why), vahidk's
    ``tfrecord`` (``vahidk_missing`` says why not), a scratch directory for written files, and pyarrow
    (``arrow_missing`` says why not), and s3fs with moto's S3 server (``s3_missing`` says why not)."""

    tf: Any
    tf_missing: str
    vahidk_missing: str | None
    scratch: Path
    arrow_missing: str | None = None
    s3_missing: str | None = None
    epoch_bytes: int = 0
    """The least bytes of records an epoch of the sharded rows reads (0: one pass over the records)."""


def _encode(p: Prepared) -> Callable[[], Outcome]:
    records = p.records

    def run() -> Outcome:
        for r in records:
            r.encode()
        return Outcome(len(records))

    return run


def _construct_encode(p: Prepared) -> Callable[[], Outcome]:
    cls, values = p.cls, p.values

    def run() -> Outcome:
        for v in values:
            cls(**v).encode()
        return Outcome(len(values))

    return run


def _protobuf_build(p: Prepared) -> Callable[[], Outcome]:
    build, values = p.protobuf.build, p.values

    def run() -> Outcome:
        for v in values:
            build(v).SerializeToString()
        return Outcome(len(values))

    return run


def _decode(p: Prepared) -> Callable[[], Outcome]:
    decode, serialized = p.cls.decode, p.serialized

    def run() -> Outcome:
        for data in serialized:
            decode(data)
        return Outcome(len(serialized))

    return run


def _protobuf_parse(p: Prepared) -> Callable[[], Outcome]:
    parse, access, serialized = p.protobuf.parse, p.protobuf.access, p.serialized

    def run() -> Outcome:
        for data in serialized:
            access(parse(data))
        return Outcome(len(serialized))

    return run


_BATCH = 1024
"""Records per batch of the columnar contenders (as in the TensorFlow pipeline)."""


class _Columnar(Protocol):
    """The columnar members of a generated record class."""

    def decode_batch(self, data: Sequence[bytes]) -> Sized: ...

    def dataset(
        self, files: str | list[str], *, batch_size: int, compression: None, num_threads: int = ...
    ) -> Dataset[Sized]: ...


def _batched(
    p: Prepared, name: str, group: Group, make: Callable[[], Callable[[], Outcome]]
) -> Contender:
    """A columnar contender, skipped when the generated class predates ``decode_batch``."""
    if not hasattr(p.cls, "decode_batch"):
        return Contender(
            name, group, None, f"{p.cls.__name__} has no decode_batch: regenerate its module"
        )
    return Contender(name, group, make())


def _decode_batch(p: Prepared) -> Callable[[], Outcome]:
    decode_batch = cast("_Columnar", p.cls).decode_batch
    chunks = [p.serialized[i : i + _BATCH] for i in range(0, p.count, _BATCH)]

    def run() -> Outcome:
        return Outcome(sum(len(decode_batch(chunk)) for chunk in chunks))

    return run


def _encode_batch(p: Prepared) -> Callable[[], Outcome]:
    """Batches of 1024 records (built once, as a DataFrame or a decoded batch already is) to their bytes."""
    cls = cast("Any", p.cls)
    batch_class = cls.__tfr__.batch_class()
    batches = [
        batch_class.from_records(p.records[i : i + _BATCH]) for i in range(0, p.count, _BATCH)
    ]
    encode_batch = cls.encode_batch

    def run() -> Outcome:
        return Outcome(sum(len(encode_batch(batch)) for batch in batches))

    return run


def _to_arrow(p: Prepared) -> Callable[[], Outcome]:
    decode_batch = cast("_Columnar", p.cls).decode_batch
    chunks = [p.serialized[i : i + _BATCH] for i in range(0, p.count, _BATCH)]

    def run() -> Outcome:
        return Outcome(
            sum(cast("Any", decode_batch(chunk)).to_arrow().num_rows for chunk in chunks)
        )

    return run


def _tf_pyarrow_parquet(p: Prepared, tf: Any, scratch: Path) -> Callable[[], Outcome]:
    """The baseline of ``convert``: TensorFlow parses batches of 1024 with the record's spec (``tf_parse``), the
    tensors become pyarrow arrays (dense ones as nested fixed-size lists, ragged ones as lists from their row
    splits, strings decoded), and ``pyarrow.parquet`` writes them with snappy."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = scratch / f"{p.workload.name}.tf.parquet"
    parse = p.cls.tf_parse
    dataset = tf.data.TFRecordDataset(str(p.path)).batch(_BATCH).map(parse)

    def column(tensor: Any) -> Any:
        if isinstance(tensor, tf.RaggedTensor):
            return pa.LargeListArray.from_arrays(
                pa.array(tensor.row_splits.numpy().astype("int64")), column(tensor.values)
            )
        values = tensor.numpy()
        if values.dtype == object:
            flat = pa.array(values.reshape(-1).tolist(), pa.binary())
        else:
            flat = pa.array(values.reshape(-1))
        for size in reversed(values.shape[1:]):
            flat = pa.FixedSizeListArray.from_arrays(flat, size)
        return flat

    def run() -> Outcome:
        count = 0
        writer = None
        for parsed in dataset:
            names = sorted(parsed)
            batch = pa.RecordBatch.from_arrays([column(parsed[n]) for n in names], names=names)
            if writer is None:
                writer = pq.ParquetWriter(path, batch.schema, compression="snappy")
            writer.write_batch(batch)
            count += batch.num_rows
        if writer is not None:
            writer.close()
        return Outcome(count)

    return run


def _dataset(p: Prepared) -> Callable[[], Outcome]:
    """Batches of the TFRecord file through ``Record.dataset`` (reading, CRC checks, decoding) in
    the iterating thread."""
    dataset = cast("_Columnar", p.cls).dataset(
        str(p.path), batch_size=_BATCH, compression=None, num_threads=1
    )

    def run() -> Outcome:
        return Outcome(sum(len(batch) for batch in dataset))

    return run


def _resume(p: Prepared) -> Callable[[], Outcome]:
    """What resuming costs: a ``Dataset`` loads a state saved half way through the file and reads
    the rest, re-reading the records before the position without decoding them: against the
    single-threaded ``Dataset`` row (which decodes every record), the time re-reading saves."""
    cls = cast("_Columnar", p.cls)
    first = cls.dataset(str(p.path), batch_size=_BATCH, compression=None, num_threads=1)
    batches = iter(first)
    for _ in range(max(1, len(p.serialized) // _BATCH // 2)):
        next(batches)
    state = first.state_dict()
    del batches

    def run() -> Outcome:
        dataset = cls.dataset(str(p.path), batch_size=_BATCH, compression=None, num_threads=1)
        dataset.load_state_dict(state)
        return Outcome(int(state["consumed"]) + sum(len(batch) for batch in dataset))

    return run


def _tf_pipeline(p: Prepared, tf: Any) -> Callable[[], Outcome]:
    """``TFRecordDataset -> batch(1024) -> map(Record.tf_parse)``: ``tf.io.parse_example`` (or
    ``parse_sequence_example``) with the generated specs, then the tensors in the declared dtypes
    and shapes (a raw tensor through ``tf.io.decode_raw`` and a reshape)."""
    parse = p.cls.tf_parse
    dataset = tf.data.TFRecordDataset(str(p.path)).batch(1024).map(lambda s: (tf.size(s), parse(s)))

    def run() -> Outcome:
        return Outcome(sum(int(n) for n, _ in dataset))

    return run


SHARDS = 4
"""How many files the sharded rows read (the same records as the one file, in turns)."""
EPOCH_BYTES = 64 << 20
"""The least bytes of records an epoch of the sharded rows reads in a measured run (see :func:`_epoch`)."""


def _shards(p: Prepared, scratch: Path) -> list[str]:
    """The records of ``p`` written into :data:`SHARDS` files in ``scratch`` (once per workload)."""
    paths = [scratch / f"{p.workload.name}.shard-{k}.tfrecord" for k in range(SHARDS)]
    if not all(path.exists() for path in paths):
        for k, path in enumerate(paths):
            write_tfrecord(path, p.serialized[k::SHARDS], compression=None)
    return [str(path) for path in paths]


def _epoch(p: Prepared, env: Environment) -> tuple[list[str], int]:
    """The files of one epoch of the sharded rows and how many passes over the records they hold.

    A loader's steady state is what it does within an epoch: each epoch starts its readers (and a
    DataLoader's workers their iterators) again, and the first batches wait for them. So an epoch
    of the sharded rows holds at least ``epoch_bytes`` (the :data:`SHARDS` files, then hard links to
    them under other names: every file is a file of its own to a loader), and a run's time is that
    of one pass over the records (the epoch's time divided by its passes)."""
    shards = _shards(p, env.scratch)
    passes = max(1, -(-env.epoch_bytes // max(p.total_bytes, 1)))
    files = list(shards)
    for copy in range(1, passes):
        for shard in shards:
            link = Path(shard).with_suffix(f".pass-{copy}.tfrecord")
            if not link.exists():
                os.link(shard, link)
            files.append(str(link))
    return files, passes


def _passes(count: int, passes: int, read: Callable[[], int]) -> Callable[[], Outcome]:
    """A run of an epoch of ``passes`` passes over ``count`` records (``read`` reads it and says how
    many records it read): the time of one pass."""

    def run() -> Outcome:
        start = time.perf_counter()
        records = read()
        seconds = time.perf_counter() - start
        if records != count * passes:
            return Outcome(records)  # (the suite names the row and the count)
        return Outcome(count, seconds / passes)

    return run


def _dataset_shards(p: Prepared, env: Environment, threads: int = 1) -> Callable[[], Outcome]:
    """Batches of an epoch of the sharded files through ``Record.dataset``, decoded by ``threads``
    threads."""
    files, passes = _epoch(p, env)
    dataset = cast("_Columnar", p.cls).dataset(
        files, batch_size=_BATCH, compression=None, num_threads=threads
    )
    return _passes(p.count, passes, lambda: sum(len(batch) for batch in dataset))


def _dataloader(p: Prepared, env: Environment) -> Callable[[], Outcome]:
    """Batches of an epoch of the sharded files as dicts of tensors through a PyTorch DataLoader:
    ``DataLoader(dataset.to_torch(), batch_size=None, num_workers=2, persistent_workers=True)``,
    each run one epoch of the same loader, so the timed rounds (after the warm-up round, which
    starts the workers) are its steady state; the batches reach the main process through the
    workers' reused shared memory."""
    import torch

    files, passes = _epoch(p, env)
    dataset = cast("_Columnar", p.cls).dataset(files, batch_size=_BATCH, compression=None)
    loader = torch.utils.data.DataLoader(
        dataset.to_torch(), batch_size=None, num_workers=2, persistent_workers=True
    )
    return _passes(p.count, passes, lambda: sum(_records(batch) for batch in loader))


def _records(batch: dict[str, Any]) -> int:
    """The records of a batch of tensors: its first column's length (a ragged one's row splits
    have one more)."""
    name, column = next(iter(batch.items()))
    return len(column) - 1 if name.endswith(".row_splits") else len(column)


def _torch_row(p: Prepared, env: Environment) -> Contender:
    """The DataLoader row, skipped without PyTorch (the ``torch`` extra)."""
    if importlib.util.find_spec("torch") is None:
        why = "PyTorch is not installed: pip install 'tfr-gen[torch]'"
        return Contender(TFRGEN_DATALOADER, "read", None, why)
    return _batched(p, TFRGEN_DATALOADER, "read", lambda: _dataloader(p, env))


def _tf_best_pipeline(p: Prepared, tf: Any, env: Environment) -> Callable[[], Outcome]:
    """TensorFlow's recommended input pipeline over an epoch of the sharded files:
    ``TFRecordDataset(files, num_parallel_reads=AUTOTUNE).batch(1024).map(parse,
    num_parallel_calls=AUTOTUNE).prefetch(AUTOTUNE)``."""
    parse, auto = p.cls.tf_parse, tf.data.AUTOTUNE
    files, passes = _epoch(p, env)
    dataset = (
        tf.data.TFRecordDataset(files, num_parallel_reads=auto)
        .batch(_BATCH)
        .map(lambda s: (tf.size(s), parse(s)), num_parallel_calls=auto)
        .prefetch(auto)
    )
    return _passes(p.count, passes, lambda: sum(int(n) for n, _ in dataset))


_CHUNK = 8 << 20


def _limit(p: Prepared) -> Callable[[], Outcome]:
    """The least any checked read of the file costs: the file read from the page cache in 8 MiB
    chunks into one buffer, crc32c over every chunk, and one copy of it (the payloads handed
    over). Both buffers are page-aligned (anonymous maps): a bytearray's memory starts 16 bytes
    into a page, where this machine's kernel copies a file's pages about ten times slower."""
    path, count = p.path, p.count
    buffer, copy = mmap.mmap(-1, _CHUNK), mmap.mmap(-1, _CHUNK)
    view, target = memoryview(buffer), memoryview(copy)

    def run() -> Outcome:
        with open(path, "rb", buffering=0) as file:
            while size := file.readinto(buffer):
                crc32c.crc32c(view[:size])
                target[:size] = view[:size]
        return Outcome(count)

    return run


def _tf_image_pipeline(p: Prepared, tf: Any) -> Callable[[], Outcome]:
    """TensorFlow's best practice for encoded images: ``TFRecordDataset -> map(parse_single_example +
    tf.io.decode_jpeg (decode_png, decode_image), num_parallel_calls=AUTOTUNE) -> batch(1024) -> prefetch``."""
    specs: dict[str, Any] = {}
    for info in p.spec:
        specs.update(parse_specs(info))
    images = {f.key: f for f in p.spec if f.encoding in IMAGE_ENCODINGS}
    decoders = {
        "jpeg": tf.io.decode_jpeg,
        "png": tf.io.decode_png,
        "image": lambda data, channels: tf.io.decode_image(
            data, channels=channels, expand_animations=False
        ),
    }

    def parse(serialized: Any) -> Any:
        parsed = tf.io.parse_single_example(serialized, specs)
        for key, info in images.items():
            decoded = decoders[info.encoding](parsed[key], channels=info.shape[2] or 0)
            parsed[key] = tf.ensure_shape(decoded, info.shape)
        return parsed

    autotune = tf.data.AUTOTUNE
    dataset = (
        tf.data.TFRecordDataset(str(p.path))
        .map(parse, num_parallel_calls=autotune)
        .batch(1024)
        .map(lambda batch: tf.shape(next(iter(batch.values())))[0])
        .prefetch(autotune)
    )

    def run() -> Outcome:
        return Outcome(sum(int(n) for n in dataset))

    return run


def _tf_raw_read(p: Prepared, tf: Any) -> Callable[[], Outcome]:
    dataset = tf.data.TFRecordDataset(str(p.path)).batch(1024)

    def run() -> Outcome:
        return Outcome(sum(int(batch.shape[0]) for batch in dataset))

    return run


def _tfrgen_read(p: Prepared) -> Callable[[], Outcome]:
    read, path = p.cls.read_tfrecord, p.path

    def run() -> Outcome:
        return Outcome(sum(1 for _ in read(path)))

    return run


def _tfrgen_raw_read(p: Prepared) -> Callable[[], Outcome]:
    path = p.path

    def run() -> Outcome:
        return Outcome(sum(1 for _ in read_tfrecord(path, compression=None)))

    return run


def vahidk_descriptions(p: Prepared) -> tuple[dict[str, str], dict[str, str] | None]:
    """vahidk's ``description`` (and ``sequence_description`` for a SequenceExample) of the data."""
    context: dict[str, str] = {}
    steps: dict[str, str] = {}
    for f in p.spec:
        into = steps if f.sequence else context
        into[f.key] = _VAHIDK_TYPES[f.wire]  # a raw tensor is one "byte" value
        into.update(dict.fromkeys(f.companions, "int"))  # its int64 shape or row lengths
    return context, steps if any(f.sequence for f in p.spec) else None


def _vahidk_read(p: Prepared) -> Callable[[], Outcome]:
    """vahidk's ``tfrecord_loader`` in a subprocess (its protos clash with TensorFlow's)."""
    description, sequence_description = vahidk_descriptions(p)
    job = json.dumps(
        {
            "path": str(p.path),
            "description": description,
            "sequence_description": sequence_description,
        }
    )
    command = [sys.executable, "-m", "benchmarks._vahidk_worker", job]

    def run() -> Outcome:
        done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            failure = done.stderr.strip()
            raise SystemExit(
                f"{p.workload.name}: the vahidk worker exited {done.returncode}:\n{failure}"
            )
        report = json.loads(done.stdout)
        return Outcome(int(report["records"]), float(report["seconds"]))

    return run


def _tfrgen_write(p: Prepared, scratch: Path) -> Callable[[], Outcome]:
    path, serialized = scratch / f"{p.workload.name}.tfr-gen.tfrecord", p.serialized

    def run() -> Outcome:
        return Outcome(write_tfrecord(path, serialized, compression=None))

    return run


def _tf_write(p: Prepared, tf: Any, scratch: Path) -> Callable[[], Outcome]:
    path, serialized = str(scratch / f"{p.workload.name}.tf.tfrecord"), p.serialized

    def run() -> Outcome:
        with tf.io.TFRecordWriter(path) as writer:
            for data in serialized:
                writer.write(data)
        return Outcome(len(serialized))

    return run


def _gzip_write(p: Prepared, scratch: Path, deflate: Deflate) -> Callable[[], Outcome]:
    """``write_tfrecord`` to a ``.gz`` file with ``deflate`` (ISA-L or the standard library)."""
    path, serialized = scratch / f"{p.workload.name}.{deflate}.tfrecord.gz", p.serialized

    def run() -> Outcome:
        before = use_deflate(deflate)
        try:
            return Outcome(write_tfrecord(path, serialized))
        finally:
            use_deflate(before)

    return run


def _tf_gzip_write(p: Prepared, tf: Any, scratch: Path) -> Callable[[], Outcome]:
    path, serialized = str(scratch / f"{p.workload.name}.tf.tfrecord.gz"), p.serialized
    options = tf.io.TFRecordOptions(compression_type="GZIP")

    def run() -> Outcome:
        with tf.io.TFRecordWriter(path, options) as writer:
            for data in serialized:
                writer.write(data)
        return Outcome(len(serialized))

    return run


def _gzip_file(p: Prepared, scratch: Path) -> Path:
    """The workload's records in one gzip file, written once as ``write_tfrecord`` writes it by
    default (members that carry their size): the same bytes whichever deflate reads them."""
    path = scratch / f"{p.workload.name}.read.tfrecord.gz"
    if not path.exists():
        write_tfrecord(path, p.serialized)
    return path


def _gzip_read(p: Prepared, scratch: Path, deflate: Deflate) -> Callable[[], Outcome]:
    path = _gzip_file(p, scratch)

    def run() -> Outcome:
        before = use_deflate(deflate)
        try:
            return Outcome(sum(1 for _ in read_tfrecord(path)))
        finally:
            use_deflate(before)

    return run


def _tf_gzip_read(p: Prepared, tf: Any, scratch: Path) -> Callable[[], Outcome]:
    path = str(_gzip_file(p, scratch))
    dataset = tf.data.TFRecordDataset(path, compression_type="GZIP").batch(1024)

    def run() -> Outcome:
        return Outcome(sum(int(batch.shape[0]) for batch in dataset))

    return run


def _s3_rows(p: Prepared, env: Environment) -> list[Contender]:
    """The ``s3 read`` rows (the server starts when the first of them runs)."""
    if env.s3_missing or not hasattr(p.cls, "decode_batch"):
        why = env.s3_missing or f"{p.cls.__name__} has no decode_batch: regenerate its module"
        return [
            Contender(S3_DATASET, "s3 read", None, why),
            Contender(S3_RAW, "s3 read", None, why),
        ]
    name, scratch, count = p.workload.name, env.scratch, p.count

    def shards() -> list[str]:
        return _shards(p, scratch)

    dataset = s3_dataset(name, p.cls, shards, count, _BATCH)
    raw = s3_raw(name, shards, sum(os.path.getsize(path) for path in shards()))

    def read_raw() -> Outcome:
        raw()
        return Outcome(count)

    return [
        Contender(S3_DATASET, "s3 read", lambda: Outcome(dataset())),
        Contender(S3_RAW, "s3 read", read_raw),
    ]


def _command(p: Prepared, *args: str) -> Callable[[], Outcome]:
    """``tfr-gen ARGS...`` in-process on the workload's file (``{file}``, ``{schema}`` and
    ``{record}`` in ``args`` are filled in), output to the null device; a failure stops the run."""
    schema = ROOT / "schemas" / f"{p.workload.module}.yaml"
    words = [a.format(file=p.path, schema=schema, record=p.workload.record) for a in args]

    def run() -> Outcome:
        err = io.StringIO()
        with open(os.devnull, "w", encoding="utf-8") as out:
            code = cli_main(words, out=out, err=err)
        if code != 0:
            raise SystemExit(
                f"{p.workload.name}: tfr-gen {' '.join(words)} exited {code}:\n{err.getvalue()}"
            )
        return Outcome(p.count)

    return run


def contenders(p: Prepared, env: Environment) -> list[Contender]:
    """Every contender on the prepared data, in :data:`NAMES` order (the skipped ones included)."""
    tf, scratch = env.tf, env.scratch

    def with_tf(name: str, group: Group, make: Callable[[], Callable[[], Outcome]]) -> Contender:
        if tf is None:
            return Contender(name, group, None, env.tf_missing)
        return Contender(name, group, make())

    def with_arrow(
        name: str,
        group: Group,
        make: Callable[[], Callable[[], Outcome]],
        *,
        needs_tf: bool = False,
    ) -> Contender:
        if env.arrow_missing:
            return Contender(name, group, None, env.arrow_missing)
        if needs_tf and tf is None:
            return Contender(name, group, None, env.tf_missing)
        return Contender(name, group, make())

    vahidk = (
        Contender(VAHIDK_READ, "read", None, env.vahidk_missing)
        if env.vahidk_missing
        else Contender(VAHIDK_READ, "read", _vahidk_read(p))
    )
    parquet = f"{env.scratch / p.workload.name}.tfr-gen.parquet"
    return [
        Contender(TFRGEN_ENCODE, "encode", _encode(p)),
        Contender(TFRGEN_CONSTRUCT_ENCODE, "encode", _construct_encode(p)),
        with_arrow(TFRGEN_ENCODE_BATCH, "encode", lambda: _encode_batch(p)),
        Contender(PROTOBUF_BUILD, "encode", _protobuf_build(p)),
        Contender(TFRGEN_DECODE, "decode", _decode(p)),
        Contender(PROTOBUF_PARSE, "decode", _protobuf_parse(p)),
        _batched(p, TFRGEN_DECODE_BATCH, "decode", lambda: _decode_batch(p)),
        with_arrow(TFRGEN_TO_ARROW, "decode", lambda: _to_arrow(p)),
        _batched(p, TFRGEN_DATASET, "read", lambda: _dataset(p)),
        _batched(p, TFRGEN_DATASET_THREADS, "read", lambda: _dataset_shards(p, env, 2)),
        _batched(p, TFRGEN_RESUME, "read", lambda: _resume(p)),
        with_tf(TF_PIPELINE, "read", lambda: _tf_pipeline(p, tf)),
        (
            with_tf(TF_IMAGE_PIPELINE, "read", lambda: _tf_image_pipeline(p, tf))
            if any(f.encoding in IMAGE_ENCODINGS for f in p.spec)
            else Contender(TF_IMAGE_PIPELINE, "read", None, "no encoded images")
        ),
        with_tf(TF_RAW_READ, "read", lambda: _tf_raw_read(p, tf)),
        _batched(p, TFRGEN_DATASET_SHARDS, "read", lambda: _dataset_shards(p, env)),
        _torch_row(p, env),
        with_tf(TF_BEST_PIPELINE, "read", lambda: _tf_best_pipeline(p, tf, env)),
        Contender(LIMIT, "read", _limit(p)),
        Contender(TFRGEN_READ, "read", _tfrgen_read(p)),
        Contender(TFRGEN_RAW_READ, "read", _tfrgen_raw_read(p)),
        vahidk,
        Contender(TFRGEN_WRITE, "write", _tfrgen_write(p, scratch)),
        with_tf(TF_WRITE, "write", lambda: _tf_write(p, tf, scratch)),
        Contender(GZIP_WRITE, "gzip write", _gzip_write(p, scratch, "isal")),
        Contender(STDLIB_GZIP_WRITE, "gzip write", _gzip_write(p, scratch, "zlib")),
        with_tf(TF_GZIP_WRITE, "gzip write", lambda: _tf_gzip_write(p, tf, scratch)),
        Contender(GZIP_READ, "gzip read", _gzip_read(p, scratch, "isal")),
        Contender(STDLIB_GZIP_READ, "gzip read", _gzip_read(p, scratch, "zlib")),
        with_tf(TF_GZIP_READ, "gzip read", lambda: _tf_gzip_read(p, tf, scratch)),
        *_s3_rows(p, env),
        Contender(CLI_STATS, "scan", _command(p, "stats", "{file}")),
        Contender(CLI_CAT, "scan", _command(p, "cat", "--format", "json", "{file}")),
        Contender(CLI_INFER, "scan", _command(p, "infer", "{file}")),
        Contender(
            CLI_VALIDATE,
            "scan",
            _command(p, "validate", "{schema}", "{file}", "--record", "{record}"),
        ),
        Contender(
            CLI_REPORT,
            "scan",
            _command(p, "report", "{file}", "--html", str(scratch / f"{p.workload.name}.html")),
        ),
        with_arrow(
            CLI_CONVERT,
            "convert",
            lambda: _command(p, "convert", "{schema}", "{file}", parquet, "--record", "{record}"),
        ),
        with_arrow(
            TF_PYARROW_PARQUET,
            "convert",
            lambda: _tf_pyarrow_parquet(p, tf, scratch),
            needs_tf=True,
        ),
    ]
