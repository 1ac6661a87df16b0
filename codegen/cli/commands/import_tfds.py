"""``tfr-gen import-tfds DIR``: a tfr-gen schema from a prepared TensorFlow Datasets directory."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TextIO

from codegen.cli.commands.exitcodes import EXIT_ERROR
from codegen.cli.commands.imported import add_out_argument, import_target, write_imported
from codegen.cli.commands.messages import Messages
from codegen.errors import TfrGenError
from codegen.tools.inference import record_name_for
from codegen.tools.tfds import import_tfds

NAME = "import-tfds"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "directory",
        metavar="DIR",
        help="a prepared TFDS dataset: the directory holding features.json and dataset_info.json",
    )
    add_out_argument(parser)
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
    target = import_target(record_name, args.out, say)
    if target is None:
        return EXIT_ERROR
    doc = (
        f"Imported from the TFDS dataset {dataset} {version}: read it with"
        f" {record_name}.read_dataset(DIR, split=...)."
    )
    try:
        record = import_tfds(directory, name=record_name, doc=doc)
    except TfrGenError as exc:
        say.error(str(exc))
        return EXIT_ERROR
    return write_imported(record, NAME, target, args.out, out, say)
