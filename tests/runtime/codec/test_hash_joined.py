"""``hash_joined``: the C accelerator's ``hash_values`` and the Python path give each value joined
in a buffer the same 64-bit FNV-1a hash, and refuse sizes that do not fit the buffer."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codegen.runtime.codec import batch
from support.speedups import import_speedups


def fnv1a(value: bytes) -> int:
    """FNV-1a, 64 bits, as its authors define it."""
    hashed = 0xCBF29CE484222325
    for octet in value:
        hashed = ((hashed ^ octet) * 0x100000001B3) % 2**64
    return hashed


def python_hashes(blob: bytes, sizes: np.ndarray) -> list[int]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(batch, "speedups", None)
        return [int(h) for h in batch.hash_joined(blob, sizes)]


def test_known_hashes() -> None:
    # The published test vectors of FNV-1a 64.
    assert [fnv1a(b""), fnv1a(b"a"), fnv1a(b"foobar")] == [
        0xCBF29CE484222325,
        0xAF63DC4C8601EC8C,
        0x85944171F73967E8,
    ]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(max_size=8), max_size=200))
def test_both_paths_hash_alike(values: list[bytes]) -> None:
    blob = b"".join(values)
    sizes = np.array([len(v) for v in values], dtype=np.int64)
    expected = [fnv1a(v) for v in values]
    assert python_hashes(blob, sizes) == expected
    hashed = import_speedups().hash_values(memoryview(bytearray(blob)), sizes)
    assert np.frombuffer(hashed, dtype=np.uint64).tolist() == expected
    assert batch.hash_joined(blob, sizes).tolist() == expected


@pytest.mark.parametrize("sizes", [[3], [1, -1, 2], [1]])
def test_sizes_must_fit(sizes: list[int]) -> None:
    array = np.array(sizes, dtype=np.int64)
    with pytest.raises(ValueError, match="sizes"):
        python_hashes(b"ab", array)
    with pytest.raises(ValueError, match="sizes"):
        import_speedups().hash_values(b"ab", array)
