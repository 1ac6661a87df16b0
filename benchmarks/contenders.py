"""The contenders: one small function per way of doing a job, all timed on the same prepared data.

Groups, each with the baseline its ratios are taken against:

* ``encode`` (vs ``protobuf build+serialize``): Python values -> ``Example`` bytes, per record;
* ``decode`` (vs ``protobuf parse+access``): ``Example`` bytes -> the Python values, per record;
* ``read`` (vs TensorFlow's ``tf.data`` pipeline): a TFRecord file -> parsed records;
* ``write`` (vs TensorFlow's ``TFRecordWriter``): serialized records -> a TFRecord file.

Each contender's ``run()`` does the whole job once over all records and returns an
:class:`Outcome` with the number of records it handled. A contender whose library is missing is
listed with the reason it was skipped.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from benchmarks.prepare import Prepared
from benchmarks.protobuf_path import is_raw
from benchmarks.workloads import ROOT
from codegen.runtime import read_tfrecord, write_tfrecord

Group = Literal["encode", "decode", "read", "write"]

GROUPS: tuple[Group, ...] = ("encode", "decode", "read", "write")
"""The groups, in report order."""

TFRGEN_ENCODE = "tfr-gen encode"
TFRGEN_CONSTRUCT_ENCODE = "tfr-gen construct+encode"
PROTOBUF_BUILD = "protobuf build+serialize"
TFRGEN_DECODE = "tfr-gen decode"
PROTOBUF_PARSE = "protobuf parse+access"
TF_PIPELINE = "TF TFRecordDataset.batch(1024).map(parse_example)"
TF_RAW_READ = "TF TFRecordDataset.batch(1024) (raw bytes)"
TFRGEN_READ = "tfr-gen read_tfrecord (decoded records)"
TFRGEN_RAW_READ = "tfr-gen runtime read_tfrecord (raw bytes)"
VAHIDK_READ = "vahidk tfrecord_loader"
TFRGEN_WRITE = "tfr-gen write_tfrecord"
TF_WRITE = "TF TFRecordWriter"

BASELINES: dict[Group, str] = {
    "encode": PROTOBUF_BUILD,
    "decode": PROTOBUF_PARSE,
    "read": TF_PIPELINE,
    "write": TF_WRITE,
}
"""The row each group's ratios are taken against."""

NAMES: tuple[str, ...] = (
    TFRGEN_ENCODE,
    TFRGEN_CONSTRUCT_ENCODE,
    PROTOBUF_BUILD,
    TFRGEN_DECODE,
    PROTOBUF_PARSE,
    TF_PIPELINE,
    TF_RAW_READ,
    TFRGEN_READ,
    TFRGEN_RAW_READ,
    VAHIDK_READ,
    TFRGEN_WRITE,
    TF_WRITE,
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
    ``tfrecord`` (``vahidk_missing`` says why not) and a scratch directory for written files."""

    tf: Any
    tf_missing: str
    vahidk_missing: str | None
    scratch: Path


def _encode(p: Prepared) -> Callable[[], Outcome]:
    records = p.records

    def run() -> Outcome:
        return Outcome(len([r.encode() for r in records]))

    return run


def _construct_encode(p: Prepared) -> Callable[[], Outcome]:
    cls, values = p.cls, p.values

    def run() -> Outcome:
        return Outcome(len([cls(**v).encode() for v in values]))

    return run


def _protobuf_build(p: Prepared) -> Callable[[], Outcome]:
    build, values = p.protobuf.build, p.values

    def run() -> Outcome:
        return Outcome(len([build(v).SerializeToString() for v in values]))

    return run


def _decode(p: Prepared) -> Callable[[], Outcome]:
    decode, serialized = p.cls.decode, p.serialized

    def run() -> Outcome:
        return Outcome(len([decode(data) for data in serialized]))

    return run


def _protobuf_parse(p: Prepared) -> Callable[[], Outcome]:
    parse, access, serialized = p.protobuf.parse, p.protobuf.access, p.serialized

    def run() -> Outcome:
        return Outcome(len([access(parse(data)) for data in serialized]))

    return run


def _tf_pipeline(p: Prepared, tf: Any) -> Callable[[], Outcome]:
    """``TFRecordDataset -> batch(1024) -> map(parse)`` with the generated ``tf_feature_spec()``."""
    spec = p.cls.tf_feature_spec()
    steps = {f.key for f in p.spec if f.name in p.workload.sequence}

    def parse(serialized: Any) -> Any:
        if not steps:
            return tf.io.parse_example(serialized, spec)
        return tf.io.parse_sequence_example(
            serialized,
            context_features={k: v for k, v in spec.items() if k not in steps},
            sequence_features={k: v for k, v in spec.items() if k in steps},
        )

    dataset = tf.data.TFRecordDataset(str(p.path)).batch(1024).map(lambda s: (tf.size(s), parse(s)))

    def run() -> Outcome:
        return Outcome(sum(int(n) for n, _ in dataset))

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
        (steps if f.name in p.workload.sequence else context)[f.key] = _VAHIDK_TYPES[f.wire]
        if is_raw(f) and not f.fixed:
            context[f"{f.key}/shape"] = "int"  # the shape companion of a raw tensor
    return context, steps if p.workload.sequence else None


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


def contenders(p: Prepared, env: Environment) -> list[Contender]:
    """Every contender on the prepared data, in :data:`NAMES` order (the skipped ones included)."""
    tf, scratch = env.tf, env.scratch

    def with_tf(name: str, group: Group, make: Callable[[], Callable[[], Outcome]]) -> Contender:
        if tf is None:
            return Contender(name, group, None, env.tf_missing)
        return Contender(name, group, make())

    vahidk = (
        Contender(VAHIDK_READ, "read", None, env.vahidk_missing)
        if env.vahidk_missing
        else Contender(VAHIDK_READ, "read", _vahidk_read(p))
    )
    return [
        Contender(TFRGEN_ENCODE, "encode", _encode(p)),
        Contender(TFRGEN_CONSTRUCT_ENCODE, "encode", _construct_encode(p)),
        Contender(PROTOBUF_BUILD, "encode", _protobuf_build(p)),
        Contender(TFRGEN_DECODE, "decode", _decode(p)),
        Contender(PROTOBUF_PARSE, "decode", _protobuf_parse(p)),
        # The columnar decode_batch joins the decode group here; the multi-file Dataset, read.
        with_tf(TF_PIPELINE, "read", lambda: _tf_pipeline(p, tf)),
        with_tf(TF_RAW_READ, "read", lambda: _tf_raw_read(p, tf)),
        Contender(TFRGEN_READ, "read", _tfrgen_read(p)),
        Contender(TFRGEN_RAW_READ, "read", _tfrgen_raw_read(p)),
        vahidk,
        Contender(TFRGEN_WRITE, "write", _tfrgen_write(p, scratch)),
        with_tf(TF_WRITE, "write", lambda: _tf_write(p, tf, scratch)),
    ]
