"""The command line as a whole: ``json-schema``, ``--help``, and the progress bar of the data tools
on a terminal."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from codegen.cli.commands import index
from codegen.generator.schema.model import SchemaDoc
from codegen.runtime.codec import wire
from codegen.runtime.io.writer import write_tfrecord
from support.cli import Terminal, run_cli
from support.framing import flip_byte, frame_offsets


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


def test_an_unexpected_exception_is_one_line_not_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*_: object) -> int:
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr(index, "run", broken)
    monkeypatch.delenv("TFR_GEN_DEBUG", raising=False)
    code, out, err = run_cli("index", "x.tfrecord", cwd=tmp_path)
    assert (code, out) == (2, "")
    assert err == (
        "tfr-gen index: error: internal error: ZeroDivisionError: division by zero (please report"
        " it; TFR_GEN_DEBUG=1 shows the traceback)\n"
    )
    monkeypatch.setattr(index, "run", lambda *_: (_ for _ in ()).throw(MemoryError()))
    code, out, err = run_cli("index", "x.tfrecord", cwd=tmp_path)
    assert (code, err) == (
        2,
        "tfr-gen index: error: out of memory (a record larger than the memory available?"
        " --max-record-bytes limits the records read)\n",
    )
    monkeypatch.setenv("TFR_GEN_DEBUG", "1")
    monkeypatch.setattr(index, "run", broken)
    with pytest.raises(ZeroDivisionError):
        run_cli("index", "x.tfrecord", cwd=tmp_path)
