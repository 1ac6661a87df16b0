"""Compression of a whole TFRecord stream: ``"gzip"`` or ``"zlib"``, as
``tf.io.TFRecordOptions(compression_type=...)`` with ``"GZIP"`` or ``"ZLIB"``.

:func:`resolve_compression` turns a compression argument (possibly ``"auto"``) into the one to
use, :func:`compressor` makes the writer's compressor and :class:`InflatingSource` gives a
reader the uncompressed bytes of a compressed file.
"""

from __future__ import annotations

import os
import zlib
from typing import BinaryIO, Literal

from codegen.errors import TfrGenError

__all__ = [
    "Compression",
    "CompressionArg",
    "CompressedStreamError",
    "InflatingSource",
    "compressor",
    "resolve_compression",
]

Compression = Literal["gzip", "zlib"] | None
"""How the record stream is compressed: ``None`` (not at all), ``"gzip"`` or ``"zlib"``."""

CompressionArg = Compression | Literal["auto"]
"""``None``, ``"gzip"``, ``"zlib"``, or ``"auto"`` (by the path's ``.gz``/``.zlib`` suffix)."""

_WBITS: dict[str, int] = {"gzip": 16 + 15, "zlib": 15}  # zlib window bits (+16: gzip container)
_COMPRESSED_CHUNK = 1 << 18  # compressed bytes fed to the decompressor at a time


def resolve_compression(
    path: str | os.PathLike[str] | None, compression: CompressionArg
) -> Compression:
    """The compression to use for ``path``.

    ``"auto"`` picks by the path's suffix (case-insensitively): ``.gz`` is gzip, ``.zlib`` is zlib,
    anything else (and no path, as for a file object) is uncompressed. Any other value must be
    ``None``, ``"gzip"`` or ``"zlib"`` and is returned as is; an unknown name raises
    :class:`~codegen.errors.TfrGenError` (a ``ValueError``).
    """
    if compression == "auto":
        if path is None:
            return None
        name = os.fspath(path).lower()
        if name.endswith(".gz"):
            return "gzip"
        if name.endswith(".zlib"):
            return "zlib"
        return None
    if compression is None or compression == "gzip" or compression == "zlib":
        return compression
    raise TfrGenError(
        f"unknown TFRecord compression {compression!r}; "
        "expected one of None, 'gzip', 'zlib', 'auto'"
    )


def compressor(compression: Literal["gzip", "zlib"]) -> zlib._Compress:
    """A compressor of a record stream in the format TensorFlow reads for ``compression``."""
    return zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, _WBITS[compression])


class CompressedStreamError(Exception):
    """The compressed stream is corrupt or truncated (a reader reports it as a DataError)."""


class InflatingSource:
    """The uncompressed bytes of a zlib stream or of one or more concatenated gzip members."""

    def __init__(self, file: BinaryIO, compression: Literal["gzip", "zlib"]) -> None:
        self._file = file
        self._name = compression
        self._wbits = _WBITS[compression]
        self._inflater = zlib.decompressobj(self._wbits)
        self._input = b""
        self._started = False

    def readinto(self, buffer: memoryview) -> int:
        """Fills the start of ``buffer`` with more bytes (at least one until the stream ends) and
        returns how many; 0 at the end. :class:`CompressedStreamError` for a corrupt or truncated
        stream."""
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def read(self, size: int) -> bytes:
        """Up to ``size`` more bytes (at least one until the stream ends), ``b""`` at the end."""
        while True:
            if self._inflater.eof:
                rest = self._inflater.unused_data or self._file.read(_COMPRESSED_CHUNK)
                if not rest:
                    return b""
                if self._name != "gzip":
                    raise CompressedStreamError("corrupt zlib stream: data after its end")
                self._inflater = zlib.decompressobj(self._wbits)  # the next gzip member
                self._input = rest
            elif not self._input:
                self._input = self._file.read(_COMPRESSED_CHUNK)
                if not self._input:
                    if not self._started:
                        return b""  # an empty file holds no records
                    raise CompressedStreamError(
                        f"truncated {self._name} stream: the file ends inside compressed data"
                    )
                self._started = True
            try:
                out = self._inflater.decompress(self._input, size)
            except zlib.error as exc:
                raise CompressedStreamError(f"corrupt {self._name} stream: {exc}") from None
            self._input = b"" if self._inflater.eof else self._inflater.unconsumed_tail
            if out:
                return out
