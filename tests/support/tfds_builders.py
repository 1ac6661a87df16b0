"""A small TensorFlow Datasets dataset built on this machine by TFDS's own builder machinery (no
downloads): images (JPEG of varying sizes, fixed-size PNG), a ClassLabel with names, text, a ragged
sequence, a nested FeaturesDict, a Sequence of dicts and a feature tfr-gen has no form for."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import tensorflow_datasets as tfds

LABELS = ["cat", "dog", "bird"]
SPLITS = {"train": 11, "test": 4}


class TfrGenTiny(tfds.core.GeneratorBasedBuilder):  # type: ignore[misc]
    """The test dataset: every kind of feature import-tfds maps, in two splits."""

    VERSION = tfds.core.Version("1.0.0")

    def _info(self) -> Any:
        features = tfds.features
        return tfds.core.DatasetInfo(
            builder=self,
            features=features.FeaturesDict(
                {
                    "image": features.Image(shape=(None, None, 3), encoding_format="jpeg"),
                    "mask": features.Image(shape=(8, 8, 1), encoding_format="png"),
                    "label": features.ClassLabel(names=LABELS),
                    "text": features.Text(),
                    "tokens": features.Sequence(features.Sequence(np.int64)),
                    "scores": features.Sequence(np.float32),
                    "embedding": features.Tensor(shape=(2, 3), dtype=np.float32),
                    "flag": np.bool_,
                    "meta": {
                        "id": np.int64,
                        "name": features.Text(),
                        "positions": features.Tensor(shape=(None,), dtype=np.int32),
                    },
                    "objects": features.Sequence(
                        {"bbox": features.BBoxFeature(), "kind": features.ClassLabel(num_classes=5)}
                    ),
                    "depth": features.Tensor(shape=(None, None), dtype=np.float32, encoding="zlib"),
                    "heights": features.Tensor(
                        shape=(None, None), dtype=np.float32, encoding="bytes"
                    ),
                    "patch": features.Tensor(shape=(2, 2), dtype=np.uint16, encoding="bytes"),
                }
            ),
        )

    def _split_generators(self, dl_manager: Any) -> Any:
        return {
            name: self._generate_examples(count, seed)
            for seed, (name, count) in enumerate(SPLITS.items())
        }

    def _generate_examples(self, count: int, seed: int) -> Any:
        rng = np.random.default_rng(seed)
        for i in range(count):
            h, w = (int(n) for n in rng.integers(4, 24, 2))
            boxes = np.sort(rng.random((i % 3, 2, 2)), axis=1).reshape(-1, 4)
            yield (
                f"{seed}-{i}",
                {
                    "image": rng.integers(0, 256, (h, w, 3), dtype=np.uint8),
                    "mask": rng.integers(0, 256, (8, 8, 1), dtype=np.uint8),
                    "label": i % len(LABELS),
                    "text": f"record {i} of split {seed}: é",
                    "tokens": [list(range(int(n))) for n in rng.integers(0, 4, i % 4)],
                    "scores": rng.random(i % 5).astype(np.float32),
                    "embedding": rng.random((2, 3)).astype(np.float32),
                    "flag": bool(i % 2),
                    "meta": {
                        "id": seed * 100 + i,
                        "name": f"n{i}",
                        "positions": np.arange(i % 3, dtype=np.int32),
                    },
                    "objects": {
                        "bbox": boxes.astype(np.float32),
                        "kind": [int(k) for k in rng.integers(0, 5, len(boxes))],
                    },
                    "depth": rng.random((2, 1 + i % 2)).astype(np.float32),
                    "heights": rng.random((1 + i % 3, 2)).astype(np.float32),
                    "patch": rng.integers(0, 60000, (2, 2), dtype=np.uint16),
                },
            )


def prepare(data_dir: Path, *, shards: int = 3) -> Path:
    """Builds the dataset under ``data_dir`` (each split in ``shards`` shards); its directory."""
    builder = TfrGenTiny(data_dir=str(data_dir))
    builder.download_and_prepare(download_config=tfds.download.DownloadConfig(num_shards=shards))
    return Path(builder.data_dir)


def as_numpy(directory: Path, split: str) -> list[dict[str, Any]]:
    """TFDS's own reading of a split, in file order, as flat dicts of numpy values."""
    builder = tfds.builder_from_directory(str(directory))
    dataset = builder.as_dataset(split=split, shuffle_files=False)
    return [_flat(example) for example in tfds.as_numpy(dataset)]


def _flat(example: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in example.items():
        if isinstance(value, dict):
            flat.update(_flat(value, f"{prefix}{key}_"))
        elif hasattr(value, "to_list"):  # a tf.RaggedTensor
            flat[prefix + key] = value.to_list()
        else:
            flat[prefix + key] = value
    return flat
