"""The package's exception types.

Every error tfr-gen raises on bad input is a :class:`TfrGenError`, which is a ``ValueError``:

* :class:`SchemaError` -- a schema file is invalid; carries every diagnostic (``path:line:col: message``).
* :class:`RecordError` -- a value does not fit its record (construction, ``encode``, ``decode``).
* :class:`DataError` -- a TFRecord file is corrupt or truncated; names the file, record index and byte offset.
* :class:`SchemaMismatchError` -- data was written with a schema the reader cannot read (names every change).

:class:`MissingExtraError` (an ``ImportError``) says which optional extra to install.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from codegen.compat import Change


class TfrGenError(ValueError):
    """Base class of every error tfr-gen raises on bad input."""


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One problem in a schema file, with its position (1-based line and column)."""

    path: str
    line: int
    col: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.col}: {self.message}"


class SchemaError(TfrGenError):
    """A schema file is invalid. ``diagnostics`` holds every problem found, in file order."""

    def __init__(self, diagnostics: Sequence[Diagnostic]) -> None:
        self.diagnostics = tuple(sorted(diagnostics, key=lambda d: (d.path, d.line, d.col)))
        super().__init__("\n".join(str(d) for d in self.diagnostics))


class RecordError(TfrGenError):
    """A value does not fit its record: bad constructor argument, or malformed Example bytes."""


class DataError(TfrGenError):
    """A TFRecord file is corrupt or truncated.

    ``path`` is the file (or ``"<stream>"``), ``index`` the 0-based record index and ``offset`` the byte offset of the
    record's header in the (uncompressed) record stream.
    """

    def __init__(self, message: str, *, path: str, index: int, offset: int) -> None:
        self.path = path
        self.index = index
        self.offset = offset
        self.reason = message
        super().__init__(f"{path}: record {index} at byte offset {offset}: {message}")


class MissingExtraError(ImportError):
    """An optional dependency is not installed; the message names the extra that provides it."""


class SchemaMismatchError(TfrGenError):
    """Data was written with a schema its reader cannot read safely.

    ``changes`` holds every change from the writer's record to the reader's
    (:class:`codegen.compat.Change`); the message names each one and whether it blocks reading.
    """

    def __init__(self, message: str, changes: Sequence[Change]) -> None:
        self.changes = tuple(changes)
        super().__init__(message)
