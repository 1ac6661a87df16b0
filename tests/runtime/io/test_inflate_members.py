"""The accelerator's ``inflate_members`` (``codegen/_speedups/inflate.c``): gzip members inflated by
the ``deflate`` package's libdeflate into the caller's buffers, whole or refused, never partly
trusted."""

from __future__ import annotations

import struct
import threading
import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from codegen.runtime.io import members
from codegen.runtime.io.members import MEMBER_HEADER_SIZE, gzip_member
from support.processes import PYTHON
from support.speedups import import_speedups


def inflate(parts: list[bytes], sizes: list[int] | None = None) -> tuple[bytes, list[bytes]]:
    """What ``inflate_members`` says of the members ``parts``, and the buffers it filled (of the
    size each trailer declares, or ``sizes``)."""
    speedups = import_speedups()
    assert members._BOUND
    if sizes is None:
        sizes = [struct.unpack_from("<I", part, len(part) - 4)[0] for part in parts]
    outs = [bytearray(size) for size in sizes]
    whole = speedups.inflate_members(list(map(memoryview, parts)), MEMBER_HEADER_SIZE, outs)  # type: ignore[arg-type]
    return whole, [bytes(out) for out in outs]


@given(st.lists(st.binary(max_size=5000) | st.just(b"abc" * 20_000), max_size=6))
def test_members_inflate_to_their_bytes(datas: list[bytes]) -> None:
    whole, outs = inflate([gzip_member(data) for data in datas])
    assert whole == b"\x01" * len(datas) and outs == datas


def with_trailer(member: bytes, crc_delta: int = 0, size_delta: int = 0) -> bytes:
    crc, size = struct.unpack_from("<II", member, len(member) - 8)
    trailer = struct.pack("<II", (crc + crc_delta) & 0xFFFFFFFF, (size + size_delta) & 0xFFFFFFFF)
    return member[:-8] + trailer


DATA = bytes(range(256)) * 300
GOOD = gzip_member(DATA)
DEFLATED = GOOD[MEMBER_HEADER_SIZE:-8]


@pytest.mark.parametrize(
    "member",
    [
        pytest.param(with_trailer(GOOD, crc_delta=1), id="wrong CRC"),
        pytest.param(GOOD[:-8] + b"\x00" + GOOD[-8:], id="a byte after the deflate data"),
        pytest.param(GOOD[: MEMBER_HEADER_SIZE + 40] + GOOD[-8:], id="deflate data cut short"),
        pytest.param(GOOD[:MEMBER_HEADER_SIZE] + bytes(50) + GOOD[-8:], id="not deflate data"),
        pytest.param(GOOD[: MEMBER_HEADER_SIZE + 4], id="shorter than a trailer after the header"),
        pytest.param(b"", id="empty"),
    ],
)
def test_a_member_that_does_not_inflate_whole_is_refused(member: bytes) -> None:
    whole, _ = inflate([GOOD, member, GOOD], [len(DATA), len(DATA), len(DATA)])
    assert whole == b"\x01\x00\x01"


@pytest.mark.parametrize("delta", [-1, 1, 1 << 20])
def test_a_buffer_of_another_size_than_the_trailer_declares_is_refused(delta: int) -> None:
    assert inflate([GOOD], [len(DATA) + delta])[0] == b"\x00"
    assert inflate([with_trailer(GOOD, size_delta=delta)], [len(DATA)])[0] == b"\x00"


def test_an_empty_member_inflates_whole() -> None:
    assert inflate([gzip_member(b"")]) == (b"\x01", [b""])
    assert inflate([]) == (b"", [])


def test_bad_arguments_raise() -> None:
    speedups = import_speedups()
    with pytest.raises(ValueError, match="one buffer a member"):
        speedups.inflate_members([GOOD], MEMBER_HEADER_SIZE, [])
    with pytest.raises((TypeError, BufferError)):  # an output that cannot be written
        speedups.inflate_members([GOOD], MEMBER_HEADER_SIZE, [bytes(len(DATA))])
    with pytest.raises(TypeError):
        speedups.inflate_members((GOOD,), MEMBER_HEADER_SIZE, [bytearray(len(DATA))])  # type: ignore[arg-type]
    assert inflate([GOOD], [len(DATA)]) == (b"\x01", [DATA])  # nothing held after the errors


def test_a_header_longer_than_the_member_is_refused() -> None:
    speedups = import_speedups()
    out = bytearray(len(DATA))
    assert speedups.inflate_members([GOOD], len(GOOD), [out]) == b"\x00"
    assert speedups.inflate_members([GOOD], -1, [out]) == b"\x00"


def test_threads_inflating_at_once_each_get_their_bytes() -> None:
    """Decompressors are shared by the threads through a small lock-free pool."""
    datas = [bytes([i]) * 1000 + zlib.compress(bytes([i]) * 50_000) for i in range(32)]
    parts = [gzip_member(data) for data in datas]
    wrong: list[int] = []

    def work(offset: int) -> None:
        for round_ in range(30):
            order = [(offset + round_ + i) % len(parts) for i in range(len(parts))]
            whole, outs = inflate([parts[i] for i in order])
            wrong.extend(i for i, out in zip(order, outs, strict=True) if out != datas[i])
            wrong.extend(-1 for flag in whole if flag != 1)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert wrong == []


def test_without_libdeflate_bound_it_raises() -> None:
    """The accelerator binds libdeflate when ``codegen.runtime.io.members`` is imported; the error
    before that is clear (checked in a fresh interpreter)."""
    import subprocess

    code = (
        "import codegen._speedups as s\n"
        "try:\n    s.inflate_members([], 24, [])\n"
        "except RuntimeError as e:\n    print(e)\n"
        "print(s.bind_libdeflate('/nonexistent/lib.so'))\n"
    )
    out = subprocess.run([*PYTHON, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == ["inflate_members: libdeflate is not bound", "False"]
