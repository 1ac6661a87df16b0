"""The Example wire codec on chosen cases: encodings, decoding rules, every malformed input."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from google.protobuf.message import DecodeError

from codegen.errors import RecordError
from codegen.runtime.codec import wire
from codegen.runtime.codec.varint import (
    GROUPS_CHUNK_BYTES,
    SMALL_LONG_DECODE_BYTES,
    encode_packed_int64,
)
from codegen.runtime.tf import proto

INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1


def ld(tag: int, body: bytes) -> bytes:
    """A length-delimited field: one tag byte, the varint length, the body."""
    return bytes((tag,)) + wire.encode_varint(len(body)) + body


def entry(key: bytes, *fields: bytes) -> bytes:
    """A ``Features`` map entry field with the key field followed by ``fields``."""
    return ld(0x0A, ld(0x0A, key) + b"".join(fields))


def example_of(*entries: bytes) -> bytes:
    return ld(0x0A, b"".join(entries))


def value(feature: bytes) -> bytes:
    return ld(0x12, feature)


def int64_body(*values: int) -> bytes:
    return ld(0x0A, b"".join(wire.encode_varint(v) for v in values))


def pb_feature(build: Callable[[object], None]) -> bytes:
    feature = proto.Feature()
    build(feature)
    return bytes(feature.SerializeToString())


def pb_example(features: dict[str, object]) -> bytes:
    message = proto.Example(features=proto.Features(feature=features))
    return bytes(message.SerializeToString(deterministic=True))


# --- encoding ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("number", "expected"),
    [
        (0, b"\x00"),
        (1, b"\x01"),
        (127, b"\x7f"),
        (128, b"\x80\x01"),
        (300, b"\xac\x02"),
        (INT64_MAX, b"\xff" * 8 + b"\x7f"),
        (-1, b"\xff" * 9 + b"\x01"),
        (INT64_MIN, b"\x80" * 9 + b"\x01"),
        ((1 << 64) - 1, b"\xff" * 9 + b"\x01"),
    ],
)
def test_encode_varint(number: int, expected: bytes) -> None:
    assert wire.encode_varint(number) == expected


@pytest.mark.parametrize("number", [1 << 64, INT64_MIN - 1])
def test_encode_varint_rejects_out_of_range(number: int) -> None:
    with pytest.raises(RecordError, match="outside the int64/uint64 range"):
        wire.encode_varint(number)


def test_encode_varint_rejects_non_integers() -> None:
    with pytest.raises(RecordError, match="expected an integer, got float"):
        wire.encode_varint(1.5)  # type: ignore[arg-type]


INT64_LISTS = [
    [],
    [0],
    [5, 1, 127],
    [-1],
    [INT64_MIN, INT64_MAX, 0, -1, 1],
    list(range(0, 256)),
    list(range(-40, 40)),
    [1 << 40] * 50,
    [-5] * 50,
    [1, 1 << 62, 3] * 20,
]


@pytest.mark.parametrize("values", INT64_LISTS, ids=lambda v: f"len{len(v)}")
def test_int64_feature_matches_protobuf(values: list[int]) -> None:
    expected = pb_feature(lambda f: f.int64_list.value.extend(values))  # type: ignore[attr-defined]
    assert wire.int64_feature(np.array(values, dtype=np.int64)) == expected


def test_int64_feature_flattens_and_accepts_narrow_integer_dtypes() -> None:
    matrix = np.array([[1, 200], [-3, 4]], dtype=np.int16)
    expected = pb_feature(lambda f: f.int64_list.value.extend([1, 200, -3, 4]))  # type: ignore[attr-defined]
    assert wire.int64_feature(matrix) == expected
    assert wire.int64_feature(np.array([True, False])) == wire.int64_feature(np.array([1, 0]))
    assert wire.int64_feature(np.array([], dtype=np.float64)) == b"\x1a\x00"  # type: ignore[arg-type]


def test_int64_feature_rejects_non_integers_and_huge_unsigned() -> None:
    with pytest.raises(RecordError, match="expected integer values, got an array of float64"):
        wire.int64_feature(np.array([1.5]))
    with pytest.raises(RecordError, match="outside the int64 range"):
        wire.int64_feature(np.array([1 << 63], dtype=np.uint64))


@pytest.mark.parametrize("number", [0, 1, 127, 128, 300, -1, INT64_MIN, INT64_MAX])
def test_int64_scalar_feature_matches_protobuf(number: int) -> None:
    expected = pb_feature(lambda f: f.int64_list.value.append(number))  # type: ignore[attr-defined]
    assert wire.int64_scalar_feature(number) == expected
    assert wire.int64_scalar_feature(np.int64(number)) == expected  # type: ignore[arg-type]


def test_int64_scalar_feature_rejects_bad_values() -> None:
    with pytest.raises(RecordError, match="outside the int64 range"):
        wire.int64_scalar_feature(1 << 63)
    with pytest.raises(RecordError, match="expected an integer, got str"):
        wire.int64_scalar_feature("3")  # type: ignore[arg-type]


FLOAT_LISTS = [[], [0.0], [1.5, -2.25, 3.0e38], [float("inf"), float("-inf"), -0.0], [0.1] * 40]


@pytest.mark.parametrize("values", FLOAT_LISTS, ids=lambda v: f"len{len(v)}")
def test_float_feature_matches_protobuf(values: list[float]) -> None:
    expected = pb_feature(lambda f: f.float_list.value.extend(values))  # type: ignore[attr-defined]
    assert wire.float_feature(np.array(values, dtype=np.float32)) == expected
    assert wire.float_feature(np.array(values, dtype=np.float64)) == expected


def test_float_feature_rounds_like_protobuf_and_keeps_nan_bits() -> None:
    values = [1e300, -1e300, 1e-50, 3.40282357e38, 0.1]
    expected = pb_feature(lambda f: f.float_list.value.extend(values))  # type: ignore[attr-defined]
    assert wire.float_feature(np.array(values)) == expected
    nan = np.array([0x7FC00001], dtype=np.uint32).view(np.float32)
    assert wire.float_feature(nan).endswith(b"\x01\x00\xc0\x7f")


def test_float_feature_rejects_non_numbers() -> None:
    with pytest.raises(RecordError, match="expected float values, got an array of <U1"):
        wire.float_feature(np.array(["a"]))


@pytest.mark.parametrize("number", [0.0, 1.0, -2.5, 0.1, 3.4028235e38, 1e300, -1e300, 1e-60])
def test_float_scalar_feature_matches_protobuf(number: float) -> None:
    expected = pb_feature(lambda f: f.float_list.value.append(number))  # type: ignore[attr-defined]
    assert wire.float_scalar_feature(number) == expected


def test_float_scalar_feature_rejects_non_numbers() -> None:
    with pytest.raises(RecordError, match="expected a float, got str"):
        wire.float_scalar_feature("1")  # type: ignore[arg-type]


BYTES_LISTS = [
    [],
    [b""],
    [b"abc", b"", b"\x00\xff"],
    [b"x" * 300, b"y"],
    [bytes([i]) for i in range(40)],
]


@pytest.mark.parametrize("values", BYTES_LISTS, ids=lambda v: f"len{len(v)}")
def test_bytes_feature_matches_protobuf(values: list[bytes]) -> None:
    expected = pb_feature(lambda f: f.bytes_list.value.extend(values))  # type: ignore[attr-defined]
    assert wire.bytes_feature(values) == expected
    assert wire.bytes_feature([bytearray(v) for v in values]) == expected  # type: ignore[misc]


@pytest.mark.parametrize("data", [b"", b"abc", b"z" * 200])
def test_bytes_scalar_feature_matches_protobuf(data: bytes) -> None:
    expected = pb_feature(lambda f: f.bytes_list.value.append(data))  # type: ignore[attr-defined]
    assert wire.bytes_scalar_feature(data) == expected
    assert wire.bytes_scalar_feature(memoryview(data)) == expected  # type: ignore[arg-type]


def test_bytes_features_reject_text() -> None:
    with pytest.raises(RecordError, match="bytes_feature: expected bytes, got str"):
        wire.bytes_feature(["a"])  # type: ignore[list-item]
    with pytest.raises(RecordError, match="bytes_scalar_feature: expected bytes, got str"):
        wire.bytes_scalar_feature("a")  # type: ignore[arg-type]


def test_key_field_encodes_utf8_and_rejects_lone_surrogates() -> None:
    assert wire.key_field("") == b"\x0a\x00"
    assert wire.key_field("é中") == b"\x0a\x05" + "é中".encode()
    assert wire.key_field("k" * 200)[:3] == b"\x0a\xc8\x01"
    with pytest.raises(RecordError, match="not encodable as UTF-8"):
        wire.key_field("\ud800")


def test_example_matches_protobuf_with_every_kind_and_unicode_keys() -> None:
    features = {
        "label": proto.Feature(int64_list=proto.Int64List(value=[3])),
        "ab": proto.Feature(float_list=proto.FloatList(value=[0.5, 2.0])),
        "a": proto.Feature(bytes_list=proto.BytesList(value=[b"x", b""])),
        "": proto.Feature(),
        "ключ": proto.Feature(int64_list=proto.Int64List()),
        "中文": proto.Feature(int64_list=proto.Int64List(value=[-7] * 20)),
    }
    encoded = {
        "label": wire.int64_scalar_feature(3),
        "ab": wire.float_feature(np.array([0.5, 2.0], dtype=np.float32)),
        "a": wire.bytes_feature([b"x", b""]),
        "": b"",
        "ключ": wire.int64_feature(np.array([], dtype=np.int64)),
        "中文": wire.int64_feature(np.full(20, -7, dtype=np.int64)),
    }
    order = wire.map_key_order(encoded)
    assert order == ["ab", "a", "label", "ключ", "中文", ""]
    data = wire.example(wire.map_entry(wire.key_field(k), encoded[k]) for k in order)
    assert data == pb_example(features)


def test_map_key_order_puts_longer_keys_before_their_prefixes() -> None:
    keys = ["b", "a", "ab", "", "abc", "B", "é", "e"]
    assert wire.map_key_order(keys) == ["B", "abc", "ab", "a", "b", "e", "é", ""]
    message = proto.Features(feature={k: proto.Feature() for k in keys})
    data = bytes(proto.Example(features=message).SerializeToString(deterministic=True))
    assert list(wire.parse_example(data)) == [k.encode() for k in wire.map_key_order(keys)]


def test_empty_example_and_sequence_example_match_protobuf_with_set_fields() -> None:
    assert wire.example([]) == pb_example({}) == b"\x0a\x00"
    message = proto.SequenceExample(context=proto.Features(), feature_lists=proto.FeatureLists())
    assert wire.sequence_example([], []) == message.SerializeToString(deterministic=True)


def test_sequence_example_matches_protobuf() -> None:
    message = proto.SequenceExample()
    message.context.feature["id"].bytes_list.value.append(b"q1")
    steps = message.feature_lists.feature_list["tokens"].feature
    steps.add().int64_list.value.extend([1, 2])
    steps.add().int64_list.value.extend([])
    steps.add()
    message.feature_lists.feature_list["empty"].SetInParent()
    data = wire.sequence_example(
        [wire.map_entry(wire.key_field("id"), wire.bytes_scalar_feature(b"q1"))],
        [
            wire.feature_list_entry(wire.key_field("empty"), []),
            wire.feature_list_entry(
                wire.key_field("tokens"),
                [wire.int64_feature(np.array([1, 2])), wire.int64_feature(np.array([])), b""],
            ),
        ],
    )
    assert data == message.SerializeToString(deterministic=True)


# --- decoding ---------------------------------------------------------------------------------


def test_parse_example_of_protobuf_bytes() -> None:
    features = {
        "i": proto.Feature(int64_list=proto.Int64List(value=[INT64_MIN, INT64_MAX, -1, 0])),
        "f": proto.Feature(float_list=proto.FloatList(value=[1.5, -0.0])),
        "b": proto.Feature(bytes_list=proto.BytesList(value=[b"", b"\xff" * 200])),
        "none": proto.Feature(),
        "empty": proto.Feature(float_list=proto.FloatList()),
        "ключ": proto.Feature(int64_list=proto.Int64List(value=list(range(300)))),
    }
    parsed = wire.parse_example(pb_example(features))
    assert set(parsed) == {k.encode() for k in features}
    assert [parsed[k.encode()][0] for k in ("b", "f", "i", "none", "empty")] == [1, 2, 3, 0, 2]
    assert parsed[b"none"] == (0, b"") and parsed[b"empty"] == (2, b"")
    ints = wire.decode_int64_list(parsed[b"i"][1])
    assert ints.dtype == np.int64 and ints.tolist() == [INT64_MIN, INT64_MAX, -1, 0]
    floats = wire.decode_float_list(parsed[b"f"][1])
    assert floats.dtype == np.float32 and floats.tolist() == [1.5, -0.0]
    assert np.signbit(floats[1])
    assert wire.decode_bytes_list(parsed[b"b"][1]) == [b"", b"\xff" * 200]
    assert wire.decode_int64_list(parsed["ключ".encode()][1]).tolist() == list(range(300))
    assert wire.decode_float_list(b"").shape == (0,)
    assert wire.decode_int64_list(b"").shape == (0,)
    assert wire.decode_bytes_list(b"") == []


def test_parse_example_of_empty_messages() -> None:
    assert wire.parse_example(b"") == {}
    assert wire.parse_example(b"\x0a\x00") == {}
    assert wire.parse_example(b"\x0a\x00\x0a\x00") == {}


@pytest.mark.parametrize(
    "values",
    [[7], list(range(100)), list(range(100, 400)), [-1] * 30, [1 << 40, 3] * 30, [INT64_MIN] * 3],
    ids=lambda v: f"len{len(v)}",
)
def test_decoded_arrays_are_writable_and_do_not_share_the_input(values: list[int]) -> None:
    body = int64_body(*values)
    float_body = ld(0x0A, np.array(values, dtype="<f4").tobytes())
    ints = wire.decode_int64_list(body)
    floats = wire.decode_float_list(float_body)
    for array, source in ((ints, body), (floats, float_body)):
        assert array.flags.writeable
        assert not np.shares_memory(array, np.frombuffer(source, np.uint8))
        array[0] = 1
    assert ints.tolist()[1:] == values[1:]
    assert wire.decode_int64_list(body).tolist() == values


def test_int64_lists_packed_unpacked_and_chunked() -> None:
    body = (
        int64_body(1, 2)
        + b"\x08\x03"
        + b"\x08" + wire.encode_varint(-4)
        + int64_body(*range(5, 40))
        + int64_body()
        + b"\x08\x28"
    )  # fmt: skip
    expected = [1, 2, 3, -4, *range(5, 41)]
    assert wire.decode_int64_list(body).tolist() == expected
    assert proto.Int64List.FromString(body).value == expected


def test_float_lists_packed_unpacked_and_chunked() -> None:
    packed = np.array([1.0, 2.0], dtype="<f4").tobytes()
    single = np.array([3.5], dtype="<f4").tobytes()
    body = ld(0x0A, packed) + b"\x0d" + single + ld(0x0A, b"") + b"\x0d" + single
    assert wire.decode_float_list(body).tolist() == [1.0, 2.0, 3.5, 3.5]


def test_lists_skip_unknown_fields_and_wrong_wire_types() -> None:
    unknown = (
        b"\x10\x05"
        + b"\x19"
        + bytes(8)
        + b"\x25"
        + bytes(4)
        + ld(0x2A, b"zz")
        + b"\x33\x08\x01\x34"
    )
    assert wire.decode_int64_list(unknown + b"\x09" + bytes(8) + int64_body(9)).tolist() == [9]
    floats = unknown + b"\x08\x01" + ld(0x0A, np.array([2.0], "<f4").tobytes())
    assert wire.decode_float_list(floats).tolist() == [2.0]
    assert wire.decode_bytes_list(unknown + b"\x08\x01" + b"\x0d" + bytes(4) + ld(0x0A, b"v")) == [
        b"v"
    ]


def test_unknown_fields_of_every_wire_type_at_every_level() -> None:
    unknown = (
        b"\x78\x96\x01"  # field 15 varint
        + b"\x79" + bytes(8)  # field 15 fixed64
        + b"\x7d" + bytes(4)  # field 15 fixed32
        + ld(0x7A, b"\x00\xff")  # field 15 length-delimited
        + b"\x7b" + b"\x0b\x08\x01\x0c" + b"\x13\x14" + b"\x7c"  # field 15 group, nested groups
        + b"\xf8\x07\x01"  # field 127 with a two-byte tag
    )  # fmt: skip
    feature = unknown + ld(0x1A, unknown + int64_body(4) + unknown) + unknown
    data = unknown + ld(0x0A, unknown + entry(b"k", value(feature)) + unknown) + unknown
    assert wire.parse_example(data) == {b"k": (3, unknown + int64_body(4) + unknown)}
    assert wire.decode_int64_list(wire.parse_example(data)[b"k"][1]).tolist() == [4]
    assert proto.Example.FromString(data).features.feature["k"].int64_list.value == [4]


@pytest.mark.parametrize("shift", [0, 1, 5, 9])
def test_long_packed_int64_runs_decode_across_pieces(shift: int) -> None:
    """Runs of several pieces, cut at varints that straddle a piece's end in various places."""
    values = np.resize(np.array([-1, 1 << 40, 300, 5, INT64_MIN, 1 << 62], np.int64), 9000)
    payload = b"\x01" * shift + wire.encode_varint(1 << 50) * 40 + encode_packed_int64(values)
    body = ld(0x0A, payload)
    expected = [1] * shift + [1 << 50] * 40 + values.tolist()
    assert len(body) > 4 * GROUPS_CHUNK_BYTES
    assert proto.Int64List.FromString(body).value == expected
    for decode in (wire.decode_int64_list, wire.PURE_PYTHON.decode_int64_list):
        assert decode(body).tolist() == expected


@pytest.mark.parametrize("depth", [1, 31, 32, 33, 5000])
def test_deeply_nested_unknown_groups_are_skipped(depth: int) -> None:
    groups = b"\x13" + b"\x0b" * depth + b"\x08\x01" + b"\x0c" * depth + b"\x14"
    data = example_of(entry(b"k", LISTED)) + groups
    for parse in (wire.parse_example, wire.PURE_PYTHON.parse_example):
        assert parse(data) == {b"k": (3, int64_body(5))}
    mismatched = b"\x13" + b"\x0b\x1b" * depth + b"\x1c" + b"\x1c"
    unclosed = b"\x13" + b"\x0b" * depth
    for parse in (wire.parse_example, wire.PURE_PYTHON.parse_example):
        with pytest.raises(
            RecordError,
            match=rf"end-group tag of field 3 at byte offset {2 * depth + 2} does not match the "
            rf"group of field 1 opened at byte offset {2 * depth - 1}$",
        ):
            parse(mismatched)
        with pytest.raises(
            RecordError,
            match=rf"the group of field 1 opened at byte offset {depth} is not closed before "
            rf"byte offset {depth + 1}$",
        ):
            parse(unclosed)


GROUPS_WITH_FIELD_0 = {
    "fixed32": b"\x0b\x05\x00\x00\x00\x00\x0c",
    "varint tag byte 0": b"\x0b\x00\x01\x0c",
    "length-delimited": b"\x0b\x02\x01\x00\x0c",
    "a group of field 0": b"\x0b\x03\x04\x0c",
    "in a nested group": b"\x0b\x13\x05\x00\x00\x00\x00\x14\x0c",
}
"""Unknown groups (field 1 or 2) holding a field of number 0: protobuf checks no field number inside
a group, only that each end-group tag closes the group it matches."""


@pytest.mark.parametrize("group", GROUPS_WITH_FIELD_0.values(), ids=list(GROUPS_WITH_FIELD_0))
def test_a_field_number_0_inside_an_unknown_group_is_skipped_as_protobuf_does(group: bytes) -> None:
    assert proto.Int64List.FromString(group + int64_body(4)).value == [4]
    for decode in (wire.decode_int64_list, wire.PURE_PYTHON.decode_int64_list):
        assert decode(group + int64_body(4)).tolist() == [4]
    data = example_of(entry(b"k", LISTED)) + group
    assert proto.Example.FromString(data).features.feature["k"].int64_list.value == [5]
    for parse in (wire.parse_example, wire.PURE_PYTHON.parse_example):
        assert parse(data) == {b"k": (3, int64_body(5))}
    for decode in (wire.decode_int64_list, wire.PURE_PYTHON.decode_int64_list):
        with pytest.raises(RecordError, match="field number 0 in the tag at byte offset 0$"):
            decode(b"\x05" + bytes(4))  # outside a group it is malformed, as for protobuf
        with pytest.raises(RecordError, match="end-group tag of field 0 at byte offset 1 does not"):
            decode(b"\x0b\x04\x0c")


def test_unknown_fields_inside_a_map_entry_are_skipped() -> None:
    """Protobuf's wire rules keep the entry (upb's Python parser instead drops such an entry)."""
    data = example_of(entry(b"k", b"\x18\x01", value(ld(0x1A, int64_body(4))), b"\x25" + bytes(4)))
    assert wire.parse_example(data) == {b"k": (3, int64_body(4))}


def test_duplicate_keys_last_wins_and_features_fields_merge() -> None:
    first = entry(b"a", value(ld(0x1A, int64_body(1))))
    second = entry(b"b", value(ld(0x12, b"")))
    again = entry(b"a", value(ld(0x0A, ld(0x0A, b"x"))))
    data = ld(0x0A, first + second) + b"\x10\x01" + ld(0x0A, again)
    assert wire.parse_example(data) == {b"a": (1, ld(0x0A, b"x")), b"b": (2, b"")}
    assert list(wire.parse_example(data)) == [b"a", b"b"]


LISTED = value(ld(0x1A, int64_body(5)))
"""A map-entry value field: a Feature holding an Int64List of [5]."""


def test_a_kindless_repeat_keeps_an_earlier_entry_with_a_list_like_tensorflow() -> None:
    kept = example_of(entry(b"k", LISTED), entry(b"k", value(b"")), entry(b"k"))
    assert wire.parse_example(kept) == {b"k": (3, int64_body(5))}
    assert proto.Example.FromString(kept).features.feature["k"].WhichOneof("kind") is None
    non_canonical = example_of(entry(b"k", LISTED), ld(0x0A, value(b"\x20\x01") + ld(0x0A, b"k")))
    assert wire.parse_example(non_canonical) == {b"k": (3, int64_body(5))}
    replaced = example_of(entry(b"k", LISTED), entry(b"k"), entry(b"k", value(ld(0x12, b""))))
    assert wire.parse_example(replaced) == {b"k": (2, b"")}
    assert wire.parse_example(example_of(entry(b"k"), entry(b"k", LISTED))) == {
        b"k": (3, int64_body(5))
    }


def test_sequence_examples_keep_protobufs_last_entry_rule() -> None:
    """TensorFlow's SequenceExample parser lets a later kindless context entry or an empty
    feature list replace an earlier one."""
    step = ld(0x12, ld(0x0A, int64_body(5)))
    data = ld(0x0A, entry(b"c", LISTED) + entry(b"c")) + ld(
        0x12, ld(0x0A, ld(0x0A, b"s") + ld(0x12, step)) + ld(0x0A, ld(0x0A, b"s"))
    )
    assert wire.parse_sequence_example(data) == ({b"c": (0, b"")}, {b"s": []})


def test_entry_without_key_value_or_kind() -> None:
    data = example_of(
        ld(0x0A, value(ld(0x1A, b""))), ld(0x0A, ld(0x0A, b"k")), entry(b"n", value(b""))
    )
    assert wire.parse_example(data) == {b"": (3, b""), b"k": (0, b""), b"n": (0, b"")}
    message = proto.Example.FromString(data).features.feature
    assert (
        message[""].WhichOneof("kind") == "int64_list" and message["k"].WhichOneof("kind") is None
    )


def test_entry_fields_in_any_order_repeated_key_and_merged_values() -> None:
    data = example_of(
        ld(
            0x0A,
            value(ld(0x1A, int64_body(1)))
            + ld(0x0A, b"x")
            + ld(0x0A, b"key")
            + value(ld(0x1A, int64_body(2))),
        )
    )
    kind, body = wire.parse_example(data)[b"key"]
    assert kind == 3 and wire.decode_int64_list(body).tolist() == [1, 2]
    assert proto.Example.FromString(data).features.feature["key"].int64_list.value == [1, 2]


def test_oneof_later_kind_replaces_and_same_kind_merges() -> None:
    feature = (
        ld(0x1A, int64_body(1)) + ld(0x12, b"") + ld(0x1A, int64_body(2)) + ld(0x1A, b"\x08\x03")
    )
    kind, body = wire.parse_example(example_of(entry(b"k", value(feature))))[b"k"]
    assert kind == 3 and wire.decode_int64_list(body).tolist() == [2, 3]
    replaced = ld(0x0A, ld(0x0A, b"s")) + ld(0x12, ld(0x0A, np.array([1.0], "<f4").tobytes()))
    kind, body = wire.parse_example(example_of(entry(b"k", value(replaced))))[b"k"]
    assert kind == 2 and wire.decode_float_list(body).tolist() == [1.0]


def test_non_canonical_encodings() -> None:
    entry_body = ld(0x0A, b"k") + value(ld(0x1A, int64_body(5)))
    long_tag_entry = b"\x8a\x00" + wire.encode_varint(len(entry_body)) + entry_body
    data = b"\x8a\x80\x00" + wire.encode_varint(len(long_tag_entry)) + long_tag_entry
    assert wire.parse_example(data) == {b"k": (3, int64_body(5))}
    padded = ld(0x0A, b"\x85\x80\x80\x00")  # 5 in four bytes
    assert wire.decode_int64_list(padded).tolist() == [5]


def test_sequence_example_parsing() -> None:
    message = proto.SequenceExample()
    message.context.feature["c"].float_list.value.append(1.0)
    steps = message.feature_lists.feature_list["s"].feature
    steps.add().bytes_list.value.append(b"a")
    steps.add()
    steps.add().int64_list.value.append(3)
    message.feature_lists.feature_list["empty"].SetInParent()
    context, lists = wire.parse_sequence_example(message.SerializeToString())
    assert context == {b"c": (2, ld(0x0A, np.array([1.0], "<f4").tobytes()))}
    assert lists == {b"s": [(1, ld(0x0A, b"a")), (0, b""), (3, int64_body(3))], b"empty": []}


def test_sequence_example_merging_rules() -> None:
    step = ld(0x0A, ld(0x1A, int64_body(1)))
    lists_entry = ld(0x0A, ld(0x0A, b"s") + ld(0x12, step) + ld(0x12, step + step))
    replaced = ld(0x0A, ld(0x0A, b"t") + ld(0x12, step))
    again = ld(0x0A, ld(0x0A, b"t") + ld(0x12, b""))
    data = (
        ld(0x0A, entry(b"c", value(ld(0x1A, b""))))
        + ld(0x12, lists_entry + replaced)
        + b"\x18\x01"
        + ld(0x12, again)
        + ld(0x0A, entry(b"d", value(b"")))
    )
    context, lists = wire.parse_sequence_example(data)
    assert context == {b"c": (3, b""), b"d": (0, b"")}
    assert lists == {b"s": [(3, int64_body(1))] * 3, b"t": []}
    message = proto.SequenceExample.FromString(data)
    assert len(message.feature_lists.feature_list["s"].feature) == 3
    assert len(message.feature_lists.feature_list["t"].feature) == 0


# --- malformed input --------------------------------------------------------------------------

GOOD_ENTRY = entry(b"k", value(ld(0x1A, int64_body(1))))

MALFORMED_EXAMPLES = {
    "truncated tag": (b"\x80", r"Example: truncated varint at byte offset 0"),
    "truncated varint": (b"\x08\x80", r"Example: truncated varint at byte offset 1"),
    "varint longer than 10 bytes": (
        b"\x08" + b"\xff" * 10 + b"\x01",
        r"byte offset 1 is longer than 10",
    ),
    "tag longer than 32 bits": (
        b"\x88\x80\x80\x80\x70\x01",
        r"tag at byte offset 0 is longer than 32",
    ),
    "tag of six bytes": (
        b"\x88\x80\x80\x80\x80\x00\x01",
        r"tag at byte offset 0 is longer than 32",
    ),
    "field number 0": (b"\x00\x01", r"field number 0 in the tag at byte offset 0"),
    "length past the end": (b"\x0a\x05\x0a\x00", r"length 5 at byte offset 1 runs past the end"),
    "huge length": (
        b"\x12\x80\x80\x80\x80\x80\x80\x80\x80\x10",
        r"length 1152921504606846976 at byte",
    ),
    "wire type 6": (b"\x0e", r"invalid wire type 6 in the tag at byte offset 0"),
    "wire type 7": (b"\x08\x01\x0f", r"invalid wire type 7 in the tag at byte offset 2"),
    "unmatched end group": (b"\x0c", r"end-group tag at byte offset 0 without a matching start"),
    "mismatched end group": (
        b"\x0b\x14",
        r"end-group tag of field 2 at byte offset 1 does not match",
    ),
    "unclosed group": (b"\x0b\x08\x01", r"group of field 1 opened at byte offset 0 is not closed"),
    "truncated fixed64": (b"\x09" + bytes(7), r"truncated fixed64 value at byte offset 1"),
    "truncated fixed32": (b"\x0d" + bytes(3), r"truncated fixed32 value at byte offset 1"),
    "end group in features": (
        ld(0x0A, GOOD_ENTRY + b"\x0c"),
        r"Example.features: end-group tag at",
    ),
    "entry past features": (ld(0x0A, GOOD_ENTRY[:-1]) + GOOD_ENTRY[-1:], r"runs past the end"),
    "truncated entry length": (b"\x0a\x02\x0a\x80", r"Example.features: truncated varint at byte"),
    "bad key": (
        example_of(entry(b"\xff\xfe", value(b""))),
        r"map key at byte offset 6 is not valid UTF-8",
    ),
    "bad second key": (
        example_of(ld(0x0A, ld(0x0A, b"\xc3") + ld(0x0A, b"k"))),
        "is not valid UTF-8",
    ),
    "feature past entry": (
        example_of(ld(0x0A, ld(0x0A, b"k") + b"\x12\x05\x1a\x00")),
        r"runs past",
    ),
    "bad field in feature": (
        example_of(entry(b"k", value(b"\x1a\x00\x0f"))),
        r"invalid wire type 7",
    ),
    "malformed list replaced by a later kind": (
        example_of(entry(b"k", value(ld(0x1A, b"\x0a\x05\x01") + ld(0x12, b"")))),
        r"the Int64List at byte offset 11 \(replaced by a later member of Feature.kind\) is "
        r"malformed: Int64List: length 5 at byte offset 1",
    ),
    "malformed list of a replaced duplicate key": (
        example_of(entry(b"k", value(ld(0x0A, b"\x0a\x09"))), entry(b"k", value(b""))),
        r"earlier entry of key b'k' is malformed: BytesList: length 9 at byte offset 1",
    ),
    "malformed list of a replaced duplicate key (any layout)": (
        example_of(ld(0x0A, value(ld(0x1A, b"\x0d")) + ld(0x0A, b"k")), entry(b"k", value(b""))),
        r"earlier entry of key b'k' is malformed: Int64List: truncated fixed32",
    ),
    "group split across merged lists": (
        example_of(entry(b"k", value(ld(0x1A, b"\x0b") + ld(0x1A, b"\x0c")))),
        r"Int64List: the group of field 1 opened at byte offset 11 is not closed",
    ),
}


@pytest.mark.parametrize("case", MALFORMED_EXAMPLES, ids=str)
def test_malformed_examples_raise_record_error_like_protobuf_rejects(case: str) -> None:
    data, message = MALFORMED_EXAMPLES[case]
    with pytest.raises(RecordError, match=message):
        wire.parse_example(data)
    with pytest.raises(DecodeError):
        proto.Example.FromString(data)


def test_malformed_sequence_examples() -> None:
    bad_list = ld(0x12, ld(0x0A, ld(0x0A, b"s") + ld(0x12, b"\x0a\x05")))
    with pytest.raises(
        RecordError, match=r"SequenceExample.feature_lists: length 5 at byte offset 10"
    ):
        wire.parse_sequence_example(bad_list)
    with pytest.raises(RecordError, match=r"SequenceExample.context: end-group tag"):
        wire.parse_sequence_example(ld(0x0A, b"\x0c"))
    with pytest.raises(RecordError, match=r"SequenceExample: invalid wire type 6"):
        wire.parse_sequence_example(b"\x0e")
    with pytest.raises(RecordError, match=r"not valid UTF-8"):
        wire.parse_sequence_example(ld(0x12, ld(0x0A, ld(0x0A, b"\x80"))))
    bad_step = ld(0x0A, ld(0x0A, b"s") + ld(0x12, ld(0x0A, ld(0x12, b"\x0a\x03\x00"))))
    replaced = ld(0x12, bad_step + ld(0x0A, ld(0x0A, b"s")))
    with pytest.raises(RecordError, match=r"a step of an earlier entry of key b's' is malformed"):
        wire.parse_sequence_example(replaced)
    with pytest.raises(DecodeError):
        proto.SequenceExample.FromString(replaced)


FILLER = wire.encode_varint(1 << 40) * (SMALL_LONG_DECODE_BYTES // 6 + 1)
"""Enough six-byte varints to take the numpy path of the packed int64 decoder."""


def packed_case(payload: bytes, offset_in_payload: int) -> tuple[bytes, int]:
    """An Int64List body of one packed field, and the body offset of a payload offset."""
    body = ld(0x0A, payload)
    return body, len(body) - len(payload) + offset_in_payload


TRUNCATED_LONG, TRUNCATED_LONG_AT = packed_case(FILLER + b"\x80\x80", len(FILLER))
OVERLONG_LONG, OVERLONG_LONG_AT = packed_case(FILLER + b"\xff" * 10 + b"\x01", len(FILLER))
UNENDED, UNENDED_AT = packed_case(b"\x01" * 20 + b"\xff" * 11, 20)
MIXED = wire.encode_varint(-1) + wire.encode_varint(1 << 40) + wire.encode_varint(300) + b"\x05"
"""Varints of 10, 6, 2 and 1 bytes."""
LATE_OVERLONG, LATE_OVERLONG_AT = packed_case(
    MIXED * (2 * GROUPS_CHUNK_BYTES // len(MIXED)) + b"\xff" * 10 + b"\x01" + MIXED,
    2 * GROUPS_CHUNK_BYTES // len(MIXED) * len(MIXED),
)
UNENDED_PIECE, UNENDED_PIECE_AT = packed_case(
    MIXED * 5 + b"\xff" * GROUPS_CHUNK_BYTES + b"\x01", 5 * len(MIXED)
)

MALFORMED_LISTS: dict[str, tuple[Callable[[bytes], object], bytes, str]] = {
    "int64 packed truncated (short)": (wire.decode_int64_list, ld(0x0A, b"\x01\x80"), "offset 3"),
    "int64 packed truncated (long)": (
        wire.decode_int64_list,
        TRUNCATED_LONG,
        f"truncated varint at byte offset {TRUNCATED_LONG_AT} ",
    ),
    "int64 packed unended and overlong": (
        wire.decode_int64_list,
        UNENDED,
        f"varint at byte offset {UNENDED_AT} is longer than 10 bytes",
    ),
    "int64 packed 11 bytes (short)": (
        wire.decode_int64_list,
        ld(0x0A, b"\xff" * 10 + b"\x01"),
        "at byte offset 2 is longer than 10 bytes",
    ),
    "int64 packed 11 bytes (mid)": (
        wire.decode_int64_list,
        ld(0x0A, b"\x01" * 9 + b"\xff" * 10 + b"\x01"),
        "at byte offset 11 is longer than 10 bytes",
    ),
    "int64 packed 11 bytes (long)": (
        wire.decode_int64_list,
        OVERLONG_LONG,
        f"at byte offset {OVERLONG_LONG_AT} is longer than 10 bytes",
    ),
    "int64 packed 11 bytes after several pieces": (
        wire.decode_int64_list,
        LATE_OVERLONG,
        f"at byte offset {LATE_OVERLONG_AT} is longer than 10 bytes",
    ),
    "int64 packed continuation bytes longer than a piece": (
        wire.decode_int64_list,
        UNENDED_PIECE,
        f"at byte offset {UNENDED_PIECE_AT} is longer than 10 bytes",
    ),
    "int64 unpacked truncated": (
        wire.decode_int64_list,
        b"\x08\xff",
        "truncated varint at byte offset 1",
    ),
    "int64 length past end": (wire.decode_int64_list, b"\x0a\x03\x01", "length 3 at byte offset 1"),
    "int64 bad wire type": (wire.decode_int64_list, b"\x0f", "Int64List: invalid wire type 7"),
    "float packed not a multiple of 4": (
        wire.decode_float_list,
        ld(0x0A, bytes(7)),
        "packed floats at byte offset 2 take 7 bytes, not a multiple of 4",
    ),
    "float packed not a multiple of 4 in chunks": (
        wire.decode_float_list,
        ld(0x0A, bytes(4)) + ld(0x0A, bytes(5)),
        "packed floats at byte offset 8 take 5 bytes",
    ),
    "float truncated fixed32": (wire.decode_float_list, b"\x0d\x00\x00", "truncated fixed32"),
    "float unmatched end group": (wire.decode_float_list, b"\x0c", "FloatList: end-group tag"),
    "bytes length past end": (
        wire.decode_bytes_list,
        b"\x0a\x05abc",
        "BytesList: length 5 at byte offset 1",
    ),
    "bytes long length past end": (
        wire.decode_bytes_list,
        b"\x0a\x80\x01abc",
        "length 128 at byte offset 1",
    ),
    "bytes unclosed group": (
        wire.decode_bytes_list,
        b"\x0a\x00\x13",
        "BytesList: the group of field 2",
    ),
}


@pytest.mark.parametrize("case", MALFORMED_LISTS, ids=str)
def test_malformed_list_bodies_raise_record_error_like_protobuf_rejects(case: str) -> None:
    decode, body, message = MALFORMED_LISTS[case]
    with pytest.raises(RecordError, match=message):
        decode(body)
    message_class = {
        "int64": proto.Int64List,
        "float": proto.FloatList,
        "bytes": proto.BytesList,
    }[case.split()[0]]
    with pytest.raises(DecodeError):
        message_class.FromString(body)
