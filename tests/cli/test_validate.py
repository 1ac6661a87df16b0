"""``tfr-gen validate``: every problem of every record, with its position, in text and JSON."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codegen.runtime.codec import wire
from codegen.runtime.io.writer import write_tfrecord
from codegen.tools import validation as validate
from codegen.tools.dynamic import load_record
from support.cli import assert_snapshot, run_cli, tfr_gen
from support.framing import flip_byte, frame_offsets
from support.modules import generated_module
from support.paths import SCHEMAS
from support.tutorial import CUSTOMERS, customer_records, tf_customers, tf_write

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
    customer = generated_module("customer")
    records = customer_records()
    customer.Customer.write_tfrecord(tmp_path / "customers.tfrecord", records)
    code, out, _ = run_cli(
        "validate", str(SCHEMAS / "customer.yaml"), "customers.tfrecord", cwd=tmp_path
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
    schema = str(SCHEMAS / "customer.yaml")
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


# --- batches checked at once find what records checked one by one find --------------------------

VARIANTS: dict[str, list[bytes | None]] = {
    "Age": [None, b"", wire.int64_feature(np.array([2**40])), wire.float_feature(np.ones(1))],
    "name": [None, b"", wire.bytes_feature([b"\xff"]), wire.bytes_feature([b"a", b"b"])],
    "scores": [wire.float_feature(np.ones(2)), wire.int64_feature(np.arange(3)), b""],
    "tags": [None, b"", wire.bytes_feature([]), wire.bytes_feature([b"\xc3\xa9", b"\xc3"])],
    "pairs": [None, wire.int64_feature(np.arange(3)), wire.int64_feature(np.arange(4))],
    "flag": [None, b"", wire.int64_feature(np.array([2])), wire.int64_feature(np.array([0]))],
    "extra": [wire.int64_feature(np.array([5])), None],
}


@st.composite
def _varied(draw: st.DrawFn) -> bytes:
    changes = {
        key: draw(st.sampled_from(options))
        for key, options in VARIANTS.items()
        if draw(st.integers(0, 3)) == 0
    }
    if draw(st.integers(0, 9)) == 0:
        return b"\x0a\x05\x01"
    return example(changes)


@settings(max_examples=60, deadline=None)
@given(st.lists(_varied(), max_size=12), st.booleans())
def test_batches_report_exactly_what_each_record_reports(
    tmp_path_factory: pytest.TempPathFactory, records: list[bytes], strict: bool
) -> None:
    directory = tmp_path_factory.mktemp("varied")
    (directory / "check.yaml").write_text(SCHEMA)
    write_tfrecord(directory / "v.tfrecord", records)
    record = load_record(str(directory / "check.yaml"), "Check")
    path = str(directory / "v.tfrecord")
    found: list[validate.Problem] = []
    result = validate.validate_files(record, [path], found.append, strict=strict)
    expected = [
        problem
        for index, (offset, data) in enumerate(zip(frame_offsets(records), records, strict=True))
        for problem in validate.check_record(record, path, index, offset, data)
    ]
    assert found == expected
    assert result.records == len(records)
    assert result.bad_records == len({(p.index) for p in expected})
    extra = [i for i, data in enumerate(records) if b"\x0a\x05extra" in data]
    assert list(result.undeclared) == ([("features", "extra")] if extra else [])
    if extra:
        assert result.undeclared[("features", "extra")].index == extra[0]


def test_clean_batches_are_checked_without_decoding_each_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "check.yaml").write_text(SCHEMA)
    write_tfrecord(tmp_path / "c.tfrecord", [example({})] * 500)
    monkeypatch.setattr(validate, "check_record", None)  # not called: the batch fits its rules
    record = load_record(str(tmp_path / "check.yaml"), "Check")
    result = validate.validate_files(record, [str(tmp_path / "c.tfrecord")], print)
    assert (result.records, result.problems) == (500, 0)


# --- --strict ---------------------------------------------------------------------------------

TYPO = """\
version: 1
records:
  Customer:
    features:
      age: {key: Age, dtype: int64}
      movie: {key: Movie, dtype: string, shape: [null]}
      suggestion: {key: Sugestion, dtype: string, optional: true}
      price: {key: Purchase Price, dtype: float32, default: 0.0}
"""


def _customers(tmp_path: Path) -> list[bytes]:
    records = []
    for i in range(100):
        features = {
            "Age": wire.int64_feature(np.array([20 + i % 50])),
            "Movie": wire.bytes_feature([b"Up"] * (1 + i % 3)),
            "Suggestion": wire.bytes_feature([b"Heat"]),
        }
        if i % 4:
            features["Purchase Price"] = wire.float_feature(np.array([4.5]))
        if i >= 90:
            del features["Movie"]
        records.append(
            wire.example(
                wire.map_entry(wire.key_field(k), features[k]) for k in wire.map_key_order(features)
            )
        )
    (tmp_path / "customer.yaml").write_text(TYPO)
    write_tfrecord(tmp_path / "customers.tfrecord", records)
    return records


def test_a_typo_on_an_optional_key_passes_plain_validation_with_a_warning(tmp_path: Path) -> None:
    records = _customers(tmp_path)
    done = tfr_gen("validate", "customer.yaml", "customers.tfrecord", cwd=tmp_path)
    assert done.returncode == 0
    assert done.stdout == "tfr-gen validate: Customer: 100 records in 1 file: no problems\n"
    offset = frame_offsets(records)[0]
    assert done.stderr == (
        "tfr-gen validate: warning: 1 key of the data not in the schema, passed over:"
        f" 'Suggestion' (first: customers.tfrecord: record 0 at byte offset {offset});"
        " --strict counts them\n"
    )


def test_strict_reports_undeclared_absent_and_partial_keys_with_counts(tmp_path: Path) -> None:
    records = _customers(tmp_path)
    offsets = frame_offsets(records)
    done = tfr_gen("validate", "customer.yaml", "customers.tfrecord", "--strict", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (1, "")
    assert_snapshot("validate_strict.txt", done.stdout)
    lines = done.stdout.splitlines()
    assert lines[:4] == [
        "customers.tfrecord: record 0 at byte offset 0: undeclared key: key 'Suggestion' is in 100"
        " of 100 records but not in the schema's record Customer",
        f"customers.tfrecord: record 90 at byte offset {offsets[90]}: partly present: key 'Movie'"
        " (movie) is in 90 of 100 records; the others read it as its default or as no values",
        "customers.tfrecord: record 0 at byte offset 0: never present: key 'Sugestion'"
        " (suggestion) is in none of the 100 records (optional): is the key spelled as the data"
        " spells it?",
        "customers.tfrecord: record 0 at byte offset 0: partly present: key 'Purchase Price'"
        " (price) is in 75 of 100 records; the others read it as its default or as no values",
    ]
    assert lines[-1] == (
        "tfr-gen validate: Customer: 100 records in 1 file: 4 anomalies (--strict)"
    )
    movie = next(line for line in lines if line.startswith("  key 'Movie'"))
    assert movie == (
        "  key 'Movie' (movie) in 90 records: 1 value in 30 (first: customers.tfrecord: record 0"
        f" at byte offset 0); 2 values in 30 (first: customers.tfrecord: record 1 at byte offset"
        f" {offsets[1]}); 3 values in 30 (first: customers.tfrecord: record 2 at byte offset"
        f" {offsets[2]})"
    )


def test_strict_json_holds_the_anomalies_and_value_counts(tmp_path: Path) -> None:
    _customers(tmp_path)
    done = tfr_gen(
        "validate", "customer.yaml", "customers.tfrecord", "--strict", "--format", "json",
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 1
    document = json.loads(done.stdout)
    assert_snapshot("validate_strict.json", done.stdout)
    anomalies = document["strict"]["anomalies"]
    assert [(a["kind"], a["key"], a["feature"], a["records"], a["total"]) for a in anomalies] == [
        ("undeclared_key", "Suggestion", None, 100, 100),
        ("partly_present", "Movie", "movie", 90, 100),
        ("never_present", "Sugestion", "suggestion", 0, 100),
        ("partly_present", "Purchase Price", "price", 75, 100),
    ]
    assert anomalies[1]["example"]["record"] == 90
    keys = {(k["section"], k["key"]): k for k in document["strict"]["keys"]}
    assert [c["values"] for c in keys[("features", "Movie")]["value_counts"]] == [1, 2, 3]
    assert keys[("features", "Suggestion")]["feature"] is None
    assert document["undeclared_keys"] == [
        {"section": "features", "key": "Suggestion",
         "example": {"file": "customers.tfrecord", "record": 0, "offset": 0}},
    ]  # fmt: skip
    assert document["summary"]["anomalies"] == 4


def test_strict_finds_feature_lists_an_example_schema_does_not_read(tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text(
        SEQUENCE_SCHEMA.replace("context", "features").split("    sequence:")[0]
    )
    write_tfrecord(tmp_path / "s.tfrecord", [sentence({}, {})] * 3)
    done = tfr_gen("validate", "s.yaml", "s.tfrecord", "--strict", cwd=tmp_path)
    assert done.returncode == 1
    undeclared = [line for line in done.stdout.splitlines() if "undeclared key" in line]
    assert [line.split(": undeclared key: ")[1].split(" is ")[0] for line in undeclared] == [
        "feature list 'frames'",
        "feature list 'tokens'",
        "feature list 'words'",
    ]
    clean = tfr_gen("validate", "s.yaml", "s.tfrecord", cwd=tmp_path)
    assert (clean.returncode, clean.stderr) == (0, "")  # without --strict lists are not read


def test_strict_counts_a_sequence_examples_context_and_feature_lists(tmp_path: Path) -> None:
    (tmp_path / "sentence.yaml").write_text(SEQUENCE_SCHEMA)
    extra = wire.int64_feature(np.array([1]))
    records = [sentence({"speaker": extra if i % 2 else None}, {"frames": None}) for i in range(4)]
    write_tfrecord(tmp_path / "s.tfrecord", records)
    record = load_record(str(tmp_path / "sentence.yaml"), None)
    result = validate.validate_files(record, [str(tmp_path / "s.tfrecord")], print, strict=True)
    assert result.problems == 0
    assert [(a.kind, a.section, a.key, a.records, a.example and a.example.index)
            for a in result.anomalies] == [
        ("undeclared_key", "context", "speaker", 2, 1),
        ("never_present", "feature_lists", "frames", 0, 0),
    ]  # fmt: skip
    profiles = {(p.section, p.key): p for p in result.profiles}
    assert [(c, n) for c, n, _ in profiles[("feature_lists", "words")].counts] == [(2, 4)]
    assert (
        profiles[("feature_lists", "words")]
        .text()
        .startswith("feature list 'words' (words) in 4 records: 2 steps in 4 (first: ")
    )
