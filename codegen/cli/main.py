"""The ``tfr-gen`` command line.

``tfr-gen SCHEMA...`` is short for ``tfr-gen generate SCHEMA...``. Exit codes: 0 ok,
1 something was found (stale generated files, breaking schema changes, invalid data), 2 errors
(invalid schemas, bad arguments, unreadable files), 130 interrupted. Errors are printed as
``tfr-gen CMD: error: ...`` with ``path:line:col: message`` or
``file: record N at byte offset M: ...``, never as a traceback.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Sequence
from typing import NoReturn, TextIO

from codegen import __version__
from codegen.cli.commands import COMMANDS
from codegen.cli.commands.exitcodes import EXIT_ERROR, EXIT_INTERRUPTED
from codegen.cli.commands.messages import Messages, prefix
from codegen.errors import TfrGenError


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EXIT_ERROR, f"{self.prog}: error: {message}\n")


class _Version(argparse.Action):
    """``--version``: the version and the accelerator's status (importing the runtime only when asked)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the status line says it instead
            from codegen.runtime import accel

        print(f"tfr-gen {__version__} ({accel.status()})", file=sys.stdout)
        parser.exit(0)


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="tfr-gen",
        description=(
            "Typed Python modules for TFRecord data (tf.train.Example) from YAML schemas,"
            " and tools for the data."
        ),
        epilog="'tfr-gen SCHEMA...' is short for 'tfr-gen generate SCHEMA...'.",
    )
    parser.add_argument(
        "--version",
        action=_Version,
        nargs=0,
        help="show the version and whether the C accelerator is active, and exit",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for command in COMMANDS:
        command.configure(sub.add_parser(command.NAME, help=command.HELP, description=command.HELP))
    return parser


def main(
    argv: Sequence[str] | None = None, *, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    """Run the command line; returns the exit code."""
    out = out or sys.stdout
    err = err or sys.stderr
    command_name: str | None = None
    try:
        arguments = list(sys.argv[1:] if argv is None else argv)
        names = {command.NAME for command in COMMANDS}
        if arguments and arguments[0] not in names and not arguments[0].startswith("-"):
            arguments.insert(0, "generate")
        parser = _parser()
        args = parser.parse_args(arguments)
        if args.command is None:
            parser.print_help(err)
            return EXIT_ERROR
        command_name = args.command
        command = next(c for c in COMMANDS if c.NAME == args.command)
        code: int = command.run(args, out, err)
        return code
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else EXIT_ERROR
    except TfrGenError as exc:
        Messages(command_name, err).error(str(exc))
        return EXIT_ERROR
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        Messages(command_name, err).error(f"{where}{exc.strerror or exc}")
        return EXIT_ERROR
    except KeyboardInterrupt:
        print(f"{prefix(command_name)}: interrupted", file=err)
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
