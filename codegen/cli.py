"""The ``tfr-gen`` command line.

``tfr-gen SCHEMA...`` (or ``tfr-gen generate SCHEMA...``) writes one module per schema. Exit codes: 0 ok, 1 generated
files are stale (``--check``), 2 errors (invalid schemas, bad arguments, unreadable files). Errors are printed as
``path:line:col: message``, never as a traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TextIO

from codegen import __version__
from codegen.errors import TfrGenError
from codegen.generate import display_path, generate

EXIT_OK = 0
EXIT_DRIFT = 1
EXIT_ERROR = 2

SUBCOMMANDS = ("generate",)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        self.exit(EXIT_ERROR, f"{self.prog}: error: {message}\n")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="tfr-gen",
        description="Generate typed Python modules for TFRecord data (tf.train.Example) from YAML schemas.",
        epilog="Commands: 'tfr-gen SCHEMA...' is short for 'tfr-gen generate SCHEMA...'.",
    )
    parser.add_argument("--version", action="version", version=f"tfr-gen {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    gen = sub.add_parser("generate", help="generate one Python module per schema (the default command)")
    gen.add_argument("schemas", nargs="+", metavar="SCHEMA", help="a schema file, or a directory of *.yaml schemas")
    gen.add_argument("-o", "--out", default="generated", metavar="DIR", help="output directory (default: generated)")
    gen.add_argument(
        "--check",
        action="store_true",
        help="write nothing; list the generated files that are missing or out of date and exit 1 if any",
    )
    return parser


def _run_generate(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    result = generate(args.schemas, out_dir=args.out, check=args.check)
    if not result.ok:
        for diagnostic in result.diagnostics:
            print(diagnostic, file=err)
        print(f"tfr-gen: {len(result.diagnostics)} error(s); nothing was written", file=err)
        return EXIT_ERROR
    if args.check:
        for path in result.stale:
            print(f"stale: {display_path(path)}", file=out)
        if result.stale:
            print(f"tfr-gen: {len(result.stale)} generated file(s) out of date; run 'tfr-gen' to update", file=err)
            return EXIT_DRIFT
        print(f"tfr-gen: {len(result.unchanged)} generated file(s) up to date", file=out)
        return EXIT_OK
    for path in result.written:
        print(f"wrote {display_path(path)}", file=out)
    print(f"tfr-gen: {len(result.written)} written, {len(result.unchanged)} unchanged", file=out)
    return EXIT_OK


def main(argv: Sequence[str] | None = None, *, out: TextIO | None = None, err: TextIO | None = None) -> int:
    """Run the command line; returns the exit code."""
    out = out or sys.stdout
    err = err or sys.stderr
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments and arguments[0] not in SUBCOMMANDS and not arguments[0].startswith("-"):
        arguments.insert(0, "generate")
    try:
        args = _parser().parse_args(arguments)
        if args.command is None:
            _parser().print_help(err)
            return EXIT_ERROR
        return _run_generate(args, out, err)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else EXIT_ERROR
    except TfrGenError as exc:
        print(f"tfr-gen: error: {exc}", file=err)
        return EXIT_ERROR
    except OSError as exc:
        print(f"tfr-gen: error: {exc.filename or ''}: {exc.strerror or exc}", file=err)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("tfr-gen: interrupted", file=err)
        return 130


if __name__ == "__main__":
    sys.exit(main())
