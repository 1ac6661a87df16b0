"""Columnar batch decoding: ``<Record>Batch.decode`` gives per-record ``decode``'s values and errors
on every schema in ``schemas/``, on the conformance matrix and on raw, ragged and SequenceExample
records, with the C scanner and with the pure-Python one; the column types; records and back."""

from __future__ import annotations

import contextlib
import struct
import sys
from collections.abc import Iterator, Sequence
from types import ModuleType
from typing import Any
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codegen.dtypes import BOOL, INT64, Kind
from codegen.errors import RecordError, TfrGenError
from codegen.runtime.accel import speedups
from codegen.runtime.codec import batch, features, sequences, wire
from codegen.runtime.codec.columns import Masked, Ragged
from codegen.runtime.codec.features import IntScalar
from codegen.runtime.codec.tensors import RawTensor
from codegen.runtime.codec.varint import encode_varint
from support.matrix import matrix_yaml
from support.modules import generate_module
from support.paths import SCHEMAS
from support.strategies import SHAPES, records_of


@pytest.fixture(scope="module")
def modules(tmp_path_factory: pytest.TempPathFactory) -> dict[str, ModuleType]:
    """Every schema of ``schemas/``, the matrix and :data:`SHAPES`, generated with batch classes."""
    directory = tmp_path_factory.mktemp("batch_modules")
    out = {
        path.stem: generate_module(
            path.read_text(encoding="utf-8"), f"batch_{path.stem}", directory
        )
        for path in sorted(SCHEMAS.glob("*.yaml"))
    }
    out["matrix"] = generate_module(matrix_yaml(), "batch_matrix", directory)
    out["shapes"] = generate_module(SHAPES, "batch_shapes", directory)
    return out


def record_classes(module: ModuleType) -> list[type]:
    return [getattr(module, name) for name in module.__all__ if hasattr(module, f"{name}Batch")]


def record_class(
    modules: dict[str, ModuleType], *, sequence: bool = True
) -> st.SearchStrategy[type]:
    """Any record class, half of the time one of :data:`SHAPES` (every kind of column is there)."""
    classes = [
        cls
        for module in modules.values()
        for cls in record_classes(module)
        if sequence or not hasattr(cls, "tf_sequence_spec")
    ]
    shapes = [cls for cls in classes if cls.__module__ == modules["shapes"].__name__]
    return st.sampled_from(classes) | st.sampled_from(shapes)


@contextlib.contextmanager
def scanner(name: str) -> Iterator[None]:
    """Decode with the C accelerator's scanner (``c``) or the pure-Python one (``python``)."""
    if name == "python":
        with mock.patch.object(batch, "speedups", None):
            yield
    else:
        if speedups is None:
            pytest.skip("the C accelerator is not built")
        yield


SCANNERS = ("c", "python")


# --- rewriting serialized Examples -------------------------------------------------------------


def _feature(kind: int, body: bytes) -> bytes:
    return bytes((kind << 3 | 2,)) + encode_varint(len(body)) + body if kind else b""


def _unpacked(kind: int, body: bytes) -> bytes:
    """The same list with every value as its own unpacked field."""
    if kind == 3:
        return b"".join(
            b"\x08" + encode_varint(int(v) & (2**64 - 1)) for v in wire.decode_int64_list(body)
        )
    if kind == 2:
        return b"".join(
            b"\x0d" + struct.pack("<f", v) for v in wire.decode_float_list(body).tolist()
        )
    return body


@st.composite
def rewritten(draw: st.DrawFn, data: bytes) -> bytes:
    """``data`` (a canonical Example) with features dropped, unpacked, or given another list."""
    features = wire.parse_example(data)
    entries = []
    for key, (kind, body) in sorted(features.items()):
        change = draw(
            st.sampled_from(("keep", "keep", "keep", "drop", "unpack", "kind", "none", "values"))
        )
        if change == "drop":
            continue
        if change == "unpack":
            body = _unpacked(kind, body)
        elif change == "kind":
            kind = draw(st.sampled_from([k for k in (1, 2, 3) if k != kind]))
        elif change == "none":
            kind, body = 0, b""
        elif change == "values" and kind == 3:  # row lengths and shapes that may not fit
            body = wire.int64_feature(
                np.array(draw(st.lists(st.integers(-1, 3), max_size=4)), np.int64)
            )[2:]
        elif change == "values" and kind == 1:  # sizes and UTF-8 that may not fit
            body = wire.bytes_feature(draw(st.lists(st.binary(max_size=9), max_size=3)))[2:]
        entries.append(wire.map_entry(wire.key_field(key.decode()), _feature(kind, body)))
    return wire.example(entries)


# --- comparable forms ----------------------------------------------------------------------------


def form(value: object) -> object:
    """``value`` (a column or a record's value) in a form whose ``==`` is exact."""
    if isinstance(value, np.ndarray):
        if value.dtype == object:
            return ("objects", value.shape, [form(v) for v in value.reshape(-1).tolist()])
        return ("array", value.dtype.str, value.shape, value.tobytes())
    if isinstance(value, Ragged):
        return ("ragged", form(value.values), value.row_splits.dtype.str, value.row_splits.tolist())
    if isinstance(value, Masked):
        return ("masked", form(value.values), form(value.present))
    if isinstance(value, list):
        return [form(item) for item in value]
    if isinstance(value, float):
        return ("float", struct.pack("<d", value))
    return (type(value).__name__, value)


def conforms(value: object, annotation: str) -> bool:
    """Whether ``value`` is what the batch class's type annotation ``annotation`` says."""
    for prefix, kind in (("_rt.Masked[", Masked), ("_rt.Ragged[", Ragged)):
        if annotation.startswith(prefix):
            return isinstance(value, kind) and conforms(value.values, annotation[len(prefix) : -1])
    if annotation.startswith("list["):
        return isinstance(value, list) and all(conforms(item, annotation[5:-1]) for item in value)
    if annotation.startswith("_npt.NDArray[_np."):
        dtype = np.dtype(annotation.removeprefix("_npt.NDArray[_np.")[:-1])
        return isinstance(value, np.ndarray) and value.dtype == dtype
    return type(value).__name__ == annotation


def batch_form(b: Any) -> object:
    return {name: form(column) for name, column in b.to_dict().items()}


def record_form(record: Any) -> object:
    return [(info.name, form(getattr(record, info.name))) for info in type(record).feature_spec()]


def outcome(decode: Any, data: Sequence[bytes]) -> object:
    """What ``decode(data)`` gives: the batch's columns and records, or the error message."""
    try:
        result = decode(data)
    except RecordError as exc:
        return ("error", str(exc))
    return ("batch", batch_form(result), [record_form(r) for r in result.records()])


def expected(cls: type, data: Sequence[bytes]) -> object:
    """:func:`outcome` of per-record decoding: the first error, or the batch of the records."""
    records = []
    for i, item in enumerate(data):
        try:
            records.append(cls.decode(item))  # type: ignore[attr-defined]
        except RecordError as exc:
            return ("error", f"batch record {i}: {exc}")
    built = batch_class(cls).from_records(records)
    return ("batch", batch_form(built), [record_form(r) for r in records])


def batch_class(cls: type) -> Any:
    return getattr(sys.modules[cls.__module__], f"{cls.__name__}Batch")


# --- decode_batch equals per-record decode -------------------------------------------------------


@pytest.mark.parametrize("name", SCANNERS)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_batches_decode_like_each_record(
    modules: dict[str, ModuleType], name: str, data: st.DataObject
) -> None:
    cls = data.draw(record_class(modules), label="record")
    records = data.draw(records_of(cls), label="records")
    encoded = [r.encode() for r in records]
    # Canonical Examples never need per-record decoding: the columnar path takes them all; nor
    # do canonical SequenceExamples whose plan reads every feature (one call for the batch).
    columnar: Any = contextlib.nullcontext()
    if not hasattr(cls, "tf_sequence_spec"):
        columnar = mock.patch.object(
            batch.BatchCodec, "_decode_each", side_effect=AssertionError("record by record")
        )
    elif encoded and batch_class(cls).__tfr__.batch_codec._batch_plan is not None:
        columnar = mock.patch.object(
            batch.BatchCodec, "columns", side_effect=AssertionError("record by record")
        )
    with scanner(name), columnar:
        decoded = batch_class(cls).decode(encoded)
    assert outcome(lambda _: decoded, encoded) == expected(cls, encoded)
    for attribute, column in decoded.to_dict().items():
        annotation = type(decoded).__annotations__[attribute]
        assert conforms(column, annotation), f"{attribute}: {column!r} is not a {annotation}"


@pytest.mark.parametrize("name", SCANNERS)
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_rewritten_examples_decode_or_fail_like_each_record(
    modules: dict[str, ModuleType], name: str, data: st.DataObject
) -> None:
    cls = data.draw(record_class(modules, sequence=False), label="record")
    records = data.draw(records_of(cls), label="records")
    encoded = [data.draw(rewritten(r.encode())) for r in records]
    with scanner(name):
        assert outcome(batch_class(cls).decode, encoded) == expected(cls, encoded)


@pytest.mark.parametrize("name", SCANNERS)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_damaged_bytes_decode_or_fail_like_each_record(
    modules: dict[str, ModuleType], name: str, data: st.DataObject
) -> None:
    cls = data.draw(record_class(modules), label="record")
    records = data.draw(records_of(cls).filter(bool), label="records")
    encoded = [r.encode() for r in records]
    target = data.draw(st.integers(0, len(encoded) - 1))
    damaged = bytearray(encoded[target])
    if damaged:
        position = data.draw(st.integers(0, len(damaged) - 1))
        damaged[position] = data.draw(st.integers(0, 255))
        cut = data.draw(st.integers(0, len(damaged)))
        damaged = damaged[:cut] if data.draw(st.booleans()) else damaged
    encoded[target] = bytes(damaged)
    with scanner(name):
        assert outcome(batch_class(cls).decode, encoded) == expected(cls, encoded)


def test_customer_columns(modules: dict[str, ModuleType]) -> None:
    customer = modules["customer"]
    records = [
        customer.Customer(
            age=30,
            movie=["A", "B"],
            movie_ratings=[1.5, 2.5],
            suggestion="C",
            suggestion_purchased=1.0,
        ),
        customer.Customer(
            age=7, movie=[], movie_ratings=[], suggestion="", suggestion_purchased=0.0
        ),
        customer.Customer(
            age=2**40,
            movie=["é"],
            movie_ratings=[3.0],
            suggestion="D",
            suggestion_purchased=0.5,
            purchase_price=9.5,
        ),
    ]
    b = customer.CustomerBatch.decode([r.encode() for r in records])
    assert len(b) == 3
    assert b.age.dtype == np.int64 and b.age.tolist() == [30, 7, 2**40]
    assert b.movie.values == ["A", "B", "é"] and b.movie.row_splits.tolist() == [0, 2, 2, 3]
    assert b.movie.row(2) == ["é"] and b.movie[1] == []
    assert b.movie_ratings.values.dtype == np.float32
    assert b.movie_ratings.to_padded(-1.0).tolist() == [[1.5, 2.5], [-1.0, -1.0], [3.0, -1.0]]
    assert b.suggestion == ["C", "", "D"]
    assert b.purchase_price.tolist() == [0.0, 0.0, 9.5]
    assert list(b.to_dict()) == [
        "age",
        "movie",
        "movie_ratings",
        "suggestion",
        "suggestion_purchased",
        "purchase_price",
    ]
    assert b.records() == records


def test_matrix_optional_and_default_columns(modules: dict[str, ModuleType]) -> None:
    matrix = modules["matrix"]
    a = matrix.Int32Vec3(req=[1, 2, 3], opt=[4, 5, 6])
    b = matrix.Int32Vec3(req=[7, 8, 9], dflt=[-1, -2, -3])
    absent_default = wire.example(
        wire.map_entry(wire.key_field(key), _feature(*value))
        for key, value in _entries(a.encode())
        if key != "dêfault"
    )
    column = matrix.Int32Vec3Batch.decode([a.encode(), b.encode(), absent_default])
    assert column.req.dtype == np.int32 and column.req.shape == (3, 3)
    assert isinstance(column.opt, Masked)
    assert column.opt.present.tolist() == [True, False, True]
    assert column.opt.values.tolist() == [[4, 5, 6], [0, 0, 0], [4, 5, 6]]
    default = matrix.Int32Vec3(req=[0, 0, 0]).dflt.tolist()
    assert column.dflt.tolist() == [default, [-1, -2, -3], default]
    assert [r.opt is None for r in column.records()] == [False, True, False]


def _entries(data: bytes) -> list[tuple[str, tuple[int, bytes]]]:
    return [(key.decode(), value) for key, value in sorted(wire.parse_example(data).items())]


def test_the_first_bad_record_is_named_with_decode_s_message(
    modules: dict[str, ModuleType],
) -> None:
    customer = modules["customer"]
    good = customer.Customer(
        age=1, movie=[], movie_ratings=[], suggestion="", suggestion_purchased=0.0
    )
    no_age = wire.example(
        wire.map_entry(wire.key_field(key), _feature(*value))
        for key, value in _entries(good.encode())
        if key != "Age"
    )
    for name in SCANNERS:
        with scanner(name), pytest.raises(RecordError) as info:
            customer.CustomerBatch.decode([good.encode(), no_age, b"\x0a\x05"])
        assert str(info.value) == (
            "batch record 1: Customer.age (key 'Age'): required feature is missing "
            "(expected int64_list with 1 value)"
        )


def test_an_empty_batch(modules: dict[str, ModuleType]) -> None:
    empty = modules["shapes"].TensorsBatch.decode([])
    assert len(empty) == 0 and empty.records() == []
    assert empty.fixed.shape == (0, 2, 2) and empty.rows.values.shape == (0, 3)
    assert len(modules["shapes"].StepsBatch.decode([]).tokens) == 0


def test_records_share_nothing_with_the_batch(modules: dict[str, ModuleType]) -> None:
    shapes = modules["shapes"]
    record = shapes.Tensors(
        fixed=[[1.0, 2.0], [3.0, 4.0]],
        rows=[[1, 2, 3]],
        image=np.zeros((1, 2, 2), np.uint8),
        boxes=[[1.0], [2.0, 3.0]],
        cells=[],
        pairs=[[[b"a", b"b"]]],
    )
    b = shapes.TensorsBatch.decode([record.encode()])
    (first,) = b.records()
    first.fixed[0, 0] = 9.0
    first.rows[0, 0] = 9
    first.image[0, 0, 0] = 9
    first.boxes[0][0] = 9.0
    first.pairs[0][0][0] = b"z"
    again = b.records()[0]
    assert again == record and b.records() == shapes.TensorsBatch.from_records([record]).records()


def test_columns_of_different_lengths_are_refused(modules: dict[str, ModuleType]) -> None:
    customer = modules["customer"]
    with pytest.raises(
        RecordError, match=r"CustomerBatch: columns of different lengths \(age=2, movie=1, "
    ):
        customer.CustomerBatch(
            age=np.array([1, 2]),
            movie=Ragged(["a"], np.array([0, 1])),
            movie_ratings=Ragged(np.zeros(1, np.float32), np.array([0, 1])),
            suggestion=["s"],
            suggestion_purchased=np.zeros(1, np.float32),
            purchase_price=np.zeros(1, np.float32),
        )


@pytest.mark.parametrize("name", SCANNERS)
def test_raw_bools_must_be_zero_or_one(name: str) -> None:
    flags = RawTensor[np.bool_]("R", "flags", "flags", BOOL, (2,))
    codec = batch.BatchCodec("R", [flags])
    good = wire.example([flags.entry(np.array([True, False]))])
    bad = good[:-1] + b"\x02"
    with scanner(name):
        (column,) = codec.decode([good, good])
        assert column.tolist() == [[True, False], [True, False]]
        with pytest.raises(
            RecordError, match=r"batch record 1: R.flags \(key 'flags'\): value 2 out of range"
        ):
            codec.decode([good, bad])


class Other(features.ListCodec[int]):
    """A codec kind the batch decoder does not know."""

    _kinds = (Kind.INT,)
    _scalar = True

    def coerce(self, value: object) -> int:
        return 0

    def entry(self, value: int | None) -> bytes:
        return b""

    def _present(self, body: bytes) -> int:
        return 0

    def _copy(self, value: int) -> int:
        return value


class OtherSteps(sequences.SequenceCodec[list[int]]):
    """A feature list kind the batch decoder does not know."""

    _kinds = (Kind.INT,)

    def _check_shape(self) -> None:
        pass

    def coerce(self, value: object) -> list[int]:
        return []

    def entry(self, value: list[int]) -> bytes:
        return b""

    def _steps(self, steps: list[tuple[int, bytes]]) -> list[int]:
        return []

    def _no_steps(self) -> list[int]:
        return []


class Odd(IntScalar):
    """A subclass of a codec kind the batch decoder knows."""


def test_a_codec_without_a_column_is_refused() -> None:
    odd = Odd("R", "odd", "odd", INT64, ())
    assert batch.BatchCodec("R", [odd]).decode([wire.example([odd.entry(3)])])[0].tolist() == [3]
    with pytest.raises(TfrGenError, match="R.other: no batch column for Other"):
        batch.BatchCodec("R", [Other("R", "other", "other", INT64, ())])
    with pytest.raises(TfrGenError, match="R.steps: no batch column for OtherSteps"):
        batch.BatchCodec("R", [], [OtherSteps("R", "steps", "steps", INT64, ())])


def _ints(*values: int) -> tuple[int, bytes]:
    return 3, wire.int64_feature(np.array(values, np.int64))[2:]


def _blobs(*values: bytes) -> tuple[int, bytes]:
    return 1, wire.bytes_feature(list(values))[2:]


TENSOR_CHANGES: dict[str, dict[str, tuple[int, bytes] | None]] = {
    "raw bytes of the wrong size": {"fixed": _blobs(bytes(31))},
    "two raw values": {"fixed": _blobs(bytes(32), bytes(32))},
    "a raw shape of the wrong rank": {"rows/shape": _ints(1)},
    "a raw shape with a negative dimension": {"image/shape": _ints(-1, 1, 2)},
    "a raw shape with the wrong fixed dimension": {"image/shape": _ints(1, 1, 3)},
    "a raw shape companion without its feature": {"image": None},
    "a raw shape whose size overflows int64": {
        "image/shape": _ints(2**40, 2**40, 2),
        "image": _blobs(b""),
    },
    "a raw shape of no values with a huge dimension": {
        "image/shape": _ints(0, 2**62, 2),
        "image": _blobs(b""),
    },
    "a raw feature without its shape": {"rows/shape": None},
    "a raw shape that does not fit the bytes": {"rows/shape": _ints(2, 3)},
    "a raw shape in a float list": {"rows/shape": (2, b"")},
    "negative row lengths": {"boxes/row_lengths_1": _ints(-1, 3)},
    "row lengths that do not add up": {"cell/ids/row_lengths_2": _ints(1)},
    "more values than the row lengths hold": {"boxes/row_lengths_1": _ints(1, 1)},
    "row lengths in a bytes list": {"small/row_lengths_1": _blobs(b"x")},
    "ragged values of the wrong list": {"small": (2, b"")},
    "ragged values out of range": {"small": _ints(256), "small/row_lengths_1": _ints(1)},
    "ragged text that is not UTF-8": {"words": _blobs(b"\xff"), "words/row_lengths_1": _ints(1)},
    "only row lengths": {"words": None, "words/row_lengths_1": _ints(0)},
}


@pytest.mark.parametrize("name", SCANNERS)
@pytest.mark.parametrize("change", list(TENSOR_CHANGES))
def test_raw_and_ragged_features_decode_or_fail_like_each_record(
    modules: dict[str, ModuleType], name: str, change: str
) -> None:
    shapes = modules["shapes"]
    record = shapes.Tensors(
        fixed=[[1.0, 2.0], [3.0, 4.0]],
        rows=[[1, 2, 3]],
        image=np.zeros((1, 1, 2), np.uint8),
        boxes=[[1.0], [2.0, 3.0]],
        cells=[[np.zeros((1, 2), np.int64)], [np.zeros((0, 2), np.int64)]],
        pairs=[[[b"a", b"b"]]],
        words=[["x"]],
        small=[[1]],
    )
    features = dict(_entries(record.encode()))
    for key, value in TENSOR_CHANGES[change].items():
        if value is None:
            features.pop(key, None)
        else:
            features[key] = value
    changed = wire.example(
        wire.map_entry(wire.key_field(k), _feature(*v)) for k, v in sorted(features.items())
    )
    encoded = [record.encode(), changed]
    with scanner(name):
        assert outcome(shapes.TensorsBatch.decode, encoded) == expected(shapes.Tensors, encoded)


@pytest.mark.parametrize("name", SCANNERS)
def test_signaling_nans_read_like_each_record(modules: dict[str, ModuleType], name: str) -> None:
    """A scalar float comes out of per-record decoding as a Python float, which makes a signaling
    NaN quiet; its column does the same. A float array keeps every bit, as each record's does."""
    cls = modules["matrix"].Float32Scalar
    signaling = struct.pack("<I", 0x7F800001)
    data = cls(req=1.0, dflt=2.0).encode().replace(struct.pack("<f", 2.0), signaling)
    with scanner(name):
        column = batch_class(cls).decode([data, data]).dflt
    assert column.view(np.uint32).tolist() == [0x7FC00001] * 2
    assert struct.pack("<f", cls.decode(data).dflt) == struct.pack("<I", 0x7FC00001)
    assert outcome(batch_class(cls).decode, [data]) == expected(cls, [data])
    arrays = modules["embedding"].Embedding
    vector = np.zeros(128, np.float32)
    vector.view(np.uint32)[3] = 0x7F800001
    encoded = arrays(label=1, embedding=vector).encode()
    with scanner(name):
        batch = batch_class(arrays).decode([encoded])
    assert batch.embedding.view(np.uint32)[0, 3] == 0x7F800001
    assert arrays.decode(encoded).embedding.view(np.uint32)[3] == 0x7F800001
