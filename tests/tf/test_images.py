"""Encoded images (``encoding: jpeg``, ``png``, ``image``) against TensorFlow: tfr-gen's pixels equal
``tf.io.decode_image``'s on the same bytes (PNG and JPEG exactly: the JPEG decoder is libjpeg-turbo with TensorFlow's
settings), images tfr-gen writes decode in TensorFlow, and ``tf_parse`` and the batch decoder agree."""

from __future__ import annotations

import io
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from PIL import Image

from codegen.errors import RecordError
from support.modules import generate_module

pytestmark = pytest.mark.tensorflow

SCHEMA = """\
version: 1
records:
  Photo:
    features:
      image: {key: image/encoded, dtype: uint8, shape: [null, null, 3], encoding: jpeg, quality: 90}
      gray: {dtype: uint8, shape: [null, null, 1], encoding: jpeg, optional: true}
      mask: {dtype: uint8, shape: [8, 8, 4], encoding: png, optional: true}
      any: {dtype: uint8, shape: [null, null, null], encoding: image}
      label: {dtype: int64}
"""


@pytest.fixture(scope="module")
def photos(tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    return generate_module(SCHEMA, "photos", tmp_path_factory.mktemp("photos"))


def _picture(h: int, w: int, seed: int) -> np.ndarray[Any, Any]:
    """A smooth picture with some noise (what JPEG is for)."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w]
    base = np.stack([x * 255 / w, y * 255 / h, (x + y) * 127 / (h + w)], -1)
    return np.clip(base + rng.normal(0, 12, (h, w, 3)), 0, 255).astype(np.uint8)


def _png(pixels: np.ndarray[Any, Any], mode: str) -> bytes:
    out = io.BytesIO()
    Image.fromarray(pixels, mode).save(out, "PNG")
    return out.getvalue()


def _example(tf: Any, **features: object) -> bytes:
    feature = {
        key: tf.train.Feature(int64_list=tf.train.Int64List(value=[value]))
        if isinstance(value, int)
        else tf.train.Feature(bytes_list=tf.train.BytesList(value=[value]))
        for key, value in features.items()
    }
    data: bytes = tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()
    return data


def test_jpeg_and_png_written_by_tensorflow_decode_as_tensorflow_decodes_them(
    tf: Any, photos: ModuleType
) -> None:
    for seed, (h, w) in enumerate(((256, 256), (33, 17), (1, 1))):
        picture = _picture(h, w, seed)
        jpeg = tf.io.encode_jpeg(picture, quality=90).numpy()
        gray_jpeg = tf.io.encode_jpeg(picture[..., :1], quality=75).numpy()
        rgba = np.concatenate([picture, picture[..., :1]], -1)
        png = _png(rgba, "RGBA")
        data = _example(tf, **{"image/encoded": jpeg, "gray": gray_jpeg, "any": png, "label": seed})
        record = photos.Photo.decode(data)
        np.testing.assert_array_equal(record.image, tf.io.decode_image(jpeg).numpy())
        np.testing.assert_array_equal(record.gray, tf.io.decode_image(gray_jpeg).numpy())
        np.testing.assert_array_equal(record.any, rgba)  # PNG: lossless, as stored (4 channels)
        np.testing.assert_array_equal(record.any, tf.io.decode_image(png).numpy())
        parsed = photos.Photo.tf_parse(tf.constant(data))
        np.testing.assert_array_equal(parsed["image"].numpy(), record.image)
        np.testing.assert_array_equal(parsed["any"].numpy(), record.any)


def test_a_declared_channel_count_converts_as_tensorflow_does(tf: Any, photos: ModuleType) -> None:
    picture = _picture(16, 24, 7)
    jpeg = tf.io.encode_jpeg(picture, quality=90).numpy()
    gray_png = _png(picture[..., 0], "L")
    data = _example(tf, **{"image/encoded": jpeg, "gray": jpeg, "any": gray_png, "label": 1})
    record = photos.Photo.decode(data)
    np.testing.assert_array_equal(record.gray, tf.io.decode_jpeg(jpeg, channels=1).numpy())
    assert record.any.shape == (16, 24, 1)
    np.testing.assert_array_equal(record.any, tf.io.decode_image(gray_png).numpy())
    grayscale_as_rgb = photos.Photo.decode(
        _example(
            tf,
            **{
                "image/encoded": tf.io.encode_jpeg(picture[..., :1]).numpy(),
                "any": gray_png,
                "label": 1,
            },
        )
    )
    assert grayscale_as_rgb.image.shape == (16, 24, 3)


def test_images_written_by_tfr_gen_decode_in_tensorflow(
    tf: Any, photos: ModuleType, tmp_path: Path
) -> None:
    rows = [
        photos.Photo(
            image=_picture(32, 48, i),
            gray=None if i else _picture(8, 8, 9)[..., :1],
            mask=np.full((8, 8, 4), i * 40, np.uint8) if i != 1 else None,
            any=_picture(5 + i, 7, i),
            label=i,
        )
        for i in range(3)
    ]
    photos.Photo.write_tfrecord(tmp_path / "photos.tfrecord", rows)
    spec = {
        "image/encoded": tf.io.FixedLenFeature((), tf.string),
        "any": tf.io.FixedLenFeature((), tf.string),
        "label": tf.io.FixedLenFeature((), tf.int64),
    }
    read = list(photos.Photo.read_tfrecord(tmp_path / "photos.tfrecord"))
    data = [r.encode() for r in rows]
    batch = photos.Photo.decode_batch(data)
    tensors = photos.Photo.tf_parse(tf.constant(data))
    for i, serialized in enumerate(tf.data.TFRecordDataset(str(tmp_path / "photos.tfrecord"))):
        parsed = tf.io.parse_single_example(serialized, spec)
        jpeg = parsed["image/encoded"].numpy()
        assert jpeg.startswith(b"\xff\xd8\xff")
        theirs = tf.io.decode_jpeg(jpeg).numpy()
        np.testing.assert_array_equal(read[i].image, theirs)
        assert (
            np.abs(theirs.astype(int) - rows[i].image.astype(int)).mean() < 8
        )  # lossy, quality 90
        np.testing.assert_array_equal(tf.io.decode_png(parsed["any"]).numpy(), rows[i].any)
        np.testing.assert_array_equal(batch.image[i], read[i].image)
        np.testing.assert_array_equal(tensors["image"][i].numpy(), read[i].image)
        np.testing.assert_array_equal(tensors["any"][i].numpy(), rows[i].any)
        assert bool(batch.mask.present[i]) == (rows[i].mask is not None)
        if rows[i].mask is not None:
            np.testing.assert_array_equal(batch.mask.values[i], rows[i].mask)
            np.testing.assert_array_equal(tensors["mask"][i][0].numpy(), rows[i].mask)


def test_a_higher_quality_writes_a_closer_jpeg(photos: ModuleType, tmp_path: Path) -> None:
    sharp = generate_module(SCHEMA.replace("quality: 90", "quality: 100"), "sharp_photos", tmp_path)
    picture = _picture(64, 64, 3)
    errors = []
    for module in (photos, sharp):
        row = module.Photo(image=picture, any=picture, label=0)
        back = module.Photo.decode(row.encode()).image
        errors.append(np.abs(back.astype(int) - picture.astype(int)).mean())
    assert errors[1] < errors[0]


def test_images_that_do_not_fit_the_declaration_are_refused(tf: Any, photos: ModuleType) -> None:
    picture = _picture(10, 10, 1)
    jpeg = tf.io.encode_jpeg(picture).numpy()
    png = _png(picture, "RGB")
    with pytest.raises(
        RecordError, match=r"Photo.mask \(key 'mask'\): the image of shape \[10, 10, 4\] does not"
    ):
        photos.Photo.decode(
            _example(tf, **{"image/encoded": jpeg, "mask": png, "any": png, "label": 1})
        )
    with pytest.raises(
        RecordError, match=r"Photo.image \(key 'image/encoded'\): expected a jpeg image, found png"
    ):
        photos.Photo.decode(_example(tf, **{"image/encoded": png, "any": png, "label": 1}))
    with pytest.raises(RecordError, match=r"Photo.any \(key 'any'\): expected a JPEG or PNG image"):
        photos.Photo.decode(
            _example(tf, **{"image/encoded": jpeg, "any": b"GIF89a...", "label": 1})
        )
    with pytest.raises(RecordError, match=r"Photo.mask: expected shape \(8, 8, 4\)"):
        photos.Photo(image=picture, mask=picture, any=picture, label=1)


def test_an_image_without_pixels_is_refused_when_the_record_is_made(photos: ModuleType) -> None:
    picture = _picture(4, 4, 2)
    for empty in (np.zeros((0, 5, 3), np.uint8), np.zeros((5, 0, 3), np.uint8)):
        shape = str(list(empty.shape)).replace("[", r"\[").replace("]", r"\]")
        with pytest.raises(
            RecordError,
            match=rf"Photo.image: an image of shape {shape} has no pixels; JPEG and PNG",
        ):
            photos.Photo(image=empty, any=picture, label=1)
    with pytest.raises(
        RecordError, match=r"Photo.any: an image of shape \[3, 3, 0\] has no pixels"
    ):
        photos.Photo(image=picture, any=np.zeros((3, 3, 0), np.uint8), label=1)


FIXED = """\
version: 1
records:
  Tile:
    features:
      rgb: {dtype: uint8, shape: [16, 24, 3], encoding: jpeg}
      gray: {dtype: uint8, shape: [16, 24, 1], encoding: image, optional: true}
"""


def test_a_batch_of_fixed_shape_images_decodes_as_tensorflow_decodes_each(
    tf: Any, tmp_path: Path
) -> None:
    tiles = generate_module(FIXED, "tiles", tmp_path).Tile
    data = []
    for i in range(9):
        picture = _picture(16, 24, 20 + i)
        # a gray JPEG in the RGB feature and a colour one in the gray feature convert
        rgb = tf.io.encode_jpeg(picture[..., :1] if i == 3 else picture, quality=85).numpy()
        gray = tf.io.encode_jpeg(picture if i % 2 else picture[..., :1]).numpy()
        features = {"rgb": rgb} if i == 5 else {"rgb": rgb, "gray": gray}
        data.append(_example(tf, **features))
    batch = tiles.decode_batch(data)
    for i, serialized in enumerate(data):
        parsed = tf.io.parse_single_example(
            serialized,
            {
                "rgb": tf.io.FixedLenFeature((), tf.string),
                "gray": tf.io.FixedLenFeature((), tf.string, default_value=""),
            },
        )
        np.testing.assert_array_equal(
            batch.rgb[i], tf.io.decode_jpeg(parsed["rgb"], channels=3).numpy()
        )
        assert bool(batch.gray.present[i]) == (i != 5)
        if i != 5:
            np.testing.assert_array_equal(
                batch.gray.values[i], tf.io.decode_jpeg(parsed["gray"], channels=1).numpy()
            )
        assert tiles.decode(serialized) == tiles.decode_batch([serialized]).records()[0]
    wrong = _example(tf, rgb=tf.io.encode_jpeg(_picture(16, 23, 1)).numpy())
    with pytest.raises(RecordError, match=r"the image of shape \[16, 23, 3\] does not fit"):
        tiles.decode_batch([data[0], wrong])
