"""``hash_joined`` and ``tally_joined``: the C accelerator's ``hash_values`` and the Python path
give each value joined in a buffer the same 64-bit FNV-1a hash, ``tally_values`` and the Python
path the same distinct hashes with their counts and first places, and all refuse sizes that do not
fit the buffer."""

from __future__ import annotations

from collections import Counter

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


def rows(*columns: np.ndarray) -> list[tuple[int, int, int]]:
    """(hash, count, first place) of each distinct value, from the three columns of a tally."""
    hashes, counts, firsts = (column.tolist() for column in columns)
    return list(zip(hashes, counts, firsts, strict=True))


def python_tally(blob: bytes, sizes: np.ndarray) -> list[tuple[int, int, int]]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(batch, "speedups", None)
        return sorted(rows(*batch.tally_joined(blob, sizes)))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from([b"", b"a", b"b", b"ab", b"ba", b"abc", b"\0"]), max_size=300))
def test_both_paths_tally_alike(values: list[bytes]) -> None:
    blob = b"".join(values)
    sizes = np.array([len(v) for v in values], dtype=np.int64)
    firsts: dict[bytes, int] = {}
    for i, value in enumerate(values):
        firsts.setdefault(value, i)
    counts = Counter(values)
    # The accelerator gives the distinct hashes in the order of the values' first appearance.
    expected = [(fnv1a(v), counts[v], first) for v, first in firsts.items()]
    hashes, counted, firsts_at = import_speedups().tally_values(memoryview(bytearray(blob)), sizes)
    assert (
        rows(
            np.frombuffer(hashes, dtype=np.uint64),
            np.frombuffer(counted, dtype=np.int64),
            np.frombuffer(firsts_at, dtype=np.int64),
        )
        == expected
    )
    assert sorted(rows(*batch.tally_joined(blob, sizes))) == sorted(expected)
    assert python_tally(blob, sizes) == sorted(expected)


@pytest.mark.parametrize("sizes", [[3], [1, -1, 2], [1]])
def test_tally_sizes_must_fit(sizes: list[int]) -> None:
    array = np.array(sizes, dtype=np.int64)
    with pytest.raises(ValueError, match="sizes"):
        python_tally(b"ab", array)
    with pytest.raises(ValueError, match="sizes"):
        import_speedups().tally_values(b"ab", array)
