"""``tfr-gen validate``: every problem of every record, with its position, in text and JSON."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from test_tools_common import (
    CUSTOMERS,
    ROOT,
    assert_snapshot,
    flip_byte,
    frame_offsets,
    generated,
    run_cli,
    tf_customers,
    tf_write,
)

from codegen.runtime.codec import wire
from codegen.runtime.io.writer import write_tfrecord
from codegen.tools import validation as validate

SCHEMA = """\
version: 1
records:
  Check:
    features:
      age: {key: Age, dtype: int32}
      name: {dtype: string}
      scores: {dtype: float32, shape: [3]}
      tags: {dtype: string, shape: [null]}
      pairs: {dtype: int64, shape: [null, 2]}
      flag: {dtype: bool, optional: true}
  Other:
    features:
      label: {dtype: int64}
"""

GOOD = {
    "Age": wire.int64_feature(np.array([30])),
    "name": wire.bytes_feature([b"Ann"]),
    "scores": wire.float_feature(np.array([1.0, 2.5, -3.0])),
    "tags": wire.bytes_feature([b"a", b"b"]),
    "pairs": wire.int64_feature(np.array([1, 2, 3, 4])),
    "flag": wire.int64_feature(np.array([1])),
}


def example(changes: dict[str, bytes | None]) -> bytes:
    """A serialized Example: GOOD with features replaced (``None``: removed)."""
    features = {**GOOD, **changes}
    present = {key: value for key, value in features.items() if value is not None}
    return wire.example(
        wire.map_entry(wire.key_field(key), present[key]) for key in wire.map_key_order(present)
    )


RECORDS = [
    example({}),
    example({"Age": None, "name": b""}),  # missing, and a Feature with no list
    example(
        {"Age": wire.float_feature(np.array([30.0])), "name": wire.int64_feature(np.array([1]))}
    ),
    example(
        {
            "scores": wire.float_feature(np.array([1.0, 2.0])),
            "pairs": wire.int64_feature(np.arange(3)),
        }
    ),
    example(
        {"Age": wire.int64_feature(np.array([2**40])), "flag": wire.int64_feature(np.array([2]))}
    ),
    example({"name": wire.bytes_feature([b"\xff"]), "tags": wire.bytes_feature([b"ok", b"\xc3"])}),
    b"\x0a\x05\x01",  # not an Example: the features field runs past the end
    example({"Age": b"\x1a\x02\x0a\x80"}),  # an Int64List whose packed values end mid-varint
    example({"flag": None}),  # an absent optional feature is fine
]


@pytest.fixture
def data(tmp_path: Path) -> Path:
    """A directory with the schema, a file of every anomaly, and a corrupt and truncated file."""
    (tmp_path / "check.yaml").write_text(SCHEMA)
    write_tfrecord(tmp_path / "check.tfrecord", RECORDS)
    good = [example({}), example({"name": wire.bytes_feature([b"Bob"])}), example({}), example({})]
    write_tfrecord(tmp_path / "damaged.tfrecord.gz", good)
    write_tfrecord(tmp_path / "damaged.tfrecord", good)
    offsets = frame_offsets(good)
    flip_byte(tmp_path / "damaged.tfrecord", offsets[1] + 20)  # in record 1's data
    whole = (tmp_path / "damaged.tfrecord").read_bytes()
    (tmp_path / "damaged.tfrecord").write_bytes(whole[: offsets[3] + 30])  # cut inside record 3
    return tmp_path


def test_every_anomaly_is_reported_with_its_position_in_text(data: Path) -> None:
    code, out, err = run_cli(
        "validate", "check.yaml", "check.tfrecord", "damaged.*", "--record", "Check", cwd=data
    )
    assert (code, err) == (1, "")
    assert_snapshot("validate_anomalies.txt", out)
    lines = out.splitlines()
    offsets = frame_offsets(RECORDS)
    assert lines[0] == (
        f"check.tfrecord: record 1 at byte offset {offsets[1]}: missing feature: key 'Age' (age):"
        " expected int64_list with 1 value, found no such key"
    )
    assert lines[-1] == (
        "tfr-gen validate: Check: 15 records in 3 files: 12 problems in 7 records;"
        " 2 unreadable stretches skipped (159 bytes)"
    )


def test_json_report_lists_every_problem_and_the_counts(data: Path) -> None:
    code, out, _ = run_cli(
        "validate",
        "check.yaml",
        "check.tfrecord",
        "damaged.*",
        "--record",
        "Check",
        "--format",
        "json",
        cwd=data,
    )
    assert code == 1
    assert_snapshot("validate_anomalies.json", out)
    document = json.loads(out)
    kinds = [problem["kind"] for problem in document["problems"]]
    assert sorted(set(kinds)) == sorted(validate.KINDS.keys() - {"invalid"})
    assert document["summary"]["problems"] == len(kinds) == 14
    assert document["files"] == [
        {"path": "check.tfrecord", "records": 9},
        {"path": "damaged.tfrecord", "records": 2},
        {"path": "damaged.tfrecord.gz", "records": 4},
    ]


def test_max_errors_stops_the_scan(data: Path) -> None:
    code, out, _ = run_cli(
        "validate",
        "check.yaml",
        "check.tfrecord",
        "--record",
        "Check",
        "--max-errors",
        "3",
        cwd=data,
    )
    assert code == 1
    assert len(out.splitlines()) == 4
    assert out.splitlines()[-1] == (
        "tfr-gen validate: Check: 3 records in 1 file: 3 problems in 2 records;"
        " stopped after 3 problems (--max-errors)"
    )


def test_clean_files_exit_0(tmp_path: Path) -> None:
    customer = generated("customer")
    records = [
        customer.Customer(**{k.lower().replace(" ", "_"): v for k, v in c.items()})
        for c in CUSTOMERS
    ]
    customer.Customer.write_tfrecord(tmp_path / "customers.tfrecord", records)
    code, out, _ = run_cli(
        "validate", str(ROOT / "schemas" / "customer.yaml"), "customers.tfrecord", cwd=tmp_path
    )
    assert (code, out) == (0, "tfr-gen validate: Customer: 3 records in 1 file: no problems\n")


def test_tensorflow_files_are_checked_like_any_other(tf: Any, tmp_path: Path) -> None:
    tf_write(tf, tmp_path / "clean.tfrecord", tf_customers(tf))
    broken = [dict(c) for c in CUSTOMERS]
    del broken[0]["Suggestion"]
    broken[1]["Age"] = 41.0
    broken[2]["Suggestion Purchased"] = [1.0, 0.0]
    del broken[2]["Purchase Price"]  # has a default: fine
    tf_write(tf, tmp_path / "broken.tfrecord", tf_customers(tf, broken))
    schema = str(ROOT / "schemas" / "customer.yaml")
    code, out, _ = run_cli("validate", schema, "clean.tfrecord", cwd=tmp_path)
    assert (code, out) == (0, "tfr-gen validate: Customer: 3 records in 1 file: no problems\n")
    code, out, _ = run_cli("validate", schema, "broken.tfrecord", cwd=tmp_path)
    assert code == 1
    assert_snapshot("validate_tensorflow.txt", out)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["check.yaml", "check.tfrecord"],
            "check.yaml has several records (Check, Other); name one with --record",
        ),
        (
            ["check.yaml", "check.tfrecord", "--record", "Nope"],
            "check.yaml has no record 'Nope'; its records: Check, Other",
        ),
        (["bad.yaml", "check.tfrecord"], "bad.yaml:4:27: unknown dtype 'int65'"),
        (["check.yaml", "missing.tfrecord", "--record", "Check"], "missing.tfrecord: no such file"),
    ],
)
def test_usage_and_schema_errors_exit_2(data: Path, args: list[str], message: str) -> None:
    (data / "bad.yaml").write_text(
        textwrap.dedent(
            """\
            version: 1
            records:
              Bad:
                features: {x: {dtype: int65}}
            """
        )
    )
    code, out, err = run_cli("validate", *args, cwd=data)
    assert (code, out) == (2, "")
    assert message in err


def test_interrupt_reports_what_was_checked(data: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = validate.check_record
    calls: list[int] = []

    def check(*args: Any) -> list[validate.Problem]:
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(*args)

    monkeypatch.setattr(validate, "check_record", check)
    code, out, _ = run_cli(
        "validate", "check.yaml", "check.tfrecord", "--record", "Check", cwd=data
    )
    assert code == 130
    assert out.splitlines()[-1] == (
        "tfr-gen validate: Check: 3 records in 1 file: 2 problems in 1 record; interrupted"
    )


SEQUENCE_SCHEMA = """\
version: 1
records:
  Sentence:
    context:
      length: {dtype: int64}
    sequence:
      tokens: {dtype: int64}
      words: {dtype: string, shape: [null]}
      frames: {dtype: float32, shape: [2], optional: true}
"""


def sentence(context: dict[str, bytes | None], lists: dict[str, list[bytes] | None]) -> bytes:
    """A serialized SequenceExample: a good sentence with features and lists replaced."""
    ints, floats = wire.int64_feature, wire.float_feature
    good_context: dict[str, bytes | None] = {"length": ints(np.array([2]))}
    good_lists: dict[str, list[bytes] | None] = {
        "tokens": [ints(np.array([7])), ints(np.array([8]))],
        "words": [wire.bytes_feature([b"a"]), wire.bytes_feature([b"b", b"c"])],
        "frames": [floats(np.array([1.0, 2.0])), floats(np.array([3.0, 4.0]))],
    }
    features = {k: v for k, v in {**good_context, **context}.items() if v is not None}
    steps = {k: v for k, v in {**good_lists, **lists}.items() if v is not None}
    return wire.sequence_example(
        [wire.map_entry(wire.key_field(k), features[k]) for k in wire.map_key_order(features)],
        [wire.feature_list_entry(wire.key_field(k), steps[k]) for k in wire.map_key_order(steps)],
    )


def test_sequence_examples_are_checked_step_by_step(tmp_path: Path) -> None:
    ints = wire.int64_feature
    records = [
        sentence({}, {}),
        sentence({"length": None}, {"tokens": None}),
        sentence({}, {"tokens": [ints(np.array([7])), wire.float_feature(np.array([8.0]))]}),
        sentence(
            {}, {"tokens": [ints(np.array([7, 8]))], "frames": [wire.float_feature(np.ones(3))]}
        ),
        sentence({}, {"words": [wire.bytes_feature([b"ok"]), wire.bytes_feature([b"\xff\xfe"])]}),
        sentence({}, {"tokens": [b""]}),  # a step with no list holds no values
        sentence({}, {"frames": None, "words": []}),  # optional and empty lists are fine
    ]
    (tmp_path / "sentence.yaml").write_text(SEQUENCE_SCHEMA)
    write_tfrecord(tmp_path / "sentences.tfrecord", records)
    code, out, _ = run_cli("validate", "sentence.yaml", "sentences.tfrecord", cwd=tmp_path)
    assert code == 1
    assert_snapshot("validate_sequences.txt", out)
    assert out.splitlines()[-1] == (
        "tfr-gen validate: Sentence: 7 records in 1 file: 7 problems in 5 records"
    )


def test_raw_and_ragged_tensors_are_reported_with_the_decoder_message(tmp_path: Path) -> None:
    (tmp_path / "photo.yaml").write_text(
        "version: 1\n"
        "records:\n"
        "  Photo:\n"
        "    features:\n"
        "      image: {dtype: uint8, shape: [2, 2], encoding: raw}\n"
        "      boxes: {dtype: float32, shape: [null, null]}\n"
    )
    boxes = wire.map_entry(wire.key_field("boxes"), wire.float_feature(np.ones(3)))
    lengths = wire.map_entry(
        wire.key_field("boxes/row_lengths_1"), wire.int64_feature(np.array([1, 1]))
    )
    image = wire.map_entry(wire.key_field("image"), wire.bytes_feature([b"abc"]))
    write_tfrecord(tmp_path / "p.tfrecord", [wire.example([boxes, lengths, image])])
    code, out, _ = run_cli("validate", "photo.yaml", "p.tfrecord", "--format", "json", cwd=tmp_path)
    assert code == 1
    problems = json.loads(out)["problems"]
    assert [(p["kind"], p["key"], "expected" in p) for p in problems] == [
        ("invalid", "image", False),
        ("invalid", "boxes", False),
    ]
    assert problems[0]["message"].startswith("Photo.image (key 'image'): expected 4 bytes")
    assert problems[1]["message"].startswith("Photo.boxes (key 'boxes'")
    _, out, _ = run_cli("validate", "photo.yaml", "p.tfrecord", cwd=tmp_path)
    assert out.splitlines()[0] == (
        "p.tfrecord: record 0 at byte offset 0: invalid feature: key 'image' (image): "
        + problems[0]["message"]
    )
