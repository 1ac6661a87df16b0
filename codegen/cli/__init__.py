"""The ``tfr-gen`` command line: ``main`` parses the arguments and runs one of ``commands``."""

from codegen.cli.main import main

__all__ = ["main"]
