"""The C accelerator ``codegen._speedups`` against the pure-Python wire codec.

Differential tests: on valid Examples and SequenceExamples (protobuf's serialization and
hand-made encodings: unpacked, chunked, merged, reordered, replaced oneof members, duplicate keys,
unknown fields of every wire type), on malformed, mutated and random bytes, the C functions return
exactly what ``codegen.runtime.codec.wire`` returns, or raise :class:`RecordError` with the same message.
``encode_int64_packed`` equals protobuf's packed payload, and ``scan_batch`` equals decoding each
record on its own. In CI a missing extension fails these tests; elsewhere they are skipped.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tracemalloc
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, cast
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codegen.errors import RecordError
from codegen.runtime import accel
from codegen.runtime.codec import batch, varint, wire
from codegen.runtime.tf import proto
from support.paths import ROOT
from support.processes import PYTHON
from support.wire_bytes import INT64_MIN, INT_RANGES, Spec, mutated, split, tag

SETTINGS = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# --- comparing outcomes ----------------------------------------------------------------------

Outcome = tuple[str, object]
"""("ok", normalized result) or ("error", RecordError message)."""


def outcome(call: Callable[[], object]) -> Outcome:
    try:
        return ("ok", call())
    except RecordError as exc:
        return ("error", str(exc))


def py_example(data: bytes) -> Outcome:
    return outcome(lambda: list(wire.PURE_PYTHON.parse_example(data).items()))


def c_example(sp: accel.Speedups, data: bytes) -> Outcome:
    return outcome(lambda: list(sp.parse_example(data).items()))


def py_sequence(data: bytes) -> Outcome:
    def run() -> object:
        context, lists = wire.PURE_PYTHON.parse_sequence_example(data)
        return list(context.items()), list(lists.items())

    return outcome(run)


def c_sequence(sp: accel.Speedups, data: bytes) -> Outcome:
    def run() -> object:
        context, lists = sp.parse_sequence_example(data)
        return list(context.items()), list(lists.items())

    return outcome(run)


def py_lists(body: bytes) -> list[Outcome]:
    return [
        outcome(lambda: wire.PURE_PYTHON.decode_int64_list(body).astype("<i8").tobytes()),
        outcome(lambda: wire.PURE_PYTHON.decode_float_list(body).astype("<f4").tobytes()),
        outcome(lambda: wire.PURE_PYTHON.decode_bytes_list(body)),
    ]


def c_lists(sp: accel.Speedups, body: bytes) -> list[Outcome]:
    def typed(value: object, kind: type) -> object:
        assert type(value) is kind
        return value if isinstance(value, list) else bytes(value)  # type: ignore[call-overload]

    return [
        outcome(lambda: typed(sp.decode_int64_values(body), sp.Block)),
        outcome(lambda: typed(sp.decode_float_values(body), sp.Block)),
        outcome(lambda: typed(sp.decode_bytes_values(body), list)),
    ]


def assert_same(sp: accel.Speedups, data: bytes) -> None:
    """Every parse and decode function gives the same outcome in C and in Python on ``data``."""
    assert c_example(sp, data) == py_example(data)
    assert c_sequence(sp, data) == py_sequence(data)
    assert c_lists(sp, data) == py_lists(data)


def assert_bodies_same(sp: accel.Speedups, data: bytes) -> None:
    """``assert_same`` on ``data`` and on every list body that parse_example finds in it."""
    assert_same(sp, data)
    parsed = py_example(data)
    if parsed[0] == "ok":
        for _, (_, body) in parsed[1]:  # type: ignore[attr-defined]
            assert c_lists(sp, body) == py_lists(body)


# --- building encodings ----------------------------------------------------------------------


def padded(number: int, extra: int) -> bytes:
    """The varint of ``number`` with ``extra`` redundant continuation bytes (at most 10 in all)."""
    encoded = wire.encode_varint(number)
    extra = min(extra, 10 - len(encoded))
    if not extra:
        return encoded
    return encoded[:-1] + bytes((encoded[-1] | 0x80,)) + b"\x80" * (extra - 1) + b"\x00"


def ld(field: int, body: bytes, extra: int = 0) -> bytes:
    """A length-delimited field; ``extra`` pads its length varint."""
    return tag(field, 2) + padded(len(body), extra) + body


# --- strategies ----------------------------------------------------------------------------


int_values = st.sampled_from(INT_RANGES).flatmap(
    lambda bounds: st.lists(st.integers(*bounds), max_size=24)
)
float_values = st.lists(st.floats(width=32), max_size=12)
bytes_values = st.lists(st.binary(max_size=10), max_size=4)
specs: st.SearchStrategy[Spec] = st.one_of(
    st.just((0, [])),
    int_values.map(lambda v: (3, v)),
    float_values.map(lambda v: (2, v)),
    bytes_values.map(lambda v: (1, v)),
)
LIST_VALUES: dict[int, st.SearchStrategy[list[Any]]] = {
    1: bytes_values,
    2: float_values,
    3: int_values,
}
text_keys = st.text(max_size=5)
raw_keys = st.one_of(text_keys.map(str.encode), st.binary(max_size=4))
paddings = st.sampled_from([0, 0, 0, 0, 1, 2])


def unknown_field(first_field: int) -> st.SearchStrategy[bytes]:
    """One unknown field (numbers from ``first_field`` on) of any wire type, groups nested."""
    numbers = st.integers(first_field, first_field + 30)
    return st.one_of(
        st.tuples(numbers, st.integers(0, (1 << 64) - 1)).map(
            lambda t: tag(t[0], 0) + wire.encode_varint(t[1])
        ),
        st.tuples(numbers, st.binary(min_size=8, max_size=8)).map(lambda t: tag(t[0], 1) + t[1]),
        st.tuples(numbers, st.binary(max_size=6)).map(lambda t: ld(*t)),
        st.tuples(numbers, st.binary(min_size=4, max_size=4)).map(lambda t: tag(t[0], 5) + t[1]),
        st.tuples(numbers, numbers, st.integers(0, 300)).map(
            lambda t: (
                tag(t[0], 3)
                + tag(t[1], 3)
                + tag(1, 0)
                + wire.encode_varint(t[2])
                + tag(t[1], 4)
                + tag(t[0], 4)
            )
        ),
    )


def list_fields(draw: st.DrawFn, kind: int, values: list[Any]) -> list[bytes]:
    """The fields of a list body: values packed or not, in chunks, among unknown fields."""
    noise = st.one_of(
        unknown_field(2),
        st.just(tag(1, 1) + bytes(8) if kind == 3 else tag(1, 0) + b"\x05"),
    )
    fields: list[bytes] = []
    start = 0
    while start < len(values) or draw(st.integers(0, 4)) == 0:
        chunk = values[start : start + draw(st.integers(0, 30))]
        start += len(chunk)
        if draw(st.integers(0, 3)) == 0:
            fields.append(draw(noise))
        pad = draw(paddings)  # one padding for the whole chunk keeps the examples cheap to draw
        if kind == 1:
            fields.extend(ld(1, value, pad) for value in chunk)
        elif kind == 2:
            raw = [np.array([x], dtype="<f4").tobytes() for x in chunk]
            if draw(st.booleans()):
                fields.append(ld(1, b"".join(raw), draw(paddings)))
            else:
                fields.extend(tag(1, 5) + item for item in raw)
        elif draw(st.booleans()):
            run = b"".join(padded(x & (1 << 64) - 1, pad) for x in chunk)
            fields.append(ld(1, run, draw(paddings)))
        else:
            fields.extend(tag(1, 0) + padded(x & (1 << 64) - 1, pad) for x in chunk)
        if start >= len(values) and draw(st.booleans()):
            break
    return fields


def feature_fields(draw: st.DrawFn, spec: Spec) -> list[bytes]:
    """The fields of a Feature: replaced members of the oneof, then the list cut into pieces."""
    kind, values = spec
    noise = unknown_field(4)
    fields: list[bytes] = [draw(noise) for _ in range(draw(st.integers(0, 1)))]
    if kind == 0:
        return fields
    decoys = draw(st.lists(st.sampled_from([1, 2, 3]), max_size=2))
    if decoys and decoys[-1] == kind:
        decoys.append(kind % 3 + 1)
    for decoy in decoys:
        decoy_values = draw(LIST_VALUES[decoy])
        fields.append(ld(decoy, b"".join(list_fields(draw, decoy, decoy_values))))
    for piece in split(draw, list_fields(draw, kind, values)):
        fields.append(ld(kind, piece, draw(paddings)))
        if draw(st.integers(0, 3)) == 0:
            fields.append(draw(noise))
    return fields


def entry_fields(draw: st.DrawFn, key: bytes, spec: Spec) -> bytes:
    """The body of a map entry: key and value fields in any order, the value in merged pieces."""
    values = [ld(2, piece, draw(paddings)) for piece in split(draw, feature_fields(draw, spec))]
    if spec[0] == 0 and draw(st.booleans()):
        values = []
    fields = list(values)
    if key or draw(st.booleans()):
        position = draw(st.integers(0, len(fields)))
        fields.insert(position, ld(1, key, draw(paddings)))
        if draw(st.integers(0, 4)) == 0:
            fields.insert(draw(st.integers(0, position)), ld(1, draw(raw_keys)))
    if draw(st.integers(0, 5)) == 0:
        fields.insert(draw(st.integers(0, len(fields))), draw(unknown_field(3)))
    return b"".join(fields)


def map_fields(draw: st.DrawFn, entries: list[bytes]) -> bytes:
    """A Features or FeatureLists body: the entries as field 1, among unknown fields."""
    fields: list[bytes] = []
    for entry in entries:
        if draw(st.integers(0, 4)) == 0:
            fields.append(draw(unknown_field(2)))
        fields.append(ld(1, entry, draw(paddings)))
    return b"".join(fields)


@st.composite
def hand_made_examples(draw: st.DrawFn) -> bytes:
    features = draw(st.dictionaries(raw_keys, specs, max_size=6))
    entries: list[bytes] = []
    for key, spec in features.items():
        if draw(st.integers(0, 3)) == 0:
            entries.append(entry_fields(draw, key, draw(specs)))
        entries.append(entry_fields(draw, key, spec))
    outer = [draw(unknown_field(2)) for _ in range(draw(st.integers(0, 1)))]
    for piece in split(draw, [map_fields(draw, [entry]) for entry in entries]):
        outer.append(ld(1, piece, draw(paddings)))
        if draw(st.integers(0, 3)) == 0:
            outer.append(draw(unknown_field(2)))
    return b"".join(outer)


@st.composite
def hand_made_sequence_examples(draw: st.DrawFn) -> bytes:
    context = draw(st.dictionaries(raw_keys, specs, max_size=3))
    lists = draw(st.dictionaries(raw_keys, st.lists(specs, max_size=3), max_size=3))
    context_entries = [entry_fields(draw, key, spec) for key, spec in context.items()]
    list_entries: list[bytes] = []
    for key, steps in lists.items():
        steps_fields = [ld(1, b"".join(feature_fields(draw, spec))) for spec in steps]
        values = [ld(2, piece) for piece in split(draw, steps_fields)]
        fields = [ld(1, key), *values]
        if draw(st.booleans()):
            fields.reverse()
        list_entries.append(b"".join(fields))
    parts = [ld(1, map_fields(draw, context_entries)), ld(2, map_fields(draw, list_entries))]
    if draw(st.booleans()):
        parts.reverse()
    if draw(st.integers(0, 3)) == 0:
        parts.insert(1, draw(unknown_field(3)))
    return b"".join(parts)


LIST_NAMES = ("bytes_list", "float_list", "int64_list")


def pb_features(features: dict[str, Spec]) -> Any:
    message = proto.Features()
    for key, (kind, values) in features.items():
        feature = message.feature[key]
        if kind:
            kind_list = getattr(feature, LIST_NAMES[kind - 1])
            kind_list.SetInParent()
            kind_list.value.extend(values)
    return message


@st.composite
def protobuf_examples(draw: st.DrawFn) -> bytes:
    features = draw(st.dictionaries(text_keys, specs, max_size=6))
    message = proto.Example(features=pb_features(features))
    return bytes(message.SerializeToString(deterministic=draw(st.booleans())))


@st.composite
def protobuf_sequence_examples(draw: st.DrawFn) -> bytes:
    message = proto.SequenceExample(context=pb_features(draw(st.dictionaries(text_keys, specs))))
    for key, steps in draw(st.dictionaries(text_keys, st.lists(specs, max_size=3))).items():
        feature_list = message.feature_lists.feature_list[key]
        feature_list.SetInParent()
        for step in steps:
            feature_list.feature.add().CopyFrom(pb_features({"": step}).feature[""])
    return bytes(message.SerializeToString())


# --- the build -------------------------------------------------------------------------------


def test_packed_run_threshold_matches_varint(sp: accel.Speedups) -> None:
    """Error messages of packed runs depend on their length; C and Python split at one place."""
    assert sp.SMALL_DECODE_BYTES == varint.SMALL_DECODE_BYTES


def test_accel_selects_the_extension_unless_pure_python_is_forced(
    sp: accel.Speedups, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(accel.PURE_PYTHON_VARIABLE, raising=False)
    assert accel.load_speedups() is sp
    monkeypatch.setenv(accel.PURE_PYTHON_VARIABLE, "0")
    assert accel.load_speedups() is sp
    monkeypatch.setenv(accel.PURE_PYTHON_VARIABLE, "1")
    assert accel.load_speedups() is None


def test_accel_without_the_extension_is_pure_python_and_says_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(accel.PURE_PYTHON_VARIABLE, raising=False)
    monkeypatch.setitem(sys.modules, "codegen._speedups", None)  # import raises ImportError
    with pytest.warns(accel.AcceleratorWarning, match=r"pure-Python path.*build_ext --inplace"):
        assert accel.load_speedups() is None


@pytest.mark.parametrize(
    ("code", "environment", "warned", "status"),
    [
        ("", {}, False, "C accelerator: active"),
        ("sys.modules['codegen._speedups'] = None; ", {}, True, "C accelerator: not available"),
        (
            "sys.modules['codegen._speedups'] = None; ",
            {accel.PURE_PYTHON_VARIABLE: "1"},
            False,
            "C accelerator: off (TFR_GEN_PURE_PYTHON=1)",
        ),
    ],
)
def test_a_missing_accelerator_is_reported_once_and_by_the_version(
    sp: accel.Speedups, code: str, environment: dict[str, str], warned: bool, status: str
) -> None:
    env = {k: v for k, v in os.environ.items() if k != accel.PURE_PYTHON_VARIABLE} | environment
    program = (
        f"import sys; {code}import codegen.runtime, codegen.runtime.accel as a; "
        "import codegen.runtime.codec.wire; print(a.status())"
    )
    proc = subprocess.run(
        [*PYTHON, "-c", program], capture_output=True, text=True, env=env, check=True
    )
    assert proc.stdout.startswith(status)
    assert proc.stderr.count("AcceleratorWarning") == (1 if warned else 0), proc.stderr
    version = subprocess.run(
        [*PYTHON, "-c", f"import sys; {code}from codegen.cli import main; main(['--version'])"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert version.returncode == 0 and version.stderr.count("AcceleratorWarning") <= 1
    assert version.stdout.startswith("tfr-gen ") and f"({status}" in version.stdout


def test_an_unbuilt_checkout_is_pure_python_and_says_so(tmp_path: Path) -> None:
    """A checkout without the built extension, first on ``sys.path``, imports its C sources
    directory as ``codegen._speedups`` (a namespace package): the runtime runs pure Python."""
    shutil.copytree(
        ROOT / "codegen", tmp_path / "codegen", ignore=shutil.ignore_patterns("*.so", "*.pyd")
    )
    check = (
        "import codegen._speedups as sources, codegen.runtime.accel as accel; "
        "assert sources.__file__ is None, sources; "
        "assert accel.speedups is None, accel.speedups; "
        "print(accel.__file__); print(accel.status())"
    )
    env = {k: v for k, v in os.environ.items() if k != accel.PURE_PYTHON_VARIABLE}
    done = subprocess.run(
        [sys.executable, "-c", check], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    where, status = done.stdout.splitlines()
    assert where == str(tmp_path / "codegen" / "runtime" / "accel.py")
    sources = tmp_path / "codegen" / "_speedups"
    assert status.startswith(f"C accelerator: not available ({sources} holds only its C sources")
    assert done.stderr.count("AcceleratorWarning") == 1, done.stderr


# --- valid encodings --------------------------------------------------------------------------


@SETTINGS
@given(st.one_of(protobuf_examples(), hand_made_examples()))
def test_examples_parse_and_decode_like_python(sp: accel.Speedups, data: bytes) -> None:
    assert_bodies_same(sp, data)


@SETTINGS
@given(st.one_of(protobuf_sequence_examples(), hand_made_sequence_examples()))
def test_sequence_examples_parse_like_python(sp: accel.Speedups, data: bytes) -> None:
    assert c_sequence(sp, data) == py_sequence(data)
    try:
        context, lists = wire.PURE_PYTHON.parse_sequence_example(data)
    except RecordError:
        return
    bodies = [body for _, body in context.values()]
    bodies += [body for steps in lists.values() for _, body in steps]
    for body in bodies:
        assert c_lists(sp, body) == py_lists(body)


@SETTINGS
@given(hand_made_examples())
def test_hand_made_examples_read_like_protobuf(sp: accel.Speedups, data: bytes) -> None:
    """Cross-check with protobuf itself where it keeps every map entry."""
    try:
        message = proto.Example.FromString(data)
    except Exception:
        assert c_example(sp, data)[0] == "error"
        return
    if any(field.field_number == 1 for field in _unknown(message.features)):
        return  # upb keeps an entry with unknown fields as an unknown field
    parsed = sp.parse_example(data)
    for key, feature in message.features.feature.items():
        kind, body = parsed[key.encode()]
        which = feature.WhichOneof("kind")
        if which is None and kind != 0:
            continue  # an earlier entry with a list stays, as in TensorFlow (wire.parse_example)
        assert kind == (0 if which is None else LIST_NAMES.index(which) + 1)
        if kind == 3:
            values = np.frombuffer(memoryview(sp.decode_int64_values(body)), "<i8").tolist()
            assert values == list(feature.int64_list.value)
        elif kind == 2:
            expected = np.array(feature.float_list.value, "<f4").tobytes()
            assert bytes(sp.decode_float_values(body)) == expected
        elif kind == 1:
            assert sp.decode_bytes_values(body) == list(feature.bytes_list.value)
    assert len(parsed) == len(message.features.feature)


def _unknown(message: Any) -> Any:
    from google.protobuf import unknown_fields

    return unknown_fields.UnknownFieldSet(message)


def test_decoded_buffers_are_writable_numpy_arrays(sp: accel.Speedups) -> None:
    body = bytes(proto.Int64List(value=[1, -2, 300]).SerializeToString())
    ints = np.frombuffer(memoryview(sp.decode_int64_values(body)), "<i8")
    ints[0] = 7
    assert ints.flags.writeable and ints.tolist() == [7, -2, 300]
    floats = np.frombuffer(
        memoryview(sp.decode_float_values(ld(1, np.array([0.5], "<f4").tobytes()))), "<f4"
    )
    floats[0] += 1
    assert floats.tolist() == [1.5]
    assert sp.decode_int64_values(b"") == bytearray() and sp.decode_bytes_values(b"") == []


def test_inputs_may_be_any_bytes_like_object(sp: accel.Speedups) -> None:
    data = bytes(proto.Example(features=pb_features({"k": (3, [5])})).SerializeToString())
    assert (
        sp.parse_example(bytearray(data))
        == sp.parse_example(memoryview(data))
        == {b"k": (3, b"\x0a\x01\x05")}
    )
    assert bytes(sp.decode_int64_values(memoryview(b"\x0a\x01\x05"))) == bytes(np.array([5], "<i8"))
    with pytest.raises(TypeError):
        sp.parse_example("text")  # type: ignore[arg-type]


# --- malformed encodings ---------------------------------------------------------------------

GOOD_ENTRY = ld(1, ld(1, b"k") + ld(2, ld(3, ld(1, b"\x01"))))

MALFORMED = {
    "truncated tag": b"\x80",
    "truncated varint": b"\x08\x80",
    "varint longer than 10 bytes": b"\x08" + b"\xff" * 10 + b"\x01",
    "varint of 10 continuation bytes at the end": b"\x08" + b"\xff" * 10,
    "tag longer than 32 bits": b"\x88\x80\x80\x80\x70\x01",
    "tag of six bytes": b"\x88\x80\x80\x80\x80\x00\x01",
    "field number 0": b"\x00\x01",
    "field number 0 in a long tag": b"\x80\x00",
    "length past the end": b"\x0a\x05\x0a\x00",
    "huge length": b"\x12\x80\x80\x80\x80\x80\x80\x80\x80\x10",
    "largest length": b"\x12" + b"\xff" * 9 + b"\x01",
    "wire type 6": b"\x0e",
    "wire type 7": b"\x08\x01\x0f",
    "unmatched end group": b"\x0c",
    "mismatched end group": b"\x0b\x14",
    "unclosed group": b"\x0b\x08\x01",
    "unclosed nested group": b"\x0b\x13\x1b\x08\x01",
    "truncated fixed64": b"\x09" + bytes(7),
    "truncated fixed32": b"\x0d" + bytes(3),
    "end group in features": ld(1, GOOD_ENTRY + b"\x0c"),
    "entry past features": ld(1, GOOD_ENTRY[:-1]) + GOOD_ENTRY[-1:],
    "truncated entry length": b"\x0a\x02\x0a\x80",
    "entry with a three-byte length": ld(1, b"\x0a\x85\x80\x00" + ld(1, b"k") + b"\x12\x00"),
    "bad key": ld(1, ld(1, ld(1, b"\xff\xfe") + ld(2, b""))),
    "truncated key": ld(1, ld(1, ld(1, b"a\xe2\x82") + ld(2, b""))),
    "surrogate key": ld(1, ld(1, ld(1, b"\xed\xa0\x80") + ld(2, b""))),
    "bad second key": ld(1, ld(1, ld(1, b"\xc3") + ld(1, b"k"))),
    "bad key after the value": ld(1, ld(1, ld(2, ld(3, b"\x0a\x05")) + ld(1, b"\x80"))),
    "feature past entry": ld(1, ld(1, ld(1, b"k") + b"\x12\x05\x1a\x00")),
    "bad field in feature": ld(1, ld(1, ld(1, b"k") + ld(2, b"\x1a\x00\x0f"))),
    "malformed list replaced by a later kind": ld(
        1, ld(1, ld(1, b"k") + ld(2, ld(3, b"\x0a\x05\x01") + ld(2, b"")))
    ),
    "malformed floats replaced": ld(
        1, ld(1, ld(1, b"k") + ld(2, ld(2, ld(1, b"abc")) + ld(1, b"")))
    ),
    "malformed bytes replaced": ld(1, ld(1, ld(1, b"k") + ld(2, ld(1, b"\x0b") + ld(3, b"")))),
    "replaced twice": ld(1, ld(1, ld(1, b"k") + ld(2, ld(3, b"") + ld(2, b"\x0d") + ld(1, b"")))),
    "replaced across value pieces": ld(
        1, ld(1, ld(1, b"k") + ld(2, ld(3, b"\x08")) + ld(2, ld(3, b"\x01") + ld(1, b"")))
    ),
    "group split across merged lists": ld(
        1, ld(1, ld(1, b"k") + ld(2, ld(3, b"\x0b") + ld(3, b"\x0c")))
    ),
    "bad merged list after a good one": ld(
        1, ld(1, ld(1, b"k") + ld(2, ld(3, b"\x08\x01")) + ld(2, ld(3, b"\x0f")))
    ),
    "long packed run truncated": ld(1, b"\x01" * 20 + b"\x80\x80"),
    "long packed run ends in 10 continuation bytes": ld(1, b"\x01" * 20 + b"\xff" * 10),
    "long packed run ends in 11 continuation bytes": ld(1, b"\x01" * 20 + b"\xff" * 11),
    "long packed run with an 11-byte varint": ld(1, b"\x01" * 20 + b"\xff" * 10 + b"\x01"),
    "long packed run with an 11-byte varint and a truncated end": ld(
        1, b"\xff" * 10 + b"\x01" + b"\x02" * 10 + b"\x80"
    ),
    "short packed run truncated": ld(1, b"\x01\x80"),
    "short packed run ends in 10 continuation bytes": ld(1, b"\xff" * 10),
    "packed floats not a multiple of 4": ld(1, bytes(7)),
    "packed floats in chunks": ld(1, bytes(4)) + ld(1, bytes(5)),
    "bytes length past the end": b"\x0a\x05abc",
    "bytes long length past the end": b"\x0a\x80\x01abc",
    "sequence feature list past the end": ld(2, ld(1, ld(1, b"s") + ld(2, b"\x0a\x05"))),
    "sequence context end group": ld(1, b"\x0c"),
    "sequence bad list key": ld(2, ld(1, ld(1, b"\x80"))),
    "sequence bad step": ld(2, ld(1, ld(1, b"s") + ld(2, ld(1, ld(3, b"\x0f") + ld(1, b""))))),
    "malformed list of a replaced duplicate key": ld(
        1, ld(1, ld(1, b"k") + ld(2, ld(1, b"\x0a\x09"))) + ld(1, ld(1, b"k") + ld(2, b""))
    ),
    "malformed merged list of a duplicate key": ld(
        1,
        ld(1, ld(1, b"k") + ld(2, ld(3, b"\x08")) + ld(2, ld(3, b"\x01")))
        + ld(1, ld(1, b"k") + ld(2, ld(2, b""))),
    ),
    "malformed list of a duplicate key in the context": ld(
        1, ld(1, ld(1, b"k") + ld(2, ld(2, b"\x0d"))) + ld(1, ld(1, b"k"))
    ),
    "malformed step of a replaced feature list": ld(
        2, ld(1, ld(1, b"s") + ld(2, ld(1, ld(1, b"\x0a\x03\x00")))) + ld(1, ld(1, b"s"))
    ),
}


@pytest.mark.parametrize("case", MALFORMED, ids=str)
def test_malformed_bytes_raise_the_same_errors(sp: accel.Speedups, case: str) -> None:
    data = MALFORMED[case]
    python = [py_example(data), py_sequence(data), *py_lists(data)]
    assert any(kind == "error" for kind, _ in python), "the case should be malformed somewhere"
    assert [c_example(sp, data), c_sequence(sp, data), *c_lists(sp, data)] == python


LISTED = ld(2, ld(3, ld(1, b"\x05")))
"""A map-entry value field: a Feature holding an Int64List of [5]."""

REPEATED_KEYS = {
    "kindless after a list": ld(1, ld(1, ld(1, b"k") + LISTED) + ld(1, ld(1, b"k") + ld(2, b""))),
    "no value after a list": ld(1, ld(1, ld(1, b"k") + LISTED)) + ld(1, ld(1, ld(1, b"k"))),
    "list after a kindless one": ld(1, ld(1, ld(1, b"k")) + ld(1, ld(1, b"k") + LISTED)),
    "list, kindless, list": ld(
        1,
        ld(1, ld(1, b"k") + LISTED)
        + ld(1, ld(1, b"k"))
        + ld(1, ld(1, b"k") + ld(2, ld(1, ld(1, b"x")))),
    ),
    "empty list after a list": ld(
        1, ld(1, ld(1, b"k") + LISTED) + ld(1, ld(1, b"k") + ld(2, ld(2, b"")))
    ),
    "non-canonical kindless after a list": ld(
        1, ld(1, ld(1, b"k") + LISTED) + ld(1, ld(2, b"\x20\x01") + ld(1, b"k"))
    ),
    "empty feature list after one with steps": ld(
        2, ld(1, ld(1, b"s") + ld(2, ld(1, LISTED[2:]))) + ld(1, ld(1, b"s"))
    ),
}
"""Repeated keys, where an Example keeps an earlier entry with a list over a kindless one."""


def test_repeated_keys_that_were_not_requested_are_checked_like_python(sp: accel.Speedups) -> None:
    """scan_batch reads every entry as parse_example does, a key it was not asked for too: the
    earlier entry of a repeated key is checked (here a malformed BytesList), in any number of
    other keys (the table that remembers them grows) and with merged list bodies."""
    malformed = ld(1, ld(1, b"u") + ld(2, ld(1, b"\x00\x01")))
    again = ld(1, ld(1, b"u") + ld(2, ld(1, ld(1, b"ok"))))
    merged = ld(1, ld(1, b"m") + ld(2, ld(1, ld(1, b"a"))) + ld(2, ld(1, ld(1, b"b"))))
    many = b"".join(ld(1, ld(1, b"x%d" % i) + LISTED) for i in range(100))
    good = ld(1, merged + many + merged + ld(1, ld(1, b"k") + LISTED) + many)
    bad = ld(1, merged + many + malformed + again)
    for records in ([good, good], [good, bad, good], [bad]):
        for keys in ((b"k",), (b"k", b"u"), ()):
            assert scan_c(sp, records, keys) == scan_reference(sp, records, keys)
    assert "earlier entry of key b'u' is malformed" in str(scan_c(sp, [good, bad], (b"k",))[1])


@pytest.mark.parametrize("case", REPEATED_KEYS, ids=str)
def test_repeated_keys_resolve_like_python(sp: accel.Speedups, case: str) -> None:
    data = REPEATED_KEYS[case]
    assert c_example(sp, data) == py_example(data)
    assert c_sequence(sp, data) == py_sequence(data)
    records = [data, ld(1, ld(1, ld(1, b"k"))), data]
    assert scan_c(sp, records, (b"k", b"s")) == scan_reference(sp, records, (b"k", b"s"))


@SETTINGS
@given(st.lists(st.sampled_from([0x00, 0x01, 0x7F, 0x80, 0x81, 0xFF]), max_size=40))
def test_packed_int64_runs_of_any_shape(sp: accel.Speedups, run: list[int]) -> None:
    body = ld(1, bytes(run))
    assert c_lists(sp, body) == py_lists(body)
    assert c_lists(sp, b"\x08\x01" + body) == py_lists(b"\x08\x01" + body)


@pytest.mark.parametrize(
    "groups",
    [
        b"\x0b" * 3000 + b"\x0c" * 3000,
        b"\x0b" * 3000 + b"\x0c" * 2999,
        b"\x0b" * 3000 + b"\x14" + b"\x0c" * 2999,
        b"\x0b\x13" * 1500 + b"\x14\x0c" * 1499 + b"\x0c",
    ],
    ids=["closed", "unclosed", "mismatched", "alternating, mismatched last"],
)
def test_deeply_nested_unknown_groups(sp: accel.Speedups, groups: bytes) -> None:
    data = ld(1, GOOD_ENTRY + tag(9, 3) + groups + tag(9, 4)) + groups
    assert c_example(sp, data) == py_example(data)
    assert c_lists(sp, groups) == py_lists(groups)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=100))
def test_random_bytes(sp: accel.Speedups, data: bytes) -> None:
    assert_same(sp, data)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated(st.one_of(hand_made_examples(), hand_made_sequence_examples(), protobuf_examples())))
def test_mutated_encodings(sp: accel.Speedups, data: bytes) -> None:
    assert_bodies_same(sp, data)


# --- encode_int64_packed -------------------------------------------------------------------


@SETTINGS
@given(int_values)
def test_encode_int64_packed_equals_protobuf(sp: accel.Speedups, values: list[int]) -> None:
    array = np.array(values, dtype=np.int64)
    body = bytes(proto.Int64List(value=values).SerializeToString())
    payload = body[varint.read_varint(body, 1, len(body), "Int64List")[1] :] if values else b""
    assert body == (ld(1, payload) if values else b"")
    assert sp.encode_int64_packed(array) == payload
    assert sp.encode_int64_packed(array.data) == payload
    assert sp.encode_int64_packed(array) == varint.PURE_PYTHON_ENCODE_PACKED_INT64(array)


def test_encode_int64_packed_takes_any_shape_in_c_order(sp: accel.Speedups) -> None:
    matrix = np.array([[1, -1], [300, INT64_MIN]], dtype=np.int64)
    expected = b"".join(wire.encode_varint(v) for v in (1, -1, 300, INT64_MIN))
    assert sp.encode_int64_packed(matrix) == expected
    assert sp.encode_int64_packed(np.array([], dtype=np.int64)) == b""
    assert len(sp.encode_int64_packed(np.array([-1], dtype=np.int64))) == 10


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (np.array([1.0]), "got format 'd' with 8-byte items"),
        (np.array([1], dtype=np.int32), "got format 'i' with 4-byte items"),
        (np.array([1], dtype=np.uint64), "got format 'L' with 8-byte items"),
        (np.array([1], dtype=">i8"), "got format '>q'"),
        (np.arange(4, dtype=np.int64)[::2], "got a non-contiguous numpy.ndarray"),
        (b"12345678", "got format 'B' with 1-byte items"),
    ],
    ids=["float64", "int32", "uint64", "big-endian", "strided", "bytes"],
)
def test_encode_int64_packed_rejects_other_buffers(
    sp: accel.Speedups, values: object, message: str
) -> None:
    with pytest.raises(RecordError, match="encode_int64_packed: expected a C-contiguous buffer"):
        sp.encode_int64_packed(values)
    with pytest.raises(RecordError) as info:
        sp.encode_int64_packed(values)
    assert message in str(info.value)


# --- scan_batch -------------------------------------------------------------------------------

ScanResult = list[tuple[bytes, bytes, bytes, bytes, list[bytes]]]


def scan_reference(
    sp: accel.Speedups, records: Sequence[bytes], keys: tuple[bytes, ...]
) -> Outcome:
    """What scan_batch gives, by parsing and decoding each record with the Python functions."""
    kinds: list[list[int]] = [[] for _ in keys]
    counts: list[list[int]] = [[] for _ in keys]
    ints: list[list[bytes]] = [[] for _ in keys]
    floats: list[list[bytes]] = [[] for _ in keys]
    strings: list[list[bytes]] = [[] for _ in keys]

    def run() -> ScanResult:
        for index, record in enumerate(records):
            try:
                features = wire.PURE_PYTHON.parse_example(record)
                for j, key in enumerate(keys):
                    kind, body = features.get(key, (sp.ABSENT, b""))
                    count = 0
                    if kind == 3:
                        array = wire.PURE_PYTHON.decode_int64_list(body)
                        ints[j].append(array.astype("<i8").tobytes())
                        count = array.size
                    elif kind == 2:
                        floats_array = wire.PURE_PYTHON.decode_float_list(body)
                        floats[j].append(floats_array.astype("<f4").tobytes())
                        count = floats_array.size
                    elif kind == 1:
                        values = wire.PURE_PYTHON.decode_bytes_list(body)
                        strings[j].extend(values)
                        count = len(values)
                    kinds[j].append(kind)
                    counts[j].append(count)
            except RecordError as exc:
                raise RecordError(f"record {index}: {exc}") from None
        return [
            (
                bytes(kinds[j]),
                np.array(counts[j], "<i8").tobytes(),
                b"".join(ints[j]),
                b"".join(floats[j]),
                strings[j],
            )
            for j in range(len(keys))
        ]

    return outcome(run)


def scan_c(sp: accel.Speedups, records: Sequence[bytes], keys: tuple[bytes, ...]) -> Outcome:
    def run() -> ScanResult:
        scanned: ScanResult = []
        for columns in sp.scan_batch(records, keys):
            assert [type(column) for column in columns] == [bytearray] * 2 + [sp.Block] * 2 + [list]
            kinds, counts, ints, floats, values = columns
            assert isinstance(values, list)  # not a (blob, sizes) pair: no key is joined
            assert all(type(value) is bytes for value in values)  # no key is read as text
            bytes_values = cast("list[bytes]", values)
            scanned.append((bytes(kinds), bytes(counts), bytes(ints), bytes(floats), bytes_values))
        return scanned

    return outcome(run)


SCAN_KEYS = [b"a", b"b", b"\xc3\xa9", b""]


@st.composite
def scan_records(draw: st.DrawFn) -> bytes:
    features = draw(st.dictionaries(st.sampled_from(SCAN_KEYS + [b"other"]), specs, max_size=5))
    entries = [entry_fields(draw, key, spec) for key, spec in features.items()]
    return ld(1, map_fields(draw, entries))


@SETTINGS
@given(
    st.lists(st.one_of(scan_records(), protobuf_examples()), max_size=6),
    st.lists(st.sampled_from(SCAN_KEYS + [b"missing"]), max_size=5).map(tuple),
)
def test_scan_batch_equals_decoding_each_record(
    sp: accel.Speedups, records: list[bytes], keys: tuple[bytes, ...]
) -> None:
    assert scan_c(sp, records, keys) == scan_reference(sp, records, keys)


@SETTINGS
@given(
    st.lists(st.one_of(scan_records(), protobuf_examples()), max_size=6),
    st.lists(st.sampled_from(SCAN_KEYS), max_size=3, unique=True).map(tuple),
)
def test_joined_keys_hold_the_bytes_values_one_after_another(
    sp: accel.Speedups, records: list[bytes], joined: tuple[bytes, ...]
) -> None:
    keys = tuple(SCAN_KEYS)
    plain = outcome(lambda: sp.scan_batch(records, keys))
    if plain[0] != "ok":  # a malformed record: the same error either way
        assert outcome(lambda: sp.scan_batch(records, keys, joined)) == plain
        return
    columns = sp.scan_batch(records, keys, joined)
    for key, (kinds, counts, ints, floats, strings), expected in zip(
        keys, columns, cast("list[accel.ScanColumns]", plain[1]), strict=True
    ):
        assert (kinds, counts, ints, floats) == expected[:4]
        if key not in joined:
            assert strings == expected[4]
            continue
        assert isinstance(strings, tuple)
        blob, sizes = strings
        values = cast("list[bytes]", expected[4])
        assert bytes(memoryview(blob)) == b"".join(values)
        assert np.frombuffer(memoryview(sizes), "<i8").tolist() == [len(v) for v in values]
    with scanner_off():
        python = batch.scan_keys(records, keys, joined)
    for key, scan, column in zip(keys, python, columns, strict=True):
        if key in joined:
            assert isinstance(column[4], tuple) and scan.blob is not None
            assert bytes(scan.blob) == bytes(memoryview(column[4][0])) and scan.strings == []
        else:
            assert scan.blob is None and scan.strings == column[4]


ORDER_KEYS = [b"k%d" % i for i in range(70)] + [b"ab", b"ba", b"a", b"abc"]
"""More keys than scan_batch remembers the positions of (64), some of one length, some prefixes."""


@SETTINGS
@given(
    st.lists(
        st.lists(st.tuples(st.sampled_from(ORDER_KEYS), st.integers(-3, 3)), max_size=80),
        max_size=6,
    ),
    st.lists(st.sampled_from(ORDER_KEYS), max_size=8).map(tuple),
)
def test_scan_batch_finds_keys_wherever_each_record_lists_them(
    sp: accel.Speedups, entries: list[list[tuple[bytes, int]]], keys: tuple[bytes, ...]
) -> None:
    """Records listing keys in changing orders and positions, repeated or not asked for: the keys
    of one record's entries are no guide to the next one's."""
    records = [
        wire.example(
            [
                wire.map_entry(wire.key_field(k.decode()), wire.int64_feature(np.array([v])))
                for k, v in row
            ]
        )
        for row in entries
    ]
    records += records[::-1]
    assert scan_c(sp, records, keys) == scan_reference(sp, records, keys)


@contextlib.contextmanager
def scanner_off() -> Iterator[None]:
    """``batch.scan_keys`` without the accelerator."""
    with mock.patch.object(batch, "speedups", None):
        yield


@SETTINGS
@given(st.lists(mutated(scan_records()), min_size=1, max_size=3))
def test_scan_batch_reports_the_malformed_record(sp: accel.Speedups, records: list[bytes]) -> None:
    keys = tuple(SCAN_KEYS)
    assert scan_c(sp, records, keys) == scan_reference(sp, records, keys)


def found_reference(
    records: Sequence[bytes], keys: tuple[bytes, ...]
) -> tuple[dict[bytes, int], list[int]]:
    """The unrequested keys (key -> first record) and irregular records of ``records``, record by
    record with the pure-Python parser."""
    unrequested: dict[bytes, int] = {}
    irregular: list[int] = []
    for index, record in enumerate(records):
        features = wire.PURE_PYTHON.parse_example(record)
        for key in features:
            if key not in keys:
                unrequested.setdefault(key, index)
        if wire.has_other_fields(record):
            irregular.append(index)
    return unrequested, irregular


@SETTINGS
@given(
    st.lists(
        st.one_of(
            scan_records(),
            protobuf_examples(),
            protobuf_sequence_examples(),
            mutated(scan_records()),
        ),
        max_size=6,
    ),
    st.lists(st.sampled_from(SCAN_KEYS), max_size=3).map(tuple),
)
def test_scan_batch_finds_unrequested_keys_and_irregular_records(
    sp: accel.Speedups, records: list[bytes], keys: tuple[bytes, ...]
) -> None:
    unrequested: dict[bytes, int] = {b"earlier": 7}
    irregular: list[int] = []
    done = outcome(lambda: sp.scan_batch(records, keys, (), unrequested, irregular))
    assert done == scan_c(sp, records, keys)  # the columns and errors are unchanged
    if done[0] != "ok":
        return  # what was found before the malformed record is unspecified
    expected_keys, expected_irregular = found_reference(records, keys)
    assert unrequested == {b"earlier": 7, **expected_keys}
    assert irregular == expected_irregular
    python_keys: dict[bytes, int] = {b"earlier": 7}
    python_irregular: list[int] = []
    with scanner_off():
        python = outcome(
            lambda: batch.scan_keys(
                records, keys, unrequested=python_keys, irregular=python_irregular
            )
        )
    assert python[0] == "ok"
    assert (python_keys, python_irregular) == (unrequested, irregular)


def test_scan_batch_refuses_wrong_containers_for_what_it_finds(sp: accel.Speedups) -> None:
    with pytest.raises(TypeError, match="unrequested must be a dict and irregular a list"):
        sp.scan_batch([b""], (), (), [], None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="unrequested must be a dict and irregular a list"):
        sp.scan_batch([b""], (), (), None, {})  # type: ignore[arg-type]


def test_scan_batch_columns(sp: accel.Speedups) -> None:
    features: dict[str, Spec] = {"i": (3, [1, 2]), "f": (2, [0.5]), "s": (1, [b"x"])}
    first = proto.Example(features=pb_features(features))
    second = proto.Example(features=pb_features({"i": (2, [1.5]), "s": (0, [])}))
    records = (first.SerializeToString(), second.SerializeToString(), b"")
    (kinds, counts, ints, floats, strings), twice, none = sp.scan_batch(records, (b"i", b"i", b"s"))
    assert list(kinds) == [3, 2, sp.ABSENT]
    assert np.frombuffer(counts, "<i8").tolist() == [2, 1, 0]
    assert np.frombuffer(memoryview(ints), "<i8").tolist() == [1, 2]
    assert np.frombuffer(memoryview(floats), "<f4").tolist() == [1.5]
    assert strings == []
    assert twice == (kinds, counts, ints, floats, strings)
    assert list(none[0]) == [1, 0, sp.ABSENT] and none[4] == [b"x"]
    assert sp.scan_batch([], (b"i",)) == [(bytearray(), bytearray(), bytearray(), bytearray(), [])]
    assert sp.scan_batch(records, ()) == []


def test_text_keys_give_their_values_as_str_when_all_are_utf8(sp: accel.Speedups) -> None:
    texts = ["ascii", "é ü", "", "日本"]
    good = proto.Example(
        features=pb_features({"t": (1, [t.encode() for t in texts]), "b": (1, [b"\xff"])})
    )
    bad = proto.Example(features=pb_features({"t": (1, [b"ok", b"\xc3(", b"\xed\xa0\x80"])}))
    records = [good.SerializeToString(), bad.SerializeToString()]
    (*_, both), (*_, raw) = sp.scan_batch(records, (b"t", b"b"), (), None, None, (b"t",))
    assert both == [t.encode() for t in texts] + [b"ok", b"\xc3(", b"\xed\xa0\x80"]
    assert raw == [b"\xff"]  # not asked for as text
    (*_, decoded), _ = sp.scan_batch(records[:1], (b"t", b"b"), (), None, None, (b"t",))
    assert decoded == texts and all(type(t) is str for t in decoded)
    scans = batch.scan_keys(records[:1], (b"t",), (), (b"t",))
    assert scans[0].texts == texts and scans[0].strings == []


@pytest.mark.parametrize("size", [0, 1, 7, 8, 9, 15, 16, 17, 40])
def test_text_values_are_strict_utf8_wherever_a_non_ascii_byte_lies(
    sp: accel.Speedups, size: int
) -> None:
    """ASCII values are copied into str eight bytes at a time; a value with any other byte (at any
    position of a word or of the tail) is decoded as strict UTF-8, or refused with the batch."""
    plain = "".join(chr(32 + (i * 7) % 95) for i in range(size)) + "\x00"
    texts = [plain] + [plain[:at] + "é" + plain[at:] for at in range(size + 1)]
    example = proto.Example(features=pb_features({"t": (1, [t.encode() for t in texts])}))
    (*_, decoded), _ = sp.scan_batch(
        [example.SerializeToString()], (b"t", b"x"), (), None, None, (b"t",)
    )
    assert decoded == texts and all(type(t) is str for t in decoded)
    for at in range(size + 1):
        broken = plain.encode()[:at] + b"\xff" + plain.encode()[at:]
        bad = proto.Example(features=pb_features({"t": (1, [plain.encode(), broken])}))
        (*_, raw), _ = sp.scan_batch(
            [bad.SerializeToString()], (b"t", b"x"), (), None, None, (b"t",)
        )
        assert raw == [plain.encode(), broken]  # bytes: the caller refuses them


def test_scan_batch_rejects_keys_that_are_not_bytes(sp: accel.Speedups) -> None:
    with pytest.raises(TypeError, match="scan_batch: key 1 is a str, not bytes"):
        sp.scan_batch([b""], (b"a", "b"))  # type: ignore[arg-type]


# --- resources -------------------------------------------------------------------------------


def test_no_memory_is_kept_across_calls(sp: accel.Speedups) -> None:
    """Results and errors release everything they allocate (checked with tracemalloc)."""
    good = bytes(
        proto.Example(
            features=pb_features({"i": (3, list(range(300))), "f": (2, [1.0]), "é": (1, [b"x"])})
        ).SerializeToString()
    )
    merged = MALFORMED["bad merged list after a good one"]
    cases = [good, merged, *MALFORMED.values()]

    def work() -> None:
        for data in cases:
            for call in (
                sp.parse_example,
                sp.parse_sequence_example,
                sp.decode_int64_values,
                sp.decode_float_values,
                sp.decode_bytes_values,
            ):
                try:
                    call(data)
                except RecordError:
                    pass
            try:
                sp.scan_batch([good, data], (b"i", b"f", "é".encode()))
            except RecordError:
                pass
        sp.encode_int64_packed(np.arange(100, dtype=np.int64))

    work()
    references = sys.getrefcount(good)
    tracemalloc.start()
    try:
        work()
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(20):
            work()
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert after - before < 4096
    assert sys.getrefcount(good) == references
