"""Fuzzing properties of everything that reads untrusted input, and the table of bad inputs.

* Arbitrary bytes, mutated valid records and random feature maps through ``parse_example``,
  ``parse_sequence_example`` and the ``decode`` of every generated record class (the modules of
  ``generated/`` and a schema with every feature kind) raise nothing but :class:`RecordError`; what
  decodes re-encodes to bytes that decode to the same encoding.
* Arbitrary and mutated TFRecord streams (plain, gzip, zlib) raise nothing but :class:`DataError`;
  with ``on_error="skip"`` nothing at all, and every byte is either in a record or skipped.
* Arbitrary and mutated schema text (and canonical forms) gives a schema or a :class:`SchemaError`.
* Work and memory follow the input: a length or count claiming 2**60 fails without allocating,
  the number of Python lines run grows linearly with the input, and the peak of traced memory stays
  within a fixed multiple of the input.
* Each documented bad input yields the documented error type and message.
"""

from __future__ import annotations

import gzip
import io
import math
import random
import re
import subprocess
import sys
import tempfile
import tracemalloc
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType, ModuleType
from typing import Any, NamedTuple

import crc32c
import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codegen.dtypes import DTYPES, DType, Kind
from codegen.errors import DataError, RecordError, SchemaError, TfrGenError
from codegen.generator.load import parse_canonical, parse_schema
from codegen.generator.render import render_source
from codegen.runtime import FeatureInfo
from codegen.runtime.codec import wire
from codegen.runtime.io.compression import Compression
from codegen.runtime.io.reader import TFRecordReader, read_tfrecord
from codegen.runtime.io.writer import TFRecordWriter
from codegen.runtime.record import Record
from support.framing import COMPRESSIONS, frame_header
from support.modules import generated_module, module_from_source
from support.paths import CORPUS, DATA, ROOT, SCHEMAS

GENERATED_MODULES = ("basics", "customer", "embedding", "image", "mnist")
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1

KINDS_SCHEMA = (DATA / "kinds.yaml").read_text(encoding="utf-8")
"""A schema with every feature kind and codec class (rendered at import, not formatted)."""


def _kinds_module() -> ModuleType:
    name = "fuzz_kinds"
    source = render_source(parse_schema(KINDS_SCHEMA, f"{name}.yaml"), command="tfr-gen")
    return module_from_source(source, name)


def _record_classes(module: ModuleType) -> list[type[Any]]:
    objects = [getattr(module, n) for n in module.__all__]
    return [c for c in objects if isinstance(c, type) and issubclass(c, Record)]


KINDS = _kinds_module()
BASICS: type[Any] = generated_module("basics").Basics
CUSTOMER: type[Any] = generated_module("customer").Customer
CLASSES: list[type[Any]] = [
    c for m in GENERATED_MODULES for c in _record_classes(generated_module(m))
]
CLASSES += _record_classes(KINDS)
CLASS_IDS = [c.__name__ for c in CLASSES]


def is_sequence(cls: type[Any]) -> bool:
    return any(info.sequence for info in cls.feature_spec())


def _valid_kinds_records() -> list[bytes]:
    kinds = KINDS.Kinds(
        small=-128,
        flag=[True, False],
        names=[["a", "b"], ["ü", ""]],
        pixels=np.zeros((2, 1, 3), np.uint8),
        matrix=np.arange(6, dtype=np.int32).reshape(2, 3),
        polygons=[np.ones((2, 2), np.float32), np.zeros((0, 2), np.float32)],
        words=[["x"], [], ["y", "z"]],
    )
    steps = KINDS.Steps(
        length=3,
        tokens=[1, 2, 3],
        vectors=[[0.5, 1.0], [2.0, -0.0], [1e30, 1e-30]],
        ragged=[[1], [], [2**31 - 1, -(2**31)]],
        words=[["a"], ["b", "c"], []],
    )
    return [kinds.encode(), steps.encode()]


SEED_FILES = sorted(CORPUS.glob("*.tfrecord*"))
SEED_RECORDS = sorted(
    {r for path in SEED_FILES for r in read_tfrecord(path)} | set(_valid_kinds_records())
)
"""Valid Example and SequenceExample records: the compatibility corpus and records of KINDS."""


# --- mutations ------------------------------------------------------------------------------------

INTERESTING = (
    b"\xff" * 10 + b"\x01",  # an 11-byte varint
    b"\x80",  # a varint that never ends
    wire.encode_varint(1 << 60),
    wire.encode_varint((1 << 64) - 1),
    b"\x0b",  # start-group of field 1
    b"\x0c",  # end-group of field 1
    b"\x0f",  # wire type 7
    b"\x0a\x00",
    b"\x12\x00",
    b"\x1a\x00",
    b"\x00",
)

operations = st.lists(
    st.tuples(
        st.integers(0, 5),
        st.integers(0, 1 << 16),
        st.integers(0, 255),
        st.one_of(st.sampled_from(INTERESTING), st.binary(min_size=1, max_size=8)),
    ),
    min_size=1,
    max_size=4,
)


def mutate(data: bytes, ops: list[tuple[int, int, int, bytes]]) -> bytes:
    """``data`` after each operation: flip a byte, insert, delete, truncate, overwrite, repeat."""
    out = bytearray(data)
    for kind, at, value, chunk in ops:
        i = at % (len(out) + 1)
        if kind == 0 and out:
            out[i % len(out)] ^= value or 1
        elif kind == 1:
            out[i:i] = chunk
        elif kind == 2:
            del out[i : i + value % 16 + 1]
        elif kind == 3:
            del out[i:]
        elif kind == 4:
            out[i : i + len(chunk)] = chunk
        else:
            out[i:i] = out[i : i + value + 1]
    return bytes(out)


def mutated(seeds: list[bytes]) -> st.SearchStrategy[bytes]:
    return st.builds(mutate, st.sampled_from(seeds), operations)


# --- random feature maps for a record class -----------------------------------------------------

COUNTS = (0, 1, 1, 2, 3, 4, 6, 8, 128, 784)
INT_POOL = (0, 1, -1, 2, 3, 127, 128, 255, 256, 65535, 65536, 2**31 - 1, -(2**31), 2**32,
            INT64_MAX, INT64_MIN)  # fmt: skip
FLOAT_POOL = (0.0, -0.0, 1.0, -2.5, 1e-45, 3.4e38, float("inf"), float("-inf"), float("nan"))
BYTES_POOL = (b"", b"a", "é".encode(), b"\xff", b"\xc3", b"\x00", "🙂".encode(), b"abc" * 5)


def random_feature(rng: random.Random) -> bytes:
    """A serialized Feature: no kind, any list kind with any count, or arbitrary bytes."""
    kind = rng.randrange(5)
    count = rng.choice(COUNTS)
    if kind == 0:
        return b""
    if kind == 1:
        return wire.bytes_feature([rng.choice(BYTES_POOL) for _ in range(count)])
    if kind == 2:
        return wire.float_feature(
            np.array([rng.choice(FLOAT_POOL) for _ in range(count)], np.float32)
        )
    if kind == 3:
        return wire.int64_feature(np.array([rng.choice(INT_POOL) for _ in range(count)], np.int64))
    return rng.randbytes(rng.randrange(12))


def _keys(cls: type[Any]) -> list[str]:
    return [k for info in cls.feature_spec() for k in (info.key, *info.companions)]


def _values(dtype: DType, count: int, rng: random.Random) -> bytes:
    """A Feature of ``count`` values of ``dtype`` (mostly in its range and valid UTF-8)."""
    if dtype.kind in (Kind.STR, Kind.BYTES):
        texts = [rng.choice(("", "a", "é", "日本", "🙂")).encode() for _ in range(count)]
        return wire.bytes_feature(
            [rng.choice(BYTES_POOL) if rng.random() < 0.05 else t for t in texts]
        )
    if dtype.kind is Kind.FLOAT:
        return wire.float_feature(
            np.array([rng.choice(FLOAT_POOL) for _ in range(count)], np.float32)
        )
    lo, hi = (dtype.lo or 0), (dtype.hi or 1)
    pool = [v for v in INT_POOL if lo <= v <= hi] if rng.random() < 0.9 else list(INT_POOL)
    return wire.int64_feature(np.array([rng.choice(pool) for _ in range(count)], np.int64))


def _plausible(info: FeatureInfo, rng: random.Random) -> dict[str, bytes]:
    """The map entries of one feature: right kind and counts, with a few of them off."""
    dtype = DTYPES[info.dtype]
    dims = [rng.randrange(4) if d is None else d for d in info.shape]
    count = math.prod(dims)
    if rng.random() < 0.1:
        count = max(0, count + rng.choice((-1, 1)))
    if info.encoding == "raw":
        value = wire.bytes_scalar_feature(rng.randbytes(count * dtype.numpy.itemsize))
        return {info.key: value} | {k: wire.int64_feature(np.array(dims)) for k in info.companions}
    entries: dict[str, bytes] = {}
    if info.companions:  # ragged: row lengths of the rows of the leading dimension
        lengths = [rng.randrange(3) for _ in range(dims[0])]
        entries[info.companions[0]] = wire.int64_feature(np.array(lengths, np.int64))
        count = sum(lengths) * math.prod(d for d in info.shape if d is not None)
    entries[info.key] = _values(dtype, count, rng)
    return entries


def random_feature_map(cls: type[Any], seed: int) -> bytes:
    """An Example (or SequenceExample) for the record, of plausible features, random features,
    features of other keys and missing features."""
    rng = random.Random(seed)
    keys = _keys(cls) + ["", "x", "é"]
    context: dict[str, bytes] = {}
    lists: dict[str, list[bytes]] = {}
    for info in cls.feature_spec():
        if rng.random() < 0.1:
            continue
        if info.sequence:
            steps = [_plausible(info, rng)[info.key] for _ in range(rng.randrange(4))]
            lists[info.key] = [random_feature(rng) if rng.random() < 0.05 else f for f in steps]
        else:
            context.update(_plausible(info, rng))
    for _ in range(rng.randrange(3)):
        context[rng.choice(keys)] = random_feature(rng)
    entries = [wire.map_entry(wire.key_field(k), context[k]) for k in wire.map_key_order(context)]
    if not is_sequence(cls):
        return wire.example(entries)
    return wire.sequence_example(
        entries, [wire.feature_list_entry(wire.key_field(k), lists[k]) for k in lists]
    )


def check_decode(cls: type[Any], data: bytes) -> None:
    """Decoding raises only RecordError; a decoded record's encoding decodes to that encoding."""
    try:
        record = cls.decode(data)
    except RecordError:
        return
    encoded = record.encode()
    assert cls.decode(encoded).encode() == encoded


# --- Example and SequenceExample bytes ------------------------------------------------------------


def parse_and_decode(data: bytes, parse: Callable[[bytes], dict[bytes, Any]]) -> None:
    """Parse ``data`` and decode every list body it holds (errors propagate)."""
    for kind, body in parse(data).values():
        decoder = {1: wire.decode_bytes_list, 2: wire.decode_float_list}.get(kind)
        (decoder or wire.decode_int64_list)(body)


def context_of(data: bytes) -> dict[bytes, Any]:
    return wire.parse_sequence_example(data)[0]


def check_parsers(data: bytes) -> None:
    """Both parsers and every list decoder raise only RecordError."""
    for parse in (wire.parse_example, context_of):
        try:
            parse_and_decode(data, parse)
        except RecordError:
            pass


@FUZZ
@given(data=st.one_of(st.binary(max_size=200), mutated(SEED_RECORDS)))
def test_parsers_raise_only_record_error(data: bytes) -> None:
    check_parsers(data)


@FUZZ
@given(data=st.data())
@pytest.mark.parametrize("cls", CLASSES, ids=CLASS_IDS)
def test_decode_of_arbitrary_and_mutated_bytes(cls: type[Any], data: st.DataObject) -> None:
    check_decode(cls, data.draw(st.one_of(st.binary(max_size=100), mutated(SEED_RECORDS))))


@settings(FUZZ, max_examples=400)
@given(seed=st.integers(0, 2**64))
@pytest.mark.parametrize("cls", CLASSES, ids=CLASS_IDS)
def test_decode_of_random_feature_maps(cls: type[Any], seed: int) -> None:
    check_decode(cls, random_feature_map(cls, seed))


# --- TFRecord streams -----------------------------------------------------------------------------


def frame(records: list[bytes]) -> bytes:
    out = io.BytesIO()
    with TFRecordWriter(out) as writer:
        for record in records:
            writer.write(record)
    return out.getvalue()


def compress(data: bytes, compression: Compression) -> bytes:
    if compression == "gzip":
        return gzip.compress(data, mtime=0)
    return data if compression is None else zlib.compress(data)


_PLAIN_SEEDS = [p.read_bytes() for p in SEED_FILES if p.suffix == ".tfrecord"]
_PLAIN_SEEDS.append(frame([b"", b"x" * 300, b"abc"]))
SEED_STREAMS = {c: [compress(s, c) for s in _PLAIN_SEEDS] for c in COMPRESSIONS}
"""The corpus files and a few records as a stream of each compression."""


@st.composite
def streams(draw: st.DrawFn) -> tuple[Compression, bytes]:
    compression = draw(st.sampled_from(COMPRESSIONS))
    data = draw(
        st.one_of(
            st.binary(max_size=300),
            st.binary(max_size=300).map(lambda d: compress(d, compression)),
            st.lists(st.binary(max_size=40), max_size=4)
            .map(frame)
            .map(lambda d: compress(d, compression)),
            mutated(SEED_STREAMS[compression]),
        )
    )
    return compression, data


@FUZZ
@given(case=streams(), verify=st.booleans())
def test_reader_raises_only_data_error(case: tuple[Compression, bytes], verify: bool) -> None:
    compression, data = case
    reader = TFRecordReader(io.BytesIO(data), compression=compression, verify_crc=verify)
    records: list[bytes] = []
    try:
        records.extend(reader)
    except DataError:
        pass
    if compression is None and verify:  # records whose CRCs check are framed canonically
        assert data.startswith(frame(records))


@FUZZ
@given(case=streams())
def test_skipping_reader_never_raises_and_accounts_for_every_byte(
    case: tuple[Compression, bytes],
) -> None:
    compression, data = case
    reader = TFRecordReader(io.BytesIO(data), compression=compression, on_error="skip")
    records = list(reader)
    if compression is None:
        assert sum(len(r) + 16 for r in records) + reader.skipped_bytes == len(data)


# --- schema text ----------------------------------------------------------------------------------

SCHEMA_TEXTS = [p.read_text(encoding="utf-8") for p in sorted(SCHEMAS.glob("*.yaml"))]
SCHEMA_TEXTS += [KINDS_SCHEMA, (DATA / "sequence.yaml").read_text("utf-8")]
CANONICAL_TEXTS = [parse_schema(text, "s.yaml").canonical for text in SCHEMA_TEXTS]
YAML_TOKENS = (
    "&a ", "*a", "!!python/object:os.system ", "!!binary ", "<<: ", "{", "}", "[", "]", ": ",
    "- ", "\n  ", "\t", "null", "~", "0x", "1e999", ".nan", "'", '"', "#", "---\n", "\x00",
    "\ud800", "dtype: ", "shape: [null, 3]", "default: ", "encoding: raw", "optional: true",
)  # fmt: skip


@st.composite
def mutated_text(draw: st.DrawFn, seeds: list[str]) -> str:
    text = draw(st.sampled_from(seeds))
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(text)))
        action = draw(st.integers(0, 2))
        if action == 0:
            text = text[:i] + draw(st.sampled_from(YAML_TOKENS)) + text[i:]
        elif action == 1:
            text = text[:i] + text[i + draw(st.integers(1, 20)) :]
        else:
            text = text[:i] + draw(st.text(max_size=5)) + text[i:]
    return text


WORDS = ("version", "doc", "records", "features", "context", "sequence", "key", "dtype", "shape",
         "default", "optional", "encoding", "raw", "list", "R", "x", "int64", "uint8", "float32",
         "string", "bytes", "bool", "float64")  # fmt: skip
yaml_keys = st.one_of(st.sampled_from(WORDS), st.text(max_size=4))
yaml_values = st.recursive(
    st.one_of(
        st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(), st.text(max_size=5),
        st.sampled_from(WORDS), st.binary(max_size=4),
    ),
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(yaml_keys, children, max_size=4)
    ),
    max_leaves=25,
)  # fmt: skip


@st.composite
def yaml_documents(draw: st.DrawFn) -> str:
    """A YAML mapping shaped like a schema, with random values at any depth."""
    record = draw(st.dictionaries(st.sampled_from(WORDS), yaml_values, max_size=4))
    doc = {"version": draw(yaml_values), "records": {"R": record}}
    return str(yaml.safe_dump(doc, allow_unicode=True))


def check_schema(text: str) -> None:
    """A schema or a SchemaError; a schema renders to Python that compiles, and loads back from
    its canonical form with the same fingerprint."""
    try:
        schema = parse_schema(text, "fuzz.yaml")
    except SchemaError as exc:
        assert exc.diagnostics and all(d.path == "fuzz.yaml" for d in exc.diagnostics)
        return
    compile(render_source(schema, command="tfr-gen"), "<generated>", "exec")
    again = parse_canonical(schema.canonical, module="fuzz", source="fuzz.yaml")
    assert again.fingerprint == schema.fingerprint


@FUZZ
@given(text=st.one_of(st.text(max_size=200), mutated_text(SCHEMA_TEXTS), yaml_documents()))
def test_schema_text_gives_a_schema_or_a_schema_error(text: str) -> None:
    check_schema(text)


@FUZZ
@given(text=st.one_of(st.text(max_size=100), mutated_text(CANONICAL_TEXTS)))
def test_canonical_text_gives_a_schema_or_a_schema_error(text: str) -> None:
    try:
        parse_canonical(text, module="fuzz", source="fuzz.json")
    except SchemaError:
        pass


# --- declared sizes never allocate ----------------------------------------------------------------

HUGE = wire.encode_varint(1 << 60)
MIB = 1 << 20


def ld(field: int, body: bytes, length: bytes | None = None) -> bytes:
    """A length-delimited field; ``length`` replaces the true length varint."""
    return wire.encode_varint(field << 3 | 2) + (length or wire.encode_varint(len(body))) + body


def entry(key: bytes, feature: bytes, *, key_length: bytes | None = None) -> bytes:
    return ld(1, ld(1, key, key_length) + ld(2, feature))


HUGE_LENGTHS: dict[str, bytes] = {
    "Example.features": ld(1, b"", HUGE) + bytes(64),
    "map entry": ld(1, ld(1, b"", HUGE) + bytes(64)),
    "map key": ld(1, entry(b"k", b"", key_length=HUGE) + bytes(64)),
    "Feature": ld(1, ld(1, ld(1, b"k") + ld(2, b"", HUGE) + bytes(64))),
    "Int64List": ld(1, entry(b"k", ld(3, b"", HUGE) + bytes(64))),
    "packed int64 values": ld(1, entry(b"k", ld(3, ld(1, b"", HUGE) + bytes(64)))),
    "packed float values": ld(1, entry(b"k", ld(2, ld(1, b"", HUGE) + bytes(64)))),
    "bytes value": ld(1, entry(b"k", ld(1, ld(1, b"", HUGE) + bytes(64)))),
    "unknown field": ld(9, b"", HUGE) + bytes(64),
}
"""Examples where one length varint claims 2**60 bytes, by what it is the length of."""


def _traced_peak(call: Callable[[], object]) -> int:
    """The peak of traced memory while ``call`` runs, beyond what was allocated before."""
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        try:
            call()
        except TfrGenError:
            pass
        return tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()


def _decode_everything(data: bytes) -> None:
    """Parse ``data`` as both messages, decode every list body, and decode it as every class."""
    check_parsers(data)
    for cls in CLASSES:
        try:
            cls.decode(data)
        except RecordError:
            pass


@pytest.mark.parametrize("data", HUGE_LENGTHS.values(), ids=HUGE_LENGTHS.keys())
def test_a_length_of_2_60_fails_without_allocating(data: bytes) -> None:
    for parse in (wire.parse_example, context_of):
        with pytest.raises(RecordError, match="length 1152921504606846976 at byte offset"):
            parse_and_decode(data, parse)
    assert _traced_peak(lambda: _decode_everything(data)) < 64 * 1024


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_a_record_length_of_2_60_fails_without_allocating(compression: Compression) -> None:
    data = compress(frame_header(1 << 60) + bytes(1000), compression)

    def read() -> None:
        list(TFRecordReader(io.BytesIO(data), compression=compression))

    with pytest.raises(DataError, match="declares 1152921504606846976 bytes"):
        read()
    assert _traced_peak(read) < 3 * (1 << 20)  # the reader's 1 MiB read buffer, at most twice


# --- work grows linearly --------------------------------------------------------------------------


def python_lines(call: Callable[[], object]) -> int:
    """How many lines of Python (any module) ``call`` runs: a deterministic measure of work."""
    count = 0

    def line(frame: FrameType, event: str, arg: object) -> Any:
        nonlocal count
        if event == "line":
            count += 1
        return line

    sys.settrace(lambda frame, event, arg: line)
    try:
        call()
    except TfrGenError:
        pass
    finally:
        sys.settrace(None)
    return count


def _customer(movies: int) -> bytes:
    return bytes(
        CUSTOMER(
            age=1,
            movie=["ab"] * movies,
            movie_ratings=[1.0] * movies,
            suggestion="x",
            suggestion_purchased=0.0,
        ).encode()
    )


def _varint_field(field: int, value: int) -> bytes:
    return wire.encode_varint(field << 3) + wire.encode_varint(value)


def _features_of(entries: Iterator[bytes]) -> bytes:
    return ld(1, b"".join(entries))


GROWING: dict[str, Callable[[int], Callable[[], object]]] = {
    "unknown fields": lambda n: (
        lambda: wire.parse_example(_features_of(_varint_field(5, 1) for _ in range(n)))
    ),
    "map entries": lambda n: (
        lambda: wire.parse_example(
            _features_of(entry(str(i).encode(), ld(3, b"")) for i in range(n))
        )
    ),
    "features fields": lambda n: (
        lambda: wire.parse_example(b"".join(ld(1, entry(b"k", ld(3, b""))) for _ in range(n)))
    ),
    "list chunks": lambda n: (
        lambda: wire.parse_example(
            _features_of(iter([entry(b"k", b"".join(ld(3, ld(1, b"\x01")) for _ in range(n)))]))
        )
    ),
    "kind switches": lambda n: (
        lambda: wire.parse_example(
            _features_of(iter([entry(b"k", b"".join(ld(2 + i % 2, b"") for i in range(n)))]))
        )
    ),
    "nested groups": lambda n: lambda: wire.parse_example(b"\x2b" * n + b"\x2c" * n),
    "unpacked int64 values": lambda n: (
        lambda: wire.decode_int64_list(b"".join(_varint_field(1, i) for i in range(n)))
    ),
    "bytes values": lambda n: (
        lambda: wire.decode_bytes_list(b"".join(ld(1, b"ab") for _ in range(n)))
    ),
    "sequence steps": lambda n: (
        lambda: wire.parse_sequence_example(
            ld(2, entry(b"k", b"".join(ld(1, ld(3, ld(1, b"\x01"))) for _ in range(n))))
        )
    ),
    "string list decode": lambda n: lambda: CUSTOMER.decode(_customer(movies=n)),
    "records": lambda n: lambda: list(TFRecordReader(io.BytesIO(frame([b"x"] * n)))),
    "garbage skipped": lambda n: (
        lambda: list(
            TFRecordReader(io.BytesIO(frame([b"x"]) + b"\x07" * (64 * n)), on_error="skip")
        )
    ),
    "schema features": lambda n: (
        lambda: parse_schema(
            "version: 1\nrecords:\n  R:\n    features:\n"
            + "".join(f"      f{i}: {{dtype: int64, shape: [null, 2]}}\n" for i in range(n // 20)),
            "s.yaml",
        )
    ),
}
"""Inputs of size proportional to ``n`` that stress one loop each."""


@pytest.mark.parametrize("make", GROWING.values(), ids=GROWING.keys())
def test_work_grows_linearly_with_the_input(make: Callable[[int], Callable[[], object]]) -> None:
    python_lines(make(8))  # fills caches, such as the reader's CRC tables
    small, large = python_lines(make(400)), python_lines(make(6400))
    assert large <= 2 * 16 * small + 1000, f"{small} lines for n=400, {large} for n=6400"


def test_skipping_reader_checksums_each_byte_a_bounded_number_of_times(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Headers with valid CRCs that each claim the rest of the stream cost one pass each at most
    when the reader resynchronises: not a checksum of the rest of the stream per header."""
    count = 2000
    size = 12 * count
    data = b"".join(frame_header(max(0, size - 12 * (i + 1) - 8)) for i in range(count))
    checksummed = 0
    crc = crc32c.crc32c

    def counting(data: bytes, *args: Any) -> int:
        nonlocal checksummed
        checksummed += len(data)
        return int(crc(data, *args))

    monkeypatch.setattr(crc32c, "crc32c", counting)
    reader = TFRecordReader(io.BytesIO(data), on_error="skip")
    assert list(reader) == []
    assert reader.skipped_bytes == size
    assert checksummed <= 16 * size, f"{checksummed} bytes checksummed for a {size}-byte stream"


# --- memory follows the input ---------------------------------------------------------------------

SIZE = 1 << 18
"""About how many bytes the large inputs below have."""
SLACK = 1 << 19
"""The constant part of the memory bounds: the interpreter's own allocations while decoding."""


def _one_feature(key: str, feature: bytes) -> bytes:
    return wire.example([wire.map_entry(wire.key_field(key), feature)])


def _decode_as_basics(data: bytes) -> None:
    """Parse ``data``, decode every list body, and decode it as a Basics record."""
    parse_and_decode(data, wire.parse_example)
    BASICS.decode(data)


LARGE_INPUTS: dict[str, Callable[[], bytes]] = {
    "one bytes value": lambda: _one_feature("my_bytes", wire.bytes_scalar_feature(bytes(SIZE))),
    "many bytes values": lambda: _one_feature(
        "my_bytes", wire.bytes_feature([b"abcdefgh"] * (SIZE // 10))
    ),
    "float values": lambda: _one_feature(
        "my_float", wire.float_feature(np.ones(SIZE // 4, np.float32))
    ),
    "float list chunks": lambda: _features_of(
        iter([entry(b"my_float", b"".join(ld(2, ld(1, bytes(64))) for _ in range(SIZE // 68)))])
    ),
    "long int64 varints": lambda: _one_feature(
        "my_ints", wire.int64_feature(-np.ones(SIZE // 10, np.int64))
    ),
    "mixed-length int64 varints": lambda: _one_feature(
        "my_ints", wire.int64_feature(np.resize(np.array([-1, 2**40, 300, 5], np.int64), SIZE // 5))
    ),
    "unknown fields": lambda: _features_of(_varint_field(5, 1) for _ in range(SIZE // 2)),
    "nested groups": lambda: b"\x2b" * (SIZE // 2) + b"\x2c" * (SIZE // 2),
}
"""Inputs of about SIZE bytes whose decoded values take at most twice the memory of the input."""


@pytest.mark.parametrize("make", LARGE_INPUTS.values(), ids=LARGE_INPUTS.keys())
def test_memory_stays_within_eight_times_the_input(make: Callable[[], bytes]) -> None:
    data = make()
    size, peak = len(data), _traced_peak(lambda: _decode_as_basics(data))
    assert peak < 8 * size + SLACK, f"peak {peak / size:.1f}x the {size}-byte input"


def test_memory_of_one_byte_int64_values_is_their_array() -> None:
    """Each one-byte varint becomes an 8-byte int64: 8x the input, plus the input once."""
    data = _one_feature("my_ints", wire.int64_feature(np.ones(SIZE, np.int64)))
    size, peak = len(data), _traced_peak(lambda: _decode_as_basics(data))
    assert peak < 9 * size + SLACK, f"peak {peak / size:.1f}x the {size}-byte input"


def test_memory_of_many_map_entries_is_their_dictionary() -> None:
    """Each distinct key costs a dictionary slot, its key and its value: bounded per entry."""
    entries = SIZE // 10
    data = _features_of(entry(b"%05d" % i, b"") for i in range(entries))
    peak = _traced_peak(lambda: wire.parse_example(data))
    assert peak < 8 * len(data) + 200 * entries + SLACK


@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_reader_memory_stays_within_its_buffers(compression: Compression) -> None:
    """About 3 MiB of records: the reader holds a few 1 MiB chunks, never the whole stream."""
    data = compress(frame([bytes(i % 300) for i in range(20000)]), compression)
    peak = _traced_peak(lambda: list(TFRecordReader(io.BytesIO(data), compression=compression)))
    assert peak < 8 * MIB


# --- the table of bad inputs ----------------------------------------------------------------------


class BadInput(NamedTuple):
    """One bad input: what it is, how to feed it, the error type it yields and its message (a
    regular expression searched in ``str(error)``)."""

    name: str
    call: Callable[[], object]
    error: type[TfrGenError]
    message: str


SCHEMA = "version: 1\nrecords:\n  R:\n    features:\n      a: {dtype: int64}\n"
BOMB = "version: 1\na0: &a0 [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"a{i + 1}: &a{i + 1} [{', '.join([f'*a{i}'] * 9)}]\n" for i in range(8)
)


def _schema(text: str) -> Callable[[], object]:
    return lambda: parse_schema(text, "s.yaml")


def _stream(records: list[bytes], compression: Compression = None) -> bytes:
    return compress(frame(records), compression)


def _read(data: bytes, compression: Compression = None) -> Callable[[], object]:
    return lambda: list(TFRecordReader(io.BytesIO(data), compression=compression))


def _read_as_basics(records: list[bytes]) -> Callable[[], object]:
    """Read ``records`` from a file through ``Basics.read_tfrecord``."""

    def read() -> object:
        with tempfile.TemporaryDirectory() as directory:
            path = Path(directory) / "basics.tfrecord"
            path.write_bytes(frame(records))
            return list(BASICS.read_tfrecord(path))

    return read


def _flip(data: bytes, at: int) -> bytes:
    return data[:at] + bytes([data[at] ^ 1]) + data[at + 1 :]


GOOD = _stream([b"hello", b"world!"])
GZIP = _stream([b"hello"] * 3, "gzip")
ZLIB = _stream([b"hello"] * 3, "zlib")


def _basics(**features: bytes) -> Callable[[], object]:
    """Decode a Basics record whose features are ``features`` (by key) after valid ones."""
    base = {
        "my_bytes": wire.bytes_scalar_feature(b"x"),
        "my_float": wire.float_scalar_feature(1.0),
        "my_ints": wire.int64_feature(np.array([1, 2], np.int64)),
    }
    present = {**base, **features}
    data = wire.example(
        [
            wire.map_entry(wire.key_field(k), present[k])
            for k in sorted(present)
            if present[k] != b"-"
        ]
    )
    return lambda: BASICS.decode(data)


BAD_INPUTS: list[BadInput] = [
    BadInput(
        "YAML alias bomb",
        _schema(BOMB),
        SchemaError,
        r"s.yaml:\d+:\d+: too many nodes \(alias expansion\)",
    ),
    BadInput(
        "unknown tag",
        _schema(SCHEMA.replace("int64", "!!python/object/apply:os.system [ls]")),
        SchemaError,
        r"s.yaml:5:18: unsupported tag !!python/object/apply:os.system; only .* allowed",
    ),
    BadInput(
        "duplicate key",
        _schema(SCHEMA + "      a: {dtype: int64}\n"),
        SchemaError,
        r"s.yaml:6:7: duplicate key 'a' \(first defined at 5:7\)",
    ),
    BadInput(
        "bad dtype",
        _schema(SCHEMA.replace("int64", "int128")),
        SchemaError,
        r"s.yaml:5:18: unknown dtype 'int128'; expected one of int64, .*, string",
    ),
    BadInput(
        "code-shaped feature name",
        _schema(SCHEMA.replace("      a:", "      'a); import os':")),
        SchemaError,
        r"s.yaml:5:7: feature name 'a\); import os' is not snake_case",
    ),
    BadInput(
        "file over 1 MiB",
        _schema(SCHEMA + "#" * (1 << 20)),
        SchemaError,
        r"s.yaml:1:1: the schema is too large: it has more than the limit of 1048576 bytes",
    ),
    BadInput(
        "nesting deeper than 100",
        _schema("a: " + "[" * 101 + "]" * 101),
        SchemaError,
        r"s.yaml:1:\d+: invalid YAML: nesting deeper than 100 levels",
    ),
    BadInput(
        "recursive alias",
        _schema("a: &a [*a]\n"),
        SchemaError,
        r"s.yaml:1:8: alias \*a refers to a node that contains it \(recursive alias\)",
    ),
    BadInput(
        "NUL character",
        _schema(SCHEMA + "\x00"),
        SchemaError,
        r"s.yaml:6:1: invalid character U\+0000",
    ),
    BadInput(
        "two documents",
        _schema(SCHEMA + "---\n" + SCHEMA),
        SchemaError,
        r"s.yaml:6:1: invalid YAML: a schema file holds one YAML document",
    ),
    BadInput(
        "corrupt length CRC",
        _read(_flip(GOOD, 8)),
        DataError,
        r"<stream>: record 0 at byte offset 0: corrupt length CRC: stored 0x[0-9a-f]{8}, "
        r"computed 0x",
    ),
    BadInput(
        "corrupt data CRC",
        _read(_flip(GOOD, 12)),
        DataError,
        r"record 0 at byte offset 0: corrupt data CRC of a 5-byte record: stored 0x[0-9a-f]{8}, "
        r"computed 0x",
    ),
    BadInput(
        "truncated header",
        _read(GOOD[:27]),
        DataError,
        r"record 1 at byte offset 21: truncated header: the file ends 6 bytes into a 12-byte",
    ),
    BadInput(
        "truncated data",
        _read(GOOD[:35]),
        DataError,
        r"record 1 at byte offset 21: truncated record: the file ends 14 bytes into a record that "
        r"declares 6 bytes of data \(22 bytes with its framing\)",
    ),
    BadInput(
        "record length 2**60",
        _read(frame_header(1 << 60) + bytes(100)),
        DataError,
        r"record 0 at byte offset 0: the record header declares 1152921504606846976 bytes of data,"
        r" more than max_record_bytes \(268435456\)",
    ),
    BadInput(
        "garbage between records",
        _read(GOOD[:21] + b"GARBAGE" + GOOD[21:]),
        DataError,
        r"record 1 at byte offset 21: corrupt length CRC",
    ),
    BadInput(
        "corrupt gzip header",
        _read(b"\x00" + GZIP[1:], "gzip"),
        DataError,
        r"record 0 at byte offset 0: corrupt gzip stream: .*(incorrect header check|Invalid gzip/zlib wrapper)",
    ),
    BadInput(
        "corrupt gzip checksum",
        _read(_flip(GZIP, len(GZIP) - 8), "gzip"),
        DataError,
        r"corrupt gzip stream: .*(incorrect data check|Incorrect checksum)",
    ),
    BadInput(
        "truncated gzip",
        _read(GZIP[:-5], "gzip"),
        DataError,
        r"record 3 at byte offset 63: truncated gzip stream: the file ends inside compressed data",
    ),
    BadInput(
        "data after the zlib stream",
        _read(ZLIB + b"x", "zlib"),
        DataError,
        r"record 3 at byte offset 63: corrupt zlib stream: data after its end",
    ),
    BadInput(
        "record that does not decode, read by a record class",
        _read_as_basics(
            [bytes(BASICS(my_ints=[1], my_float=1.0, my_bytes=b"x").encode()), b"\x0f"]
        ),
        DataError,
        r"basics.tfrecord: record 1 at byte offset 77: Basics: Example: invalid wire type 7",
    ),
    BadInput(
        "empty Feature (no list)",
        _basics(my_float=b""),
        RecordError,
        r"Basics.my_float \(key 'my_float'\): required feature is missing "
        r"\(expected float_list with 1 value\)",
    ),
    BadInput(
        "wrong list kind",
        _basics(my_float=wire.int64_scalar_feature(1)),
        RecordError,
        r"Basics.my_float \(key 'my_float'\): expected float_list, found int64_list",
    ),
    BadInput(
        "wrong value count",
        _basics(my_bytes=wire.bytes_feature([b"x", b"y"])),
        RecordError,
        r"Basics.my_bytes \(key 'my_bytes'\): expected 1 bytes_list value, found 2",
    ),
    BadInput(
        "missing feature",
        _basics(my_float=b"-"),
        RecordError,
        r"Basics.my_float \(key 'my_float'\): required feature is missing",
    ),
    BadInput(
        "truncated varint",
        _basics(my_ints=b"\x1a\x03\x0a\x01\x80"),
        RecordError,
        r"Basics.my_ints \(key 'my_ints'\): Int64List: truncated varint at byte offset 2",
    ),
    BadInput(
        "varint over 10 bytes",
        _basics(my_ints=ld(3, ld(1, b"\xff" * 10 + b"\x01"))),
        RecordError,
        r"Int64List: the varint at byte offset \d+ is longer than 10 bytes",
    ),
    BadInput(
        "length 2**60 in an Example",
        lambda: wire.parse_example(ld(1, b"", HUGE) + bytes(8)),
        RecordError,
        r"Example: length 1152921504606846976 at byte offset 1 runs past the end of the message",
    ),
    BadInput(
        "invalid wire type",
        lambda: wire.parse_example(b"\x0f\x00"),
        RecordError,
        r"Example: invalid wire type 7 in the tag at byte offset 0 \(expected 0 to 5\)",
    ),
    BadInput(
        "unmatched end-group",
        lambda: wire.parse_example(b"\x0c"),
        RecordError,
        r"Example: end-group tag at byte offset 0 without a matching start-group tag",
    ),
    BadInput(
        "map key not UTF-8",
        lambda: wire.parse_example(ld(1, entry(b"\xff", b""))),
        RecordError,
        r"Example.features: the map key at byte offset \d+ is not valid UTF-8",
    ),
    BadInput(
        "packed floats not a multiple of 4",
        _basics(my_float=ld(2, ld(1, b"abc"))),
        RecordError,
        r"FloatList: the packed floats at byte offset \d+ take 3 bytes, not a multiple of 4",
    ),
]
"""Every bad input of the table in docs/errors.md, in its order."""


@pytest.mark.parametrize("case", BAD_INPUTS, ids=[case.name for case in BAD_INPUTS])
def test_bad_input_yields_the_documented_error(case: BadInput) -> None:
    with pytest.raises(case.error) as caught:
        case.call()
    assert type(caught.value) is case.error
    assert re.search(case.message, str(caught.value)), str(caught.value)


def test_fuzz_seeds_cover_every_corpus_file_and_schema(tmp_path: Path) -> None:
    """``fuzz/seeds.py`` (what ``.ci/fuzz`` seeds the targets with) reads every file of the
    compatibility corpus through its record class, and every schema."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "fuzz" / "seeds.py"), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    corpus = sorted(CORPUS.glob("*.tfrecord*"))
    assert len(list((tmp_path / "tfrecord").iterdir())) >= len(corpus)
    records = sum(1 for path in corpus if path.suffix == ".tfrecord" for _ in read_tfrecord(path))
    assert len(list((tmp_path / "example").iterdir())) >= records // 4
    assert len(list((tmp_path / "schema").iterdir())) >= len(list(SCHEMAS.glob("*.yaml")))
