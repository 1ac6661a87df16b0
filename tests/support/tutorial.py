"""The data sets of TensorFlow's tutorials (movie customers, MNIST, my_ints/my_float/my_bytes,
token sequences): as data, as ``tf.train`` messages (``tf_*``, given the ``tf`` fixture's module)
written by TensorFlow's writer (:func:`tf_write`), and as records of the generated classes."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from support.modules import generated_module

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


def customer_records(customers: Sequence[dict[str, Any]] = CUSTOMERS) -> list[Any]:
    """Customers as records of the committed generated class ``customer.Customer``."""
    customer = generated_module("customer").Customer
    return [customer(**{k.lower().replace(" ", "_"): v for k, v in c.items()}) for c in customers]


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
