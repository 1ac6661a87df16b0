"""Helpers shared by the data-tool tests (test_tools_*.py): running the CLI, snapshots, data sets.

The data sets are the tutorials' (movie customers, MNIST, my_ints/my_float/my_bytes, token
sequences), written by TensorFlow (``write_tf_*``, given the ``tf`` fixture's module) or built with
the wire primitives and generated classes. This module holds no tests.
"""

from __future__ import annotations

import importlib.util
import io
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from codegen.cli import main
from codegen.generator.load import parse_schema
from codegen.generator.render import render

ROOT = Path(__file__).resolve().parent.parent
SNAPSHOTS = Path(__file__).resolve().parent / "snapshots"
UPDATE = os.environ.get("TFR_UPDATE_SNAPSHOTS") == "1"

CUSTOMERS: list[dict[str, Any]] = [
    {
        "Age": 29,
        "Movie": ["The Shawshank Redemption", "Fight Club"],
        "Movie Ratings": [9.0, 9.7],
        "Suggestion": "Inception",
        "Suggestion Purchased": 1.0,
        "Purchase Price": 9.99,
    },
    {
        "Age": 41,
        "Movie": ["Alien"],
        "Movie Ratings": [8.5],
        "Suggestion": "Aliens",
        "Suggestion Purchased": 0.0,
        "Purchase Price": 0.0,
    },
    {
        "Age": 35,
        "Movie": ["Up", "Heat", "Ran"],
        "Movie Ratings": [8.3, 8.2, 8.2],
        "Suggestion": "Seven Samurai",
        "Suggestion Purchased": 1.0,
        "Purchase Price": 4.5,
    },
]
"""The movie customers of the "Example with mixed features" tutorial, and two more."""

SENTENCES = [([1, 2, 3], [0, 1, 0]), ([4, 5, 1], [1, 0, 0]), ([1, 2], [1, 1])]
"""The token and label sequences of the "SequenceExample for RNNs" tutorial."""


class Terminal(io.StringIO):
    """A text stream that says it is a terminal."""

    def isatty(self) -> bool:
        return True


def run_cli(*args: str, cwd: Path, err: io.StringIO | None = None) -> tuple[int, str, str]:
    """Run ``tfr-gen`` in ``cwd``: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), err if err is not None else io.StringIO()
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(cwd)
        code = main(list(args), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def assert_snapshot(name: str, text: str) -> None:
    """``text`` must equal ``tests/snapshots/<name>`` exactly; ``TFR_UPDATE_SNAPSHOTS=1``
    rewrites the file instead."""
    path = SNAPSHOTS / name
    if UPDATE:
        path.parent.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8", newline="\n")
        return
    assert path.exists(), f"no snapshot {path}; run the tests with TFR_UPDATE_SNAPSHOTS=1"
    expected = path.read_text(encoding="utf-8")
    assert text == expected, f"output differs from {path} (TFR_UPDATE_SNAPSHOTS=1 rewrites it)"


def load_module(path: Path, name: str) -> ModuleType:
    """Import the Python file at ``path`` as module ``name``."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def generate_module(schema_path: Path, name: str) -> ModuleType:
    """Generate the module of a schema file next to it and import it as ``name``."""
    schema = parse_schema(schema_path.read_text(encoding="utf-8"), schema_path.name)
    target = schema_path.with_name(f"{name}.py")
    target.write_text(render(schema, command="tfr-gen (test)"), encoding="utf-8")
    return load_module(target, name)


def generated(name: str) -> ModuleType:
    """A committed generated module (``generated/<name>.py``)."""
    return load_module(ROOT / "generated" / f"{name}.py", f"tools_generated_{name}")


def frame_offsets(records: Sequence[bytes]) -> list[int]:
    """The byte offset of each record's header in an uncompressed TFRecord file of ``records``."""
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


# --- data written by TensorFlow -----------------------------------------------------------------


def tf_write(tf: Any, path: Path, messages: Sequence[Any]) -> list[bytes]:
    """Write protobuf messages with ``tf.io.TFRecordWriter``; returns the serialized records."""
    records = [message.SerializeToString() for message in messages]
    with tf.io.TFRecordWriter(str(path)) as writer:
        for record in records:
            writer.write(record)
    return records


def tf_customers(tf: Any, customers: Sequence[dict[str, Any]] = CUSTOMERS) -> list[Any]:
    """``tf.train.Example`` messages of customers, built as the tutorial builds them."""
    feature = tf.train.Feature
    messages = []
    for data in customers:
        features = {}
        for key, value in data.items():
            values = value if isinstance(value, list) else [value]
            if isinstance(values[0], str):
                features[key] = feature(
                    bytes_list=tf.train.BytesList(value=[v.encode("utf-8") for v in values])
                )
            elif isinstance(values[0], float):
                features[key] = feature(float_list=tf.train.FloatList(value=values))
            else:
                features[key] = feature(int64_list=tf.train.Int64List(value=values))
        messages.append(tf.train.Example(features=tf.train.Features(feature=features)))
    return messages


def tf_digits(tf: Any, count: int = 6) -> list[Any]:
    """MNIST-like ``tf.train.Example`` messages: ``label`` and ``image`` (784 int64 pixels)."""
    rng = np.random.default_rng(4)
    messages = []
    for label in range(count):
        pixels = rng.integers(0, 256, 784) * (rng.random(784) < 0.2)
        features = {
            "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[label])),
            "image": tf.train.Feature(int64_list=tf.train.Int64List(value=pixels.tolist())),
        }
        messages.append(tf.train.Example(features=tf.train.Features(feature=features)))
    return messages


def tf_basics(tf: Any) -> list[Any]:
    """The my_ints / my_float / my_bytes Examples of "TFRecords for Humans"."""
    rows = [([5, 6], 2.7, b"data"), ([7, 8, 9], 3.5, b"more data"), ([], -1.25, b"")]
    messages = []
    for ints, number, data in rows:
        features = {
            "my_ints": tf.train.Feature(int64_list=tf.train.Int64List(value=ints)),
            "my_float": tf.train.Feature(float_list=tf.train.FloatList(value=[number])),
            "my_bytes": tf.train.Feature(bytes_list=tf.train.BytesList(value=[data])),
        }
        messages.append(tf.train.Example(features=tf.train.Features(feature=features)))
    return messages


def tf_sentences(tf: Any) -> list[Any]:
    """The SequenceExamples of the "SequenceExample for RNNs" tutorial (made as it makes them)."""
    messages = []
    for tokens, labels in SENTENCES:
        example = tf.train.SequenceExample()
        example.context.feature["length"].int64_list.value.append(len(tokens))
        token_list = example.feature_lists.feature_list["tokens"]
        label_list = example.feature_lists.feature_list["labels"]
        for token, label in zip(tokens, labels, strict=True):
            token_list.feature.add().int64_list.value.append(token)
            label_list.feature.add().int64_list.value.append(label)
        messages.append(example)
    return messages
