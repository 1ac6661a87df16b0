"""The command line as a new user meets it, run through the installed ``tfr-gen``: mistyped commands,
options before the schemas, one message style, counting words."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

from codegen import __version__
from codegen.runtime.codec import wire
from codegen.runtime.io.writer import write_tfrecord
from support.cli import shell, tfr_gen
from support.paths import ROOT


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


# --- the generator ----------------------------------------------------------------------------


def _schemas(tmp_path: Path, *names: str) -> None:
    """Copies the repository's schemas to ``tmp_path/schemas/<name>`` (a name may hold a directory:
    ``vision/mnist.yaml``)."""
    for name in names:
        target = tmp_path / "schemas" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text((ROOT / "schemas" / Path(name).name).read_text())


def test_no_schema_found_is_an_error_naming_what_was_searched(tmp_path: Path) -> None:
    (tmp_path / "schemas" / "notes").mkdir(parents=True)
    (tmp_path / "schemas" / "notes" / "readme.txt").write_text("no schema here\n")
    done = tfr_gen("schemas", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.splitlines() == [
        "schemas:1:1: no schema files (*.yaml, *.yml) in schemas/ (and its subdirectories)",
        "tfr-gen generate: 1 error; nothing was written",
    ]
    assert not (tmp_path / "generated").exists()


def test_schema_directories_are_searched_recursively_and_mirrored_as_packages(
    tmp_path: Path,
) -> None:
    _schemas(tmp_path, "customer.yaml", "vision/mnist.yaml", "vision/faces/image.yaml")
    (tmp_path / "schemas" / ".hidden").mkdir()
    (tmp_path / "schemas" / ".hidden" / "basics.yaml").write_text("not: a schema\n")
    done = tfr_gen("schemas", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "wrote generated/customer.py",
        "wrote generated/vision/faces/image.py",
        "wrote generated/vision/mnist.py",
        "wrote generated/vision/__init__.py",
        "wrote generated/vision/faces/__init__.py",
        "tfr-gen generate: 5 written, 0 unchanged",
    ]
    init = (tmp_path / "generated" / "vision" / "__init__.py").read_text().splitlines()
    assert init[:2] == [
        f"# Generated by tfr-gen {__version__} from schemas/vision. Do not edit by hand.",
        "# Regenerate with: tfr-gen schemas --out generated",
    ]
    module = (tmp_path / "generated" / "vision" / "mnist.py").read_text().splitlines()
    assert module[1] == "# Regenerate with: tfr-gen schemas --out generated"
    imported = shell(
        "cd generated && python -c 'from vision.mnist import Digit;"
        " from vision.faces.image import Image; import customer; print(Digit.__name__)'",
        cwd=tmp_path,
    )
    assert (imported.returncode, imported.stdout) == (0, "Digit\n"), imported.stderr
    assert tfr_gen("--check", "schemas", cwd=tmp_path).returncode == 0


def test_check_reports_orphans_and_clean_removes_only_generated_ones(tmp_path: Path) -> None:
    _schemas(tmp_path, "customer.yaml", "mnist.yaml", "vision/image.yaml")
    assert tfr_gen("schemas", cwd=tmp_path).returncode == 0
    (tmp_path / "generated" / "handwritten.py").write_text("VALUE = 1\n")
    (tmp_path / "schemas" / "mnist.yaml").unlink()
    (tmp_path / "schemas" / "vision" / "image.yaml").unlink()
    done = tfr_gen("schemas", "--check", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stdout.splitlines() == [
        "orphaned: generated/mnist.py (its schema is gone)",
        "orphaned: generated/vision/__init__.py (its schema is gone)",
        "orphaned: generated/vision/image.py (its schema is gone)",
    ]
    assert done.stderr == (
        "tfr-gen generate: 3 orphaned generated files; run"
        " 'tfr-gen schemas --out generated --clean' to update\n"
    )
    done = tfr_gen("schemas", cwd=tmp_path)  # without --clean: a warning, nothing removed
    assert done.returncode == 0
    assert "run 'tfr-gen schemas --out generated --clean' to remove" in done.stderr
    assert (tmp_path / "generated" / "mnist.py").exists()
    done = tfr_gen("schemas", "--out", "generated", "--clean", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "tfr-gen generate: 0 written, 1 unchanged, 3 removed"
    remaining = sorted(p.relative_to(tmp_path / "generated").as_posix() for p in
                       (tmp_path / "generated").rglob("*"))  # fmt: skip
    assert remaining == ["customer.py", "handwritten.py"]
    assert tfr_gen("schemas", "--check", cwd=tmp_path).returncode == 0


def test_stale_files_name_the_exact_command_that_updates_them(tmp_path: Path) -> None:
    _schemas(tmp_path, "customer.yaml")
    assert tfr_gen("schemas", "-o", "out dir", cwd=tmp_path).returncode == 0
    schema = tmp_path / "schemas" / "customer.yaml"
    schema.write_text(schema.read_text().replace("One customer", "A customer"))
    done = tfr_gen("--check", "schemas", "-o", "out dir", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stdout == "stale: out dir/customer.py\n"
    assert done.stderr == (
        "tfr-gen generate: 1 generated file out of date;"
        " run 'tfr-gen schemas --out 'out dir'' to update\n"
    )


def test_module_names_are_checked_when_generating_only(tmp_path: Path) -> None:
    text = "version: 1\nrecords:\n  R:\n    features:\n      x: {dtype: int64}\n"
    for name in ("numpy.yaml", "types.yaml"):
        (tmp_path / name).write_text(text)
    done = tfr_gen("numpy.yaml", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.startswith(
        "numpy.yaml:1:1: the module name 'numpy' (the schema file's name) would shadow the"
        " 'numpy' package, which generated modules import; rename the file, e.g. to"
        " 'numpy_schema.yaml'\n"
    )
    write_tfrecord(
        tmp_path / "d.tfrecord",
        [wire.example([wire.map_entry(wire.key_field("x"), wire.int64_scalar_feature(3))])],
    )
    done = tfr_gen("validate", "types.yaml", "d.tfrecord", cwd=tmp_path)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == "tfr-gen validate: R: 1 record in 1 file: no problems\n"
    assert tfr_gen("types.yaml", cwd=tmp_path).returncode == 2
