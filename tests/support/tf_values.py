"""Values for the comparisons with TensorFlow: samples of every dtype and shape form, our decoded
values and TensorFlow's tensors as plain nested lists, and Examples built by TensorFlow's classes."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any, cast

import numpy as np

from codegen.dtypes import DType, Kind
from codegen.runtime import FeatureInfo
from support.matrix import varint

Shape = tuple[int | None, ...]

TF_COMPRESSIONS: list[tuple[Any, str, str]] = [
    (None, "", ".tfrecord"),
    ("gzip", "GZIP", ".tfrecord.gz"),
    ("zlib", "ZLIB", ".zlib"),
]
"""(our compression, TensorFlow's ``compression_type``, file suffix) of each compression."""
OTHER_WIRE = {
    "int64_list": ("float_list", 1.0),
    "float_list": ("bytes_list", b"x"),
    "bytes_list": ("int64_list", 1),
}
"""For each list kind: a list kind that is wrong for it, and a value of that kind."""
TF_WIRE_DTYPES = {"int64_list": "int64", "float_list": "float32", "bytes_list": "string"}
"""The dtype TensorFlow parses each list kind to."""
SOME_VALUE = {"int64_list": 0, "float_list": 0.0, "bytes_list": b"x"}
"""A value of each list kind that fits every dtype that travels in it."""


# --- sample values --------------------------------------------------------------------------------


def tensor_scalars(dtype: DType, count: int, seed: int) -> list[Any]:
    """``count`` values of ``dtype`` (different per ``seed``), with the edges of its range."""
    pool: list[Any]
    if dtype.kind is Kind.INT:
        assert dtype.lo is not None and dtype.hi is not None
        pool = [
            v for v in (0, 1, -1, 127, 300, 2**40, dtype.lo, dtype.hi) if dtype.lo <= v <= dtype.hi
        ]
    elif dtype.kind is Kind.BOOL:
        pool = [True, False, False]
    elif dtype.kind is Kind.FLOAT:
        top = float(np.finfo(cast("np.dtype[np.floating[Any]]", dtype.numpy)).max)
        pool = (
            [0.0, -1.5, top, -math.inf, 0.25, -0.0]
            if dtype.name != "float32"
            else [0.5, 1e30, top, math.inf]
        )
    elif dtype.kind is Kind.STR:
        pool = ["", "a", "é" * 70, "日本語"]
    else:
        pool = [b"", b"\x00\xff", b"y" * 200]
    return [pool[(seed + i) % len(pool)] for i in range(count)]


def raw_value(dtype: DType, shape: Shape, seed: int) -> np.ndarray[Any, Any]:
    """A raw tensor of ``shape`` (each ``None`` 0 to 2 long, different per ``seed``)."""
    concrete = tuple(seed % 3 if d is None else d for d in shape)
    return np.array(tensor_scalars(dtype, math.prod(concrete), seed), dtype.numpy).reshape(concrete)


def ragged_value(dtype: DType, shape: Shape, seed: int) -> Any:
    """A ragged value whose node lengths cycle through 0..2 (different per ``seed``)."""
    nulls = shape.count(None)
    fixed = tuple(d for d in shape if d is not None)
    counter = iter(range(seed, seed + 1000))

    def node(depth: int) -> Any:
        n = next(counter) % 3
        if depth == nulls - 1:
            flat = tensor_scalars(dtype, n * math.prod(fixed), next(counter))
            if dtype.numeric:
                return np.array(flat, dtype.numpy).reshape(n, *fixed)
            for dim in reversed(fixed):
                flat = [flat[i : i + dim] for i in range(0, len(flat), dim)]
            return flat
        return [node(depth + 1) for _ in range(n)]

    return node(0)


def step_scalars(dtype: DType, count: int, seed: int) -> list[Any]:
    """``count`` values of ``dtype`` for the steps of a feature list (different per ``seed``)."""
    pool: list[Any]
    if dtype.kind is Kind.INT:
        assert dtype.lo is not None and dtype.hi is not None
        pool = [
            v for v in (0, 1, -1, 127, 300, 2**40, dtype.lo, dtype.hi) if dtype.lo <= v <= dtype.hi
        ]
    elif dtype.kind is Kind.BOOL:
        pool = [True, False, False]
    elif dtype.kind is Kind.FLOAT:
        pool = [0.5, -1.5, 1e30, math.inf, float(np.finfo(np.float32).max)]
    elif dtype.kind is Kind.STR:
        pool = ["", "a", "é" * 70, "日本語"]
    else:
        pool = [b"", b"\x00\xff", b"y" * 200]
    return [pool[(seed + i) % len(pool)] for i in range(count)]


def steps_value(dtype: DType, shape: Shape, steps: int, seed: int) -> list[Any]:
    """``steps`` steps of ``shape`` (a leading ``None``: 0 to 2 rows each), as nested lists."""
    value = []
    for t in range(steps):
        concrete = tuple((seed + t) % 3 if d is None else d for d in shape)
        flat: Any = step_scalars(dtype, math.prod(concrete), seed + t)
        for dim in reversed(concrete[1:]):
            flat = [flat[i : i + dim] for i in range(0, len(flat), dim)]
        value.append(flat if shape else flat[0])
        if dtype.numeric and None in shape:
            value[-1] = np.array(value[-1], dtype.numpy).reshape(concrete)
    return value


# --- comparable forms -----------------------------------------------------------------------------


def plain(value: Any) -> Any:
    """Our decoded value as TensorFlow's ``tolist()`` gives it (strings as UTF-8 bytes)."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, list):
        return [plain(item) for item in value]
    return value.encode() if isinstance(value, str) else value


def tf_plain(tf: Any, tensor: Any) -> Any:
    """A tensor as nested lists (a ragged one rebuilt from its row splits: faster than
    ``to_list``)."""
    if not isinstance(tensor, tf.RaggedTensor):
        return tensor.numpy().tolist()
    values = tensor.flat_values.numpy().tolist()
    for splits in reversed(tensor.nested_row_splits):
        bounds = splits.numpy().tolist()
        values = [values[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
    return values


# --- messages built by TensorFlow -----------------------------------------------------------------


def spec_of(cls: Any) -> list[FeatureInfo]:
    """The features of a record class, in schema order."""
    return list(cls.feature_spec())


def example_of(tf: Any, entries: Iterable[tuple[str, Any]]) -> bytes:
    """An Example whose map entries are exactly ``entries`` (key, ``tf.train.Feature``), in order,
    duplicates kept; each entry serialized by TensorFlow's protobuf classes."""
    features = b"".join(
        tf.train.Features(feature={key: feature}).SerializeToString() for key, feature in entries
    )
    return b"\x0a" + varint(len(features)) + features
