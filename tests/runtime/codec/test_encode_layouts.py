"""The bytes of raw-tensor entries and numeric feature-list entries against protobuf, for every
memory layout of the arrays and every size class of the steps: the entry layouts cached per shape,
arrays written from their own buffer or copied, steps laid out from one prefix or one by one."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from codegen.dtypes import (
    BOOL,
    DTYPES,
    FLOAT16,
    FLOAT32,
    FLOAT64,
    INT8,
    INT64,
    UINT8,
    UINT16,
    UINT64,
    DType,
)
from codegen.errors import RecordError
from codegen.runtime.codec import wire
from codegen.runtime.codec.sequences import SequenceRagged, SequenceTensor
from codegen.runtime.codec.tensors import RawTensor
from codegen.runtime.tf import proto
from support.messages import pb_lists

Shape = tuple[int | None, ...]

NUMERIC = tuple(d for d in DTYPES.values() if d.numeric)
INT64_EDGES = (0, 1, 127, 128, 16383, 16384, 2**35, 2**63 - 1, -1, -(2**63))


def pb_example(key: str, kind: str, values: list[Any]) -> bytes:
    """The deterministic protobuf serialization of an Example whose one feature holds ``values``."""
    message = proto.Example()
    values_list = getattr(message.features.feature[key], kind)
    values_list.SetInParent()
    values_list.value.extend(values)
    return bytes(message.SerializeToString(deterministic=True))


def pb_steps(key: str, kind: str, steps: list[list[Any]]) -> bytes:
    """The deterministic protobuf serialization of a SequenceExample with one feature list."""
    return pb_lists({key: (kind, steps)})


def little(array: np.ndarray[Any, Any]) -> bytes:
    """The C-order little-endian bytes of ``array``."""
    return array.astype(array.dtype.newbyteorder("<")).tobytes()


def assert_raw_matches_protobuf(codec: RawTensor[Any], value: np.ndarray[Any, Any]) -> None:
    """``value``'s entry (and ``<key>/shape`` entry) are protobuf's, byte for byte."""
    assert wire.example([codec.entry(value)]) == pb_example(
        codec.key, "bytes_list", [little(value)]
    )
    if codec.companion_keys:
        assert wire.example([codec.part(value, 1)]) == pb_example(
            codec.companion_keys[0], "int64_list", list(value.shape)
        )


def steps_data(codec: SequenceTensor[Any] | SequenceRagged[Any], value: Any) -> bytes:
    return wire.sequence_example([], [codec.entry(value)])


# --- raw tensors --------------------------------------------------------------------------------


def _layouts(values: np.ndarray[Any, Any]) -> list[np.ndarray[Any, Any]]:
    """``values`` in every memory layout: C and Fortran order, strided, reversed, big-endian,
    read-only, not owning its memory."""
    strided = np.zeros((2 * values.shape[0], *values.shape[1:]), values.dtype)
    strided[::2] = values
    readonly = values.copy()
    readonly.flags.writeable = False
    return [
        values,
        np.asfortranarray(values),
        strided[::2],
        values[::-1].copy()[::-1],
        values.astype(values.dtype.newbyteorder(">")),
        readonly,
        np.frombuffer(values.tobytes(), values.dtype).reshape(values.shape),
    ]


@pytest.mark.parametrize("dtype", [UINT8, INT64, UINT64, FLOAT64, FLOAT16, BOOL])
@pytest.mark.parametrize("shape", [(None, None, 3), (None, 6, 3), (4, 6, 3)])
def test_raw_entries_of_every_memory_layout_match_protobuf(dtype: DType, shape: Shape) -> None:
    values = (np.arange(72) % 2 if dtype is BOOL else np.arange(72) * 7).reshape(4, 6, 3)
    codec: RawTensor[Any] = RawTensor("R", "x", "image", dtype, shape)
    expected = codec.entry(values.astype(dtype.numpy))
    for value in _layouts(values.astype(dtype.numpy)):
        assert_raw_matches_protobuf(codec, value)
        assert codec.entry(value) == expected


def test_raw_entries_of_more_shapes_than_the_codec_keeps_stay_exact() -> None:
    codec: RawTensor[Any] = RawTensor("R", "x", "pixels", UINT16, (None, 2))
    values = [np.arange(2 * n, dtype=np.uint16).reshape(n, 2) for n in range(300)]
    for _ in range(2):  # the second pass meets shapes already seen
        for value in values:
            assert_raw_matches_protobuf(codec, value)


def test_raw_companion_before_entry_and_empty_arrays() -> None:
    codec: RawTensor[Any] = RawTensor("R", "x", "k", INT8, (None, 3))
    value = np.zeros((0, 3), np.int8)
    assert wire.example([codec.part(value, 1)]) == pb_example("k/shape", "int64_list", [0, 3])
    assert_raw_matches_protobuf(codec, value)
    scalar: RawTensor[Any] = RawTensor("R", "x", "k", FLOAT64, ())
    assert_raw_matches_protobuf(scalar, np.array(-2.5))


def test_raw_arrays_of_a_shape_that_does_not_fit_are_refused_by_entry_and_part() -> None:
    codec: RawTensor[Any] = RawTensor("R", "x", "image", UINT8, (None, None, 3))
    message = r"^R\.x: expected shape \(None, None, 3\), got \(2, 2\)$"
    wrong = np.zeros((2, 2), np.uint8)
    with pytest.raises(RecordError, match=message):
        codec.entry(wrong)
    with pytest.raises(RecordError, match=message):
        codec.part(wrong, 1)
    codec.entry(np.zeros((1, 1, 3), np.uint8))  # a fitting shape first: the refusal stays
    with pytest.raises(RecordError, match=message):
        codec.part(wrong, 1)


@st.composite
def raw_layout_cases(draw: st.DrawFn) -> tuple[RawTensor[Any], np.ndarray[Any, Any]]:
    dtype = draw(st.sampled_from(NUMERIC))
    shape = tuple(draw(st.lists(st.none() | st.integers(1, 4), min_size=1, max_size=3)))
    concrete = tuple(draw(st.integers(0, 4)) if d is None else d for d in shape)
    base = draw(hnp.arrays(dtype.numpy, tuple(2 * n for n in concrete)))
    value = base[tuple(slice(None, None, 2) for _ in concrete)]  # strided: not contiguous
    if draw(st.booleans()):
        value = np.ascontiguousarray(value)
    if draw(st.booleans()) and dtype.numpy.itemsize > 1:
        value = value.astype(dtype.numpy.newbyteorder(">"))
    codec: RawTensor[Any] = RawTensor("R", "x", draw(st.text(max_size=3)), dtype, shape)
    return codec, value


@settings(max_examples=200, deadline=None)
@given(raw_layout_cases())
def test_raw_entries_of_any_layout_are_protobufs(
    case: tuple[RawTensor[Any], np.ndarray[Any, Any]],
) -> None:
    codec, value = case
    assert_raw_matches_protobuf(codec, value)


# --- numeric feature lists ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("step", "values"),
    [
        (61, [200]),  # 122 payload bytes per step: the longest one-byte prefix sizes ...
        (62, [200]),  # ... 124 bytes
        (63, [1, 200]),  # mixed one- and two-byte varints around 126 bytes
        (64, [200]),  # 128 bytes: two-byte payload length
        (127, [5]),  # one-byte values, uniform steps below and at 128 bytes
        (128, [5]),
        (13, [-1]),  # ten-byte varints: 130 bytes per step
        (3, list(INT64_EDGES)),
    ],
)
def test_integer_steps_of_every_size_class_match_protobuf(step: int, values: list[int]) -> None:
    codec: SequenceTensor[Any] = SequenceTensor("R", "x", "k", INT64, (step,))
    flat = np.resize(np.array(values, np.int64), 3 * step)
    value = flat.reshape(3, step)
    assert steps_data(codec, value) == pb_steps("k", "int64_list", value.tolist())


@pytest.mark.parametrize("step", [1, 31, 32, 33])
def test_float_steps_below_and_above_128_bytes_match_protobuf(step: int) -> None:
    codec: SequenceTensor[Any] = SequenceTensor("R", "x", "k", FLOAT32, (step,))
    value = np.linspace(-1, 1, 4 * step, dtype=np.float32).reshape(4, step)
    assert steps_data(codec, value) == pb_steps("k", "float_list", value.tolist())


@pytest.mark.parametrize("dtype", [INT64, UINT8, BOOL, FLOAT32])
def test_ragged_steps_with_empty_and_long_steps_match_protobuf(dtype: DType) -> None:
    codec: SequenceRagged[Any] = SequenceRagged("R", "x", "k", dtype, (None, 2))
    rows = [0, 3, 0, 0, 70, 1, 0]
    pool = np.array(INT64_EDGES if dtype is INT64 else [0, 1, 1, 0, 1], np.int64)
    steps = [np.resize(pool, 2 * n).reshape(n, 2).astype(dtype.numpy) for n in rows]
    kind = dtype.wire.list_name
    expected = [s.reshape(-1).astype(int if dtype is BOOL else dtype.numpy).tolist() for s in steps]
    assert steps_data(codec, steps) == pb_steps("k", kind, expected)
    assert steps_data(codec, [s for s in steps if not s.size]) == pb_steps("k", kind, [[]] * 4)


def test_zero_steps_write_an_empty_feature_list() -> None:
    tensor: SequenceTensor[Any] = SequenceTensor("R", "x", "k", INT64, ())
    assert steps_data(tensor, np.zeros(0, np.int64)) == pb_steps("k", "int64_list", [])
    floats: SequenceTensor[Any] = SequenceTensor("R", "x", "k", FLOAT32, (2,))
    assert steps_data(floats, np.zeros((0, 2), np.float32)) == pb_steps("k", "float_list", [])


int64_values = st.one_of(
    st.integers(0, 127),
    st.integers(128, 2**21),
    st.integers(-(2**63), 2**63 - 1),
    st.sampled_from(INT64_EDGES),
)


@settings(max_examples=200, deadline=None)
@given(
    st.integers(1, 24).flatmap(
        lambda k: st.tuples(
            st.just(k), st.lists(st.lists(int64_values, min_size=k, max_size=k), max_size=12)
        )
    )
)
def test_integer_steps_of_any_values_match_protobuf(case: tuple[int, list[list[int]]]) -> None:
    step, steps = case
    codec: SequenceTensor[Any] = SequenceTensor("R", "x", "k", INT64, (step,))
    value = np.array(steps, np.int64).reshape(len(steps), step)
    assert steps_data(codec, value) == pb_steps("k", "int64_list", steps)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(int64_values, max_size=40), max_size=12))
def test_ragged_integer_steps_of_any_values_match_protobuf(steps: list[list[int]]) -> None:
    codec: SequenceRagged[Any] = SequenceRagged("R", "x", "k", INT64, (None,))
    value = [np.array(step, np.int64) for step in steps]
    assert steps_data(codec, value) == pb_steps("k", "int64_list", steps)
