"""Property tests of the wire codec against protobuf (our message classes, upb backend).

* Random Examples and SequenceExamples: protobuf's deterministic serialization equals our encoders'
  bytes, and our parser reads back the values from deterministic and non-deterministic bytes.
* Hand-made valid encodings (chunked, packed and unpacked, reordered, merged, replaced oneof
  members, duplicate keys, unknown fields): our parser reads what protobuf reads.
* Random and mutated bytes: only :class:`RecordError` is ever raised, it is raised exactly when
  protobuf rejects the bytes, and whatever protobuf accepts parses to the same values.

In an ``Example`` a later kindless entry of a key leaves an earlier entry with a list in place, as
TensorFlow's parser does, where protobuf's map replaces it: the comparisons expect that deviation.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from google.protobuf import unknown_fields
from google.protobuf.message import DecodeError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codegen.errors import RecordError
from codegen.runtime.codec import wire
from codegen.runtime.tf import proto
from support.wire_bytes import INT_RANGES, Spec, mutated, split, tag

FAST = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

Normal = tuple[int, list[object]]
"""A decoded feature in a comparable form (floats as bit patterns, every NaN alike)."""

# --- strategies -------------------------------------------------------------------------------

int_lists = st.sampled_from(INT_RANGES).flatmap(
    lambda bounds: st.lists(st.integers(*bounds), max_size=50)
)
float_lists = st.lists(st.floats(width=32), max_size=40)
bytes_lists = st.lists(st.binary(max_size=12), max_size=6)
LISTS_BY_KIND: dict[int, st.SearchStrategy[list[Any]]] = {
    1: bytes_lists,
    2: float_lists,
    3: int_lists,
}
specs: st.SearchStrategy[Spec] = st.one_of(
    st.just((0, [])),
    int_lists.map(lambda v: (3, v)),
    float_lists.map(lambda v: (2, v)),
    bytes_lists.map(lambda v: (1, v)),
)
keys = st.text(max_size=5)
feature_maps = st.dictionaries(keys, specs, max_size=6)
step_lists = st.dictionaries(keys, st.lists(specs, max_size=4), max_size=4)


def ld(field: int, body: bytes) -> bytes:
    return tag(field, 2) + wire.encode_varint(len(body)) + body


def unknown_fields_of(first_field: int) -> st.SearchStrategy[bytes]:
    """One unknown field (numbers from ``first_field`` on) of any wire type, groups nested."""
    numbers = st.integers(first_field, first_field + 40)
    return st.one_of(
        st.tuples(numbers, st.integers(0, (1 << 64) - 1)).map(
            lambda t: tag(t[0], 0) + wire.encode_varint(t[1])
        ),
        st.tuples(numbers, st.binary(min_size=8, max_size=8)).map(lambda t: tag(t[0], 1) + t[1]),
        st.tuples(numbers, st.binary(max_size=6)).map(lambda t: ld(*t)),
        st.tuples(numbers, st.binary(min_size=4, max_size=4)).map(lambda t: tag(t[0], 5) + t[1]),
        st.tuples(numbers, numbers, st.integers(0, 300)).map(
            lambda t: (
                tag(t[0], 3)
                + tag(t[1], 3)
                + tag(1, 0)
                + wire.encode_varint(t[2])
                + tag(t[1], 4)
                + tag(t[0], 4)
            )
        ),
    )


# --- building and reading with protobuf ------------------------------------------------------


def pb_feature(spec: Spec) -> Any:
    kind, values = spec
    feature = proto.Feature()
    if kind:
        kind_list = getattr(feature, ("bytes_list", "float_list", "int64_list")[kind - 1])
        kind_list.SetInParent()
        kind_list.value.extend(values)
    return feature


def our_feature(spec: Spec, scalar: bool) -> bytes:
    """Our serialized Feature; single values go through the scalar encoders when ``scalar``."""
    kind, values = spec
    if kind == 0:
        return b""
    if kind == 1:
        return wire.bytes_scalar_feature(values[0]) if scalar else wire.bytes_feature(values)
    if kind == 2:
        if scalar:
            return wire.float_scalar_feature(values[0])
        return wire.float_feature(np.array(values, dtype=np.float32))
    if scalar:
        return wire.int64_scalar_feature(values[0])
    return wire.int64_feature(np.array(values, dtype=np.int64))


def normal_floats(values: Sequence[float] | np.ndarray[Any, Any]) -> list[object]:
    array = np.asarray(values, dtype=np.float32)
    return [
        "nan" if np.isnan(x) else int(bits)
        for x, bits in zip(array, array.view(np.uint32), strict=True)
    ]


def normal_spec(spec: Spec) -> Normal:
    kind, values = spec
    return (kind, normal_floats(values) if kind == 2 else list(values))


def normal_pb(feature: Any) -> Normal:
    kind = feature.WhichOneof("kind")
    if kind is None:
        return (0, [])
    values = list(getattr(feature, kind).value)
    index = ("bytes_list", "float_list", "int64_list").index(kind) + 1
    return (index, normal_floats(values) if index == 2 else values)


def normal_ours(kind: int, body: bytes) -> Normal:
    if kind == 0:
        return (0, [])
    if kind == 1:
        return (1, list(wire.decode_bytes_list(body)))
    if kind == 2:
        return (2, normal_floats(wire.decode_float_list(body)))
    return (3, wire.decode_int64_list(body).tolist())


def ours_of(parsed: dict[bytes, tuple[int, bytes]]) -> dict[str, Normal]:
    return {key.decode(): normal_ours(*value) for key, value in parsed.items()}


def pb_features_of(features: Any) -> dict[str, Normal]:
    return {key: normal_pb(feature) for key, feature in features.feature.items()}


def drops_map_entries(features: Any) -> bool:
    """Whether upb kept some map entry as an unknown field (it does so for entries with unknown
    fields, which protobuf's wire rules and our parser read as ordinary entries)."""
    return any(field.field_number == 1 for field in unknown_fields.UnknownFieldSet(features))


# --- encoding equals protobuf's deterministic serialization ----------------------------------


@FAST
@given(feature_maps, st.booleans())
def test_example_encoding_matches_protobuf(features: dict[str, Spec], scalar: bool) -> None:
    message = proto.Example(
        features=proto.Features(feature={k: pb_feature(s) for k, s in features.items()})
    )
    entries = [
        wire.map_entry(
            wire.key_field(key), our_feature(features[key], scalar and len(features[key][1]) == 1)
        )
        for key in wire.map_key_order(features)
    ]
    data = wire.example(entries)
    assert data == message.SerializeToString(deterministic=True)
    expected = {key: normal_spec(spec) for key, spec in features.items()}
    assert ours_of(wire.parse_example(data)) == expected
    assert ours_of(wire.parse_example(message.SerializeToString())) == expected


@FAST
@given(feature_maps, step_lists)
def test_sequence_example_encoding_matches_protobuf(
    context: dict[str, Spec], lists: dict[str, list[Spec]]
) -> None:
    message = proto.SequenceExample(context=proto.Features(), feature_lists=proto.FeatureLists())
    for key, spec in context.items():
        message.context.feature[key].CopyFrom(pb_feature(spec))
    for key, steps in lists.items():
        feature_list = message.feature_lists.feature_list[key]
        feature_list.SetInParent()
        for spec in steps:
            feature_list.feature.add().CopyFrom(pb_feature(spec))
    data = wire.sequence_example(
        [
            wire.map_entry(wire.key_field(k), our_feature(context[k], False))
            for k in wire.map_key_order(context)
        ],
        [
            wire.feature_list_entry(wire.key_field(k), [our_feature(s, False) for s in lists[k]])
            for k in wire.map_key_order(lists)
        ],
    )
    assert data == message.SerializeToString(deterministic=True)
    for encoded in (data, message.SerializeToString()):
        parsed_context, parsed_lists = wire.parse_sequence_example(encoded)
        assert ours_of(parsed_context) == {k: normal_spec(s) for k, s in context.items()}
        assert {
            k.decode(): [normal_ours(*step) for step in steps] for k, steps in parsed_lists.items()
        } == {k: [normal_spec(s) for s in steps] for k, steps in lists.items()}


# --- hand-made valid encodings ------------------------------------------------------------------


def padded_varint(draw: st.DrawFn, number: int) -> bytes:
    """The varint of ``number``, sometimes with redundant continuation bytes (still <= 10 bytes)."""
    encoded = wire.encode_varint(number)
    extra = draw(st.integers(0, 10 - len(encoded)))
    if not extra:
        return encoded
    return encoded[:-1] + bytes((encoded[-1] | 0x80,)) + b"\x80" * (extra - 1) + b"\x00"


def list_fields(draw: st.DrawFn, kind: int, values: list[Any]) -> list[bytes]:
    """The fields of a list body: values packed or not, in chunks, among unknown fields."""
    noise = st.one_of(
        unknown_fields_of(2),
        st.just(tag(1, 1) + bytes(8) if kind == 3 else tag(1, 0) + b"\x05"),  # wrong wire type
    )
    fields: list[bytes] = []
    start = 0
    while start < len(values) or draw(st.integers(0, 4)) == 0:
        chunk = values[start : start + draw(st.integers(0, 8))]
        start += len(chunk)
        if draw(st.integers(0, 3)) == 0:
            fields.append(draw(noise))
        if kind == 1:
            fields.extend(ld(1, value) for value in chunk)
        elif kind == 2:
            raw = [np.array([x], dtype="<f4").tobytes() for x in chunk]
            if draw(st.booleans()):
                fields.append(ld(1, b"".join(raw)))
            else:
                fields.extend(tag(1, 5) + item for item in raw)
        elif draw(st.booleans()):
            fields.append(ld(1, b"".join(padded_varint(draw, x & (1 << 64) - 1) for x in chunk)))
        else:
            fields.extend(tag(1, 0) + padded_varint(draw, x & (1 << 64) - 1) for x in chunk)
        if start >= len(values) and draw(st.booleans()):
            break
    return fields


def feature_fields(draw: st.DrawFn, spec: Spec) -> list[bytes]:
    """The fields of a Feature: replaced members of the oneof, then the list cut into pieces."""
    kind, values = spec
    noise = unknown_fields_of(4)
    fields: list[bytes] = [draw(noise) for _ in range(draw(st.integers(0, 1)))]
    if kind == 0:
        return fields
    decoys = draw(st.lists(st.sampled_from([1, 2, 3]), max_size=2))
    if decoys and decoys[-1] == kind:
        decoys.append(kind % 3 + 1)
    for decoy in decoys:
        decoy_values = draw(LISTS_BY_KIND[decoy])
        fields.append(ld(decoy, b"".join(list_fields(draw, decoy, decoy_values))))
    for piece in split(draw, list_fields(draw, kind, values)):
        fields.append(ld(kind, piece))
        if draw(st.integers(0, 3)) == 0:
            fields.append(draw(noise))
    return fields


def entry_bytes(draw: st.DrawFn, key: str, spec: Spec) -> bytes:
    """A map entry: key and value fields in any order, the value cut into merged pieces."""
    values = [ld(2, piece) for piece in split(draw, feature_fields(draw, spec))]
    if spec[0] == 0 and not values[0][2:] and draw(st.booleans()):
        values = []
    fields = list(values)
    if key or draw(st.booleans()):
        position = draw(st.integers(0, len(fields)))
        fields.insert(position, ld(1, key.encode()))
        if draw(st.integers(0, 4)) == 0:
            fields.insert(draw(st.integers(0, position)), ld(1, draw(keys).encode()))
    return ld(1, b"".join(fields))


@st.composite
def hand_made_examples(draw: st.DrawFn) -> tuple[bytes, dict[str, Spec], dict[str, Spec]]:
    """An Example with some keys repeated: its bytes, the features protobuf reads (the last entry
    of each key) and those TensorFlow reads (an earlier entry with a list stays when the last one
    is kindless)."""
    features = draw(feature_maps)
    kept = dict(features)
    noise = unknown_fields_of(2)
    fields: list[bytes] = []
    for key, spec in features.items():
        if draw(st.integers(0, 3)) == 0:
            earlier = draw(specs)
            fields.append(entry_bytes(draw, key, earlier))
            if spec[0] == 0 and earlier[0] != 0:
                kept[key] = earlier
        if draw(st.integers(0, 3)) == 0:
            fields.append(draw(noise))
        fields.append(entry_bytes(draw, key, spec))
    outer = [draw(noise) for _ in range(draw(st.integers(0, 1)))]
    for piece in split(draw, fields):
        outer.append(ld(1, piece))
        if draw(st.integers(0, 3)) == 0:
            outer.append(draw(noise))
    return b"".join(outer), features, kept


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hand_made_examples())
def test_hand_made_encodings_parse_like_protobuf_but_for_kept_lists(
    case: tuple[bytes, dict[str, Spec], dict[str, Spec]],
) -> None:
    data, features, kept = case
    assert ours_of(wire.parse_example(data)) == {
        key: normal_spec(spec) for key, spec in kept.items()
    }
    assert pb_features_of(proto.Example.FromString(data).features) == {
        key: normal_spec(spec) for key, spec in features.items()
    }


@FAST
@given(st.binary(max_size=6), st.booleans())
def test_keys_are_checked_for_utf8_like_protobuf(key: bytes, canonical: bool) -> None:
    entry = ld(1, key) + ld(2, ld(3, b"")) if canonical else ld(2, b"") + ld(1, key)
    check_example(ld(1, ld(1, entry)))
    check_sequence_example(ld(2, ld(1, entry)))


# --- random and mutated bytes -------------------------------------------------------------------


def upb_leniency(error: RecordError | None) -> bool:
    """Whether our rejection is one upb is known not to make: upb accepts a tag with field number 0
    inside an unknown group of a list body merged with a later piece (it rejects those bytes alone)."""
    return error is not None and "field number 0" in str(error)


def check_example(data: bytes) -> None:
    error: RecordError | None = None
    try:
        ours: dict[str, Normal] | None = ours_of(wire.parse_example(data))
    except RecordError as exc:
        ours, error = None, exc
    try:
        theirs = proto.Example.FromString(data)
    except DecodeError:
        assert ours is None
        return
    if upb_leniency(error):
        return
    if not drops_map_entries(theirs.features):
        assert_agrees_but_for_kept_lists(ours, pb_features_of(theirs.features))


def assert_agrees_but_for_kept_lists(
    ours: dict[str, Normal] | None, theirs: dict[str, Normal]
) -> None:
    """Our features equal protobuf's map, except where protobuf's last entry of a key has no kind
    and ours kept an earlier entry with a list (TensorFlow's rule for an ``Example``)."""
    assert ours is not None and ours.keys() == theirs.keys()
    for key, normal in theirs.items():
        if ours[key] != normal:
            assert normal == (0, []) and ours[key][0] != 0, key


def check_sequence_example(data: bytes) -> None:
    try:
        context, lists = wire.parse_sequence_example(data)
        ours: object = (
            ours_of(context),
            {k.decode(): [normal_ours(*step) for step in steps] for k, steps in lists.items()},
        )
        error: RecordError | None = None
    except RecordError as exc:
        ours, error = None, exc
    try:
        theirs = proto.SequenceExample.FromString(data)
    except DecodeError:
        assert ours is None
        return
    if upb_leniency(error):
        return
    if drops_map_entries(theirs.context) or drops_map_entries(theirs.feature_lists):
        return
    assert ours == (
        pb_features_of(theirs.context),
        {
            key: [normal_pb(feature) for feature in steps.feature]
            for key, steps in theirs.feature_lists.feature_list.items()
        },
    )


LISTS: list[tuple[Callable[[bytes], object], Any, Callable[[Any], object]]] = [
    (wire.decode_int64_list, proto.Int64List, lambda v: v.tolist()),
    (wire.decode_float_list, proto.FloatList, normal_floats),
    (wire.decode_bytes_list, proto.BytesList, list),
]


def check_lists(body: bytes) -> None:
    for decode, message_class, normal in LISTS:
        try:
            ours: object = normal(decode(body))
        except RecordError:
            ours = None
        try:
            values = list(message_class.FromString(body).value)
        except DecodeError:
            assert ours is None
            continue
        theirs = normal_floats(values) if message_class is proto.FloatList else values
        assert ours == theirs


@FAST
@given(st.binary(max_size=80))
def test_random_bytes_parse_like_protobuf(data: bytes) -> None:
    check_example(data)
    check_sequence_example(data)
    check_lists(data)


valid_examples = hand_made_examples().map(lambda case: case[0])
valid_lists = st.one_of(
    int_lists.map(lambda v: bytes(proto.Int64List(value=v).SerializeToString())),
    float_lists.map(lambda v: bytes(proto.FloatList(value=v).SerializeToString())),
    bytes_lists.map(lambda v: bytes(proto.BytesList(value=v).SerializeToString())),
)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated(valid_examples))
def test_mutated_examples_parse_like_protobuf(data: bytes) -> None:
    check_example(data)
    check_sequence_example(data)


@settings(max_examples=150, deadline=None)
@given(mutated(valid_lists))
def test_mutated_list_bodies_decode_like_protobuf(body: bytes) -> None:
    check_lists(body)
