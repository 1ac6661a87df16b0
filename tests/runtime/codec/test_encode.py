"""The columnar encoder (C ``encode_examples`` through ``codec/encode.py``) against per-record ``encode()``:
byte for byte on every Example and SequenceExample record (raw and ragged tensors with their companions, feature
lists), the fallback for everything else, and errors (through the constructor) that name the row and the
column."""

from __future__ import annotations

import sys
from types import ModuleType
from typing import Any
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codegen.errors import RecordError
from codegen.runtime import accel
from codegen.runtime.codec import encode
from codegen.runtime.codec.columns import Masked, Ragged
from support.matrix import matrix_yaml
from support.modules import generate_module
from support.paths import SCHEMAS
from support.speedups import import_speedups
from support.strategies import SHAPES, records_of

LAYOUTS = """\
version: 1
records:
  DeclaredLayouts:
    features:
      label: {dtype: bytes}
      image:
        {dtype: uint8, shape: [null, null, 3], encoding: raw, shape_from: {key: shape, dtype: int32, encoding: raw}}
      pixels:
        {key: image/raw, dtype: uint16, shape: [null, 2, null], encoding: raw, shape_from: [image/h, image/w]}
      depth:
        {dtype: float32, shape: [2, null], encoding: raw, shape_from: {key: depth/dims, dtype: int64}, optional: true}
      tokens:
        key: tokens/ragged_flat_values
        dtype: int64
        shape: [null, null]
        row_lengths_from: [tokens/ragged_row_lengths_0]
  RawForms:
    features:
      fixed: {dtype: float64, shape: [2, 3], encoding: raw}
      rows: {dtype: uint32, shape: [null, 2], encoding: raw, optional: true}
      scalar: {dtype: int16, shape: [], encoding: raw}
      any: {dtype: int8, shape: [null, null], encoding: raw, optional: true}
      words: {dtype: string, shape: [null, null, 2], optional: true}
      deep: {dtype: float32, shape: [null, null, null]}
"""


@pytest.fixture(scope="module")
def modules(tmp_path_factory: pytest.TempPathFactory) -> dict[str, ModuleType]:
    directory = tmp_path_factory.mktemp("encode_modules")
    out = {
        path.stem: generate_module(path.read_text(encoding="utf-8"), f"enc_{path.stem}", directory)
        for path in sorted(SCHEMAS.glob("*.yaml"))
    }
    out["matrix"] = generate_module(matrix_yaml(), "enc_matrix", directory)
    out["shapes"] = generate_module(SHAPES, "enc_shapes", directory)
    out["layouts"] = generate_module(LAYOUTS, "enc_layouts", directory)
    return out


def _classes(modules: dict[str, ModuleType]) -> list[Any]:
    return [
        getattr(module, name)
        for module in modules.values()
        for name in module.__all__
        if hasattr(module, f"{name}Batch")
    ]


def columnar() -> None:
    """The columnar path needs the accelerator: fails in CI without it, skips the pure-Python pass on purpose."""
    import_speedups()
    if accel.speedups is None:
        pytest.skip(f"{accel.PURE_PYTHON_VARIABLE}=1: the runtime runs without the accelerator")


def batch_class(cls: Any) -> Any:
    return getattr(sys.modules[cls.__module__], f"{cls.__name__}Batch")


def test_the_columnar_path_covers_every_record_without_encoded_images(
    modules: dict[str, ModuleType],
) -> None:
    columnar()
    slow = {cls.__name__ for cls in _classes(modules) if not cls.__tfr__.batch_encoder.fast}
    assert slow == {"JpegImage"}  # encoded images: record by record


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_columns_encode_as_each_record(modules: dict[str, ModuleType], data: st.DataObject) -> None:
    import_speedups()
    cls = data.draw(st.sampled_from(_classes(modules)))
    records = data.draw(records_of(cls))
    batch = batch_class(cls).from_records(records)
    expected = [record.encode() for record in records]
    columns = batch.columns()
    fast = cls.__tfr__.batch_encoder.encode(columns, len(records))
    if cls.__tfr__.batch_encoder.fast:
        assert fast == expected
    else:
        assert fast is None
    assert cls.encode_batch(batch) == expected
    decoded = cls.decode_batch(expected)  # views of the accelerator's buffers, strings as lists
    again = [record.encode() for record in decoded.records()]
    assert cls.encode_batch(decoded) == again
    if not any(info.encoding == "jpeg" for info in cls.feature_spec()):
        assert (
            again == expected
        )  # lossless: decoded values encode to the same bytes (JPEG re-encodes pixels)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_raw_ragged_and_feature_list_columns_are_each_records_bytes(
    modules: dict[str, ModuleType], data: st.DataObject
) -> None:
    columnar()
    classes = [
        cls
        for cls in _classes(modules)
        if cls.__tfr__.sequence is not None
        or any(info.encoding == "raw" or info.shape.count(None) > 1 for info in cls.feature_spec())
    ]
    cls = data.draw(st.sampled_from(classes))
    records = data.draw(records_of(cls))
    batch = batch_class(cls).from_records(records)
    fast = cls.__tfr__.batch_encoder.encode(batch.columns(), len(records))
    assert fast == [record.encode() for record in records]
    decoded = cls.decode_batch(fast)  # views of the accelerator's buffers
    assert cls.__tfr__.batch_encoder.encode(decoded.columns(), len(records)) == fast


VARINT_EDGES = (0, 1, 127, 128, 16383, 16384, 2**21 - 1, 2**21, 2**35, 2**63 - 1, -1, -(2**63))
"""int64 values at every varint size boundary (one to ten bytes)."""


def test_int64_columns_of_every_varint_size_encode_as_each_record(
    modules: dict[str, ModuleType],
) -> None:
    columnar()
    rng = np.random.default_rng(7)
    edges = np.array(VARINT_EDGES, np.int64)
    digit, sentence = modules["mnist"].Digit, modules["sentence"].Sentence
    digits = [digit(label=int(e), image=rng.choice(edges, 784)) for e in edges]
    sentences = [
        sentence(length=n, tokens=rng.choice(edges, n), labels=edges[-n:] if n else edges[:0])
        for n in range(len(edges) + 1)
    ]
    for cls, records in ((digit, digits), (sentence, sentences)):
        expected = [record.encode() for record in records]
        batch = batch_class(cls).from_records(records)
        assert cls.__tfr__.batch_encoder.encode(batch.columns(), len(records)) == expected


def test_signaling_nans_of_float_scalars_are_quieted_as_records_do(
    modules: dict[str, ModuleType],
) -> None:
    import_speedups()
    scalar = modules["matrix"].Float32Scalar
    bits = np.array([0x7F800001, 0x7FC00001, 0xFF800123], np.uint32)
    values = bits.view(np.float32)
    batch = batch_class(scalar)(
        req=values, dflt=values.copy(), opt=Masked(values, np.ones(3, bool))
    )
    assert scalar.encode_batch(batch) == [r.encode() for r in batch.records()]
    vec = modules["matrix"].Float32Vec3
    tensors = np.repeat(values[:, None], 3, axis=1)
    vec_batch = batch_class(vec)(req=tensors, dflt=tensors, opt=Masked(tensors, np.ones(3, bool)))
    assert vec.encode_batch(vec_batch) == [r.encode() for r in vec_batch.records()]


def test_columns_in_other_forms_go_through_the_constructor(modules: dict[str, ModuleType]) -> None:
    columnar()
    customer = modules["customer"].Customer
    encoder = customer.__tfr__.batch_encoder
    good = dict(
        age=np.array([1, 2]),
        movie=Ragged(["a", "b"], np.array([0, 1, 2])),
        movie_ratings=Ragged(np.array([1.0, 2.0], np.float32), np.array([0, 1, 2])),
        suggestion=["x", "y"],
        suggestion_purchased=np.zeros(2, np.float32),
        purchase_price=np.zeros(2, np.float32),
    )
    assert encoder.encode(tuple(good.values()), 2) is not None
    expected = customer.encode_batch(batch_class(customer)(**good))
    for name, other in {
        "age": np.array([1.0, 2.0]),  # floats for an int64 feature
        "suggestion": ("x", "y"),  # a tuple
        "movie_ratings": Ragged([1.0, 2.0], np.array([0, 1, 2])),  # a list of floats
    }.items():
        columns = tuple(other if key == name else value for key, value in good.items())
        assert encoder.encode(columns, 2) is None, name
        with pytest.raises(RecordError) if name == "age" else _nothing():
            assert customer.encode_batch(batch_class(customer)(**{**good, name: other})) == expected
    surrogate = {**good, "suggestion": ["x", "\ud800"]}
    assert encoder.encode(tuple(surrogate.values()), 2) is None
    with pytest.raises(RecordError, match=r"CustomerBatch row 1: Customer.suggestion"):
        customer.encode_batch(batch_class(customer)(**surrogate))
    wrong = {**good, "movie": Ragged(["a", b"b"], np.array([0, 1, 2]))}
    with pytest.raises(RecordError, match=r"CustomerBatch row 1: Customer.movie"):
        customer.encode_batch(batch_class(customer)(**wrong))


def test_raw_arrays_that_do_not_fit_go_through_the_constructor(
    modules: dict[str, ModuleType],
) -> None:
    columnar()
    raw = modules["raw_image"].RawImage
    encoder = raw.__tfr__.batch_encoder
    images = [np.zeros((2, 3, 3), np.uint8), np.ones((1, 4, 3), np.uint8)]
    labels = np.array([1, 2])
    fast = encoder.encode((labels, images), 2)
    assert fast == [raw(label=1, image=images[0]).encode(), raw(label=2, image=images[1]).encode()]
    for other in (
        np.zeros((1, 4, 2), np.uint8),  # a fixed dimension of another size
        np.zeros((4, 3), np.uint8),  # another rank
        np.zeros((1, 4, 3), np.int16),  # another dtype
        [[[0, 0, 0]]],  # not an array
    ):
        assert encoder.encode((labels, [images[0], other]), 2) is None, other


class _nothing:  # noqa: N801  (a context manager that expects nothing)
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def test_without_the_accelerator_records_are_encoded_one_by_one(
    modules: dict[str, ModuleType],
) -> None:
    digit = modules["mnist"].Digit
    images = np.arange(3 * 784, dtype=np.int64).reshape(3, 784) % 300
    batch = batch_class(digit)(label=np.array([1, 2, 3]), image=images)
    with mock.patch.object(encode, "speedups", None):
        encoder = encode.BatchEncoder(digit.__tfr__.features, None)
        assert not encoder.fast
        assert encoder.encode(batch.columns(), 3) is None
    assert digit.encode_batch(batch) == [r.encode() for r in batch.records()]


def test_encode_examples_checks_its_arguments() -> None:
    sp = import_speedups()
    key = b"\x0a\x01k"
    offsets = np.array([0, 1], np.int64)
    values = np.array([5], np.int64)
    assert sp.encode_examples(1, ((key, 3, values, offsets, None),)) == [
        b"\x0a\x0c\x0a\x0a\x0a\x01k\x12\x05\x1a\x03\x0a\x01\x05"
    ]
    with pytest.raises(ValueError, match="offsets out of range"):
        sp.encode_examples(1, ((key, 3, values, np.array([0, 2], np.int64), None),))
    with pytest.raises(ValueError, match="count \\+ 1"):
        sp.encode_examples(2, ((key, 3, values, offsets, None),))
    with pytest.raises(ValueError, match="unknown kind"):
        sp.encode_examples(1, ((key, 7, values, offsets, None),))
    with pytest.raises(TypeError, match="not bytes"):
        sp.encode_examples(1, ((key, 0, ["s"], offsets, None),))
    assert sp.encode_examples(0, ()) == []
    assert sp.encode_examples(2, ()) == [b"\x0a\x00", b"\x0a\x00"]
