"""The feature codecs without TensorFlow: coercion, entry bytes against protobuf, decoding rules."""

from __future__ import annotations

import enum
import itertools
import math
import sys
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
    UINT64,
    DType,
    Kind,
)
from codegen.errors import MissingExtraError, RecordError, TfrGenError
from codegen.runtime.codec import wire
from codegen.runtime.codec.features import (
    NO_DEFAULT,
    BoolScalar,
    BytesScalar,
    BytesTensor,
    Codec,
    FloatScalar,
    IntScalar,
    NumericTensor,
    TextScalar,
    TextTensor,
)
from codegen.runtime.codec.info import FeatureInfo, FeatureSpec
from codegen.runtime.tf import proto
from codegen.runtime.tf.parse import parse_specs, post_process, tf_parse_example

Shape = tuple[int | None, ...]

LIST_DTYPES = (INT64, INT32, INT16, INT8, UINT32, UINT16, UINT8, BOOL, FLOAT32, STRING, BYTES)
SHAPES: tuple[Shape, ...] = ((), (3,), (2, 3), (None,), (None, 2))
F32_MAX = float(np.finfo(np.float32).max)


SCALAR_CLASSES: dict[Kind, type[Codec[Any]]] = {
    Kind.INT: IntScalar,
    Kind.BOOL: BoolScalar,
    Kind.FLOAT: FloatScalar,
    Kind.STR: TextScalar,
    Kind.BYTES: BytesScalar,
}


def make(
    dtype: DType, shape: Shape, *, key: str = "k", name: str = "x", **kwargs: Any
) -> Codec[Any]:
    """The codec class a generated module would use for ``dtype`` and ``shape``."""
    cls: type[Codec[Any]]
    if shape == ():
        cls = SCALAR_CLASSES[dtype.kind]
    elif dtype.numeric:
        cls = NumericTensor
    else:
        cls = TextTensor if dtype.kind is Kind.STR else BytesTensor
    return cls("R", name, key, dtype, shape, **kwargs)


def pool(dtype: DType) -> list[Any]:
    """Sample scalar values of ``dtype``, including edge cases of the wire format."""
    if dtype.kind is Kind.INT:
        assert dtype.lo is not None and dtype.hi is not None
        candidates = [0, 1, -1, 127, 128, 300, -129, 2**40, dtype.lo, dtype.hi]
        return [v for v in candidates if dtype.lo <= v <= dtype.hi]
    if dtype.kind is Kind.BOOL:
        return [True, False, False]
    if dtype.kind is Kind.FLOAT:
        return [0.0, -1.5, 3.25, 1e30, -0.0, math.inf, F32_MAX]
    if dtype.kind is Kind.STR:
        return ["", "a", "é" * 70, "日本語", "x" * 130]
    return [b"", b"\x00\xff", b"y" * 200, b"z"]


def nest(flat: list[Any], shape: tuple[int, ...]) -> list[Any]:
    """``flat`` as nested lists of ``shape`` (rank >= 1)."""
    for dim in reversed(shape[1:]):
        flat = [flat[i : i + dim] for i in range(0, len(flat), dim)]
    return flat


def sample(dtype: DType, shape: Shape, rows: int) -> tuple[Any, list[Any]]:
    """A value of ``dtype`` and ``shape`` (``rows`` for a leading ``None``) and its flat values."""
    concrete = tuple(rows if d is None else d for d in shape)
    count = math.prod(concrete)
    flat = list(itertools.islice(itertools.cycle(pool(dtype)), count))
    if shape == ():
        return flat[0], flat
    return nest(flat, concrete), flat


def pb_example(key: str, dtype: DType, flat: list[Any]) -> bytes:
    """The deterministic protobuf serialization of an Example with one feature holding ``flat``."""
    message = proto.Example()
    feature = message.features.feature[key]
    if dtype.kind is Kind.FLOAT:
        feature.float_list.SetInParent()
        feature.float_list.value.extend(flat)
    elif dtype.numeric:
        feature.int64_list.SetInParent()
        feature.int64_list.value.extend(int(v) for v in flat)
    else:
        feature.bytes_list.SetInParent()
        feature.bytes_list.value.extend(v.encode() if isinstance(v, str) else v for v in flat)
    return bytes(message.SerializeToString(deterministic=True))


def assert_same(got: Any, expected: Any) -> None:
    """Equal values of the same type (arrays: dtype, shape and values; NaN equals NaN)."""
    assert type(got) is type(expected)
    if isinstance(expected, np.ndarray):
        assert got.dtype == expected.dtype and got.shape == expected.shape
        np.testing.assert_array_equal(got, expected)
    elif isinstance(expected, float) and math.isnan(expected):
        assert math.isnan(got)
    else:
        assert got == expected


def roundtrip(codec: Codec[Any], value: Any) -> Any:
    return codec.decode(wire.parse_example(wire.example([codec.entry(value)])))


def features_of(key: str, kind: str, body: bytes) -> dict[bytes, tuple[int, bytes]]:
    """``parse_example``'s dict for an Example whose one feature has the list ``kind``/``body``."""
    tag = {"bytes_list": 0x0A, "float_list": 0x12, "int64_list": 0x1A}[kind]
    feature = bytes((tag,)) + wire.encode_varint(len(body)) + body
    return wire.parse_example(wire.example([wire.map_entry(wire.key_field(key), feature)]))


def packed_ints(*values: int) -> bytes:
    payload = b"".join(wire.encode_varint(v) for v in values)
    return b"\x0a" + wire.encode_varint(len(payload)) + payload


# --- configuration ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: IntScalar("R", "x", "k", FLOAT32, ()), "R.x: IntScalar cannot hold dtype float32"),
        (
            lambda: NumericTensor("R", "x", "k", UINT64, (3,)),
            "R.x: dtype uint64 does not travel in a tf.train.Feature list (it needs encoding: raw)",
        ),
        (
            lambda: NumericTensor("R", "x", "k", FLOAT64, (3,)),
            "R.x: dtype float64 does not travel in a tf.train.Feature list (it needs encoding: "
            "raw)",
        ),
        (lambda: TextScalar("R", "x", "k", BYTES, ()), "R.x: TextScalar cannot hold dtype bytes"),
        (
            lambda: FloatScalar("R", "x", "k", FLOAT32, (1,)),
            "R.x: FloatScalar needs shape (), got (1,)",
        ),
        (
            lambda: NumericTensor("R", "x", "k", INT64, ()),
            "R.x: NumericTensor needs a shape of rank >= 1, got ()",
        ),
        (
            lambda: TextTensor("R", "x", "k", STRING, (2, 0)),
            "R.x: dimension 1 of shape (2, 0) must be a positive int",
        ),
        (
            lambda: TextTensor("R", "x", "k", STRING, (2, None)),
            "R.x: dimension 1 of shape (2, None) must be a positive int (only the first may be "
            "None)",
        ),
        (
            lambda: IntScalar("R", "x", "k", INT64, (), default=1, optional=True),
            "R.x: a feature cannot both be optional and have a default",
        ),
        (
            lambda: NumericTensor("R", "x", "k", INT64, (None,), default=(1,)),
            "R.x: a default needs a fully known shape, got (None,)",
        ),
        (
            lambda: IntScalar("R", "x", "k", UINT8, (), default=300),
            "invalid default for R.x: value 300 out of range for uint8 [0, 255]",
        ),
        (
            lambda: TextTensor("R", "x", "k", STRING, (2,), default=("a", 1)),
            "invalid default for R.x[1]: expected string, got int 1",
        ),
    ],
)
def test_configurations_a_codec_cannot_hold_are_refused(build: Any, message: str) -> None:
    with pytest.raises(TfrGenError) as info:
        build()
    assert str(info.value) == message


def test_numeric_tensor_is_subscriptable_like_generated_modules_use_it() -> None:
    codec = NumericTensor[np.float32]("R", "x", "k", FLOAT32, (2,))
    assert type(codec) is NumericTensor
    assert repr(codec) == "NumericTensor(R.x (key 'k'), float32, shape=(2,))"
    assert repr(NO_DEFAULT) == "NO_DEFAULT"


# --- coercion -----------------------------------------------------------------------------------


class Color(enum.IntEnum):
    RED = 3


@pytest.mark.parametrize(
    ("codec", "value", "expected"),
    [
        (make(INT64, ()), 5, 5),
        (make(INT64, ()), np.int32(-7), -7),
        (make(INT64, ()), Color.RED, 3),
        (make(INT64, ()), 2**63 - 1, 2**63 - 1),
        (make(UINT8, ()), np.uint8(255), 255),
        (make(BOOL, ()), True, True),
        (make(BOOL, ()), np.bool_(False), False),
        (make(FLOAT32, ()), 1, 1.0),
        (make(FLOAT32, ()), 0.1, float(np.float32(0.1))),
        (make(FLOAT32, ()), np.float16(0.5), 0.5),
        (make(FLOAT32, ()), np.int64(3), 3.0),
        (make(FLOAT32, ()), -math.inf, -math.inf),
        (make(FLOAT32, ()), 3.4028235e38, F32_MAX),
        (make(STRING, ()), "é", "é"),
        (make(STRING, ()), np.str_("np"), "np"),
        (make(BYTES, ()), b"\x00", b"\x00"),
        (make(BYTES, ()), bytearray(b"ab"), b"ab"),
        (make(BYTES, ()), memoryview(b"cd"), b"cd"),
        (make(STRING, (None,)), ("a", "b"), ["a", "b"]),
        (make(STRING, (None,)), (s for s in "xy"), ["x", "y"]),
        (make(STRING, (None,)), [np.str_("n")], ["n"]),
        (make(STRING, (None,)), [], []),
        (make(STRING, (2, 3)), [tuple("abc"), iter("def")], [["a", "b", "c"], ["d", "e", "f"]]),
        (make(STRING, (None, 2)), [("a", "b")], [["a", "b"]]),
        (make(BYTES, (2,)), [bytearray(b"x"), b"y"], [b"x", b"y"]),
    ],
)
def test_coerce_accepts_safe_values(codec: Codec[Any], value: Any, expected: Any) -> None:
    got = codec.coerce(value)
    assert type(got) is type(expected) and got == expected
    assert_plain(got)


def assert_plain(value: Any) -> None:
    """Only exact ``list``/``int``/``bool``/``float``/``str``/``bytes`` objects (no subclasses)."""
    assert type(value) in (list, int, bool, float, str, bytes), type(value)
    if type(value) is list:
        for item in value:
            assert_plain(item)


@pytest.mark.parametrize(
    ("codec", "value", "message"),
    [
        (make(INT64, ()), "abc", "R.x: expected int64, got str 'abc'"),
        (make(INT64, ()), True, "R.x: expected int64, got bool True"),
        (make(INT64, ()), 1.0, "R.x: expected int64, got float 1.0"),
        (make(INT64, ()), None, "R.x: expected int64, got None"),
        (make(INT64, ()), np.float64(2), "R.x: expected int64, got float64 np.float64(2.0)"),
        (
            make(INT64, ()),
            2**63,
            "R.x: value 9223372036854775808 out of range for int64 [-9223372036854775808, "
            "9223372036854775807]",
        ),
        (make(UINT8, ()), 300, "R.x: value 300 out of range for uint8 [0, 255]"),
        (make(UINT8, ()), -1, "R.x: value -1 out of range for uint8 [0, 255]"),
        (make(INT8, ()), np.int64(-129), "R.x: value -129 out of range for int8 [-128, 127]"),
        (make(BOOL, ()), 1, "R.x: expected bool, got int 1"),
        (make(BOOL, ()), "true", "R.x: expected bool, got str 'true'"),
        (make(FLOAT32, ()), True, "R.x: expected float32, got bool True"),
        (make(FLOAT32, ()), "1.5", "R.x: expected float32, got str '1.5'"),
        (
            make(FLOAT32, ()),
            1e39,
            "R.x: value 1e+39 out of range for float32 [-3.4028234663852886e+38, "
            "3.4028234663852886e+38]",
        ),
        (
            make(FLOAT32, ()),
            -(2.0**128 - 2.0**103),
            "R.x: value -3.4028235677973366e+38 out of range for float32 "
            "[-3.4028234663852886e+38, 3.4028234663852886e+38]",
        ),
        (
            make(FLOAT32, ()),
            10**400,
            f"R.x: value {10**400!r} out of range for float32 [-3.4028234663852886e+38, "
            "3.4028234663852886e+38]",
        ),
        (make(STRING, ()), b"x", "R.x: expected string, got bytes b'x'"),
        (make(STRING, ()), 5, "R.x: expected string, got int 5"),
        (
            make(STRING, ()),
            "a\ud800",
            "R.x: expected a string encodable as UTF-8, got str 'a\\ud800'",
        ),
        (make(BYTES, ()), "x", "R.x: expected bytes, got str 'x'"),
        (make(BYTES, ()), [1], "R.x: expected bytes, got list [1]"),
        (make(BYTES, ()), "y" * 100, "R.x: expected bytes, got str '" + "y" * 36 + "..."),
    ],
)
def test_coerce_rejects_scalars_with_exact_messages(
    codec: Codec[Any], value: Any, message: str
) -> None:
    with pytest.raises(RecordError) as info:
        codec.coerce(value)
    assert str(info.value) == message


@pytest.mark.parametrize(
    ("dtype", "shape", "value", "expected"),
    [
        (FLOAT32, (2, 3), [[1, 2, 3], [4, 5, 6]], np.arange(1, 7, dtype=np.float32).reshape(2, 3)),
        (FLOAT32, (2,), (0.1, 2.5), np.array([0.1, 2.5], np.float32)),
        (FLOAT32, (2,), np.array([1e38, -np.inf]), np.array([1e38, -np.inf], np.float32)),
        (FLOAT32, (None,), [], np.zeros(0, np.float32)),
        (FLOAT32, (None, 2), [], np.zeros((0, 2), np.float32)),
        (FLOAT32, (None, 2), [[1, 2], [3, 4.5]], np.array([[1, 2], [3, 4.5]], np.float32)),
        (FLOAT32, (2,), [1, 10**20], np.array([1, 1e20], np.float32)),
        (INT64, (3,), [1, -2, 2**62], np.array([1, -2, 2**62], np.int64)),
        (INT64, (2,), np.array([1, 2], np.uint32), np.array([1, 2], np.int64)),
        (UINT8, (None,), [0, 255], np.array([0, 255], np.uint8)),
        (INT8, (2,), np.array([-128, 127]), np.array([-128, 127], np.int8)),
        (UINT32, (1,), [2**32 - 1], np.array([2**32 - 1], np.uint32)),
        (BOOL, (2,), [True, False], np.array([True, False])),
        (BOOL, (None,), np.array([], dtype=np.float64), np.zeros(0, bool)),
    ],
)
def test_numeric_tensor_coerce_makes_new_owned_arrays(
    dtype: DType, shape: Shape, value: Any, expected: Any
) -> None:
    codec = make(dtype, shape)
    got = codec.coerce(value)
    assert_same(got, expected)
    assert got.flags.owndata and got.flags.c_contiguous and got.flags.writeable
    assert got is not value


def test_numeric_tensor_coerce_copies_its_input() -> None:
    source = np.arange(6, dtype=np.float32).reshape(2, 3)
    got = make(FLOAT32, (2, 3)).coerce(source)
    source[0, 0] = 99
    assert got[0, 0] == 0
    transposed = make(INT64, (3, 2)).coerce(np.arange(6).reshape(2, 3).T)
    assert transposed.flags.c_contiguous
    assert transposed.tolist() == [[0, 3], [1, 4], [2, 5]]


@pytest.mark.parametrize(
    ("dtype", "shape", "value", "message"),
    [
        (FLOAT32, (2, 3), np.zeros((3, 2)), "R.x: expected shape (2, 3), got (3, 2)"),
        (FLOAT32, (2, 3), [0.0] * 6, "R.x: expected shape (2, 3), got (6,)"),
        (FLOAT32, (None, 2), [[1, 2, 3]], "R.x: expected shape (None, 2), got (1, 3)"),
        (FLOAT32, (None, 2), [1, 2], "R.x: expected shape (None, 2), got (2,)"),
        (FLOAT32, (None, 2), np.zeros((0, 5)), "R.x: expected shape (None, 2), got (0, 5)"),
        (
            FLOAT32,
            (None,),
            np.float32(1),
            "R.x: expected float32 values with shape (None,), got float32 np.float32(1.0)",
        ),
        (FLOAT32, (None,), np.array(1.0), "R.x: expected shape (None,), got ()"),
        (FLOAT32, (3,), [], "R.x: expected shape (3,), got (0,)"),
        (FLOAT32, (2,), [[1], [2, 3]], "R.x: expected shape (2,), got a ragged nested list"),
        (FLOAT32, (2,), "ab", "R.x: expected float32 values with shape (2,), got str 'ab'"),
        (FLOAT32, (2,), None, "R.x: expected float32 values with shape (2,), got None"),
        (
            FLOAT32,
            (2,),
            range(2),
            "R.x: expected float32 values with shape (2,), got range range(0, 2)",
        ),
        (FLOAT32, (2,), ["a", "b"], "R.x: expected float32 values, got list of str ['a', 'b']"),
        (
            FLOAT32,
            (2,),
            [True, False],
            "R.x: expected float32 values, got list of bool [True, False]",
        ),
        (FLOAT32, (1,), [1j], "R.x: expected float32 values, got list of complex [1j]"),
        (FLOAT32, (2,), [1.0, None], "R.x: expected float32 values, got list holding None"),
        (
            FLOAT32,
            (2,),
            [1.0, 1e39],
            "R.x: value 1e+39 out of range for float32 [-3.4028234663852886e+38, "
            "3.4028234663852886e+38]",
        ),
        (
            FLOAT32,
            (2,),
            [1, 10**400],
            f"R.x: value {10**400!r} out of range for float32 [-3.4028234663852886e+38, "
            "3.4028234663852886e+38]",
        ),
        (INT64, (2,), [1.0, 2.0], "R.x: expected int64 values, got list of float [1.0, 2.0]"),
        (
            INT64,
            (2,),
            np.array([1, 2.5]),
            "R.x: expected int64 values, got ndarray of float64 array([1. , 2.5])",
        ),
        (INT64, (2,), [True, False], "R.x: expected int64 values, got list of bool [True, False]"),
        (INT64, (2,), [1, "2"], "R.x: expected int64 values, got list of str [1, '2']"),
        (INT64, (2,), [1, True, None], "R.x: expected int64 values, got list holding bool True"),
        (
            INT64,
            (2,),
            [1, 2**70],
            "R.x: value 1180591620717411303424 out of range for int64 [-9223372036854775808, "
            "9223372036854775807]",
        ),
        (
            INT64,
            (1,),
            np.array([2**63], np.uint64),
            "R.x: value 9223372036854775808 out of range for int64 [-9223372036854775808, "
            "9223372036854775807]",
        ),
        (UINT8, (2,), [1, 300], "R.x: value 300 out of range for uint8 [0, 255]"),
        (UINT8, (2,), np.array([-1, 3]), "R.x: value -1 out of range for uint8 [0, 255]"),
        (INT16, (None,), [40000], "R.x: value 40000 out of range for int16 [-32768, 32767]"),
        (BOOL, (2,), [1, 0], "R.x: expected bool values, got list of int [1, 0]"),
        (BOOL, (2,), [True, None], "R.x: expected bool values, got list holding None"),
    ],
)
def test_numeric_tensor_coerce_rejects_with_exact_messages(
    dtype: DType, shape: Shape, value: Any, message: str
) -> None:
    with pytest.raises(RecordError) as info:
        make(dtype, shape).coerce(value)
    assert str(info.value) == message


@pytest.mark.parametrize(
    ("dtype", "shape", "value", "message"),
    [
        (
            STRING,
            (None,),
            "abc",
            "R.x: expected an iterable of string values with shape (None,), got str 'abc'",
        ),
        (
            STRING,
            (None,),
            5,
            "R.x: expected an iterable of string values with shape (None,), got int 5",
        ),
        (
            STRING,
            (None,),
            None,
            "R.x: expected an iterable of string values with shape (None,), got None",
        ),
        (STRING, (None,), ["a", 1], "R.x[1]: expected string, got int 1"),
        (STRING, (None,), ["a", b"b"], "R.x[1]: expected string, got bytes b'b'"),
        (
            STRING,
            (None,),
            ["ok", "\udc80"],
            "R.x[1]: expected a string encodable as UTF-8, got str '\\udc80'",
        ),
        (STRING, (3,), ["a", "b"], "R.x: expected 3 items (shape (3,)), got 2"),
        (STRING, (1,), [], "R.x: expected 1 item (shape (1,)), got 0"),
        (
            STRING,
            (None, 2),
            [["a", "b"], ["c"]],
            "R.x[1]: expected 2 items (shape (None, 2)), got 1",
        ),
        (
            STRING,
            (2, 3),
            [["a", "b", "c"], "def", "g"],
            "R.x: expected 2 items (shape (2, 3)), got 3",
        ),
        (STRING, (2, 3), [["a", "b", "c"], 7], "R.x[1]: expected an iterable, got int 7"),
        (STRING, (2, 1), [["a"], b"b"], "R.x[1]: expected an iterable, got bytes b'b'"),
        (
            STRING,
            (None, 1),
            [["a"], ["b", "c"]],
            "R.x[1]: expected 1 item (shape (None, 1)), got 2",
        ),
        (STRING, (None, 2, 1), [[["a"], [5]]], "R.x[0][1][0]: expected string, got int 5"),
        (
            BYTES,
            (None,),
            b"abc",
            "R.x: expected an iterable of bytes values with shape (None,), got bytes b'abc'",
        ),
        (BYTES, (None,), [b"a", "b"], "R.x[1]: expected bytes, got str 'b'"),
    ],
)
def test_string_list_coerce_rejects_with_exact_messages(
    dtype: DType, shape: Shape, value: Any, message: str
) -> None:
    with pytest.raises(RecordError) as info:
        make(dtype, shape).coerce(value)
    assert str(info.value) == message


def test_coerce_optional_keeps_none_only_for_optional_features() -> None:
    assert make(STRING, (), optional=True).coerce_optional(None) is None
    assert make(FLOAT32, (2,), optional=True).coerce_optional(None) is None
    assert make(STRING, (), optional=True).coerce_optional("a") == "a"
    with pytest.raises(RecordError, match=r"^R\.x: expected int64, got None$"):
        make(INT64, ()).coerce_optional(None)


# --- entry bytes --------------------------------------------------------------------------------

ENTRY_CASES = [
    (dtype, shape, rows)
    for dtype in LIST_DTYPES
    for shape in SHAPES
    for rows in ((0, 1, 5) if shape and shape[0] is None else (0,))
]


@pytest.mark.parametrize(("dtype", "shape", "rows"), ENTRY_CASES)
def test_entries_match_protobuf_and_decode_back(dtype: DType, shape: Shape, rows: int) -> None:
    codec = make(dtype, shape, key="feature")
    value, flat = sample(dtype, shape, rows)
    canonical = codec.coerce(value)
    data = wire.example([codec.entry(canonical)])
    assert data == pb_example("feature", dtype, flat)
    assert_same(codec.decode(wire.parse_example(data)), canonical)
    assert wire.example([codec.entry(value)]) == data  # a non-canonical value is coerced


@pytest.mark.parametrize("key", ["", "k", "ключ", "K" * 130, "a b/c:d"])
@pytest.mark.parametrize("dtype", [INT64, BOOL, FLOAT32, STRING, BYTES])
def test_entries_match_protobuf_for_any_key(key: str, dtype: DType) -> None:
    for shape in ((), (2,), (None,)):
        codec = make(dtype, shape, key=key)
        value, flat = sample(dtype, shape, 40)
        assert wire.example([codec.entry(codec.coerce(value))]) == pb_example(key, dtype, flat)


@pytest.mark.parametrize("number", [0, 1, 127, 128, 255, 2**31, -1, -(2**63), 2**63 - 1])
def test_int_scalar_entries_match_protobuf_for_every_varint_length(number: int) -> None:
    codec = make(INT64, ())
    assert wire.example([codec.entry(number)]) == pb_example("k", INT64, [number])
    assert wire.example([codec.entry(np.int64(number))]) == pb_example("k", INT64, [number])


@pytest.mark.parametrize("size", [0, 1, 63, 64, 127, 128, 300, 20000])
def test_string_entries_match_protobuf_for_every_length(size: int) -> None:
    text = "t" * size
    assert wire.example([make(STRING, ()).entry(text)]) == pb_example("k", STRING, [text])
    items = [text, "u"]
    assert wire.example([make(STRING, (None,)).entry(items)]) == pb_example("k", STRING, items)


def test_float_entries_round_to_float32_like_protobuf() -> None:
    for number in (0.1, 1 / 3, 3.4028235e38, 1e-46, -0.0):
        expected = pb_example("k", FLOAT32, [number])
        assert wire.example([make(FLOAT32, ()).entry(number)]) == expected
        assert wire.example([make(FLOAT32, (1,)).entry([number])]) == expected


def test_float_entry_of_nan_is_a_float32_nan() -> None:
    data = wire.example([make(FLOAT32, ()).entry(math.nan)])
    assert math.isnan(make(FLOAT32, ()).decode(wire.parse_example(data)))


def test_entry_of_numeric_arrays_in_any_layout_or_dtype() -> None:
    codec = make(INT64, (3, 2))
    expected = pb_example("k", INT64, [0, 3, 1, 4, 2, 5])
    transposed = np.arange(6, dtype=np.int64).reshape(2, 3).T
    assert wire.example([codec.entry(transposed)]) == expected
    assert wire.example([codec.entry(transposed.astype(np.int16))]) == expected
    floats = make(FLOAT32, (None,))
    strided = np.arange(10, dtype=np.float32)[::3]
    assert wire.example([floats.entry(strided)]) == pb_example("k", FLOAT32, [0.0, 3.0, 6.0, 9.0])
    big_endian = np.array([1.5, 2.5], dtype=">f4")
    assert wire.example([floats.entry(big_endian)]) == pb_example("k", FLOAT32, [1.5, 2.5])
    bools = make(BOOL, (None,))
    assert wire.example([bools.entry(np.array([True, False]))]) == pb_example("k", BOOL, [1, 0])


@pytest.mark.parametrize(
    ("codec", "value", "message"),
    [
        (make(INT64, ()), "abc", "R.x: expected int64, got str 'abc'"),
        (make(INT64, ()), None, "R.x: expected int64, got None"),
        (make(UINT8, ()), 256, "R.x: value 256 out of range for uint8 [0, 255]"),
        (make(BOOL, ()), 1, "R.x: expected bool, got int 1"),
        (
            make(FLOAT32, ()),
            1e300,
            "R.x: value 1e+300 out of range for float32 [-3.4028234663852886e+38, "
            "3.4028234663852886e+38]",
        ),
        (make(FLOAT32, ()), "1", "R.x: expected float32, got str '1'"),
        (
            make(STRING, ()),
            "\ud800",
            "R.x: expected a string encodable as UTF-8, got str '\\ud800'",
        ),
        (make(STRING, ()), 1, "R.x: expected string, got int 1"),
        (make(BYTES, ()), "s", "R.x: expected bytes, got str 's'"),
        (
            make(FLOAT32, (2, 3)),
            np.zeros((3, 2), np.float32),
            "R.x: expected shape (2, 3), got (3, 2)",
        ),
        (
            make(INT64, (None,)),
            np.zeros((2, 2), np.int64),
            "R.x: expected shape (None,), got (2, 2)",
        ),
        (make(INT8, (1,)), np.array([200]), "R.x: value 200 out of range for int8 [-128, 127]"),
        (make(STRING, (None,)), ["a", 2], "R.x[1]: expected string, got int 2"),
        (
            make(STRING, (None,)),
            ["\ud800"],
            "R.x[0]: expected a string encodable as UTF-8, got str '\\ud800'",
        ),
        (make(STRING, (2,)), ["a"], "R.x: expected 2 items (shape (2,)), got 1"),
        (make(BYTES, (None,)), [b"a", "b"], "R.x[1]: expected bytes, got str 'b'"),
        (
            make(BYTES, (None, 1)),
            [[b"a"], [b"b", b"c"]],
            "R.x[1]: expected 1 item (shape (None, 1)), got 2",
        ),
    ],
)
def test_entry_validates_values_assigned_after_construction(
    codec: Codec[Any], value: Any, message: str
) -> None:
    with pytest.raises(RecordError) as info:
        codec.entry(value)
    assert str(info.value) == message


def test_entry_of_none_is_empty_for_optional_features() -> None:
    for dtype in LIST_DTYPES:
        for shape in SHAPES:
            assert make(dtype, shape, optional=True).entry(None) == b""


# --- decoding -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("codec", "features", "message"),
    [
        (
            make(INT64, (), key="Age", name="age"),
            {},
            "R.age (key 'Age'): required feature is missing (expected int64_list with 1 value)",
        ),
        (
            make(FLOAT32, (2, 3)),
            {},
            "R.x (key 'k'): required feature is missing (expected float_list with 6 values)",
        ),
        (
            make(STRING, ()),
            {b"k": (0, b"")},
            "R.x (key 'k'): required feature is missing (expected bytes_list with 1 value)",
        ),
        (
            make(INT64, ()),
            features_of("k", "float_list", b"\x0a\x04\x00\x00\x80\x3f"),
            "R.x (key 'k'): expected int64_list, found float_list",
        ),
        (
            make(STRING, (None,)),
            features_of("k", "int64_list", b""),
            "R.x (key 'k'): expected bytes_list, found int64_list",
        ),
        (
            make(FLOAT32, (), default=1.0),
            features_of("k", "bytes_list", b""),
            "R.x (key 'k'): expected float_list, found bytes_list",
        ),
        (
            make(INT64, ()),
            features_of("k", "int64_list", packed_ints(1, 2)),
            "R.x (key 'k'): expected 1 int64_list value, found 2",
        ),
        (
            make(BOOL, ()),
            features_of("k", "int64_list", b""),
            "R.x (key 'k'): expected 1 int64_list value, found 0",
        ),
        (
            make(FLOAT32, ()),
            features_of("k", "float_list", b""),
            "R.x (key 'k'): expected 1 float_list value, found 0",
        ),
        (
            make(BYTES, ()),
            features_of("k", "bytes_list", b"\x0a\x01a\x0a\x01b"),
            "R.x (key 'k'): expected 1 bytes_list value, found 2",
        ),
        (
            make(STRING, ()),
            features_of("k", "bytes_list", b""),
            "R.x (key 'k'): expected 1 bytes_list value, found 0",
        ),
        (
            make(FLOAT32, (2, 3)),
            features_of("k", "float_list", b"\x0a\x14" + bytes(20)),
            "R.x (key 'k'): expected 6 float_list values for shape (2, 3), found 5",
        ),
        (
            make(INT64, (3,), default=(1, 2, 3)),
            features_of("k", "int64_list", b""),
            "R.x (key 'k'): expected 3 int64_list values for shape (3,), found 0",
        ),
        (
            make(STRING, (2,), default=("a", "b")),
            features_of("k", "bytes_list", b"\x0a\x01a"),
            "R.x (key 'k'): expected 2 bytes_list values for shape (2,), found 1",
        ),
        (
            make(INT64, (None, 2)),
            features_of("k", "int64_list", packed_ints(1, 2, 3)),
            "R.x (key 'k'): expected a multiple of 2 int64_list values for shape (None, 2), found "
            "3",
        ),
        (
            make(STRING, (None, 3)),
            features_of("k", "bytes_list", b"\x0a\x00" * 4),
            "R.x (key 'k'): expected a multiple of 3 bytes_list values for shape (None, 3), found "
            "4",
        ),
        (
            make(UINT8, ()),
            features_of("k", "int64_list", packed_ints(300)),
            "R.x (key 'k'): value 300 out of range for uint8 [0, 255]",
        ),
        (
            make(INT32, ()),
            features_of("k", "int64_list", packed_ints(-(2**31) - 1)),
            "R.x (key 'k'): value -2147483649 out of range for int32 [-2147483648, 2147483647]",
        ),
        (
            make(INT8, (None,)),
            features_of("k", "int64_list", packed_ints(1, -200)),
            "R.x (key 'k'): value -200 out of range for int8 [-128, 127]",
        ),
        (
            make(UINT16, (2,)),
            features_of("k", "int64_list", packed_ints(1, 70000)),
            "R.x (key 'k'): value 70000 out of range for uint16 [0, 65535]",
        ),
        (
            make(BOOL, ()),
            features_of("k", "int64_list", packed_ints(2)),
            "R.x (key 'k'): value 2 out of range for bool [0, 1]",
        ),
        (
            make(BOOL, (None,)),
            features_of("k", "int64_list", packed_ints(1, -1)),
            "R.x (key 'k'): value -1 out of range for bool [0, 1]",
        ),
        (
            make(STRING, ()),
            features_of("k", "bytes_list", b"\x0a\x02a\xff"),
            "R.x (key 'k'): expected valid UTF-8 (invalid start byte at byte 1), found bytes "
            "b'a\\xff'",
        ),
        (
            make(STRING, (None,)),
            features_of("k", "bytes_list", b"\x0a\x01a\x0a\x02\xc3\x28"),
            "R.x (key 'k'): expected valid UTF-8 in value 1, found bytes b'\\xc3('",
        ),
    ],
)
def test_decode_errors_name_the_feature(
    codec: Codec[Any], features: dict[bytes, tuple[int, bytes]], message: str
) -> None:
    with pytest.raises(RecordError) as info:
        codec.decode(features)
    assert str(info.value) == message


def test_decode_reports_malformed_list_bodies_with_the_feature() -> None:
    with pytest.raises(RecordError) as info:
        make(INT64, ()).decode(features_of("k", "int64_list", b"\x0a\x01\x80"))
    assert str(info.value) == (
        "R.x (key 'k'): Int64List: truncated varint at byte offset 2 (the message ends at byte "
        "offset 3)"
    )
    with pytest.raises(RecordError, match=r"^R\.x \(key 'k'\): FloatList: .* not a multiple of 4$"):
        make(FLOAT32, (None,), optional=True).decode_optional(
            features_of("k", "float_list", b"\x0a\x03abc")
        )
    with pytest.raises(
        RecordError, match=r"^R\.x \(key 'k'\): BytesList: length 5 at byte offset 1"
    ):
        make(STRING, (2,)).decode(features_of("k", "bytes_list", b"\x0a\x05ab"))


def test_an_empty_list_of_an_optional_fixed_shape_feature_decodes_to_none() -> None:
    """TensorFlow parses it as no row of the shape, like an absent feature."""
    for dtype, shape in ((INT64, ()), (FLOAT32, (2, 3)), (STRING, (2,)), (BOOL, ())):
        kind = dtype.wire.list_name
        codec = make(dtype, shape, optional=True)
        assert codec.decode_optional(features_of("k", kind, b"")) is None
        assert (
            codec.decode_optional(
                features_of("k", kind, b"\x0a\x00" if dtype.numeric else b"\x12\x00")
            )
            is None
        )
    with pytest.raises(
        RecordError,
        match=r"^R\.x \(key 'k'\): expected 2 int64_list values for shape \(2,\), found 0$",
    ):
        make(INT64, (2,), default=(1, 2)).decode_optional(features_of("k", "int64_list", b""))


@pytest.mark.parametrize(
    ("codec", "body", "expected"),
    [
        (make(INT64, ()), b"\x08\x05", 5),  # unpacked
        (make(INT64, ()), packed_ints(-5), -5),
        (make(UINT8, ()), packed_ints(200), 200),
        (make(BOOL, ()), b"\x08\x01", True),
        (make(BOOL, ()), packed_ints(0), False),
        (make(FLOAT32, ()), b"\x0d\x00\x00\xc0\x3f", 1.5),  # unpacked
        (make(STRING, ()), b"\x0a\x80\x01" + b"s" * 128, "s" * 128),
        (make(BYTES, ()), b"\x12\x00\x0a\x01b", b"b"),  # an unknown field first
        (make(INT64, (2,)), b"\x08\x01" + packed_ints(2), np.array([1, 2])),
        (
            make(FLOAT32, (2,)),
            b"\x0d\x00\x00\x80\x3f\x0d\x00\x00\x00\x40",
            np.array([1, 2], np.float32),
        ),
        (
            make(FLOAT32, (2,)),
            b"\x0a\x04\x00\x00\x80\x3f\x0a\x04\x00\x00\x00\x40",
            np.array([1, 2], np.float32),
        ),
        (make(UINT8, (None, 2)), packed_ints(1, 2, 3, 255), np.array([[1, 2], [3, 255]], np.uint8)),
        (make(STRING, (2, 1)), b"\x0a\x01a\x0a\x01b", [["a"], ["b"]]),
    ],
)
def test_decode_accepts_every_valid_list_encoding(
    codec: Codec[Any], body: bytes, expected: Any
) -> None:
    kind = codec.dtype.wire.list_name
    got = codec.decode(features_of("k", kind, body))
    if isinstance(expected, np.ndarray):
        expected = expected.astype(codec.dtype.numpy)
    assert_same(got, expected)


def test_absent_features_decode_to_default_empty_or_none_when_optional() -> None:
    absent: dict[bytes, tuple[int, bytes]] = {}
    kindless = {b"k": (0, b"")}
    for features in (absent, kindless):
        assert make(FLOAT32, (), default=0.5).decode(features) == 0.5
        assert make(STRING, (), default="d").decode(features) == "d"
        assert make(BOOL, (), default=True).decode(features) is True
        assert_same(make(INT8, (None, 2)).decode(features), np.zeros((0, 2), np.int8))
        assert make(STRING, (None,)).decode(features) == []
        assert make(BYTES, (None, 3)).decode_optional(features) == []
        assert make(STRING, (), optional=True).decode_optional(features) is None
        assert make(FLOAT32, (2, 3), optional=True).decode_optional(features) is None
        assert make(FLOAT32, (None, 2), optional=True).decode_optional(features) is None
        assert make(INT64, (None,), optional=True).decode_optional(features) is None
        assert make(STRING, (None,), optional=True).decode_optional(features) is None
        with pytest.raises(RecordError, match="required feature is missing"):
            make(INT64, ()).decode_optional(features)


def test_optional_leading_none_features_keep_none_apart_from_no_rows() -> None:
    """``None`` is written as no entry and ``[]`` as an empty list: each decodes back to itself."""
    cases: list[tuple[DType, Shape, Any]] = [
        (INT64, (None,), np.zeros(0, np.int64)),
        (FLOAT32, (None, 2), np.zeros((0, 2), np.float32)),
        (STRING, (None,), []),
        (BYTES, (None, 3), []),
    ]
    for dtype, shape, empty in cases:
        codec = make(dtype, shape, optional=True)
        assert codec.entry(None) == b""
        assert codec.decode_optional(wire.parse_example(wire.example([]))) is None
        decoded = codec.decode_optional(wire.parse_example(wire.example([codec.entry(empty)])))
        assert_same(decoded, empty)


def test_present_optional_features_decode_to_values() -> None:
    codec = make(STRING, (), optional=True)
    assert codec.decode_optional(features_of("k", "bytes_list", b"\x0a\x01a")) == "a"
    tensor = make(INT64, (2,), optional=True)
    got = tensor.decode_optional(features_of("k", "int64_list", packed_ints(3, 4)))
    assert_same(got, np.array([3, 4]))
    with pytest.raises(RecordError, match="expected 2 int64_list values"):
        tensor.decode_optional(features_of("k", "int64_list", packed_ints(3)))


def test_decoded_defaults_are_fresh_copies() -> None:
    array_codec = make(FLOAT32, (2,), default=(1.0, 2.0))
    first = array_codec.decode({})
    first[0] = 9.0
    assert array_codec.decode({}).tolist() == [1.0, 2.0]
    list_codec = make(STRING, (2, 1), default=(("a",), ("b",)))
    rows = list_codec.decode({})
    assert rows == [["a"], ["b"]]
    rows[0].append("c")
    assert list_codec.decode({}) == [["a"], ["b"]]


# --- description --------------------------------------------------------------------------------


def test_info_describes_the_feature() -> None:
    codec = NumericTensor[np.float32](
        "Customer", "emb", "embedding", FLOAT32, (2, 3), default=((0, 0, 0), (1, 2, 0.1))
    )
    assert codec.info() == FeatureInfo(
        name="emb",
        key="embedding",
        dtype="float32",
        wire="float_list",
        shape=(2, 3),
        fixed=True,
        default=((0.0, 0.0, 0.0), (1.0, 2.0, float(np.float32(0.1)))),
        optional=False,
    )
    assert make(STRING, (None, 2)).info().fixed is False
    assert make(BYTES, (), optional=True).info().default is None
    assert make(UINT8, (2,), default=[1, 2]).info().default == (1, 2)
    assert make(STRING, (1,), default=["a"]).info().default == ("a",)


def test_feature_spec_is_a_readable_sequence() -> None:
    infos = (
        IntScalar("Customer", "age", "Age", INT64, ()).info(),
        TextTensor("Customer", "movie", "Movie", STRING, (None, 2)).info(),
        FloatScalar("Customer", "price", "Purchase Price", FLOAT32, (), default=0.5).info(),
        TextScalar("Customer", "nick", "nickname", STRING, (), optional=True).info(),
    )
    spec = FeatureSpec("Customer", infos)
    assert len(spec) == 4 and spec[0] is infos[0] and spec[1:3] == infos[1:3]
    assert list(spec) == list(infos) and infos[3] in spec
    assert str(spec) == (
        "Customer: 4 features\n"
        "  name   key             dtype    wire        shape      default  optional\n"
        "  age    Age             int64    int64_list  []         -        no\n"
        "  movie  Movie           string   bytes_list  [null, 2]  -        no\n"
        "  price  Purchase Price  float32  float_list  []         0.5      no\n"
        "  nick   nickname        string   bytes_list  []         -        yes"
    )
    assert repr(spec).startswith("FeatureSpec(record='Customer', features=(FeatureInfo(name='age'")
    assert str(FeatureSpec("One", infos[:1])).startswith("One: 1 feature\n")


def test_tensorflow_helpers_name_the_missing_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "tensorflow", None)
    codec = make(INT64, ())
    message = r"install it with: pip install 'tfr-gen\[tensorflow\]'"
    with pytest.raises(MissingExtraError, match=r"^TensorFlow is required for .*" + message):
        parse_specs(codec.info())
    with pytest.raises(MissingExtraError, match=message):
        post_process(codec.info(), {}, batched=False)
    with pytest.raises(MissingExtraError, match=message):
        tf_parse_example(b"", [codec])


# --- properties ---------------------------------------------------------------------------------


def elements(dtype: DType) -> st.SearchStrategy[Any]:
    if dtype.kind is Kind.INT:
        return st.integers(dtype.lo, dtype.hi)
    if dtype.kind is Kind.BOOL:
        return st.booleans()
    if dtype.kind is Kind.FLOAT:
        return st.floats(width=32) | st.floats(-F32_MAX, F32_MAX) | st.integers(-(2**70), 2**70)
    if dtype.kind is Kind.STR:
        return st.text(max_size=140)
    return st.binary(max_size=140)


@st.composite
def codec_and_value(draw: st.DrawFn) -> tuple[Codec[Any], Any, list[Any]]:
    dtype = draw(st.sampled_from(LIST_DTYPES))
    shape = draw(st.sampled_from(SHAPES))
    key = draw(st.text(min_size=0, max_size=3) | st.just("k" * 200))
    concrete = tuple(draw(st.integers(0, 4)) if d is None else d for d in shape)
    flat = draw(
        st.lists(elements(dtype), min_size=math.prod(concrete), max_size=math.prod(concrete))
    )
    codec = make(dtype, shape, key=key)
    value = flat[0] if shape == () else nest(flat, concrete)
    return codec, value, flat


@settings(max_examples=400, deadline=None)
@given(codec_and_value())
def test_entries_round_trip_and_match_protobuf(case: tuple[Codec[Any], Any, list[Any]]) -> None:
    codec, value, flat = case
    canonical = codec.coerce(value)
    data = wire.example([codec.entry(canonical)])
    assert_same(codec.decode(wire.parse_example(data)), canonical)
    if codec.dtype.kind is Kind.FLOAT:
        flat = [float(np.float32(v)) for v in np.asarray(canonical, dtype=np.float32).reshape(-1)]
    assert data == pb_example(codec.key, codec.dtype, flat)
