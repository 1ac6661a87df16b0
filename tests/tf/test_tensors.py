"""Raw and ragged tensor codecs agree with TensorFlow: Examples parse under ``tf_specs()`` and
``tf_post`` to the values our decoder gives (one Example and a batch), and where TensorFlow refuses
an Example, so do we."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from codegen.dtypes import (
    BOOL,
    BYTES,
    DTYPES,
    FLOAT32,
    FLOAT64,
    INT64,
    STRING,
    UINT8,
    UINT64,
    DType,
    Kind,
)
from codegen.errors import RecordError
from codegen.runtime.codec import wire
from codegen.runtime.codec.features import Codec
from codegen.runtime.codec.tensors import RaggedStrings, RaggedTensor, RawTensor
from codegen.runtime.tf.parse import parse_specs, tf_feature_spec, tf_parse_example
from support.codecs import codec_entries
from support.tf_values import plain, ragged_value, raw_value, tf_plain
from support.wire_bytes import int64_list

pytestmark = pytest.mark.tensorflow

Shape = tuple[int | None, ...]
NUMERIC = tuple(d for d in DTYPES.values() if d.numeric)
LIST_DTYPES = tuple(d for d in DTYPES.values() if d.list_ok)
RAW_SHAPES: tuple[Shape, ...] = ((), (2, 3), (None, 2, None))
RAGGED_SHAPES: tuple[Shape, ...] = ((None, None), (None, None, 2), (None, None, None))


def raw(dtype: DType, shape: Shape, name: str, **kwargs: Any) -> RawTensor[Any]:
    return RawTensor("R", name, f"key {name}", dtype, shape, **kwargs)


def ragged(dtype: DType, shape: Shape, name: str, **kwargs: Any) -> Codec[Any]:
    if dtype.numeric:
        return RaggedTensor("R", name, f"key {name}", dtype, shape, **kwargs)
    return RaggedStrings("R", name, f"key {name}", dtype, shape, **kwargs)


def encode(codecs: list[Codec[Any]], values: list[Any]) -> bytes:
    """The Example holding each codec's value (entries and companions), keys in protobuf's order."""
    entries = []
    for codec, value in zip(codecs, values, strict=True):
        entries.extend(codec_entries(codec, value))
    return wire.example(entry for _, entry in sorted(entries, key=lambda e: e[0].encode()))


def expected(codec: Codec[Any], value: Any) -> Any:
    """What ``tf_post`` gives for our decoded ``value``: optional raw features ``[0 or 1, *shape]``,
    an absent optional ragged feature no rows."""
    if isinstance(codec, RawTensor) and codec.optional:
        return [] if value is None else [plain(value)]
    return [] if value is None else plain(value)


def check_against_tensorflow(tf: Any, codecs: list[Codec[Any]], examples: list[bytes]) -> None:
    """Each Example alone and all as a batch parse with TensorFlow to what our decoder gives."""
    ours = [
        [codec.decode_optional(wire.parse_example(data)) for codec in codecs] for data in examples
    ]
    batch = tf_parse_example(tf.constant(examples), codecs)
    assert list(batch) == [codec.name for codec in codecs]
    columns = {name: tf_plain(tf, tensor) for name, tensor in batch.items()}
    for i, data in enumerate(examples):
        single = tf_parse_example(data, codecs)
        for codec, value in zip(codecs, ours[i], strict=True):
            want = expected(codec, value)
            assert tf_plain(tf, single[codec.name]) == want, (codec, i)
            assert columns[codec.name][i] == want, (codec, i)
            if isinstance(value, np.ndarray) and not codec.optional:
                assert tuple(single[codec.name].shape) == value.shape, (codec, i)
    for codec in codecs:
        want_dtype = "string" if codec.dtype.kind in (Kind.STR, Kind.BYTES) else codec.dtype.name
        assert batch[codec.name].dtype.name == want_dtype, codec


def raw_codecs() -> list[Codec[Any]]:
    return [
        raw(dtype, shape, f"{dtype.name}_{i}{'_opt' if optional else ''}", optional=optional)
        for dtype in NUMERIC
        for i, shape in enumerate(RAW_SHAPES)
        for optional in (False, True)
    ]


def test_raw_tensors_parse_like_our_decoder(tf: Any) -> None:
    codecs = raw_codecs()
    examples = [
        encode(codecs, [raw_value(c.dtype, c.shape, seed) for c in codecs]) for seed in (1, 2, 3)
    ]
    examples.append(
        encode(codecs, [None if c.optional else raw_value(c.dtype, c.shape, 4) for c in codecs])
    )
    check_against_tensorflow(tf, codecs, examples)


def test_ragged_tensors_parse_like_our_decoder(tf: Any) -> None:
    codecs = [
        ragged(dtype, shape, f"{dtype.name}_{i}{'_opt' if optional else ''}", optional=optional)
        for dtype in LIST_DTYPES
        for i, shape in enumerate(RAGGED_SHAPES)
        for optional in (False, True)
    ]
    examples = [
        encode(codecs, [c.coerce(ragged_value(c.dtype, c.shape, seed)) for c in codecs])
        for seed in (0, 1, 2)
    ]
    examples.append(encode(codecs, [None if c.optional else [] for c in codecs]))
    examples.append(wire.example([]))
    check_against_tensorflow(tf, codecs, examples)


def test_examples_built_by_tensorflow_decode_like_tensorflow_parses_them(tf: Any) -> None:
    image = raw(UINT8, (None, None, 3), "image")
    boxes = ragged(FLOAT32, (None, None, 4), "boxes")
    words = ragged(STRING, (None, None), "words", optional=True)
    pixels = np.arange(2 * 5 * 3, dtype=np.uint8).reshape(2, 5, 3)
    feature = tf.train.Feature
    message = tf.train.Example(
        features=tf.train.Features(
            feature={
                "key image": feature(bytes_list=tf.train.BytesList(value=[pixels.tobytes()])),
                "key image/shape": feature(int64_list=tf.train.Int64List(value=[2, 5, 3])),
                "key boxes": feature(
                    float_list=tf.train.FloatList(value=[float(v) for v in range(12)])
                ),
                "key boxes/row_lengths_1": feature(int64_list=tf.train.Int64List(value=[2, 0, 1])),
                "key words": feature(bytes_list=tf.train.BytesList(value=["é".encode(), b"b"])),
                "key words/row_lengths_1": feature(int64_list=tf.train.Int64List(value=[0, 2])),
            }
        )
    )
    data = message.SerializeToString()
    features = wire.parse_example(data)
    assert np.array_equal(image.decode(features), pixels)
    assert plain(boxes.decode(features)) == [[[0, 1, 2, 3], [4, 5, 6, 7]], [], [[8, 9, 10, 11]]]
    assert words.decode_optional(features) == [[], ["é", "b"]]
    check_against_tensorflow(
        tf, [image, boxes, words], [data, encode([image, boxes, words], [pixels, [], None])]
    )


def test_parse_specs_are_the_documented_tensorflow_features(tf: Any) -> None:
    assert parse_specs(raw(FLOAT64, (2,), "a").info()) == {
        "key a": tf.io.FixedLenFeature((), tf.string)
    }
    assert parse_specs(raw(UINT8, (None, None, 3), "b").info()) == {
        "key b": tf.io.FixedLenFeature((), tf.string),
        "key b/shape": tf.io.FixedLenFeature((3,), tf.int64),
    }
    assert parse_specs(raw(INT64, (None,), "c", optional=True).info()) == {
        "key c": tf.io.RaggedFeature(tf.string, row_splits_dtype=tf.int64),
        "key c/shape": tf.io.RaggedFeature(tf.int64, row_splits_dtype=tf.int64),
    }
    partitions = [
        tf.io.RaggedFeature.RowLengths("key d/row_lengths_1"),
        tf.io.RaggedFeature.RowLengths("key d/row_lengths_2"),
        tf.io.RaggedFeature.UniformRowLength(4),
    ]
    spec = {
        "key d": tf.io.RaggedFeature(
            tf.float32, value_key="key d", partitions=partitions, row_splits_dtype=tf.int64
        )
    }
    assert parse_specs(ragged(FLOAT32, (None, None, None, 4), "d").info()) == spec
    codecs = [raw(UINT8, (None, None, 3), "b"), ragged(FLOAT32, (None, None, None, 4), "d")]
    assert list(tf_feature_spec(codecs)) == ["key b", "key b/shape", "key d"]


def one_example(*items: tuple[str, str, bytes]) -> bytes:
    """An Example whose features have the given (key, list kind, body)."""
    entries = []
    for key, kind, body in items:
        tag = {"bytes_list": 0x0A, "float_list": 0x12, "int64_list": 0x1A}[kind]
        entries.append(
            (
                key,
                wire.map_entry(
                    wire.key_field(key), bytes((tag,)) + wire.encode_varint(len(body)) + body
                ),
            )
        )
    return wire.example(entry for _, entry in sorted(entries, key=lambda e: e[0].encode()))


def blob(data: bytes) -> bytes:
    return b"\x0a" + wire.encode_varint(len(data)) + data


BAD_EXAMPLES = [
    (raw(FLOAT32, (2,), "a"), one_example(), "required feature is missing"),
    (
        raw(FLOAT32, (2,), "a"),
        one_example(("key a", "bytes_list", blob(bytes(12)))),
        "expected 8 bytes",
    ),
    (
        raw(FLOAT64, (2,), "a", optional=True),
        one_example(("key a", "bytes_list", blob(bytes(8)))),
        "expected 16 bytes",
    ),
    (
        raw(INT64, (2,), "a"),
        one_example(("key a", "float_list", b"")),
        "expected bytes_list, found float_list",
    ),
    (
        raw(UINT8, (2,), "a", optional=True),
        one_example(("key a", "bytes_list", blob(b"ab") * 2)),
        "expected 1 bytes_list value, found 2",
    ),
    (
        raw(UINT8, (None, 3), "a"),
        one_example(("key a", "bytes_list", blob(bytes(6)))),
        "companion 'key a/shape' is missing",
    ),
    (
        raw(UINT8, (None, 3), "a"),
        one_example(
            ("key a", "bytes_list", blob(bytes(6))), ("key a/shape", "int64_list", int64_list(3, 2))
        ),
        "does not fit the declared shape",
    ),
    (
        raw(UINT64, (None,), "a"),
        one_example(
            ("key a", "bytes_list", blob(bytes(8))), ("key a/shape", "int64_list", int64_list(2))
        ),
        "expected 16 bytes",
    ),
    (
        raw(UINT8, (None,), "a", optional=True),
        one_example(
            ("key a", "bytes_list", blob(bytes(2))), ("key a/shape", "int64_list", int64_list(2, 1))
        ),
        "does not fit the declared shape",
    ),
    (
        raw(UINT8, (None, None), "a"),
        one_example(
            ("key a", "bytes_list", blob(b"")), ("key a/shape", "int64_list", int64_list(-1, 0))
        ),
        "does not fit the declared shape",
    ),
    (
        raw(BOOL, (2,), "a"),
        one_example(("key a", "bytes_list", blob(b"\x01\x02"))),
        "value 2 out of range for bool",
    ),
    (
        ragged(INT64, (None, None), "a"),
        one_example(
            ("key a", "int64_list", int64_list(1, 2, 3)),
            ("key a/row_lengths_1", "int64_list", int64_list(1, 1)),
        ),
        "expected 2 int64_list values, found 3",
    ),
    (
        ragged(INT64, (None, None), "a"),
        one_example(
            ("key a", "int64_list", int64_list(1)),
            ("key a/row_lengths_1", "int64_list", int64_list(2, -1)),
        ),
        "is negative",
    ),
    (
        ragged(STRING, (None, None, None), "a"),
        one_example(
            ("key a/row_lengths_1", "int64_list", int64_list(1)),
            ("key a/row_lengths_2", "int64_list", int64_list(0, 0)),
        ),
        "holds 2 row lengths",
    ),
    (
        ragged(FLOAT32, (None, None, 2), "a"),
        one_example(
            ("key a", "float_list", blob(bytes(12))),
            ("key a/row_lengths_1", "int64_list", int64_list(1)),
        ),
        "expected 2 float_list values, found 3",
    ),
    (
        ragged(BYTES, (None, None), "a"),
        one_example(("key a/row_lengths_1", "float_list", b"")),
        "expected int64_list in 'key a/row_lengths_1'",
    ),
    (
        ragged(BYTES, (None, None), "a"),
        one_example(("key a", "int64_list", b"")),
        "expected bytes_list",
    ),
]


@pytest.mark.parametrize(
    ("codec", "data", "message"),
    BAD_EXAMPLES,
    ids=[f"{c.dtype.name}{list(c.shape)}-{m}" for c, _, m in BAD_EXAMPLES],
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


@pytest.mark.parametrize(
    ("codec", "records"),
    [
        (
            ragged(INT64, (None, None), "a"),
            [
                (
                    ("key a", "int64_list", b""),
                    ("key a/row_lengths_1", "int64_list", int64_list(5)),
                ),
                (("key a", "int64_list", int64_list(1, 2, 3, 4, 5)),),
            ],
        ),
        (
            ragged(INT64, (None, None, None), "a"),
            [
                (
                    ("key a/row_lengths_1", "int64_list", int64_list(2)),
                    ("key a/row_lengths_2", "int64_list", int64_list(1)),
                    ("key a", "int64_list", b""),
                ),
                (
                    ("key a/row_lengths_1", "int64_list", b""),
                    ("key a/row_lengths_2", "int64_list", int64_list(0)),
                    ("key a", "int64_list", int64_list(7)),
                ),
            ],
        ),
    ],
    ids=["values-moved", "row-lengths-moved"],
)
def test_a_batch_never_moves_values_between_records_whose_counts_balance_out(
    tf: Any, codec: Codec[Any], records: list[tuple[tuple[str, str, bytes], ...]]
) -> None:
    """Each record's counts are wrong, but the batch's add up: TensorFlow alone would partition
    the joined values (``[[[1, 2, 3, 4, 5]], []]`` for the first case)."""
    batch = [one_example(*items) for items in records]
    joined = tf.io.parse_example(tf.constant(batch), tf_feature_spec([codec]))["key a"]
    assert joined.shape[0] == 2  # TensorFlow's own batch parse raises nothing
    for data in batch:
        with pytest.raises(RecordError, match="row lengths|holds"):
            codec.decode_optional(wire.parse_example(data))
        with pytest.raises(tf.errors.InvalidArgumentError):
            tf_parse_example(data, [codec])
    with pytest.raises(tf.errors.InvalidArgumentError, match="in some Example the row lengths"):
        tf_parse_example(tf.constant(batch), [codec])
