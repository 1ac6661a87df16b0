"""The ``tf.train`` protobuf message classes, without TensorFlow.

The descriptors mirror TensorFlow's ``tensorflow/core/example/feature.proto`` and
``example.proto`` (proto3, packed numeric lists, the same full names ``tensorflow.*``), built in
code inside a private descriptor pool. Keeping them out of protobuf's default pool lets this module
and ``import tensorflow`` (which registers the same files there) load in either order in one
process; messages move between the two class families through ``SerializeToString`` and
``FromString``.
"""

from __future__ import annotations

from typing import Any, Protocol

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from codegen.errors import RecordError

_PACKAGE = "tensorflow"
_FEATURE_FILE = "tensorflow/core/example/feature.proto"
_EXAMPLE_FILE = "tensorflow/core/example/example.proto"

_F = descriptor_pb2.FieldDescriptorProto


def _field(
    message: descriptor_pb2.DescriptorProto,
    name: str,
    number: int,
    field_type: int,
    *,
    repeated: bool = False,
    type_name: str = "",
    oneof_index: int | None = None,
) -> descriptor_pb2.FieldDescriptorProto:
    """Append a field to ``message`` and return it (``type_name``: a full name without the dot)."""
    field = message.field.add(
        name=name,
        number=number,
        type=field_type,
        label=_F.LABEL_REPEATED if repeated else _F.LABEL_OPTIONAL,
    )
    if type_name:
        field.type_name = f".{type_name}"
    if oneof_index is not None:
        field.oneof_index = oneof_index
    return field


def _map_entry(
    message: descriptor_pb2.DescriptorProto, field_name: str, entry_name: str, value_type: str
) -> None:
    """Add ``map<string, value_type> field_name = 1`` to ``message`` with its nested entry type."""
    entry = message.nested_type.add(name=entry_name)
    entry.options.map_entry = True
    _field(entry, "key", 1, _F.TYPE_STRING)
    _field(entry, "value", 2, _F.TYPE_MESSAGE, type_name=value_type)
    _field(
        message,
        field_name,
        1,
        _F.TYPE_MESSAGE,
        repeated=True,
        type_name=f"{_PACKAGE}.{message.name}.{entry_name}",
    )


def _feature_file() -> descriptor_pb2.FileDescriptorProto:
    """``feature.proto``: the three lists, ``Feature(s)`` and ``FeatureList(s)``."""
    file = descriptor_pb2.FileDescriptorProto(name=_FEATURE_FILE, package=_PACKAGE, syntax="proto3")
    bytes_list = file.message_type.add(name="BytesList")
    _field(bytes_list, "value", 1, _F.TYPE_BYTES, repeated=True)
    float_list = file.message_type.add(name="FloatList")
    _field(float_list, "value", 1, _F.TYPE_FLOAT, repeated=True).options.packed = True
    int64_list = file.message_type.add(name="Int64List")
    int64_value = _field(int64_list, "value", 1, _F.TYPE_INT64, repeated=True)
    int64_value.options.packed = True
    int64_value.options.jstype = descriptor_pb2.FieldOptions.JS_STRING

    feature = file.message_type.add(name="Feature")
    feature.oneof_decl.add(name="kind")
    for number, (name, list_type) in enumerate(
        (("bytes_list", "BytesList"), ("float_list", "FloatList"), ("int64_list", "Int64List")),
        start=1,
    ):
        _field(
            feature,
            name,
            number,
            _F.TYPE_MESSAGE,
            type_name=f"{_PACKAGE}.{list_type}",
            oneof_index=0,
        )

    features = file.message_type.add(name="Features")
    _map_entry(features, "feature", "FeatureEntry", f"{_PACKAGE}.Feature")
    feature_list = file.message_type.add(name="FeatureList")
    _field(
        feature_list, "feature", 1, _F.TYPE_MESSAGE, repeated=True, type_name=f"{_PACKAGE}.Feature"
    )
    feature_lists = file.message_type.add(name="FeatureLists")
    _map_entry(feature_lists, "feature_list", "FeatureListEntry", f"{_PACKAGE}.FeatureList")
    return file


def _example_file() -> descriptor_pb2.FileDescriptorProto:
    """``example.proto``: ``Example`` and ``SequenceExample``."""
    file = descriptor_pb2.FileDescriptorProto(
        name=_EXAMPLE_FILE, package=_PACKAGE, syntax="proto3", dependency=[_FEATURE_FILE]
    )
    example = file.message_type.add(name="Example")
    _field(example, "features", 1, _F.TYPE_MESSAGE, type_name=f"{_PACKAGE}.Features")
    sequence_example = file.message_type.add(name="SequenceExample")
    _field(sequence_example, "context", 1, _F.TYPE_MESSAGE, type_name=f"{_PACKAGE}.Features")
    _field(
        sequence_example,
        "feature_lists",
        2,
        _F.TYPE_MESSAGE,
        type_name=f"{_PACKAGE}.FeatureLists",
    )
    return file


POOL = descriptor_pool.DescriptorPool()
"""The private descriptor pool that holds ``feature.proto`` and ``example.proto``."""
POOL.Add(_feature_file())
POOL.Add(_example_file())


def _message_class(name: str) -> Any:
    return message_factory.GetMessageClass(POOL.FindMessageTypeByName(f"{_PACKAGE}.{name}"))


BytesList: Any = _message_class("BytesList")
"""``tensorflow.BytesList``: ``repeated bytes value = 1``."""
FloatList: Any = _message_class("FloatList")
"""``tensorflow.FloatList``: ``repeated float value = 1 [packed = true]``."""
Int64List: Any = _message_class("Int64List")
"""``tensorflow.Int64List``: ``repeated int64 value = 1 [packed = true]``."""
Feature: Any = _message_class("Feature")
"""``tensorflow.Feature``: ``oneof kind {bytes_list = 1; float_list = 2; int64_list = 3}``."""
Features: Any = _message_class("Features")
"""``tensorflow.Features``: ``map<string, Feature> feature = 1``."""
FeatureList: Any = _message_class("FeatureList")
"""``tensorflow.FeatureList``: ``repeated Feature feature = 1``."""
FeatureLists: Any = _message_class("FeatureLists")
"""``tensorflow.FeatureLists``: ``map<string, FeatureList> feature_list = 1``."""
Example: Any = _message_class("Example")
"""``tensorflow.Example``: ``Features features = 1``."""
SequenceExample: Any = _message_class("SequenceExample")
"""``tensorflow.SequenceExample``: ``Features context = 1; FeatureLists feature_lists = 2``."""

__all__ = [
    "POOL",
    "BytesList",
    "Example",
    "Feature",
    "FeatureList",
    "FeatureLists",
    "Features",
    "FloatList",
    "Int64List",
    "SequenceExample",
]


ExampleMessage = Any
"""A ``tensorflow.Example`` protobuf message (its class is built at run time, so it is typed loosely)."""

SequenceExampleMessage = Any
"""A ``tensorflow.SequenceExample`` protobuf message (typed loosely, like :data:`ExampleMessage`)."""


class ProtoMessage(Protocol):
    """Any protobuf message object: what ``from_proto`` accepts."""

    def SerializeToString(self, **kwargs: Any) -> bytes: ...  # noqa: N802 - protobuf's method name


def message_bytes(message: ProtoMessage, full_name: str) -> bytes:
    """The serialized bytes of ``message``, after checking it is a ``full_name`` message (from any descriptor pool)."""
    descriptor = getattr(message, "DESCRIPTOR", None)
    got = getattr(descriptor, "full_name", type(message).__name__)
    if got != full_name:
        raise RecordError(f"expected a {full_name} protobuf message, got {got}")
    return message.SerializeToString()
