"""The data tools' shared pieces: ``json-schema``, the progress bar, inputs, dynamic decoding."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import numpy as np
import pytest

from codegen.errors import RecordError, TfrGenError
from codegen.generator.ir import RecordIR
from codegen.generator.load import parse_schema
from codegen.generator.schema.model import SchemaDoc
from codegen.runtime.codec import registry, wire
from codegen.runtime.io.writer import write_tfrecord
from codegen.tools.dynamic import DynamicRecord, build_codec
from codegen.tools.progress import Progress
from codegen.tools.scan import Scanner, expand_inputs
from support.cli import Terminal, run_cli
from support.framing import flip_byte, frame_offsets
from support.modules import generated_module
from support.paths import SCHEMAS
from support.tutorial import customer_records


def test_json_schema_prints_the_schema_document_model(tmp_path: Path) -> None:
    code, out, err = run_cli("json-schema", cwd=tmp_path)
    assert (code, err) == (0, "")
    document = json.loads(out)
    assert list(document)[:2] == ["$schema", "title"]
    assert document["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert document["title"] == "tfr-gen schema"
    body = SchemaDoc.model_json_schema()
    body.pop("title")
    assert {k: v for k, v in document.items() if k not in ("$schema", "title")} == body
    assert out == json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def test_help_lists_the_tools(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli("--help", cwd=tmp_path)[0] == 0
    listed = capsys.readouterr().out
    for name in ("infer", "validate", "cat", "stats", "index", "json-schema"):
        assert f"    {name}" in listed


def test_progress_bar_draws_on_a_terminal_and_erases_itself() -> None:
    terminal = Terminal()
    now = [100.0]
    bar = Progress(terminal, 4_000_000, label="scan", interval=0.0, clock=lambda: now[0])
    now[0] = 102.0
    bar.update(1_000_000, 1234)
    now[0] = 108.0
    bar.update(4_000_000, 5000)
    bar.clear()
    first = (
        "scan [######..................]  25%  1.0 MB of 4.0 MB  1,234 records"
        "  500.0 kB/s  ETA 0:06"
    )
    second = (
        "scan [########################] 100%  4.0 MB of 4.0 MB  5,000 records"
        "  500.0 kB/s  ETA 0:00"
    )
    assert terminal.getvalue() == f"\r{first}\r{second}\r{' ' * len(second)}\r"
    piped = io.StringIO()
    bar = Progress(piped, 10, label="scan")
    bar.update(5, 1)
    bar.clear()
    assert piped.getvalue() == ""


def test_progress_bar_shows_long_times_left_in_hours() -> None:
    terminal = Terminal()
    now = [0.0]
    bar = Progress(terminal, 10**12, label="infer", interval=0.0, clock=lambda: now[0])
    now[0] = 10.0
    bar.update(10**8, 7)
    assert terminal.getvalue().endswith("  10.0 MB/s  ETA 27:46:30")


def test_progress_bar_redraws_at_most_once_per_interval() -> None:
    terminal = Terminal()
    bar = Progress(terminal, 100, label="x", interval=3600.0)
    for done in range(0, 100, 10):
        bar.update(done, done)
    assert terminal.getvalue().count("\r") == 1


def test_commands_show_progress_only_on_a_terminal(tmp_path: Path) -> None:
    write_tfrecord(tmp_path / "x.tfrecord", [wire.example([])] * 3)
    terminal = Terminal()
    code, out, _ = run_cli("stats", "x.tfrecord", cwd=tmp_path, err=terminal)
    assert code == 0 and "\r" not in out
    shown = terminal.getvalue()
    assert shown.startswith("\rstats [") and shown.endswith(" " * 20 + "\r")
    assert run_cli("stats", "x.tfrecord", cwd=tmp_path)[2] == ""


def test_the_bar_is_erased_before_warnings_and_problems(tmp_path: Path) -> None:
    records = [
        wire.example(
            [wire.map_entry(wire.key_field("x"), wire.int64_feature(np.ones(n, dtype=np.int64)))]
        )
        for n in (1, 2, 3)
    ]
    write_tfrecord(tmp_path / "x.tfrecord", records)
    flip_byte(tmp_path / "x.tfrecord", frame_offsets(records)[1] + 14)
    terminal = Terminal()
    assert run_cli("infer", "x.tfrecord", cwd=tmp_path, err=terminal)[0] == 0
    assert re.search(
        r"^\rinfer \[[#.]+\] +\d+%.*\r +\rtfr-gen infer: warning: x.tfrecord: record 1 ",
        terminal.getvalue(),
    )
    (tmp_path / "x.yaml").write_text("version: 1\nrecords: {X: {features: {x: {dtype: int64}}}}\n")
    terminal = Terminal()
    code, out, _ = run_cli("validate", "x.yaml", "x.tfrecord", cwd=tmp_path, err=terminal)
    assert code == 1 and out.startswith("x.tfrecord: record 1 at byte offset 30: corrupt record")
    assert terminal.getvalue().endswith(" \r") and "\r" not in out


def test_inputs_expand_globs_in_order_once(tmp_path: Path) -> None:
    for name in ("b.tfrecord", "a.tfrecord", "sub/c.tfrecord"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_bytes(b"")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(tmp_path)
        assert expand_inputs(["*.tfrecord", "a.tfrecord", "**/c.*"]) == [
            "a.tfrecord",
            "b.tfrecord",
            "sub/c.tfrecord",
        ]
        with pytest.raises(TfrGenError, match="sub: is a directory"):
            expand_inputs(["sub"])


def test_scanner_limit_and_positions(tmp_path: Path) -> None:
    records = [wire.example([]), b"xyz", wire.example([])]
    write_tfrecord(tmp_path / "a.tfrecord", records)
    write_tfrecord(tmp_path / "b.tfrecord.zlib", records)
    paths = [str(tmp_path / "a.tfrecord"), str(tmp_path / "b.tfrecord.zlib")]
    with Scanner(paths, limit=4) as scanner:
        seen = [(Path(r.path).name, r.index, r.offset, r.data) for r in scanner]
    assert seen == [
        ("a.tfrecord", 0, 0, records[0]),
        ("a.tfrecord", 1, 18, b"xyz"),
        ("a.tfrecord", 2, 37, records[2]),
        ("b.tfrecord.zlib", 0, 0, records[0]),
    ]
    assert (scanner.files, scanner.file_records, scanner.records) == (2, [3, 1], 4)


def test_dynamic_records_decode_like_the_generated_class() -> None:
    customer = generated_module("customer")
    schema = parse_schema((SCHEMAS / "customer.yaml").read_text(), "customer.yaml")
    dynamic = DynamicRecord(schema.records[0])
    record = customer_records()[0]
    values = dynamic.decode(record.encode())
    assert list(values) == [f.name for f in schema.records[0].features]
    for name, value in values.items():
        expected = getattr(record, name)
        if isinstance(expected, np.ndarray):
            assert isinstance(value, np.ndarray) and value.dtype == expected.dtype
            np.testing.assert_array_equal(value, expected)
        else:
            assert value == expected
    with pytest.raises(RecordError) as ours:
        dynamic.decode(wire.example([]))
    with pytest.raises(RecordError) as theirs:
        customer.Customer.decode(wire.example([]))
    assert str(ours.value) == str(theirs.value)


def test_codecs_this_runtime_lacks_are_named(monkeypatch: pytest.MonkeyPatch) -> None:
    schema = parse_schema((SCHEMAS / "mnist.yaml").read_text(), "mnist.yaml")
    record: RecordIR = schema.records[0]
    feature = next(f for f in record.features if f.kind.name == "numeric_tensor")
    assert build_codec(record, feature).shape == (784,)
    monkeypatch.delitem(registry.CODEC_CLASSES, "NumericTensor")
    message = r"Digit.image: features of shape \[784\] need the runtime codec NumericTensor"
    with pytest.raises(TfrGenError, match=message):
        build_codec(record, feature)
