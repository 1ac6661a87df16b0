"""The ``tfr-gen`` subcommands.

Each module defines ``NAME``, ``HELP``, ``configure(parser)`` and ``run(args, out, err) -> int``; ``COMMANDS`` lists
them in the order ``--help`` shows them.
"""

from __future__ import annotations

from types import ModuleType

from codegen.cli.commands import cat, diff, generate, index, infer, jsonschema, stats, validate

COMMANDS: tuple[ModuleType, ...] = (generate, diff, infer, validate, cat, stats, index, jsonschema)
