"""The ``tfr-gen`` subcommands.

Each command is a module of this package that defines ``NAME``, ``configure(parser)`` and
``run(args, out, err) -> int``. :data:`COMMANDS` lists them, with the help ``--help`` shows, in
that order; a module is imported only when its command runs (or its options are shown), so that
``tfr-gen --version`` and each command start without loading what the others need.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType


@dataclass(frozen=True, slots=True)
class Command:
    """A subcommand: its name, the module that implements it and its one-line help."""

    name: str
    module: str
    help: str

    def load(self) -> ModuleType:
        """The command's module (``configure`` and ``run``)."""
        return importlib.import_module(f"codegen.cli.commands.{self.module}")


COMMANDS: tuple[Command, ...] = (
    Command(
        "generate",
        "generate",
        "generate one Python module per schema (the default command)",
    ),
    Command(
        "diff",
        "diff",
        "list the changes between two versions of a schema and check that they keep data readable",
    ),
    Command(
        "infer",
        "infer",
        "infer a schema from TFRecord files (dtypes, shapes, optional features, names)",
    ),
    Command(
        "validate",
        "validate",
        "check TFRecord files against a schema, reporting every problem with its position",
    ),
    Command(
        "cat",
        "cat",
        "print the records of TFRecord files as JSON lines or readable text",
    ),
    Command(
        "stats",
        "stats",
        "statistics of TFRecord files per key: presence, list kinds, counts, ranges, lengths",
    ),
    Command(
        "convert",
        "convert",
        "convert TFRecord files or a dataset to Parquet and back, decoded by a schema",
    ),
    Command(
        "report",
        "report",
        "an HTML or JSON report of TFRecord files: distributions per feature, drift between two sets",
    ),
    Command(
        "index",
        "index",
        "write FILE.index (record offsets) beside uncompressed TFRecord files, for random access",
    ),
    Command(
        "clean",
        "clean",
        "list (or --remove) what killed writers left: stale temporary files, locks and shards",
    ),
    Command(
        "import-schema",
        "import_schema",
        "a schema from a TFX schema (tensorflow-metadata Schema, schema.pbtxt)",
    ),
    Command(
        "import-tfds",
        "import_tfds",
        "a schema from a prepared TensorFlow Datasets directory (features.json)",
    ),
    Command(
        "export-schema",
        "export_schema",
        "the TFX schema (tensorflow-metadata Schema) of a record",
    ),
    Command(
        "json-schema",
        "jsonschema",
        "print the JSON Schema of tfr-gen schema files (for editor completion and checks)",
    ),
)
"""Every subcommand, in the order ``--help`` lists them."""
