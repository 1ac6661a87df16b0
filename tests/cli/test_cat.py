"""``tfr-gen cat``: records as JSON lines or readable text, raw or decoded by a schema, and what
``--on-error skip`` passes over."""

from __future__ import annotations

import base64
import gzip
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codegen.cli.commands.cat import _raw_json
from codegen.runtime.codec import wire
from codegen.runtime.io.writer import write_tfrecord
from codegen.tools.dynamic import load_record
from codegen.tools.jsonlines import JsonLines
from codegen.tools.values import value_json
from support.cli import Terminal, assert_snapshot, run_cli, shell, tfr_gen
from support.framing import flip_byte, frame_offsets
from support.modules import generated_module
from support.paths import SCHEMAS
from support.tutorial import (
    CUSTOMERS,
    customer_records,
    tf_customers,
    tf_digits,
    tf_sentences,
    tf_write,
)

CUSTOMER_SCHEMA = str(SCHEMAS / "customer.yaml")


@pytest.fixture(scope="module")
def tutorial(tf: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("cat")
    tf_write(tf, directory / "customer.tfrecord", tf_customers(tf))
    tf_write(tf, directory / "digits.tfrecord", tf_digits(tf, 2))
    tf_write(tf, directory / "sentences.tfrecord", tf_sentences(tf))
    return directory


@pytest.mark.parametrize("fmt", ["json", "text"])
def test_raw_records_of_tensorflow_files(tutorial: Path, fmt: str) -> None:
    code, out, err = run_cli("cat", "customer.tfrecord", "--format", fmt, cwd=tutorial)
    assert (code, err) == (0, "")
    assert_snapshot(f"cat_customer_raw.{fmt}", out)


@pytest.mark.parametrize("fmt", ["json", "text"])
def test_records_decoded_by_a_schema(tutorial: Path, fmt: str) -> None:
    code, out, _ = run_cli(
        "cat", "customer.tfrecord", "--schema", CUSTOMER_SCHEMA, "--format", fmt, cwd=tutorial
    )
    assert code == 0
    assert_snapshot(f"cat_customer_schema.{fmt}", out)


def test_json_lines_hold_attribute_names_and_declared_values(tutorial: Path) -> None:
    _, out, _ = run_cli("cat", "customer.tfrecord", "--schema", CUSTOMER_SCHEMA, cwd=tutorial)
    rows = [json.loads(line) for line in out.splitlines()]
    assert [row["age"] for row in rows] == [c["Age"] for c in CUSTOMERS]
    assert rows[0]["movie_ratings"] == [9.0, 9.7]  # float32 9.7 as its shortest decimal
    assert rows[0]["purchase_price"] == 9.99


def test_long_lists_are_cut_in_text_but_not_in_json(tutorial: Path) -> None:
    _, out, _ = run_cli("cat", "digits.tfrecord", "-n", "1", "--format", "text", cwd=tutorial)
    assert out.splitlines()[1].endswith(", ...] (784 values)")
    _, out, _ = run_cli("cat", "digits.tfrecord", "-n", "1", "--format", "json", cwd=tutorial)
    assert len(json.loads(out)["image"]["int64_list"]) == 784


@pytest.mark.parametrize("fmt", ["json", "text"])
def test_sequence_examples_show_context_and_feature_lists(tutorial: Path, fmt: str) -> None:
    code, out, _ = run_cli("cat", "sentences.tfrecord", "-n", "1", "--format", fmt, cwd=tutorial)
    assert code == 0
    assert_snapshot(f"cat_sentences.{fmt}", out)


def test_skip_and_count_select_records_with_their_positions(tmp_path: Path) -> None:
    customer = generated_module("customer")
    records = customer_records()
    customer.Customer.write_tfrecord(tmp_path / "c.tfrecord", records)
    offsets = frame_offsets([r.encode() for r in records])
    _, out, _ = run_cli(
        "cat",
        "c.tfrecord",
        "--schema",
        CUSTOMER_SCHEMA,
        "--skip",
        "1",
        "-n",
        "1",
        "--format",
        "text",
        cwd=tmp_path,
    )
    assert out.splitlines() == [
        f"record 1 (byte offset {offsets[1]}): Customer",
        "  age = 41",
        "  movie = ['Alien']",
        "  movie_ratings = [8.5]",
        "  suggestion = 'Aliens'",
        "  suggestion_purchased = 0.0",
        "  purchase_price = 0.0",
    ]
    _, out, _ = run_cli("cat", "c.tfrecord", "--skip", "3", cwd=tmp_path)
    assert out == ""


def test_bytes_that_are_not_utf8_are_base64(tmp_path: Path) -> None:
    blob = bytes(range(250, 256))
    entries = [
        wire.map_entry(wire.key_field("blob"), wire.bytes_feature([blob, b"text"])),
        wire.map_entry(wire.key_field("none"), b""),
        wire.map_entry(
            wire.key_field("x"),
            wire.float_feature(np.array([np.nan, np.inf, -0.0], dtype=np.float32)),
        ),
    ]
    write_tfrecord(tmp_path / "b.tfrecord", [wire.example(entries)])
    _, out, _ = run_cli("cat", "b.tfrecord", cwd=tmp_path)
    assert json.loads(out) == {
        "blob": {"bytes_list": [{"base64": base64.b64encode(blob).decode()}, "text"]},
        "none": {},
        "x": {"float_list": ["NaN", "Infinity", -0.0]},
    }
    _, out, _ = run_cli("cat", "b.tfrecord", "--format", "text", cwd=tmp_path)
    assert out.splitlines()[1:] == [
        "  'blob': bytes_list [b'\\xfa\\xfb\\xfc\\xfd\\xfe\\xff', 'text']",
        "  'none': no list",
        "  'x': float_list [nan, inf, -0.0]",
    ]


def test_format_defaults_to_text_on_a_terminal_and_json_otherwise(tmp_path: Path) -> None:
    write_tfrecord(tmp_path / "e.tfrecord", [wire.example([])])
    assert run_cli("cat", "e.tfrecord", cwd=tmp_path)[1] == "{}\n"
    terminal = Terminal()
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(tmp_path)
        from codegen.cli import main

        assert main(["cat", "e.tfrecord"], out=terminal, err=Terminal()) == 0
    assert terminal.getvalue() == "record 0 (byte offset 0)\n"


def test_undecodable_and_corrupt_records_stop_with_their_position(
    tutorial: Path, tmp_path: Path
) -> None:
    code, out, err = run_cli(
        "cat", str(tutorial / "digits.tfrecord"), "--schema", CUSTOMER_SCHEMA, cwd=tmp_path
    )
    assert (code, out) == (2, "")
    assert err == (
        f"tfr-gen cat: error: {tutorial / 'digits.tfrecord'}: record 0 at byte offset 0: Customer.age"
        " (key 'Age'): required feature is missing (expected int64_list with 1 value)\n"
    )
    records = [wire.example([]), b"\x0a\x05", wire.example([])]
    write_tfrecord(tmp_path / "m.tfrecord", records)
    code, out, err = run_cli("cat", "m.tfrecord", cwd=tmp_path)
    assert (code, out) == (2, "{}\n")
    assert err.startswith(
        "tfr-gen cat: error: m.tfrecord: record 1 at byte offset 18: Example: length 5"
    )
    data = (tmp_path / "m.tfrecord").read_bytes()
    (tmp_path / "m.tfrecord").write_bytes(data[:-3])
    code, out, err = run_cli("cat", "m.tfrecord", "--skip", "2", cwd=tmp_path)
    assert (code, out) == (2, "")
    assert "m.tfrecord: record 2 at byte offset 36: truncated record" in err


def test_option_errors(tmp_path: Path) -> None:
    write_tfrecord(tmp_path / "e.tfrecord", [])
    assert run_cli("cat", "e.tfrecord", "--record", "X", cwd=tmp_path)[::2] == (
        2,
        "tfr-gen cat: error: --record needs --schema\n",
    )
    assert run_cli("cat", "e.tfrecord", "--skip", "-1", cwd=tmp_path)[::2] == (
        2,
        "tfr-gen cat: error: --skip must not be negative, got -1\n",
    )


@pytest.mark.parametrize("fmt", ["json", "text"])
def test_sequence_examples_decoded_by_their_schema(
    tutorial: Path, tmp_path: Path, fmt: str
) -> None:
    (tmp_path / "sentence.yaml").write_text(
        "version: 1\n"
        "records:\n"
        "  Sentence:\n"
        "    context: {length: {dtype: int64}}\n"
        "    sequence: {tokens: {dtype: int64}, labels: {dtype: int64}}\n"
    )
    data = str(tutorial / "sentences.tfrecord")
    code, out, _ = run_cli("cat", data, "--schema", "sentence.yaml", "--format", fmt, cwd=tmp_path)
    assert code == 0
    assert_snapshot(f"cat_sentences_schema.{fmt}", out)


@pytest.mark.parametrize("name", ["d.tfrecord", "d.tfrecord.gz"])
def test_on_error_skip_prints_the_good_records_and_reports_the_rest(
    tmp_path: Path, name: str
) -> None:
    records = [
        wire.example([wire.map_entry(wire.key_field("n"), wire.int64_scalar_feature(i))])
        for i in range(5)
    ]
    payloads = [records[0], records[1], b"\x0a\x05", records[2], records[3], records[4]]
    write_tfrecord(tmp_path / "plain.tfrecord", payloads)
    frames = frame_offsets(payloads)
    stream = bytearray((tmp_path / "plain.tfrecord").read_bytes()[:-4])  # the last record is cut
    stream[frames[1] + 14] ^= 0xFF  # record 1's data is corrupt
    (tmp_path / name).write_bytes(gzip.compress(stream) if name.endswith(".gz") else stream)
    code, out, err = run_cli("cat", name, "--on-error", "skip", cwd=tmp_path)
    assert code == 0
    assert [json.loads(line)["n"]["int64_list"] for line in out.splitlines()] == [[0], [2], [3]]
    where = " (in the uncompressed gzip stream)" if name.endswith(".gz") else ""
    lines = err.splitlines()
    assert len(lines) == 4
    assert lines[0].startswith(
        f"tfr-gen cat: warning: {name}: record 1 at byte offset {frames[1]}: corrupt record:"
        f" {frames[2] - frames[1]} bytes skipped: corrupt data CRC of a {len(records[1])}-byte record"
    )
    assert lines[1] == (
        f"tfr-gen cat: warning: {name}: record 1 at byte offset {frames[2]}: skipped a record that"
        " does not decode: Example: length 5 at byte offset 1 runs past the end of the message at"
        " byte offset 2"
    )
    truncated = frame_offsets(payloads)[5]
    assert lines[2] == (
        f"tfr-gen cat: warning: {name}: record 4 at byte offset {truncated}: truncated file:"
        f" {16 + len(records[4]) - 4} bytes skipped: truncated record: the file ends"
        f" {16 + len(records[4]) - 4} bytes into a record that declares {len(records[4])} bytes of"
        f" data ({16 + len(records[4])} bytes with its framing){where}"
    )
    skipped = frames[2] - frames[1] + 18 + 16 + len(records[4]) - 4
    assert lines[3] == (
        f"tfr-gen cat: skipped 2 unreadable stretches and 1 record that does not decode"
        f" ({skipped} bytes)"
    )
    assert lines[0].endswith(where)


def test_on_error_skip_with_a_schema_skips_records_that_do_not_decode(
    tutorial: Path, tmp_path: Path
) -> None:
    code, out, err = run_cli(
        "cat",
        str(tutorial / "digits.tfrecord"),
        "--schema",
        CUSTOMER_SCHEMA,
        "--on-error",
        "skip",
        cwd=tmp_path,
    )
    assert (code, out) == (0, "")
    assert err.splitlines()[0] == (
        f"tfr-gen cat: warning: {tutorial / 'digits.tfrecord'}: record 0 at byte offset 0: skipped"
        " a record that does not decode: Customer.age (key 'Age'): required feature is missing"
        " (expected int64_list with 1 value)"
    )
    assert err.splitlines()[2].startswith("tfr-gen cat: skipped 2 records that do not decode (")


def test_on_error_raise_is_the_default_and_skip_is_quiet_on_good_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    payloads = [wire.example([]), wire.example([])]
    write_tfrecord(tmp_path / "g.tfrecord", payloads)
    assert run_cli("cat", "g.tfrecord", "--on-error", "skip", cwd=tmp_path) == (0, "{}\n{}\n", "")
    second = frame_offsets(payloads)[1]
    flip_byte(tmp_path / "g.tfrecord", second + 8)  # record 1's length CRC
    expected = run_cli("cat", "g.tfrecord", cwd=tmp_path)
    assert expected == run_cli("cat", "g.tfrecord", "--on-error", "raise", cwd=tmp_path)
    assert expected[:2] == (2, "{}\n")
    assert expected[2].startswith(
        f"tfr-gen cat: error: g.tfrecord: record 1 at byte offset {second}: corrupt length CRC"
    )
    assert run_cli("cat", "g.tfrecord", "--on-error", "ignore", cwd=tmp_path)[0] == 2
    assert "argument --on-error: invalid choice: 'ignore'" in capsys.readouterr().err


# --- batches rendered column by column are the lines of the records one by one ------------------

_TEXTS = [b"", b"a", b"Up", "é".encode(), b'say "hi"', b"back\\slash", b"tab\there", b"\xff\xfe",
          b"nul\x00", "日本".encode(), b"\x7f"]  # fmt: skip


@st.composite
def _raw_feature(draw: st.DrawFn) -> bytes:
    kind = draw(st.sampled_from(["int", "float", "bytes", "none"]))
    count = st.integers(0, 3)
    if kind == "int":
        values = draw(st.lists(st.integers(-(2**63), 2**63 - 1), max_size=3))
        return wire.int64_feature(np.array(values, np.int64))
    if kind == "float":
        floats = st.one_of(
            st.floats(width=32), st.sampled_from([0.0, -0.0, 1e-5, 1e16, 1e-45, 3.4e38, 0.1])
        )
        return wire.float_feature(np.array(draw(st.lists(floats, max_size=3)), np.float32))
    if kind == "bytes":
        return wire.bytes_feature([draw(st.sampled_from(_TEXTS)) for _ in range(draw(count))])
    return b""


@st.composite
def _raw_example(draw: st.DrawFn) -> bytes:
    keys = draw(st.lists(st.sampled_from(["a", "b", "é", "", 'q"k', "z"]), unique=True, max_size=4))
    entries = [wire.map_entry(wire.key_field(k), draw(_raw_feature())) for k in keys]
    if draw(st.integers(0, 12)) == 0:
        steps = [wire.feature_list_entry(wire.key_field("s"), [draw(_raw_feature())])]
        return wire.sequence_example(entries, steps)
    return wire.example(entries)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(_raw_example(), min_size=1, max_size=8), max_size=3))
def test_raw_batches_render_the_lines_of_their_records(batches: list[list[bytes]]) -> None:
    renderer = JsonLines()
    for batch in batches:
        text = renderer.raw(batch)
        if text is None:  # a SequenceExample: rendered record by record
            assert any(wire.has_other_fields(data) for data in batch)
            continue
        assert text == "".join(json.dumps(_raw_json(d), ensure_ascii=False) + "\n" for d in batch)


DECODED_SCHEMA = """\
version: 1
records:
  R:
    features:
      n: {dtype: int16}
      flag: {dtype: bool, optional: true}
      x: {dtype: float32, default: 1.5}
      words: {dtype: string, shape: [null]}
      blob: {dtype: bytes, optional: true}
      grid: {dtype: int64, shape: [2, 2]}
      rows: {dtype: float32, shape: [null, 2]}
      name: {dtype: string}
"""


@st.composite
def _decodable(draw: st.DrawFn) -> bytes:
    words = [draw(st.sampled_from(_TEXTS[:7] + _TEXTS[9:])) for _ in range(draw(st.integers(0, 3)))]
    features = {
        "n": wire.int64_feature(np.array([draw(st.integers(-(2**15), 2**15 - 1))])),
        "words": wire.bytes_feature(words),
        "grid": wire.int64_feature(np.arange(4) * draw(st.integers(-3, 3))),
        "rows": wire.float_feature(np.ones(2 * draw(st.integers(0, 2)), np.float32)),
        "name": wire.bytes_feature([draw(st.sampled_from(_TEXTS[:7] + _TEXTS[9:]))]),
    }
    if draw(st.booleans()):
        features["flag"] = wire.int64_feature(np.array([draw(st.integers(0, 1))]))
    if draw(st.booleans()):
        features["x"] = wire.float_feature(np.array([draw(st.floats(width=32))], np.float32))
    if draw(st.booleans()):
        features["blob"] = wire.bytes_feature([draw(st.sampled_from(_TEXTS))])
    return wire.example(
        wire.map_entry(wire.key_field(k), features[k]) for k in wire.map_key_order(features)
    )


@settings(max_examples=100, deadline=None)
@given(st.lists(_decodable(), min_size=1, max_size=8))
def test_decoded_batches_render_the_lines_of_their_records(
    tmp_path_factory: pytest.TempPathFactory, batch: list[bytes]
) -> None:
    schema = tmp_path_factory.mktemp("decoded") / "r.yaml"
    schema.write_text(DECODED_SCHEMA)
    record = load_record(str(schema), None)
    codec = record.batch_codec
    columns = codec.decode(batch)
    text = JsonLines().decoded(record.names, columns, lambda: codec.rows(columns))
    expected = [
        json.dumps({k: value_json(v) for k, v in record.decode(d).items()}, ensure_ascii=False)
        for d in batch
    ]
    assert text == "".join(line + "\n" for line in expected)


# --- files, pipes and long values -----------------------------------------------------------------


def _numbers(path: Path, first: int, count: int) -> None:
    write_tfrecord(
        path,
        [
            wire.example([wire.map_entry(wire.key_field("n"), wire.int64_scalar_feature(i))])
            for i in range(first, first + count)
        ],
    )


def test_several_files_and_globs_name_the_file_of_each_record(tmp_path: Path) -> None:
    _numbers(tmp_path / "a-1.tfrecord", 0, 3)
    _numbers(tmp_path / "a-2.tfrecord", 3, 2)
    done = tfr_gen("cat", "a-*.tfrecord", "--format", "json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert [json.loads(line) for line in done.stdout.splitlines()] == [
        {"file": f"a-{1 + (i > 2)}.tfrecord", "record": i - 3 * (i > 2),
         "value": {"n": {"int64_list": [i]}}}
        for i in range(5)
    ]  # fmt: skip
    done = tfr_gen(
        "cat", "a-*.tfrecord", "--skip", "2", "-n", "2", "--format", "text", cwd=tmp_path
    )
    assert done.stdout.splitlines() == [
        "a-1.tfrecord: record 2 (byte offset 60)",  # two 14-byte records, 16 framing bytes each
        "  'n': int64_list [2]",
        "a-2.tfrecord: record 0 (byte offset 0)",
        "  'n': int64_list [3]",
    ]
    single = tfr_gen("cat", "a-1.tfrecord", "--format", "json", cwd=tmp_path)
    assert single.stdout.splitlines()[0] == '{"n": {"int64_list": [0]}}'


def test_a_reader_that_stops_early_ends_cat_quietly(tmp_path: Path) -> None:
    _numbers(tmp_path / "big.tfrecord", 0, 300_000)
    done = shell("$tfr_gen cat big.tfrecord | head -1", cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (0, '{"n": {"int64_list": [0]}}\n', "")
    done = shell("$tfr_gen cat big.tfrecord --format text | head -2", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (0, "")


def test_long_bytes_are_cut_in_text_unless_full(tmp_path: Path) -> None:
    long = b"x" * 20_000
    entry = wire.map_entry(wire.key_field("blob"), wire.bytes_feature([long, b"\xff" * 30_000]))
    write_tfrecord(tmp_path / "b.tfrecord", [wire.example([entry])])
    done = tfr_gen("cat", "b.tfrecord", "--format", "text", cwd=tmp_path)
    line = done.stdout.splitlines()[1]
    assert len(line) < 250
    assert line == (
        "  'blob': bytes_list ['" + "x" * 77 + "'... (20,000 bytes), b'" + "\\xff" * 18
        + "'... (30,000 bytes)]"
    )  # fmt: skip
    full = tfr_gen("cat", "b.tfrecord", "--format", "text", "--full", cwd=tmp_path)
    assert "['" + "x" * 20_000 + "', b'" + "\\xff" * 30_000 + "']" in full.stdout
