"""Small PNG pictures of image features, as ``data:`` URLs an HTML page shows without a network.

An image feature is a raw ``uint8`` tensor shaped ``(height, width, 3)`` (RGB) or
``(height, width, 1)`` (grey), of fixed or variable height and width (``encoding: raw``), or an
encoded image (``encoding: jpeg``, ``png`` or ``image``, of any channels: a picture of one with an
alpha channel leaves the alpha out). A picture is scaled down by taking every ``n``-th pixel so that
neither side exceeds :data:`SIDE`.
"""

from __future__ import annotations

import base64
import struct
import zlib
from typing import Any

import numpy as np
from numpy.typing import NDArray

from codegen.dtypes import UINT8
from codegen.generator.ir import FeatureIR

__all__ = ["SIDE", "is_image", "png", "thumbnail"]

SIDE = 96
"""The longest side of a thumbnail, in pixels."""


def is_image(feature: FeatureIR) -> bool:
    """Whether ``feature`` holds images (see the module's description); a raw one of unknown
    channels (an inferred schema's) may hold images, and :func:`thumbnail` tells each value."""
    shape = feature.shape
    if feature.dtype is not UINT8 or len(shape) != 3:
        return False
    return feature.kind.name == "encoded_image" or (feature.raw and shape[2] in (None, 1, 3))


def png(pixels: NDArray[np.uint8]) -> bytes:
    """A PNG file of ``uint8`` pixels shaped ``(height, width, 1 or 3)``."""
    height, width, channels = pixels.shape
    rows = np.zeros((height, 1 + width * channels), dtype=np.uint8)  # filter byte 0 per row
    rows[:, 1:] = pixels.reshape(height, width * channels)

    def chunk(kind: bytes, data: bytes) -> bytes:
        crc = struct.pack(">I", zlib.crc32(kind + data))
        return struct.pack(">I", len(data)) + kind + data + crc

    color = 2 if channels == 3 else 0
    header = struct.pack(">IIBBBBB", width, height, 8, color, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows.tobytes(), 6))
        + chunk(b"IEND", b"")
    )


def thumbnail(value: Any) -> str | None:
    """A ``data:image/png`` URL of one decoded image (an array shaped ``(height, width, 1 to 4)``:
    grey, grey and alpha, RGB, RGBA; the alpha is left out), or ``None`` for anything else (an empty
    image, an absent optional one)."""
    if not isinstance(value, np.ndarray) or value.dtype != np.uint8 or value.ndim != 3:
        return None
    height, width, channels = value.shape
    if channels not in (1, 2, 3, 4) or not height or not width:
        return None
    if channels in (2, 4):
        value = value[..., : channels - 1]
    step = max(1, -(-max(height, width) // SIDE))
    small = np.ascontiguousarray(value[::step, ::step])
    return "data:image/png;base64," + base64.b64encode(png(small)).decode("ascii")
