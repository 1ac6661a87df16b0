"""The accelerator's packed-varint loop (``codegen/_speedups/varint.c``): its SIMD and portable
paths against each other and against the pure-Python decoder, on payloads long enough to take
every branch (64-byte blocks, 8-byte windows, long varints at every offset, the tail), and through
the three callers: ``decode_int64_values``, ``scan_batch`` and the ``ExamplePlan``'s int arrays."""

from __future__ import annotations

import random
import re
import struct
from typing import TYPE_CHECKING, Any, Protocol, cast, runtime_checkable

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codegen.dtypes import INT8, INT64, UINT8, UINT32, DType
from codegen.errors import RecordError
from codegen.runtime.accel import Speedups
from codegen.runtime.codec import plan, varint, wire
from codegen.runtime.codec.features import NumericTensor

if TYPE_CHECKING:
    from typing_extensions import Buffer

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@runtime_checkable
class VarintModule(Protocol):
    def decode_varints(self, payload: Buffer, portable: bool = False, /) -> bytearray: ...


@pytest.fixture(scope="module")
def vm(sp: Speedups) -> VarintModule:
    assert isinstance(sp, VarintModule)
    return sp


def encode(values: list[int]) -> bytes:
    """Packed varints of the low 64 bits of ``values``, written independently of the code under
    test."""
    out = bytearray()
    for value in values:
        value &= (1 << 64) - 1
        while value >= 0x80:
            out.append(value & 0x7F | 0x80)
            value >>= 7
        out.append(value)
    return bytes(out)


def as_u64(values: list[int]) -> bytes:
    return struct.pack(f"<{len(values)}Q", *(v & ((1 << 64) - 1) for v in values))


# Mostly one- and two-byte values (what the SIMD windows take), some longer ones of every size.
small = st.integers(0, 127)
two_bytes = st.integers(128, 2**14 - 1)
longer = st.one_of(st.integers(2**14, 2**63 - 1), st.integers(-(2**63), -1), st.just(2**64 - 1))
values_lists = st.lists(
    st.one_of(small, small, small, two_bytes, two_bytes, longer), min_size=0, max_size=400
)


@SETTINGS
@given(values_lists)
def test_both_paths_decode_any_values_like_python(vm: VarintModule, values: list[int]) -> None:
    payload = encode(values)
    expected = as_u64(values)
    assert bytes(vm.decode_varints(payload)) == expected
    assert bytes(vm.decode_varints(payload, True)) == expected
    reference = varint.decode_packed_int64(payload, 0, len(payload), "x")
    assert reference.astype("<i8").tobytes() == expected


@pytest.mark.parametrize("at", range(0, 140, 1))
@pytest.mark.parametrize("size", [3, 10])
def test_a_long_varint_at_every_offset_of_blocks_and_windows(
    vm: VarintModule, at: int, size: int
) -> None:
    long_value = (1 << (7 * (size - 1))) + 5  # exactly ``size`` bytes
    rng = random.Random(at * 31 + size)
    values = [rng.choice([0, 1, 127, 128, 300, 16383]) for _ in range(200)]
    values.insert(at, long_value)
    payload = encode(values)
    assert len(encode([long_value])) == size
    for portable in (False, True):
        assert bytes(vm.decode_varints(payload, portable)) == as_u64(values)


@pytest.mark.parametrize("at", [0, 5, 63, 64, 100, 190])
def test_a_varint_longer_than_ten_bytes_is_refused_at_its_offset(vm: VarintModule, at: int) -> None:
    prefix = encode([1, 200] * 100)[:at]
    while prefix and prefix[-1] >= 0x80:
        prefix = prefix[:-1]
    payload = prefix + b"\xff" * 10 + b"\x01" + encode(list(range(100)))
    for portable in (False, True):
        with pytest.raises(ValueError, match=rf"byte offset {len(prefix)} is longer than 10 bytes"):
            vm.decode_varints(payload, portable)


def test_an_unfinished_last_varint_is_refused(vm: VarintModule) -> None:
    with pytest.raises(ValueError, match="unfinished"):
        vm.decode_varints(encode([5] * 100) + b"\x80")
    assert vm.decode_varints(b"") == bytearray()


@SETTINGS
@given(values_lists)
def test_int64_lists_decode_like_python(sp: Speedups, values: list[int]) -> None:
    body = b"\x0a" + wire.encode_varint(len(encode(values))) + encode(values)
    expected = wire.decode_int64_list(body)
    assert (
        np.frombuffer(memoryview(sp.decode_int64_values(body)), "<i8").tolist() == expected.tolist()
    )
    ((kinds, counts, ints, _, _),) = sp.scan_batch([wire.example([entry(body)])] * 2, (b"k",))
    assert list(kinds) == [3, 3]
    assert np.frombuffer(memoryview(ints), "<i8").tolist() == expected.tolist() * 2


def entry(body: bytes) -> bytes:
    """The map entry of key ``k`` holding the Int64List ``body``."""
    return wire.map_entry(wire.key_field("k"), b"\x1a" + wire.encode_varint(len(body)) + body)


@pytest.mark.parametrize("dtype", [INT64, UINT32, UINT8, INT8], ids=lambda d: d.name)
def test_plan_int_arrays_of_every_width_decode_like_their_codec(dtype: DType) -> None:
    rng = np.random.default_rng(3)
    codec = NumericTensor[Any]("R", "x", "k", dtype, (300,))
    compiled = plan.example_decoder("R", (codec,))
    reference = plan.codec_decoder("R", (codec,))
    info = np.iinfo(cast("np.dtype[np.integer[Any]]", dtype.numpy))
    refused = 0
    for case in range(40):
        values = rng.integers(0, min(int(info.max), 20_000), 300, endpoint=True).astype(np.int64)
        if dtype.lo is not None and dtype.lo < 0:
            values -= rng.integers(0, 2, 300) * int(info.max)
        broken = case % 4 == 3 and dtype is not INT64
        if broken:
            values[rng.integers(0, 300)] = int(info.max) + 1  # out of range: the codec's error
        data = wire.example([raw_entry(values) if broken else codec.entry(values)])
        try:
            expected = reference(data)
        except RecordError as exc:
            with pytest.raises(RecordError, match=re_escape(str(exc))):
                compiled(data)
            refused += 1
            continue
        (got,) = compiled(data)
        assert got.dtype == dtype.numpy and got.tolist() == expected[0].tolist()
    assert refused == (0 if dtype is INT64 else 10)


def raw_entry(values: np.ndarray) -> bytes:
    """The map entry of ``values`` as a packed Int64List, whatever their range."""
    payload = encode(values.tolist())
    return entry(b"\x0a" + wire.encode_varint(len(payload)) + payload)


def re_escape(text: str) -> str:
    return "^" + re.escape(text) + "$"
