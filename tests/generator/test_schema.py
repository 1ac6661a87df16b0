"""Valid schemas: loading, the YAML dialect, and lowering to the IR."""

from __future__ import annotations

import math
import pathlib
import textwrap

import pytest

from codegen.dtypes import DTYPES
from codegen.generator import naming
from codegen.generator.ir import FeatureIR, Location, SchemaIR
from codegen.generator.load import load_schema, parse_schema
from codegen.generator.schema.model import LIST_DTYPES, SchemaDoc

NUMERIC_SCALAR = "numeric_scalar"
NUMERIC_TENSOR = "numeric_tensor"
STRING_SCALAR = "string_scalar"
STRING_LIST = "string_list"
RAGGED_TENSOR = "ragged_tensor"
RAW_TENSOR = "raw_tensor"
"""The names of the feature kinds (codegen.kinds.KINDS) these tests expect."""

CUSTOMER = """\
version: 1                       # required integer >= 1 (not bool, not float)
doc: Movie customers and what they bought.     # optional string
records:                         # required, non-empty mapping
  Customer:
    doc: One customer.           # optional
    features:                    # a tf.train.Example record (non-empty mapping)
      age: {dtype: int64}
      movie: {dtype: string, shape: [null]}
      movie_ratings: {key: Movie Ratings, dtype: float32, shape: [null]}
      purchase_price: {key: Purchase Price, dtype: float32, default: 0.0}
      nickname: {dtype: string, optional: true}
      embedding: {dtype: float32, shape: [2, 3], doc: "..."}
"""

MNIST = """\
version: 1
records:
  Digit:
    features:
      label: {dtype: int64}
      image: {dtype: int64, shape: [784]}
"""


def one_feature(spec: str) -> str:
    """A schema whose only record ``A`` has the one feature ``f`` (flow mapping ``spec``)."""
    return f"version: 1\nrecords:\n  A:\n    features:\n      f: {spec}\n"


def feature_of(spec: str) -> FeatureIR:
    (record,) = parse_schema(one_feature(spec), "s.yaml").records
    (feature,) = record.features
    return feature


def test_customer_schema_lowers_to_the_ir() -> None:
    ir = parse_schema(CUSTOMER, "schemas/customer.yaml")
    assert (ir.module, ir.source, ir.version) == ("customer", "schemas/customer.yaml", 1)
    assert ir.doc == "Movie customers and what they bought."
    (record,) = ir.records
    assert (record.name, record.doc) == ("Customer", "One customer.")
    assert record.loc == Location("schemas/customer.yaml", 4, 3)
    summary = [
        (
            f.kind.name,
            f.name,
            f.key,
            f.dtype.name,
            f.shape,
            f.optional,
            f.has_default,
            f.default,
            f.doc,
        )
        for f in record.features
    ]
    assert summary == [
        (NUMERIC_SCALAR, "age", "age", "int64", (), False, False, None, None),
        (STRING_LIST, "movie", "movie", "string", (None,), False, False, None, None),
        (
            NUMERIC_TENSOR,
            "movie_ratings",
            "Movie Ratings",
            "float32",
            (None,),
            False,
            False,
            None,
            None,
        ),
        (NUMERIC_SCALAR, "purchase_price", "Purchase Price", "float32", (), False, True, 0.0, None),
        (STRING_SCALAR, "nickname", "nickname", "string", (), True, False, None, None),
        (NUMERIC_TENSOR, "embedding", "embedding", "float32", (2, 3), False, False, None, "..."),
    ]
    assert [f.loc.line for f in record.features] == [7, 8, 9, 10, 11, 12]
    assert {f.loc.col for f in record.features} == {7}
    assert [key for key, _, _ in record.wire_order(record.features)] == [
        "Movie Ratings",
        "Purchase Price",
        "age",
        "embedding",
        "movie",
        "nickname",
    ]


def test_mnist_schema_lowers_to_the_ir() -> None:
    ir = parse_schema(MNIST, "mnist.yaml")
    assert ir.module == "mnist" and ir.doc is None
    (record,) = ir.records
    label, image = record.features
    assert label.kind.name == NUMERIC_SCALAR and label.codec.codec == "IntScalar"
    assert image.kind.name == NUMERIC_TENSOR and image.shape == (784,) and image.is_fixed
    assert len(ir.fingerprint) == 64 and ir.canonical.startswith("{")


@pytest.mark.parametrize(
    ("dtype", "shape", "kind", "codec"),
    [
        ("int64", "[]", NUMERIC_SCALAR, "IntScalar"),
        ("uint8", "[]", NUMERIC_SCALAR, "IntScalar"),
        ("bool", "[]", NUMERIC_SCALAR, "BoolScalar"),
        ("float32", "[]", NUMERIC_SCALAR, "FloatScalar"),
        ("int16", "[3]", NUMERIC_TENSOR, "NumericTensor"),
        ("float32", "[null, 2]", NUMERIC_TENSOR, "NumericTensor"),
        ("bool", "[null]", NUMERIC_TENSOR, "NumericTensor"),
        ("string", "[]", STRING_SCALAR, "TextScalar"),
        ("bytes", "[]", STRING_SCALAR, "BytesScalar"),
        ("string", "[2, 2]", STRING_LIST, "TextTensor"),
        ("bytes", "[null]", STRING_LIST, "BytesTensor"),
        ("int64", "[null, null]", RAGGED_TENSOR, "RaggedTensor"),
        ("bool", "[null, null, 2]", RAGGED_TENSOR, "RaggedTensor"),
        ("string", "[null, null]", RAGGED_TENSOR, "RaggedStrings"),
        ("bytes", "[null, null, null]", RAGGED_TENSOR, "RaggedStrings"),
        ("uint8", "[null, null, 3], encoding: raw", RAW_TENSOR, "RawTensor"),
        ("float64", "[2], encoding: raw", RAW_TENSOR, "RawTensor"),
    ],
)
def test_feature_kind_follows_dtype_and_shape(
    dtype: str, shape: str, kind: str, codec: str
) -> None:
    feature = feature_of(f"{{dtype: {dtype}, shape: {shape}}}")
    assert feature.kind.name == kind
    assert feature.codec.codec == codec
    assert feature.dtype is DTYPES[dtype]


@pytest.mark.parametrize("dtype", LIST_DTYPES)
def test_every_list_dtype_is_accepted(dtype: str) -> None:
    assert feature_of(f"{{dtype: {dtype}}}").dtype.name == dtype


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("{dtype: int64, default: -9223372036854775808}", -(2**63)),
        ("{dtype: uint32, default: 4294967295}", 2**32 - 1),
        ("{dtype: int8, default: 010}", 10),
        ("{dtype: int32, default: 0x1F}", 31),
        ("{dtype: int32, default: 0o17}", 15),
        ("{dtype: bool, default: false}", False),
        ("{dtype: bool, default: True}", True),
        ("{dtype: float32, default: 0.1}", 0.10000000149011612),
        ("{dtype: float32, default: 3}", 3.0),
        ("{dtype: float32, default: 1e-3}", 0.0010000000474974513),
        ("{dtype: float32, default: 3.4028235e+38}", 3.4028234663852886e38),
        ("{dtype: float32, default: -.inf}", -math.inf),
        ("{dtype: string, default: héllo}", "héllo"),
        ("{dtype: string, default: 2020-01-01}", "2020-01-01"),
        ("{dtype: string, default: ''}", ""),
        ("{dtype: bytes, default: héllo}", "héllo".encode()),
        ("{dtype: bytes, default: !!binary aMOpbGxv}", "héllo".encode()),
        ("{dtype: int64, shape: [3], default: [1, 2, 3]}", (1, 2, 3)),
        ("{dtype: float32, shape: [2, 2], default: [[1, 2], [3, 4]]}", ((1.0, 2.0), (3.0, 4.0))),
        ("{dtype: float32, shape: [2, 2], default: [1, 2, 3, 4]}", ((1.0, 2.0), (3.0, 4.0))),
        ("{dtype: int64, shape: [2, 1, 2], default: [1, 2, 3, 4]}", (((1, 2),), ((3, 4),))),
        ("{dtype: string, shape: [2], default: [a, b]}", ("a", "b")),
        ("{dtype: bool, shape: [1], default: [true]}", (True,)),
    ],
)
def test_defaults_are_checked_and_normalized(spec: str, expected: object) -> None:
    feature = feature_of(spec)
    assert feature.has_default
    assert feature.default == expected
    assert type(feature.default) is type(expected)


def test_nan_default_is_kept() -> None:
    feature = feature_of("{dtype: float32, default: .nan}")
    assert isinstance(feature.default, float) and math.isnan(feature.default)


def test_float_defaults_keep_their_type_inside_tensors() -> None:
    default = feature_of("{dtype: float32, shape: [2], default: [1, .5]}").default
    assert isinstance(default, tuple) and default == (1.0, 0.5)
    assert all(type(v) is float for v in default)


def test_explicit_optional_false_allows_a_default() -> None:
    feature = feature_of("{dtype: int64, optional: false, default: 7}")
    assert feature.default == 7 and not feature.optional


@pytest.mark.parametrize("name", ["on", "off", "yes", "no", "y", "n", "true_", "null_value", "id"])
def test_yaml_1_1_booleans_are_ordinary_names(name: str) -> None:
    ir = parse_schema(
        f"version: 1\nrecords:\n  A:\n    features:\n      {name}: {{dtype: int64}}\n", "s.yaml"
    )
    assert ir.records[0].features[0].name == name


def test_keys_may_hold_any_text() -> None:
    feature = feature_of("{key: 'a/b: ünïcode 🙂 #1', dtype: string}")
    assert feature.key == "a/b: ünïcode 🙂 #1"


def test_same_key_in_different_records_is_fine() -> None:
    record = "{features: {a: {dtype: int64}}}"
    text = f"version: 1\nrecords:\n  A: {record}\n  B: {record}\n"
    assert [r.name for r in parse_schema(text, "s.yaml").records] == ["A", "B"]


def test_anchors_and_aliases_share_definitions() -> None:
    text = textwrap.dedent(
        """\
        version: 1
        records:
          A:
            features:
              x: &coord {dtype: float32, shape: [3], default: &zeros [0, 0, 0]}
              y: *coord
              z: {dtype: float32, shape: [3], default: *zeros}
        """
    )
    x, y, z = parse_schema(text, "s.yaml").records[0].features
    assert x.default == y.default == z.default == (0.0, 0.0, 0.0)
    assert (y.name, y.key) == ("y", "y")


def test_documents_may_start_with_a_marker_and_a_bom() -> None:
    ir = parse_schema("\ufeff%YAML 1.1\n---\n" + MNIST + "...\n", "mnist.yaml")
    assert ir.records[0].name == "Digit"


def test_load_schema_reads_a_file(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "customer.yaml"
    path.write_bytes(b"\xef\xbb\xbf" + CUSTOMER.encode())
    ir = load_schema(path)
    assert ir.source == str(path) and ir.module == "customer"
    assert ir.records[0].loc == Location(str(path), 4, 3)
    shown = load_schema(path, display_path="schemas/customer.yaml")
    assert shown.source == "schemas/customer.yaml"
    assert shown.records[0].features[0].loc.path == "schemas/customer.yaml"
    assert (
        shown.fingerprint == ir.fingerprint == parse_schema(CUSTOMER, "x/customer.yaml").fingerprint
    )


def test_schema_ir_is_a_schema_ir() -> None:
    assert isinstance(parse_schema(MNIST, "mnist.yaml"), SchemaIR)


def test_reserved_names_cover_the_record_class_members() -> None:
    members = {
        "encode", "decode", "to_proto", "from_proto", "feature_spec", "tf_feature_spec",
        "tf_context_spec", "tf_sequence_spec", "tf_parse", "write_tfrecord", "read_tfrecord",
        "write_dataset", "read_dataset", "decode_batch", "dataset", "beam_coder", "replace",
        "self", "cls",
    }  # fmt: skip
    assert members <= naming.RESERVED_NAMES
    for name in members:
        assert naming.feature_name_problem(name) is not None


def test_json_schema_documents_every_field() -> None:
    schema = SchemaDoc.model_json_schema()
    feature = schema["$defs"]["FeatureDoc"]
    assert feature["additionalProperties"] is False and feature["required"] == ["dtype"]
    assert feature["properties"]["dtype"]["enum"] == list(DTYPES)
    for model in (schema, schema["$defs"]["RecordDoc"], feature):
        assert model["description"]
        for name, prop in model["properties"].items():
            assert prop.get("description"), name
    assert schema["properties"]["records"]["propertyNames"] == {"pattern": "^[A-Z][A-Za-z0-9]*$"}
    features = schema["$defs"]["RecordDoc"]["properties"]["features"]
    assert features["propertyNames"] == {"pattern": "^[a-z][a-z0-9_]*$"}
