"""Raw and ragged tensor codecs without TensorFlow: coercion, entry and companion bytes against
protobuf, decoding rules and errors, round trips."""

from __future__ import annotations

import math
from typing import Any, cast

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from codegen.dtypes import (
    BOOL,
    BYTES,
    DTYPES,
    FLOAT16,
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
    UINT64,
    DType,
    Kind,
)
from codegen.errors import RecordError, TfrGenError
from codegen.runtime.codec import wire
from codegen.runtime.codec.equality import values_equal
from codegen.runtime.codec.info import FeatureInfo, FeatureSpec
from codegen.runtime.codec.tensors import RaggedStrings, RaggedTensor, RawTensor
from codegen.runtime.tf import proto
from support.wire_bytes import int64_list

Shape = tuple[int | None, ...]
Features = dict[bytes, tuple[int, bytes]]

NUMERIC = tuple(d for d in DTYPES.values() if d.numeric)
LIST_NUMERIC = tuple(d for d in NUMERIC if d.list_ok)
F32_MAX = float(np.finfo(np.float32).max)


def raw(dtype: DType, shape: Shape, *, key: str = "k", **kwargs: Any) -> RawTensor[Any]:
    return RawTensor("R", "x", key, dtype, shape, **kwargs)


def ragged(
    dtype: DType, shape: Shape, *, key: str = "k", **kwargs: Any
) -> RaggedTensor[Any] | RaggedStrings:
    if dtype.numeric:
        return RaggedTensor("R", "x", key, dtype, shape, **kwargs)
    return RaggedStrings("R", "x", key, dtype, shape, **kwargs)


def pb_one(key: str, kind: str, values: list[Any]) -> bytes:
    """The deterministic protobuf serialization of an Example whose one feature holds ``values``."""
    message = proto.Example()
    values_list = getattr(message.features.feature[key], kind)
    values_list.SetInParent()
    values_list.value.extend(values)
    return bytes(message.SerializeToString(deterministic=True))


def entries_of(
    codec: RawTensor[Any] | RaggedTensor[Any] | RaggedStrings, value: Any
) -> list[bytes]:
    """The entry and every companion entry of ``value``, in key order."""
    return [codec.entry(value)] + [
        codec.part(value, i) for i in range(1, len(codec.companion_keys) + 1)
    ]


def decode(codec: Any, entries: list[bytes], *, optional: bool = False) -> Any:
    features = wire.parse_example(wire.example(entries))
    return codec.decode_optional(features) if optional else codec.decode(features)


def features_of(*items: tuple[str, str, bytes]) -> Features:
    """``parse_example``'s dict of an Example whose features have the given (key, list kind,
    body)."""
    entries = []
    for key, kind, body in items:
        tag = {"bytes_list": 0x0A, "float_list": 0x12, "int64_list": 0x1A}[kind]
        entries.append(
            wire.map_entry(
                wire.key_field(key), bytes((tag,)) + wire.encode_varint(len(body)) + body
            )
        )
    return wire.parse_example(wire.example(entries))


def one_bytes(data: bytes) -> bytes:
    return b"\x0a" + wire.encode_varint(len(data)) + data


def assert_arrays(got: Any, expected: np.ndarray[Any, Any]) -> None:
    """The same dtype, shape and bytes (NaN payloads and signed zeros included)."""
    assert type(got) is np.ndarray and got.dtype == expected.dtype and got.shape == expected.shape
    assert got.tobytes() == expected.tobytes()


def assert_nested(got: Any, expected: Any) -> None:
    """Nested lists of the same structure whose leaves are equal arrays (or equal items)."""
    if isinstance(expected, np.ndarray):
        assert_arrays(got, expected)
    elif isinstance(expected, list):
        assert type(got) is list and len(got) == len(expected)
        for a, b in zip(got, expected, strict=True):
            assert_nested(a, b)
    else:
        assert type(got) is type(expected) and got == expected


# --- configuration ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: raw(STRING, (2,)), "R.x: RawTensor cannot hold dtype string"),
        (lambda: raw(FLOAT64, (2,), default=(1.0, 2.0)), "R.x: RawTensor takes no default"),
        (lambda: raw(UINT8, (2, 0)), "R.x: dimension 1 of shape (2, 0) must be a positive int"),
        (
            lambda: raw(UINT8, (None, -1)),
            "R.x: dimension 1 of shape (None, -1) must be a positive int",
        ),
        (
            lambda: ragged(FLOAT32, (None, 3)),
            "R.x: RaggedTensor needs at least two leading None dimensions, got (None, 3)",
        ),
        (
            lambda: ragged(STRING, (None,)),
            "R.x: RaggedStrings needs at least two leading None dimensions, got (None,)",
        ),
        (
            lambda: ragged(INT64, (None, None, 2, None)),
            "R.x: dimension 3 of shape (None, None, 2, None) must be a positive int (None "
            "dimensions must all lead)",
        ),
        (
            lambda: ragged(INT64, (None, None, 0)),
            "R.x: dimension 2 of shape (None, None, 0) must be a positive int",
        ),
        (
            lambda: ragged(FLOAT64, (None, None)),
            "R.x: dtype float64 does not travel in a tf.train.Feature list (it needs encoding: "
            "raw)",
        ),
        (
            lambda: RaggedTensor("R", "x", "k", STRING, (None, None)),
            "R.x: RaggedTensor cannot hold dtype string",
        ),
        (
            lambda: RaggedStrings("R", "x", "k", INT64, (None, None)),
            "R.x: RaggedStrings cannot hold dtype int64",
        ),
        (lambda: ragged(STRING, (None, None), default=[]), "R.x: RaggedStrings takes no default"),
    ],
)
def test_configurations_the_codecs_cannot_hold_are_refused(build: Any, message: str) -> None:
    with pytest.raises(TfrGenError) as info:
        build()
    assert str(info.value) == message


def test_codecs_describe_their_companions() -> None:
    image = RawTensor[np.uint8]("Photo", "image", "image", UINT8, (None, None, 3))
    assert type(image) is RawTensor and image.companion_keys == ("image/shape",)
    assert repr(image) == "RawTensor(Photo.image (key 'image'), uint8, shape=(None, None, 3))"
    assert image.info() == FeatureInfo(
        name="image",
        key="image",
        dtype="uint8",
        wire="bytes_list",
        shape=(None, None, 3),
        fixed=False,
        default=None,
        optional=False,
        encoding="raw",
        companions=("image/shape",),
    )
    assert raw(FLOAT64, (2, 2)).companion_keys == ()
    words = RaggedStrings("Doc", "words", "w", STRING, (None, None, None), optional=True)
    assert words.companion_keys == ("w/row_lengths_1", "w/row_lengths_2")
    assert words.info().ragged and not image.info().ragged
    boxes = RaggedTensor[np.float32]("Doc", "boxes", "b", FLOAT32, (None, None, 4))
    assert boxes.companion_keys == ("b/row_lengths_1",) and boxes.info().wire == "float_list"
    assert str(FeatureSpec("Doc", (image.info(), words.info(), boxes.info()))) == (
        "Doc: 3 features\n"
        "  name   key                                  dtype    wire              shape           "
        "    default  optional\n"
        "  image  image, image/shape                   uint8    bytes_list (raw)  [null, null, 3] "
        "    -        no\n"
        "  words  w, w/row_lengths_1, w/row_lengths_2  string   bytes_list        [null, null, "
        "null]  -        yes\n"
        "  boxes  b, b/row_lengths_1                   float32  float_list        [null, null, 4] "
        "    -        no"
    )


def test_part_indexes_outside_the_companions_are_refused() -> None:
    with pytest.raises(TfrGenError, match=r"^R\.x: RawTensor of shape \(2,\) has no companion 1$"):
        raw(INT8, (2,)).part(np.zeros(2, np.int8), 1)
    with pytest.raises(
        TfrGenError, match=r"^R\.x: RaggedStrings of shape \(None, None\) has no companion 2$"
    ):
        ragged(STRING, (None, None)).part([], 2)


# --- raw tensors: coercion ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("dtype", "shape", "value", "expected"),
    [
        (FLOAT64, (2,), [0.1, 1e300], np.array([0.1, 1e300])),
        (FLOAT64, (), 1.5, np.array(1.5)),
        (FLOAT64, (), np.float32(0.5), np.array(0.5)),
        (FLOAT16, (None,), [1, 0.5, 65504], np.array([1, 0.5, 65504], np.float16)),
        (FLOAT16, (1,), np.array([np.inf]), np.array([np.inf], np.float16)),
        (FLOAT32, (None, 2), [], np.zeros((0, 2), np.float32)),
        (UINT64, (None,), [2**64 - 1, 0], np.array([2**64 - 1, 0], np.uint64)),
        (UINT64, (2,), [2**63, 1], np.array([2**63, 1], np.uint64)),
        (INT64, (2,), [-(2**63), 2**63 - 1], np.array([-(2**63), 2**63 - 1], np.int64)),
        (INT8, (None, None), np.array([[1, -128]], np.int64), np.array([[1, -128]], np.int8)),
        (UINT8, (None, None, 3), [], np.zeros((0, 0, 3), np.uint8)),
        (UINT8, (2, None), [[], []], np.zeros((2, 0), np.uint8)),
        (BOOL, (None,), [True, np.bool_(False)], np.array([True, False])),
        (UINT32, (), 7, np.array(7, np.uint32)),
    ],
)
def test_raw_coerce_makes_new_arrays_of_the_dtype(
    dtype: DType, shape: Shape, value: Any, expected: Any
) -> None:
    got = raw(dtype, shape).coerce(value)
    assert_arrays(got, expected)
    assert got.flags.owndata and got.flags.c_contiguous and got is not value


@pytest.mark.parametrize(
    ("dtype", "shape", "value", "message"),
    [
        (
            FLOAT16,
            (2,),
            [70000, 1],
            "R.x: value 70000 out of range for float16 [-65504.0, 65504.0]",
        ),
        (
            FLOAT16,
            (1,),
            np.array([65520.0]),
            "R.x: value 65520.0 out of range for float16 [-65504.0, 65504.0]",
        ),
        (
            FLOAT32,
            (1,),
            np.array([1e39]),
            "R.x: value 1e+39 out of range for float32 [-3.4028234663852886e+38, "
            "3.4028234663852886e+38]",
        ),
        (
            FLOAT64,
            (1,),
            [-(10**309)],
            f"R.x: value {-(10**309)!r} out of range for float64 [-1.7976931348623157e+308, "
            "1.7976931348623157e+308]",
        ),
        (
            UINT64,
            (None,),
            [-1, 2**64 - 1],
            "R.x: value -1 out of range for uint64 [0, 18446744073709551615]",
        ),
        (
            UINT64,
            (1,),
            [2**64],
            "R.x: value 18446744073709551616 out of range for uint64 [0, 18446744073709551615]",
        ),
        (
            INT64,
            (2,),
            [2**63, 1],
            "R.x: value 9223372036854775808 out of range for int64 [-9223372036854775808, "
            "9223372036854775807]",
        ),
        (UINT64, (1,), [1.5], "R.x: expected uint64 values, got list of float [1.5]"),
        (INT8, (None,), [1, 2.5], "R.x: expected int8 values, got list of float [1, 2.5]"),
        (BOOL, (1,), [1], "R.x: expected bool values, got list of int [1]"),
        (FLOAT64, (), "1.5", "R.x: expected float64 values with shape (), got str '1.5'"),
        (FLOAT64, (), [1.0], "R.x: expected shape (), got (1,)"),
        (
            UINT8,
            (None, None, 3),
            np.zeros((2, 2, 4), np.uint8),
            "R.x: expected shape (None, None, 3), got (2, 2, 4)",
        ),
        (UINT8, (2, None), np.zeros(2, np.int64), "R.x: expected shape (2, None), got (2,)"),
        (
            UINT8,
            (None, 2),
            [[1, 2], [3]],
            "R.x: expected shape (None, 2), got a ragged nested list",
        ),
    ],
)
def test_raw_coerce_rejects_with_exact_messages(
    dtype: DType, shape: Shape, value: Any, message: str
) -> None:
    codec = raw(dtype, shape)
    with pytest.raises(RecordError) as info:
        codec.coerce(value)
    assert str(info.value) == message
    with pytest.raises(RecordError) as info:
        codec.entry(value)
    assert str(info.value) == message


# --- raw tensors: entries -----------------------------------------------------------------------


def sample_array(dtype: DType, shape: tuple[int, ...]) -> np.ndarray[Any, Any]:
    """Values of ``dtype`` reaching both ends of its range, in ``shape``."""
    count = math.prod(shape)
    if dtype.kind is Kind.BOOL:
        flat: np.ndarray[Any, Any] = np.arange(count) % 3 == 1
    elif dtype.kind is Kind.FLOAT:
        info = np.finfo(cast("np.dtype[np.floating[Any]]", dtype.numpy))
        pool = np.array(
            [0.0, -0.0, 1.5, -2.25, float(info.max), float(info.tiny), np.inf, -np.inf, np.nan]
        )
        flat = np.resize(pool.astype(dtype.numpy), count)
    else:
        assert dtype.lo is not None and dtype.hi is not None
        pool_ints = [
            v for v in (dtype.lo, dtype.hi, 0, 1, 127, 128, 300) if dtype.lo <= v <= dtype.hi
        ]
        flat = np.resize(np.array(pool_ints, dtype=object).astype(dtype.numpy), count)
    return flat.astype(dtype.numpy).reshape(shape)


RAW_CASES = [
    (dtype, shape, concrete)
    for dtype in NUMERIC
    for shape, concrete in (
        ((), ()),
        ((2, 3), (2, 3)),
        ((None, None, 3), (2, 4, 3)),
        ((None, 2), (0, 2)),
    )
]


@pytest.mark.parametrize(("dtype", "shape", "concrete"), RAW_CASES)
def test_raw_entries_match_protobuf_and_decode_back(
    dtype: DType, shape: Shape, concrete: tuple[int, ...]
) -> None:
    codec = raw(dtype, shape, key="image")
    value = codec.coerce(sample_array(dtype, concrete))
    le = value.astype(value.dtype.newbyteorder("<")).tobytes()
    assert wire.example([codec.entry(value)]) == pb_one("image", "bytes_list", [le])
    if None in shape:
        assert wire.example([codec.part(value, 1)]) == pb_one(
            "image/shape", "int64_list", list(concrete)
        )
    assert_arrays(decode(codec, entries_of(codec, value)), value)


def test_raw_entries_take_any_layout_and_byte_order() -> None:
    codec = raw(FLOAT64, (None, 2))
    expected = entries_of(codec, np.array([[0.0, 2.0], [1.0, 3.0]]))
    transposed = np.arange(4, dtype=np.float64).reshape(2, 2).T
    assert entries_of(codec, transposed) == expected
    assert entries_of(codec, transposed.astype(">f8")) == expected
    assert entries_of(codec, [[0, 2], (1, 3)]) == expected


def test_raw_entries_of_none_are_empty_for_optional_features() -> None:
    codec = raw(INT16, (None,), optional=True)
    assert codec.entry(None) == b"" and codec.part(None, 1) == b""
    with pytest.raises(
        RecordError, match=r"^R\.x: expected int16 values with shape \(2,\), got None$"
    ):
        raw(INT16, (2,)).entry(None)


# --- raw tensors: decoding ----------------------------------------------------------------------


F32_PAIR = one_bytes(np.array([1, 2], "<f4").tobytes())

RAW_DECODE_ERRORS = [
    (
        raw(FLOAT32, (2,)),
        features_of(),
        "R.x (key 'k'): required feature is missing (expected bytes_list with 1 value)",
    ),
    (
        raw(FLOAT32, (2,)),
        features_of(("k", "float_list", b"")),
        "R.x (key 'k'): expected bytes_list, found float_list",
    ),
    (
        raw(FLOAT32, (2,)),
        features_of(("k", "bytes_list", F32_PAIR * 2)),
        "R.x (key 'k'): expected 1 bytes_list value, found 2",
    ),
    (
        raw(FLOAT32, (2,)),
        features_of(("k", "bytes_list", one_bytes(bytes(12)))),
        "R.x (key 'k'): expected 8 bytes (2 values of float32) for shape (2,), found 12",
    ),
    (
        raw(FLOAT64, (None,)),
        features_of(
            ("k", "bytes_list", one_bytes(bytes(7))), ("k/shape", "int64_list", int64_list(1))
        ),
        "R.x (key 'k'): expected 8 bytes (1 value of float64) for shape (1,), found 7, not a "
        "multiple of 8",
    ),
    (
        raw(UINT8, (None, 3)),
        features_of(("k", "bytes_list", one_bytes(bytes(6)))),
        "R.x (key 'k'): companion 'k/shape' is missing (expected int64_list with 2 values)",
    ),
    (
        raw(UINT8, (None, 3)),
        features_of(("k", "bytes_list", one_bytes(bytes(6))), ("k/shape", "float_list", b"")),
        "R.x (key 'k'): expected int64_list in 'k/shape', found float_list",
    ),
    (
        raw(UINT8, (None, 3)),
        features_of(
            ("k", "bytes_list", one_bytes(bytes(6))), ("k/shape", "int64_list", int64_list(2))
        ),
        "R.x (key 'k'): the shape [2] in 'k/shape' does not fit the declared shape (None, 3)",
    ),
    (
        raw(UINT8, (None, 3)),
        features_of(
            ("k", "bytes_list", one_bytes(bytes(6))), ("k/shape", "int64_list", int64_list(3, 2))
        ),
        "R.x (key 'k'): the shape [3, 2] in 'k/shape' does not fit the declared shape (None, 3)",
    ),
    (
        raw(UINT8, (None, 3)),
        features_of(
            ("k", "bytes_list", one_bytes(b"")), ("k/shape", "int64_list", int64_list(-2, 3))
        ),
        "R.x (key 'k'): the shape [-2, 3] in 'k/shape' does not fit the declared shape (None, 3)",
    ),
    (
        raw(UINT8, (None, None)),
        features_of(
            ("k", "bytes_list", one_bytes(bytes(2))),
            ("k/shape", "int64_list", int64_list(2**40, 2**40)),
        ),
        "R.x (key 'k'): expected 1208925819614629174706176 bytes (1208925819614629174706176 "
        "values of uint8) "
        "for shape (1099511627776, 1099511627776), found 2",
    ),
    (
        raw(UINT8, (None,), optional=True),
        features_of(("k/shape", "int64_list", int64_list(0))),
        "R.x (key 'k'): found the companion 'k/shape' without the feature",
    ),
    (
        raw(BOOL, (3,)),
        features_of(("k", "bytes_list", one_bytes(b"\x01\x00\x02"))),
        "R.x (key 'k'): value 2 out of range for bool [0, 1]",
    ),
    (
        raw(INT8, (2,)),
        features_of(("k", "bytes_list", b"\x0a\x05ab")),
        "R.x (key 'k'): BytesList: length 5 at byte offset 1 runs past the end of the message at "
        "byte offset 4",
    ),
    (
        raw(INT8, (None,)),
        features_of(
            ("k", "bytes_list", one_bytes(b"ab")), ("k/shape", "int64_list", b"\x0a\x01\x80")
        ),
        "R.x (key 'k'): 'k/shape': Int64List: truncated varint at byte offset 2 "
        "(the message ends at byte offset 3)",
    ),
]


@pytest.mark.parametrize(("codec", "features", "message"), RAW_DECODE_ERRORS)
def test_raw_decode_errors_name_the_feature(
    codec: RawTensor[Any], features: Features, message: str
) -> None:
    with pytest.raises(RecordError) as info:
        codec.decode_optional(features)
    assert str(info.value) == message


def test_raw_decode_reads_any_encoding_of_the_bytes_list() -> None:
    data = np.arange(40, dtype="<f8").tobytes()  # 320 bytes: a two-byte length
    expected = np.arange(40, dtype=np.float64).reshape(8, 5)
    codec = raw(FLOAT64, (None, 5))
    shape = ("k/shape", "int64_list", int64_list(8, 5))
    assert_arrays(codec.decode(features_of(("k", "bytes_list", one_bytes(data)), shape)), expected)
    unknown_first = b"\x12\x00" + one_bytes(data)  # an unknown field before the value
    assert_arrays(codec.decode(features_of(("k", "bytes_list", unknown_first), shape)), expected)
    unpacked_shape = ("k/shape", "int64_list", b"\x08\x08\x08\x05")
    assert_arrays(
        codec.decode(features_of(("k", "bytes_list", one_bytes(data)), unpacked_shape)), expected
    )


def test_raw_decoded_arrays_are_writable_copies() -> None:
    codec = raw(INT32, (2,))
    data = wire.example([codec.entry(np.array([1, -1], np.int32))])
    got = codec.decode(wire.parse_example(data))
    assert got.flags.writeable and got.dtype == np.int32
    got[0] = 5
    assert codec.decode(wire.parse_example(data)).tolist() == [1, -1]


def test_absent_or_empty_optional_raw_features_decode_to_none() -> None:
    for shape in ((2,), (None, 2)):
        codec = raw(UINT16, shape, optional=True)
        assert codec.decode_optional({}) is None
        assert codec.decode_optional({b"k": (0, b"")}) is None
        assert codec.decode_optional(features_of(("k", "bytes_list", b""))) is None
        with pytest.raises(RecordError, match=r"required feature is missing"):
            raw(UINT16, shape).decode_optional({})
    # An empty or kindless companion beside an empty or missing value: absent, as TensorFlow
    # reads it; a companion that holds a shape without the value is refused.
    codec = raw(UINT16, (None, 2), optional=True)
    for value in ((), (("k", "bytes_list", b""),)):
        assert codec.decode_optional(features_of(*value, ("k/shape", "int64_list", b""))) is None
        assert codec.decode_optional({**features_of(*value), b"k/shape": (0, b"")}) is None
        for companion in (
            ("k/shape", "int64_list", int64_list(0, 2)),
            ("k/shape", "float_list", b""),
        ):
            with pytest.raises(RecordError, match=r"found the companion 'k/shape' without"):
                codec.decode_optional(features_of(*value, companion))


# --- ragged: coercion ---------------------------------------------------------------------------


def test_ragged_coerce_builds_nested_lists_of_arrays() -> None:
    codec = ragged(FLOAT32, (None, None, None, 2))
    value: tuple[Any, ...] = ([[(1, 2)], np.zeros((0, 2))], iter([]), [[[3, 4], [5, 6]]])
    got = codec.coerce(value)
    expected = [
        [np.array([[1, 2]], np.float32), np.zeros((0, 2), np.float32)],
        [],
        [np.array([[3, 4], [5, 6]], np.float32)],
    ]
    assert_nested(got, expected)
    assert_nested(
        ragged(UINT8, (None, None)).coerce(np.arange(6).reshape(2, 3)),
        [np.arange(3, dtype=np.uint8), np.arange(3, 6, dtype=np.uint8)],
    )
    assert ragged(INT64, (None, None)).coerce([]) == []
    words = ragged(STRING, (None, None, 2)).coerce([[("a", "b")], (), iter([["c", np.str_("d")]])])
    assert words == [[["a", "b"]], [], [["c", "d"]]] and type(words[2][0][1]) is str


@pytest.mark.parametrize(
    ("dtype", "shape", "value", "message"),
    [
        (
            FLOAT32,
            (None, None, 2),
            5,
            "R.x: expected nested iterables of float32 values with shape (None, None, 2), got int "
            "5",
        ),
        (FLOAT32, (None, None, None), [[[1.0]], 7], "R.x[1]: expected an iterable, got int 7"),
        (
            FLOAT32,
            (None, None, None),
            "ab",
            "R.x: expected nested iterables of float32 values with shape (None, None, None), got "
            "str 'ab'",
        ),
        (
            FLOAT32,
            (None, None, 2),
            [[[1, 2]], [[1, 2, 3]]],
            "R.x[1]: expected shape (None, 2), got (1, 3)",
        ),
        (INT8, (None, None), [[1], [200]], "R.x[1]: value 200 out of range for int8 [-128, 127]"),
        (BOOL, (None, None), [[True], [1]], "R.x[1]: expected bool values, got list of int [1]"),
        (STRING, (None, None), [["a"], ["b", 2]], "R.x[1][1]: expected string, got int 2"),
        (
            STRING,
            (None, None, 2),
            [[["a"]]],
            "R.x[0][0]: expected 2 items (shape (None, None, 2)), got 1",
        ),
        (BYTES, (None, None), [b"ab"], "R.x[0]: expected an iterable, got bytes b'ab'"),
        (
            BYTES,
            (None, None),
            None,
            "R.x: expected an iterable of bytes values with shape (None, None), got None",
        ),
    ],
)
def test_ragged_coerce_rejects_with_exact_messages(
    dtype: DType, shape: Shape, value: Any, message: str
) -> None:
    codec = ragged(dtype, shape)
    with pytest.raises(RecordError) as info:
        codec.coerce(value)
    assert str(info.value) == message
    with pytest.raises(RecordError) as info:
        codec.entry(value)
    assert str(info.value) == message


# --- ragged: entries and decoding ---------------------------------------------------------------


def ragged_expectations(dtype: DType) -> tuple[Any, list[Any], list[list[int]]]:
    """A ragged value of shape (None, None, None, 2) with its flat values and row lengths."""
    pool: list[Any]
    if dtype.kind is Kind.STR:
        pool = ["", "é", "x" * 130, "日本"]
    elif dtype.kind is Kind.BYTES:
        pool = [b"\x00", b"y" * 200, b""]
    elif dtype.kind is Kind.BOOL:
        pool = [True, False]
    elif dtype.kind is Kind.FLOAT:
        pool = [0.5, -1.0, F32_MAX, 3.0]
    else:
        assert dtype.lo is not None and dtype.hi is not None
        pool = [dtype.lo, dtype.hi, 0, 1, 300 if dtype.hi >= 300 else 3]
    lengths = [[2, 0, 1], [1, 0, 3]]
    flat = [pool[i % len(pool)] for i in range(2 * sum(lengths[1]))]
    rows = [flat[i : i + 2] for i in range(0, len(flat), 2)]
    leaves, pos = [], 0
    for n in lengths[1]:
        leaves.append(
            rows[pos : pos + n]
            if not dtype.numeric
            else np.array(rows[pos : pos + n], dtype.numpy).reshape(n, 2)
        )
        pos += n
    value = [leaves[0:2], [], [leaves[2]]]
    return value, flat, lengths


@pytest.mark.parametrize("dtype", LIST_NUMERIC + (STRING, BYTES), ids=lambda d: d.name)
def test_ragged_entries_match_protobuf_and_decode_back(dtype: DType) -> None:
    codec = ragged(dtype, (None, None, None, 2), key="k")
    value, flat, lengths = ragged_expectations(dtype)
    canonical = codec.coerce(value)
    entries = entries_of(codec, canonical)
    kind = dtype.wire.list_name
    wire_flat = (
        [v.encode() for v in flat]
        if dtype.kind is Kind.STR
        else [int(v) if dtype.kind is Kind.BOOL else v for v in flat]
    )
    assert wire.example([entries[0]]) == pb_one("k", kind, wire_flat)
    assert wire.example([entries[1]]) == pb_one("k/row_lengths_1", "int64_list", lengths[0])
    assert wire.example([entries[2]]) == pb_one("k/row_lengths_2", "int64_list", lengths[1])
    assert entries_of(codec, value) == entries  # non-canonical values are coerced first
    assert_nested(decode(codec, entries), canonical)


def test_ragged_values_of_no_rows_and_empty_rows() -> None:
    codec = ragged(INT64, (None, None, None))
    values: list[list[Any]] = [[], [[]], [[], [np.zeros(0, np.int64)]]]
    for value in values:
        canonical = codec.coerce(value)
        assert_nested(decode(codec, entries_of(codec, canonical)), canonical)
    assert entries_of(codec, []) == [
        wire.map_entry(wire.key_field("k"), b"\x1a\x00"),
        wire.map_entry(wire.key_field("k/row_lengths_1"), b"\x1a\x00"),
        wire.map_entry(wire.key_field("k/row_lengths_2"), b"\x1a\x00"),
    ]


def test_absent_ragged_features_decode_to_empty_or_none() -> None:
    for dtype in (FLOAT32, STRING):
        assert ragged(dtype, (None, None)).decode({}) == []
        assert ragged(dtype, (None, None)).decode_optional({b"k": (0, b"")}) == []
        assert ragged(dtype, (None, None), optional=True).decode_optional({}) is None
        assert ragged(dtype, (None, None), optional=True).entry(None) == b""
        assert ragged(dtype, (None, None), optional=True).part(None, 1) == b""
    rows_only = features_of(("k/row_lengths_1", "int64_list", int64_list(0, 0)))
    assert ragged(BYTES, (None, None), optional=True).decode_optional(rows_only) == [[], []]


RAGGED_DECODE_ERRORS = [
    (
        ragged(FLOAT32, (None, None, None)),
        features_of(
            ("k/row_lengths_1", "int64_list", int64_list(2)),
            ("k/row_lengths_2", "int64_list", int64_list(1)),
        ),
        "R.x (key 'k'): 'k/row_lengths_2' holds 1 row length, but the row lengths in "
        "'k/row_lengths_1' add up to 2",
    ),
    (
        ragged(INT64, (None, None)),
        features_of(
            ("k", "int64_list", int64_list(1, 2, 3)),
            ("k/row_lengths_1", "int64_list", int64_list(1, 1)),
        ),
        "R.x (key 'k'): expected 2 int64_list values, found 3 (the row lengths in "
        "'k/row_lengths_1' add up to 2)",
    ),
    (
        ragged(STRING, (None, None, 2)),
        features_of(
            ("k", "bytes_list", b"\x0a\x00" * 3), ("k/row_lengths_1", "int64_list", int64_list(2))
        ),
        "R.x (key 'k'): expected 4 bytes_list values, found 3 "
        "(the row lengths in 'k/row_lengths_1' add up to 2 rows of 2 values)",
    ),
    (
        ragged(INT64, (None, None)),
        features_of(("k", "int64_list", int64_list(1, 2))),
        "R.x (key 'k'): expected 0 int64_list values, found 2 (the row lengths in "
        "'k/row_lengths_1' add up to 0)",
    ),
    (
        ragged(INT64, (None, None)),
        features_of(
            ("k", "int64_list", int64_list(1)), ("k/row_lengths_1", "int64_list", int64_list(2, -1))
        ),
        "R.x (key 'k'): row length -1 in 'k/row_lengths_1' is negative",
    ),
    (
        ragged(INT64, (None, None)),
        features_of(("k", "float_list", b"")),
        "R.x (key 'k'): expected int64_list, found float_list",
    ),
    (
        ragged(INT64, (None, None)),
        features_of(("k/row_lengths_1", "bytes_list", b"")),
        "R.x (key 'k'): expected int64_list in 'k/row_lengths_1', found bytes_list",
    ),
    (
        ragged(UINT8, (None, None)),
        features_of(
            ("k", "int64_list", int64_list(256)), ("k/row_lengths_1", "int64_list", int64_list(1))
        ),
        "R.x (key 'k'): value 256 out of range for uint8 [0, 255]",
    ),
    (
        ragged(STRING, (None, None)),
        features_of(
            ("k", "bytes_list", b"\x0a\x01\xff"), ("k/row_lengths_1", "int64_list", int64_list(1))
        ),
        "R.x (key 'k'): expected valid UTF-8 in value 0, found bytes b'\\xff'",
    ),
    (
        ragged(FLOAT32, (None, None)),
        features_of(
            ("k", "float_list", b"\x0a\x03abc"), ("k/row_lengths_1", "int64_list", int64_list(1))
        ),
        "R.x (key 'k'): FloatList: the packed floats at byte offset 2 take 3 bytes, not a "
        "multiple of 4",
    ),
    (
        ragged(FLOAT32, (None, None)),
        features_of(("k/row_lengths_1", "int64_list", b"\x0a\x02\x80")),
        "R.x (key 'k'): 'k/row_lengths_1': Int64List: length 2 at byte offset 1 runs past the end "
        "of the message "
        "at byte offset 3",
    ),
]


@pytest.mark.parametrize(("codec", "features", "message"), RAGGED_DECODE_ERRORS)
def test_ragged_decode_errors_name_the_feature(
    codec: Any, features: Features, message: str
) -> None:
    with pytest.raises(RecordError) as info:
        codec.decode_optional(features)
    assert str(info.value) == message


def test_ragged_parts_check_the_nesting_they_read() -> None:
    codec = ragged(INT64, (None, None, None))
    with pytest.raises(RecordError, match=r"^R\.x\[0\]: expected an iterable, got int 1$"):
        codec.part([1], 1)
    as_tuples: Any = ((np.zeros(2, np.int64),),)
    assert codec.part(as_tuples, 2) == codec.part([[np.zeros(2, np.int64)]], 2)


# --- properties ---------------------------------------------------------------------------------


@st.composite
def raw_cases(draw: st.DrawFn) -> tuple[RawTensor[Any], np.ndarray[Any, Any]]:
    dtype = draw(st.sampled_from(NUMERIC))
    shape = tuple(draw(st.lists(st.none() | st.integers(1, 3), max_size=3)))
    concrete = tuple(draw(st.integers(0, 3)) if d is None else d for d in shape)
    array = draw(hnp.arrays(dtype.numpy, concrete))
    key, optional = draw(st.text(max_size=3)), draw(st.booleans())
    codec: RawTensor[Any] = RawTensor("R", "x", key, dtype, shape, optional=optional)
    return codec, array


@settings(max_examples=300, deadline=None)
@given(raw_cases())
def test_raw_tensors_round_trip_bit_for_bit(
    case: tuple[RawTensor[Any], np.ndarray[Any, Any]],
) -> None:
    codec, array = case
    entries = entries_of(codec, array)
    assert_arrays(decode(codec, entries, optional=True), array)
    message = proto.Example.FromString(wire.example(entries))
    assert message.features.feature[codec.key].bytes_list.value == [
        array.astype(array.dtype.newbyteorder("<")).tobytes()
    ]


def elements(dtype: DType) -> st.SearchStrategy[Any]:
    if dtype.kind is Kind.INT:
        return st.integers(dtype.lo, dtype.hi)
    if dtype.kind is Kind.BOOL:
        return st.booleans()
    if dtype.kind is Kind.FLOAT:
        return st.floats(width=32, allow_nan=False)
    if dtype.kind is Kind.STR:
        return st.text(max_size=5)
    return st.binary(max_size=5)


@st.composite
def ragged_cases(draw: st.DrawFn) -> tuple[Any, Any]:
    dtype = draw(st.sampled_from(LIST_NUMERIC + (STRING, BYTES)))
    nulls = draw(st.integers(2, 3))
    fixed = tuple(draw(st.lists(st.integers(1, 2), max_size=2)))
    codec = ragged(dtype, (None,) * nulls + fixed)

    def node(depth: int) -> Any:
        if depth == nulls - 1:
            n = draw(st.integers(0, 3))
            items = draw(
                st.lists(
                    elements(dtype), min_size=n * math.prod(fixed), max_size=n * math.prod(fixed)
                )
            )
            array = np.array(items, dtype.numpy if dtype.numeric else object).reshape(n, *fixed)
            return array if dtype.numeric else array.tolist()
        return [node(depth + 1) for _ in range(draw(st.integers(0, 3)))]

    return codec, node(0)


@settings(max_examples=300, deadline=None)
@given(ragged_cases())
def test_ragged_values_round_trip(case: tuple[Any, Any]) -> None:
    codec, value = case
    canonical = codec.coerce(value)
    entries = entries_of(codec, canonical)
    assert_nested(decode(codec, entries), canonical)
    assert values_equal(decode(codec, entries), canonical)


def test_values_equal_compares_nested_arrays_by_shape_and_values() -> None:
    a = [np.zeros((0, 2)), [np.array([1, 2])], "s", (1.5, b"b")]
    assert values_equal(a, [np.zeros((0, 2)), (np.array([1, 2]),), "s", [1.5, b"b"]])
    assert not values_equal(a, [np.zeros((0, 3)), [np.array([1, 2])], "s", (1.5, b"b")])
    assert not values_equal([np.array([1, 2])], [[1, 2]])
    assert not values_equal([[]], [[], []]) and not values_equal("s", b"s")
