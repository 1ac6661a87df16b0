"""The protobuf message classes: TensorFlow's descriptors, in a private pool, next to TensorFlow."""

from __future__ import annotations

import os
import subprocess
import textwrap
from collections.abc import Iterator
from typing import Any

import pytest
from google.protobuf import descriptor_pb2, descriptor_pool

from codegen.runtime.tf import proto
from support.processes import PYTHON

MESSAGES = (
    "BytesList",
    "FloatList",
    "Int64List",
    "Feature",
    "Features",
    "FeatureList",
    "FeatureLists",
    "Example",
    "SequenceExample",
)

ROUND_TRIP = """
import os, sys
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
FIRST = sys.argv[1]
if FIRST == "ours":
    from codegen.runtime.tf import proto
    import tensorflow as tf
else:
    import tensorflow as tf
    from codegen.runtime.tf import proto

ours = proto.Example()
ours.features.feature["ids"].int64_list.value.extend([1, -2, 3])
ours.features.feature["name"].bytes_list.value.append(b"x")
theirs = tf.train.Example.FromString(ours.SerializeToString())
assert list(theirs.features.feature["ids"].int64_list.value) == [1, -2, 3], theirs
theirs.features.feature["score"].float_list.value.append(0.5)
back = proto.Example.FromString(theirs.SerializeToString(deterministic=True))
assert back.features.feature["score"].float_list.value == [0.5], back
assert back.SerializeToString(deterministic=True) == theirs.SerializeToString(deterministic=True)
parsed = tf.io.parse_single_example(
    back.SerializeToString(), {"ids": tf.io.VarLenFeature(tf.int64)}
)
assert parsed["ids"].values.numpy().tolist() == [1, -2, 3]
print("round trip ok", FIRST)
"""


@pytest.fixture(scope="module")
def import_orders(
    request: pytest.FixtureRequest,
) -> Iterator[dict[str, subprocess.CompletedProcess[str]]]:
    """Run the round trip in two fresh interpreters at once: ours imported first, then TF first.

    They start before this process imports TensorFlow (the ``tf`` fixture), so the imports overlap.
    """
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    script = textwrap.dedent(ROUND_TRIP)
    running = {
        first: subprocess.Popen(
            [*PYTHON, "-c", script, first],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for first in ("ours", "tensorflow")
    }
    try:
        request.getfixturevalue("tf")
        results = {}
        for first, process in running.items():
            stdout, stderr = process.communicate(timeout=300)
            results[first] = subprocess.CompletedProcess(
                process.args, process.returncode, stdout, stderr
            )
    finally:
        for process in running.values():
            if process.poll() is None:
                process.kill()
                process.communicate()
    yield results


@pytest.mark.parametrize("first", ["ours", "tensorflow"])
def test_round_trip_with_tensorflow_in_either_import_order(
    import_orders: dict[str, subprocess.CompletedProcess[str]], first: str
) -> None:
    result = import_orders[first]
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"round trip ok {first}" in result.stdout


def _file_proto(descriptor: Any) -> descriptor_pb2.FileDescriptorProto:
    file = descriptor_pb2.FileDescriptorProto()
    descriptor.CopyToProto(file)
    file.ClearField("options")
    return file


@pytest.mark.parametrize("name", ["feature", "example"])
def test_descriptors_match_tensorflows(tf: Any, name: str) -> None:
    from tensorflow.core.example import example_pb2, feature_pb2

    theirs = {"feature": feature_pb2, "example": example_pb2}[name].DESCRIPTOR
    ours = proto.POOL.FindFileByName(f"tensorflow/core/example/{name}.proto")
    assert _file_proto(ours) == _file_proto(theirs)


@pytest.mark.parametrize("name", MESSAGES)
def test_classes_have_tensorflow_full_names_in_the_private_pool(name: str) -> None:
    descriptor = getattr(proto, name).DESCRIPTOR
    assert descriptor.full_name == f"tensorflow.{name}"
    assert descriptor.file.pool is proto.POOL
    assert proto.POOL is not descriptor_pool.Default()


def test_proto3_semantics_packed_lists_and_oneof() -> None:
    feature = proto.Feature(int64_list=proto.Int64List(value=[1, 2]))
    assert feature.SerializeToString() == b"\x1a\x04\x0a\x02\x01\x02"
    feature.float_list.value.append(1.0)
    assert feature.WhichOneof("kind") == "float_list"
    assert not feature.HasField("int64_list")
    assert proto.FloatList(value=[1.0]).SerializeToString() == b"\x0a\x04\x00\x00\x80\x3f"
    assert proto.BytesList(value=[b"a", b""]).SerializeToString() == b"\x0a\x01a\x0a\x00"
    message = proto.SequenceExample()
    message.feature_lists.feature_list["s"].feature.add().bytes_list.value.append(b"v")
    assert proto.SequenceExample.FromString(message.SerializeToString()) == message
