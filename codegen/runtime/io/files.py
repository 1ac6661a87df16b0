"""Where the I/O layer meets the file system for reading: the one function that opens a file's
bytes (:func:`open_input`), and how files are named in arguments and errors.

Files are written through :class:`~codegen.runtime.io.writer.AtomicFile`.
"""

from __future__ import annotations

import os
from typing import BinaryIO

__all__ = ["PathLike", "open_input", "stream_name"]

PathLike = str | os.PathLike[str]
"""A file path argument."""


def open_input(path: PathLike, *, buffered: bool = False) -> BinaryIO:
    """The file at ``path``, opened to read its bytes (``OSError`` when it cannot be).

    Unbuffered by default, for readers that fill large buffers of their own with ``readinto``;
    ``buffered`` for small reads at random positions.
    """
    return open(path, "rb", buffering=-1 if buffered else 0)


def stream_name(stream: BinaryIO) -> str:
    """The name errors use for a caller's file object: its ``name`` if a path, else ``<stream>``."""
    name = getattr(stream, "name", None)
    return name if isinstance(name, str) else "<stream>"
