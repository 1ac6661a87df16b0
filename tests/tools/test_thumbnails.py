"""Thumbnails of images: PNG files that TensorFlow decodes to the scaled-down pixels."""

from __future__ import annotations

import base64
from typing import Any

import numpy as np
import pytest

from codegen.generator.load import load_schema
from codegen.tools.thumbnails import SIDE, is_image, png, thumbnail
from support.paths import SCHEMAS


@pytest.mark.parametrize("shape", [(5, 7, 3), (4, 9, 1), (1, 1, 3)])
def test_png_decodes_to_the_pixels(tf: Any, shape: tuple[int, int, int]) -> None:
    pixels = np.random.default_rng(0).integers(0, 256, size=shape, dtype=np.uint8)
    decoded = tf.io.decode_png(png(pixels)).numpy()
    assert decoded.shape == shape
    assert np.array_equal(decoded, pixels)


def test_thumbnail_scales_down(tf: Any) -> None:
    image = np.random.default_rng(1).integers(0, 256, size=(300, 200, 3), dtype=np.uint8)
    url = thumbnail(image)
    assert url is not None and url.startswith("data:image/png;base64,")
    decoded = tf.io.decode_png(base64.b64decode(url.split(",", 1)[1])).numpy()
    assert np.array_equal(decoded, image[::4, ::4])
    assert max(decoded.shape[:2]) <= SIDE


@pytest.mark.parametrize(
    "value",
    [
        None,
        np.zeros((0, 4, 3), np.uint8),
        np.zeros((4, 4, 5), np.uint8),
        np.zeros((4, 4), np.uint8),
        np.zeros((4, 4, 3), np.float32),
    ],
)
def test_no_thumbnail_of_what_is_not_an_image(value: Any) -> None:
    assert thumbnail(value) is None


@pytest.mark.parametrize("channels", [2, 4])
def test_thumbnail_leaves_the_alpha_out(tf: Any, channels: int) -> None:
    image = np.random.default_rng(2).integers(0, 256, size=(6, 5, channels), dtype=np.uint8)
    url = thumbnail(image)
    assert url is not None
    decoded = tf.io.decode_png(base64.b64decode(url.split(",", 1)[1])).numpy()
    assert np.array_equal(decoded, image[..., : channels - 1])


def test_image_features_of_the_example_schemas() -> None:
    found = {}
    for name in ("raw_image", "photo", "jpeg_image", "image", "customer"):
        schema = load_schema(SCHEMAS / f"{name}.yaml")
        for record in schema.records:
            found[name] = [f.name for f in record.all_features if is_image(f)]
    assert found == {
        "raw_image": ["image"],
        "photo": ["image"],
        "jpeg_image": ["image"],
        "image": [],
        "customer": [],
    }
