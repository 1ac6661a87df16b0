"""Feature list codecs without TensorFlow: coercion, FeatureLists entries against protobuf, decoding
rules and errors, round trips."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codegen.dtypes import (
    BOOL,
    BYTES,
    FLOAT32,
    FLOAT64,
    INT8,
    INT16,
    INT32,
    INT64,
    STRING,
    UINT8,
    UINT16,
    UINT32,
    DType,
    Kind,
)
from codegen.errors import RecordError, TfrGenError
from codegen.runtime.codec import wire
from codegen.runtime.codec.info import FeatureInfo, FeatureSpec
from codegen.runtime.codec.sequences import (
    SequenceCodec,
    SequenceRagged,
    SequenceStrings,
    SequenceTensor,
)
from codegen.runtime.tf import proto
from support.messages import pb_lists
from support.wire_bytes import int64_list

Shape = tuple[int | None, ...]
Lists = dict[bytes, list[tuple[int, bytes]]]

NUMERIC = (INT64, INT32, INT16, INT8, UINT32, UINT16, UINT8, BOOL, FLOAT32)
F32_MAX = float(np.finfo(np.float32).max)


def make(dtype: DType, shape: Shape, *, key: str = "k", **kwargs: Any) -> SequenceCodec[Any]:
    """The sequence codec a generated module would use for ``dtype`` and step ``shape``."""
    if not dtype.numeric:
        return SequenceStrings("R", "x", key, dtype, shape, **kwargs)
    if None in shape:
        return SequenceRagged("R", "x", key, dtype, shape, **kwargs)
    return SequenceTensor("R", "x", key, dtype, shape, **kwargs)


def lists_of(*items: tuple[str, list[tuple[str, bytes]]]) -> Lists:
    """``parse_sequence_example``'s feature lists for (key, [(list kind, body) per step])."""
    tags = {"bytes_list": 0x0A, "float_list": 0x12, "int64_list": 0x1A, "none": 0}
    entries = []
    for key, steps in items:
        features = [
            b"" if kind == "none" else bytes((tags[kind],)) + wire.encode_varint(len(body)) + body
            for kind, body in steps
        ]
        entries.append(wire.feature_list_entry(wire.key_field(key), features))
    return wire.parse_sequence_example(wire.sequence_example([], entries))[1]


def floats(*values: float) -> bytes:
    return b"\x0a" + wire.encode_varint(4 * len(values)) + np.array(values, "<f4").tobytes()


def roundtrip(codec: SequenceCodec[Any], value: Any) -> Any:
    return codec.decode(
        wire.parse_sequence_example(wire.sequence_example([], [codec.entry(value)]))[1]
    )


def assert_same(got: Any, expected: Any) -> None:
    """Equal values of the same types; arrays by dtype, shape and values."""
    assert type(got) is type(expected)
    if isinstance(expected, np.ndarray):
        assert got.dtype == expected.dtype and got.shape == expected.shape
        np.testing.assert_array_equal(got, expected)
    elif isinstance(expected, list):
        assert len(got) == len(expected)
        for a, b in zip(got, expected, strict=True):
            assert_same(a, b)
    else:
        assert got == expected


# --- configuration ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (
            lambda: SequenceTensor("R", "x", "k", INT64, (None,)),
            "R.x: dimension 0 of shape (None,) must be a positive int (SequenceTensor needs a "
            "fixed step shape)",
        ),
        (
            lambda: SequenceRagged("R", "x", "k", INT64, (3,)),
            "R.x: SequenceRagged needs a step shape with a leading None, got (3,)",
        ),
        (
            lambda: SequenceRagged("R", "x", "k", INT64, (None, None)),
            "R.x: dimension 1 of shape (None, None) must be a positive int (only the first may be "
            "None)",
        ),
        (
            lambda: SequenceTensor("R", "x", "k", STRING, ()),
            "R.x: SequenceTensor cannot hold dtype string",
        ),
        (
            lambda: SequenceStrings("R", "x", "k", FLOAT32, ()),
            "R.x: SequenceStrings cannot hold dtype float32",
        ),
        (
            lambda: SequenceTensor("R", "x", "k", FLOAT64, ()),
            "R.x: dtype float64 does not travel in a tf.train.Feature list (feature lists have no "
            "raw encoding)",
        ),
        (
            lambda: SequenceTensor("R", "x", "k", INT64, (), default=()),
            "R.x: SequenceTensor takes no default (an absent optional feature list has no steps)",
        ),
        (
            lambda: SequenceStrings("R", "x", "k", BYTES, (2, 0)),
            "R.x: dimension 1 of shape (2, 0) must be a positive int",
        ),
    ],
)
def test_configurations_the_codecs_cannot_hold_are_refused(build: Any, message: str) -> None:
    with pytest.raises(TfrGenError) as info:
        build()
    assert str(info.value) == message


def test_sequence_codecs_describe_themselves() -> None:
    codec = SequenceTensor[np.float32]("Clip", "frames", "frames", FLOAT32, (2,), optional=True)
    assert type(codec) is SequenceTensor
    assert repr(codec) == "SequenceTensor(Clip.frames (key 'frames'), float32, step shape=(2,))"
    assert codec.info() == FeatureInfo(
        name="frames",
        key="frames",
        dtype="float32",
        wire="float_list",
        shape=(2,),
        fixed=True,
        default=None,
        optional=True,
        sequence=True,
    )
    words = SequenceStrings("Clip", "words", "w", STRING, (None,))
    assert not words.info().fixed and words.info().sequence
    assert str(FeatureSpec("Clip", (codec.info(), words.info()))) == (
        "Clip: 2 features\n"
        "  name    key     dtype    wire                 shape   default  optional\n"
        "  frames  frames  float32  float_list per step  [2]     -        yes\n"
        "  words   w       string   bytes_list per step  [null]  -        no"
    )


# --- coercion -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("dtype", "shape", "value", "expected"),
    [
        (INT64, (), [1, -2, 3], np.array([1, -2, 3])),
        (INT64, (), (), np.zeros(0, np.int64)),
        (UINT8, (2,), [[1, 2], (3, 4)], np.array([[1, 2], [3, 4]], np.uint8)),
        (FLOAT32, (2,), [], np.zeros((0, 2), np.float32)),
        (BOOL, (1,), np.array([[True], [False]]), np.array([[True], [False]])),
        (
            FLOAT32,
            (None,),
            ([1, 2.5], (), np.array([3])),
            [np.array([1, 2.5], np.float32), np.zeros(0, np.float32), np.array([3], np.float32)],
        ),
        (
            INT16,
            (None, 2),
            iter([[[1, 2]], []]),
            [np.array([[1, 2]], np.int16), np.zeros((0, 2), np.int16)],
        ),
        (INT8, (None,), (), []),
        (STRING, (), ("a", np.str_("b")), ["a", "b"]),
        (BYTES, (2,), [(b"a", bytearray(b"b"))], [[b"a", b"b"]]),
        (STRING, (None, 2), [[("a", "b")], []], [[["a", "b"]], []]),
        (BYTES, (None,), (), []),
    ],
)
def test_coerce_accepts_iterables_of_steps(
    dtype: DType, shape: Shape, value: Any, expected: Any
) -> None:
    assert_same(make(dtype, shape).coerce(value), expected)


@pytest.mark.parametrize(
    ("dtype", "shape", "value", "message"),
    [
        (INT64, (), 5, "R.x: expected int64 values with shape (None,), got int 5"),
        (INT64, (2,), [[1, 2], [3]], "R.x: expected shape (None, 2), got a ragged nested list"),
        (INT64, (2,), [[1, 2, 3]], "R.x: expected shape (None, 2), got (1, 3)"),
        (UINT8, (), [1, 256], "R.x: value 256 out of range for uint8 [0, 255]"),
        (BOOL, (), [True, 0], "R.x: expected bool values, got list of int [True, 0]"),
        (
            FLOAT32,
            (None,),
            5,
            "R.x: expected an iterable of steps (float32 values with shape (None,) each), got int "
            "5",
        ),
        (FLOAT32, (None,), [[1.0], [[2.0]]], "R.x[1]: expected shape (None,), got (1, 1)"),
        (FLOAT32, (None, 2), [[[1, 2]], [3, 1]], "R.x[1]: expected shape (None, 2), got (2,)"),
        (
            FLOAT32,
            (None,),
            [[1e39]],
            "R.x[0]: value 1e+39 out of range for float32 [-3.4028234663852886e+38, "
            "3.4028234663852886e+38]",
        ),
        (
            STRING,
            (),
            "ab",
            "R.x: expected an iterable of string values with shape (None,), got str 'ab'",
        ),
        (STRING, (), ["a", 1], "R.x[1]: expected string, got int 1"),
        (STRING, (2,), [["a", "b"], ["c"]], "R.x[1]: expected 2 items (shape (None, 2)), got 1"),
        (STRING, (None,), [["a"], "b"], "R.x[1]: expected an iterable, got str 'b'"),
        (
            BYTES,
            (None, 1),
            [[[b"a"], [b"b", b"c"]]],
            "R.x[0][1]: expected 1 item (shape (None, None, 1)), got 2",
        ),
    ],
)
def test_coerce_rejects_with_exact_messages(
    dtype: DType, shape: Shape, value: Any, message: str
) -> None:
    codec = make(dtype, shape)
    with pytest.raises(RecordError) as info:
        codec.coerce(value)
    assert str(info.value) == message
    with pytest.raises(RecordError) as info:
        codec.entry(value)
    assert str(info.value) == message


# --- entries ------------------------------------------------------------------------------------


def pool(dtype: DType) -> list[Any]:
    if dtype.kind is Kind.INT:
        assert dtype.lo is not None and dtype.hi is not None
        return [
            v
            for v in (0, 1, -1, 127, 128, 300, 2**40, dtype.lo, dtype.hi)
            if dtype.lo <= v <= dtype.hi
        ]
    if dtype.kind is Kind.BOOL:
        return [True, False, False]
    if dtype.kind is Kind.FLOAT:
        return [0.0, -1.5, 1e30, -0.0, np.inf, F32_MAX]
    if dtype.kind is Kind.STR:
        return ["", "a", "é" * 70, "日本語"]
    return [b"", b"\x00\xff", b"y" * 200]


def steps_of(dtype: DType, shape: Shape, rows: list[int]) -> tuple[Any, list[list[Any]]]:
    """A value with one step per entry of ``rows`` (its row count for a leading ``None``), and the
    flat values of each step."""
    values = pool(dtype)
    flat_steps, value, pos = [], [], 0
    for n in rows:
        concrete = tuple(n if d is None else d for d in shape)
        count = math.prod(concrete)
        flat = [values[(pos + i) % len(values)] for i in range(count)]
        pos += count + 1
        flat_steps.append(flat)
        if not shape:
            value.append(flat[0])
        else:
            nested: list[Any] = flat
            for dim in reversed(concrete[1:]):
                nested = [nested[i : i + dim] for i in range(0, len(nested), dim)]
            value.append(
                np.array(nested, dtype.numpy).reshape(concrete)
                if dtype.numeric and None in shape
                else nested
            )
    if dtype.numeric and None not in shape:
        return np.array(value, dtype.numpy).reshape(len(rows), *shape), flat_steps
    return value, flat_steps


def wire_values(dtype: DType, flat: list[Any]) -> list[Any]:
    if dtype.kind is Kind.STR:
        return [v.encode() for v in flat]
    if dtype.kind is Kind.BOOL:
        return [int(v) for v in flat]
    return flat


ENTRY_CASES = [
    (dtype, shape, rows)
    for dtype in NUMERIC + (STRING, BYTES)
    for shape in ((), (2,), (2, 3), (None,), (None, 2))
    for rows in ([], [1], [2, 0, 3], [1] * 9)
    if None in shape or rows.count(0) == 0
]


@pytest.mark.parametrize(("dtype", "shape", "rows"), ENTRY_CASES)
def test_entries_match_protobuf_and_decode_back(
    dtype: DType, shape: Shape, rows: list[int]
) -> None:
    codec = make(dtype, shape, key="steps")
    value, flat_steps = steps_of(dtype, shape, rows)
    canonical = codec.coerce(value)
    data = wire.sequence_example([], [codec.entry(canonical)])
    kind = dtype.wire.list_name
    assert data == pb_lists({"steps": (kind, [wire_values(dtype, flat) for flat in flat_steps])})
    assert_same(roundtrip(codec, canonical), canonical)
    assert codec.entry(value) == codec.entry(canonical)


def test_integer_steps_of_unequal_byte_sizes_match_protobuf() -> None:
    codec = make(INT64, (2,))
    value = np.array([[1, 2], [300, -1], [0, 2**62], [5, 6]])
    data = wire.sequence_example([], [codec.entry(value)])
    assert data == pb_lists({"k": ("int64_list", value.tolist())})
    ragged = make(UINT16, (None,))
    steps = [np.array([1, 65535], np.uint16), np.zeros(0, np.uint16), np.array([128], np.uint16)]
    data = wire.sequence_example([], [ragged.entry(steps)])
    assert data == pb_lists({"k": ("int64_list", [s.tolist() for s in steps])})


def test_feature_lists_of_one_record_may_have_different_lengths() -> None:
    a, b, c = (
        make(FLOAT32, (), key="a"),
        make(STRING, (None,), key="b"),
        make(INT8, (None, 2), key="c"),
    )
    values: tuple[Any, ...] = (np.array([1.0, 2.0, 3.0], np.float32), [["x"]], [])
    data = wire.sequence_example(
        [], [codec.entry(v) for codec, v in zip((a, b, c), values, strict=True)]
    )
    lists = wire.parse_sequence_example(data)[1]
    assert_same(a.decode(lists), values[0])
    assert b.decode(lists) == [["x"]] and c.decode(lists) == []
    message = proto.SequenceExample.FromString(data)
    assert [len(message.feature_lists.feature_list[k].feature) for k in "abc"] == [3, 1, 0]


# --- decoding -----------------------------------------------------------------------------------


DECODE_ERRORS = [
    (
        make(INT64, ()),
        {},
        "R.x (key 'k'): required feature list is missing (expected one int64_list per step)",
    ),
    (
        make(INT64, ()),
        lists_of(("k", [("int64_list", int64_list(1)), ("float_list", floats(1))])),
        "R.x (key 'k') step 1: expected int64_list, found float_list",
    ),
    (
        make(FLOAT32, (2,)),
        lists_of(("k", [("float_list", floats(1, 2)), ("float_list", floats(1))])),
        "R.x (key 'k') step 1: expected 2 float_list values for step shape (2,), found 1",
    ),
    (
        make(FLOAT32, ()),
        lists_of(("k", [("none", b"")])),
        "R.x (key 'k') step 0: expected 1 float_list value, found 0",
    ),
    (
        make(INT16, (None, 2)),
        lists_of(("k", [("int64_list", int64_list(1, 2)), ("int64_list", int64_list(3))])),
        "R.x (key 'k') step 1: expected a multiple of 2 int64_list values for step shape (None, "
        "2), found 1",
    ),
    (
        make(UINT8, (None,)),
        lists_of(("k", [("int64_list", int64_list(1, 256))])),
        "R.x (key 'k') step 0: value 256 out of range for uint8 [0, 255]",
    ),
    (
        make(BOOL, ()),
        lists_of(("k", [("int64_list", int64_list(2))])),
        "R.x (key 'k') step 0: value 2 out of range for bool [0, 1]",
    ),
    (
        make(STRING, ()),
        lists_of(("k", [("bytes_list", b"\x0a\x01a\x0a\x01b")])),
        "R.x (key 'k') step 0: expected 1 bytes_list value, found 2",
    ),
    (
        make(STRING, (None,)),
        lists_of(("k", [("bytes_list", b""), ("bytes_list", b"\x0a\x01\xff")])),
        "R.x (key 'k') step 1: expected valid UTF-8 in value 0, found bytes b'\\xff'",
    ),
    (
        make(BYTES, (None, 2)),
        lists_of(("k", [("bytes_list", b"\x0a\x00" * 3)])),
        "R.x (key 'k') step 0: expected a multiple of 2 bytes_list values for step shape (None, "
        "2), found 3",
    ),
    (
        make(BYTES, ()),
        lists_of(("k", [("int64_list", b"")])),
        "R.x (key 'k') step 0: expected bytes_list, found int64_list",
    ),
    (
        make(INT64, (None,)),
        lists_of(("k", [("int64_list", int64_list(1)), ("int64_list", b"\x0a\x01\x80")])),
        "R.x (key 'k') step 1: Int64List: truncated varint at byte offset 2 (the message ends at "
        "byte offset 3)",
    ),
    (
        make(STRING, ()),
        lists_of(("k", [("bytes_list", b"\x0a\x05ab")])),
        "R.x (key 'k') step 0: BytesList: length 5 at byte offset 1 runs past the end of the "
        "message at byte offset 4",
    ),
]


@pytest.mark.parametrize(("codec", "lists", "message"), DECODE_ERRORS)
def test_decode_errors_name_the_feature_and_step(
    codec: SequenceCodec[Any], lists: Lists, message: str
) -> None:
    with pytest.raises(RecordError) as info:
        codec.decode(lists)
    assert str(info.value) == message


def test_absent_and_empty_feature_lists() -> None:
    assert_same(make(FLOAT32, (2,), optional=True).decode({}), np.zeros((0, 2), np.float32))
    assert make(STRING, (), optional=True).decode({}) == []
    assert make(INT8, (None,), optional=True).decode({}) == []
    assert_same(make(INT8, ()).decode(lists_of(("k", []))), np.zeros(0, np.int8))
    assert make(BYTES, (None,)).decode(lists_of(("k", []))) == []


def test_steps_without_a_list_hold_no_values() -> None:
    lists = lists_of(("k", [("none", b""), ("float_list", floats(1.5))]))
    assert_same(
        make(FLOAT32, (None,)).decode(lists), [np.zeros(0, np.float32), np.array([1.5], np.float32)]
    )
    assert make(STRING, (None,)).decode(lists_of(("k", [("none", b"")]))) == [[]]


def test_decode_accepts_every_valid_list_encoding() -> None:
    unpacked = b"\x08\x01\x08\x02"
    assert_same(
        make(INT64, (2,)).decode(lists_of(("k", [("int64_list", unpacked)]))), np.array([[1, 2]])
    )
    loose_floats = b"\x0d" + np.float32(1).tobytes() + b"\x0d" + np.float32(2).tobytes()
    assert_same(
        make(FLOAT32, (2,)).decode(
            lists_of(("k", [("float_list", loose_floats), ("float_list", floats(3, 4))]))
        ),
        np.array([[1, 2], [3, 4]], np.float32),
    )
    chunks = b"\x0a\x01a" + b"\x12\x00" + b"\x0a\x01b"  # an unknown field between the values
    assert make(STRING, (2,)).decode(lists_of(("k", [("bytes_list", chunks)]))) == [["a", "b"]]


# --- properties ---------------------------------------------------------------------------------


def elements(dtype: DType) -> st.SearchStrategy[Any]:
    if dtype.kind is Kind.INT:
        return st.integers(dtype.lo, dtype.hi)
    if dtype.kind is Kind.BOOL:
        return st.booleans()
    if dtype.kind is Kind.FLOAT:
        return st.floats(width=32, allow_nan=False)
    if dtype.kind is Kind.STR:
        return st.text(max_size=140)
    return st.binary(max_size=140)


@st.composite
def sequence_cases(draw: st.DrawFn) -> tuple[SequenceCodec[Any], Any, list[list[Any]]]:
    dtype = draw(st.sampled_from(NUMERIC + (STRING, BYTES)))
    shape = draw(st.sampled_from([(), (2,), (1, 2), (None,), (None, 2)]))
    rows = (
        draw(st.lists(st.integers(0, 3), max_size=5))
        if None in shape
        else [1] * draw(st.integers(0, 5))
    )
    flat_steps = [
        draw(
            st.lists(
                elements(dtype),
                min_size=n * math.prod(d or 1 for d in shape),
                max_size=n * math.prod(d or 1 for d in shape),
            )
        )
        for n in rows
    ]
    value: list[Any] = []
    for n, flat in zip(rows, flat_steps, strict=True):
        concrete = tuple(n if d is None else d for d in shape)
        nested: list[Any] = flat
        for dim in reversed(concrete[1:]):
            nested = [nested[i : i + dim] for i in range(0, len(nested), dim)]
        value.append(nested if shape else flat[0])
    return make(dtype, shape, key=draw(st.text(max_size=3))), value, flat_steps


@settings(max_examples=300, deadline=None)
@given(sequence_cases())
def test_feature_lists_round_trip_and_match_protobuf(
    case: tuple[SequenceCodec[Any], Any, list[list[Any]]],
) -> None:
    codec, value, flat_steps = case
    canonical = codec.coerce(value)
    assert_same(roundtrip(codec, canonical), canonical)
    data = wire.sequence_example([], [codec.entry(canonical)])
    if codec.dtype.kind is Kind.FLOAT:
        flat_steps = [[float(np.float32(v)) for v in flat] for flat in flat_steps]
    expected = pb_lists(
        {codec.key: (codec.dtype.wire.list_name, [wire_values(codec.dtype, f) for f in flat_steps])}
    )
    assert data == expected
