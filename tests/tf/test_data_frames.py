"""TensorFlow reads TFRecord files written from pandas and polars data frames through ``write_tfrecord``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from support.modules import generated_module

Customer: Any = generated_module("customer").Customer
Digit: Any = generated_module("mnist").Digit


def _columns() -> dict[str, Any]:
    return {
        "age": [31, 0, 99],
        "movie": [["Trainspotting", "é"], [], ["Alien"]],
        "movie_ratings": [[4.5, 3.0], [], [5.0]],
        "suggestion": ["Heat", "", "日本"],
        "suggestion_purchased": [1.0, 0.0, 0.5],
        "purchase_price": [9.99, 0.0, 1.5],
    }


def test_tensorflow_reads_files_written_from_pandas_and_polars(
    tf: Any, pd: Any, pl: Any, tmp_path: Path
) -> None:
    columns = _columns()
    records = [Customer(**{name: values[i] for name, values in columns.items()}) for i in range(3)]
    frames = {
        "pandas": pd.DataFrame(columns),
        "polars": pl.DataFrame(
            columns,
            schema_overrides={
                "movie_ratings": pl.List(pl.Float32),
                "suggestion_purchased": pl.Float32,
                "purchase_price": pl.Float32,
            },
        ),
    }
    for name, frame in frames.items():
        path = tmp_path / f"{name}.tfrecord"
        assert Customer.write_tfrecord(path, frame) == 3
        serialized = [bytes(t.numpy()) for t in tf.data.TFRecordDataset(str(path))]
        assert serialized == [record.encode() for record in records], name
        parsed = tf.io.parse_example(serialized, Customer.tf_feature_spec())
        assert parsed["Age"].numpy().tolist() == [31, 0, 99], name
        assert [m.decode() for m in parsed["Movie"].values.numpy().tolist()] == [
            "Trainspotting",
            "é",
            "Alien",
        ], name
        assert parsed["Suggestion"].numpy().tolist() == [b"Heat", b"", "日本".encode()]
        np.testing.assert_array_equal(
            parsed["Movie Ratings"].values.numpy(), np.array([4.5, 3.0, 5.0], np.float32)
        )


def test_tensorflow_reads_images_written_from_a_polars_frame(
    tf: Any, pl: Any, tmp_path: Path
) -> None:
    rng = np.random.default_rng(3)
    images = rng.integers(0, 256, (4, 784), dtype=np.int64)
    frame = pl.DataFrame(
        {"image": images, "label": np.arange(4)},
        schema_overrides={"image": pl.Array(pl.Int64, 784), "label": pl.Int64},
    )
    path = tmp_path / "digits.tfrecord"
    Digit.write_tfrecord(path, frame)
    parsed = tf.io.parse_example(
        [bytes(t.numpy()) for t in tf.data.TFRecordDataset(str(path))], Digit.tf_feature_spec()
    )
    keys = {info.name: info.key for info in Digit.feature_spec()}
    np.testing.assert_array_equal(parsed[keys["image"]].numpy(), images)
    assert parsed[keys["label"]].numpy().tolist() == [0, 1, 2, 3]
