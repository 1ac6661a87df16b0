"""Encoded images (``encoding: jpeg``, ``png`` or ``image``): a uint8 ``[height, width, channels]`` array stored as
one JPEG or PNG bytes value, as ImageNet, the Object Detection API and TensorFlow Datasets write ``image/encoded``.

Decoders, chosen by measurement on 256x256x3 JPEG images of quality 90 (``docs/schema.md``): JPEG with simplejpeg
(libjpeg-turbo with its fast integer DCT and without fast upsampling, which are the settings of TensorFlow's
``tf.io.decode_jpeg`` and ``decode_image``: the pixels are equal to TensorFlow's, and it decodes faster than Pillow,
releasing the GIL so that batches decode in parallel threads), PNG with Pillow (lossless: equal to TensorFlow's).
Writing: JPEG with simplejpeg at the feature's ``quality``, PNG with Pillow. Both come with the ``images`` extra.

A declared shape is checked on decode; a declared channel count converts as ``tf.io.decode_image(channels=C)`` does
(gray <-> RGB, dropping or adding alpha), and ``null`` keeps the image's own (1 gray, 2 gray + alpha, 3 RGB, 4 RGBA).
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any, TypeVar, cast

import numpy as np
import numpy.typing as npt

from codegen.dtypes import Kind
from codegen.errors import MissingExtraError, RecordError, TfrGenError
from codegen.kinds import IMAGE_ENCODINGS
from codegen.runtime.codec.features import (
    NO_DEFAULT,
    ArrayRules,
    Codec,
    Features,
    _naming,
    check_dims,
)
from codegen.runtime.codec.wire import decode_bytes_list

__all__ = [
    "DECODE_THREADS",
    "SIGNATURES",
    "EncodedImage",
    "decode_image",
    "decode_many",
    "encode_image",
    "image_format",
    "image_header",
]

Image = npt.NDArray[np.uint8]

_JPEG_MAGIC = b"\xff\xd8\xff"
_PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
SIGNATURES = {"jpeg": _JPEG_MAGIC, "png": _PNG_MAGIC}
"""The bytes each image format starts with (see :func:`image_format`)."""
_PIL_MODES = {1: "L", 2: "LA", 3: "RGB", 4: "RGBA"}


def image_format(data: bytes) -> str | None:
    """``jpeg`` or ``png`` by the magic bytes at the start of ``data``, else ``None``."""
    if data.startswith(_JPEG_MAGIC):
        return "jpeg"
    if data.startswith(_PNG_MAGIC):
        return "png"
    return None


def _simplejpeg() -> Any:
    try:
        import simplejpeg
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise MissingExtraError(
            "JPEG images need simplejpeg: pip install 'tfr-gen[images]'"
        ) from exc
    return simplejpeg


def _pil() -> Any:
    try:
        from PIL import Image as PILImage
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise MissingExtraError("PNG images need Pillow: pip install 'tfr-gen[images]'") from exc
    return PILImage


def decode_image(data: bytes, channels: int | None = None) -> Image:
    """The pixels of the JPEG or PNG ``data`` as ``[height, width, channels]`` uint8 (``channels``: convert to that
    many, ``None``: as stored); :class:`RecordError` when the bytes are neither or do not decode."""
    kind = image_format(data)
    try:
        if kind == "jpeg":
            simplejpeg = _simplejpeg()
            space = "GRAY" if channels == 1 else "RGB"
            if channels is None and simplejpeg.decode_jpeg_header(data)[2] == "Gray":
                space = "GRAY"
            pixels = simplejpeg.decode_jpeg(
                data, colorspace=space, fastdct=True, fastupsample=False
            )
            if channels in (2, 4):
                pixels = _convert_array(pixels, channels)
            return cast("Image", pixels)
        if kind == "png":
            with _pil().open(io.BytesIO(data)) as image:
                image.load()
                return _png_pixels(image, channels)
    except (ValueError, OSError) as exc:
        raise RecordError(f"the {kind} image does not decode ({exc})") from None
    raise RecordError(f"expected a JPEG or PNG image, found bytes starting {data[:8]!r}")


def image_header(data: bytes) -> tuple[str, int, int]:
    """The format (``jpeg`` or ``png``), height and width of the image ``data``, from its header (the pixels are not
    decoded); :class:`RecordError` when the bytes are neither or the header does not read."""
    kind = image_format(data)
    try:
        if kind == "jpeg":
            height, width, *_ = _simplejpeg().decode_jpeg_header(data)
            return kind, int(height), int(width)
        if kind == "png":
            with _pil().open(io.BytesIO(data)) as image:
                width, height = image.size
            return kind, int(height), int(width)
    except (ValueError, OSError) as exc:
        raise RecordError(f"the header of the {kind} image does not read ({exc})") from None
    raise RecordError(f"expected a JPEG or PNG image, found bytes starting {data[:8]!r}")


def _png_pixels(image: Any, channels: int | None) -> Image:
    mode = image.mode
    if channels is None:
        if mode in ("1", "L", "I", "I;16"):
            channels = 1
        elif mode == "LA":
            channels = 2
        elif mode == "P":
            channels = 4 if "transparency" in image.info else 3
        else:
            channels = 4 if "A" in mode else 3
    if mode in ("I", "I;16"):  # 16-bit gray: TensorFlow's uint8 decode keeps the high byte
        wide = np.asarray(image, np.uint32) >> 8
        return _convert_array(wide.astype(np.uint8)[..., None], channels)
    if image.mode != _PIL_MODES[channels]:
        image = image.convert(_PIL_MODES[channels])
    pixels = np.asarray(image, np.uint8)
    return pixels.reshape(*pixels.shape[:2], channels)


def _convert_array(pixels: Image, channels: int) -> Image:
    """``pixels`` ``[h, w, c]`` with ``channels`` channels, as ``tf.image`` converts."""
    have = pixels.shape[2]
    if have == channels:
        return pixels
    mode = _PIL_MODES[have]
    converted = (
        _pil()
        .fromarray(pixels[..., 0] if have == 1 else pixels, mode)
        .convert(_PIL_MODES[channels])
    )
    out = np.asarray(converted, np.uint8)
    return out.reshape(*out.shape[:2], channels)


def encode_image(pixels: Image, encoding: str, quality: int) -> bytes:
    """``pixels`` ``[h, w, c]`` as JPEG (``encoding`` ``jpeg``, at ``quality``) or PNG (``png`` or ``image``)."""
    channels = pixels.shape[2]
    if encoding == "jpeg":
        if channels not in (1, 3):
            raise RecordError(f"JPEG holds 1 or 3 channels, not {channels}; use encoding png")
        data: bytes = _simplejpeg().encode_jpeg(
            np.ascontiguousarray(pixels),
            quality=quality,
            colorspace="GRAY" if channels == 1 else "RGB",
        )
        return data
    image = _pil().fromarray(pixels[..., 0] if channels == 1 else pixels, _PIL_MODES[channels])
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


T = TypeVar("T")
U = TypeVar("U")

DECODE_THREADS = min(8, os.cpu_count() or 1)
"""How many threads decode the images of a batch."""


def decode_many(items: Sequence[T], decode: Callable[[T], U], threads: int) -> list[U]:
    """``decode`` of every item, on up to ``threads`` threads (the decoders release the GIL)."""
    if threads <= 1 or len(items) < 2:
        return [decode(item) for item in items]
    with ThreadPoolExecutor(min(threads, len(items))) as pool:
        return list(pool.map(decode, items))


class EncodedImage(Codec[Image]):
    """A uint8 array ``[height, width, channels]`` stored as one JPEG or PNG bytes value.

    ``encoding`` is ``jpeg`` (written as JPEG at ``quality``, read as JPEG), ``png`` (PNG both ways) or ``image``
    (reads either, writes PNG). Values are checked against the declared shape on both ways; an optional feature
    decodes to ``None`` when absent; there are no defaults.
    """

    __slots__ = ("encoding", "quality", "_rules", "_channels")
    _kinds = (Kind.INT,)
    _scalar = False
    _encoding = "image"
    _takes_default = False

    def __init__(
        self,
        record: str,
        name: str,
        key: str,
        dtype: Any,
        shape: tuple[int | None, ...],
        *,
        default: object = NO_DEFAULT,
        optional: bool = False,
        encoding: str = "image",
        quality: int = 95,
    ) -> None:
        if encoding not in IMAGE_ENCODINGS:
            raise TfrGenError(f"{record}.{name}: unknown image encoding {encoding!r}")
        if not 1 <= quality <= 100:
            raise TfrGenError(f"{record}.{name}: quality must be 1 to 100, got {quality}")
        self.encoding = encoding
        self.quality = quality
        super().__init__(record, name, key, dtype, shape, default=default, optional=optional)
        self._info = replace(self._info, encoding=encoding, quality=quality)

    def _check_shape(self) -> None:
        shape = self.shape
        if self.dtype.name != "uint8":
            raise TfrGenError(f"{self._where}: an encoded image holds uint8, not {self.dtype.name}")
        if len(shape) != 3 or shape[2] not in (None, 1, 2, 3, 4):
            raise TfrGenError(
                f"{self._where}: an encoded image has shape [height, width, channels] with 1 to 4"
                f" channels, got {shape}"
            )
        check_dims(self._where, shape, -1, "")

    def _setup(self) -> None:
        self._rules = ArrayRules(self.dtype, self.shape)
        self._channels = self.shape[2]

    def coerce(self, value: object) -> Image:
        pixels = cast("Image", self._rules.coerce(value, self._where))
        if not pixels.size:
            raise RecordError(
                f"{self._where}: an image of shape {list(pixels.shape)} has no pixels; JPEG and PNG"
                " hold at least one pixel of at least one channel"
            )
        return pixels

    def entry(self, value: Image | None) -> bytes:
        if value is None and self.optional:
            return b""
        pixels = self.coerce(value)
        try:
            data = encode_image(pixels, self.encoding, self.quality)
        except RecordError as exc:
            raise _naming(exc, self._where) from None
        return self._head(len(data)) + data

    def decode(self, features: Features) -> Image:
        value = self.decode_optional(features)
        if value is None:
            raise self._missing()
        return value

    def decode_optional(self, features: Features) -> Image | None:
        blob = self.blob(features)
        if blob is None:
            if not self.optional:
                raise self._missing()
            return None
        return self.pixels(blob)

    def blob(self, features: Features) -> bytes | None:
        """The encoded image of a parsed Example (``None`` when absent)."""
        item = features.get(self._key)
        if item is None or not item[0]:
            return None
        if item[0] != self._kind:
            raise self._kind_error(item[0])
        values = decode_bytes_list(item[1])
        if not values and self.optional:
            return None
        if len(values) != 1:
            raise RecordError(
                f"{self._where_key}: expected 1 bytes_list value, found {len(values)}"
            )
        return values[0]

    def pixels(self, blob: bytes) -> Image:
        """The checked pixels of one encoded image of this feature."""
        kind = image_format(blob)
        if self.encoding != "image" and kind is not None and kind != self.encoding:
            raise RecordError(f"{self._where_key}: expected a {self.encoding} image, found {kind}")
        try:
            pixels = decode_image(blob, self._channels)
        except RecordError as exc:
            raise _naming(exc, self._where_key) from None
        if any(d is not None and d != g for d, g in zip(self.shape, pixels.shape, strict=True)):
            raise RecordError(
                f"{self._where_key}: the image of shape {list(pixels.shape)} does not fit the declared"
                f" shape {self.shape}"
            )
        return pixels

    def check_header(self, blob: bytes) -> None:
        """:class:`RecordError` unless ``blob`` is an image of this feature's encoding whose height and width fit
        the declared shape, by its header (its pixels are not decoded: see :meth:`pixels`)."""
        try:
            kind, height, width = image_header(blob)
        except RecordError as exc:
            raise _naming(exc, self._where_key) from None
        if self.encoding != "image" and kind != self.encoding:
            raise RecordError(f"{self._where_key}: expected a {self.encoding} image, found {kind}")
        if any(
            d is not None and d != g for d, g in zip(self.shape[:2], (height, width), strict=True)
        ):
            raise RecordError(
                f"{self._where_key}: the image of height {height} and width {width} does not fit the"
                f" declared shape {self.shape}"
            )

    def pixels_into(self, blob: bytes, out: Image) -> None:
        """The checked pixels of one encoded image, written into ``out`` (of the declared, fixed
        shape). A JPEG of that shape whose colour space needs no conversion is decoded straight
        into ``out``; anything else goes through :meth:`pixels` (same checks and errors)."""
        height, width, channels = out.shape
        if image_format(blob) == "jpeg" and self.encoding != "png" and channels in (1, 3):
            simplejpeg = _simplejpeg()
            try:
                header = simplejpeg.decode_jpeg_header(blob)
            except ValueError:
                header = None
            if header is not None and header[:2] == (height, width):
                try:
                    simplejpeg.decode_jpeg(
                        blob,
                        colorspace="GRAY" if channels == 1 else "RGB",
                        fastdct=True,
                        fastupsample=False,
                        buffer=out,
                    )
                    return
                except ValueError:
                    pass  # decoded again below, for the error it gives
        out[...] = self.pixels(blob)

    def _missing(self) -> RecordError:
        return RecordError(
            f"{self._where_key}: required feature is missing (expected bytes_list with 1 encoded"
            " image)"
        )
