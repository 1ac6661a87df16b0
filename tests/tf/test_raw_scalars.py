"""Raw scalars (``encoding: raw``, ``shape: []``) of every raw dtype, through a generated module: written by tfr-gen
they are TensorFlow's ``decode_raw`` of one value; written by TensorFlow they decode to the same value; ``tf_parse``
and the batch decoder agree with both."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from codegen.generator.schema.model import RAW_DTYPES
from support.modules import generate_module

pytestmark = pytest.mark.tensorflow

SCHEMA = "version: 1\nrecords:\n  Tick:\n    features:\n" + "".join(
    f"      v_{name}: {{dtype: {name}, encoding: raw}}\n" for name in RAW_DTYPES
)

SIGNED = {"uint32": "int32", "uint64": "int64"}


def _values(seed: int) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    values: dict[str, Any] = {}
    for name in RAW_DTYPES:
        dtype = np.dtype(name)
        if dtype.kind == "f":
            values[f"v_{name}"] = dtype.type(rng.standard_normal() * 1000)
        else:
            info = np.iinfo(dtype)
            values[f"v_{name}"] = rng.integers(info.min, info.max, endpoint=True, dtype=dtype)[()]
    return values


def test_raw_scalars_of_every_raw_dtype_agree_with_tensorflow(tf: Any, tmp_path: Path) -> None:
    module = generate_module(SCHEMA, "raw_scalars", tmp_path)
    rows = [_values(seed) for seed in range(3)]
    ours = [module.Tick(**row).encode() for row in rows]
    for data, row in zip(ours, rows, strict=True):
        spec = {f"v_{name}": tf.io.FixedLenFeature((), tf.string) for name in RAW_DTYPES}
        parsed = tf.io.parse_single_example(data, spec)
        decoded = module.Tick.decode(data)
        for name in RAW_DTYPES:
            attr = f"v_{name}"
            # decode_raw has no unsigned 32/64-bit types: read signed, then bitcast.
            read = tf.as_dtype(SIGNED.get(name, name))
            raw = tf.io.decode_raw(parsed[attr], read, little_endian=True)
            raw = tf.bitcast(raw, tf.as_dtype(name)).numpy()
            assert raw.shape == (1,) and raw[0] == row[attr]
            value = getattr(decoded, attr)
            assert value.shape == () and value.dtype == np.dtype(name) and value == row[attr]
        # The same values written by TensorFlow decode the same.
        theirs = tf.train.Example(
            features=tf.train.Features(
                feature={
                    attr: tf.train.Feature(
                        bytes_list=tf.train.BytesList(
                            value=[np.asarray(v).astype(v.dtype.newbyteorder("<")).tobytes()]
                        )
                    )
                    for attr, v in row.items()
                }
            )
        ).SerializeToString()
        assert module.Tick.decode(theirs) == decoded
    batch = module.Tick.decode_batch(ours)
    tensors = module.Tick.tf_parse(tf.constant(ours))
    single = module.Tick.tf_parse(tf.constant(ours[0]))
    for name in RAW_DTYPES:
        attr = f"v_{name}"
        want = np.array([row[attr] for row in rows], np.dtype(name))
        np.testing.assert_array_equal(getattr(batch, attr), want)
        assert tensors[attr].shape == (3,)
        np.testing.assert_array_equal(tensors[attr].numpy(), want)
        assert single[attr].shape == () and single[attr].numpy() == rows[0][attr]
