"""``tfr-gen stats``: per-key statistics of TensorFlow's and our files, in text and JSON, and what
``--on-error`` does with damaged files."""

from __future__ import annotations

import json
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from test_tools_common import (
    CUSTOMERS,
    assert_snapshot,
    flip_byte,
    frame_offsets,
    generated,
    run_cli,
    tf_customers,
    tf_digits,
    tf_sentences,
    tf_write,
)

from codegen.runtime.codec import wire
from codegen.runtime.io.writer import write_tfrecord
from codegen.tools.observe import Observation


@pytest.fixture(scope="module")
def tutorial(tf: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("stats")
    tf_write(tf, directory / "customer.tfrecord", tf_customers(tf))
    tf_write(tf, directory / "digits.tfrecord", tf_digits(tf))
    tf_write(tf, directory / "sentences.tfrecord", tf_sentences(tf))
    return directory


@pytest.mark.parametrize("fmt", ["text", "json"])
@pytest.mark.parametrize("data", ["customer", "digits", "sentences"])
def test_statistics_of_tensorflow_files(tutorial: Path, data: str, fmt: str) -> None:
    code, out, err = run_cli("stats", f"{data}.tfrecord", "--format", fmt, cwd=tutorial)
    assert (code, err) == (0, "")
    assert_snapshot(f"stats_{data}.{fmt}", out)


def test_numbers_match_the_data(tutorial: Path) -> None:
    _, out, _ = run_cli("stats", "customer.tfrecord", "--format", "json", cwd=tutorial)
    document = json.loads(out)
    ages = [c["Age"] for c in CUSTOMERS]
    age = document["features"]["Age"]
    assert (age["min"], age["max"], age["mean"]) == (min(ages), max(ages), sum(ages) / len(ages))
    assert document["features"]["Movie"]["lengths"] == {
        "2": 1,
        "3": 1,
        "4": 1,
        "5": 1,
        "10": 1,
        "24": 1,
    }
    assert document["features"]["Movie"]["values"] == {"min": 1, "max": 3, "total": 6}
    assert document["records"] == 3 and document["files"][0]["records"] == 3


def test_files_of_generated_classes_with_damage_nan_and_absent_keys(tmp_path: Path) -> None:
    customer = generated("customer")
    records = [
        customer.Customer(**{k.lower().replace(" ", "_"): v for k, v in c.items()})
        for c in CUSTOMERS
    ]
    customer.Customer.write_tfrecord(tmp_path / "a.tfrecord", records)
    flip_byte(tmp_path / "a.tfrecord", frame_offsets([r.encode() for r in records])[1] + 30)
    odd = [
        wire.example(
            [
                wire.map_entry(
                    wire.key_field("x"), wire.float_feature(np.array([np.nan, 2.0, np.inf]))
                )
            ]
        ),
        wire.example([wire.map_entry(wire.key_field("y"), b"")]),
        b"\x0a\x05",
    ]
    write_tfrecord(tmp_path / "b.tfrecord.gz", odd)
    code, out, err = run_cli("stats", "*.tfrecord*", "--on-error", "skip", cwd=tmp_path)
    assert code == 0
    assert_snapshot("stats_damaged.text", out)
    frames = frame_offsets([r.encode() for r in records])
    corrupt = frames[2] - frames[1]
    assert err.splitlines()[0].startswith(
        f"tfr-gen stats: warning: a.tfrecord: record 1 at byte offset {frames[1]}: corrupt record:"
        f" {corrupt} bytes skipped: corrupt data CRC of a"
    )
    assert err.splitlines()[1:] == [
        f"tfr-gen stats: skipped 1 unreadable stretch ({corrupt} bytes)"
    ]
    code, out, err = run_cli("stats", "*.tfrecord*", cwd=tmp_path)
    assert (code, out) == (2, "")
    assert err.startswith(
        f"tfr-gen stats: error: a.tfrecord: record 1 at byte offset {frames[1]}: corrupt data CRC of a"
    )
    _, out, _ = run_cli(
        "stats", "*.tfrecord*", "--format", "json", "--on-error", "skip", cwd=tmp_path
    )
    document = json.loads(out)
    assert document["skipped_spans"] == 1 and document["records"] == 5
    assert document["features"]["x"]["nan"] == 1 and document["features"]["x"]["max"] == "Infinity"
    assert document["features"]["y"] == {
        "records": 1,
        "kinds": {},
        "without_list": 1,
        "values": {"min": None, "max": None, "total": 0},
    }
    assert [m["record"] for m in document["malformed_records"]] == [2]


def test_interrupt_prints_what_was_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_tfrecord(tmp_path / "x.tfrecord", [wire.example([])] * 5)
    real_add = Observation.add

    def add(self: Observation, data: bytes) -> None:
        if self.records == 2:
            raise KeyboardInterrupt
        real_add(self, data)

    monkeypatch.setattr(Observation, "add", add)
    code, out, _ = run_cli("stats", "x.tfrecord", cwd=tmp_path)
    assert code == 130
    lines = out.splitlines()
    assert lines[1] == "records: 3 (6 bytes of data)"  # the third was being read
    assert lines[-1] == "interrupted: these statistics cover the records read before Ctrl-C"


def test_a_truncated_gzip_file_is_read_up_to_its_end_with_skip(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    records = [
        wire.example([wire.map_entry(wire.key_field("k"), wire.int64_scalar_feature(int(v)))])
        for v in rng.integers(0, 1 << 40, 5000)
    ]
    write_tfrecord(tmp_path / "t.tfrecord.gz", records)
    data = (tmp_path / "t.tfrecord.gz").read_bytes()
    (tmp_path / "t.tfrecord.gz").write_bytes(data[: len(data) // 2])
    available = len(zlib.decompressobj(31).decompress(data[: len(data) // 2]))
    ends = [offset + 16 + len(r) for offset, r in zip(frame_offsets(records), records, strict=True)]
    whole = sum(end <= available for end in ends)
    at = frame_offsets(records)[whole]
    cut = available - at
    code, out, err = run_cli("stats", "t.tfrecord.gz", "--format", "json", cwd=tmp_path)
    assert (code, out) == (2, "")
    assert err == (
        f"tfr-gen stats: error: t.tfrecord.gz: record {whole} at byte offset {at}: truncated gzip"
        " stream: the file ends inside compressed data (in the uncompressed gzip stream)\n"
    )
    code, out, err = run_cli(
        "stats", "t.tfrecord.gz", "--format", "json", "--on-error", "skip", cwd=tmp_path
    )
    document = json.loads(out)
    assert code == 0 and document["records"] == document["features"]["k"]["records"] == whole
    assert (document["skipped_spans"], document["skipped_bytes"]) == (1 + bool(cut), cut)
    lines = err.splitlines()
    if cut:
        assert lines.pop(0) == (
            f"tfr-gen stats: warning: t.tfrecord.gz: record {whole} at byte offset {at}: truncated"
            f" file: {cut} bytes skipped: truncated record: the file ends {cut} bytes into a record"
            f" that declares {len(records[whole])} bytes of data ({16 + len(records[whole])} bytes"
            " with its framing) (in the uncompressed gzip stream)"
        )
    assert lines == [
        f"tfr-gen stats: warning: t.tfrecord.gz: record {whole} at byte offset {available}:"
        " truncated file: 0 bytes skipped: truncated gzip stream: the file ends inside compressed"
        " data (in the uncompressed gzip stream)",
        f"tfr-gen stats: skipped {1 + bool(cut)} unreadable stretch"
        f"{'es' if cut else ''} ({cut} bytes)",
    ]
