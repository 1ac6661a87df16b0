"""The protocol of a file being written that appears under its name whole or not at all:
:class:`WholeOrNothing`, the base of :class:`~codegen.runtime.io.writer.AtomicFile` (a local file)
and :class:`~codegen.runtime.io.urls.ObjectFile` (an object of a store)."""

from __future__ import annotations

import abc
import weakref
from types import TracebackType
from typing import Self

__all__ = ["WholeOrNothing"]


class WholeOrNothing(abc.ABC):
    """A file being written that appears under its name on :meth:`commit`, or not at all.

    A subclass sets ``_finalizer``, a :class:`weakref.finalize` that abandons what was written (it
    runs once: on :meth:`discard`, when :meth:`commit` fails, or when the object is garbage
    collected uncommitted), and detaches it once committed. A ``with`` block commits when it ends
    normally and discards when it ends with an exception.
    """

    _finalizer: weakref.finalize[..., object]

    @abc.abstractmethod
    def commit(self) -> None:
        """Makes the file appear whole under its name; if that fails, discards it and re-raises."""

    def discard(self) -> None:
        """Abandons what was written: nothing appears under the name."""
        self._finalizer()

    @property
    def closed(self) -> bool:
        """Whether the file was committed or discarded."""
        return not self._finalizer.alive

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is not None:
            self.discard()
        else:
            self.commit()
