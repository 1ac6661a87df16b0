"""``Block``, the accelerator's buffer of decoded values (``codegen/_speedups/blocks.c``): what
numpy sees of it, and the pool that hands a large one's memory to the next batch."""

from __future__ import annotations

import gc
import subprocess

import numpy as np
import pytest

from codegen.runtime import release_pooled_memory
from codegen.runtime.accel import BlockBuffer, Speedups
from codegen.runtime.codec import wire
from support.processes import PYTHON

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


@pytest.mark.parametrize("size", [64 << 10, 256 << 10, (1 << 20) + 3, 12 << 20])
def test_large_block_memory_starts_on_a_page_boundary(sp: Speedups, size: int) -> None:
    """A file read copies into page-aligned memory about ten times faster on some machines than
    into memory 16 bytes into a page (where glibc puts a large allocation): reader buffers and
    large columns are page-aligned, pooled or fresh, and after a column is fitted to its bytes."""
    blocks = [sp.pooled_block(size) for _ in range(3)]  # fresh memory
    starts = [address(block) for block in blocks]
    del blocks
    starts.append(address(sp.pooled_block(size)))  # from the pool
    starts.append(address(sp.scan_batch(int64_records(64, size // 80), (b"k",))[0][2]))
    assert [start % 4096 for start in starts] == [0] * 5


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


_SHARED = """
import mmap, os, sys
import numpy as np
import codegen._speedups as sp

sp.use_shared_blocks(True)
first = sp.pooled_block(1 << 20)
number, fd, size, (address, header), mapped = first.shared_memory()
assert (header, size, mapped) == (4096, (1 << 20) + 4096, 0) and not first.held()
view = np.frombuffer(first, np.uint8)
view[:] = 7
assert view.ctypes.data == address
first.hold()
assert first.held()
# what the main process sees: the whole file, its header first
other = mmap.mmap(os.dup(fd), size)
assert other[0] == 1 and other[header] == 7 and other[header + (1 << 20) - 1] == 7
other[1] = 1  # mapped
assert first.shared_memory()[4] == 1
del view, first  # let go while held: it waits in the pool, and is not reused
second = sp.pooled_block(1 << 20)
assert second.shared_memory()[0] != number, "held memory was reused"
other[0] = 0  # the main process lets the batch go
del second
third = sp.pooled_block(1 << 20)
assert third.shared_memory()[0] == number, "released memory was not reused"
del third
assert sp.pool_stats()[0] == 2
sp.pool_clear()  # unmapped and closed: the numbers are retired once
assert sorted(sp.shared_retired()) == [number, number + 1] and sp.shared_retired() == []
other.close()
small = sp.pooled_block(1000)  # below the pooled size: private memory
assert small.shared_memory() is None
try:
    small.hold()
except ValueError as exc:
    assert "not shared" in str(exc)
else:
    raise AssertionError("hold() of private memory")
sp.use_shared_blocks(False)
assert sp.pooled_block(1 << 20).shared_memory() is None
print("ok")
"""


def test_shared_blocks_wait_for_the_main_process_and_are_let_go_once(sp: Speedups) -> None:
    """With shared blocks on (a DataLoader worker), pooled memory is an anonymous file mapped after
    a header page: the data another process maps is the block's, the header's first byte is the held
    flag, memory let go while held is not reused until the flag is cleared, and memory the pool lets go
    is unmapped and its number retired once. (In a process of its own: the pool is per process.)"""
    done = subprocess.run([*PYTHON, "-c", _SHARED], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["ok"]
