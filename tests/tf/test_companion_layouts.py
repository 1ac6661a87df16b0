"""Declared companion layouts (``shape_from``, ``row_lengths_from``) against TensorFlow.

The image tutorials (``001``, ``002``) write ``label``, ``shape`` (the raw bytes of an int32 array) and ``image`` (raw
uint8 bytes) with TensorFlow; tfr-gen reads those files as typed arrays, and what it writes back reads with the
tutorials' own reader code. The other layouts (one int64 scalar per null dimension, TFDS's ragged key names) are
written by TensorFlow and read by tfr-gen, and the other way round, and ``tf_parse`` agrees with both.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from codegen.errors import DataError, RecordError
from support.modules import generate_module

pytestmark = pytest.mark.tensorflow

TUTORIALS = """\
version: 1
records:
  Tutorial001:
    features:
      label: {dtype: bytes}
      image:
        {dtype: uint8, shape: [null, null, 3], encoding: raw, shape_from: {key: shape, dtype: int32, encoding: raw}}
  Tutorial002:
    features:
      label: {dtype: int64}
      image:
        dtype: uint8
        shape: [null, null, null]
        encoding: raw
        shape_from: {key: shape, dtype: int32, encoding: raw}
"""

LAYOUTS = """\
version: 1
records:
  Layouts:
    features:
      pixels:
        {key: image/raw, dtype: uint8, shape: [null, null, 3], encoding: raw, shape_from: [image/height, image/width]}
      depth:
        {dtype: float32, shape: [2, null], encoding: raw, shape_from: {key: depth/dims, dtype: int64}, optional: true}
      tokens:
        key: tokens/ragged_flat_values
        dtype: int64
        shape: [null, null]
        row_lengths_from: [tokens/ragged_row_lengths_0]
"""


@pytest.fixture(scope="module")
def tutorials(tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    return generate_module(TUTORIALS, "tutorial_layouts", tmp_path_factory.mktemp("tutorials"))


@pytest.fixture(scope="module")
def layouts(tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    return generate_module(LAYOUTS, "declared_layouts", tmp_path_factory.mktemp("layouts"))


def _images() -> list[np.ndarray[Any, Any]]:
    rng = np.random.default_rng(18)
    return [rng.integers(0, 256, (h, w, 3), dtype=np.uint8) for h, w in ((4, 6), (7, 3), (1, 1))]


def _get_image_binary(image: np.ndarray[Any, Any]) -> tuple[bytes, bytes]:
    """The tutorials' ``get_image_binary``, from the array Pillow gives."""
    image = np.asarray(image, np.uint8)
    shape = np.array(image.shape, np.int32)
    return shape.tobytes(), image.tobytes()  # convert image to raw data bytes in the array.


def _write_001(tf: Any, path: Path, samples: list[tuple[bytes, bytes, bytes]]) -> None:
    """Tutorial 001's ``write_to_tfrecord`` (``tf.io`` for ``tf.python_io``), one record per sample."""
    with tf.io.TFRecordWriter(str(path)) as writer:
        for label, shape, binary_image in samples:
            example = tf.train.Example(
                features=tf.train.Features(
                    feature={
                        "label": tf.train.Feature(bytes_list=tf.train.BytesList(value=[label])),
                        "shape": tf.train.Feature(bytes_list=tf.train.BytesList(value=[shape])),
                        "image": tf.train.Feature(
                            bytes_list=tf.train.BytesList(value=[binary_image])
                        ),
                    }
                )
            )
            writer.write(example.SerializeToString())


def _write_002(tf: Any, path: Path, samples: list[tuple[int, bytes, bytes]]) -> None:
    """Tutorial 002's ``write_to_tfrecord`` with its ``_int64_feature`` and ``_bytes_feature``."""

    def _int64_feature(value: int) -> Any:
        return tf.train.Feature(int64_list=tf.train.Int64List(value=[value]))

    def _bytes_feature(value: bytes) -> Any:
        return tf.train.Feature(bytes_list=tf.train.BytesList(value=[value]))

    with tf.io.TFRecordWriter(str(path)) as writer:
        for label, shape, binary_image in samples:
            example = tf.train.Example(
                features=tf.train.Features(
                    feature={
                        "label": _int64_feature(label),
                        "shape": _bytes_feature(shape),
                        "image": _bytes_feature(binary_image),
                    }
                )
            )
            writer.write(example.SerializeToString())


def _read_from_tfrecord(tf: Any, path: Path, label_dtype: Any) -> list[tuple[Any, Any, Any]]:
    """The tutorials' ``read_from_tfrecord`` (``tf.data`` for the queue reader): label, shape, image."""
    out = []
    for tfrecord_serialized in tf.data.TFRecordDataset(str(path)):
        tfrecord_features = tf.io.parse_single_example(
            tfrecord_serialized,
            features={
                "label": tf.io.FixedLenFeature([], label_dtype),
                "shape": tf.io.FixedLenFeature([], tf.string),
                "image": tf.io.FixedLenFeature([], tf.string),
            },
        )
        image = tf.io.decode_raw(tfrecord_features["image"], tf.uint8)
        shape = tf.io.decode_raw(tfrecord_features["shape"], tf.int32)
        image = tf.reshape(image, shape)
        out.append((tfrecord_features["label"].numpy(), shape.numpy(), image.numpy()))
    return out


def test_tutorial_001_files_read_as_typed_arrays_and_write_back_for_its_reader(
    tf: Any, tutorials: ModuleType, tmp_path: Path
) -> None:
    images = _images()
    samples = [(f"label {i}".encode(), *_get_image_binary(im)) for i, im in enumerate(images)]
    _write_001(tf, tmp_path / "001.tfrecord", samples)
    records = list(tutorials.Tutorial001.read_tfrecord(tmp_path / "001.tfrecord"))
    assert [r.label for r in records] == [s[0] for s in samples]
    for record, image in zip(records, images, strict=True):
        assert record.image.dtype == np.uint8 and record.image.shape == image.shape
        np.testing.assert_array_equal(record.image, image)
    tutorials.Tutorial001.write_tfrecord(tmp_path / "ours.tfrecord", records)
    read = _read_from_tfrecord(tf, tmp_path / "ours.tfrecord", tf.string)
    for (label, shape, image), want in zip(read, samples, strict=True):
        assert label == want[0] and shape.tobytes() == want[1] and image.tobytes() == want[2]
    data = [r.encode() for r in records]
    batch = tutorials.Tutorial001.decode_batch(data)
    parsed = tutorials.Tutorial001.tf_parse(tf.constant(data))
    for i, image in enumerate(images):
        np.testing.assert_array_equal(batch.image[i], image)
        np.testing.assert_array_equal(parsed["image"][i].numpy(), image)
        np.testing.assert_array_equal(tutorials.Tutorial001.tf_parse(data[i])["image"], image)


def test_tutorial_002_files_read_with_any_rank_and_write_back_for_its_reader(
    tf: Any, tutorials: ModuleType, tmp_path: Path
) -> None:
    images = [im[:, :, :k] for k, im in zip((3, 1, 3), _images(), strict=True)]
    samples = [(i, *_get_image_binary(im)) for i, im in enumerate(images)]
    _write_002(tf, tmp_path / "002.tfrecord", samples)
    records = list(tutorials.Tutorial002.read_tfrecord(tmp_path / "002.tfrecord"))
    for record, image, sample in zip(records, images, samples, strict=True):
        assert record.label == sample[0]
        np.testing.assert_array_equal(record.image, image)
    tutorials.Tutorial002.write_tfrecord(tmp_path / "ours.tfrecord", records)
    read = _read_from_tfrecord(tf, tmp_path / "ours.tfrecord", tf.int64)
    for (label, _, image), want in zip(read, samples, strict=True):
        assert label == want[0] and image.tobytes() == want[2]


def test_a_stored_shape_that_does_not_fit_is_refused_naming_the_companion(
    tf: Any, tutorials: ModuleType, tmp_path: Path
) -> None:
    good = tutorials.Tutorial001(label=b"x", image=np.zeros((2, 2, 3), np.uint8)).encode()
    bad = good.replace(
        np.array([2, 2, 3], np.int32).tobytes(), np.array([2, 2, 1], np.int32).tobytes()
    )
    with pytest.raises(RecordError, match=r"the shape \[2, 2, 1\] in 'shape' does not fit"):
        tutorials.Tutorial001.decode(bad)
    _write_001(tf, tmp_path / "short.tfrecord", [(b"x", b"\x02\x00\x00\x00", bytes(12))])
    with pytest.raises(DataError, match=r"expected bytes_list with 1 value of 12 bytes"):
        list(tutorials.Tutorial001.read_tfrecord(tmp_path / "short.tfrecord"))


def _tensorflow_layouts(tf: Any, pixels: Any, depth: Any, tokens: list[list[int]]) -> bytes:
    feature = {
        "image/raw": tf.train.Feature(bytes_list=tf.train.BytesList(value=[pixels.tobytes()])),
        "image/height": tf.train.Feature(int64_list=tf.train.Int64List(value=[pixels.shape[0]])),
        "image/width": tf.train.Feature(int64_list=tf.train.Int64List(value=[pixels.shape[1]])),
        "tokens/ragged_flat_values": tf.train.Feature(
            int64_list=tf.train.Int64List(value=[t for row in tokens for t in row])
        ),
        "tokens/ragged_row_lengths_0": tf.train.Feature(
            int64_list=tf.train.Int64List(value=[len(row) for row in tokens])
        ),
    }
    if depth is not None:
        feature["depth"] = tf.train.Feature(
            bytes_list=tf.train.BytesList(value=[depth.astype("<f4").tobytes()])
        )
        feature["depth/dims"] = tf.train.Feature(int64_list=tf.train.Int64List(value=depth.shape))
    example = tf.train.Example(features=tf.train.Features(feature=feature))
    data: bytes = example.SerializeToString()
    return data


def test_per_dimension_and_tfds_ragged_layouts_agree_with_tensorflow(
    tf: Any, layouts: ModuleType
) -> None:
    images = _images()
    rows = [
        (images[0], np.arange(6, dtype=np.float32).reshape(2, 3), [[1, 2], [3]]),
        (images[1], None, []),
        (images[2], np.ones((2, 1), np.float32), [[], [4, 5, 6]]),
    ]
    theirs = [_tensorflow_layouts(tf, *row) for row in rows]
    ours = [layouts.Layouts(pixels=p, depth=d, tokens=t).encode() for p, d, t in rows]
    for data in (theirs, ours):
        decoded = [layouts.Layouts.decode(d) for d in data]
        batch = layouts.Layouts.decode_batch(data)
        parsed = layouts.Layouts.tf_parse(tf.constant(data))
        for i, (pixels, depth, tokens) in enumerate(rows):
            np.testing.assert_array_equal(decoded[i].pixels, pixels)
            np.testing.assert_array_equal(batch.pixels[i], pixels)
            np.testing.assert_array_equal(parsed["pixels"][i].numpy(), pixels)
            assert [list(r) for r in decoded[i].tokens] == tokens
            assert parsed["tokens"][i].to_list() == tokens
            if depth is None:
                assert decoded[i].depth is None and parsed["depth"][i].shape[0] == 0
            else:
                np.testing.assert_array_equal(decoded[i].depth, depth)
                np.testing.assert_array_equal(parsed["depth"][i][0].numpy(), depth)
    # TensorFlow reads what tfr-gen writes with the spec a TFDS-style reader uses.
    spec = {
        "image/raw": tf.io.FixedLenFeature((), tf.string),
        "image/height": tf.io.FixedLenFeature((), tf.int64),
        "image/width": tf.io.FixedLenFeature((), tf.int64),
        "tokens": tf.io.RaggedFeature(
            tf.int64,
            value_key="tokens/ragged_flat_values",
            partitions=[tf.io.RaggedFeature.RowLengths("tokens/ragged_row_lengths_0")],
        ),
    }
    for data, (pixels, _, tokens) in zip(ours, rows, strict=True):
        parsed = tf.io.parse_single_example(data, spec)
        shape = [parsed["image/height"], parsed["image/width"], 3]
        image = tf.reshape(tf.io.decode_raw(parsed["image/raw"], tf.uint8), shape)
        np.testing.assert_array_equal(image.numpy(), pixels)
        assert parsed["tokens"].to_list() == tokens
