"""What the schema-importing commands (``import-schema``, ``import-tfds``) share: checking the
record and output names before importing, and writing the imported schema."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TextIO

from codegen.cli.commands.exitcodes import EXIT_OK
from codegen.cli.commands.messages import Messages
from codegen.files import check_output, write_atomic
from codegen.generator import naming
from codegen.generator.load import parse_schema
from codegen.tools.inference import InferredRecord, schema_yaml


def add_out_argument(parser: argparse.ArgumentParser) -> None:
    """The ``-o/--out`` option naming the schema file the import writes."""
    parser.add_argument(
        "-o",
        "--out",
        metavar="SCHEMA",
        help="write the tfr-gen schema to this file (default: stdout)",
    )


def import_target(record_name: str, out_path: str | None, say: Messages) -> Path | None:
    """The schema file the import writes (``imported.yaml`` naming it when it goes to stdout),
    checked with the record name before anything is read; ``None`` after reporting a bad name."""
    target = Path(out_path) if out_path else Path("imported.yaml")
    problem = naming.record_name_problem(record_name) or naming.module_name_problem(
        target.stem, target.suffix or ".yaml"
    )
    if problem is not None:
        say.error(problem)
        return None
    if out_path:
        check_output(target)
    return target


def write_imported(
    record: InferredRecord,
    command: str,
    target: Path,
    out_path: str | None,
    out: TextIO,
    say: Messages,
) -> int:
    """Writes the schema of the imported ``record`` to ``out_path`` (or ``out``), after checking
    the generator accepts it, and warns of each feature left out."""
    text = schema_yaml(record).replace(
        "Inferred by 'tfr-gen infer'", f"Imported by 'tfr-gen {command}'"
    )
    parse_schema(text, str(target))  # the generator accepts what is written, or this raises
    for name, reason in record.left_out:
        say.warning(f"feature {name!r} left out: {reason}")
    if out_path:
        write_atomic(target, text)
        print(f"wrote {out_path} ({record.name}: {len(record.features)} features)", file=out)
    else:
        out.write(text)
    return EXIT_OK
