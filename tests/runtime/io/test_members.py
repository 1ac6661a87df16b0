"""Gzip files written as sized members, inflated in worker threads, and other compressed streams
inflated in a thread ahead of the reader: the same records and the same positioned errors as
sequential reading, and no thread left behind."""

from __future__ import annotations

import gc
import gzip
import io
import itertools
import multiprocessing
import random
import struct
import threading
import tracemalloc
import zlib
from collections.abc import Callable
from typing import Any
from unittest import mock

import pytest

from codegen.errors import DataError
from codegen.runtime.io import members as members_module
from codegen.runtime.io import reader as reader_module
from codegen.runtime.io.compression import Compression, Deflate, InflatingSource, use_deflate
from codegen.runtime.io.files import new_buffer
from codegen.runtime.io.members import (
    MEMBER_HEADER_SIZE,
    InflatingAhead,
    MemberInflater,
    gzip_member,
    inflating_source,
    member_size,
)
from codegen.runtime.io.reader import TFRecordReader
from codegen.runtime.io.skips import SkippedSpan
from codegen.runtime.io.writer import TFRecordWriter
from support.framing import frame

RNG = random.Random(15)
RECORDS = [RNG.randbytes(RNG.randrange(0, 40_000)) for _ in range(400)] + [b"z" * 3_000_000]
"""About 11 MiB of records, mostly incompressible, and a large compressible one: 31 members."""

Outcome = tuple[list[bytes], tuple[int, int, str] | None, list[SkippedSpan]]


@pytest.fixture(autouse=True, params=["accelerator", "libdeflate", "isal"])
def member_inflater(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test runs with each way a sized member is inflated: by the accelerator with the
    ``deflate`` package's libdeflate (several members a call, into pooled blocks), by that package
    itself (one call per member), and by ISA-L's gzip reader."""
    from codegen.runtime.io import members

    if request.param == "isal":
        monkeypatch.setattr(members, "_LIBDEFLATE", None)
    else:
        assert members._LIBDEFLATE is not None, "the deflate package (libdeflate) is not installed"
    if request.param == "accelerator":
        assert members._BOUND, "the accelerator did not find libdeflate's functions"
    else:
        monkeypatch.setattr(members, "_BOUND", False)
    return str(request.param)


def written(records: list[bytes], deflate: Deflate = "isal") -> bytes:
    use_deflate(deflate)
    out = io.BytesIO()
    with TFRecordWriter(out, compression="gzip") as writer:
        writer.write_many(records)
    return out.getvalue()


def member_offsets(data: bytes) -> list[int]:
    """Where each member of a stream of sized members starts, and its end last."""
    offsets = [0]
    while offsets[-1] < len(data):
        size = member_size(data[offsets[-1] : offsets[-1] + MEMBER_HEADER_SIZE])
        assert size is not None
        offsets.append(offsets[-1] + size)
    assert offsets[-1] == len(data)
    return offsets


def read(
    data: bytes,
    deflate: Deflate,
    *,
    threaded: bool,
    skip: bool = False,
    compression: Compression = "gzip",
) -> tuple[Outcome, str]:
    """What a reader yields from ``data`` with ``deflate`` (in worker threads or sequentially), the
    error it stops with (index, offset, reason) and what it skipped; and the source it used."""
    use_deflate(deflate)
    spans: list[SkippedSpan] = []
    # Sequentially: the reader's thread inflates the stream in order, as the standard library does.
    source = inflating_source if threaded else InflatingSource
    with mock.patch.object(reader_module, "inflating_source", source):
        reader = TFRecordReader(
            io.BytesIO(data),
            compression=compression,
            on_error="skip" if skip else "raise",
            on_skip=spans.append if skip else None,
        )
    kind = type(reader._source).__name__
    records: list[bytes] = []
    try:
        records.extend(reader)
    except DataError as exc:
        return (records, (exc.index, exc.offset, exc.reason), spans), kind
    return (records, None, spans), kind


def test_the_writer_writes_members_of_about_256_kib_that_every_gzip_reader_reads() -> None:
    data = written(RECORDS)
    offsets = member_offsets(data)
    assert len(offsets) - 1 >= 31  # members
    framed = [len(gzip.decompress(data[a:b])) for a, b in itertools.pairwise(offsets)]
    assert max(framed[:-1]) < (1 << 18) + 40_016 and framed[-1] > 3_000_000  # the large record
    assert gzip.decompress(data) == b"".join(map(frame, RECORDS))
    assert zlib.decompressobj(31).decompress(data[offsets[0] : offsets[1]])  # one member alone
    assert written(RECORDS, "zlib") != data and member_offsets(written(RECORDS, "zlib"))


@pytest.mark.parametrize("writer", ["isal", "zlib", "gzip module"])
def test_threaded_sequential_and_stdlib_reading_give_the_same_records(writer: str) -> None:
    if writer == "gzip module":  # one member without a size, as TensorFlow writes
        data = gzip.compress(b"".join(map(frame, RECORDS)))
    else:
        data = written(RECORDS, writer)  # type: ignore[arg-type]
    threaded, kind = read(data, "isal", threaded=True)
    assert kind == "MemberInflater"
    assert threaded == read(data, "isal", threaded=False)[0]
    assert threaded == read(data, "zlib", threaded=True)[0] == (RECORDS, None, [])


def test_an_isal_without_its_gzip_reader_reads_in_order_ahead(
    monkeypatch: pytest.MonkeyPatch, member_inflater: str
) -> None:
    """Without libdeflate, the threaded member path uses ISA-L's gzip reader, not a public name: a
    release without it reads the same records, inflated in order in one thread ahead of the
    reader. libdeflate needs no part of ISA-L: its members are still inflated ahead."""
    from isal import isal_zlib

    data = written(RECORDS, "isal")
    monkeypatch.delattr(isal_zlib, "_GzipReader")
    records, kind = read(data, "isal", threaded=True)
    assert kind == ("InflatingAhead" if member_inflater == "isal" else "MemberInflater")
    assert records == (RECORDS, None, [])


def test_a_member_without_a_size_in_the_middle_is_read_in_order() -> None:
    first, middle, last = RECORDS[:100], RECORDS[100:200], RECORDS[200:]
    data = written(first) + gzip.compress(b"".join(map(frame, middle))) + written(last)
    assert read(data, "isal", threaded=True)[0] == (RECORDS, None, [])


def damaged(data: bytes, how: str) -> bytes:
    """``data`` (sized members) damaged in its fourth member: ``how`` names the damage."""
    offsets = member_offsets(data)
    start, end = offsets[3], offsets[4]
    if how == "truncated inside a member":
        return data[: (start + end) // 2]
    if how == "truncated inside a header":
        return data[: start + 10]
    if how == "garbage after the last member":
        return data + b"garbage"
    if how == "zero bytes after the last member":
        return data + bytes(30)
    damaged = bytearray(data)
    if how == "corrupt deflate data":
        for i in range(start + 200, start + 400):
            damaged[i] ^= 0x5A
    elif how == "corrupt checksum":
        damaged[end - 6] ^= 1
    elif how == "bytes between the deflate data and the trailer":
        # A final empty block of fixed codes (more deflate data) after the member's last block.
        member = bytearray(data[start : end - 8] + b"\x03\x00" + data[end - 8 : end])
        struct.pack_into("<Q", member, 16, len(member))
        return bytes(data[:start] + member + data[end:])
    elif how == "size too small":
        struct.pack_into("<Q", damaged, start + 16, end - start - 100)
    elif how == "size too large":
        struct.pack_into("<Q", damaged, start + 16, end - start + 100)
    elif how == "size past the end of the file":
        struct.pack_into("<Q", damaged, start + 16, len(data) * 2)
    else:
        raise AssertionError(how)
    return bytes(damaged)


DAMAGES = [
    "truncated inside a member",
    "truncated inside a header",
    "garbage after the last member",
    "zero bytes after the last member",
    "corrupt deflate data",
    "corrupt checksum",
    "size too small",
    "size too large",
    "size past the end of the file",
]


@pytest.mark.parametrize("skip", [False, True])
@pytest.mark.parametrize("deflate", ["isal", "zlib"])
@pytest.mark.parametrize("how", DAMAGES)
def test_damaged_streams_fail_as_sequential_reading_does(
    how: str, deflate: Deflate, skip: bool
) -> None:
    data = damaged(written(RECORDS), how)
    threaded, _ = read(data, deflate, threaded=True, skip=skip)
    assert threaded == read(data, deflate, threaded=False, skip=skip)[0]
    records, error, spans = threaded
    assert records == RECORDS[: len(records)] or skip and set(records) <= set(RECORDS)
    if how.startswith("size"):  # the size is a hint: a wrong one changes nothing
        assert threaded == (RECORDS, None, [])
    elif skip:
        assert error is None and spans and spans[-1].reason.endswith("stream)")
    else:
        assert error is not None and error[2].endswith("(in the uncompressed gzip stream)")


def test_bytes_between_deflate_data_and_trailer_fail_as_in_order_unless_the_package_inflates(
    member_inflater: str,
) -> None:
    """Bytes after a member's deflate data and before its trailer: reading in order finds them
    where the trailer should be. The accelerator (libdeflate says where the deflate data ended)
    and ISA-L do too; the ``deflate`` package's call says nothing of it, so its path reads the
    member whole when the trailer is right (documented in ``members._inflate_member``)."""
    data = damaged(written(RECORDS), "bytes between the deflate data and the trailer")
    threaded, _ = read(data, "isal", threaded=True)
    in_order, _ = read(data, "isal", threaded=False)
    assert in_order[1] is not None and in_order[0] == RECORDS[: len(in_order[0])]
    assert threaded == ((RECORDS, None, []) if member_inflater == "libdeflate" else in_order)


@pytest.mark.parametrize("how", ["truncated inside a member", "truncated inside a header"])
def test_truncation_is_reported_at_the_same_place_with_either_deflate(how: str) -> None:
    data = damaged(written(RECORDS), how)
    isal, _ = read(data, "isal", threaded=True)
    assert isal == read(data, "zlib", threaded=False)[0]
    assert isal[1] is not None and isal[1][2].startswith("truncated gzip stream")


ONE_MEMBER_DAMAGES: dict[str, Callable[[bytes], bytes]] = {
    "truncated": lambda data: data[: len(data) // 2],
    "corrupt deflate data": lambda data: (
        data[:5000] + bytes(b ^ 0x5A for b in data[5000:5200]) + data[5200:]
    ),
    "corrupt checksum": lambda data: data[:-8] + bytes([data[-8] ^ 1]) + data[-7:],
    "garbage after the end": lambda data: data + b"garbage",
    "intact": lambda data: data,
}


@pytest.mark.parametrize("skip", [False, True])
@pytest.mark.parametrize("compression", ["gzip", "zlib"])
@pytest.mark.parametrize("how", ONE_MEMBER_DAMAGES)
def test_streams_without_sizes_read_ahead_in_a_thread_as_in_order(
    how: str, compression: Compression, skip: bool
) -> None:
    raw = b"".join(map(frame, RECORDS))
    whole = gzip.compress(raw) if compression == "gzip" else zlib.compress(raw)
    data = ONE_MEMBER_DAMAGES[how](whole)
    threaded, kind = read(data, "isal", threaded=True, skip=skip, compression=compression)
    assert kind == ("MemberInflater" if compression == "gzip" else "InflatingAhead")
    assert threaded == read(data, "isal", threaded=False, skip=skip, compression=compression)[0]
    records, error, spans = threaded
    assert records == RECORDS[: len(records)] or skip and set(records) <= set(RECORDS)
    assert (error is None and not spans) == (how == "intact")
    if how == "truncated":
        assert threaded == read(data, "zlib", threaded=False, skip=skip, compression=compression)[0]


def inflate_threads() -> list[threading.Thread]:
    """The worker threads of streams read in order (each reader's own)."""
    return [t for t in threading.enumerate() if t.name == "tfr-gen-inflate"]


def member_threads() -> list[threading.Thread]:
    """The threads that inflate sized members (the process's, shared by its readers)."""
    return [t for t in threading.enumerate() if t.name.startswith("tfr-gen-inflate-members")]


def earlier_member_tasks_finished() -> None:
    """Returns once every task handed to the member threads before it has finished: a task per
    thread, each waiting for all the others, runs only when no earlier task holds a thread (a
    task still running breaks the barrier: BrokenBarrierError)."""
    threads = members_module.INFLATE_THREADS
    barrier = threading.Barrier(threads)
    pool = members_module.member_workers()
    for future in [pool.submit(barrier.wait, 5) for _ in range(threads)]:
        future.result()


class CountedReads(io.BytesIO):
    """A file that counts its reads."""

    reads = 0

    def read(self, size: int | None = -1, /) -> bytes:
        self.reads += 1
        return super().read(size)

    def readinto(self, buffer: Any, /) -> int:
        self.reads += 1
        return super().readinto(buffer)


@pytest.mark.parametrize("stream", ["sized members", "one gzip member", "zlib"])
@pytest.mark.parametrize("stop", ["close", "with block", "dropped", "error", "end"])
def test_no_worker_works_for_a_reader_that_ended(stop: str, stream: str) -> None:
    """A stream read in order stops its thread; the member threads, shared by every reader, have
    no task of a reader that ended and never read its file again."""
    use_deflate("isal")
    raw = b"".join(map(frame, RECORDS))
    data = {"sized members": written(RECORDS), "one gzip member": gzip.compress(raw)}.get(
        stream, zlib.compress(raw)
    )
    if stop == "error":
        data = ONE_MEMBER_DAMAGES["corrupt deflate data"](data)
    assert inflate_threads() == []
    file = CountedReads(data)
    reader = TFRecordReader(file, compression="zlib" if stream == "zlib" else "gzip")
    assert isinstance(reader._source, MemberInflater | InflatingAhead)
    if stop == "close":
        while not inflate_threads() and not member_threads():  # (a stream without sizes: 2 MiB)
            next(reader)
        assert reader.index < len(RECORDS) - 1
        reader.close()
    elif stop == "with block":
        with pytest.raises(RuntimeError), reader:
            next(reader)
            raise RuntimeError("the consumer fails")
    elif stop == "dropped":
        next(reader)
        del reader
        gc.collect()
    else:
        failed: Callable[[], object] = lambda: list(reader)  # noqa: E731
        if stop == "error":
            with pytest.raises(DataError):
                failed()
        else:
            assert failed() == RECORDS
    reads = file.reads
    earlier_member_tasks_finished()
    assert inflate_threads() == [] and file.reads == reads
    assert len(member_threads()) <= members_module.INFLATE_THREADS


@pytest.mark.parametrize("damage", [None, "corrupt deflate data"])
def test_the_reader_inflates_what_no_worker_has_started(damage: str | None) -> None:
    """A task no member thread has started when the reader needs its places runs in the reader's
    thread: with every member thread held busy the reader reads the whole stream alone (the same
    records, or the same error), and no worker runs a task of it afterwards."""
    data = written(RECORDS)
    if damage is not None:
        data = ONE_MEMBER_DAMAGES[damage](data)
    expected = read(data, "isal", threaded=False)[0]
    pool = members_module.member_workers()
    release = threading.Event()
    busy = [pool.submit(release.wait, 30) for _ in range(members_module.INFLATE_THREADS)]
    outcome: list[tuple[Outcome, str]] = []
    try:
        reader = threading.Thread(target=lambda: outcome.append(read(data, "isal", threaded=True)))
        reader.start()
        reader.join(20)
        assert outcome, "the reader waited for member threads that were busy"
    finally:
        release.set()
        for future in busy:
            future.result()
    assert outcome[0] == (expected, "MemberInflater")
    earlier_member_tasks_finished()


def test_a_forked_child_reads_with_member_threads_of_its_own() -> None:
    """The member threads are the process's: a child forked after a reader started them (a
    DataLoader worker) makes its own, where the parent's would never run its tasks."""
    data = written(RECORDS)
    assert read(data, "isal", threaded=True)[0][0] == RECORDS
    assert member_threads()
    context = multiprocessing.get_context("fork")
    with context.Pool(1) as pool:
        assert pool.apply(_records_read_in_child, (data,)) == len(RECORDS)


def _records_read_in_child(data: bytes) -> int:
    return sum(1 for _ in TFRecordReader(io.BytesIO(data), compression="gzip"))


@pytest.mark.parametrize("compression", ["gzip", "zlib"])
def test_a_small_file_is_read_without_starting_a_thread(compression: Compression) -> None:
    records = [record[:5_000] for record in RECORDS[:20]]  # one member
    raw = b"".join(map(frame, records))
    small = {"gzip": written(records), "zlib": zlib.compress(raw)}[str(compression)]
    for data in (small, gzip.compress(raw)) if compression == "gzip" else (small,):
        reader = TFRecordReader(io.BytesIO(data), compression=compression)
        started = []
        with mock.patch.object(members_module, "member_workers", side_effect=AssertionError):
            for record in reader:
                started += inflate_threads()
                assert record == records[reader.index - 1]
        assert reader.index == len(records) and started == []


def test_an_empty_gzip_file_written_by_the_writer_holds_no_records() -> None:
    data = written([])
    assert member_offsets(data) == [0, len(data)]
    assert gzip.decompress(data) == b""
    assert read(data, "isal", threaded=True)[0] == ([], None, [])


@pytest.mark.parametrize(
    ("field", "value"),
    [("size", (1 << 23) + 1), ("size", (1 << 64) - 1), ("isize", 0xFFFF_FFFF), ("isize", 1 << 26)],
)
def test_sizes_a_member_declares_beyond_its_bytes_are_not_allocated(field: str, value: int) -> None:
    """A member's header (its size) and trailer (its inflated size) are read before anything checks
    them: one that declares more than 8 MiB is read in order, as every gzip reader reads it (the
    size is the writer's note; the inflated size is checked), so a corrupt one costs no memory."""
    data = bytearray(written(RECORDS[:40]))
    offsets = member_offsets(bytes(data))
    if field == "size":
        struct.pack_into("<Q", data, MEMBER_HEADER_SIZE - 8, value)
    else:
        struct.pack_into("<I", data, offsets[1] - 4, value)
    tracemalloc.start()
    try:
        threaded = read(bytes(data), "isal", threaded=True)[0]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert threaded == read(bytes(data), "isal", threaded=False)[0]
    assert (threaded[1] is None) == (field == "size") and peak < 16 << 20


def test_inflating_buffers_are_reused_by_the_next_reader_within_bounds(
    member_inflater: str,
) -> None:
    """Fresh memory is paged in again for every member: a reader takes the buffers earlier members
    (of any reader) left, and what is kept between readers stays within its bounds. (The file's
    bytes are read into the accelerator's pooled buffers; libdeflate makes its own output, which
    the allocator reuses: neither keeps a buffer here.)"""
    from codegen.runtime.io import members

    if member_inflater != "isal":
        with mock.patch.object(members, "_kept", []):
            assert read(written(RECORDS[:200]), "isal", threaded=True)[0][1] is None
            assert members._kept == []
        return

    data = written(RECORDS[:200])
    made: list[int] = []

    def counted(size: int) -> bytearray:
        if size > 1:  # (not the byte that checks a member ends where its size says)
            made.append(size)
        return bytearray(size)

    with (
        mock.patch.object(members, "_kept", []),
        mock.patch.object(members, "bytearray", counted, create=True),
    ):
        first = read(data, "isal", threaded=True)[0]
        fresh = len(made)
        assert first == (RECORDS[:200], None, []) and fresh > 0
        for _ in range(3):
            assert read(data, "isal", threaded=True)[0] == first
        # Later readers take kept buffers: a worker may read further ahead in one reader than in
        # another, which holds a buffer more at once (at most one per member read ahead).
        assert len(made) - fresh <= members._AHEAD < 3 * len(member_offsets(data))
        kept = members._kept
        assert 0 < len(kept) <= members._KEPT and sum(map(len, kept)) <= members._KEPT_BYTES


def test_members_libdeflate_inflated_are_framed_in_place(member_inflater: str) -> None:
    """The reader frames the records of a member libdeflate inflated in that member's bytes, handed
    over whole (``MemberInflater.take``): it makes no buffer of its own and copies nothing (the
    writer puts whole records in a member: the 3 MB record is one member of its own). ISA-L's
    buffers are reused for later members, so their bytes are copied into the reader's."""
    data = written(RECORDS)
    made: list[int] = []

    def counted(size: int) -> object:
        made.append(size)
        return new_buffer(size)

    with mock.patch.object(reader_module, "new_buffer", counted):
        assert read(data, "isal", threaded=True)[0] == (RECORDS, None, [])
    if member_inflater != "isal":
        assert made == []
    else:
        assert len(made) >= len(member_offsets(data)) // 4


@pytest.mark.parametrize("cut", [1, 7, 1000, 65_537])
def test_records_that_span_members_are_joined(cut: int) -> None:
    """Sized members cut anywhere in the framed records (another writer's choice: tfr-gen's puts
    whole records in a member) give the same records and the same end."""
    records = RECORDS[:60] if cut > 1000 else [record[:100] for record in RECORDS[:20]]
    framed = b"".join(map(frame, records))
    data = b"".join(gzip_member(framed[i : i + cut]) for i in range(0, len(framed), cut))
    assert read(data, "isal", threaded=True)[0] == (records, None, [])
    cut_short = data[: len(data) - 5]
    assert read(cut_short, "isal", threaded=True)[0] == read(cut_short, "zlib", threaded=False)[0]
