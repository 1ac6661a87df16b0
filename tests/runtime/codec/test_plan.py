"""The compiled Example plan (``codegen.runtime.codec.plan``) against the codecs' own decoding.

Differential tests: for codecs of every kind the plan covers (every list dtype, scalars with
defaults and optional ones, fixed and leading-``None`` arrays, string lists, raw tensors with fixed
and stored shapes), the plan returns exactly what the reference decoder (``parse_example`` and each
codec) returns, or raises the same ``RecordError``: on canonical Examples, where the plan decodes
in C, and on every other encoding and on mutated bytes, where it hands the bytes to the reference.
In CI a missing extension fails these tests; elsewhere they are skipped.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codegen.dtypes import (
    BOOL,
    BYTES,
    FLOAT16,
    FLOAT32,
    FLOAT64,
    INT8,
    INT16,
    INT32,
    INT64,
    STRING,
    UINT8,
    UINT16,
    UINT32,
    UINT64,
    DType,
    Kind,
)
from codegen.errors import RecordError
from codegen.runtime.codec import plan, wire
from codegen.runtime.codec.buffer import BytesLike
from codegen.runtime.codec.features import (
    BoolScalar,
    BytesScalar,
    BytesTensor,
    Codec,
    FloatScalar,
    IntScalar,
    NumericTensor,
    TextScalar,
    TextTensor,
)
from codegen.runtime.codec.sequences import SequenceTensor
from codegen.runtime.codec.tensors import RaggedTensor, RawTensor
from support.codecs import codec_entries
from support.speedups import import_speedups

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
LIST_INTS = (INT64, INT32, INT16, INT8, UINT32, UINT16, UINT8, BOOL)


def build_codecs() -> tuple[Codec[Any], ...]:
    """Codecs of every kind the plan covers, with non-ASCII keys and every presence rule."""
    codecs: list[Codec[Any]] = [
        IntScalar("P", "age", "âge", INT64, ()),
        IntScalar("P", "small", "small", INT8, (), optional=True),
        IntScalar("P", "count", "count", UINT16, (), default=7),
        BoolScalar("P", "flag", "flag", BOOL, (), default=True),
        FloatScalar("P", "score", "score", FLOAT32, ()),
        FloatScalar("P", "weight", "weight", FLOAT32, (), default=0.5),
        TextScalar("P", "name", "name", STRING, ()),
        TextScalar("P", "nick", "nick", STRING, (), optional=True),
        BytesScalar("P", "blob", "blob", BYTES, (), default=b"none"),
        TextTensor("P", "tags", "tags", STRING, (None,)),
        BytesTensor("P", "pair", "pair", BYTES, (2,), optional=True),
        NumericTensor("P", "vec", "vec", FLOAT32, (3,)),
        NumericTensor("P", "rows", "rows", FLOAT32, (None, 2), optional=True),
        NumericTensor("P", "grid", "grid", INT64, (2, 2), default=[[1, 2], [3, 4]]),
        RawTensor("P", "image", "image", UINT8, (None, None, 3)),
        RawTensor("P", "depth", "depth", FLOAT64, (2, 2), optional=True),
        RawTensor("P", "mask", "mask", BOOL, (None,), optional=True),
        RawTensor("P", "half", "half", FLOAT16, ()),
        RawTensor("P", "big", "big", UINT64, (None,), optional=True),
    ]
    for dtype in LIST_INTS:
        codecs.append(NumericTensor("P", f"i_{dtype.name}", f"i/{dtype.name}", dtype, (None,)))
        codecs.append(NumericTensor("P", f"f_{dtype.name}", f"f/{dtype.name}", dtype, (2,)))
    return tuple(codecs)


CODECS = build_codecs()


@pytest.fixture(scope="module")
def decoders(monkeypatch_module: pytest.MonkeyPatch) -> Decoders:
    """The reference decoder of :data:`CODECS` and their plan, which counts its fallbacks."""
    monkeypatch_module.setattr(plan, "speedups", import_speedups())
    return Decoders(CODECS)


@pytest.fixture(scope="module")
def monkeypatch_module() -> Iterator[pytest.MonkeyPatch]:
    with pytest.MonkeyPatch.context() as patch:
        yield patch


class Decoders:
    """The reference decoder of ``codecs`` and their compiled plan, with a fallback counter."""

    def __init__(self, codecs: tuple[Codec[Any], ...]) -> None:
        self.codecs = codecs
        self.reference = plan.codec_decoder("P", codecs)
        self.fallbacks = 0

        def fallback(data: BytesLike) -> tuple[Any, ...]:
            self.fallbacks += 1
            return self.reference(data)

        compiled = plan.compile_plan(codecs, fallback)
        assert compiled is not None, "every codec of the test has a plan"
        self.plan = compiled

    def agree(self, data: bytes) -> bool:
        """Assert that the plan and the reference agree on ``data``; whether the plan fell back."""
        before = self.fallbacks
        assert outcome(self.plan, data) == outcome(self.reference, data)
        return self.fallbacks > before


def outcome(decode: Callable[[bytes], tuple[Any, ...]], data: bytes) -> tuple[str, object]:
    try:
        values = decode(data)
    except RecordError as exc:
        return ("error", str(exc))
    return ("ok", [exact(v) for v in values])


def exact(value: object) -> object:
    """``value`` in a form whose ``==`` is exact: types, dtypes, shapes and bits."""
    if isinstance(value, np.ndarray):
        return ("ndarray", value.dtype.str, value.shape, value.flags.writeable, value.tobytes())
    if isinstance(value, list):
        return [exact(item) for item in value]
    if isinstance(value, tuple):
        return ("tuple", [exact(item) for item in value])
    if isinstance(value, float):
        return ("float", struct.pack("<d", value))
    return (type(value).__name__, value)


def random_value(codec: Codec[Any], rng: np.random.Generator) -> object:
    """A value ``codec`` accepts, drawn from the edges of its dtype and random ones."""
    dtype, shape = codec.dtype, codec.shape
    dims = tuple(int(rng.integers(0, 4)) if d is None else d for d in shape)
    count = int(np.prod(dims, dtype=np.int64))
    items = [scalar_value(dtype, rng) for _ in range(count)]
    if not shape:
        return items[0]
    if dtype.kind in (Kind.STR, Kind.BYTES):
        return items
    return np.array(items, dtype=dtype.numpy).reshape(dims)


def scalar_value(dtype: DType, rng: np.random.Generator) -> object:
    if dtype.kind is Kind.INT:
        assert dtype.lo is not None and dtype.hi is not None
        edges = [dtype.lo, dtype.hi, 0, 1, 127, 128]
        pick = int(rng.integers(0, len(edges) + 1))
        if pick < len(edges) and dtype.lo <= edges[pick] <= dtype.hi:
            return edges[pick]
        return int(
            rng.integers(
                dtype.lo, dtype.hi, endpoint=True, dtype=np.int64 if dtype.lo < 0 else np.uint64
            )
        )
    if dtype.kind is Kind.BOOL:
        return bool(rng.integers(0, 2))
    if dtype.kind is Kind.FLOAT:
        top = {2: 65504.0, 4: 3.0e38, 8: 1.0e300}[dtype.numpy.itemsize]
        return float(rng.choice([0.0, -0.0, 1.5, -2.25, np.inf, -np.inf, np.nan, 6e-8, top]))
    text = "".join(rng.choice(list("abcé€\U0001f600 \x00")) for _ in range(int(rng.integers(0, 6))))
    return text if dtype.kind is Kind.STR else text.encode()


def encode(values: dict[str, object], extra: tuple[tuple[str, bytes], ...] = ()) -> bytes:
    """The canonical Example of ``values`` by attribute name (absent: not in it) and of the
    ``extra`` (key, Feature bytes) entries, keys sorted."""
    entries: list[tuple[bytes, bytes]] = []
    for codec in CODECS:
        if codec.name not in values:
            continue
        value = values[codec.name]
        entries.extend((key.encode(), entry) for key, entry in codec_entries(codec, value))
    for key, feature in extra:
        entries.append((key.encode(), wire.map_entry(wire.key_field(key), feature)))
    return wire.example(entry for _, entry in sorted(entries))


def feature(kind: int, body: bytes) -> bytes:
    """A Feature holding the list ``kind`` (1 bytes, 2 float, 3 int64) with ``body``."""
    return bytes([kind << 3 | 2, len(body)]) + body


def plan_reads_absent(codec: Codec[Any]) -> bool:
    """Whether the plan itself decodes ``codec``'s feature when it is absent (else: the
    reference does, giving the array default, or the error of a required feature)."""
    if codec.optional:
        return True
    if isinstance(codec, NumericTensor | TextTensor | BytesTensor) and codec.shape[0] is None:
        return True  # no rows
    return codec.default is not None and not isinstance(codec, NumericTensor)


def random_values(rng: np.random.Generator, absent: float, *, planned: bool) -> dict[str, object]:
    """Values for the codecs; each is left out with odds ``absent`` (``planned``: only those whose
    absence the plan decodes itself)."""
    out: dict[str, object] = {}
    for codec in CODECS:
        if rng.random() < absent and (plan_reads_absent(codec) or not planned):
            continue
        out[codec.name] = random_value(codec, rng)
    return out


# --- canonical Examples: decoded in C ----------------------------------------------------------


@pytest.mark.parametrize("seed", range(40))
def test_canonical_examples_decode_in_c_to_the_reference_values(
    decoders: Decoders, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    data = encode(random_values(rng, absent=0.4 if seed % 2 else 0.0, planned=True))
    assert not decoders.agree(data), "a canonical Example fell back"


def test_unknown_features_and_an_empty_example_decode_in_c(decoders: Decoders) -> None:
    values = random_values(np.random.default_rng(1), absent=0.0, planned=True)
    # Features the record does not read are passed over, whatever their lists hold.
    assert not decoders.agree(encode(values, (("zz other", feature(3, b"\x0a\x01\x05")),)))
    assert not decoders.agree(encode(values, (("aa other", feature(1, b"\x0a\x80")),)))
    only = {c.name: values[c.name] for c in CODECS if not plan_reads_absent(c)}
    assert not decoders.agree(encode(only))


def test_bytes_like_inputs_decode_like_bytes(decoders: Decoders) -> None:
    data = encode(random_values(np.random.default_rng(2), absent=0.0, planned=True))
    expected = outcome(decoders.reference, data)
    for form in (bytearray(data), memoryview(data), np.frombuffer(data, np.uint8)):
        assert outcome(decoders.plan, form) == expected  # type: ignore[arg-type]


# --- everything else: the reference decides ----------------------------------------------------

_RNG = np.random.default_rng(3)
BASE = {c.name: random_value(c, _RNG) for c in CODECS}
"""Values of every feature, for the cases below to change one feature of."""

FALLBACK_CASES: dict[str, tuple[tuple[str, bytes], ...]] = {
    # (key, Feature bytes) entries that replace or join those of BASE
    "unpacked int": (("âge", feature(3, b"\x08\x05")),),
    "two packed runs": (("i/int64", feature(3, b"\x0a\x01\x05\x0a\x01\x06")),),
    "kindless feature": (("score", b""),),
    "float list for an int": (("âge", feature(2, b"\x0a\x04\x00\x00\x80\x3f")),),
    "int8 out of range": (("small", feature(3, b"\x0a\x02\x80\x01")),),
    "uint16 array out of range": (("f/uint16", feature(3, b"\x0a\x04\x01\xff\xff\x04")),),
    "bool of 2": (("flag", feature(3, b"\x0a\x01\x02")),),
    "negative bool array": (("f/bool", feature(3, b"\x0a\x0b\x01" + b"\xff" * 9 + b"\x01")),),
    "two ints for a scalar": (("âge", feature(3, b"\x0a\x02\x01\x02")),),
    "no int for a scalar": (("âge", feature(3, b"")),),
    "wrong fixed count": (("vec", feature(2, b"\x0a\x04\x00\x00\x80\x3f")),),
    "rows not a multiple": (("rows", feature(2, b"\x0a\x04\x00\x00\x80\x3f")),),
    "empty optional fixed list": (("pair", feature(1, b"")),),
    "three strings for two": (("pair", feature(1, b"\x0a\x00\x0a\x00\x0a\x00")),),
    "invalid UTF-8": (("name", feature(1, b"\x0a\x01\xff")),),
    "invalid UTF-8 in a list": (("tags", feature(1, b"\x0a\x01a\x0a\x02\xc3\x28")),),
    "float list of 5 bytes": (("vec", feature(2, b"\x0a\x05" + bytes(5))),),
    "unfinished varint": (("i/int64", feature(3, b"\x0a\x01\x80")),),
    "11-byte varint": (("i/int64", feature(3, b"\x0a\x0b" + b"\xff" * 10 + b"\x01")),),
    "raw bool of 2": (
        ("mask", feature(1, b"\x0a\x01\x02")),
        ("mask/shape", feature(3, b"\x0a\x01\x01")),
    ),
    "raw size mismatch": (("depth", feature(1, b"\x0a\x03abc")),),
    "stored shape too short": (("image/shape", feature(3, b"\x0a\x02\x01\x01")),),
    "stored shape not declared": (("image/shape", feature(3, b"\x0a\x03\x01\x01\x04")),),
    "negative stored dim": (
        ("image/shape", feature(3, b"\x0a\x0c" + b"\xff" * 9 + b"\x01\x00\x03")),
    ),
    "shape without its raw feature": (("big/shape", feature(3, b"\x0a\x01\x00")),),
    "two raw values": (("half", feature(1, b"\x0a\x02ab\x0a\x02cd")),),
    "non-ASCII unknown key": (("ünknown", feature(3, b"\x0a\x01\x01")),),
}


def with_entries(entries: tuple[tuple[str, bytes], ...]) -> bytes:
    """:data:`BASE` with ``entries`` in place of the features (and companions) of their keys."""
    keys = {key for key, _ in entries}
    values = dict(BASE)
    for codec in CODECS:
        if codec.key in keys or any(k in keys for k in codec.companion_keys):
            values.pop(codec.name, None)
    return encode(values, entries)


@pytest.mark.parametrize("case", FALLBACK_CASES, ids=str)
def test_other_encodings_and_bad_values_fall_back_to_the_reference(
    decoders: Decoders, case: str
) -> None:
    assert decoders.agree(with_entries(FALLBACK_CASES[case]))


def test_absent_features_without_a_plain_answer_fall_back(decoders: Decoders) -> None:
    for codec in CODECS:
        if plan_reads_absent(codec):
            continue
        values = dict(BASE)
        del values[codec.name]
        assert decoders.agree(encode(values)), codec.name


def test_a_repeated_key_falls_back(decoders: Decoders) -> None:
    data = encode(BASE)
    entry = wire.map_entry(wire.key_field("âge"), feature(3, b"\x0a\x01\x09"))
    features = wire.parse_example(data)
    assert "âge".encode() in features
    # The Example's map entries are its body after the field-1 head; add a second "âge".
    head = len(wire.example([data])) - len(data)
    assert decoders.agree(wire.example([data[head:], entry]))


def mutate(original: bytes, data: st.DataObject) -> bytes:
    """``original`` with one to three random flips, cuts, insertions or a truncation."""
    encoded = bytearray(original)
    for _ in range(data.draw(st.integers(1, 3))):
        at = data.draw(st.integers(0, max(len(encoded) - 1, 0)))
        action = data.draw(st.sampled_from(["flip", "cut", "insert", "truncate"]))
        if action == "flip" and encoded:
            encoded[at] ^= 1 << data.draw(st.integers(0, 7))
        elif action == "cut":
            del encoded[at : at + data.draw(st.integers(1, 8))]
        elif action == "insert":
            encoded[at:at] = data.draw(st.binary(min_size=1, max_size=8))
        else:
            del encoded[at:]
    return bytes(encoded)


@SETTINGS
@given(st.data())
def test_mutated_examples_decode_like_the_reference(
    decoders: Decoders, data: st.DataObject
) -> None:
    seed = data.draw(st.integers(0, 2**32 - 1))
    decoders.agree(
        mutate(encode(random_values(np.random.default_rng(seed), 0.3, planned=False)), data)
    )


def test_records_without_a_plan_decode_through_their_codecs() -> None:
    ragged = RaggedTensor[np.int64]("P", "r", "r", INT64, (None, None))
    assert plan.compile_plan((ragged,), plan.codec_decoder("P", (ragged,))) is None
    nested = TextTensor("P", "t", "t", STRING, (None, 2))
    decoder = plan.example_decoder("P", (nested,))
    data = wire.example([nested.entry([["a", "b"]])])
    assert decoder(data) == ([["a", "b"]],)


# --- SequenceExamples --------------------------------------------------------------------------

CONTEXT: tuple[Codec[Any], ...] = (
    IntScalar("S", "length", "length", INT64, ()),
    TextScalar("S", "source", "source", STRING, (), optional=True),
    NumericTensor("S", "frame", "frame", FLOAT32, (2,)),
)
STEPS: tuple[SequenceTensor[Any], ...] = (
    SequenceTensor("S", "tokens", "tokens", INT64, ()),
    SequenceTensor("S", "labels", "length", INT8, (), optional=True),  # also a context key
    SequenceTensor("S", "flags", "flags", BOOL, (2,), optional=True),
    SequenceTensor("S", "vecs", "vecs", FLOAT32, (3,)),
    SequenceTensor("S", "wide", "wide", UINT32, (1,)),
)


@pytest.fixture(scope="module")
def sequence_decoders(decoders: Decoders) -> SequenceDecoders:
    """The reference decoder of :data:`CONTEXT` and :data:`STEPS` and their counting plan (the
    ``decoders`` fixture has put the extension in place)."""
    return SequenceDecoders()


class SequenceDecoders(Decoders):
    """:class:`Decoders` of a SequenceExample record."""

    def __init__(self) -> None:
        self.reference = plan.codec_decoder("S", CONTEXT, STEPS)
        self.fallbacks = 0

        def fallback(data: BytesLike) -> tuple[Any, ...]:
            self.fallbacks += 1
            return self.reference(data)

        compiled = plan.compile_plan(CONTEXT, fallback, STEPS)
        assert compiled is not None, "every codec of the test has a plan"
        self.plan = compiled


def sequence_bytes(
    rng: np.random.Generator, *, absent: float, steps: tuple[int, int] = (0, 6)
) -> bytes:
    """A canonical SequenceExample of random values, each feature list of ``steps[0]`` up to
    ``steps[1]`` steps; optional feature lists are left out with odds ``absent``."""
    context = [(c.key.encode(), c.entry(random_value(c, rng))) for c in CONTEXT]
    lists = []
    for codec in STEPS:
        if codec.optional and rng.random() < absent:
            continue
        row = tuple(d for d in codec.shape if d is not None)
        count = int(rng.integers(*steps)) * int(np.prod(row, dtype=np.int64))
        items = [scalar_value(codec.dtype, rng) for _ in range(count)]
        value = np.array(items, dtype=codec.dtype.numpy).reshape(-1, *row)
        lists.append((codec.key.encode(), codec.entry(value)))
    return wire.sequence_example(
        (entry for _, entry in sorted(context)), (entry for _, entry in sorted(lists))
    )


@pytest.mark.parametrize("seed", range(30))
def test_canonical_sequence_examples_decode_in_c_to_the_reference_values(
    sequence_decoders: SequenceDecoders, seed: int
) -> None:
    data = sequence_bytes(np.random.default_rng(seed), absent=0.5)
    assert not sequence_decoders.agree(data), "a canonical SequenceExample fell back"


@pytest.mark.parametrize("seed", range(4))
def test_long_feature_lists_decode_in_c_to_the_reference_values(
    sequence_decoders: SequenceDecoders, seed: int
) -> None:
    """Feature lists whose values do not fit the plan's scratch buffer on the stack (4 KiB)."""
    data = sequence_bytes(np.random.default_rng(seed), absent=0.0, steps=(600, 700))
    assert not sequence_decoders.agree(data), "a canonical SequenceExample fell back"


def rebuild(data: bytes, replaced: dict[bytes, list[tuple[int, bytes]] | None]) -> bytes:
    """The SequenceExample ``data`` with the feature lists of ``replaced`` (key: steps as (list
    kind, list body), ``None`` to leave the key out) in place of its own."""
    context, lists = wire.parse_sequence_example(data)
    context_entries = [
        wire.map_entry(wire.key_field(key.decode()), feature(kind, body))
        for key, (kind, body) in sorted(context.items())
    ]
    merged = {**lists, **replaced}
    list_entries = [
        wire.feature_list_entry(wire.key_field(key.decode()), [feature(k, b) for k, b in steps])
        for key, steps in sorted(merged.items())
        if steps is not None
    ]
    return wire.sequence_example(context_entries, list_entries)


SEQUENCE_CASES: dict[str, dict[bytes, list[tuple[int, bytes]] | None]] = {
    "kindless step": {b"tokens": [(3, b"\x0a\x01\x01"), (0, b"")]},
    "float step in an int list": {b"tokens": [(2, b"\x0a\x04\x00\x00\x00\x00")]},
    "two values in a scalar step": {b"tokens": [(3, b"\x0a\x02\x01\x02")]},
    "unpacked step": {b"tokens": [(3, b"\x08\x01")]},
    "unfinished varint": {b"tokens": [(3, b"\x0a\x01\x80")]},
    "a varint of eleven bytes": {b"tokens": [(3, b"\x0a\x0b" + b"\xff" * 10 + b"\x01")]},
    "a second step with two values": {b"tokens": [(3, b"\x0a\x01\x01"), (3, b"\x0a\x02\x01\x02")]},
    "a long list, then a step with no value": {
        b"tokens": [(3, b"\x0a\x01\x05")] * 900 + [(3, b"\x0a\x00")]
    },
    "int8 out of range": {b"length": [(3, b"\x0a\x02\x80\x01")]},
    "a short float step": {b"vecs": [(2, b"\x0a\x08" + bytes(8))]},
    "required list missing": {b"tokens": None},
}


def test_canonical_rebuilt_sequence_examples_decode_in_c(
    sequence_decoders: SequenceDecoders,
) -> None:
    assert not sequence_decoders.agree(
        rebuild(sequence_bytes(np.random.default_rng(7), absent=0.0), {})
    )


@pytest.mark.parametrize("case", SEQUENCE_CASES, ids=str)
def test_other_feature_lists_fall_back_to_the_reference(
    sequence_decoders: SequenceDecoders, case: str
) -> None:
    data = sequence_bytes(np.random.default_rng(7), absent=0.0)
    assert sequence_decoders.agree(rebuild(data, SEQUENCE_CASES[case]))


@SETTINGS
@given(st.data())
def test_mutated_sequence_examples_decode_like_the_reference(
    sequence_decoders: SequenceDecoders, data: st.DataObject
) -> None:
    seed = data.draw(st.integers(0, 2**32 - 1))
    sequence_decoders.agree(mutate(sequence_bytes(np.random.default_rng(seed), absent=0.3), data))


def test_a_context_feature_without_a_list_holds_no_values() -> None:
    """TensorFlow reads a ``SequenceExample`` context ``Feature`` without a list as a list of no
    values, so a feature with a default refuses it; in an ``Example`` the feature is absent and
    the default applies. Absent from the context, the default applies too."""
    count = IntScalar("R", "n", "n", INT64, (), default=7)
    steps = SequenceTensor[np.int64]("R", "s", "s", INT64, ())
    kindless = wire.map_entry(wire.key_field("n"), b"")
    lists = [steps.entry(np.array([1, 2], np.int64))]
    for sequence in (
        plan.example_decoder("R", (count,), (steps,)),
        plan.codec_decoder("R", (count,), (steps,)),
    ):
        with pytest.raises(
            RecordError, match=r"^R\.n \(key 'n'\): expected 1 int64_list value, found 0$"
        ):
            sequence(wire.sequence_example([kindless], lists))
        assert sequence(wire.sequence_example([], lists))[0] == 7
    for example in (plan.example_decoder("R", (count,)), plan.codec_decoder("R", (count,))):
        assert example(wire.example([kindless])) == (7,)


# --- batches of SequenceExamples: one call ------------------------------------------------------


def batch_agrees(sequence_decoders: SequenceDecoders, records: list[bytes], batch: Any) -> bool:
    """Assert that ``plan.batch(batch)`` (``batch``: ``records`` as bytes, views or Spans) gives
    what the plan gives each record, feature lists joined; whether it declined (``None``), which it
    does exactly when the plan hands one of the records to its fallback."""
    before = sequence_decoders.fallbacks
    each = []
    for data in records:
        try:
            each.append(sequence_decoders.plan(data))
        except RecordError:  # the fallback's error
            pass
    fell_back = sequence_decoders.fallbacks > before
    parts = sequence_decoders.plan.batch(batch)
    if parts is None:
        assert fell_back, "the batch declined records the plan decodes"
        return False
    assert not fell_back, "the batch decoded a record the plan hands to its fallback"
    assert len(parts) == len(CONTEXT) + len(STEPS)
    for position, part in enumerate(parts):
        values = [row[position] for row in each]
        if position < len(CONTEXT):
            assert type(part) is list
            assert exact(part) == exact(values)
            continue
        joined, steps = part
        assert exact(steps) == exact(np.array([len(v) for v in values], np.int64))
        assert exact(joined) == exact(np.concatenate(values))
    return True


@pytest.mark.parametrize("seed", range(12))
def test_a_batch_of_sequence_examples_is_what_the_plan_gives_each(
    sequence_decoders: SequenceDecoders, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    count = int(rng.integers(1, 40))
    steps = (600, 700) if seed % 4 == 0 else (0, 6)  # some lists past the stack scratch
    records = [sequence_bytes(rng, absent=0.5, steps=steps) for _ in range(count)]
    assert batch_agrees(sequence_decoders, records, records)
    assert batch_agrees(sequence_decoders, records, [memoryview(r) for r in records])
    assert batch_agrees(sequence_decoders, records, [bytearray(r) for r in records])
    assert batch_agrees(sequence_decoders, records, tuple(records))


def test_a_batch_reads_spans_in_place(sequence_decoders: SequenceDecoders) -> None:
    speedups: Any = import_speedups()  # its framing functions are not in the Speedups protocol
    rng = np.random.default_rng(11)
    records = [sequence_bytes(rng, absent=0.3) for _ in range(25)]
    framed, taken = speedups.frame_records(records, 0, 1 << 30)
    assert taken == len(records)
    spans, stop = speedups.scan_spans(bytearray(framed), 0, True)
    assert stop == len(framed) and len(spans) == len(records)
    assert batch_agrees(sequence_decoders, records, spans)
    assert batch_agrees(sequence_decoders, records[3:20:2], spans[3:20:2])


def test_an_empty_batch_has_no_values(sequence_decoders: SequenceDecoders) -> None:
    """No records, and records whose lists have no steps, by a new plan (no buffers kept yet)."""
    fresh = SequenceDecoders()
    rng = np.random.default_rng(9)
    stepless = [sequence_bytes(rng, absent=0.5, steps=(0, 1)) for _ in range(5)]
    assert batch_agrees(fresh, stepless, stepless)
    parts = SequenceDecoders().plan.batch([])
    assert parts is not None
    for position, part in enumerate(parts):
        if position < len(CONTEXT):
            assert part == []
        else:
            joined, steps = part
            assert steps.shape == (0,) and steps.dtype == np.int64
            assert joined.shape == (0, *STEPS[position - len(CONTEXT)].shape)


@pytest.mark.parametrize("case", SEQUENCE_CASES, ids=str)
def test_a_batch_with_a_record_the_plan_does_not_read_declines(
    sequence_decoders: SequenceDecoders, case: str
) -> None:
    rng = np.random.default_rng(5)
    records = [sequence_bytes(rng, absent=0.0) for _ in range(6)]
    records[3] = rebuild(records[3], SEQUENCE_CASES[case])
    assert not batch_agrees(sequence_decoders, records, records)
    assert batch_agrees(sequence_decoders, records[:3], records[:3])


def test_a_batch_of_non_buffers_declines(sequence_decoders: SequenceDecoders) -> None:
    """A record that is not bytes-like goes to the per-record path, which names the problem."""
    record = sequence_bytes(np.random.default_rng(2), absent=0.0)
    assert sequence_decoders.plan.batch([record, "not bytes"]) is None  # type: ignore[list-item]
    with pytest.raises(TypeError):
        sequence_decoders.plan.batch(5)  # type: ignore[arg-type]


@SETTINGS
@given(st.data())
def test_batches_of_mutated_sequence_examples_are_what_the_plan_gives_each(
    sequence_decoders: SequenceDecoders, data: st.DataObject
) -> None:
    seed = data.draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    records = [sequence_bytes(rng, absent=0.3) for _ in range(data.draw(st.integers(2, 4)))]
    records[0] = mutate(records[0], data)
    batch_agrees(sequence_decoders, records, records)
    batch_agrees(sequence_decoders, records[1:], records[1:])


def test_batches_in_several_threads_at_once_are_each_what_the_plan_gives(
    sequence_decoders: SequenceDecoders,
) -> None:
    """The plan reads feature lists without the GIL and keeps its buffers for the next batch: a
    batch that starts while another runs makes its own, and each gets its own records' values."""
    rng = np.random.default_rng(3)
    batches = [
        [sequence_bytes(rng, absent=0.3, steps=(0, 200)) for _ in range(30)] for _ in range(4)
    ]
    expected = [exact(sequence_decoders.plan.batch(b)) for b in batches]

    def run(index: int) -> list[object]:
        return [exact(sequence_decoders.plan.batch(batches[index])) for _ in range(20)]

    with ThreadPoolExecutor(4) as pool:
        for index, results in enumerate(pool.map(run, range(4))):
            assert results == [expected[index]] * 20
