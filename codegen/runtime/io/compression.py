"""Compression of a whole TFRecord stream: ``"gzip"`` or ``"zlib"``, as
``tf.io.TFRecordOptions(compression_type=...)`` with ``"GZIP"`` or ``"ZLIB"``.

Readers look at the data: :func:`detect_compression` tells a stream's compression from its first
bytes and :func:`check_declared` refuses a declared compression the data contradicts. Writers go
by the name: :func:`resolve_compression` turns a compression argument (possibly ``"auto"``) into
the one to write, refusing one the file's suffix contradicts. :func:`compressor` makes the
writer's compressor and :class:`InflatingSource` gives a reader the uncompressed bytes of a
compressed file.

Deflate runs through ISA-L (the ``isal`` package, a default dependency) when it is installed: its
streams are standard gzip/zlib, several times faster to write and about twice as fast to read as
the standard library's ``zlib``, which is the fallback (:func:`use_deflate` chooses;
``TFR_GEN_STDLIB_DEFLATE=1`` in the environment starts with the standard library).
"""

from __future__ import annotations

import os
import struct
import zlib
from types import ModuleType
from typing import Literal

from codegen.errors import DataError, TfrGenError
from codegen.runtime.io.files import Readable, open_input, read_head
from codegen.runtime.io.framing import masked_crc
from codegen.runtime.io.urls import StorageOptions

__all__ = [
    "Compression",
    "CompressionArg",
    "CompressedStreamError",
    "Deflate",
    "HEAD_SIZE",
    "InflatingSource",
    "check_declared",
    "compressor",
    "current_deflate",
    "detect_compression",
    "file_compression",
    "resolve_compression",
    "suffix_compression",
    "use_deflate",
]

Compression = Literal["gzip", "zlib"] | None
"""How the record stream is compressed: ``None`` (not at all), ``"gzip"`` or ``"zlib"``."""

CompressionArg = Compression | Literal["auto"]
"""``None``, ``"gzip"``, ``"zlib"``, or ``"auto"`` (readers: detected from the data; writers: by the
file name's suffix)."""

HEAD_SIZE = 12
"""How many first bytes of a stream :func:`detect_compression` looks at: one TFRecord header."""

Deflate = Literal["isal", "zlib"]
"""An implementation of deflate: ISA-L (``isal``) or the standard library's ``zlib``."""


def _load_isal() -> ModuleType | None:
    try:
        from isal import isal_zlib
    except ImportError:
        return None
    return isal_zlib


_ISAL = _load_isal()
_deflate: ModuleType = (
    zlib if _ISAL is None or os.environ.get("TFR_GEN_STDLIB_DEFLATE") == "1" else _ISAL
)


def use_deflate(name: Deflate | None = None) -> Deflate:
    """The deflate implementation compressed streams go through; with ``name``, switch to it
    first (``"isal"`` when ISA-L is not installed raises :class:`ImportError`)."""
    global _deflate
    if name == "isal":
        if _ISAL is None:
            raise ImportError("ISA-L deflate needs the isal package: pip install isal")
        _deflate = _ISAL
    elif name == "zlib":
        _deflate = zlib
    elif name is not None:
        raise TfrGenError(f"unknown deflate implementation {name!r}; expected 'isal' or 'zlib'")
    return "zlib" if _deflate is zlib else "isal"


def current_deflate() -> ModuleType:
    """The module of the deflate implementation :func:`use_deflate` names (``zlib`` or ISA-L's
    ``isal_zlib``, which has the same interface)."""
    return _deflate


_GZIP_MAGIC = b"\x1f\x8b"
_WBITS: dict[str, int] = {"gzip": 16 + 15, "zlib": 15}  # zlib window bits (+16: gzip container)
_COMPRESSED_CHUNK = 1 << 18  # compressed bytes fed to the decompressor at a time
_MAX_OUTPUT = 1 << 20  # most uncompressed bytes one call of the decompressor makes


_SUFFIXES: dict[str, Compression] = {".gz": "gzip", ".zlib": "zlib", ".zz": "zlib"}


def suffix_compression(path: str | os.PathLike[str] | None) -> tuple[str, Compression] | None:
    """The compression suffix of ``path`` (case-insensitively: ``.gz`` is gzip, ``.zlib`` and
    ``.zz`` are zlib) and the compression it names, or ``None`` for any other name or no path."""
    if path is None:
        return None
    name = os.fspath(path).lower()
    for suffix, compression in _SUFFIXES.items():
        if name.endswith(suffix):
            return suffix, compression
    return None


def _check_arg(compression: object) -> None:
    if compression is not None and compression not in ("gzip", "zlib", "auto"):
        raise TfrGenError(
            f"unknown TFRecord compression {compression!r}; "
            "expected one of None, 'gzip', 'zlib', 'auto'"
        )


def resolve_compression(
    path: str | os.PathLike[str] | None, compression: CompressionArg
) -> Compression:
    """The compression to write ``path`` with.

    ``"auto"`` picks by the name's suffix (see :func:`suffix_compression`); any other name, and no
    path (a file object), is uncompressed. An explicit ``None``, ``"gzip"`` or ``"zlib"`` is
    returned as is, unless the name's suffix says otherwise (``compression=None`` for
    ``x.tfrecord.gz``): :class:`~codegen.errors.TfrGenError` (a ``ValueError``) then, as for an
    unknown name. A name without a compression suffix takes any compression.
    """
    _check_arg(compression)
    named = suffix_compression(path)
    if compression == "auto":
        return None if named is None else named[1]
    if path is not None and named is not None and named[1] != compression:
        suffix, implied = named
        raise TfrGenError(
            f"{os.fspath(path)}: the name ends in {suffix!r}, which says {implied}-compressed, but"
            f" compression={compression!r}; pass compression={implied!r} or 'auto',"
            " or name the file without that suffix"
        )
    return compression


def _plain_header(head: bytes) -> bool:
    """Whether ``head`` starts with an uncompressed TFRecord header whose length CRC holds."""
    if len(head) < HEAD_SIZE:
        return False
    (crc,) = struct.unpack_from("<I", head, 8)
    return bool(masked_crc(head[:8]) == crc)


def _zlib_header(head: bytes) -> bool:
    """Whether ``head`` starts as a zlib stream does (RFC 1950: deflate with a window of at most
    32 KiB, no preset dictionary, header check bits) and the deflate data after it inflates."""
    if len(head) < 2:
        return False
    cmf, flg = head[0], head[1]
    if cmf & 0x0F != 8 or cmf >> 4 > 7 or flg & 0x20 or (cmf << 8 | flg) % 31:
        return False
    try:
        zlib.decompressobj().decompress(head)
    except zlib.error:
        return False
    return True


def detect_compression(head: bytes) -> Compression:
    """The compression of a stream whose first bytes are ``head`` (:data:`HEAD_SIZE` of them, or
    the whole stream if shorter).

    ``"gzip"`` if it starts with the gzip magic ``1f 8b``; ``"zlib"`` if it starts with a zlib
    header, unless it is also a valid uncompressed TFRecord header (the length CRC holds: a
    record's length whose first two bytes happen to form a zlib header); else ``None``.
    """
    if head[:2] == _GZIP_MAGIC:
        return "gzip"
    if _zlib_header(head) and not _plain_header(head):
        return "zlib"
    return None


def file_compression(
    path: str, declared: CompressionArg = "auto", *, storage_options: StorageOptions | None = None
) -> Compression:
    """The compression to read the file at ``path`` (a path or URL) with (see
    :func:`check_declared`)."""
    with open_input(path, buffered=True, storage_options=storage_options) as file:
        return check_declared(declared, read_head(file, HEAD_SIZE), path)


def _describe(compression: Compression) -> str:
    return "uncompressed" if compression is None else f"{compression}-compressed"


def check_declared(declared: CompressionArg, head: bytes, where: str) -> Compression:
    """The compression to read a stream starting with ``head`` with: the detected one for
    ``"auto"``, else ``declared``, which the data must not contradict.

    A contradiction raises :class:`~codegen.errors.DataError` naming ``where`` (the file) and what
    to pass instead ("this file is gzip-compressed; pass compression='gzip' or 'auto'"), rather
    than failing later with a CRC or inflate error. An empty stream has any compression, and a
    declared compression is kept for a stream that starts neither with its header nor with a valid
    uncompressed TFRecord header (the reader reports it as a corrupt compressed stream).
    """
    _check_arg(declared)
    detected = detect_compression(head)
    if declared == "auto" or declared == detected:
        return detected
    if not head or (detected is None and not _plain_header(head)):
        return declared  # neither plain framing nor a header: a corrupt stream, reported as such
    raise DataError(
        f"this file is {_describe(detected)}; pass compression={detected!r} or 'auto'"
        f" (it was read as {_describe(declared)})",
        path=where,
        index=0,
        offset=0,
    )


def compressor(compression: Literal["gzip", "zlib"]) -> zlib._Compress:
    """A compressor of a record stream in the format TensorFlow reads for ``compression``
    (through the deflate of :func:`use_deflate`, at its default level)."""
    compress: zlib._Compress = _deflate.compressobj(
        _deflate.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, _WBITS[compression]
    )
    return compress


class CompressedStreamError(Exception):
    """The compressed stream is corrupt or truncated (a reader reports it as a DataError)."""


class InflatingSource:
    """The uncompressed bytes of a zlib stream or of one or more concatenated gzip members.

    Compressed bytes go to the decompressor in pieces aligned on multiples of 256 KiB from the
    start of each gzip member, and each call makes at most 1 MiB: how many bytes come out before
    an error depends only on the stream, not on how the file or the caller chunk their reads (so a
    reader starting at a member boundary, ``after_member``, yields and fails as one that read the
    members before it).
    """

    def __init__(
        self, file: Readable, compression: Literal["gzip", "zlib"], *, after_member: bool = False
    ) -> None:
        self._file = file
        self._name = compression
        self._wbits = _WBITS[compression]
        self._deflate = _deflate
        self._inflater: zlib._Decompress = self._deflate.decompressobj(self._wbits)
        self._input = b""  # compressed bytes read, not yet given to the decompressor
        self._tail = b""  # bytes given to the decompressor that it has not consumed yet
        self._fed = 0  # compressed bytes of the current member given to the decompressor
        self._between = after_member  # at the end of a member, before the next one (if any)
        self._started = after_member
        self._out = memoryview(b"")

    def readinto(self, buffer: memoryview) -> int:
        """Fills the start of ``buffer`` with more bytes (at least one until the stream ends) and
        returns how many; 0 at the end. :class:`CompressedStreamError` for a corrupt or truncated
        stream."""
        while not self._out:
            out = self.inflate()
            if out is None:
                return 0
            self._out = memoryview(out)
        count = min(len(buffer), len(self._out))
        buffer[:count] = self._out[:count]
        self._out = self._out[count:]
        return count

    def _piece(self, size: int) -> bytes:
        """The next ``size`` compressed bytes (fewer only at the end of the file)."""
        data, self._input = self._input, b""
        if len(data) >= size:
            self._input = data[size:]
            return data[:size]
        parts = [data]
        got = len(data)
        while got < size:
            more = self._file.read(size - got)
            if not more:
                break
            parts.append(more)
            got += len(more)
        return b"".join(parts)

    def inflate(self) -> bytes | None:
        """The output of one call of the decompressor (possibly empty; at most 1 MiB), ``None`` at
        the end: the pieces :meth:`readinto` hands out, for a caller that takes them whole."""
        if self._between or self._inflater.eof:
            if not self._between:  # bytes after the member's end start what follows it
                self._input = self._inflater.unused_data + self._input
            self._between = True
            piece = self._piece(_COMPRESSED_CHUNK)
            if not piece:
                return None
            if self._name != "gzip":
                raise CompressedStreamError("corrupt zlib stream: data after its end")
            if not piece.startswith(_GZIP_MAGIC[: len(piece)]):
                raise CompressedStreamError(
                    "corrupt gzip stream: data after the end of a member is not another member"
                )
            self._inflater = self._deflate.decompressobj(self._wbits)  # the next gzip member
            self._between = False
            self._tail, self._fed = piece, len(piece)
        elif not self._tail:
            self._tail = self._piece(_COMPRESSED_CHUNK - self._fed % _COMPRESSED_CHUNK)
            if not self._tail:
                if not self._started:
                    return None  # an empty file holds no records
                raise CompressedStreamError(
                    f"truncated {self._name} stream: the file ends inside compressed data"
                )
            self._fed += len(self._tail)
        self._started = True
        try:
            out: bytes = self._inflater.decompress(self._tail, _MAX_OUTPUT)
        except (zlib.error, self._deflate.error) as exc:
            raise CompressedStreamError(f"corrupt {self._name} stream: {exc}") from None
        self._tail = b"" if self._inflater.eof else self._inflater.unconsumed_tail
        return out
