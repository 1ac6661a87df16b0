"""Generated modules agree with TensorFlow: what we encode TensorFlow parses to the same values,
what TensorFlow builds we decode to the same values, our bytes are TensorFlow's bytes, TFRecord
files travel both ways, and an Example TensorFlow refuses we refuse too, naming the feature."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from codegen.errors import RecordError
from codegen.runtime import FeatureInfo
from support.matrix import (
    EDGE_KEYS,
    KEYS,
    MATRIX_CASES,
    SCHEMA_NAMES,
    MatrixCase,
    build_example,
    build_feature,
    canon,
    edge_values,
    flat_values,
    record_canon,
    record_values,
    samples,
    tensor_form,
    tf_dtype_name,
    tf_form,
    wire_form,
)
from support.tf_values import (
    OTHER_WIRE,
    SOME_VALUE,
    TF_COMPRESSIONS,
    TF_WIRE_DTYPES,
    example_of,
    spec_of,
)

pytestmark = pytest.mark.tensorflow


Form = Callable[[FeatureInfo, object, bool], tuple[object, object]]
"""What a parse gives for one attribute value of one Example (alone, or ``batched``): (values, shape)."""


def declared_form(info: FeatureInfo, value: object, batched: bool) -> tuple[object, object]:
    """What ``tf_parse`` gives (declared dtype and shape)."""
    return tf_form(info, value, batched=batched)


def check_parsed(
    tf: Any,
    cls: Any,
    expected: list[dict[str, object]],
    examples: list[bytes],
    parse: Callable[[Any], Any],
    form: Form = declared_form,
    dtype_of: Callable[[FeatureInfo], str] = tf_dtype_name,
) -> None:
    """``parse`` gives, for each Example alone and for all as a batch, the ``expected`` attribute
    values, dtypes and shapes (by default those of ``tf_parse``: declared dtypes and shapes)."""
    batch = parse(tf.constant(examples))
    singles = [parse(tf.constant(data)) for data in examples]
    for info in spec_of(cls):
        dtype = dtype_of(info)
        column = batch[info.name]
        assert column.dtype.name == dtype, info
        if info.fixed and not info.optional:
            assert tuple(column.shape) == (len(examples), *info.shape), info
        for i, values in enumerate(expected):
            single = singles[i][info.name]
            assert single.dtype.name == dtype, info
            assert tensor_form(tf, single) == form(info, values[info.name], False), (info, i)
            assert tensor_form(tf, column, i) == form(info, values[info.name], True), (info, i)


def by_key(parsed: dict[str, Any], cls: Any) -> dict[str, Any]:
    """TensorFlow's parse result (by key) by attribute name."""
    return {info.name: parsed[info.key] for info in spec_of(cls)}


def spec_form(tf: Any, cls: Any) -> Form:
    """What TensorFlow's parse functions give under ``cls.tf_feature_spec()``, before ``tf_parse``'s
    post-processing: a ``FixedLenFeature`` the declared shape, a ``RaggedFeature`` the flat values."""
    spec = cls.tf_feature_spec()

    def form(info: FeatureInfo, value: object, batched: bool) -> tuple[object, object]:
        return wire_form(
            info, value, dense=isinstance(spec[info.key], tf.io.FixedLenFeature), batched=batched
        )

    return form


def check_parsed_by_tensorflow(
    tf: Any, cls: Any, expected: list[dict[str, object]], examples: list[bytes]
) -> None:
    """``tf_parse`` and TensorFlow's own parse functions under ``tf_feature_spec()`` agree with ``expected``."""
    check_parsed(tf, cls, expected, examples, cls.tf_parse)
    spec = cls.tf_feature_spec()

    def parse(serialized: Any) -> dict[str, Any]:
        parse_fn = tf.io.parse_example if serialized.shape.rank == 1 else tf.io.parse_single_example
        return by_key(parse_fn(serialized, spec), cls)

    check_parsed(
        tf,
        cls,
        expected,
        examples,
        parse,
        spec_form(tf, cls),
        lambda info: TF_WIRE_DTYPES[info.wire],
    )


def tf_bytes(tf: Any, record: Any) -> bytes:
    """The record built with ``tf.train.Example`` and serialized deterministically by protobuf."""
    message = build_example(tf.train, spec_of(type(record)), record_values(record))
    data: bytes = message.SerializeToString(deterministic=True)
    return data


def feature_of(tf: Any, record: Any, info: FeatureInfo) -> Any:
    """The ``tf.train.Feature`` of one attribute of a record (an empty list for ``None``)."""
    return build_feature(tf.train, info.wire, flat_values(getattr(record, info.name)) or [])


def tf_entries_in_key_order(tf: Any, record: Any) -> bytes:
    """The Example with each map entry serialized by TensorFlow's protobuf classes, in the order of
    the UTF-8 bytes of the keys (C++ protobuf's deterministic map order)."""
    infos = sorted(spec_of(type(record)), key=lambda i: i.key.encode())
    return example_of(
        tf,
        [(i.key, feature_of(tf, record, i)) for i in infos if getattr(record, i.name) is not None],
    )


def keys_prefix_free(keys: Iterable[str]) -> bool:
    """Whether no key is a proper prefix of another (upb, behind ``tf.train.Example``, orders such
    keys differently from C++ protobuf in deterministic serialization)."""
    encoded = sorted(k.encode() for k in keys)
    return not any(b.startswith(a) for a, b in zip(encoded, encoded[1:], strict=False))


# --- the schemas ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", SCHEMA_NAMES)
def test_schema_records_parse_with_tensorflow_like_ours(tf: Any, name: str) -> None:
    records = samples(name)
    for cls in dict.fromkeys(type(r) for r in records):
        ours = [r for r in records if type(r) is cls]
        check_parsed_by_tensorflow(
            tf, cls, [record_values(r) for r in ours], [r.encode() for r in ours]
        )


@pytest.mark.parametrize("name", SCHEMA_NAMES)
def test_schema_records_are_byte_identical_to_tensorflow_examples(tf: Any, name: str) -> None:
    for record in samples(name):
        data = record.encode()
        assert data == tf_entries_in_key_order(tf, record)
        assert tf.train.Example.FromString(data) == tf.train.Example.FromString(
            tf_bytes(tf, record)
        )
        if keys_prefix_free(info.key for info in spec_of(type(record))):
            assert data == tf_bytes(tf, record)


@pytest.mark.parametrize("name", SCHEMA_NAMES)
def test_tensorflow_examples_decode_to_the_same_records(tf: Any, name: str) -> None:
    for record in samples(name):
        cls = type(record)
        message = build_example(tf.train, spec_of(cls), record_values(record))
        assert record_canon(cls.decode(message.SerializeToString())) == record_canon(record)
        assert record_canon(cls.from_proto(message)) == record_canon(record)
        assert tf.train.Example.FromString(record.to_proto().SerializeToString()) == message


@pytest.mark.parametrize("name", SCHEMA_NAMES)
def test_we_read_tensorflow_tfrecord_files(tf: Any, tmp_path: Path, name: str) -> None:
    records = samples(name)
    cls = type(records[0])
    for compression, tf_type, suffix in TF_COMPRESSIONS:
        path = tmp_path / f"tf{suffix}"
        with tf.io.TFRecordWriter(
            str(path), tf.io.TFRecordOptions(compression_type=tf_type)
        ) as writer:
            for record in records:
                writer.write(
                    build_example(tf.train, spec_of(cls), record_values(record)).SerializeToString()
                )
        want = [record_canon(r) for r in records]
        assert [
            record_canon(r) for r in cls.read_tfrecord(path, compression=compression)
        ] == want, compression
        assert [record_canon(r) for r in cls.read_tfrecord(path, compression="auto")] == want, (
            compression
        )


@pytest.mark.parametrize("name", SCHEMA_NAMES)
def test_tensorflow_reads_our_tfrecord_files(tf: Any, tmp_path: Path, name: str) -> None:
    records = samples(name)
    cls = type(records[0])
    expected = [record_values(r) for r in records]
    for compression, tf_type, suffix in TF_COMPRESSIONS:
        path = tmp_path / f"ours{suffix}"
        cls.write_tfrecord(path, records, compression=compression)
        dataset = tf.data.TFRecordDataset(str(path), compression_type=tf_type)
        serialized = [bytes(t.numpy()) for t in dataset]
        assert serialized == [r.encode() for r in records], compression
        batch = next(iter(dataset.batch(len(records))))
        parsed = by_key(tf.io.parse_example(batch, cls.tf_feature_spec()), cls)
        form = spec_form(tf, cls)
        for info in spec_of(cls):
            for i, values in enumerate(expected):
                assert tensor_form(tf, parsed[info.name], i) == form(
                    info, values[info.name], True
                ), (info, i)


# --- the matrix: every list dtype in every shape form ---------------------------------------------

CASE_IDS = [case.record for case in MATRIX_CASES]


def matrix_records(case: MatrixCase, cls: Any) -> list[Any]:
    """Records of a matrix case: all features present with various row counts, then ``dflt`` at its
    default and ``opt`` absent; with a leading ``None``, also ``opt`` present without rows (which
    TensorFlow parses like an absent one, and ours keeps apart)."""
    extra: list[dict[str, object]] = [{"dflt": case.value(1)}, {}] if case.fixed else [{}, {}]
    records = [
        cls(req=case.value(0, rows=3), opt=case.value(2, rows=1), **extra[0]),
        cls(req=case.value(3, rows=0), opt=None, **extra[1]),
        cls(req=case.value(4, rows=1), opt=case.value(5, rows=2), **extra[1]),
    ]
    if not case.fixed:
        records.append(cls(req=case.value(7, rows=2), opt=case.value(8, rows=0)))
    return records


@pytest.mark.parametrize("case", MATRIX_CASES, ids=CASE_IDS)
def test_matrix_records_parse_with_tensorflow_like_ours(
    tf: Any, matrix: ModuleType, case: MatrixCase
) -> None:
    cls = getattr(matrix, case.record)
    records = matrix_records(case, cls)
    examples = [r.encode() for r in records]
    expected = [record_values(r) for r in records]
    # Built by TensorFlow with only the required feature: the default applies, the optional is absent.
    only_required = cls(req=case.value(6, rows=2), opt=None)
    examples.append(
        build_example(tf.train, spec_of(cls), {"req": only_required.req}).SerializeToString()
    )
    expected.append(record_values(only_required))
    for data, values in zip(examples, expected, strict=True):
        decoded = cls.decode(data)
        assert [canon(getattr(decoded, n)) for n in case.names] == [
            canon(values[n]) for n in case.names
        ]
    check_parsed_by_tensorflow(tf, cls, expected, examples)


@pytest.mark.parametrize("case", MATRIX_CASES, ids=CASE_IDS)
def test_matrix_records_are_tensorflow_examples(
    tf: Any, matrix: ModuleType, case: MatrixCase
) -> None:
    cls = getattr(matrix, case.record)
    for record in matrix_records(case, cls):
        assert record.encode() == tf_bytes(tf, record)
        message = build_example(tf.train, spec_of(cls), record_values(record))
        assert record_canon(cls.decode(message.SerializeToString())) == record_canon(record)


def bad_examples(tf: Any, case: MatrixCase, cls: Any) -> list[tuple[str, str, bytes]]:
    """(attribute, what is wrong, Example bytes) that TensorFlow refuses to parse under the record's spec."""
    good = cls(req=case.value(0, rows=2), opt=case.value(1, rows=2))
    infos = {info.name: info for info in spec_of(cls)}
    cases: list[tuple[str, str, bytes]] = []

    def changed(name: str, what: str, feature: Any | None) -> None:
        message = build_example(tf.train, spec_of(cls), record_values(good))
        if feature is None:
            del message.features.feature[KEYS[name]]
        else:
            message.features.feature[KEYS[name]].CopyFrom(feature)
        cases.append((name, what, message.SerializeToString()))

    if case.fixed:
        changed("req", "missing", None)
    for name, info in infos.items():
        count = len(flat_values(getattr(good, name)) or [])
        wire, value = OTHER_WIRE[info.wire]
        changed(name, f"a {wire}", build_feature(tf.train, wire, [value] * max(count, 1)))
        if info.fixed:
            counts = {count + 1, count - 1, 0} - {count} - ({0} if info.optional else set())
            for n in sorted(counts):
                changed(
                    name,
                    f"{n} values",
                    build_feature(tf.train, info.wire, [SOME_VALUE[info.wire]] * n),
                )
        elif len(info.shape) > 1:
            changed(
                name, "3 values", build_feature(tf.train, info.wire, [SOME_VALUE[info.wire]] * 3)
            )
    return cases


@pytest.mark.parametrize("case", MATRIX_CASES, ids=CASE_IDS)
def test_matrix_examples_tensorflow_refuses_are_refused(
    tf: Any, matrix: ModuleType, case: MatrixCase
) -> None:
    cls = getattr(matrix, case.record)
    good = cls(req=case.value(0, rows=2)).encode()
    for name, what, data in bad_examples(tf, case, cls):
        where = f"{case.record}.{name} ({what})"
        with pytest.raises(tf.errors.InvalidArgumentError) as single:
            cls.tf_parse(data)
        assert KEYS[name] in str(single.value), where
        with pytest.raises(tf.errors.InvalidArgumentError):
            cls.tf_parse([good, data])
        with pytest.raises(RecordError) as ours:
            cls.decode(data)
        assert str(ours.value).startswith(f"{case.record}.{name} (key {KEYS[name]!r}): "), where


def outcomes_agree(tf: Any, cls: Any, data: bytes) -> None:
    """Our decoder and TensorFlow (one Example, and a batch) both refuse ``data`` or give the same values."""
    try:
        decoded = cls.decode(data)
    except RecordError:
        for serialized in (data, [data]):
            with pytest.raises(tf.errors.InvalidArgumentError):
                cls.tf_parse(serialized)
        return
    check_parsed(tf, cls, [record_values(decoded)], [data], cls.tf_parse)


@pytest.mark.parametrize("case", MATRIX_CASES, ids=CASE_IDS)
def test_kindless_unknown_and_repeated_features_decode_as_tensorflow_parses_them(
    tf: Any, matrix: ModuleType, case: MatrixCase
) -> None:
    cls = getattr(matrix, case.record)
    record = cls(req=case.value(0, rows=2), opt=case.value(1, rows=1))
    other = cls(req=case.value(2, rows=3), opt=case.value(3, rows=0))
    feature = {info.name: feature_of(tf, record, info) for info in spec_of(cls)}
    changed = {info.name: feature_of(tf, other, info) for info in spec_of(cls)}
    kindless = tf.train.Feature()
    wrong_wire, wrong_value = OTHER_WIRE[spec_of(cls)[0].wire]
    wrong = build_feature(tf.train, wrong_wire, [wrong_value])
    present = [(KEYS[n], feature[n]) for n in case.names]
    examples = {
        "every feature kindless": example_of(tf, [(KEYS[n], kindless) for n in case.names]),
        "optional ones kindless": example_of(
            tf, [(KEYS["req"], feature["req"])] + [(KEYS[n], kindless) for n in case.names[1:]]
        ),
        "unknown keys": example_of(
            tf, [("", wrong), *present, ("réq ", wrong), ("RÉQ", feature["req"]), ("zz", kindless)]
        ),
        "repeated keys": example_of(tf, present + [(KEYS[n], changed[n]) for n in case.names]),
        "repeated after a wrong kind": example_of(tf, [(KEYS["req"], wrong), *present]),
        "repeated after a kindless one": example_of(
            tf, [(KEYS[n], kindless) for n in case.names] + present
        ),
    }
    for what, data in examples.items():
        try:
            outcomes_agree(tf, cls, data)
        except AssertionError as exc:
            raise AssertionError(f"{case.record}, {what}: {exc}") from None


FIXED_CASES = [case for case in MATRIX_CASES if case.fixed]


def mismatches(
    tf: Any, matrix: ModuleType, build: Callable[[MatrixCase, Any], tuple[bytes, dict[str, object]]]
) -> list[str]:
    """For every fixed-shape case: where TensorFlow's ``tf_parse`` or our decoder does not give the
    values ``build`` expects for the Example it builds (empty when all agree)."""
    found = []
    for case in FIXED_CASES:
        cls = getattr(matrix, case.record)
        data, expected = build(case, cls)
        try:
            check_parsed(tf, cls, [expected], [data], cls.tf_parse)
        except (AssertionError, tf.errors.InvalidArgumentError) as exc:
            found.append(f"{case.record}, TensorFlow: {str(exc).splitlines()[0]}")
        try:
            decoded = record_values(cls.decode(data))
        except RecordError as exc:
            found.append(f"{case.record}, ours: {exc}")
            continue
        if [canon(decoded[n]) for n in case.names] != [canon(expected[n]) for n in case.names]:
            found.append(f"{case.record}, ours: decoded {decoded}")
    return found


def test_a_kindless_repeat_of_a_fixed_shape_feature_decodes_as_tensorflow_parses_it(
    tf: Any, matrix: ModuleType
) -> None:
    """TensorFlow skips a later entry of the same key that has no list: the earlier one counts."""

    def build(case: MatrixCase, cls: Any) -> tuple[bytes, dict[str, object]]:
        record = cls(req=case.value(0), dflt=case.value(1))
        entries = [
            (info.key, feature_of(tf, record, info)) for info in spec_of(cls) if not info.optional
        ]
        return example_of(
            tf, entries + [(key, tf.train.Feature()) for key, _ in entries]
        ), record_values(record)

    assert mismatches(tf, matrix, build) == []


def test_an_empty_list_of_an_optional_fixed_shape_feature_decodes_as_tensorflow_parses_it(
    tf: Any, matrix: ModuleType
) -> None:
    """``tf_parse`` reads an optional fixed-shape feature whose list is empty as absent."""

    def build(case: MatrixCase, cls: Any) -> tuple[bytes, dict[str, object]]:
        record = cls(req=case.value(0))
        message = build_example(tf.train, spec_of(cls), record_values(record))
        message.features.feature[KEYS["opt"]].CopyFrom(
            build_feature(tf.train, spec_of(cls)[0].wire, [])
        )
        return message.SerializeToString(), record_values(record)

    assert mismatches(tf, matrix, build) == []


# --- edge values ----------------------------------------------------------------------------------


def test_edge_values_travel_both_ways_unchanged(tf: Any, matrix: ModuleType) -> None:
    edges = matrix.Edges
    assert [info.key for info in spec_of(edges)] == list(EDGE_KEYS.values())
    values = edge_values()
    records = [
        edges(**values),
        edges(**{name: [] for name in values}),
        edges(**{name: value[::-1] for name, value in values.items()}),
    ]
    for record in records:
        assert record.encode() == tf_bytes(tf, record)
        message = build_example(tf.train, spec_of(edges), record_values(record))
        assert record_canon(edges.decode(message.SerializeToString())) == record_canon(record)
        assert record_canon(edges.decode(record.encode())) == record_canon(record)
    check_parsed_by_tensorflow(
        tf, edges, [record_values(r) for r in records], [r.encode() for r in records]
    )
    floats = edges.tf_parse(records[0].encode())["floats"].numpy()
    assert (
        np.isnan(floats[0])
        and np.isinf(floats[1])
        and np.signbit(floats[3])
        and floats[5] == np.float32(2.0**-149)
    )
    assert edges.decode(records[0].encode()).texts == values["texts"]
