"""The data of one workload run, built deterministically, and the check that all paths agree on it.

:func:`prepare` builds the values, the records, their serialized bytes and a TFRecord file of them
(same seed, same bytes, on every machine). :func:`verify` checks, before anything is timed, that
tfr-gen and protobuf serialize the values to the same message and read the same values back.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.protobuf_path import ProtobufPath, Values
from benchmarks.workloads import Record, RecordClass, Workload
from codegen.kinds import IMAGE_ENCODINGS
from codegen.runtime import FeatureSpec, write_tfrecord

_MAX_PROBLEMS = 5


@dataclass(frozen=True, slots=True)
class Prepared:
    """One workload's benchmark data.

    ``values`` are the records' constructor arguments, ``records`` the constructed records,
    ``serialized`` their ``encode()`` bytes and ``path`` a TFRecord file of those bytes.
    """

    workload: Workload
    cls: RecordClass
    spec: FeatureSpec
    protobuf: ProtobufPath
    values: list[Values]
    records: list[Record]
    serialized: list[bytes]
    path: Path

    @property
    def count(self) -> int:
        """How many records."""
        return len(self.records)

    @property
    def total_bytes(self) -> int:
        """The size of all serialized records (without TFRecord framing)."""
        return sum(map(len, self.serialized))


def prepare(
    workload: Workload, cls: RecordClass, count: int, data_dir: Path, seed: int
) -> Prepared:
    """Build ``count`` records of ``workload`` from ``seed`` and write them to ``data_dir``."""
    rng = np.random.default_rng([seed, zlib.crc32(workload.name.encode())])
    spec = cls.feature_spec()
    values = [workload.make_values(rng, spec) for _ in range(count)]
    records = [cls(**v) for v in values]
    serialized = [r.encode() for r in records]
    if any(f.encoding in IMAGE_ENCODINGS for f in spec):
        # Lossy images: the records are what their bytes decode to (JPEG does not give the pixels back).
        records = [cls.decode(data) for data in serialized]
    data_dir.mkdir(parents=True, exist_ok=True)
    path = data_dir / f"{workload.name}.tfrecord"
    write_tfrecord(path, serialized, compression=None)
    protobuf = ProtobufPath(spec, workload.sequence)
    return Prepared(workload, cls, spec, protobuf, values, records, serialized, path)


def record_values(record: Record, spec: FeatureSpec) -> Values:
    """A record's attribute values by name."""
    return {f.name: getattr(record, f.name) for f in spec}


def same_value(a: Any, b: Any) -> bool:
    """Whether two feature values are equal in type, dtype, shape and content."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (
            isinstance(a, np.ndarray)
            and isinstance(b, np.ndarray)
            and a.dtype == b.dtype
            and a.shape == b.shape
            and bool(np.array_equal(a, b))
        )
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and bool(a == b)


def _differences(ours: Values, theirs: Values) -> list[str]:
    """The attributes whose values differ, each with both values."""
    return [
        f"{name}: tfr-gen {ours[name]!r}, protobuf {theirs.get(name)!r}"
        for name in ours
        if not same_value(ours[name], theirs.get(name))
    ]


@dataclass(frozen=True, slots=True)
class Verification:
    """What :func:`verify` found: disagreements on values (a few at most) and how many records'
    ``encode()`` bytes are not byte-identical to protobuf's deterministic serialization (while
    holding the same message)."""

    problems: list[str]
    reordered: int


def verify(prepared: Prepared) -> Verification:
    """Check every record of the prepared data against protobuf.

    Problems: the protobuf message built from the values differs from the message ``encode()``
    gives; ``decode`` of those bytes differs from the record; protobuf's parse+access gives other
    values than ``decode``.
    """
    problems: list[str] = []
    reordered = 0
    where = prepared.workload.name
    pb = prepared.protobuf
    for i, (values, record, data) in enumerate(
        zip(prepared.values, prepared.records, prepared.serialized, strict=True)
    ):
        built = pb.build(values)
        if built.SerializeToString(deterministic=True) != data:
            if pb.parse(data) == built:
                reordered += 1
            else:
                problems.append(
                    f"{where} record {i}: encode() gives another message than protobuf builds"
                )
        decoded = prepared.cls.decode(data)
        if decoded != record:
            problems.append(f"{where} record {i}: decode(encode()) differs from the record")
        differences = _differences(record_values(decoded, prepared.spec), pb.access(pb.parse(data)))
        if differences:
            problems.append(
                f"{where} record {i}: decode and protobuf parse+access differ: "
                + "; ".join(differences)
            )
        if len(problems) >= _MAX_PROBLEMS:
            break
    return Verification(problems, reordered)
