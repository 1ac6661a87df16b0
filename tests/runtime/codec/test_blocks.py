"""``Block``, the accelerator's buffer of decoded values (``codegen/_speedups/blocks.c``): what
numpy sees of it, and the pool that hands a large one's memory to the next batch."""

from __future__ import annotations

import gc

import numpy as np
import pytest

from codegen.runtime import release_pooled_memory
from codegen.runtime.accel import BlockBuffer, Speedups
from codegen.runtime.codec import wire

POOL_MIN = 256 * 1024
POOL_SLOTS = 64


def int64_body(values: int) -> bytes:
    """An Int64List body of ``values`` one-byte values (``i % 128``)."""
    return b"\x0a" + wire.encode_varint(values) + bytes(i % 128 for i in range(values))


def int64_records(count: int, values: int) -> list[bytes]:
    """Examples with the Int64List :func:`int64_body` under key ``k``."""
    body = int64_body(values)
    entry = wire.map_entry(wire.key_field("k"), b"\x1a" + wire.encode_varint(len(body)) + body)
    return [wire.example([entry])] * count


def address(buffer: BlockBuffer) -> int:
    return int(np.frombuffer(memoryview(buffer), np.uint8).__array_interface__["data"][0])


def test_blocks_are_writable_little_endian_buffers_equal_to_their_bytes(sp: Speedups) -> None:
    block = sp.decode_int64_values(b"\x0a\x03\x01\x96\x01")
    assert type(block) is sp.Block and len(block) == 16
    assert block == np.array([1, 150], "<i8").tobytes() and block != b"x"
    assert bytes(memoryview(block)) == np.array([1, 150], "<i8").tobytes()
    view = np.frombuffer(memoryview(block), "<i8")
    view[0] = 7
    assert view.flags.writeable and np.frombuffer(memoryview(block), "<i8").tolist() == [7, 150]
    with pytest.raises(TypeError):
        sp.Block()


def test_a_large_column_goes_back_to_the_pool_and_the_next_batch_takes_it(sp: Speedups) -> None:
    records = int64_records(1024, 100)  # 800 kB of int64 values: pooled
    gc.collect()
    release_pooled_memory()  # no buffer of earlier tests competes for the next batch
    assert sp.pool_stats() == (0, 0)
    ((_, _, ints, _, _),) = sp.scan_batch(records, (b"k",))
    first = address(ints)
    assert len(ints) == 1024 * 100 * 8
    view = np.frombuffer(memoryview(ints), "<i8")
    del ints
    ((_, _, again, _, _),) = sp.scan_batch(records, (b"k",))
    assert address(again) != first  # a view still holds the first column's memory
    assert view.reshape(1024, 100)[:, 5].tolist() == [5] * 1024
    del view
    waiting, size = sp.pool_stats()
    assert waiting >= 1 and size >= 1024 * 100 * 8
    ((_, _, third, _, _),) = sp.scan_batch(records, (b"k",))
    assert address(third) == first
    assert sp.pool_stats()[0] == waiting - 1


def test_only_large_batch_columns_are_pooled_and_the_pool_is_bounded(sp: Speedups) -> None:
    before = sp.pool_stats()
    small = sp.decode_int64_values(b"\x0a\x01\x01")
    one_list = sp.decode_int64_values(int64_body(40_000))  # 320 kB, of one record
    assert len(one_list) == 320_000
    del small, one_list
    assert sp.pool_stats() == before
    columns = [sp.scan_batch(int64_records(64, 8000 + n), (b"k",))[0][2] for n in range(80)]
    assert all(len(c) >= POOL_MIN for c in columns)
    del columns
    waiting, size = sp.pool_stats()
    assert 1 <= waiting <= POOL_SLOTS and size <= 512 * 1024 * 1024


def test_released_pooled_memory_is_counted_and_gone(sp: Speedups) -> None:
    columns = [sp.scan_batch(int64_records(64, 8000 + n), (b"k",))[0][2] for n in range(3)]
    del columns
    waiting, size = sp.pool_stats()
    assert waiting >= 3 and release_pooled_memory() == size
    assert sp.pool_stats() == (0, 0) and release_pooled_memory() == 0


@pytest.mark.parametrize("per_record", [1, 3])  # one value per record (a raw tensor), or a list
def test_a_joined_bytes_column_of_equal_records_is_allocated_once_and_reused(
    sp: Speedups, per_record: int
) -> None:
    """A joined key's values are copied into a column presized after the first record: it must
    not grow at the last record (fresh memory and a copy every batch, and a block that piles up in
    the pool because no later batch fits it)."""
    value = bytes(range(256)) * 48  # 12 KiB, as a 64x64x3 image
    body = b"".join(b"\x0a" + wire.encode_varint(len(value)) + value for _ in range(per_record))
    feature = b"\x0a" + wire.encode_varint(len(body)) + body
    entry = wire.map_entry(wire.key_field("k"), feature)
    records = [wire.example([entry])] * 64  # 768 KiB or more: pooled
    gc.collect()
    release_pooled_memory()
    addresses = set()
    for _ in range(3):
        ((_, _, _, _, (blob, sizes)),) = sp.scan_batch(records, (b"k",), (b"k",))
        assert not isinstance(blob, str)  # a joined key's values: a Block
        assert len(blob) == 64 * per_record * len(value) and len(sizes) == 8 * 64 * per_record
        addresses.add(address(blob))
        del blob, sizes
        assert sp.pool_stats()[0] == 1  # the column's block waits alone for the next batch
    assert len(addresses) == 1
