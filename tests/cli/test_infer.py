"""``tfr-gen infer``: inferred schemas round-trip TensorFlow's files through generated code."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from codegen.generator.load import parse_schema
from codegen.runtime.codec import wire
from codegen.runtime.io.reader import read_tfrecord
from codegen.runtime.io.writer import write_tfrecord
from codegen.tools.observe import Observation
from support.cli import assert_snapshot, run_cli
from support.framing import flip_byte, frame_offsets
from support.modules import generate_module
from support.tutorial import SENTENCES, tf_basics, tf_customers, tf_digits, tf_sentences, tf_write


@pytest.fixture(scope="module")
def tutorial(tf: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory with the tutorials' data sets, written by TensorFlow."""
    directory = tmp_path_factory.mktemp("tutorial")
    tf_write(tf, directory / "customer.tfrecord", tf_customers(tf))
    tf_write(tf, directory / "mnist_train.tfrecord", tf_digits(tf))
    tf_write(tf, directory / "basics.tfrecord", tf_basics(tf))
    tf_write(tf, directory / "sentences.tfrecord", tf_sentences(tf))
    return directory


def _few(count: int, names: str) -> str:
    return (
        f"tfr-gen infer: warning: only {count} records seen: the fixed shapes of {names} may vary"
        " in more data; infer from at least 20 records or review them\n"
    )


def _narrow(listed: str) -> str:
    return (
        f"tfr-gen infer: warning: int64 features whose values fit a narrower dtype: {listed};"
        " declare it where every value always will\n"
    )


# The tutorials' files are small: each inference warns that its fixed shapes rest on few records,
# and names the int64 features whose values fit a narrower dtype.
WARNINGS = {
    "customer": _few(3, "age, purchase_price, suggestion, suggestion_purchased")
    + _narrow("age (29..41: uint8)"),
    "digits": _few(6, "image, label") + _narrow("image (0..255: uint8), label (0..5: uint8)"),
    "basics": _few(3, "my_bytes, my_float") + _narrow("my_ints (5..9: uint8)"),
}


@pytest.mark.parametrize(
    ("data", "module"),
    [
        ("customer.tfrecord", "customer"),
        ("mnist_train.tfrecord", "digits"),
        ("basics.tfrecord", "basics"),
    ],
)
def test_inferred_schema_round_trips_tensorflow_files(
    tf: Any, tutorial: Path, tmp_path: Path, data: str, module: str
) -> None:
    schema = tmp_path / f"{module}.yaml"
    code, out, err = run_cli("infer", str(tutorial / data), "-o", str(schema), cwd=tmp_path)
    assert (code, err) == (0, WARNINGS[module]), err
    assert out.startswith(f"wrote {schema} (")
    text = schema.read_text(encoding="utf-8")
    assert_snapshot(f"infer_{module}.yaml", text)
    generated = generate_module(text, f"tools_inferred_{module}", tmp_path)
    (record,) = parse_schema(text, schema.name).records
    record_class = getattr(generated, record.name)
    originals = [bytes(t.numpy()) for t in tf.data.TFRecordDataset(str(tutorial / data))]
    decoded = list(record_class.read_tfrecord(tutorial / data))
    assert len(decoded) == len(originals) > 0
    for value, original in zip(decoded, originals, strict=True):
        assert wire.parse_example(value.encode()) == wire.parse_example(original)
        assert record_class.decode(original) == value


def test_customer_keys_become_snake_case_names_with_their_keys(tutorial: Path) -> None:
    code, out, _ = run_cli("infer", "customer.tfrecord", cwd=tutorial)
    assert code == 0
    assert "      movie_ratings: {key: Movie Ratings, dtype: float32, shape: [null]}\n" in out
    assert "      age: {key: Age, dtype: int64}\n" in out
    assert "  Customer:\n" in out


def test_sequence_examples_round_trip_through_their_inferred_schema(
    tutorial: Path, tmp_path: Path
) -> None:
    code, out, err = run_cli(
        "infer", str(tutorial / "sentences.tfrecord"), "-o", "sentences.yaml", cwd=tmp_path
    )
    assert (code, out, err) == (
        0,
        "wrote sentences.yaml (Sentences: 3 features from 3 records)\n",
        _few(3, "length, labels, tokens")
        + _narrow("length (2..3: uint8), labels (0..1: uint8), tokens (1..5: uint8)"),
    )
    assert_snapshot("infer_sentences.yaml", (tmp_path / "sentences.yaml").read_text())
    sentences = generate_module(
        (tmp_path / "sentences.yaml").read_text(), "tools_inferred_sentences", tmp_path
    ).Sentences
    originals = list(read_tfrecord(tutorial / "sentences.tfrecord"))
    for original, (tokens, labels) in zip(originals, SENTENCES, strict=True):
        record = sentences.decode(original)
        assert record.length == len(tokens)
        assert record.tokens.tolist() == tokens and record.labels.tolist() == labels
        assert wire.parse_sequence_example(record.encode()) == wire.parse_sequence_example(original)


def test_presence_gives_optional_fixed_features(tmp_path: Path) -> None:
    def example(**features: bytes) -> bytes:
        entries = [wire.map_entry(wire.key_field(k), v) for k, v in sorted(features.items())]
        return wire.example(entries)

    ints = wire.int64_feature
    records = [
        example(
            label=ints(np.array([1])), tags=wire.bytes_feature([b"a"]), pair=ints(np.array([1, 2]))
        ),
        example(label=ints(np.array([2])), tags=wire.bytes_feature([b"\xff", b"b"])),
        example(label=ints(np.array([3])), pair=ints(np.array([3, 4])), note=b""),
    ]
    write_tfrecord(tmp_path / "things.tfrecord", records)
    code, out, err = run_cli("infer", "things.tfrecord", "--name", "Thing", cwd=tmp_path)
    assert code == 0
    assert out.splitlines()[4:] == [
        "    doc: Inferred from 3 records of things.tfrecord.",
        "    features:",
        "      label: {dtype: int64}",
        "      pair: {dtype: int64, shape: [2], optional: true}",
        "      tags: {dtype: bytes, shape: [null]}",
    ]
    assert err == (
        "tfr-gen infer: warning: key 'note' left out: it never holds a value list\n"
        + _few(3, "label, pair")
        + _narrow("label (1..3: uint8), pair (1..4: uint8)")
        + "tfr-gen infer: Thing: 3 features from 3 records\n"
    )


def test_limit_reads_only_the_first_records(tmp_path: Path) -> None:
    entries = [
        wire.map_entry(wire.key_field("x"), wire.int64_feature(np.arange(n))) for n in (2, 2, 5)
    ]
    write_tfrecord(tmp_path / "x.tfrecord", [wire.example([e]) for e in entries])
    code, out, _ = run_cli("infer", "x.tfrecord", "--limit", "2", cwd=tmp_path)
    assert code == 0 and "      x: {dtype: int64, shape: [2]}\n" in out
    assert "Inferred from 2 records of x.tfrecord." in out
    code, out, _ = run_cli("infer", "x.tfrecord", cwd=tmp_path)
    assert "      x: {dtype: int64, shape: [null]}\n" in out


def test_globs_read_every_matching_file_and_corrupt_stretches_are_skipped(tmp_path: Path) -> None:
    records = [
        wire.example([wire.map_entry(wire.key_field("v"), wire.float_feature(np.array([v])))])
        for v in (1.0, 2.0, 3.0)
    ]
    write_tfrecord(tmp_path / "part-0.tfrecord", records)
    write_tfrecord(tmp_path / "part-1.tfrecord.gz", records)
    offset = frame_offsets(records)[1]
    flip_byte(tmp_path / "part-0.tfrecord", offset + 13)
    code, out, err = run_cli("infer", "part-*", cwd=tmp_path)
    assert code == 0
    assert "    doc: 'Inferred from 5 records of part-0.tfrecord, part-1.tfrecord.gz.'\n" in out
    assert "  Part0:\n" in out and "      v: {dtype: float32}\n" in out
    assert err.splitlines()[0].startswith(
        f"tfr-gen infer: warning: part-0.tfrecord: record 1 at byte offset {offset}:"
        f" {len(records[1]) + 16} bytes skipped: corrupt data CRC"
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["nothing-*.tfrecord"],
            "tfr-gen infer: error: nothing-*.tfrecord: no such file, and no file matches it as a"
            " pattern\n",
        ),
        (
            ["mixed.tfrecord", "--name", "bad name"],
            "tfr-gen infer: error: --name: record name 'bad name' must be CamelCase",
        ),
        (
            ["mixed.tfrecord", "-o", "my-schema.yaml"],
            "tfr-gen infer: error: my-schema.yaml: the module name 'my-schema'",
        ),
        (
            ["mixed.tfrecord"],
            "tfr-gen infer: error: key 'x' holds 1 int64_list and 1 float_list features; a schema needs"
            " one list kind per key\n",
        ),
        (["empty.tfrecord"], "tfr-gen infer: error: no readable records in empty.tfrecord\n"),
    ],
)
def test_errors_exit_2_with_a_clear_message(tmp_path: Path, args: list[str], message: str) -> None:
    write_tfrecord(
        tmp_path / "mixed.tfrecord",
        [
            wire.example([wire.map_entry(wire.key_field("x"), wire.int64_feature(np.array([1])))]),
            wire.example(
                [wire.map_entry(wire.key_field("x"), wire.float_feature(np.array([1.0])))]
            ),
        ],
    )
    write_tfrecord(tmp_path / "empty.tfrecord", [])
    code, out, err = run_cli("infer", *args, cwd=tmp_path)
    assert code == 2 and out == ""
    assert message in err
    assert not (tmp_path / "my-schema.yaml").exists()


def test_bad_option_values_are_usage_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, _ = run_cli("infer", "x.tfrecord", "--limit", "0", cwd=tmp_path)
    assert code == 2
    assert "argument --limit: expected a positive integer, got '0'" in capsys.readouterr().err


def test_interrupt_stops_cleanly_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_tfrecord(tmp_path / "x.tfrecord", [wire.example([])] * 5)
    real_add = Observation.add

    def add_batch(self: Observation, records: list[bytes], size: int | None = None) -> None:
        for data in records[:3]:
            real_add(self, data)
        raise KeyboardInterrupt

    monkeypatch.setattr(Observation, "add_batch", add_batch)
    code, out, err = run_cli("infer", "x.tfrecord", "-o", "x.yaml", cwd=tmp_path)
    assert (code, out) == (130, "")
    assert err == "tfr-gen infer: interrupted after 3 records of 1 of 1 file; no schema written\n"
    assert not (tmp_path / "x.yaml").exists()
