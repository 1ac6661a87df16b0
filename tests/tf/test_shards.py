"""TensorFlow reads the shards of a dataset, in order, with each compression."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from codegen.generator.load import parse_schema
from codegen.runtime.data.schemainfo import SchemaInfo
from codegen.runtime.data.shards import write_dataset

SCHEMA = parse_schema(
    "version: 4\nrecords:\n  Blob:\n    features:\n      b: {dtype: bytes}\n", "blobs.yaml"
)
INFO = SchemaInfo("blobs", "Blob", SCHEMA.version, SCHEMA.fingerprint, SCHEMA.canonical)


@pytest.mark.parametrize(
    ("compression", "tf_name"), [("gzip", "GZIP"), ("zlib", "ZLIB"), (None, "")]
)
def test_tensorflow_reads_the_shards_in_order(
    tmp_path: Path, tf: Any, compression: Any, tf_name: str
) -> None:
    payloads = [bytes([i]) * i for i in range(11)]  # the empty record too
    manifest = write_dataset(tmp_path, payloads, schema=INFO, shards=3, compression=compression)
    dataset = tf.data.TFRecordDataset(list(manifest.paths), compression_type=tf_name)
    assert [bytes(d.numpy()) for d in dataset] == payloads
    assert [s.records for s in manifest.shards] == [4, 4, 3]
