"""The traits of joined bytes values that statistics note (NUL bytes, image signatures, short
values that may be among those kept): the accelerator's ``joined_traits`` and the numpy path agree,
and observations counted on either path are the same; lengths and value counts are tallied
exactly."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codegen.runtime.codec import batch, wire
from codegen.runtime.codec.images import SIGNATURES
from codegen.tools import observe
from codegen.tools.observe import KeptValues, Observation, joined_traits
from codegen.tools.profile import tally
from support.speedups import import_speedups

_VALUES = st.lists(
    st.one_of(
        st.binary(max_size=20),
        st.sampled_from([b"", b"\0", b"\xff\xd8\xff\xe0", b"\xff\xd8", b"\x89PNG\r\n\x1a\n"]),
        st.sampled_from([b"\x89PNG\r\n\x1a\nrest", b"\xff\xd8\xffjpeg", b"y" * 16, b"y" * 17]),
    ),
    max_size=60,
)


Traits = tuple[bool, list[int], list[int], list[int]]


def traits(values: list[bytes], kept: KeptValues | None, accelerated: bool) -> Traits:
    blob = memoryview(bytearray(b"".join(values)))
    sizes = np.array([len(v) for v in values], dtype=np.int64)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(observe, "speedups", import_speedups() if accelerated else None)
        nul, images, picked, counts = joined_traits(blob, sizes, kept)
    return nul, images, picked.tolist(), counts.tolist()


@settings(max_examples=300, deadline=None)
@given(
    _VALUES,
    st.lists(
        st.one_of(st.binary(max_size=16), st.sampled_from([b"", b"\0", b"y" * 16])),
        max_size=8,
        unique=True,
    ),
    st.integers(1, 6),
    st.booleans(),
)
def test_both_paths_find_the_same_traits(
    values: list[bytes], chosen: list[bytes], bits: int, with_kept: bool
) -> None:
    """With few probe bits, kept values share probes with each other and with other values."""
    chosen += [v for v in values[:3] if len(v) <= 16 and v not in chosen]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(observe, "_PROBE_BITS", bits)
        kept = KeptValues.of(chosen) if with_kept else None
        found = traits(values, kept, accelerated=True)
        assert traits(values, kept, accelerated=False) == found
    nul, images, picked, counts = found
    assert nul == any(b"\0" in v for v in values)
    assert images == [sum(v.startswith(s) for v in values) for s in SIGNATURES.values()]
    every_short = [i for i, v in enumerate(values) if len(v) <= 16]
    if kept is None:
        assert (picked, counts) == (every_short, [])
        return
    # Each short value equal to a kept one is counted, or picked to be compared after.
    assert set(picked) <= set(every_short)
    picked_counts = Counter(values[i] for i in picked)
    truth = Counter(values)
    assert [c + picked_counts[v] for v, c in zip(chosen, counts, strict=True)] == [
        truth[v] for v in chosen
    ]


@pytest.mark.parametrize("accelerated", [True, False])
@pytest.mark.parametrize("sizes", [[3], [1, -1, 2], [1]])
def test_sizes_must_fit(sizes: list[int], accelerated: bool) -> None:
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(observe, "speedups", import_speedups() if accelerated else None)
        with pytest.raises(ValueError, match="sizes"):
            joined_traits(b"ab", np.array(sizes, dtype=np.int64), None)
        with pytest.raises(ValueError, match="sizes"):
            joined_traits(b"ab", np.array(sizes, dtype=np.int64), KeptValues.of([b"a"]))


def test_tables_that_name_no_kept_value_are_refused() -> None:
    kept = KeptValues.of([b"a", b"b"])
    sizes = np.array([1, 1], dtype=np.int64)
    sp = import_speedups()
    signatures = tuple(SIGNATURES.values())
    with pytest.raises(ValueError, match="names no kept value"):
        sp.joined_traits(
            b"ab", sizes, signatures, 16, np.full_like(kept.table, 3), kept.joined, kept.ends
        )
    with pytest.raises(ValueError, match="held must be"):
        sp.joined_traits(b"ab", sizes, signatures, 16, kept.table[:-1], kept.joined, kept.ends)
    with pytest.raises(ValueError, match="held must be"):
        sp.joined_traits(b"ab", sizes, signatures, 16, kept.table, kept.joined, kept.ends - 1)


def test_both_paths_count_short_values_beyond_the_kept_limit_alike() -> None:
    """More distinct short values than are kept, some with NUL bytes or image signatures, over
    batches: every count is the same with the accelerator and without it."""
    rng = np.random.default_rng(3)
    picks = rng.integers(0, 1500, 4000)
    values = [
        [b"\xff\xd8\xff", b"\x89PNG\r\n\x1a\n", b"a\0"][int(p) % 3] + int(p).to_bytes(2, "little")
        for p in picks
    ]
    records = [
        wire.example([wire.map_entry(wire.key_field("s"), wire.bytes_feature(values[i : i + 4]))])
        for i in range(0, len(values), 4)
    ]
    seen = []
    for accelerated in (True, False):
        with pytest.MonkeyPatch.context() as mp:
            speedups = import_speedups() if accelerated else None
            mp.setattr(observe, "speedups", speedups)
            mp.setattr(batch, "speedups", speedups)
            observation = Observation(detailed=True)
            for start in range(0, len(records), 300):
                assert observation.add_batch(records[start : start + 300]) == []
        key = observation.features["s"]
        assert key.detail is not None
        seen.append((list(key.short.items()), key.nul, dict(key.images), key.detail.top.counts()))
    assert seen[0] == seen[1]
    assert len(seen[0][0]) == 1024


@settings(max_examples=100, deadline=None)
@given(st.lists(st.one_of(st.integers(0, 40), st.integers(0, 1 << 40)), min_size=1, max_size=50))
def test_tally_counts_small_and_large_numbers_in_order(numbers: list[int]) -> None:
    counted = tally(np.array(numbers, dtype=np.int64))
    assert list(counted.items()) == sorted(Counter(numbers).items())


def test_short_values_read_between_batches_are_those_counted_one_by_one() -> None:
    """The counts of the kept values that batches add are in ``short`` whenever it is read."""
    rng = np.random.default_rng(11)
    values = [int(v).to_bytes(2, "little") for v in rng.integers(0, 1300, 6000)]
    records = [
        wire.example([wire.map_entry(wire.key_field("s"), wire.bytes_feature(values[i : i + 2]))])
        for i in range(0, len(values), 2)
    ]
    by_record, by_batch = Observation(), Observation()
    for start in range(0, len(records), 500):
        chunk = records[start : start + 500]
        for data in chunk:
            by_record.add(data)
        assert by_batch.add_batch(chunk) == []
        if start % 1000 == 0:  # read after some batches only: counts wait over several
            expected = list(by_record.features["s"].short.items())
            assert list(by_batch.features["s"].short.items()) == expected
    assert by_batch.features["s"].short == by_record.features["s"].short
    assert len(by_batch.features["s"].short) == 1024
