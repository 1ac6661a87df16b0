"""The feature codecs agree with TensorFlow: bytes our entries build parse under ``tf_specs()`` and
``tf_post`` to the values our decoder gives, and where TensorFlow refuses an Example, so do we."""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np
import pytest

from codegen.dtypes import (
    BOOL,
    BYTES,
    FLOAT32,
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
from codegen.errors import RecordError
from codegen.runtime.codec import wire
from codegen.runtime.codec.features import (
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
from codegen.runtime.tf.parse import parse_specs, tf_parse_example

pytestmark = pytest.mark.tensorflow

Shape = tuple[int | None, ...]
DTYPES = (INT64, INT32, INT16, INT8, UINT32, UINT16, UINT8, BOOL, FLOAT32, STRING, BYTES)
FIXED: tuple[Shape, ...] = ((), (3,), (2, 3))
RAGGED: tuple[Shape, ...] = ((None,), (None, 2))


SCALAR_CLASSES: dict[Kind, type[Codec[Any]]] = {
    Kind.INT: IntScalar,
    Kind.BOOL: BoolScalar,
    Kind.FLOAT: FloatScalar,
    Kind.STR: TextScalar,
    Kind.BYTES: BytesScalar,
}


def make(dtype: DType, shape: Shape, name: str, **kwargs: Any) -> Codec[Any]:
    """The codec a generated module would use; the key differs from the attribute name."""
    cls: type[Codec[Any]]
    if shape == ():
        cls = SCALAR_CLASSES[dtype.kind]
    elif dtype.numeric:
        cls = NumericTensor
    else:
        cls = TextTensor if dtype.kind is Kind.STR else BytesTensor
    return cls("R", name, f"key {name}", dtype, shape, **kwargs)


def pool(dtype: DType, seed: int) -> list[Any]:
    """Scalar values of ``dtype`` (different per ``seed``), with the edges of each range."""
    values: list[Any]
    if dtype.kind is Kind.INT:
        assert dtype.lo is not None and dtype.hi is not None
        values = [
            v for v in (0, 1, -1, 127, 300, 2**40, dtype.lo, dtype.hi) if dtype.lo <= v <= dtype.hi
        ]
    elif dtype.kind is Kind.BOOL:
        values = [True, False, False]
    elif dtype.kind is Kind.FLOAT:
        values = [0.0, -1.5, 1e30, math.inf, float(np.finfo(np.float32).max), 0.1]
    elif dtype.kind is Kind.STR:
        values = ["", "a", "é" * 70, "日本語"]
    else:
        values = [b"", b"\x00\xff", b"y" * 200]
    return values[seed % len(values) :] + values[: seed % len(values)]


def value_of(dtype: DType, shape: Shape, seed: int, rows: int) -> Any:
    """A value for ``shape`` (``rows`` rows for a leading ``None``)."""
    concrete = tuple(rows if d is None else d for d in shape)
    flat = list(itertools.islice(itertools.cycle(pool(dtype, seed)), math.prod(concrete)))
    if shape == ():
        return flat[0]
    for dim in reversed(concrete[1:]):
        flat = [flat[i : i + dim] for i in range(0, len(flat), dim)]
    return flat


def plain(value: Any) -> Any:
    """Our decoded value as TensorFlow's ``tolist()`` gives it (strings as UTF-8 bytes)."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, list):
        return [plain(item) for item in value]
    if isinstance(value, str):
        return value.encode()
    return value


def tf_plain(tf: Any, tensor: Any) -> Any:
    if isinstance(tensor, tf.RaggedTensor):
        return tensor.to_list()
    value = tensor.numpy()
    return value.tolist() if hasattr(value, "tolist") else value


def expected(codec: Codec[Any], value: Any) -> Any:
    """What ``tf_post`` gives for our decoded ``value``: ``[0 or 1, *shape]`` for optional fixed
    shapes, and no rows where we give ``None`` for an absent optional leading ``None`` shape
    (TensorFlow cannot tell absent from empty there)."""
    info = codec.info()
    if info.optional and info.fixed:
        return [] if value is None else [plain(value)]
    if info.optional and value is None:
        return []
    return plain(value)


def check_against_tensorflow(tf: Any, codecs: list[Codec[Any]], examples: list[bytes]) -> None:
    """Each Example alone and all as a batch parse with TensorFlow to what our decoder gives."""
    ours = []
    for data in examples:
        features = wire.parse_example(data)
        ours.append([codec.decode_optional(features) for codec in codecs])
    batch = tf_parse_example(tf.constant(examples), codecs)
    assert list(batch) == [codec.name for codec in codecs]
    for i, data in enumerate(examples):
        single = tf_parse_example(data, codecs)
        for codec, value in zip(codecs, ours[i], strict=True):
            want = expected(codec, value)
            assert tf_plain(tf, single[codec.name]) == want, (codec, i)
            assert tf_plain(tf, batch[codec.name])[i] == want, (codec, i)
    for codec in codecs:
        want_dtype = "string" if codec.dtype.kind in (Kind.STR, Kind.BYTES) else codec.dtype.name
        assert batch[codec.name].dtype.name == want_dtype, codec


def test_present_features_parse_like_our_decoder(tf: Any) -> None:
    codecs = [
        make(dtype, shape, f"{dtype.name}_{i}")
        for dtype in DTYPES
        for i, shape in enumerate(FIXED + RAGGED)
    ]
    examples = []
    for seed, rows in enumerate((0, 1, 3)):
        entries = [
            (c.key.encode(), c.entry(c.coerce(value_of(c.dtype, c.shape, seed, rows))))
            for c in codecs
        ]
        examples.append(wire.example(entry for _, entry in sorted(entries)))
    check_against_tensorflow(tf, codecs, examples)


def test_absent_features_with_defaults_parse_like_our_decoder(tf: Any) -> None:
    codecs = [
        make(dtype, shape, f"{dtype.name}_{i}", default=value_of(dtype, shape, 1, 0))
        for dtype in DTYPES
        for i, shape in enumerate(FIXED)
    ]
    present = wire.example(
        c.entry(c.coerce(value_of(c.dtype, c.shape, 2, 0)))
        for c in sorted(codecs, key=lambda c: c.key.encode())
    )
    kindless = wire.example(
        wire.map_entry(wire.key_field(c.key), b"")
        for c in sorted(codecs, key=lambda c: c.key.encode())
    )
    check_against_tensorflow(tf, codecs, [wire.example([]), present, kindless])


def test_absent_optional_features_parse_like_our_decoder(tf: Any) -> None:
    codecs = [
        make(dtype, shape, f"{dtype.name}_{i}", optional=True)
        for dtype in DTYPES
        for i, shape in enumerate(FIXED + RAGGED)
    ]
    ordered = sorted(codecs, key=lambda c: c.key.encode())
    present = wire.example(c.entry(c.coerce(value_of(c.dtype, c.shape, 3, 2))) for c in ordered)
    half = wire.example(
        c.entry(None if i % 2 else c.coerce(value_of(c.dtype, c.shape, 0, 1)))
        for i, c in enumerate(ordered)
    )
    kindless = wire.example(wire.map_entry(wire.key_field(c.key), b"") for c in ordered)
    check_against_tensorflow(tf, codecs, [wire.example([]), present, half, kindless])


def test_parse_specs_are_the_documented_tensorflow_features(tf: Any) -> None:
    specs = parse_specs(make(FLOAT32, (2, 3), "a", default=[[0, 1, 2], [3, 4, 5]]).info())
    assert list(specs) == ["key a"]
    spec = specs["key a"]
    assert isinstance(spec, tf.io.FixedLenFeature)
    assert spec.shape == (2, 3) and spec.dtype == tf.float32
    assert np.asarray(spec.default_value).tolist() == [[0, 1, 2], [3, 4, 5]]
    required = parse_specs(make(UINT8, (), "b").info())
    assert required == {"key b": tf.io.FixedLenFeature((), tf.int64, default_value=None)}
    ragged = parse_specs(make(STRING, (None, 2), "c").info())
    assert ragged == {
        "key c": tf.io.RaggedFeature(tf.string, row_splits_dtype=tf.int64, partitions=[])
    }
    optional = parse_specs(make(BOOL, (3,), "d", optional=True).info())
    assert optional == {
        "key d": tf.io.RaggedFeature(tf.int64, row_splits_dtype=tf.int64, partitions=[])
    }


def one_feature(kind: str, body: bytes) -> bytes:
    """An Example whose only feature, under the key ``key a``, has the list ``kind``/``body``."""
    tag = {"bytes_list": 0x0A, "float_list": 0x12, "int64_list": 0x1A}[kind]
    feature = bytes((tag,)) + wire.encode_varint(len(body)) + body
    return wire.example([wire.map_entry(wire.key_field("key a"), feature)])


def ints(*values: int) -> bytes:
    payload = b"".join(wire.encode_varint(v) for v in values)
    return one_feature("int64_list", b"\x0a" + wire.encode_varint(len(payload)) + payload)


def floats(count: int) -> bytes:
    return one_feature("float_list", b"\x0a" + wire.encode_varint(4 * count) + bytes(4 * count))


def strings(count: int) -> bytes:
    return one_feature("bytes_list", b"\x0a\x01s" * count)


BAD_EXAMPLES = [
    (make(INT64, (), "a"), wire.example([]), "required feature is missing"),
    (make(STRING, (2, 3), "a"), wire.example([]), "required feature is missing"),
    (make(INT64, (), "a"), one_feature("float_list", b""), "expected int64_list, found float_list"),
    (make(FLOAT32, (3,), "a"), one_feature("bytes_list", b""), "expected float_list, found bytes"),
    (make(STRING, (None,), "a"), one_feature("int64_list", b""), "expected bytes_list, found int"),
    (make(BOOL, (3,), "a", optional=True), floats(3), "expected int64_list, found float_list"),
    (make(INT8, (), "a", default=1), strings(1), "expected int64_list, found bytes_list"),
    (make(INT64, (), "a"), ints(1, 2), "expected 1 int64_list value, found 2"),
    (make(FLOAT32, (2, 3), "a"), floats(5), "expected 6 float_list values for shape (2, 3)"),
    (make(STRING, (3,), "a", default=("x", "y", "z")), strings(2), "found 2"),
    (make(UINT8, (2,), "a", default=(1, 2)), ints(), "expected 2 int64_list values"),
    (make(FLOAT32, (3,), "a", optional=True), floats(6), "found 6"),
    (make(INT32, (2, 2), "a", optional=True), ints(1, 2), "found 2"),
    (make(FLOAT32, (None, 2), "a"), floats(3), "expected a multiple of 2 float_list values"),
    (make(INT64, (None, 3), "a"), ints(1, 2, 3, 4), "expected a multiple of 3 int64_list"),
    (make(BYTES, (None, 2), "a"), strings(5), "expected a multiple of 2 bytes_list"),
]


@pytest.mark.parametrize(
    ("codec", "data", "message"),
    BAD_EXAMPLES,
    ids=[f"{c.dtype.name}{list(c.shape)}-{message}" for c, _, message in BAD_EXAMPLES],
)
def test_examples_tensorflow_refuses_are_refused(
    tf: Any, codec: Codec[Any], data: bytes, message: str
) -> None:
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf_parse_example(data, [codec])
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf_parse_example([data, data], [codec])
    with pytest.raises(RecordError) as info:
        codec.decode_optional(wire.parse_example(data))
    assert str(info.value).startswith("R.a (key 'key a'): ")
    assert message in str(info.value)


def test_parse_example_accepts_a_mapping_and_checks_its_input(tf: Any) -> None:
    codec = make(INT16, (2,), "n")
    data = wire.example([codec.entry(codec.coerce([-3, 7]))])
    got = tf_parse_example(tf.constant(data), {"renamed": codec})
    assert list(got) == ["renamed"] and got["renamed"].dtype == tf.int16
    assert got["renamed"].numpy().tolist() == [-3, 7]
    with pytest.raises(RecordError, match=r"scalar or 1-D string tensor .* got shape \(1, 1\)"):
        tf_parse_example([[data]], [codec])
    with pytest.raises(RecordError, match="expected serialized Examples .* got float"):
        tf_parse_example(1.5, [codec])
