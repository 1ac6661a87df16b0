"""Serialized messages: references built with protobuf's message classes (no TensorFlow needed),
and bytes that are not an Example."""

from __future__ import annotations

from typing import Any

from codegen.runtime.tf import proto

UNDECODABLE = b"\x0a\x05"
"""Bytes that are not an Example: its features field declares 5 bytes and none follow."""


def pb_lists(steps_of: dict[str, tuple[str, list[list[Any]]]]) -> bytes:
    """The deterministic protobuf serialization of a SequenceExample with the given feature lists:
    key -> (list kind, the flat values of each step)."""
    message = proto.SequenceExample()
    message.context.SetInParent()  # written even when empty, as by ``wire.sequence_example``
    message.feature_lists.SetInParent()
    for key, (kind, steps) in steps_of.items():
        feature_list = message.feature_lists.feature_list[key]
        feature_list.SetInParent()
        for values in steps:
            values_list = getattr(feature_list.feature.add(), kind)
            values_list.SetInParent()
            values_list.value.extend(values)
    return bytes(message.SerializeToString(deterministic=True))
