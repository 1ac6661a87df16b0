"""The TFRecord framing primitives: the C accelerator's (``codegen/_speedups/frames.c``) against
their pure-Python equivalents (``codegen.runtime.io.framing.PURE_PYTHON``) and the crc32c package,
and the reader and writer running on each."""

from __future__ import annotations

import io
import os
import random
import subprocess
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import crc32c
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codegen.errors import DataError
from codegen.runtime import accel
from codegen.runtime.io import framing
from codegen.runtime.io.compression import Compression
from codegen.runtime.io.framing import PURE_PYTHON, FrameCodec
from codegen.runtime.io.reader import TFRecordReader, read_tfrecord
from codegen.runtime.io.skips import SkippedSpan
from codegen.runtime.io.writer import TFRecordWriter, write_tfrecord
from support.framing import frame
from support.processes import PYTHON
from support.speedups import speedups_module

if TYPE_CHECKING:
    from typing_extensions import Buffer

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@runtime_checkable
class FramesModule(Protocol):
    """The framing functions of ``codegen._speedups``."""

    def crc32c(self, data: Buffer, portable: bool = False, /) -> int: ...

    def frame_records(self, records: object, start: int, limit: int, /) -> tuple[bytes, int]: ...

    def scan_frames(
        self, buffer: Buffer, start: int, verify: bool, views: bool = False, /
    ) -> tuple[list[Any], int]: ...

    def scan_spans(self, buffer: Buffer, start: int, verify: bool, /) -> tuple[Any, int]: ...

    def join_spans(self, parts: object, /) -> Any: ...


@pytest.fixture(scope="module")
def sp() -> FramesModule:
    """The ``codegen._speedups`` module; fails in CI when it cannot be imported, else skips."""
    module = speedups_module()
    assert isinstance(module, FramesModule)
    return module


@pytest.fixture(params=["python", "c"])
def codec(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> FrameCodec:
    """Each implementation of the primitives, installed as the one the reader and writer use."""
    if request.param == "python":
        chosen = PURE_PYTHON
    else:
        module: FramesModule = request.getfixturevalue("sp")
        chosen = FrameCodec(module.frame_records, module.scan_frames)
    monkeypatch.setattr(framing, "FRAMES", chosen)
    return chosen


Outcome = tuple[str, object]
"""("ok", result) or (exception type name, message)."""


def outcome(call: Callable[[], object]) -> Outcome:
    try:
        return ("ok", call())
    except (TypeError, ValueError) as exc:
        return (type(exc).__name__, str(exc))


# ------------------------------------------------------------------------------------------ crc32c


def test_crc32c_matches_the_package_at_every_length_up_to_1000(sp: FramesModule) -> None:
    data = random.Random(0).randbytes(1010)
    view = memoryview(data)
    for length in range(1001):
        for at in (0, 3):  # aligned and unaligned starts
            chunk = view[at : at + length]
            expected = crc32c.crc32c(chunk)
            assert sp.crc32c(chunk) == expected, (length, at)
            assert sp.crc32c(chunk, True) == expected, (length, at)


@pytest.mark.parametrize(
    "length", [767, 768, 769, 3 * 8192 - 1, 3 * 8192, 3 * 8192 + 1, 6 * 8192 + 3 * 256 + 5, 1 << 20]
)
def test_crc32c_of_long_buffers_combines_its_streams_exactly(sp: FramesModule, length: int) -> None:
    data = random.Random(length).randbytes(length + 7)
    for at in range(8):
        chunk = memoryview(data)[at : at + length]
        expected = crc32c.crc32c(chunk)
        assert sp.crc32c(chunk) == expected == sp.crc32c(chunk, True)


def test_crc32c_takes_any_bytes_like_object(sp: FramesModule) -> None:
    assert sp.crc32c(bytearray(b"hello")) == sp.crc32c(b"hello") == crc32c.crc32c(b"hello")
    assert sp.crc32c(b"") == 0
    with pytest.raises(TypeError):
        sp.crc32c("hello")  # type: ignore[arg-type]


# ----------------------------------------------------------------------------------- frame_records

items = st.one_of(
    st.binary(max_size=80),
    st.binary(max_size=80),
    st.sampled_from([b"", bytearray(b"xy"), "text", None, 7]),
)


@SETTINGS
@given(
    records=st.lists(items, max_size=12),
    as_tuple=st.booleans(),
    start=st.integers(-2, 14),
    limit=st.integers(-3, 600),
)
def test_frame_records_agrees_with_python(
    sp: FramesModule, records: list[object], as_tuple: bool, start: int, limit: int
) -> None:
    batch = tuple(records) if as_tuple else records
    expected = outcome(lambda: PURE_PYTHON.frame_records(batch, start, limit))  # type: ignore[arg-type]
    assert outcome(lambda: sp.frame_records(batch, start, limit)) == expected
    if expected[0] == "ok":
        assert isinstance(expected[1], tuple)
        framed, stop = expected[1]
        taken = [r for r in records[start:stop] if isinstance(r, bytes)]
        assert len(taken) == stop - start
        assert framed == b"".join(frame(r) for r in taken)
        assert stop > start or start == len(records)
        # Records are taken while the framed size is below the limit.
        assert sum(len(r) + 16 for r in taken[:-1]) < max(limit, 1)


def test_frame_records_errors_name_what_was_expected(sp: FramesModule) -> None:
    text: Any = ["text"]
    generator: Any = (r for r in [b"a"])
    for implementation in (PURE_PYTHON.frame_records, sp.frame_records):
        with pytest.raises(TypeError, match="TFRecordWriter.write expects bytes, got str"):
            implementation(text, 0, 100)
        with pytest.raises(TypeError, match="expects a list or tuple of bytes, got generator"):
            implementation(generator, 0, 100)
        with pytest.raises(ValueError, match="start 3 is out of range for 2 records"):
            implementation([b"a", b"b"], 3, 100)
        assert implementation([b"a", b"b"], 2, 100) == (b"", 2)
        assert implementation([b"a", b"b"], 0, 0) == (frame(b"a"), 1)


def test_frame_records_stops_at_the_limit(sp: FramesModule) -> None:
    records = [bytes(100)] * 10  # 116 framed bytes each
    for implementation in (PURE_PYTHON.frame_records, sp.frame_records):
        assert implementation(records, 0, 116)[1] == 1
        assert implementation(records, 0, 117)[1] == 2
        assert implementation(records, 4, 1000)[1] == 10
        framed, stop = implementation(records, 0, 1 << 30)
        assert (framed, stop) == (frame(bytes(100)) * 10, 10)


# ------------------------------------------------------------------------------------- scan_frames


@st.composite
def frame_buffers(draw: st.DrawFn) -> bytes:
    """Framed records, perhaps after garbage, with some bytes changed and perhaps cut short."""
    records = draw(st.lists(st.binary(max_size=50), max_size=8))
    data = bytearray(draw(st.binary(max_size=3)) + b"".join(frame(r) for r in records))
    if data:
        flips = draw(st.lists(st.integers(0, len(data) - 1), max_size=2))
        for position in flips:
            data[position] ^= draw(st.integers(1, 255))
    cut = draw(st.integers(0, len(data)))
    return bytes(data[: len(data) - draw(st.sampled_from([0, 0, cut]))])


@SETTINGS
@given(buffer=frame_buffers(), start=st.integers(-1, 6), verify=st.booleans())
def test_scan_frames_agrees_with_python(
    sp: FramesModule, buffer: bytes, start: int, verify: bool
) -> None:
    expected = outcome(lambda: PURE_PYTHON.scan_frames(buffer, start, verify, False))
    assert outcome(lambda: sp.scan_frames(buffer, start, verify)) == expected
    if expected[0] != "ok":
        return
    assert isinstance(expected[1], tuple)
    records, stop = expected[1]
    assert all(type(r) is bytes for r in records)
    assert sp.scan_frames(memoryview(buffer), start, verify) == expected[1]
    for scan in (sp.scan_frames, PURE_PYTHON.scan_frames):
        views, view_stop = scan(buffer, start, verify, True)
        assert all(type(v) is memoryview and v.obj is buffer for v in views)
        assert ([bytes(v) for v in views], view_stop) == (records, stop)


def test_scan_frames_stops_at_the_first_frame_it_cannot_take(sp: FramesModule) -> None:
    records = [b"one", b"", b"three"]
    stream = b"".join(frame(r) for r in records)
    bad_length_crc = bytearray(stream)
    bad_length_crc[19 + 8] ^= 1  # the length CRC of the second record
    bad_data_crc = bytearray(stream)
    bad_data_crc[-1] ^= 1
    for implementation in (PURE_PYTHON.scan_frames, sp.scan_frames):
        assert implementation(stream, 0, True) == (records, len(stream))
        assert implementation(stream, 19, True) == (records[1:], len(stream))
        assert implementation(stream[:-1], 0, True) == (records[:2], 35)
        assert implementation(bytes(bad_length_crc), 0, True) == (records[:1], 19)
        assert implementation(bytes(bad_length_crc), 0, False) == (records, len(stream))
        assert implementation(bytes(bad_data_crc), 0, True) == (records[:2], 35)
        assert implementation(stream, len(stream), True) == ([], len(stream))
        with pytest.raises(ValueError, match="start -1 is out of range for a buffer of 56 bytes"):
            implementation(stream, -1, True)


# ------------------------------------------------------------------------------------- scan_spans


@SETTINGS
@given(buffer=frame_buffers(), start=st.integers(-1, 6), verify=st.booleans())
def test_scan_spans_gives_the_records_of_scan_frames(
    sp: FramesModule, buffer: bytes, start: int, verify: bool
) -> None:
    expected = outcome(lambda: PURE_PYTHON.scan_frames(buffer, start, verify, False))
    got = outcome(lambda: sp.scan_spans(buffer, start, verify))
    if expected[0] != "ok":
        assert got == expected
        return
    assert isinstance(expected[1], tuple)
    records, stop = expected[1]
    spans, spans_stop = sp.scan_spans(bytearray(buffer), start, verify)
    assert type(spans).__name__ == "Spans" and spans_stop == stop
    assert len(spans) == len(records) and list(spans) == records
    assert all(type(item) is bytes for item in spans)
    assert spans.nbytes == sum(map(len, records))


@SETTINGS
@given(
    records=st.lists(st.binary(max_size=20), max_size=12),
    start=st.none() | st.integers(-15, 15),
    stop=st.none() | st.integers(-15, 15),
    step=st.none() | st.integers(-4, 4).filter(bool),
    cut=st.integers(0, 12),
)
def test_spans_index_slice_and_join_as_lists_do(
    sp: FramesModule,
    records: list[bytes],
    start: int | None,
    stop: int | None,
    step: int | None,
    cut: int,
) -> None:
    spans, _ = sp.scan_spans(b"".join(frame(r) for r in records), 0, True)
    part = slice(start, stop, step)
    assert list(spans[part]) == records[part]
    assert type(spans[part]) is type(spans)
    for index in (start, stop):
        if index is not None and -len(records) <= index < len(records):
            assert spans[index] == records[index]
        elif index is not None:
            with pytest.raises(IndexError, match="Spans index out of range"):
                spans[index]
    joined = sp.join_spans([spans[:cut], spans[part], spans[cut:]])
    assert list(joined) == records[:cut] + records[part] + records[cut:]
    assert list(sp.join_spans([])) == []


def test_spans_keep_their_buffer_alive_and_unresized(sp: FramesModule) -> None:
    records = [b"alpha", b"", b"gamma" * 100]
    buffer = bytearray(b"".join(frame(r) for r in records))
    spans, _ = sp.scan_spans(buffer, 0, True)
    with pytest.raises(BufferError):
        buffer.extend(b"more")
    joined = sp.join_spans([spans[2:], spans[:2]])
    del spans, buffer
    assert list(joined) == [records[2], *records[:2]]
    with pytest.raises(TypeError, match="join_spans: expected Spans, got list"):
        sp.join_spans([joined, [b"x"]])
    with pytest.raises(TypeError, match="join_spans: expected a sequence of Spans"):
        sp.join_spans(3)


def test_scan_batch_reads_spans_as_it_reads_their_records(sp: FramesModule) -> None:
    from codegen.runtime.tf import proto

    def example(i: int) -> bytes:
        message: Any = proto.Example()
        feature = message.features.feature
        feature["id"].int64_list.value.append(i)
        feature["tags"].bytes_list.value.extend(b"t%d" % j for j in range(i % 3))
        feature["w"].float_list.value.append(0.5 * i)
        data: bytes = message.SerializeToString(deterministic=True)
        return data

    records = [example(i) for i in range(40)]
    spans, _ = sp.scan_spans(b"".join(frame(r) for r in records), 0, True)
    module: Any = sp
    keys = (b"id", b"tags", b"w")
    for joined in ((), (b"tags",)):
        expected = module.scan_batch(records[3:31], keys, joined)
        assert module.scan_batch(spans[3:31], keys, joined) == expected
        assert module.scan_batch(sp.join_spans([spans[3:10], spans[10:31]]), keys, joined) == (
            expected
        )


# ----------------------------------------------------------------------------------- selection


def test_the_accelerator_is_used_when_built(sp: FramesModule) -> None:
    if accel.speedups is None:
        assert framing.FRAMES is PURE_PYTHON
    else:
        assert framing.FRAMES.frame_records is sp.frame_records
        assert framing.FRAMES.scan_frames is sp.scan_frames
        assert framing.FRAMES.scan_spans is sp.scan_spans


def test_pure_python_variable_selects_the_python_primitives() -> None:
    check = (
        "from codegen.runtime.io import framing; "
        "assert framing.FRAMES is framing.PURE_PYTHON, framing.FRAMES"
    )
    env = {**os.environ, accel.PURE_PYTHON_VARIABLE: "1"}
    subprocess.run([*PYTHON, "-c", check], env=env, check=True)


def test_an_outdated_extension_is_an_import_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(accel, "speedups", SimpleNamespace(__file__="old.so"))
    with pytest.raises(ImportError, match=r"old\.so: .*out of date.*scan_spans.*rebuild"):
        framing._accelerated()
    monkeypatch.setattr(accel, "speedups", None)
    assert framing._accelerated() is None


# ------------------------------------------------------------------- the reader and the writer


def records_of(seed: int) -> list[bytes]:
    """Records of mixed sizes, enough of them for several write and read chunks."""
    rng = random.Random(seed)
    records = [rng.randbytes(rng.choice([0, 3, 200, 5000])) for _ in range(1500)]
    records.insert(700, rng.randbytes(1 << 21))  # larger than a chunk
    return records


def test_writer_output_is_the_reference_framing(codec: FrameCodec) -> None:
    records = records_of(1)
    out = io.BytesIO()
    with TFRecordWriter(out) as writer:
        writer.write_many(records[:500])
        for record in records[500:900]:
            writer.write(record)
        writer.write_many(iter(records[900:]))
    assert out.getvalue() == b"".join(frame(r) for r in records)
    assert writer.records_written == len(records)


def test_reader_positions_are_exact_at_every_record(codec: FrameCodec) -> None:
    records = records_of(2)
    reader = TFRecordReader(io.BytesIO(b"".join(frame(r) for r in records)))
    offset = 0
    for index, data in enumerate(reader):
        offset += len(data) + 16
        assert data == records[index]
        assert (reader.index, reader.offset) == (index + 1, offset)


def corrupted(seed: int) -> tuple[list[bytes], bytes]:
    """Records and their stream with a few bytes changed (in headers, data and CRCs)."""
    records = [random.Random(seed + i).randbytes(i % 7 * 50) for i in range(400)]
    stream = bytearray(b"".join(frame(r) for r in records))
    rng = random.Random(seed)
    for _ in range(4):
        stream[rng.randrange(len(stream))] ^= 1 << rng.randrange(8)
    return records, bytes(stream)


def read_report(stream: bytes, verify: bool) -> tuple[list[bytes], tuple[str, int, int] | None]:
    """The records a raising reader yields and its error (message, index, offset)."""
    reader = TFRecordReader(io.BytesIO(stream), verify_crc=verify)
    yielded: list[bytes] = []
    try:
        yielded.extend(reader)
    except DataError as exc:
        return yielded, (str(exc), exc.index, exc.offset)
    return yielded, None


def skip_report(stream: bytes) -> tuple[list[bytes], list[SkippedSpan]]:
    spans: list[SkippedSpan] = []
    reader = TFRecordReader(io.BytesIO(stream), on_error="skip", on_skip=spans.append)
    return list(reader), spans


@pytest.mark.parametrize("seed", range(6))
def test_reports_on_corrupt_streams_are_the_same_with_either_primitives(
    seed: int, sp: FramesModule, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, stream = corrupted(seed)
    reports = []
    for chosen in (PURE_PYTHON, FrameCodec(sp.frame_records, sp.scan_frames)):
        monkeypatch.setattr(framing, "FRAMES", chosen)
        reports.append((read_report(stream, True), read_report(stream, False), skip_report(stream)))
    assert reports[0] == reports[1]
    (yielded, error), _, (kept, spans) = reports[0]
    assert error is not None and spans  # the corruption is found, and skipped over


def test_a_corrupt_record_is_reported_where_it_is(codec: FrameCodec) -> None:
    records = [bytes([i]) * 300 for i in range(50)]
    stream = bytearray(b"".join(frame(r) for r in records))
    stream[20 * 316 + 12 + 5] ^= 0xFF  # data of record 20
    yielded, error = read_report(bytes(stream), True)
    assert yielded == records[:20]
    assert error is not None and error[1:] == (20, 20 * 316)
    assert "corrupt data CRC of a 300-byte record" in error[0]
    kept, spans = skip_report(bytes(stream))
    assert kept == records[:20] + records[21:]
    assert [(s.offset, s.length) for s in spans] == [(20 * 316, 316)]


def generated(records: list[bytes]) -> Iterator[bytes]:
    yield from records


@pytest.mark.parametrize("compression", [None, "gzip", "zlib"])
def test_round_trip_through_a_file(
    codec: FrameCodec, tmp_path: os.PathLike[str], compression: Compression
) -> None:
    records = records_of(3)
    path = os.path.join(tmp_path, "data.tfrecord")
    assert write_tfrecord(path, generated(records), compression=compression) == len(records)
    assert list(read_tfrecord(path, compression=compression)) == records
