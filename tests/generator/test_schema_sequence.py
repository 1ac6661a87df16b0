"""SequenceExample records, raw tensors and ragged shapes in the schema language: the IR they
lower to, every rule with its message and position, and agreement with TensorFlow's parsers."""

from __future__ import annotations

import textwrap
from typing import Any

import pytest

from codegen.dtypes import DTYPES
from codegen.generator.ir import Location, RecordIR
from codegen.generator.load import parse_schema
from codegen.generator.schema.model import SchemaDoc
from support.schemas import problems, records_schema

NUMERIC_SCALAR = "numeric_scalar"
STRING_SCALAR = "string_scalar"
RAGGED_TENSOR = "ragged_tensor"
RAW_TENSOR = "raw_tensor"
SEQUENCE_FEATURE = "sequence_feature"
"""The names of the feature kinds (codegen.kinds.KINDS) these tests expect."""

SCHEMA = textwrap.dedent(
    """\
    version: 1
    records:
      Sentence:                          # a tf.train.SequenceExample record
        context:
          length: {dtype: int64}
          source: {dtype: string, optional: true}
        sequence:
          tokens: {dtype: int64}
          frame: {dtype: float32, shape: [4]}
          words: {dtype: string, shape: [null]}
          spans: {dtype: int32, shape: [null], optional: true}
      Photo:
        features:
          label: {dtype: int64}
          image: {dtype: uint8, shape: [null, null, 3], encoding: raw}
          depth: {dtype: float64, shape: [480, 640], encoding: raw}
          boxes: {dtype: float32, shape: [null, null]}
          paths: {key: path/parts, dtype: string, shape: [null, null, null]}
    """
)

RAW_DTYPES = "int64, int32, int16, int8, uint64, uint32, uint16, uint8, float32, float64, float16"
LEADING_NULLS = (
    "only leading dimensions may be null (of unknown length) with the list encoding, not one after"
    " a fixed dimension"
)
USE_RAW = "; use 'encoding: raw' for unknown dimensions anywhere"
STEP_NULLS = (
    "the shape of a sequence feature is that of one step, and only its first dimension may be null"
    " (of unknown length)"
)
RAW_DEFAULT = (
    "a default is not supported with encoding: raw; remove it, or set 'optional: true' to allow the"
    " feature to be absent"
)
SEQUENCE_DEFAULT = (
    "TensorFlow rejects a default on a sequence feature; remove it ('optional: true' reads a"
    " missing feature list as zero steps)"
)
RAW_IN_SEQUENCE = (
    "encoding 'raw' is not supported for sequence features (each step is one Feature of a"
    " FeatureList); use the list encoding"
)


def records(text: str) -> tuple[RecordIR, ...]:
    return parse_schema(text, "s.yaml").records


# -- the IR ----------------------------------------------------------------------------------------


def test_sequence_record_lowers_to_context_and_sequence_features() -> None:
    sentence, _ = records(SCHEMA)
    assert (sentence.name, sentence.kind, sentence.loc) == (
        "Sentence",
        "sequence",
        Location("s.yaml", 3, 3),
    )
    assert [
        (f.kind.name, f.name, f.dtype.name, f.shape, f.optional) for f in sentence.features
    ] == [
        (NUMERIC_SCALAR, "length", "int64", (), False),
        (STRING_SCALAR, "source", "string", (), True),
    ]
    assert [
        (f.name, f.dtype.name, f.shape, f.optional, f.codec.codec) for f in sentence.sequence
    ] == [
        ("tokens", "int64", (), False, "SequenceTensor"),
        ("frame", "float32", (4,), False, "SequenceTensor"),
        ("words", "string", (None,), False, "SequenceStrings"),
        ("spans", "int32", (None,), True, "SequenceRagged"),
    ]
    assert all(f.kind.name == SEQUENCE_FEATURE and not f.has_default for f in sentence.sequence)
    assert [f.name for f in sentence.all_features] == [
        "length",
        "source",
        "tokens",
        "frame",
        "words",
        "spans",
    ]
    assert [f.loc.line for f in sentence.all_features] == [5, 6, 8, 9, 10, 11]


def test_raw_and_ragged_features_lower_with_their_companion_keys() -> None:
    _, photo = records(SCHEMA)
    assert (photo.kind, photo.sequence) == ("example", ())
    label, image, depth, boxes, paths = photo.features
    assert label.kind.name == NUMERIC_SCALAR
    assert (image.kind.name, image.dtype.name, image.shape, image.codec.codec) == (
        RAW_TENSOR,
        "uint8",
        (None, None, 3),
        "RawTensor",
    )
    assert image.kind.name == RAW_TENSOR and image.companion_keys == ("image/shape",)
    assert depth.kind.name == RAW_TENSOR and depth.is_fixed and depth.companion_keys == ()
    assert depth.dtype is DTYPES["float64"] and depth.shape == (480, 640)
    assert boxes.kind.name == RAGGED_TENSOR and boxes.codec.codec == "RaggedTensor"
    assert boxes.shape == (None, None) and boxes.companion_keys == ("boxes/row_lengths_1",)
    assert paths.kind.name == RAGGED_TENSOR and paths.codec.codec == "RaggedStrings"
    assert paths.companion_keys == ("path/parts/row_lengths_1", "path/parts/row_lengths_2")
    assert [(key, f.name, part) for key, f, part in RecordIR.wire_order(photo.features)] == [
        ("boxes", "boxes", 0),
        ("boxes/row_lengths_1", "boxes", 1),
        ("depth", "depth", 0),
        ("image", "image", 0),
        ("image/shape", "image", 1),
        ("label", "label", 0),
        ("path/parts", "paths", 0),
        ("path/parts/row_lengths_1", "paths", 1),
        ("path/parts/row_lengths_2", "paths", 2),
    ]


def test_a_sequence_record_may_leave_out_its_context() -> None:
    (record,) = records(
        "version: 1\nrecords:\n  A:\n    sequence:\n      f: {dtype: bytes, shape: [2]}\n"
    )
    assert (record.kind, record.features) == ("sequence", ())
    (f,) = record.sequence
    assert (f.dtype.name, f.shape, f.codec.codec) == ("bytes", (2,), "SequenceStrings")


@pytest.mark.parametrize(
    "dtype", "int8 int16 int32 int64 uint8 uint16 uint32 uint64 float16 float32 float64".split()
)
def test_every_integer_and_float_dtype_has_a_raw_encoding(dtype: str) -> None:
    (record,) = records(
        "version: 1\nrecords:\n  A:\n    sequence: {s: {dtype: int64}}\n"
        "    context:\n"
        f"      f: {{dtype: {dtype}, shape: [null, 2, null], encoding: raw, optional: true}}\n"
    )
    (f,) = record.features
    assert f.kind.name == RAW_TENSOR and f.dtype is DTYPES[dtype] and f.optional
    assert f.companion_keys == ("f/shape",)


def test_companion_keys_that_no_feature_writes_are_free_to_use() -> None:
    text = one_feature("{dtype: int8, shape: [2, 2], encoding: raw}") + (
        "      g: {key: f/shape, dtype: int64, shape: [null, 2]}\n"
        "      h: {key: g/row_lengths_1, dtype: int64}\n"
        "      i: {key: f/row_lengths_1, dtype: int64}\n"
    )
    assert [f.key for f in records(text)[0].features] == [
        "f",
        "f/shape",
        "g/row_lengths_1",
        "f/row_lengths_1",
    ]


def test_context_and_sequence_keys_are_separate_maps() -> None:
    text = textwrap.dedent(
        """\
        version: 1
        records:
          A:
            context:
              a: {key: x, dtype: int64}
              b: {dtype: float32, shape: [null, 2], encoding: raw}
            sequence:
              c: {key: x, dtype: int64}
              d: {key: b/shape, dtype: int64, shape: [3]}
        """
    )
    (record,) = records(text)
    assert [f.key for f in record.all_features] == ["x", "b", "x", "b/shape"]


# -- rules -----------------------------------------------------------------------------------------


def one_feature(spec: str) -> str:
    """A schema whose record ``A`` has the Example feature ``f`` (written at line 5, column 10)."""
    return f"version: 1\nrecords:\n  A:\n    features:\n      f: {spec}\n"


def context_feature(spec: str) -> str:
    """A schema whose record ``A`` has the context feature ``f`` (written at line 6, column 10)."""
    head = "version: 1\nrecords:\n  A:\n    sequence: {s: {dtype: int64}}\n    context:\n"
    return f"{head}      f: {spec}\n"


def sequence_feature(spec: str) -> str:
    """A schema whose record ``A`` has the sequence feature ``f`` (written at line 5, column 10)."""
    return f"version: 1\nrecords:\n  A:\n    sequence:\n      f: {spec}\n"


FEATURE_CASES = [
    (
        "{dtype: string, shape: [2], encoding: raw}",
        "string",
        "encoding 'raw' stores integer and float tensors, not string; use the list encoding"
        " (remove 'encoding: raw')",
    ),
    (
        "{dtype: bool, shape: [2], encoding: raw}",
        "bool",
        "encoding 'raw' stores integer and float tensors, not bool; use the list encoding"
        " (remove 'encoding: raw')",
    ),
    (
        "{dtype: bytes, shape: [null], encoding: raw}",
        "bytes",
        "encoding 'raw' stores integer and float tensors, not bytes; use the list encoding"
        " (remove 'encoding: raw')",
    ),
    (
        "{dtype: int65, shape: [2], encoding: raw}",
        "int65",
        f"unknown dtype 'int65'; expected one of {RAW_DTYPES}",
    ),
    ("{dtype: int8, shape: [2], encoding: raw, default: [1, 2]}", "[1", RAW_DEFAULT),
    (
        "{dtype: int8, shape: [2], encoding: raw, optional: true, default: [1, 2]}",
        "[1",
        RAW_DEFAULT,
    ),
    (
        "{dtype: float32, shape: [null, 0], encoding: raw}",
        "0]",
        "a dimension must be a positive integer or null, got 0",
    ),
    (
        "{dtype: uint8, shape: [-3, null], encoding: raw}",
        "-3",
        "a dimension must be a positive integer or null, got -3",
    ),
    (
        "{dtype: float16, shape: [4294967296, null, 4294967296], encoding: raw}",
        "[",
        "shape [4294967296, null, 4294967296] has more than 2**63-1 elements",
    ),
    ("{dtype: int64, shape: [3, null]}", "null", LEADING_NULLS + USE_RAW),
    ("{dtype: float32, shape: [null, 3, null]}", "null]", LEADING_NULLS + USE_RAW),
    ("{dtype: string, shape: [null, 3, null]}", "null]", LEADING_NULLS),
    ("{dtype: bool, shape: [2, null]}", "null", LEADING_NULLS),
    (
        "{dtype: int64, shape: [null, null, 0]}",
        "0",
        "a dimension must be a positive integer or null, got 0",
    ),
    (
        "{dtype: float32, shape: [null, null], default: [[1.0]]}",
        "[[",
        "a default needs a fully known shape; shape [null, null] has a dimension of unknown length",
    ),
    (
        "{dtype: float64, shape: [null, null]}",
        "float64",
        "dtype float64 does not fit the list encoding (float_list holds float32); use dtype"
        " float32, or 'encoding: raw' to keep float64",
    ),
    (
        "{dtype: int64, encoding: stored}",
        "stored",
        "'encoding' of feature 'f' must be 'list', 'raw', 'jpeg', 'png' or 'image', got 'stored'",
    ),
]


@pytest.mark.parametrize(("spec", "marker", "message"), FEATURE_CASES)
def test_example_feature_problem_is_reported_at_its_value(
    spec: str, marker: str, message: str
) -> None:
    assert problems(one_feature(spec)) == [f"s.yaml:5:{10 + spec.index(marker)}: {message}"]


@pytest.mark.parametrize(("spec", "marker", "message"), FEATURE_CASES)
def test_context_features_follow_the_same_rules(spec: str, marker: str, message: str) -> None:
    assert problems(context_feature(spec)) == [f"s.yaml:6:{10 + spec.index(marker)}: {message}"]


SEQUENCE_CASES = [
    ("{dtype: int64, shape: [null, null]}", "null]", STEP_NULLS),
    ("{dtype: string, shape: [3, null]}", "null", STEP_NULLS),
    ("{dtype: int64, default: 0}", "0}", SEQUENCE_DEFAULT),
    ("{dtype: float32, shape: [2], optional: true, default: [1, 2]}", "[1", SEQUENCE_DEFAULT),
    ("{dtype: int64, shape: [2], encoding: raw}", "raw", RAW_IN_SEQUENCE),
    ("{dtype: int64, shape: [0]}", "0", "a dimension must be a positive integer or null, got 0"),
    (
        "{dtype: float16, shape: [2]}",
        "float16",
        "dtype float16 does not fit the list encoding (float_list holds float32); use dtype float32"
        " (sequence features cannot use 'encoding: raw')",
    ),
]


@pytest.mark.parametrize(("spec", "marker", "message"), SEQUENCE_CASES)
def test_sequence_feature_problem_is_reported_at_its_value(
    spec: str, marker: str, message: str
) -> None:
    assert problems(sequence_feature(spec)) == [f"s.yaml:5:{10 + spec.index(marker)}: {message}"]


def test_every_misplaced_null_is_reported() -> None:
    spec = "{dtype: int64, shape: [null, 2, null, null]}"
    assert problems(one_feature(spec)) == [
        f"s.yaml:5:{10 + spec.index('null,', 25)}: {LEADING_NULLS}{USE_RAW}",
        f"s.yaml:5:{10 + spec.rindex('null')}: {LEADING_NULLS}{USE_RAW}",
    ]


def test_raw_in_a_sequence_is_reported_with_the_other_problems_of_the_feature() -> None:
    spec = "{dtype: float64, shape: [null, null], encoding: raw}"
    assert problems(sequence_feature(spec)) == [
        f"s.yaml:5:{10 + spec.index('float64')}: dtype float64 does not fit the list encoding"
        " (float_list holds float32); use dtype float32 (sequence features cannot use"
        " 'encoding: raw')",
        f"s.yaml:5:{10 + spec.index('null]')}: {STEP_NULLS}",
        f"s.yaml:5:{10 + spec.index('raw')}: {RAW_IN_SEQUENCE}",
    ]


RECORD_CASES = [
    (
        "{A: {context: {a: {dtype: int64}}}}",
        "context",
        "record 'A' has 'context' but no 'sequence': a SequenceExample record needs 'sequence' (its"
        " feature lists); a tf.train.Example record has 'features'",
    ),
    (
        "{A: {context: {a: {dtype: int64}}, sequence: }}",
        "context",
        "record 'A' has 'context' but no 'sequence': a SequenceExample record needs 'sequence' (its"
        " feature lists); a tf.train.Example record has 'features'",
    ),
    (
        "{A: {features: {a: {dtype: int64}}, sequence: {b: {dtype: int64}}}}",
        "sequence",
        "record 'A' has both 'features' (a tf.train.Example) and 'sequence' (a"
        " tf.train.SequenceExample); give one kind",
    ),
    ("{A: {sequence: {}}}", "{}", "'sequence' of record 'A' must have at least one feature"),
    (
        "{A: {sequence: {a: {dtype: int64}}, context: {}}}",
        "{}}}",
        "'context' of record 'A' must have at least one feature",
    ),
    ("{A: {sequence: [a]}}", "[", "'sequence' of record 'A' must be a mapping, got a list"),
    (
        "{A: {context: {a: {dtype: int64}}, sequence: {a: {dtype: int64}}}}",
        "a: {dtype: int64}}}}",
        "feature name 'a' is already used in 'context'",
    ),
    (
        "{A: {sequence: {a: {dtype: int64}, b: {dtype: string, key: a}}}}",
        "a}}}}",
        "feature 'b' has key 'a', which feature 'a' already uses",
    ),
    (
        "{A: {sequence: {b: {dtype: int64}}, context: {b: {dtype: float32}}}}",
        "b: {dtype: float32",
        "feature name 'b' is already used in 'sequence'",
    ),
    (
        "{A: {context: {a: {dtype: int64}}, features: {b: {dtype: int64}}}}",
        "context",
        "record 'A' has both 'features' (a tf.train.Example) and 'context' (a"
        " tf.train.SequenceExample); give one kind",
    ),
]


@pytest.mark.parametrize(("text", "marker", "message"), RECORD_CASES)
def test_record_problem_is_reported_at_its_position(text: str, marker: str, message: str) -> None:
    assert problems(records_schema(text)) == [f"s.yaml:2:{10 + text.index(marker)}: {message}"]


COLLISIONS = [
    (
        "      image: {dtype: uint8, shape: [null, 3], encoding: raw}\n"
        "      dims: {key: image/shape, dtype: int64, shape: [2]}\n",
        "6:19",
        "feature 'dims' has key 'image/shape', which feature 'image' already uses for its shape",
    ),
    (
        "      dims: {key: image/shape, dtype: int64, shape: [2]}\n"
        "      image: {dtype: uint8, shape: [null, 3], encoding: raw}\n",
        "6:7",
        "feature 'image' stores its shape under key 'image/shape', which feature 'dims' already"
        " uses",
    ),
    (
        "      boxes: {dtype: float32, shape: [null, null]}\n"
        "      count: {key: boxes/row_lengths_1, dtype: int64, shape: [null]}\n",
        "6:20",
        "feature 'count' has key 'boxes/row_lengths_1', which feature 'boxes' already uses for its"
        " row lengths",
    ),
    (
        "      lengths: {key: x/shape, dtype: int64, shape: [null, null]}\n"
        "      extra: {key: x, dtype: float32, shape: [null], encoding: raw}\n",
        "6:20",
        "feature 'extra' stores its shape under key 'x/shape', which feature 'lengths' already"
        " uses",
    ),
    (
        "      grid: {key: g, dtype: int64, shape: [null, null, null]}\n"
        "      other: {key: g/row_lengths_1, dtype: uint8, shape: [null, null], encoding: raw}\n",
        "6:20",
        "feature 'other' has key 'g/row_lengths_1', which feature 'grid' already uses for its row"
        " lengths",
    ),
]


@pytest.mark.parametrize(("lines", "where", "message"), COLLISIONS)
def test_companion_keys_collide_with_other_keys_in_one_map(
    lines: str, where: str, message: str
) -> None:
    head = "version: 1\nrecords:\n  A:\n    features:\n"
    assert problems(head + lines) == [f"s.yaml:{where}: {message}"]
    context = (
        "version: 1\nrecords:\n  A:\n    context:\n" + lines + "    sequence: {s: {dtype: int64}}\n"
    )
    assert problems(context) == [f"s.yaml:{where}: {message}"]


def test_a_feature_can_collide_with_its_key_and_its_companions_at_once() -> None:
    text = one_feature("{dtype: float32, shape: [null, null]}") + (
        "      g: {key: f, dtype: int64, shape: [null, null]}\n"
    )
    assert problems(text) == [
        "s.yaml:6:16: feature 'g' has key 'f', which feature 'f' already uses",
        "s.yaml:6:16: feature 'g' stores its row lengths under key 'f/row_lengths_1', which feature"
        " 'f' already uses for its row lengths",
    ]


def test_all_problems_of_a_sequence_schema_are_reported_together() -> None:
    text = textwrap.dedent(
        """\
        version: 1
        records:
          Clip:
            context:
              frames: {dtype: int64, shape: [2, null]}
              pixels: {dtype: string, shape: [4], encoding: raw}
            sequence:
              frames: {dtype: float32, default: 0.5}
          Photo:
            context:
              image: {dtype: uint8, shape: [null], encoding: raw}
        """
    )
    assert problems(text) == [
        f"s.yaml:5:41: {LEADING_NULLS}{USE_RAW}",
        "s.yaml:6:23: encoding 'raw' stores integer and float tensors, not string; use the list"
        " encoding (remove 'encoding: raw')",
        "s.yaml:8:7: feature name 'frames' is already used in 'context'",
        f"s.yaml:8:41: {SEQUENCE_DEFAULT}",
        "s.yaml:10:5: record 'Photo' has 'context' but no 'sequence': a SequenceExample record"
        " needs 'sequence' (its feature lists); a tf.train.Example record has 'features'",
    ]


def test_json_schema_documents_the_sequence_and_raw_fields() -> None:
    schema = SchemaDoc.model_json_schema()
    record_doc = schema["$defs"]["RecordDoc"]["properties"]
    feature_doc = schema["$defs"]["FeatureDoc"]["properties"]
    described = [
        record_doc["context"],
        record_doc["sequence"],
        feature_doc["encoding"],
        feature_doc["shape"],
    ]
    for prop in described:
        assert prop["description"] and "not supported" not in prop["description"]
    assert "raw" in feature_doc["encoding"]["description"]
    assert feature_doc["encoding"]["enum"] == ["list", "raw", "jpeg", "png", "image"]
    assert {"float64", "float16", "uint64"} <= set(feature_doc["dtype"]["enum"])


# -- agreement with TensorFlow ---------------------------------------------------------------------


def test_tensorflow_accepts_one_key_in_the_context_and_the_feature_lists(tf: Any) -> None:
    example = tf.train.SequenceExample()
    example.context.feature["x"].int64_list.value.append(7)
    example.feature_lists.feature_list["x"].feature.add().int64_list.value.extend([1, 2])
    context, sequence, _ = tf.io.parse_sequence_example(
        [example.SerializeToString()],
        context_features={"x": tf.io.FixedLenFeature([], tf.int64)},
        sequence_features={"x": tf.io.FixedLenSequenceFeature([2], tf.int64)},
    )
    assert context["x"].numpy().tolist() == [7]
    assert sequence["x"].numpy().tolist() == [[[1, 2]]]
    text = (
        "version: 1\nrecords:\n  A:\n    context: {a: {key: x, dtype: int64}}\n"
        "    sequence: {b: {key: x, dtype: int64, shape: [2]}}\n"
    )
    assert [f.key for f in records(text)[0].all_features] == ["x", "x"]


def test_tensorflow_rejects_a_default_on_a_sequence_feature(tf: Any) -> None:
    feature = tf.io.FixedLenSequenceFeature([], tf.int64, allow_missing=True, default_value=0)
    with pytest.raises(ValueError, match="must be None"):
        tf.io.parse_sequence_example([b""], sequence_features={"x": feature})
    assert problems(sequence_feature("{dtype: int64, default: 0}")) == [
        f"s.yaml:5:34: {SEQUENCE_DEFAULT}"
    ]


def test_tensorflow_rejects_a_row_lengths_key_that_another_feature_reads(tf: Any) -> None:
    lengths = tf.io.RaggedFeature.RowLengths("f/row_lengths_1")
    spec = {
        "f": tf.io.RaggedFeature(tf.float32, partitions=[lengths]),
        "f/row_lengths_1": tf.io.FixedLenFeature([], tf.int64, default_value=0),
    }
    with pytest.raises(ValueError, match="must not intersect"):
        tf.io.parse_example([b""], spec)
    text = one_feature("{dtype: float32, shape: [null, null]}") + (
        "      n: {key: f/row_lengths_1, dtype: int64, default: 0}\n"
    )
    assert problems(text) == [
        "s.yaml:6:16: feature 'n' has key 'f/row_lengths_1', which feature 'f' already uses for its"
        " row lengths"
    ]
