"""The committed generated modules as a user meets them, without TensorFlow: construction and its
errors, encode/decode, protobuf interop, ``feature_spec()``, TFRecord files, and decode errors."""

from __future__ import annotations

import gzip
import os
import subprocess
import zlib
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest
import yaml

from codegen.dtypes import DTYPES
from codegen.errors import DataError, RecordError
from codegen.runtime import FeatureInfo, SkippedRecord, SkippedSpan, write_tfrecord
from codegen.runtime.tf import proto
from support.matrix import (
    SAMPLES,
    SCHEMA_NAMES,
    build_example,
    canon,
    flat_values,
    record_canon,
    record_values,
    samples,
)
from support.modules import generated_module
from support.paths import SCHEMAS, TESTS
from support.processes import PYTHON

# --- round trips ----------------------------------------------------------------------------------


def test_every_schema_has_a_committed_module_and_sample_records() -> None:
    assert {"basics", "customer", "embedding", "image", "mnist"} <= set(SCHEMA_NAMES)
    for name in SCHEMA_NAMES:
        assert name in SAMPLES, (
            f"schema {name!r} has no sample records: add them to SAMPLES in tests/support/matrix.py"
        )
        records = samples(name)
        assert len(records) >= 3
        assert {type(r).__module__ for r in records} == {name}


@pytest.mark.parametrize("name", SCHEMA_NAMES)
def test_records_survive_encode_and_decode(name: str) -> None:
    for record in samples(name):
        cls = type(record)
        data = record.encode()
        decoded = cls.decode(data)
        assert type(decoded) is cls
        assert decoded == record
        assert record_canon(decoded) == record_canon(record)
        assert decoded.encode() == data


@pytest.mark.parametrize("name", SCHEMA_NAMES)
def test_equality_compares_every_attribute(name: str) -> None:
    records = samples(name)
    for record in records:
        cls, values = type(record), record_values(record)
        assert record == cls(**values)
        assert record != object()
        assert record.__eq__(object()) is NotImplemented
        for other in records:
            for attribute, value in record_values(other).items():
                changed = cls(**{**values, attribute: value})
                assert (changed == record) is (canon(value) == canon(values[attribute])), attribute


def test_equality_of_arrays_takes_their_shape_into_account() -> None:
    basics = generated_module("basics").Basics
    empty = basics(my_ints=[], my_float=1.0, my_bytes=b"")
    assert empty == basics(my_ints=np.empty(0, dtype=np.int64), my_float=1.0, my_bytes=b"")
    assert empty != basics(my_ints=[0], my_float=1.0, my_bytes=b"")
    assert basics(my_ints=[1, 2], my_float=1.0, my_bytes=b"") != basics(
        my_ints=[2, 1], my_float=1.0, my_bytes=b""
    )


@pytest.mark.parametrize("name", SCHEMA_NAMES)
def test_records_survive_to_proto_and_from_proto(name: str) -> None:
    for record in samples(name):
        cls = type(record)
        message = record.to_proto()
        assert message.DESCRIPTOR.full_name == "tensorflow.Example"
        assert cls.from_proto(message) == record
        for info in cls.feature_spec():
            values = flat_values(getattr(record, info.name))
            if values is None:
                assert info.key not in message.features.feature
                continue
            feature = message.features.feature[info.key]
            assert feature.WhichOneof("kind") == info.wire
            assert canon(list(getattr(feature, info.wire).value)) == canon(values)


@pytest.mark.parametrize("name", SCHEMA_NAMES)
def test_from_proto_reads_a_message_built_with_the_protobuf_api(name: str) -> None:
    for record in samples(name):
        cls = type(record)
        message = build_example(proto, cls.feature_spec(), record_values(record))
        assert cls.from_proto(message) == record
        assert message == record.to_proto()


def test_from_proto_refuses_other_messages() -> None:
    customer = generated_module("customer").Customer
    with pytest.raises(
        RecordError,
        match="^expected a tensorflow.Example protobuf message, got tensorflow.Features$",
    ):
        customer.from_proto(proto.Features())


# --- feature_spec() -------------------------------------------------------------------------------


def _nested_tuples(value: object) -> object:
    return tuple(_nested_tuples(v) for v in value) if isinstance(value, list) else value


@pytest.mark.parametrize("name", SCHEMA_NAMES)
def test_feature_spec_describes_the_schema(name: str) -> None:
    doc = yaml.safe_load((SCHEMAS / f"{name}.yaml").read_text(encoding="utf-8"))
    module = generated_module(name)
    for record_name, record_doc in doc["records"].items():
        spec = getattr(module, record_name).feature_spec()
        assert spec.record == record_name
        expected = []
        for feature, fdoc in record_doc["features"].items():
            shape = tuple(fdoc.get("shape", ()))
            expected.append(
                FeatureInfo(
                    name=feature,
                    key=fdoc.get("key", feature),
                    dtype=fdoc["dtype"],
                    wire=DTYPES[fdoc["dtype"]].wire.list_name,
                    shape=shape,
                    fixed=None not in shape,
                    default=_nested_tuples(fdoc.get("default")),
                    optional=fdoc.get("optional", False),
                )
            )
        assert list(spec) == expected
        assert (
            len(spec) == len(expected)
            and spec[0] == expected[0]
            and spec[-1:] == tuple(expected[-1:])
        )


def test_feature_spec_prints_as_a_table() -> None:
    spec = generated_module("customer").Customer.feature_spec()
    assert str(spec) == "\n".join(
        [
            "Customer: 6 features",
            "  name                  key                   dtype    wire        shape   default  optional",
            "  age                   Age                   int64    int64_list  []      -        no",
            "  movie                 Movie                 string   bytes_list  [null]  -        no",
            "  movie_ratings         Movie Ratings         float32  float_list  [null]  -        no",
            "  suggestion            Suggestion            string   bytes_list  []      -        no",
            "  suggestion_purchased  Suggestion Purchased  float32  float_list  []      -        no",
            "  purchase_price        Purchase Price        float32  float_list  []      0.0      no",
        ]
    )


# --- TFRecord files -------------------------------------------------------------------------------

FILES = [
    (None, "data.tfrecord", b""),
    ("gzip", "data.tfrecord.GZ", b"\x1f\x8b"),
    ("zlib", "data.zlib", b"\x78"),
    ("auto", "data.tfrecord", b""),
    ("auto", "data.tfrecord.gz", b"\x1f\x8b"),
    ("auto", "data.tfrecord.zlib", b"\x78"),
]


@pytest.mark.parametrize("name", SCHEMA_NAMES)
@pytest.mark.parametrize(
    ("compression", "filename", "magic"), FILES, ids=[f"{c}-{f}" for c, f, _ in FILES]
)
def test_records_survive_a_tfrecord_file(
    tmp_path: Path, name: str, compression: Any, filename: str, magic: bytes
) -> None:
    records = samples(name)
    cls = type(records[0])
    path = tmp_path / filename
    assert cls.write_tfrecord(path, records, compression=compression) == len(records)
    data = path.read_bytes()
    assert data.startswith(magic)
    if not magic:  # uncompressed: the first record's length opens the file
        assert int.from_bytes(data[:8], "little") == len(records[0].encode())
    assert list(cls.read_tfrecord(path, compression=compression)) == records
    assert list(cls.read_tfrecord(str(path), compression="auto")) == records  # detected


def test_an_empty_tfrecord_file_has_no_records(tmp_path: Path) -> None:
    digit = generated_module("mnist").Digit
    path = tmp_path / "empty.tfrecord.gz"
    assert digit.write_tfrecord(path, [], compression="auto") == 0
    assert gzip.decompress(path.read_bytes()) == b""
    assert list(digit.read_tfrecord(path, compression="gzip")) == []


# --- determinism ----------------------------------------------------------------------------------

_ENCODE_SAMPLES = """
import sys
sys.modules["tensorflow"] = None  # generated modules must not need TensorFlow
sys.path.insert(0, sys.argv[1])
from support import matrix
for name in matrix.SCHEMA_NAMES:
    for record in matrix.samples(name):
        print(name, record.encode().hex())
"""


def test_encode_gives_the_same_bytes_in_any_process() -> None:
    here = [f"{name} {record.encode().hex()}" for name in SCHEMA_NAMES for record in samples(name)]
    runs = [
        subprocess.Popen(
            [*PYTHON, "-c", _ENCODE_SAMPLES, str(TESTS)],
            env={**os.environ, "PYTHONHASHSEED": seed},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for seed in ("0", "4242")
    ]
    for run in runs:
        out, err = run.communicate(timeout=60)
        assert run.returncode == 0, err
        assert out.splitlines() == here


# --- construction errors --------------------------------------------------------------------------

CUSTOMER = {
    "age": 30,
    "movie": ["Heat"],
    "movie_ratings": [8.0],
    "suggestion": "Ronin",
    "suggestion_purchased": 1.0,
}
BAD_CUSTOMERS = [
    ({"age": "abc"}, "Customer.age: expected int64, got str 'abc'"),
    ({"age": True}, "Customer.age: expected int64, got bool True"),
    ({"age": None}, "Customer.age: expected int64, got None"),
    ({"age": 2**63}, "Customer.age: value 9223372036854775808 out of range for int64 "
                     "[-9223372036854775808, 9223372036854775807]"),
    ({"movie": [1, 2]}, "Customer.movie[0]: expected string, got int 1"),
    ({"movie": "Heat"}, "Customer.movie: expected an iterable of string values with shape (None,), got str 'Heat'"),
    ({"movie_ratings": ["x"]}, "Customer.movie_ratings: expected float32 values, got list of str ['x']"),
    ({"movie_ratings": [[1.0]]}, "Customer.movie_ratings: expected shape (None,), got (1, 1)"),
    ({"suggestion": b"x"}, "Customer.suggestion: expected string, got bytes b'x'"),
    ({"suggestion": "\ud800"}, "Customer.suggestion: expected a string encodable as UTF-8, got str '\\ud800'"),
    ({"suggestion_purchased": 1e39}, "Customer.suggestion_purchased: value 1e+39 out of range for float32 "
                                     "[-3.4028234663852886e+38, 3.4028234663852886e+38]"),
    ({"purchase_price": "free"}, "Customer.purchase_price: expected float32, got str 'free'"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("change", "message"), BAD_CUSTOMERS, ids=[m.split(":")[0] for _, m in BAD_CUSTOMERS]
)
def test_customer_construction_errors_say_what_was_expected(
    change: dict[str, object], message: str
) -> None:
    customer = generated_module("customer").Customer
    with pytest.raises(RecordError) as info:
        customer(**{**CUSTOMER, **change})
    assert str(info.value) == message


def test_schema_construction_errors_say_what_was_expected() -> None:
    digit = generated_module("mnist").Digit
    image = generated_module("image").Image
    embedding = generated_module("embedding").Embedding
    basics = generated_module("basics").Basics
    cases: list[tuple[Any, dict[str, object], str]] = [
        (embedding, {"label": 1, "embedding": [0.0] * 127}, "Embedding.embedding: expected shape (128,), got (127,)"),
        (digit, {"label": 1, "image": [0.5] * 784},
         "Digit.image: expected int64 values, got list of float [0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0..."),
        (image, {"label": 1, "image": "text", "shape": [1, 2, 3]}, "Image.image: expected bytes, got str 'text'"),
        (image, {"label": 1, "image": b"", "shape": [1, 2]}, "Image.shape: expected shape (3,), got (2,)"),
        (basics, {"my_ints": np.array([1.5]), "my_float": 1.0, "my_bytes": b""},
         "Basics.my_ints: expected int64 values, got ndarray of float64 array([1.5])"),
    ]  # fmt: skip
    for cls, kwargs, message in cases:
        with pytest.raises(RecordError) as info:
            cls(**kwargs)
        assert str(info.value) == message


INT32_RANGE = "[-2147483648, 2147483647]"
MATRIX_ERRORS = [
    ("Int32Scalar", {"req": 2**31}, f"Int32Scalar.req: value 2147483648 out of range for int32 {INT32_RANGE}"),
    ("Int32Vec3", {"req": [-(2**31) - 1]}, f"Int32Vec3.req: value -2147483649 out of range for int32 {INT32_RANGE}"),
    ("Uint8Rows", {"req": [256]}, "Uint8Rows.req: value 256 out of range for uint8 [0, 255]"),
    ("Uint32Rows", {"req": [-1]}, "Uint32Rows.req: value -1 out of range for uint32 [0, 4294967295]"),
    ("BoolScalar", {"req": 1}, "BoolScalar.req: expected bool, got int 1"),
    ("BoolVec3", {"req": [1, 0, 1]}, "BoolVec3.req: expected bool values, got list of int [1, 0, 1]"),
    ("StringRows", {"req": [1, 2]}, "StringRows.req[0]: expected string, got int 1"),
    ("StringMat2x2", {"req": [["a", "b"], ["c"]]}, "StringMat2x2.req[1]: expected 2 items (shape (2, 2)), got 1"),
    ("BytesRows", {"req": ["a"]}, "BytesRows.req[0]: expected bytes, got str 'a'"),
    ("Float32Rows2", {"req": [[1.0, 2.0, 3.0]]}, "Float32Rows2.req: expected shape (None, 2), got (1, 3)"),
    ("Int16Mat2x2", {"req": [[1, 2], [3]]}, "Int16Mat2x2.req: expected shape (2, 2), got a ragged nested list"),
    ("Float32Scalar", {"req": None}, "Float32Scalar.req: expected float32, got None"),
    ("Float32Scalar", {"req": 1.0, "opt": "x"}, "Float32Scalar.opt: expected float32, got str 'x'"),
    ("Int8Vec3", {"req": [1, 2, 3], "dflt": [1, 2]}, "Int8Vec3.dflt: expected shape (3,), got (2,)"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("record", "kwargs", "message"), MATRIX_ERRORS, ids=[m.split(":")[0] for *_, m in MATRIX_ERRORS]
)
def test_matrix_construction_errors_say_what_was_expected(
    matrix: ModuleType, record: str, kwargs: dict[str, object], message: str
) -> None:
    with pytest.raises(RecordError) as info:
        getattr(matrix, record)(**kwargs)
    assert str(info.value) == message


def test_optional_attributes_default_to_none_and_defaults_apply(matrix: ModuleType) -> None:
    record = matrix.Int8Vec3(req=[1, 2, 3])
    assert record.opt is None
    assert record.dflt.dtype == np.int8 and record.dflt.tolist() == [-128, 127, -7]
    assert matrix.StringScalar(req="x").dflt == "défaut"
    assert matrix.BytesMat2x2(req=[[b"a", b"b"], [b"c", b"d"]]).dflt == [
        [b"d\x00", b""],
        [b"\xff", b"x"],
    ]


ABSENT_OPTIONAL = [
    ("Int64Scalar", 1),
    ("StringVec3", ["a", "b", "c"]),
    ("Float32Mat2x2", [[1.0, 2.0], [3.0, 4.0]]),
    ("Float32Rows", [0.5]),
    ("BytesRows", [b"x"]),
    ("BoolRows2", [[True, False]]),
]


@pytest.mark.parametrize(("record", "req"), ABSENT_OPTIONAL, ids=[r for r, _ in ABSENT_OPTIONAL])
def test_an_absent_optional_attribute_survives_encode_and_decode(
    matrix: ModuleType, record: str, req: object
) -> None:
    cls = getattr(matrix, record)
    value = cls(req=req)
    assert value.opt is None
    assert record_canon(cls.decode(value.encode())) == record_canon(value)


# --- decode errors --------------------------------------------------------------------------------


def _customer_message() -> Any:
    return generated_module("customer").Customer(**CUSTOMER).to_proto()


def test_decode_errors_name_record_attribute_and_key() -> None:
    customer = generated_module("customer").Customer
    missing = _customer_message()
    del missing.features.feature["Age"]
    wrong_kind = _customer_message()
    wrong_kind.features.feature["Age"].float_list.value[:] = [30.0]
    wrong_count = _customer_message()
    wrong_count.features.feature["Age"].int64_list.value.append(31)
    bad_text = _customer_message()
    bad_text.features.feature["Suggestion"].bytes_list.value[:] = [b"\xff"]
    cases = [
        (missing, "Customer.age (key 'Age'): required feature is missing (expected int64_list with 1 value)"),
        (wrong_kind, "Customer.age (key 'Age'): expected int64_list, found float_list"),
        (wrong_count, "Customer.age (key 'Age'): expected 1 int64_list value, found 2"),
        (bad_text, "Customer.suggestion (key 'Suggestion'): expected valid UTF-8 (invalid start byte at byte 0), "
                   "found bytes b'\\xff'"),
    ]  # fmt: skip
    for message, text in cases:
        with pytest.raises(RecordError) as info:
            customer.decode(message.SerializeToString())
        assert str(info.value) == text


def test_decode_errors_of_shaped_features_name_the_shape(matrix: ModuleType) -> None:
    embedding = generated_module("embedding").Embedding
    message = embedding(label=1, embedding=np.zeros(128)).to_proto()
    del message.features.feature["embedding"].float_list.value[-1]
    with pytest.raises(RecordError) as info:
        embedding.decode(message.SerializeToString())
    assert (
        str(info.value)
        == "Embedding.embedding (key 'embedding'): expected 128 float_list values for shape (128,), found 127"
    )
    rows = matrix.Int64Rows2(req=[[1, 2]]).to_proto()
    rows.features.feature["réq"].int64_list.value.append(3)
    with pytest.raises(RecordError) as info:
        matrix.Int64Rows2.decode(rows.SerializeToString())
    assert (
        str(info.value)
        == "Int64Rows2.req (key 'réq'): expected a multiple of 2 int64_list values for shape (None, 2), found 3"
    )


def test_decoded_integers_are_range_checked(matrix: ModuleType) -> None:
    for record, values, text in [
        (
            "Uint8Scalar",
            [256],
            "Uint8Scalar.req (key 'réq'): value 256 out of range for uint8 [0, 255]",
        ),
        (
            "Int16Rows",
            [1, -32769],
            "Int16Rows.req (key 'réq'): value -32769 out of range for int16 [-32768, 32767]",
        ),
        ("BoolVec3", [1, 2, 0], "BoolVec3.req (key 'réq'): value 2 out of range for bool [0, 1]"),
    ]:
        cls = getattr(matrix, record)
        message = proto.Example()
        message.features.feature["réq"].int64_list.value[:] = values
        with pytest.raises(RecordError) as info:
            cls.decode(message.SerializeToString())
        assert str(info.value) == text


def test_malformed_example_bytes_are_reported_with_the_record_and_offset() -> None:
    customer = generated_module("customer").Customer
    data = customer(**CUSTOMER).encode()
    for cut in (1, 5, len(data) - 1):
        with pytest.raises(RecordError) as info:
            customer.decode(data[:cut])
        assert "Customer" in str(info.value) and "byte offset" in str(info.value), str(info.value)


def test_a_malformed_list_is_reported_with_its_feature() -> None:
    basics = generated_module("basics").Basics
    message = basics(my_ints=[1], my_float=1.0, my_bytes=b"").to_proto()
    good = message.SerializeToString()
    entry = message.features.feature["my_ints"].SerializeToString()  # 1a 03 0a 01 01
    bad = good.replace(entry, b"\x1a\x03\x0a\x01\x80")  # the varint 0x80 is cut short
    assert bad != good
    with pytest.raises(RecordError) as info:
        basics.decode(bad)
    assert str(info.value).startswith("Basics.my_ints (key 'my_ints'): "), str(info.value)
    assert "byte offset" in str(info.value)


# --- errors in TFRecord files ---------------------------------------------------------------------


def _frame(record: bytes) -> int:
    """The size of a record in a TFRecord stream: header, data and data CRC."""
    return 12 + len(record) + 4


@pytest.mark.parametrize("compression", [None, "gzip", "zlib"])
def test_an_undecodable_record_is_reported_with_its_file_position(
    tmp_path: Path, compression: Any
) -> None:
    customer = generated_module("customer").Customer
    good = [r.encode() for r in samples("customer")]
    missing = _customer_message()
    del missing.features.feature["Suggestion"]
    path = tmp_path / "customers.tfrecord"
    write_tfrecord(
        path, [good[0], good[1], missing.SerializeToString(), good[2]], compression=compression
    )
    reader = customer.read_tfrecord(path, compression=compression)
    assert [next(reader).encode(), next(reader).encode()] == good[:2]
    with pytest.raises(DataError) as info:
        next(reader)
    error = info.value
    offset = _frame(good[0]) + _frame(good[1])
    assert (error.path, error.index, error.offset) == (str(path), 2, offset)
    assert str(error) == (
        f"{path}: record 2 at byte offset {offset}: "
        "Customer.suggestion (key 'Suggestion'): required feature is missing (expected bytes_list with 1 value)"
    )
    assert isinstance(error.__cause__, RecordError)


def test_a_corrupt_record_is_reported_with_its_file_position(tmp_path: Path) -> None:
    digit = generated_module("mnist").Digit
    records = samples("mnist")
    path = tmp_path / "digits.tfrecord"
    digit.write_tfrecord(path, records)
    data = bytearray(path.read_bytes())
    offset = _frame(records[0].encode())
    data[offset + 12 + 5] ^= 0x01  # a byte of record 1's data
    path.write_bytes(bytes(data))
    reader = digit.read_tfrecord(path)
    assert next(reader) == records[0]
    with pytest.raises(DataError) as info:
        next(reader)
    assert (info.value.path, info.value.index, info.value.offset) == (str(path), 1, offset)
    assert "corrupt data CRC" in str(info.value)


@pytest.mark.parametrize("compression", [None, "gzip"])
def test_skip_mode_passes_over_records_that_do_not_decode(tmp_path: Path, compression: Any) -> None:
    digit = generated_module("mnist").Digit
    records = samples("mnist")
    path = tmp_path / "digits.tfrecord"
    serialized = [r.encode() for r in records]
    write_tfrecord(path, [serialized[0], b"\x0f", serialized[1]], compression=compression)
    skipped: list[SkippedSpan] = []
    read = list(
        digit.read_tfrecord(path, compression=compression, on_error="skip", on_skip=skipped.append)
    )
    assert read == records[:2]
    offset = _frame(serialized[0])
    assert skipped == [SkippedRecord(str(path), offset, 1 + 16, skipped[0].reason, 1)]
    assert "Digit: Example: invalid wire type 7" in skipped[0].reason
    with pytest.raises(DataError) as info:
        list(digit.read_tfrecord(path, compression=compression))
    assert (info.value.index, info.value.offset) == (1, offset)


@pytest.mark.parametrize("compression", [None, "gzip", "zlib"])
def test_a_truncated_file_is_reported_with_its_file_position(
    tmp_path: Path, compression: Any
) -> None:
    image = generated_module("image").Image
    records = samples("image")
    frames = [_frame(r.encode()) for r in records]
    path = tmp_path / "images.tfrecord"
    image.write_tfrecord(path, records, compression=compression)
    raw = path.read_bytes()
    if compression is None:
        cut = raw[:-10]
        kept = len(cut)
        reason = "truncated record"
    else:
        cut = raw[: len(raw) // 2]
        kept = len(zlib.decompressobj(31 if compression == "gzip" else 15).decompress(cut))
        reason = f"truncated {compression} stream"
    path.write_bytes(cut)
    complete = max(k for k in range(len(frames) + 1) if sum(frames[:k]) <= kept)
    assert complete < len(records)
    with pytest.raises(DataError) as info:
        list(image.read_tfrecord(path, compression=compression))
    error = info.value
    assert (error.path, error.index, error.offset) == (str(path), complete, sum(frames[:complete]))
    assert reason in str(error)


def test_sequence_examples_read_by_an_example_record_get_a_hint() -> None:
    sentence = generated_module("sentence").Sentence
    digit = generated_module("mnist").Digit
    data = sentence(length=2, tokens=np.array([1, 2]), labels=np.array([0, 1])).encode()
    hint = (
        " (the bytes are a tf.train.SequenceExample with the feature lists 'labels', 'tokens';"
        " read them with a SequenceExample record: its schema has 'context:' and 'sequence:'"
        " instead of 'features:')"
    )
    with pytest.raises(RecordError) as caught:
        digit.decode(data)
    assert str(caught.value).startswith("Digit.label (key 'label'): required feature is missing")
    assert str(caught.value).endswith(hint)
    with pytest.raises(RecordError) as batch:
        digit.decode_batch([data])
    assert str(batch.value).startswith("batch record 0: Digit.label") and hint in str(batch.value)
    with pytest.raises(RecordError) as plain:  # an Example that lacks the feature: no hint
        digit.decode(b"")
    assert "SequenceExample" not in str(plain.value)
