"""``tfr-gen infer`` recognises the layouts other tools write: encoded JPEG/PNG images, the image tutorials' raw
image with its int32 shape bytes, TensorFlow Datasets' ragged key names; bytes with NULs are not text. The inferred
schema reads the TensorFlow-written files and writes them back to the same Examples."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from codegen.runtime.codec import wire
from support.cli import run_cli
from support.modules import generate_module
from support.tutorial import tf_write


def _examples(tf: Any) -> list[Any]:
    rng = np.random.default_rng(18)
    messages = []
    for i in range(6):
        image = rng.integers(0, 256, (3 + i, 4 + i % 2, 3), dtype=np.uint8)
        feature = {
            "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[i])),
            # the tutorials' get_image_binary
            "shape": tf.train.Feature(
                bytes_list=tf.train.BytesList(value=[np.array(image.shape, np.int32).tobytes()])
            ),
            "image": tf.train.Feature(bytes_list=tf.train.BytesList(value=[image.tobytes()])),
            "image/encoded": tf.train.Feature(
                bytes_list=tf.train.BytesList(value=[tf.io.encode_png(image).numpy()])
            ),
            "blob": tf.train.Feature(bytes_list=tf.train.BytesList(value=[b"a\x00b"])),
            "tokens/ragged_flat_values": tf.train.Feature(
                int64_list=tf.train.Int64List(value=list(range(2 * i)))
            ),
            "tokens/ragged_row_lengths_0": tf.train.Feature(
                int64_list=tf.train.Int64List(value=[i, i])
            ),
        }
        messages.append(tf.train.Example(features=tf.train.Features(feature=feature)))
    return messages


def test_infer_recognises_images_tutorial_shapes_and_tfds_ragged_names(
    tf: Any, tmp_path: Path
) -> None:
    originals = tf_write(tf, tmp_path / "layouts.tfrecord", _examples(tf))
    code, out, err = run_cli("infer", "layouts.tfrecord", "-o", "layouts.yaml", cwd=tmp_path)
    assert code == 0, err
    # Six records are few, and labels 0..5 fit uint8: both are said, and nothing else.
    assert err == (
        "tfr-gen infer: warning: only 6 records seen: the fixed shapes of blob, label may vary in"
        " more data; infer from at least 20 records or review them\n"
        "tfr-gen infer: warning: int64 features whose values fit a narrower dtype: label"
        " (0..5: uint8); declare it where every value always will\n"
    )
    text = (tmp_path / "layouts.yaml").read_text(encoding="utf-8")
    assert "      blob: {dtype: bytes}\n" in text
    assert (
        "      image: {dtype: uint8, shape: [null, null, null], encoding: raw,"
        " shape_from: {key: shape, dtype: int32, encoding: raw}}\n"
    ) in text
    assert (
        "      image_encoded: {key: image/encoded, dtype: uint8, shape: [null, null, null],"
        " encoding: png}\n"
    ) in text
    assert (
        "      tokens: {key: tokens/ragged_flat_values, dtype: int64, shape: [null, null],"
        " row_lengths_from: [tokens/ragged_row_lengths_0]}\n"
    ) in text
    assert "      shape:" not in text and "ragged_row_lengths_0: {" not in text
    module = generate_module(text, "inferred_layouts", tmp_path)
    records = list(module.Layouts.read_tfrecord(tmp_path / "layouts.tfrecord"))
    for i, (record, original) in enumerate(zip(records, originals, strict=True)):
        assert record.image.shape == (3 + i, 4 + i % 2, 3)
        np.testing.assert_array_equal(record.image_encoded, record.image)
        assert [list(row) for row in record.tokens] == [list(range(i)), list(range(i, 2 * i))]
        ours, theirs = wire.parse_example(record.encode()), wire.parse_example(original)
        png = b"image/encoded"
        assert {k: v for k, v in ours.items() if k != png} == {
            k: v for k, v in theirs.items() if k != png
        }


def _detection_examples(tf: Any, *, channels_key: bool) -> list[Any]:
    """Raw pixels under ``image/raw`` with ``image/height``, ``image/width`` (and
    ``image/channels``) int64 scalars beside them: the Object Detection API's layout."""
    rng = np.random.default_rng(7)
    messages = []
    for i in range(5):
        image = rng.integers(0, 256, (2 + i, 3 + 2 * i, 3), dtype=np.uint8)
        ints = {"image/height": image.shape[0], "image/width": image.shape[1], "label": i}
        if channels_key:
            ints["image/channels"] = 3
        feature = {
            key: tf.train.Feature(int64_list=tf.train.Int64List(value=[value]))
            for key, value in ints.items()
        }
        feature["image/raw"] = tf.train.Feature(
            bytes_list=tf.train.BytesList(value=[image.tobytes()])
        )
        messages.append(tf.train.Example(features=tf.train.Features(feature=feature)))
    return messages


def test_infer_proposes_one_shape_feature_per_dimension_where_the_data_shows_it(
    tf: Any, tmp_path: Path
) -> None:
    for channels_key, line in (
        (False, "shape: [null, null, 3], encoding: raw, shape_from: [image/height, image/width]}"),
        (
            True,
            "shape: [null, null, null], encoding: raw,"
            " shape_from: [image/height, image/width, image/channels]}",
        ),
    ):
        name = f"detection{int(channels_key)}"
        originals = tf_write(
            tf, tmp_path / f"{name}.tfrecord", _detection_examples(tf, channels_key=channels_key)
        )
        code, _, err = run_cli("infer", f"{name}.tfrecord", "-o", f"{name}.yaml", cwd=tmp_path)
        assert code == 0, err
        text = (tmp_path / f"{name}.yaml").read_text(encoding="utf-8")
        assert f"      image_raw: {{key: image/raw, dtype: uint8, {line}\n" in text
        assert "image_height:" not in text and "image_width:" not in text
        module = generate_module(text, f"inferred_{name}", tmp_path)
        record_class = getattr(module, name.capitalize())
        records = list(record_class.read_tfrecord(tmp_path / f"{name}.tfrecord"))
        for i, (record, original) in enumerate(zip(records, originals, strict=True)):
            assert record.image_raw.shape == (2 + i, 3 + 2 * i, 3)
            assert wire.parse_example(record.encode()) == wire.parse_example(original)


def test_bytes_that_do_not_match_the_dimension_features_stay_bytes(tf: Any, tmp_path: Path) -> None:
    messages = _detection_examples(tf, channels_key=False)
    messages[2].features.feature["image/width"].int64_list.value[0] += 1  # 4 x 8 x 3 is not 4 x 7
    tf_write(tf, tmp_path / "odd.tfrecord", messages)
    code, out, err = run_cli("infer", "odd.tfrecord", cwd=tmp_path)
    assert code == 0, err
    assert "      image_raw: {key: image/raw, dtype: bytes}\n" in out
    assert "      image_width: {key: image/width, dtype: int64}\n" in out
