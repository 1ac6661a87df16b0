"""Invalid schemas: each problem is reported as ``path:line:col: message``, all at once."""

from __future__ import annotations

import pathlib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codegen.errors import Diagnostic, SchemaError, TfrGenError
from codegen.generator.api import generate
from codegen.generator.load import load_schema, parse_schema
from codegen.generator.schema.loader import MAX_BYTES
from support.paths import GENERATED, ROOT
from support.schemas import problems, records_schema

ALLOWED_FEATURE_FIELDS = (
    "key, dtype, shape, default, optional, doc, encoding, quality, shape_from, row_lengths_from"
)
ALLOWED_TAGS = "only !!str, !!int, !!float, !!bool, !!null, !!binary, !!seq and !!map are allowed"
LIST_DTYPES = "int64, int32, int16, int8, uint32, uint16, uint8, bool, float32, bytes, string"
NOT_SNAKE = "is not snake_case (a lowercase letter, then lowercase letters, digits and '_')"
NOT_CAMEL = (
    "must be CamelCase (a capital letter, then letters and digits), because it becomes a class name"
)


def one_feature(spec: str) -> str:
    """A schema whose only record ``A`` has the one feature ``f`` (written at line 5, column 10)."""
    return f"version: 1\nrecords:\n  A:\n    features:\n      f: {spec}\n"


FEATURE_CASES = [
    ("{shape: []}", "{", "feature 'f' is missing the required field 'dtype'"),
    (
        "{dtype: int64, dtpye: int32}",
        "dtpye",
        f"unknown field 'dtpye' in feature 'f' (did you mean 'dtype'?); allowed fields: "
        f"{ALLOWED_FEATURE_FIELDS}",
    ),
    (
        "{dtype: int64, size: 3}",
        "size",
        f"unknown field 'size' in feature 'f'; allowed fields: {ALLOWED_FEATURE_FIELDS}",
    ),
    ("{dtype: int65}", "int65", f"unknown dtype 'int65'; expected one of {LIST_DTYPES}"),
    ("{dtype: 5}", "5", "'dtype' of feature 'f' must be a string, got 5"),
    (
        "{dtype: float64}",
        "float64",
        "dtype float64 does not fit the list encoding (float_list holds float32);"
        " use dtype float32, or 'encoding: raw' to keep float64",
    ),
    (
        "{dtype: float16}",
        "float16",
        "dtype float16 does not fit the list encoding (float_list holds float32);"
        " use dtype float32, or 'encoding: raw' to keep float16",
    ),
    (
        "{dtype: uint64}",
        "uint64",
        "dtype uint64 does not fit the list encoding (int64_list holds int64); use dtype int64,"
        " or 'encoding: raw' to keep uint64",
    ),
    (
        "{dtype: int64, encoding: packed}",
        "packed",
        "'encoding' of feature 'f' must be 'list', 'raw', 'jpeg', 'png' or 'image', got 'packed'",
    ),
    ("{dtype: int64, key: ''}", "''", "'key' of feature 'f' must not be empty"),
    ("{dtype: int64, key: 5}", "5", "'key' of feature 'f' must be a string, got 5"),
    (
        "{dtype: int64, optional: yes}",
        "yes",
        "'optional' of feature 'f' must be true or false, got 'yes'",
    ),
    ("{dtype: int64, optional: 1}", "1", "'optional' of feature 'f' must be true or false, got 1"),
    ("{dtype: int64, doc: [a]}", "[", "'doc' of feature 'f' must be a string, got a list"),
    ("{dtype: int64, shape: 3}", "3", "'shape' of feature 'f' must be a list, got 3"),
    ("{dtype: int64, shape: [0]}", "0", "a dimension must be a positive integer or null, got 0"),
    ("{dtype: int64, shape: [-2]}", "-2", "a dimension must be a positive integer or null, got -2"),
    (
        "{dtype: int64, shape: [true]}",
        "true",
        "shape[0] of feature 'f' must be an integer, got true",
    ),
    (
        "{dtype: int64, shape: [2, 1.5]}",
        "1.5",
        "shape[1] of feature 'f' must be an integer, got 1.5",
    ),
    (
        "{dtype: int64, shape: [2, null]}",
        "null",
        "only leading dimensions may be null (of unknown length) with the list encoding, not one"
        " after a fixed dimension; use 'encoding: raw' for unknown dimensions anywhere",
    ),
    (
        "{dtype: int64, shape: [4294967296, 4294967296]}",
        "[",
        "shape [4294967296, 4294967296] has more than 2**63-1 elements",
    ),
    (
        "{dtype: int64, optional: true, default: 1}",
        "1}",
        "a feature cannot be both optional and have a default; remove one",
    ),
    (
        "{dtype: int64, shape: [null, 2], default: [[1, 2]]}",
        "[[",
        "a default needs a fully known shape; shape [null, 2] has a dimension of unknown length",
    ),
    (
        "{dtype: int64, shape: [3], default: [1, 2]}",
        "[1",
        "a default for shape [3] must be a list of 3 values, got 2 values",
    ),
    (
        "{dtype: int64, shape: [2, 2], default: [1, 2, 3]}",
        "[1",
        "a default for shape [2, 2] must be a nested list matching the shape or a list of 4 values,"
        " got 3 values",
    ),
    (
        "{dtype: int64, shape: [2, 2], default: [[1, 2], [3]]}",
        "[3]",
        "expected a list of 2 values at this level of shape [2, 2], got 1 value",
    ),
    (
        "{dtype: int64, shape: [2, 2], default: [[1, 2], 3]}",
        "3]",
        "expected a list of 2 values at this level of shape [2, 2], got 3",
    ),
    (
        "{dtype: int64, shape: [2], default: 1}",
        "1}",
        "a default for shape [2] must be a list, got 1",
    ),
    ("{dtype: int64, default: [1]}", "[", "expected an integer for int64, got a list"),
    ("{dtype: int8, default: 128}", "128", "128 is out of range for int8 (-128 to 127)"),
    ("{dtype: uint8, default: -1}", "-1", "-1 is out of range for uint8 (0 to 255)"),
    (
        "{dtype: int64, default: 9223372036854775808}",
        "92",
        "9223372036854775808 is out of range for int64"
        " (-9223372036854775808 to 9223372036854775807)",
    ),
    ("{dtype: int64, default: 1.0}", "1.0", "expected an integer for int64, got 1.0"),
    ("{dtype: int64, default: true}", "true", "expected an integer for int64, got true"),
    ("{dtype: int64, default: '1'}", "'1'", "expected an integer for int64, got '1'"),
    ("{dtype: bool, default: 1}", "1", "expected true or false for bool, got 1"),
    ("{dtype: bool, default: yes}", "yes", "expected true or false for bool, got 'yes'"),
    ("{dtype: float32, default: true}", "true", "expected a number for float32, got true"),
    ("{dtype: float32, default: '1.5'}", "'1.5'", "expected a number for float32, got '1.5'"),
    ("{dtype: float32, default: null}", "null", "expected a number for float32, got null"),
    (
        "{dtype: float32, default: 1e39}",
        "1e39",
        "1e+39 is out of range for float32 (about ±3.4028235e+38)",
    ),
    (
        "{dtype: float32, default: -3.5e38}",
        "-3.5e38",
        "-3.5e+38 is out of range for float32 (about ±3.4028235e+38)",
    ),
    (
        "{dtype: float32, default: 1.0e+999}",
        "1.0e",
        "float 1.0e+999 is out of range; write .inf or -.inf for infinity",
    ),
    ("{dtype: string, default: 1}", "1", "expected a string for string, got 1"),
    (
        "{dtype: string, default: !!binary aGk=}",
        "!!",
        "expected a string for string, got binary data (2 bytes)",
    ),
    ("{dtype: bytes, default: 1}", "1", "expected a string or !!binary for bytes, got 1"),
    ("{dtype: int64, shape: [2], default: [1, x]}", "x", "expected an integer for int64, got 'x'"),
    ("{dtype: int64, default: !!int abc}", "!!", "'abc' is not a valid !!int value"),
    ("{dtype: float32, default: !!float abc}", "!!", "'abc' is not a valid !!float value"),
    ("{dtype: bool, default: !!bool yes}", "!!", "'yes' is not a valid !!bool value"),
    ("{dtype: string, default: !!null x}", "!!", "'x' is not a valid !!null value"),
    ("{dtype: bytes, default: !!binary '@@'}", "!!", "the !!binary value is not valid base64"),
    ("{dtype: bytes, default: !!binary ü}", "!!", "the !!binary value is not valid base64"),
    (
        "{dtype: int64, default: !!timestamp 2020-01-01}",
        "!!",
        f"unsupported tag !!timestamp; {ALLOWED_TAGS}",
    ),
    (
        "{dtype: int64, default: !!python/object:os.system x}",
        "!!",
        f"unsupported tag !!python/object:os.system; {ALLOWED_TAGS}",
    ),
    ("{dtype: int64, default: !custom x}", "!c", f"unsupported tag !custom; {ALLOWED_TAGS}"),
    ("{dtype: int64, default: !!set {a}}", "!!", f"unsupported tag !!set; {ALLOWED_TAGS}"),
    ("{dtype: int64, default: !!omap [a: 1]}", "!!", f"unsupported tag !!omap; {ALLOWED_TAGS}"),
    (
        "{dtype: int64, !!python/str x: 1}",
        "!!",
        f"unsupported tag !!python/str; {ALLOWED_TAGS}",
    ),
    (
        "{dtype: int64, dtype: int32}",
        "dtype: int32",
        "duplicate key 'dtype' (first defined at 5:11)",
    ),
    ("{dtype: int64, ? [a] : 1}", "[a]", "mapping keys must be scalars, not collections"),
    (
        '{dtype: "\\ud800"}',
        '"',
        "string contains the surrogate code point U+D800, which is not valid Unicode; write"
        " characters beyond U+FFFF as \\UXXXXXXXX or literally",
    ),
    ("[dtype, int64]", "[", "feature 'f' must be a mapping, got a list"),
    (
        "{dtype: float32, shape: [null, null, 3], encoding: png}",
        "float32",
        "an encoded image ('encoding: png') has dtype uint8, not 'float32'",
    ),
    (
        "{dtype: uint8, shape: [null, null], encoding: jpeg}",
        "[null",
        "an encoded image has shape [height, width, channels] (null for any size, e.g."
        " [null, null, 3]), got [null, null]",
    ),
    (
        "{dtype: uint8, shape: [null, null, 4], encoding: jpeg}",
        "4]",
        "a jpeg image has 1 or 3 channels, got 4",
    ),
    (
        "{dtype: uint8, shape: [null, null, 3], encoding: png, quality: 90}",
        "90",
        "'quality' is the JPEG quality: it needs 'encoding: jpeg'",
    ),
    (
        "{dtype: uint8, shape: [2, 2, 3], encoding: image, default: [1]}",
        "[1]",
        "a default is not supported for an encoded image; set 'optional: true' to allow the"
        " feature to be absent",
    ),
    (
        "{dtype: uint8, shape: [null], encoding: raw, shape_from: {key: s, dtype: float32}}",
        "float32",
        "a stored shape has an integer dtype (int64, int32, int16, int8, uint64, uint32, uint16,"
        " uint8), got 'float32'",
    ),
    (
        "{dtype: uint8, shape: [null], shape_from: {key: s}}",
        "{key",
        "'shape_from' says where a raw tensor's unknown dimensions are stored; it needs"
        " 'encoding: raw'",
    ),
    (
        "{dtype: uint8, shape: [2, 3], encoding: raw, shape_from: [h]}",
        "[h]",
        "shape [2, 3] has no null dimension, so no shape is stored; remove 'shape_from'",
    ),
    (
        "{dtype: uint8, shape: [null, null], encoding: raw, shape_from: [h]}",
        "[h]",
        "a list 'shape_from' names one int64 feature per null dimension: shape [null, null] needs"
        " 2, got 1",
    ),
    (
        "{dtype: uint8, shape: [null, null], encoding: raw, shape_from: [h, h]}",
        "h]",
        "key 'h' is named twice",
    ),
    (
        "{dtype: uint8, shape: [null], encoding: raw, shape_from: {key: s, colour: red}}",
        "colour",
        "unknown field 'colour' in 'shape_from' of feature 'f'; allowed fields: key, dtype, encoding",
    ),
    (
        "{dtype: uint8, shape: [null], encoding: raw, shape_from: 3}",
        "3}",
        "'shape_from' must be a mapping ({key: ..., dtype: ..., encoding: ...}: one feature holding"
        " the shape) or a list of keys (one per null dimension), got 3",
    ),
    (
        "{dtype: uint8, shape: [null], encoding: raw, shape_from: {key: s, dtype: uint64}}",
        "uint64",
        "dtype uint64 does not fit the list encoding; use int64, or 'encoding: raw'",
    ),
    (
        "{dtype: int64, shape: [null, null], row_lengths_from: [x, y]}",
        "[x",
        "shape [null, null] has 1 row length feature(s) (one per null dimension after the first),"
        " got 2",
    ),
    (
        "{dtype: int64, shape: [null, 2], encoding: raw, row_lengths_from: [x]}",
        "[x",
        "'row_lengths_from' names the row lengths of a ragged feature (two or more leading null"
        " dimensions, the list encoding, not in 'sequence')",
    ),
    (
        "{dtype: int64, shape: [null], encoding: raw, shape_from: {key: f}}",
        "{key",
        "feature 'f' stores its shape under key 'f', which feature 'f' already uses",
    ),
    ("int64", "int64", "feature 'f' must be a mapping, got 'int64'"),
]


@pytest.mark.parametrize(("spec", "marker", "message"), FEATURE_CASES)
def test_feature_problem_is_reported_at_its_value(spec: str, marker: str, message: str) -> None:
    assert problems(one_feature(spec)) == [f"s.yaml:5:{10 + spec.index(marker)}: {message}"]


RECORD_CASES = [
    ("{}", "{", "'records' must have at least one record"),
    ("[A]", "[", "'records' must be a mapping, got a list"),
    (
        "{customer: {features: {a: {dtype: int64}}}}",
        "customer",
        f"record name 'customer' {NOT_CAMEL}",
    ),
    ("{My_Record: {features: {a: {dtype: int64}}}}", "My", f"record name 'My_Record' {NOT_CAMEL}"),
    ("{None: {features: {a: {dtype: int64}}}}", "None", "record name 'None' is a Python keyword"),
    ("{A: 5}", "5", "record 'A' must be a mapping, got 5"),
    (
        "{A: {}}",
        "{}",
        "record 'A' has no features; give 'features' (a tf.train.Example) or 'sequence' and"
        " optionally 'context' (a tf.train.SequenceExample)",
    ),
    (
        "{A: {features: }}",
        "{f",
        "record 'A' has no features; give 'features' (a tf.train.Example) or 'sequence' and"
        " optionally 'context' (a tf.train.SequenceExample)",
    ),
    ("{A: {features: {}}}", "{}", "'features' of record 'A' must have at least one feature"),
    ("{A: {features: [a]}}", "[", "'features' of record 'A' must be a mapping, got a list"),
    (
        "{A: {doc: 1, features: {a: {dtype: int64}}}}",
        "1",
        "'doc' of record 'A' must be a string, got 1",
    ),
    (
        "{A: {features: {a: {dtype: int64}, b: {dtype: int64, key: a}}}}",
        "a}}}}",
        "feature 'b' has key 'a', which feature 'a' already uses",
    ),
    (
        "{A: {features: {a: {dtype: int64, key: b}, b: {dtype: int64}}}}",
        "b: {",
        "feature 'b' has key 'b', which feature 'a' already uses",
    ),
    ("{A: {features: {Age: {dtype: int64}}}}", "Age", f"feature name 'Age' {NOT_SNAKE}"),
    ("{A: {features: {1a: {dtype: int64}}}}", "1a", f"feature name '1a' {NOT_SNAKE}"),
    (
        "{A: {features: {Movie Ratings: {dtype: int64}}}}",
        "Movie",
        f"feature name 'Movie Ratings' {NOT_SNAKE}",
    ),
    (
        "{A: {features: {class: {dtype: int64}}}}",
        "class",
        "feature name 'class' is a Python keyword",
    ),
    (
        "{A: {features: {match: {dtype: int64}}}}",
        "match",
        "feature name 'match' is a Python soft keyword",
    ),
    (
        "{A: {features: {type: {dtype: int64}}}}",
        "type",
        "feature name 'type' is a Python soft keyword",
    ),
    (
        "{A: {features: {encode: {dtype: int64}}}}",
        "encode",
        "feature name 'encode' is reserved for a member of the generated class",
    ),
    (
        "{A: {features: {tf_parse: {dtype: int64}}}}",
        "tf_parse",
        "feature name 'tf_parse' is reserved for a member of the generated class",
    ),
    (
        "{A: {features: {_x: {dtype: int64}}}}",
        "_x",
        "feature name '_x' starts with '_', which is reserved for the generated code",
    ),
    (
        "{A: {features: {float: {dtype: int64}}}}",
        "float",
        "feature name 'float' would shadow the builtin 'float' in the generated class",
    ),
]


@pytest.mark.parametrize(("text", "marker", "message"), RECORD_CASES)
def test_record_problem_is_reported_at_its_position(text: str, marker: str, message: str) -> None:
    (problem,) = problems(records_schema(text))
    prefix = f"s.yaml:2:{10 + text.index(marker)}: {message}"
    assert problem.startswith(prefix)
    if "feature name" in message:
        name = message.split("'")[1]
        assert problem == f"{prefix}; rename it and set 'key: {name}' to keep the key"
    else:
        assert problem == prefix


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("version: 1\n", ["s.yaml:1:1: the schema is missing the required field 'records'"]),
        (
            "records: {A: {features: {a: {dtype: int64}}}}\n",
            ["s.yaml:1:1: the schema is missing the required field 'version'"],
        ),
        (
            "version: true\nrecords: {A: {features: {a: {dtype: int64}}}}\n",
            ["s.yaml:1:10: 'version' must be an integer, got true"],
        ),
        (
            "version: 1.0\nrecords: {A: {features: {a: {dtype: int64}}}}\n",
            ["s.yaml:1:10: 'version' must be an integer, got 1.0"],
        ),
        (
            "version: 0\nrecords: {A: {features: {a: {dtype: int64}}}}\n",
            ["s.yaml:1:10: 'version' must be at least 1, got 0"],
        ),
        (
            "version: '1'\nrecords: {A: {features: {a: {dtype: int64}}}}\n",
            ["s.yaml:1:10: 'version' must be an integer, got '1'"],
        ),
        (
            "version: 1\ndoc: 5\nrecords: {A: {features: {a: {dtype: int64}}}}\n",
            ["s.yaml:2:6: 'doc' must be a string, got 5"],
        ),
        ("version: 1\nrecords:\n", ["s.yaml:2:9: 'records' must be a mapping, got null"]),
        (
            "version: 1\nrecrods: {}\n",
            [
                "s.yaml:1:1: the schema is missing the required field 'records'",
                "s.yaml:2:1: unknown field 'recrods' in the schema (did you mean 'records'?);"
                " allowed fields: version, doc, records",
            ],
        ),
        (
            "version: 1\nrecords: {A: {doc: x, feature: {a: {dtype: int64}}}}\n",
            [
                "s.yaml:2:14: record 'A' has no features; give 'features' (a tf.train.Example) or"
                " 'sequence' and optionally 'context' (a tf.train.SequenceExample)",
                "s.yaml:2:23: unknown field 'feature' in record 'A' (did you mean 'features'?);"
                " allowed fields: doc, features, context, sequence",
            ],
        ),
        (
            records_schema("{A: {features: {a: {dtype: int64}}, context: {b: {dtype: int64}}}}"),
            [
                "s.yaml:2:46: record 'A' has both 'features' (a tf.train.Example) and 'context'"
                " (a tf.train.SequenceExample); give one kind",
            ],
        ),
        ("[1, 2]\n", ["s.yaml:1:1: expected a mapping with 'version' and 'records', got a list"]),
        (
            "just text\n",
            ["s.yaml:1:1: expected a mapping with 'version' and 'records', got 'just text'"],
        ),
    ],
)
def test_document_problems(text: str, expected: list[str]) -> None:
    assert problems(text) == expected


def test_sequence_and_context_problems_are_reported_with_the_others() -> None:
    text = (
        "version: 1\n"
        "records:\n"
        "  Clip:\n"
        "    context:\n"
        "      title: {dtype: string}\n"
        "      frames: {dtype: int64, default: 0}\n"
        "    sequence:\n"
        "      title: {dtype: float32, shape: [2]}\n"
        "      pixels: {dtype: uint8, shape: [4], default: [0, 0, 0, 0]}\n"
        "      bad: {dtype: float64}\n"
    )
    assert problems(text) == [
        "s.yaml:8:7: feature name 'title' is already used in 'context'",
        "s.yaml:9:51: TensorFlow rejects a default on a sequence feature; remove it"
        " ('optional: true' reads a missing feature list as zero steps)",
        "s.yaml:10:20: dtype float64 does not fit the list encoding (float_list holds float32);"
        " use dtype float32 (sequence features cannot use 'encoding: raw')",
    ]


def test_every_problem_of_a_file_is_reported_together_in_file_order() -> None:
    text = (
        "version: 1.0\n"
        "extra: 1\n"
        "records:\n"
        "  Dup:\n"
        "    features:\n"
        "      a: {dtype: int64}\n"
        "  customer:\n"
        "    features:\n"
        "      Age: {dtype: int64}\n"
        "      class: {dtype: int65}\n"
        "      z: {dtyp: int64}\n"
        "      w: {dtype: uint8, default: 300}\n"
        "      v: {dtype: float32, shape: [2, 2], default: [[1, 2], [3]]}\n"
        "      u: {dtype: float32, default: 1.0e+39, key: Age}\n"
        "      s: {dtype: bool, default: !!python/int 1}\n"
        "  Dup:\n"
        "    features: {b: {dtype: int64}}\n"
    )
    assert problems(text, "schemas/bad.yaml") == [
        "schemas/bad.yaml:1:10: 'version' must be an integer, got 1.0",
        "schemas/bad.yaml:2:1: unknown field 'extra' in the schema; allowed fields: version, doc,"
        " records",
        f"schemas/bad.yaml:7:3: record name 'customer' {NOT_CAMEL}",
        f"schemas/bad.yaml:9:7: feature name 'Age' {NOT_SNAKE}; rename it and set 'key: Age' to"
        " keep the key",
        "schemas/bad.yaml:10:7: feature name 'class' is a Python keyword; rename it and set"
        " 'key: class' to keep the key",
        f"schemas/bad.yaml:10:22: unknown dtype 'int65'; expected one of {LIST_DTYPES}",
        "schemas/bad.yaml:11:10: feature 'z' is missing the required field 'dtype'",
        "schemas/bad.yaml:11:11: unknown field 'dtyp' in feature 'z' (did you mean 'dtype'?);"
        f" allowed fields: {ALLOWED_FEATURE_FIELDS}",
        "schemas/bad.yaml:12:34: 300 is out of range for uint8 (0 to 255)",
        "schemas/bad.yaml:13:60: expected a list of 2 values at this level of shape [2, 2], got 1"
        " value",
        "schemas/bad.yaml:14:36: 1e+39 is out of range for float32 (about ±3.4028235e+38)",
        "schemas/bad.yaml:14:50: feature 'u' has key 'Age', which feature 'Age' already uses",
        f"schemas/bad.yaml:15:33: unsupported tag !!python/int; {ALLOWED_TAGS}",
        "schemas/bad.yaml:16:3: duplicate key 'Dup' (first defined at 4:3)",
    ]


def test_schema_error_carries_diagnostics_and_renders_them_one_per_line() -> None:
    with pytest.raises(SchemaError) as info:
        parse_schema("version: 0\nrecords: {}\n", "x.yaml")
    error = info.value
    assert isinstance(error, TfrGenError) and isinstance(error, ValueError)
    assert error.diagnostics == (
        Diagnostic("x.yaml", 1, 10, "'version' must be at least 1, got 0"),
        Diagnostic("x.yaml", 2, 10, "'records' must have at least one record"),
    )
    assert str(error) == "\n".join(str(d) for d in error.diagnostics)


GOOD = "version: 1\nrecords: {A: {features: {a: {dtype: int64}}}}\n"


@pytest.mark.parametrize(
    ("path", "message"),
    [
        (
            "movie-customers.yaml",
            "the module name 'movie-customers' (the schema file's name) is not a Python identifier;"
            " rename the file, e.g. to 'movie_customers.yaml'",
        ),
        (
            "schemas/customer.v2.yml",
            "the module name 'customer.v2' (the schema file's name) is not a Python identifier;"
            " rename the file, e.g. to 'customer_v2.yml'",
        ),
        (
            "1st.yaml",
            "the module name '1st' (the schema file's name) is not a Python identifier; rename the"
            " file, e.g. to 'schema_1st.yaml'",
        ),
        (
            "class.yaml",
            "the module name 'class' (the schema file's name) is a Python keyword; rename the file,"
            " e.g. to 'class_schema.yaml'",
        ),
        (
            "json.yaml",
            "the module name 'json' (the schema file's name) would shadow a standard-library"
            " module; rename the file, e.g. to 'json_schema.yaml'",
        ),
        (
            "codegen.yaml",
            "the module name 'codegen' (the schema file's name) would shadow the tfr-gen package;"
            " rename the file, e.g. to 'codegen_schema.yaml'",
        ),
        (
            "numpy.yaml",
            "the module name 'numpy' (the schema file's name) would shadow the 'numpy' package,"
            " which generated modules import; rename the file, e.g. to 'numpy_schema.yaml'",
        ),
        (
            "tensorflow.yaml",
            "the module name 'tensorflow' (the schema file's name) would shadow the 'tensorflow'"
            " package, which generated modules import; rename the file, e.g. to"
            " 'tensorflow_schema.yaml'",
        ),
    ],
)
def test_module_name_comes_from_a_usable_file_name(
    path: str, message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert generation_problems(GOOD, path, tmp_path, monkeypatch) == [f"{path}:1:1: {message}"]
    parse_schema(GOOD, path)  # reading a schema applies no module-name rule


def generation_problems(
    text: str, path: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> list[str]:
    """The diagnostics of generating a module from the schema ``text`` in the file ``path``."""
    monkeypatch.chdir(tmp_path)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(text)
    result = generate([path], out_dir="out")
    assert not Path("out").exists()
    return [str(d) for d in result.diagnostics]


def test_module_name_problem_is_reported_with_the_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = "version: 0\nrecords: {A: {features: {a: {dtype: int64}}}}\n"
    assert generation_problems(text, "a-b.yaml", tmp_path, monkeypatch) == [
        "a-b.yaml:1:1: the module name 'a-b' (the schema file's name) is not a Python identifier;"
        " rename the file, e.g. to 'a_b.yaml'",
        "a-b.yaml:1:10: 'version' must be at least 1, got 0",
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "version: 1\nrecords: {A: {features: {a: {dtype: int64}}}\n",
            "s.yaml:3:1: invalid YAML: expected ',' or '}', but got '<stream end>'"
            " (while parsing a flow mapping at 2:10)",
        ),
        (
            "version: 1\n records: {}\n",
            "s.yaml:2:9: invalid YAML: mapping values are not allowed here",
        ),
        (
            "version: 1\n\trecords: {}\n",
            "s.yaml:2:1: invalid YAML: found character '\\t' that cannot start any token"
            " (while scanning for the next token)",
        ),
        ("a: b: c\n", "s.yaml:1:5: invalid YAML: mapping values are not allowed here"),
        ("a: *nowhere\n", "s.yaml:1:4: invalid YAML: found undefined alias 'nowhere'"),
        (
            "a: &x 1\nb: &x 2\n",
            "s.yaml:2:4: invalid YAML: duplicate anchor &x (first defined at 1:4)",
        ),
        (
            "--- 1\n--- 2\n",
            "s.yaml:2:1: invalid YAML: a schema file holds one YAML document, but a second one"
            " starts here",
        ),
        ("", "s.yaml:1:1: the schema is empty; expected a mapping with 'version' and 'records'"),
        (
            "# nothing\n",
            "s.yaml:1:1: the schema is empty; expected a mapping with 'version' and 'records'",
        ),
        (
            "---\n",
            "s.yaml:1:1: the schema is empty; expected a mapping with 'version' and 'records'",
        ),
        (
            "version: 1\x07\n",
            "s.yaml:1:11: invalid character U+0007; YAML text may only contain printable"
            " characters, tab, line feed and carriage return",
        ),
        (
            "doc: x\ud800\n",
            "s.yaml:1:7: string contains the surrogate code point U+D800, which is not valid"
            " Unicode; write characters beyond U+FFFF as \\UXXXXXXXX or literally",
        ),
        (
            "<<: {version: 1}\n",
            "s.yaml:1:1: merge keys ('<<') are not supported; write the fields out, or alias the"
            " whole value",
        ),
        (
            "a: " + "[" * 100 + "]" * 100 + "\n",
            "s.yaml:1:103: invalid YAML: nesting deeper than 100 levels",
        ),
    ],
)
def test_yaml_problems_are_reported_with_their_position(text: str, expected: str) -> None:
    assert problems(text)[0] == expected


def test_nesting_up_to_the_limit_is_accepted_by_the_loader() -> None:
    deep = "[" * 99 + "]" * 99
    assert problems(f"version: 1\nrecords: {{}}\ndoc: {deep}\n") == [
        "s.yaml:2:10: 'records' must have at least one record",
        "s.yaml:3:6: 'doc' must be a string, got a list",
    ]


def test_duplicate_keys_are_reported_and_the_first_value_is_kept() -> None:
    text = "version: 1\nrecords:\n  A: {features: {a: {dtype: int64}}}\nversion: 0\n"
    assert problems(text) == ["s.yaml:4:1: duplicate key 'version' (first defined at 1:1)"]


def test_alias_bomb_is_stopped() -> None:
    lines = ['a: &a ["x","x","x","x","x","x","x","x","x","x"]']
    for prev, name in zip("abcdefgh", "bcdefghi", strict=True):
        lines.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 10) + "]")
    assert problems("\n".join(lines) + "\n") == [
        "s.yaml:4:29: too many nodes (alias expansion): aliases expand to more than 10000 nodes"
    ]


def test_aliases_below_the_expansion_limit_are_fine() -> None:
    row = "&r [" + ",".join(["0"] * 99) + "]"
    aliases = ",".join(["*r"] * 99)  # 99 * 100 nodes
    text = one_feature(f"{{dtype: int64, shape: [100, 99], default: [{row}, {aliases}]}}")
    assert parse_schema(text, "s.yaml").records[0].features[0].default == ((0,) * 99,) * 100


def test_aliases_cannot_nest_beyond_the_limit() -> None:
    text = "a: &a " + "[" * 60 + "]" * 60 + "\nb: " + "[" * 50 + "*a" + "]" * 50 + "\n"
    assert problems(text) == ["s.yaml:2:54: nesting deeper than 100 levels (alias expansion)"]


def test_recursive_alias_is_reported() -> None:
    assert problems(one_feature("{dtype: int64, shape: [1], default: &d [*d]}")) == [
        "s.yaml:5:50: alias *d refers to a node that contains it (recursive alias)"
    ]


def test_errors_inside_aliased_values_point_at_the_alias() -> None:
    text = one_feature("&f {dtype: int64}") + "      b: {dtype: int64, key: *f}\n"
    assert problems(text) == ["s.yaml:6:30: 'key' of feature 'b' must be a string, got a mapping"]


def test_size_limit(tmp_path: pathlib.Path) -> None:
    head = "version: 1\nrecords: {A: {features: {a: {dtype: int64}}}}\ndoc: "
    fits = head + "x" * (MAX_BYTES - len(head) - 1) + "\n"
    assert len(fits.encode()) == MAX_BYTES
    assert parse_schema(fits, "s.yaml").doc == "x" * (MAX_BYTES - len(head) - 1)
    too_big = "é" + fits[1:]
    message = (
        f"s.yaml:1:1: the schema is too large: it has more than the limit of {MAX_BYTES} bytes"
    )
    assert problems(too_big) == [message]
    path = tmp_path / "s.yaml"
    path.write_text(too_big, encoding="utf-8")
    with pytest.raises(SchemaError) as info:
        load_schema(path, display_path="s.yaml")
    assert str(info.value) == message


def test_file_must_be_utf8(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_bytes(b"version: 1\ndoc: caf\xc3\xa9 cr\xe8me\n")
    with pytest.raises(SchemaError) as info:
        load_schema(path, display_path="s.yaml")
    assert str(info.value) == (
        "s.yaml:2:13: the file is not valid UTF-8 (byte 0xe8); schema files must be UTF-8 text"
    )


def test_unreadable_file_is_a_schema_error(tmp_path: pathlib.Path) -> None:
    with pytest.raises(SchemaError) as info:
        load_schema(tmp_path / "missing.yaml", display_path="missing.yaml")
    assert (
        str(info.value)
        == "missing.yaml:1:1: cannot read the schema file: No such file or directory"
    )


YAML_PIECES = st.sampled_from(
    [
        *"ab01:-[]{},&*!?|>'\"#%@`\n\t .~<=\\",
        "version: 1\n",
        "records:\n",
        "  A:\n",
        "    features:\n",
        "      a: ",
        "{dtype: int64}",
        "default: ",
        "shape: ",
        "[null, 2]",
        "!!binary ",
        "!!int ",
        "!!python/none ",
        "&a ",
        "*a ",
        "<<: ",
        "\ud800",
        "\x00",
        "\x85",
        "\u2028",
        "\ufeff",
        "é",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=60), st.lists(YAML_PIECES, max_size=40).map("".join)))
def test_any_text_gives_a_schema_or_a_schema_error(text: str) -> None:
    try:
        parse_schema(text, "s.yaml")
    except SchemaError as exc:
        assert exc.diagnostics
        for d in exc.diagnostics:
            assert d.path == "s.yaml" and d.line >= 1 and d.col >= 1 and d.message


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=80))
def test_any_file_gives_a_schema_or_a_schema_error(
    tmp_path_factory: pytest.TempPathFactory, data: bytes
) -> None:
    path = tmp_path_factory.getbasetemp() / "fuzz.yaml"
    path.write_bytes(data)
    try:
        load_schema(path)
    except SchemaError as exc:
        assert exc.diagnostics


def test_every_package_the_generated_code_imports_is_a_refused_module_name() -> None:
    import ast
    import sys

    from codegen.generator.naming import IMPORTED_PACKAGES

    sources = [*(ROOT / "codegen").rglob("*.py"), *GENERATED.glob("*.py")]
    skip = {"cli", "tools", "generator"}  # not imported by generated code
    sources = [p for p in sources if skip.isdisjoint(p.relative_to(ROOT).parts)]
    imported: set[str] = set()
    for source in sources:
        for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                imported |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                imported.add(node.module.split(".")[0])
    outside = imported - set(sys.stdlib_module_names)
    assert "numpy" in outside and "google" in outside
    assert outside <= IMPORTED_PACKAGES, outside - IMPORTED_PACKAGES
