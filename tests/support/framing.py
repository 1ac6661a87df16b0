"""TFRecord framing made independently of the runtime, and damaging framed files."""

from __future__ import annotations

import struct
from collections.abc import Sequence
from pathlib import Path

import crc32c

from codegen.runtime.io.compression import Compression

COMPRESSIONS: list[Compression] = [None, "gzip", "zlib"]
"""Every compression of a TFRecord stream."""
SOME_RECORDS = [b"", b"a", b"bc" * 100, bytes(range(256)) * 9, b"last"]
"""Records of several sizes, the empty one first."""


def masked_crc(data: bytes) -> int:
    """The masked CRC-32C of the TFRecord format."""
    c = crc32c.crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def frame_header(length: int) -> bytes:
    """The 12-byte header of a record of ``length`` bytes: the length and its masked CRC."""
    raw = struct.pack("<Q", length)
    return raw + struct.pack("<I", masked_crc(raw))


def frame(data: bytes) -> bytes:
    """One record framed: header, data and the data's masked CRC."""
    return frame_header(len(data)) + data + struct.pack("<I", masked_crc(data))


def frame_offsets(records: Sequence[bytes]) -> list[int]:
    """The byte offset of each record's header in an uncompressed TFRecord stream of ``records``."""
    offsets, position = [], 0
    for record in records:
        offsets.append(position)
        position += len(record) + 16
    return offsets


def flip_byte(path: Path, offset: int) -> None:
    """Invert the bits of one byte of a file."""
    data = bytearray(path.read_bytes())
    data[offset] ^= 0xFF
    path.write_bytes(bytes(data))
