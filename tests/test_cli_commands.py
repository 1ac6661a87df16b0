"""The command line as a new user meets it, run through the installed ``tfr-gen``: mistyped commands,
options before the schemas, one message style, counting words."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

from cli_process import tfr_gen

from codegen.runtime.codec import wire
from codegen.runtime.io.writer import write_tfrecord

ROOT = Path(__file__).resolve().parent.parent


def test_a_mistyped_command_is_named_with_the_closest_command(tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text((ROOT / "schemas" / "customer.yaml").read_text())
    done = tfr_gen("valdate", "s.yaml", "c.tfrecord", cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith(
        "tfr-gen: error: unknown command 'valdate' (did you mean 'validate'?)"
    )
    assert "Traceback" not in done.stderr
    done = tfr_gen("frobnicate", cwd=tmp_path)
    assert done.returncode == 2
    assert "unknown command 'frobnicate'; the commands: generate, diff, infer" in done.stderr


def test_a_first_word_that_is_a_schema_path_still_generates(tmp_path: Path) -> None:
    # A file named like a command is a schema when it exists; a missing .yaml is the
    # generator's to report (with its position), not an unknown command.
    (tmp_path / "stats").mkdir()
    (tmp_path / "stats" / "customer.yaml").write_text(
        (ROOT / "schemas" / "customer.yaml").read_text()
    )
    done = tfr_gen("missing.yaml", cwd=tmp_path)
    assert done.returncode == 2
    assert "missing.yaml:1:1: no such schema file or directory" in done.stderr
    done = tfr_gen("stats/customer.yaml", "--out", "out", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "out" / "customer.py").is_file()


def test_options_may_come_before_the_schemas_of_the_default_command(tmp_path: Path) -> None:
    (tmp_path / "schemas").mkdir()
    (tmp_path / "schemas" / "customer.yaml").write_text(
        (ROOT / "schemas" / "customer.yaml").read_text()
    )
    done = tfr_gen("--check", "schemas", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stdout == "stale: generated/customer.py\n"
    done = tfr_gen("-o", "out", "schemas", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert tfr_gen("--check", "--out", "out", "schemas", cwd=tmp_path).returncode == 0
    assert tfr_gen("generate", "--check", "-o", "out", "schemas", cwd=tmp_path).returncode == 0


def test_every_command_says_errors_and_warnings_in_one_style(tmp_path: Path) -> None:
    good = wire.example([wire.map_entry(wire.key_field("x"), wire.int64_scalar_feature(1))])
    write_tfrecord(tmp_path / "a.tfrecord", [good, b"\x0a\x05"])
    style = re.compile(r"^tfr-gen( [a-z-]+)?: (error|warning): ")
    runs = {
        "index": tfr_gen("index", "absent.tfrecord", cwd=tmp_path),
        "cat": tfr_gen("cat", "a.tfrecord", "--on-error", "skip", cwd=tmp_path),
        "stats": tfr_gen("stats", "absent.tfrecord", cwd=tmp_path),
        "infer": tfr_gen("infer", "a.tfrecord", "--name", "bad name", cwd=tmp_path),
        "validate": tfr_gen("validate", "absent.yaml", "a.tfrecord", cwd=tmp_path),
        "diff": tfr_gen("diff", "only.yaml", cwd=tmp_path),
    }
    for command, done in runs.items():
        diagnostics = [line for line in done.stderr.splitlines() if ": error: " in line]
        diagnostics += [line for line in done.stderr.splitlines() if ": warning: " in line]
        assert diagnostics, (command, done.stderr)
        for line in diagnostics:
            assert style.match(line), (command, line)
            assert line.startswith(f"tfr-gen {command}: "), (command, line)
    assert runs["index"].stderr.splitlines() == [
        "tfr-gen index: error: absent.tfrecord: No such file or directory",
        "tfr-gen index: 1 of 1 file not indexed",
    ]
    assert (
        runs["cat"]
        .stderr.splitlines()[0]
        .startswith(
            f"tfr-gen cat: warning: a.tfrecord: record 1 at byte offset {len(good) + 16}: skipped a record"
        )
    )


def test_counts_and_articles_read_as_english(tmp_path: Path) -> None:
    good = wire.example([wire.map_entry(wire.key_field("x"), wire.int64_scalar_feature(1))])
    path = tmp_path / "a.tfrecord"
    write_tfrecord(path, [good])
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF  # the only record's data CRC
    path.write_bytes(bytes(data))
    (tmp_path / "s.yaml").write_text(
        "version: 1\nrecords:\n  R:\n    features:\n      x: {dtype: int64}\n"
    )
    done = tfr_gen("validate", "s.yaml", "a.tfrecord", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stdout.splitlines()[-1] == (
        f"tfr-gen validate: R: 0 records in 1 file: 1 unreadable stretch skipped"
        f" ({len(data)} bytes)"
    )
    (tmp_path / "new.yaml").write_text(
        textwrap.dedent(
            """\
            version: 2
            records:
              R:
                features:
                  x: {dtype: float32}
            """
        )
    )
    done = tfr_gen("diff", "s.yaml", "new.yaml", cwd=tmp_path)
    assert done.returncode == 1
    assert "values travel in a float_list instead of an int64_list" in done.stdout
