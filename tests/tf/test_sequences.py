"""Feature list codecs agree with TensorFlow: SequenceExamples parse with
``tf_parse_sequence_example`` (one record and a batch) to the values our decoder gives,
SequenceExamples built by TensorFlow decode to what TensorFlow parses, and where TensorFlow refuses
a SequenceExample, so do we."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from codegen.dtypes import (
    BYTES,
    DTYPES,
    FLOAT32,
    FLOAT64,
    INT16,
    INT64,
    STRING,
    UINT8,
    DType,
    Kind,
)
from codegen.errors import RecordError
from codegen.runtime.codec import wire
from codegen.runtime.codec.features import Codec, IntScalar, TextTensor
from codegen.runtime.codec.sequences import (
    SequenceCodec,
    SequenceRagged,
    SequenceStrings,
    SequenceTensor,
)
from codegen.runtime.codec.tensors import RaggedTensor, RawTensor
from codegen.runtime.tf.parse import parse_specs, tf_feature_spec, tf_parse_sequence_example
from support.codecs import codec_entries
from support.tf_values import plain, steps_value, tf_plain
from support.wire_bytes import int64_list

pytestmark = pytest.mark.tensorflow

Shape = tuple[int | None, ...]
LIST_DTYPES = tuple(d for d in DTYPES.values() if d.list_ok)
STEP_SHAPES: tuple[Shape, ...] = ((), (2,), (None,), (None, 2))


def make(dtype: DType, shape: Shape, name: str, **kwargs: Any) -> SequenceCodec[Any]:
    key = f"key {name}"
    if not dtype.numeric:
        return SequenceStrings("S", name, key, dtype, shape, **kwargs)
    if None in shape:
        return SequenceRagged("S", name, key, dtype, shape, **kwargs)
    return SequenceTensor("S", name, key, dtype, shape, **kwargs)


def encode(
    context: list[Codec[Any]],
    context_values: list[Any],
    lists: list[SequenceCodec[Any]],
    values: list[Any],
) -> bytes:
    entries = []
    for codec, value in zip(context, context_values, strict=True):
        entries.extend(codec_entries(codec, value))
    list_entries = [
        (c.key, c.entry(c.coerce(v))) for c, v in zip(lists, values, strict=True) if v is not None
    ]
    return wire.sequence_example(
        (e for _, e in sorted(entries, key=lambda e: e[0].encode())),
        (e for _, e in sorted(list_entries, key=lambda e: e[0].encode())),
    )


def expected(value: Any) -> Any:
    return [] if value is None else plain(value)


def check_against_tensorflow(
    tf: Any, context: list[Codec[Any]], lists: list[SequenceCodec[Any]], records: list[bytes]
) -> None:
    """Each record alone and all as a batch parse with TensorFlow to what our decoders give."""
    ours = []
    for data in records:
        features, feature_lists = wire.parse_sequence_example(data)
        ours.append(
            [c.decode_optional(features) for c in context]
            + [c.decode(feature_lists) for c in lists]
        )
    codecs: list[Any] = [*context, *lists]
    batch = tf_parse_sequence_example(tf.constant(records), context, lists)
    assert list(batch) == [c.name for c in codecs]
    columns = {name: tf_plain(tf, tensor) for name, tensor in batch.items()}
    for i, data in enumerate(records):
        single = tf_parse_sequence_example(data, context, lists)
        for codec, value in zip(codecs, ours[i], strict=True):
            assert tf_plain(tf, single[codec.name]) == expected(value), (codec, i)
            assert columns[codec.name][i] == expected(value), (codec, i)
    for codec in codecs:
        want_dtype = "string" if codec.dtype.kind in (Kind.STR, Kind.BYTES) else codec.dtype.name
        assert batch[codec.name].dtype.name == want_dtype, codec


def context_codecs() -> list[Codec[Any]]:
    return [
        IntScalar("S", "id", "id", INT64, ()),
        RawTensor("S", "pixels", "pixels", FLOAT64, (None, 2)),
        RaggedTensor("S", "spans", "spans", INT16, (None, None), optional=True),
        TextTensor("S", "tags", "tags", STRING, (None,)),
    ]


def test_feature_lists_parse_like_our_decoder(tf: Any) -> None:
    context = context_codecs()
    lists = [
        make(dtype, shape, f"{dtype.name}_{i}{'_opt' if optional else ''}", optional=optional)
        for dtype in LIST_DTYPES
        for i, shape in enumerate(STEP_SHAPES)
        for optional in (False, True)
    ]
    records = []
    for seed, absent in ((0, False), (1, False), (2, True)):
        context_values = [
            seed,
            np.arange(2 * seed, dtype=np.float64).reshape(seed, 2),
            None if absent else [np.array([seed], np.int16), np.zeros(0, np.int16)],
            ["a"] * seed,
        ]
        values = [
            None if absent and c.optional else steps_value(c.dtype, c.shape, (seed + j) % 4, seed)
            for j, c in enumerate(lists)
        ]
        records.append(encode(context, context_values, lists, values))
    check_against_tensorflow(tf, context, lists, records)


def test_sequence_examples_built_by_tensorflow_decode_like_tensorflow_parses_them(tf: Any) -> None:
    context: list[Codec[Any]] = [IntScalar("S", "id", "id", INT64, ())]
    frames = make(FLOAT32, (2,), "frames")
    words = make(STRING, (), "words", optional=True)
    spans = make(UINT8, (None,), "spans")
    train = tf.train
    message = train.SequenceExample(
        context=train.Features(
            feature={"id": train.Feature(int64_list=train.Int64List(value=[7]))}
        ),
        feature_lists=train.FeatureLists(
            feature_list={
                "key frames": train.FeatureList(
                    feature=[
                        train.Feature(float_list=train.FloatList(value=[t, -t]))
                        for t in (1.0, 2.0, 3.0)
                    ]
                ),
                "key words": train.FeatureList(
                    feature=[
                        train.Feature(bytes_list=train.BytesList(value=[w.encode()]))
                        for w in ("é", "b")
                    ]
                ),
                "key spans": train.FeatureList(
                    feature=[
                        train.Feature(int64_list=train.Int64List(value=[1, 255])),
                        train.Feature(),  # a step without a list: no values
                        train.Feature(int64_list=train.Int64List(value=[])),
                    ]
                ),
            }
        ),
    )
    data = message.SerializeToString()
    lists = wire.parse_sequence_example(data)[1]
    assert frames.decode(lists).tolist() == [[1, -1], [2, -2], [3, -3]]
    assert words.decode(lists) == ["é", "b"]
    assert plain(spans.decode(lists)) == [[1, 255], [], []]
    check_against_tensorflow(tf, context, [frames, words, spans], [data])


def test_sequence_parse_specs_are_the_documented_tensorflow_features(tf: Any) -> None:
    assert parse_specs(make(FLOAT32, (2,), "a").info()) == {
        "key a": tf.io.FixedLenSequenceFeature((2,), tf.float32)
    }
    assert parse_specs(make(STRING, (), "b", optional=True).info()) == {
        "key b": tf.io.FixedLenSequenceFeature((), tf.string, allow_missing=True)
    }
    assert parse_specs(make(UINT8, (None, 3), "c").info()) == {
        "key c": tf.io.RaggedFeature(tf.int64, row_splits_dtype=tf.int64)
    }
    assert list(tf_feature_spec([make(BYTES, (None,), "d"), make(INT64, (), "e")])) == [
        "key d",
        "key e",
    ]


def sequence_of(*steps_of: tuple[str, list[tuple[str, bytes]]]) -> bytes:
    """A SequenceExample whose feature lists have the given steps: (key, [(list kind, body)])."""
    tags = {"bytes_list": 0x0A, "float_list": 0x12, "int64_list": 0x1A}
    entries = []
    for key, steps in steps_of:
        features = [
            b"" if kind == "none" else bytes((tags[kind],)) + wire.encode_varint(len(body)) + body
            for kind, body in steps
        ]
        entries.append(wire.feature_list_entry(wire.key_field(key), features))
    return wire.sequence_example([], entries)


BAD_RECORDS = [
    (make(INT64, (), "a"), sequence_of(), "required feature list is missing"),
    (
        make(INT64, (2,), "a"),
        sequence_of(("key a", [("int64_list", int64_list(1, 2)), ("int64_list", int64_list(1))])),
        "step 1: expected 2",
    ),
    (
        make(INT64, (), "a"),
        sequence_of(("key a", [("float_list", b"")])),
        "step 0: expected int64_list, found float_list",
    ),
    (
        make(FLOAT32, (), "a", optional=True),
        sequence_of(("key a", [("none", b"")])),
        "step 0: expected 1 float_list value, found 0",
    ),
    (
        make(STRING, (), "a"),
        sequence_of(("key a", [("bytes_list", b"\x0a\x00" * 2)])),
        "step 0: expected 1 bytes_list value, found 2",
    ),
    (
        make(INT16, (None, 2), "a"),
        sequence_of(("key a", [("int64_list", int64_list(1, 2, 3))])),
        "step 0: expected a multiple of 2",
    ),
    (
        make(BYTES, (None, 2), "a"),
        sequence_of(("key a", [("bytes_list", b"\x0a\x00")])),
        "step 0: expected a multiple of 2",
    ),
    (
        make(FLOAT32, (None,), "a"),
        sequence_of(("key a", [("int64_list", b"")])),
        "step 0: expected float_list, found int64_list",
    ),
]


@pytest.mark.parametrize(
    ("codec", "data", "message"),
    BAD_RECORDS,
    ids=[f"{c.dtype.name}{list(c.shape)}-{m}" for c, _, m in BAD_RECORDS],
)
def test_sequence_examples_tensorflow_refuses_are_refused(
    tf: Any, codec: SequenceCodec[Any], data: bytes, message: str
) -> None:
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf_parse_sequence_example(data, [], [codec])
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf_parse_sequence_example([data, data], [], [codec])
    with pytest.raises(RecordError) as info:
        codec.decode(wire.parse_sequence_example(data)[1])
    assert str(info.value).startswith("S.a (key 'key a')")
    assert message in str(info.value)


def test_parse_sequence_example_checks_its_input(tf: Any) -> None:
    codec = make(INT64, (), "a")
    data = wire.sequence_example([], [codec.entry(codec.coerce([1, 2]))])
    with pytest.raises(RecordError, match=r"scalar or 1-D string tensor .* got shape \(1, 1\)"):
        tf_parse_sequence_example([[data]], [], [codec])
    with pytest.raises(RecordError, match="expected serialized SequenceExamples .* got float"):
        tf_parse_sequence_example(1.5, [], [codec])
    assert tf_parse_sequence_example(data, [], []) == {}
    assert tf_plain(tf, tf_parse_sequence_example(data, [], [codec])["a"]) == [1, 2]
