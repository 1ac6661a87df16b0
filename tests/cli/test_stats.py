"""``tfr-gen stats``: per-key statistics of TensorFlow's and our files, in text and JSON, and what
``--on-error`` does with damaged files."""

from __future__ import annotations

import json
import warnings
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codegen.errors import RecordError
from codegen.runtime.codec import wire
from codegen.runtime.io.compression import use_deflate
from codegen.runtime.io.writer import write_tfrecord
from codegen.tools.observe import KeyObservation, Observation
from support.cli import assert_snapshot, run_cli
from support.framing import flip_byte, frame_offsets
from support.modules import generated_module
from support.tutorial import (
    CUSTOMERS,
    customer_records,
    tf_customers,
    tf_digits,
    tf_sentences,
    tf_write,
)


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
    customer = generated_module("customer")
    records = customer_records()
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

    def add_batch(self: Observation, records: list[bytes], size: int | None = None) -> None:
        for data in records[:3]:
            real_add(self, data)
        raise KeyboardInterrupt

    monkeypatch.setattr(Observation, "add_batch", add_batch)
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
    use_deflate("zlib")  # how much of a cut deflate stream comes out depends on the library
    available, rest = 0, data[: len(data) // 2]
    while rest:  # every whole gzip member, then what the cut one holds
        inflater = zlib.decompressobj(31)
        available += len(inflater.decompress(rest))
        rest = inflater.unused_data if inflater.eof else b""
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


# --- counting a batch at once equals counting record by record ----------------------------------

_KEYS = ["a", "b", "é", "", "long key"]


@st.composite
def _feature(draw: st.DrawFn) -> bytes:
    kind = draw(st.sampled_from(["int", "float", "bytes", "none"]))
    if kind == "int":
        ints = draw(st.lists(st.integers(-(2**63), 2**63 - 1), max_size=4))
        return wire.int64_feature(np.array(ints, np.int64))
    if kind == "float":
        floats = st.floats(width=32, allow_nan=True, allow_infinity=True)
        return wire.float_feature(np.array(draw(st.lists(floats, max_size=4)), np.float32))
    if kind == "bytes":
        texts = st.sampled_from(
            [
                b"",
                b"x",
                b"x\0",
                b"\0",
                "é".encode(),
                b"\xc3",
                b"\xa9",
                b"ab\xff",
                b"\xe2\x82",
                b"a\0b",
            ]
            + [b"\xff\xd8\xff\xe0", b"\xff\xd8", b"\x89PNG\r\n\x1a\n", b"\x89PNG\r\n", b"y" * 17]
        )
        return wire.bytes_feature(draw(st.lists(texts, max_size=4)))
    return b""  # a Feature with no list


@st.composite
def _records(draw: st.DrawFn) -> bytes:
    keys = draw(st.lists(st.sampled_from(_KEYS), max_size=4, unique=True))
    entries = [wire.map_entry(wire.key_field(k), draw(_feature())) for k in keys]
    shape = draw(st.sampled_from(["example", "example", "example", "sequence", "garbage"]))
    if shape == "sequence":
        steps = [draw(_feature()) for _ in range(draw(st.integers(0, 2)))]
        return wire.sequence_example(entries, [wire.feature_list_entry(wire.key_field("s"), steps)])
    if shape == "garbage":
        return wire.example(entries) + b"\x0a\x09"  # a field that runs past the end
    return wire.example(entries)


def _summary(observation: Observation) -> dict[str, Any]:
    """Everything an observation found, its sum of numbers aside (summed in another order)."""

    def key(seen: KeyObservation) -> tuple[Any, ...]:
        return (
            seen.records, dict(seen.kinds), seen.list_kinds, seen.counts_min, seen.counts_max,
            seen.values, seen.utf8, dict(seen.lengths), seen.steps_min, seen.steps_max, seen.low,
            seen.high, seen.numbers, seen.nans, seen.nul, dict(seen.images), list(seen.short.items()),
        )  # fmt: skip

    return {
        "records": observation.records,
        "sequences": observation.sequences,
        "features": {k: key(v) for k, v in observation.features.items()},
        "lists": {k: key(v) for k, v in observation.feature_lists.items()},
    }


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(_records(), max_size=6), max_size=4))
def test_batches_are_counted_as_their_records_one_by_one(batches: list[list[bytes]]) -> None:
    by_record, by_batch = Observation(), Observation()
    malformed = []
    for batch in batches:
        for position, data in enumerate(batch):
            try:
                by_record.add(data)
            except RecordError as exc:
                malformed.append((position, str(exc)))
    found = [(p, str(e)) for batch in batches for p, e in by_batch.add_batch(batch)]
    assert found == malformed
    assert _summary(by_batch) == _summary(by_record)
    for table in ("features", "feature_lists"):
        for k, seen in getattr(by_record, table).items():
            assert getattr(by_batch, table)[k].total == pytest.approx(seen.total, nan_ok=True)


def test_short_values_beyond_the_kept_limit_are_counted_as_one_by_one() -> None:
    """More distinct short values than are kept, repeated across batches and with zero bytes at
    their ends: the batch count keeps the same values, with the same counts, in the same order."""
    rng = np.random.default_rng(7)
    values = [
        int(v).to_bytes(2, "little") + b"\0" * int(z)
        for v, z in rng.integers(0, 1500, (3000, 2)) % [1500, 3]
    ]
    records = [
        wire.example([wire.map_entry(wire.key_field("s"), wire.bytes_feature(values[i : i + 3]))])
        for i in range(0, len(values), 3)
    ]
    by_record, by_batch = Observation(), Observation()
    for data in records:
        by_record.add(data)
    for start in range(0, len(records), 400):
        assert by_batch.add_batch(records[start : start + 400]) == []
    counted = by_record.features["s"].short
    assert len(counted) == 1024
    assert list(by_batch.features["s"].short.items()) == list(counted.items())


def test_batches_of_examples_are_scanned_not_parsed_one_by_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    records = [
        wire.example([wire.map_entry(wire.key_field("n"), wire.int64_scalar_feature(i))])
        for i in range(50)
    ]
    observation = Observation()
    monkeypatch.setattr(Observation, "add", None)  # the record-by-record path is not taken
    assert observation.add_batch(records) == []
    assert observation.features["n"].high == 49 and observation.records == 50


def test_both_infinities_give_no_mean_and_no_warning(tmp_path: Path) -> None:
    values = np.array([np.inf, -np.inf, 1.0], np.float32)
    entry = wire.map_entry(wire.key_field("x"), wire.float_feature(values))
    write_tfrecord(tmp_path / "inf.tfrecord", [wire.example([entry])])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        code, out, err = run_cli("stats", "inf.tfrecord", cwd=tmp_path)
        assert (code, err) == (0, "")
        assert out.splitlines()[-1].split() == ["x", "1", "float_list", "3", "-inf", "inf", "-"]
        code, out, err = run_cli("stats", "--format", "json", "inf.tfrecord", cwd=tmp_path)
    feature = json.loads(out)["features"]["x"]
    assert (feature["min"], feature["max"], feature["mean"]) == ("-Infinity", "Infinity", None)
