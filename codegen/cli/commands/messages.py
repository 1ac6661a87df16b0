"""One style for what every command says on stderr: ``tfr-gen CMD: error: ...``.

Errors and warnings start with the program and command (``tfr-gen validate: error: ...``; without a
command, as for a mistyped one, ``tfr-gen: error: ...``), as argparse's own usage errors do;
summary lines start with the program and command alone (``tfr-gen cat: skipped 2 ...``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TextIO

from codegen.tools.wording import plural

__all__ = ["PROGRAM", "Messages", "plural", "prefix"]

PROGRAM = "tfr-gen"


def prefix(command: str | None) -> str:
    """``tfr-gen`` or ``tfr-gen CMD``: how every line about ``command`` starts."""
    return PROGRAM if command is None else f"{PROGRAM} {command}"


class Messages:
    """The diagnostics of one command, written to ``stream``.

    ``before`` is called before each line (a progress bar erases itself there).
    """

    def __init__(
        self, command: str | None, stream: TextIO, before: Callable[[], None] | None = None
    ) -> None:
        self.prefix = prefix(command)
        self.stream = stream
        self.before = before

    def _print(self, text: str) -> None:
        if self.before is not None:
            self.before()
        print(text, file=self.stream)

    def error(self, text: str) -> None:
        """``tfr-gen CMD: error: text``."""
        self._print(f"{self.prefix}: error: {text}")

    def warning(self, text: str) -> None:
        """``tfr-gen CMD: warning: text``."""
        self._print(f"{self.prefix}: warning: {text}")

    def summary(self, text: str) -> None:
        """``tfr-gen CMD: text``: what the command did, in one line."""
        self._print(f"{self.prefix}: {text}")
