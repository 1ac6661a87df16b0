"""The ``tfr-gen`` command line.

``tfr-gen SCHEMA...`` is short for ``tfr-gen generate SCHEMA...`` (options may come first:
``tfr-gen --check schemas``); a first word that is neither a command nor a path to a schema is a
mistyped command (``unknown command 'valdate' (did you mean 'validate'?)``). Exit codes: 0 ok,
1 something was found (stale generated files, breaking schema changes, invalid data), 2 errors
(invalid schemas, bad arguments, unreadable files, running out of memory), 130 interrupted.
Errors are printed as ``tfr-gen CMD: error: ...`` with ``path:line:col: message`` or
``file: record N at byte offset M: ...``, never as a traceback (an unexpected exception is
reported in one line too; ``TFR_GEN_DEBUG=1`` lets its traceback through).

Output that goes to a pipe whose reader stops early (``tfr-gen cat big.tfrecord | head -1``) ends
the command quietly with status 0, as ripgrep does: the reader had what it wanted (with
``set -o pipefail`` the pipeline still succeeds, unlike with the 141 of a program killed by
SIGPIPE).
"""

from __future__ import annotations

import argparse
import difflib
import os
import sys
import warnings
from collections.abc import Sequence
from typing import NoReturn, TextIO

from codegen import __version__
from codegen.cli.commands import COMMANDS
from codegen.cli.commands.exitcodes import EXIT_ERROR, EXIT_INTERRUPTED, EXIT_OK
from codegen.cli.commands.messages import Messages, prefix
from codegen.errors import TfrGenError
from codegen.generator.naming import SCHEMA_SUFFIXES

DEFAULT_COMMAND = "generate"
_TOP_OPTIONS = frozenset({"-h", "--help", "--version"})
_VALUE_OPTIONS = frozenset({"-o", "--out"})
"""The default command's options that take a value (the value is not the first word)."""


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


def _parser(selected: str | None) -> argparse.ArgumentParser:
    """The parser of the command line; only the ``selected`` command's options are added (its
    module loaded)."""
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
        parser_of_command = sub.add_parser(
            command.name, help=command.help, description=command.help
        )
        if command.name == selected:
            command.load().configure(parser_of_command)
    return parser


def _first_word(arguments: Sequence[str]) -> int | None:
    """The position of the first argument that is not an option (nor an option's value)."""
    skip = False
    for i, argument in enumerate(arguments):
        if skip:
            skip = False
        elif argument in _VALUE_OPTIONS:
            skip = True
        elif argument == "--":
            return i + 1 if i + 1 < len(arguments) else None
        elif not argument.startswith("-") or argument == "-":
            return i
    return None


def _looks_like_a_schema(word: str) -> bool:
    """Whether ``word`` names a schema file or directory rather than a command: it exists, or it
    has a schema suffix or a path separator (a missing schema is the generator's to report)."""
    return (
        os.path.exists(word)
        or word.endswith(SCHEMA_SUFFIXES)
        or os.sep in word
        or "/" in word
        or any(char in word for char in "*?[")
    )


def resolve_command(arguments: Sequence[str]) -> list[str]:
    """``arguments`` with the default command put first when none is named.

    :class:`TfrGenError` for a first word that is neither a command nor a schema path.
    """
    names = [command.name for command in COMMANDS]
    position = _first_word(arguments)
    if position is None:
        if any(a not in _TOP_OPTIONS for a in arguments):
            return [DEFAULT_COMMAND, *arguments]  # options of generate without schemas
        return list(arguments)
    word = arguments[position]
    if word in names:
        if position == 0:
            return list(arguments)
        # Options before the command: they are the command's (argparse wants them after it).
        return [word, *arguments[:position], *arguments[position + 1 :]]
    if _looks_like_a_schema(word):
        return [DEFAULT_COMMAND, *arguments]
    close = difflib.get_close_matches(word, names, n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]!r}?)" if close else f"; the commands: {', '.join(names)}"
    raise TfrGenError(
        f"unknown command {word!r}{hint}; a schema to generate from is an existing .yaml file"
        " or directory"
    )


def _quiet_stdout() -> None:
    """Points standard output at the null device, so that Python's flush at exit finds no broken
    pipe to complain about."""
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, sys.stdout.fileno())
    except (OSError, ValueError):
        pass  # standard output is not a file descriptor: nothing will be flushed to it
    finally:
        os.close(null)


def main(
    argv: Sequence[str] | None = None, *, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    """Run the command line; returns the exit code."""
    out = out or sys.stdout
    err = err or sys.stderr
    command_name: str | None = None
    try:
        arguments = resolve_command(list(sys.argv[1:] if argv is None else argv))
        selected = next((c for c in COMMANDS if arguments and c.name == arguments[0]), None)
        parser = _parser(None if selected is None else selected.name)
        args = parser.parse_args(arguments)
        if args.command is None or selected is None:
            parser.print_help(err)
            return EXIT_ERROR
        command_name = args.command
        code: int = selected.load().run(args, out, err)
        return code
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else EXIT_ERROR
    except BrokenPipeError:
        if out is sys.stdout:
            _quiet_stdout()
        return EXIT_OK
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
    except MemoryError:
        Messages(command_name, err).error(
            "out of memory (a record larger than the memory available? --max-record-bytes"
            " limits the records read)"
        )
        return EXIT_ERROR
    except RecursionError:
        Messages(command_name, err).error("input nested too deeply to process")
        return EXIT_ERROR
    except Exception as exc:  # a bug: say what, never a traceback (TFR_GEN_DEBUG=1 shows it)
        if os.environ.get("TFR_GEN_DEBUG"):
            raise
        Messages(command_name, err).error(
            f"internal error: {type(exc).__name__}: {exc} (please report it; TFR_GEN_DEBUG=1 shows"
            " the traceback)"
        )
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
