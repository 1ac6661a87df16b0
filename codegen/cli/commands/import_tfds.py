"""``tfr-gen import-tfds DIR``: a tfr-gen schema from a prepared TensorFlow Datasets directory."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TextIO

from codegen.cli.commands.exitcodes import EXIT_ERROR, EXIT_OK
from codegen.cli.commands.messages import Messages
from codegen.errors import TfrGenError
from codegen.files import check_output, write_atomic
from codegen.generator import naming
from codegen.generator.load import parse_schema
from codegen.tools.inference import record_name_for, schema_yaml
from codegen.tools.tfds import import_tfds

NAME = "import-tfds"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "directory",
        metavar="DIR",
        help="a prepared TFDS dataset: the directory holding features.json and dataset_info.json",
    )
    parser.add_argument(
        "-o",
        "--out",
        metavar="SCHEMA",
        help="write the tfr-gen schema to this file (default: stdout)",
    )
    parser.add_argument(
        "--record",
        metavar="NAME",
        help="the record name (default: the dataset's name in CamelCase)",
    )


def _dataset_name(directory: Path) -> tuple[str, str]:
    """The dataset's name and version from its ``dataset_info.json`` (the directory's otherwise)."""
    try:
        info = json.loads((directory / "dataset_info.json").read_bytes())
    except (OSError, ValueError):
        info = {}
    if not isinstance(info, dict):
        info = {}
    name = str(info.get("name") or directory.parent.name or directory.name)
    return name, str(info.get("version") or directory.name)


def run(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    say = Messages(NAME, err)
    directory = Path(args.directory)
    dataset, version = _dataset_name(directory)
    record_name = args.record or record_name_for(dataset)
    target = Path(args.out) if args.out else Path("imported.yaml")
    problem = naming.record_name_problem(record_name) or naming.module_name_problem(
        target.stem, target.suffix or ".yaml"
    )
    if problem is not None:
        say.error(problem)
        return EXIT_ERROR
    if args.out:
        check_output(target)
    doc = (
        f"Imported from the TFDS dataset {dataset} {version}: read it with"
        f" {record_name}.read_dataset(DIR, split=...)."
    )
    try:
        record = import_tfds(directory, name=record_name, doc=doc)
    except TfrGenError as exc:
        say.error(str(exc))
        return EXIT_ERROR
    text = schema_yaml(record).replace(
        "Inferred by 'tfr-gen infer'", "Imported by 'tfr-gen import-tfds'"
    )
    parse_schema(text, str(target))  # the generator accepts what is written, or this raises
    for name, reason in record.left_out:
        say.warning(f"feature {name!r} left out: {reason}")
    if args.out:
        write_atomic(target, text)
        print(f"wrote {args.out} ({record.name}: {len(record.features)} features)", file=out)
    else:
        out.write(text)
    return EXIT_OK
