"""Raw, ragged and SequenceExample records of a generated module agree with TensorFlow (the kinds
matrix of ``tests/support/matrix.py``, every dtype in every shape form, present, absent with a
default and absent optional):

1. what we encode, TensorFlow parses under the generated specs (``tf_parse`` and TensorFlow's own
   parse functions, one record and a batch) to the same values, dtypes and shapes;
2. what TensorFlow builds with its protos and writes with its writer (every compression), the
   generated classes read to the same values;
3. what TensorFlow refuses, the generated ``decode`` refuses too, naming the feature;

and records written in ways our encoder never writes (missing, kindless or empty features and
steps, unknown and repeated keys) decode as TensorFlow parses them, but for one input: a missing
required feature list of a ragged step shape (:data:`STEPS_NEVER_REQUIRED_BY_TF`), which
TensorFlow reads as no steps and our decode refuses."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from codegen.dtypes import DTYPES
from codegen.errors import RecordError
from codegen.runtime import FeatureInfo
from support.matrix import (
    KIND_CASES,
    KindCase,
    build_feature,
    build_kinds_matrix,
    build_message,
    feature_entries,
    feature_list,
    flat_values,
    ragged_parts,
    raw_bytes,
    record_canon,
    record_values,
    sample_value,
    tf_dtype_name,
    tf_form,
    tf_leaves,
    varint,
    wire_form,
)
from support.tf_values import (
    OTHER_WIRE,
    SOME_VALUE,
    TF_COMPRESSIONS,
    TF_WIRE_DTYPES,
    example_of,
    plain,
    ragged_value,
    raw_value,
    spec_of,
    steps_value,
    tf_plain,
)

pytestmark = pytest.mark.tensorflow

CASE_IDS = [case.record for case in KIND_CASES]


@pytest.fixture(scope="session")
def kinds(tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    """The generated kinds matrix module (raw, ragged and SequenceExample records)."""
    return build_kinds_matrix(tmp_path_factory.mktemp("kinds"))


# --- records of every size ------------------------------------------------------------------------


def value_of(info: FeatureInfo, seed: int) -> object:
    """A value of a feature from the generator of its kind. A ``None`` dimension, the nodes of a
    ragged value and the steps of a feature list get ``seed % 3`` (steps: ``seed % 4``) entries
    first, so a seed divisible by 12 gives empty values of every kind."""
    dtype = DTYPES[info.dtype]
    if info.sequence:
        return steps_value(dtype, info.shape, seed % 4, seed)
    if info.encoding == "raw":
        return raw_value(dtype, info.shape, seed)
    if info.ragged:
        return ragged_value(dtype, info.shape, seed)
    return sample_value(dtype, info.shape, seed, rows=seed % 3)


SEEDS = (1, 2, 0, 5, 7)
"""The records of a class: every feature present, its sizes varying with the seed (0: empty)."""


def given_values(cls: Any) -> list[dict[str, object]]:
    """The constructor arguments of records of a class: every feature present at each of
    :data:`SEEDS`, then only the required ones (defaults apply, optional features are absent)."""
    infos = spec_of(cls)
    given = [
        {info.name: value_of(info, seed + 12 * i) for i, info in enumerate(infos)} for seed in SEEDS
    ]
    given.append(
        {
            info.name: value_of(info, 3 + 12 * i)
            for i, info in enumerate(infos)
            if not info.optional and info.default is None
        }
    )
    return given


def tf_message(tf: Any, cls: Any, record: Any, given: dict[str, object]) -> Any:
    """The record built with TensorFlow's protobuf classes, writing exactly the features given."""
    return build_message(tf.train, spec_of(cls), {name: getattr(record, name) for name in given})


# --- (1) what we encode, TensorFlow parses to the same values -------------------------------------


def tensor_leaves(tf: Any, tensor: Any) -> Any:
    """A parsed tensor (dense or ragged) as :func:`tf_leaves`."""
    if tensor.dtype == tf.string and tensor.shape.rank == 0:
        return tensor.numpy()
    return tf_leaves(tf_plain(tf, tensor))


def declared(info: FeatureInfo, value: object) -> tuple[object, tuple[int | None, ...]]:
    """What ``tf_parse`` gives for one record: the values (:func:`tf_leaves`) and the static shape
    (``None`` for a ragged dimension). Optional fixed shapes and optional raw tensors have a
    leading dimension of 0 or 1; an absent optional feature with a ``None`` dimension has no rows."""
    if not (info.sequence or info.ragged or info.encoding == "raw"):
        values, shape = tf_form(info, value)
        assert isinstance(shape, tuple)
        return values, shape
    leaves = tf_leaves(plain(value))
    fixed = tuple(d for d in info.shape if d is not None)
    if info.sequence:
        assert isinstance(value, list | np.ndarray)
        steps = len(value)
        return leaves, (steps, *info.shape) if info.fixed else (steps, None, *info.shape[1:])
    if info.ragged:
        assert value is None or isinstance(value, list)
        inner = (*[None] * (info.shape.count(None) - 1), *fixed)
        return ([], (0, *inner)) if value is None else (leaves, (len(value), *inner))
    if value is None:
        return [], (0, *(d or 0 for d in info.shape))
    assert isinstance(value, np.ndarray)
    return ([leaves], (1, *value.shape)) if info.optional else (leaves, value.shape)


def batch_dims(info: FeatureInfo) -> tuple[int | None, ...]:
    """The static shape of ``tf_parse``'s tensor of a batch, after the batch dimension."""
    if info.sequence:
        return (None, *info.shape) if info.fixed else (None, None, *info.shape[1:])
    if info.ragged:
        return info.shape
    if info.encoding == "raw":
        return (None, *info.shape) if info.optional else info.shape
    if info.fixed and (info.default is not None or not info.optional):
        return info.shape
    return (None, *(d for d in info.shape if d is not None))


@dataclass(frozen=True)
class Parsed:
    """What TensorFlow's parse function gives for one key of one record under the generated spec:
    values (:func:`tf_leaves`), static shape, the shape of a batch after its batch dimension, and
    dtype. ``steps``: the steps of a ``FixedLenSequenceFeature``, which a batch pads to the
    longest."""

    values: object
    shape: tuple[int | None, ...]
    batch_dims: tuple[int | None, ...]
    dtype: str
    steps: int | None = None


def parsed_by_key(
    tf: Any, spec: dict[str, Any], info: FeatureInfo, value: object
) -> dict[str, Parsed]:
    """What TensorFlow's parse functions give under the generated ``spec`` for each key an attribute
    of one record writes (before ``tf_parse``'s post-processing)."""
    wire = TF_WIRE_DTYPES[info.wire]
    if info.sequence:
        assert isinstance(value, list | np.ndarray)
        if info.fixed:
            values, shape = declared(info, value)
            return {info.key: Parsed(values, shape, (None, *info.shape), wire, len(value))}
        steps = [tf_leaves(flat_values(step)) for step in value]
        return {info.key: Parsed(steps, (len(steps), None), (None, None), wire)}
    if info.encoding == "raw":
        assert value is None or isinstance(value, np.ndarray)
        blobs = [] if value is None else [raw_bytes(value)]
        dims = [] if value is None else list(value.shape)
        if info.optional:
            parsed = {info.key: Parsed(blobs, (len(blobs),), (None,), "string")}
            parsed.update(
                {k: Parsed(dims, (len(dims),), (None,), "int64") for k in info.companions}
            )
            return parsed
        rank = (len(info.shape),)
        parsed = {info.key: Parsed(blobs[0], (), (), "string")}
        parsed.update({k: Parsed(dims, rank, rank, "int64") for k in info.companions})
        return parsed
    if info.ragged:
        values, shape = declared(info, value)
        return {info.key: Parsed(values, shape, info.shape, wire)}
    dense = isinstance(spec[info.key], tf.io.FixedLenFeature)
    values, single = wire_form(info, value, dense=dense)
    assert isinstance(single, tuple)
    return {info.key: Parsed(values, single, info.shape if dense else (None,), wire)}


def check_declared(
    tf: Any, cls: Any, expected: list[dict[str, object]], examples: list[bytes]
) -> None:
    """``tf_parse`` of each record alone and of all as a batch gives our values, dtypes and shapes."""
    batch = cls.tf_parse(tf.constant(examples))
    singles = [cls.tf_parse(tf.constant(data)) for data in examples]
    for info in spec_of(cls):
        column = batch[info.name]
        assert (column.dtype.name, tuple(column.shape)) == (
            tf_dtype_name(info),
            (len(examples), *batch_dims(info)),
        ), info
        rows = tensor_leaves(tf, column)
        for i, values in enumerate(expected):
            want, shape = declared(info, values[info.name])
            single = singles[i][info.name]
            assert single.dtype.name == tf_dtype_name(info), (info, i)
            assert (tensor_leaves(tf, single), tuple(single.shape)) == (want, shape), (info, i)
            assert rows[i] == want, (info, i)


def tf_parse_functions(tf: Any, cls: Any) -> tuple[Callable[[Any], Any], Callable[[Any], Any]]:
    """TensorFlow's own parse functions (one record, a batch) under the generated specs: each gives
    one dict of tensors by key, and the batch also the step counts of its feature lists."""
    if not hasattr(cls, "tf_sequence_spec"):
        spec = cls.tf_feature_spec()
        return (
            lambda data: (tf.io.parse_single_example(data, spec), {}),
            lambda batch: (tf.io.parse_example(batch, spec), {}),
        )
    context, lists = cls.tf_context_spec(), cls.tf_sequence_spec()

    def single(data: Any) -> Any:
        parsed_context, parsed_lists = tf.io.parse_single_sequence_example(
            data, context_features=context, sequence_features=lists
        )
        return {**parsed_context, **parsed_lists}, {}

    def batch(data: Any) -> Any:
        parsed_context, parsed_lists, lengths = tf.io.parse_sequence_example(
            data, context_features=context, sequence_features=lists
        )
        return {**parsed_context, **parsed_lists}, lengths

    return single, batch


def check_parsed_by_tensorflow(
    tf: Any, cls: Any, expected: list[dict[str, object]], examples: list[bytes]
) -> None:
    """TensorFlow's parse functions under the generated specs give, for each key of each record
    alone and of all as a batch, the values, dtypes and shapes of :func:`parsed_by_key`."""
    spec = (
        {**cls.tf_context_spec(), **cls.tf_sequence_spec()}
        if hasattr(cls, "tf_sequence_spec")
        else cls.tf_feature_spec()
    )
    parse_one, parse_batch = tf_parse_functions(tf, cls)
    batch, lengths = parse_batch(tf.constant(examples))
    singles = [parse_one(tf.constant(data))[0] for data in examples]
    assert set(batch) == set(spec)
    for info in spec_of(cls):
        wants = [parsed_by_key(tf, spec, info, values[info.name]) for values in expected]
        for key, first in wants[0].items():
            column = batch[key]
            rows = tensor_leaves(tf, column)
            if first.steps is not None:
                steps = [want[key].steps or 0 for want in wants]
                assert tensor_leaves(tf, lengths[key]) == steps, key
                dims = (max(steps), *first.batch_dims[1:])
            else:
                dims = first.batch_dims
            assert (column.dtype.name, tuple(column.shape)) == (
                first.dtype,
                (len(examples), *dims),
            ), key
            for i, want in enumerate(wants):
                single = singles[i][key]
                assert (single.dtype.name, tuple(single.shape)) == (
                    want[key].dtype,
                    want[key].shape,
                ), (key, i)
                assert tensor_leaves(tf, single) == want[key].values, (key, i)
                row = rows[i] if want[key].steps is None else rows[i][: want[key].steps]
                assert row == want[key].values, (key, i)


@pytest.mark.parametrize("case", KIND_CASES, ids=CASE_IDS)
def test_records_we_encode_parse_with_tensorflow_like_ours(
    tf: Any, kinds: ModuleType, case: KindCase
) -> None:
    cls = getattr(kinds, case.record)
    records = [cls(**given) for given in given_values(cls)]
    examples = [record.encode() for record in records]
    for record, data in zip(records, examples, strict=True):
        assert record_canon(cls.decode(data)) == record_canon(record)
    expected = [record_values(record) for record in records]
    check_declared(tf, cls, expected, examples)
    check_parsed_by_tensorflow(tf, cls, expected, examples)


# --- (2) what TensorFlow builds and writes, we read to the same values ----------------------------


@pytest.mark.parametrize("case", KIND_CASES, ids=CASE_IDS)
def test_tensorflow_records_and_files_read_to_the_same_values(
    tf: Any, kinds: ModuleType, tmp_path: Path, case: KindCase
) -> None:
    cls = getattr(kinds, case.record)
    given = given_values(cls)
    records = [cls(**values) for values in given]
    messages = [
        tf_message(tf, cls, record, values) for record, values in zip(records, given, strict=True)
    ]
    want = [record_canon(record) for record in records]
    assert [record_canon(cls.from_proto(message)) for message in messages] == want
    for record in records:  # our bytes hold every attribute: defaults, empty feature lists
        message = build_message(tf.train, spec_of(cls), record_values(record))
        assert type(message).FromString(record.encode()) == message
    for compression, tf_type, suffix in TF_COMPRESSIONS:
        path = tmp_path / f"tf{suffix}"
        with tf.io.TFRecordWriter(
            str(path), tf.io.TFRecordOptions(compression_type=tf_type)
        ) as writer:
            for message in messages:
                writer.write(message.SerializeToString())
        assert [
            record_canon(r) for r in cls.read_tfrecord(path, compression=compression)
        ] == want, compression
        assert [record_canon(r) for r in cls.read_tfrecord(path, compression="auto")] == want, (
            compression
        )


# --- (3) what TensorFlow refuses, we refuse, naming the feature -----------------------------------

Mutation = Callable[[Any], None]
"""A change to a ``tf.train.Example`` or ``tf.train.SequenceExample`` message, in place."""


def _features(message: Any) -> Any:
    """The feature map of an Example, or of a SequenceExample's context."""
    return message.context.feature if hasattr(message, "context") else message.features.feature


def _put(key: str, feature: Any) -> Mutation:
    return lambda message: _features(message)[key].CopyFrom(feature)


def _drop(*keys: str) -> Mutation:
    def drop(message: Any) -> None:
        for key in keys:
            del _features(message)[key]

    return drop


def _step(key: str, feature: Any) -> Mutation:
    return lambda message: message.feature_lists.feature_list[key].feature[0].CopyFrom(feature)


def _drop_list(key: str) -> Mutation:
    def drop(message: Any) -> None:
        del message.feature_lists.feature_list[key]

    return drop


def refusals(tf: Any, info: FeatureInfo, value: object) -> list[tuple[str, Mutation]]:
    """Changes to a record holding ``value`` for ``info`` after which TensorFlow refuses to parse
    it: (what is wrong, change). ``value`` has values at every level (at least one step)."""
    wire, key, train = info.wire, info.key, tf.train
    other, other_value = OTHER_WIRE[wire]
    some = SOME_VALUE[wire]

    def feature(kind: str, values: list[Any]) -> Any:
        return build_feature(train, kind, values)

    found: list[tuple[str, Mutation]] = []
    if info.sequence:
        if info.fixed and not info.optional:
            found.append(("missing", _drop_list(key)))
        found.append((f"a step of {other}", _step(key, feature(other, [other_value]))))
        size = math.prod(d for d in info.shape if d is not None)
        if info.fixed:
            found.append(("a step without a list", _step(key, train.Feature())))
            for n in sorted({size + 1, size - 1, 0} - {size}):
                found.append((f"a step of {n} values", _step(key, feature(wire, [some] * n))))
        elif size > 1:
            found.append(
                (f"a step of {size + 1} values", _step(key, feature(wire, [some] * (size + 1))))
            )
        return found
    if info.encoding == "raw":
        blob = raw_bytes(value)
        if not info.optional:
            found.append(("missing", _drop(key, *info.companions)))
        found.append((f"a {other}", _put(key, feature(other, [other_value]))))
        found.append(("one byte more", _put(key, feature("bytes_list", [blob + b"\x00"]))))
        found.append(("two values", _put(key, feature("bytes_list", [blob, blob]))))
        if info.companions:
            (shape_key,) = info.companions
            assert isinstance(value, np.ndarray)
            dims = list(value.shape)
            found.append(("no shape", _drop(shape_key)))
            found.append(
                ("a shape of lower rank", _put(shape_key, feature("int64_list", dims[1:])))
            )
            found.append(
                ("a negative dimension", _put(shape_key, feature("int64_list", [-1, *dims[1:]])))
            )
            found.append(
                (
                    "another fixed dimension",
                    _put(shape_key, feature("int64_list", [dims[0], 3, *dims[2:]])),
                )
            )
            found.append(
                (
                    "a float_list shape",
                    _put(shape_key, feature("float_list", [float(d) for d in dims])),
                )
            )
            if info.optional:
                found.append(("a shape without the tensor", _drop(key)))
        return found
    if info.ragged:
        assert isinstance(value, list)
        flat, lengths = ragged_parts(value, info.shape.count(None))
        row = math.prod(d for d in info.shape if d is not None)
        first = info.companions[0]
        found.append((f"a {other}", _put(key, feature(other, [other_value] * len(flat)))))
        found.append(("a row too many", _put(key, feature(wire, flat + [some] * row))))
        if row > 1:
            found.append(("part of a row more", _put(key, feature(wire, [*flat, some]))))
        found.append(
            ("a negative row length", _put(first, feature("int64_list", [*lengths[0], 1, -1])))
        )
        found.append(
            (
                "float_list row lengths",
                _put(first, feature("float_list", [float(n) for n in lengths[0]])),
            )
        )
        found.append(("no row lengths", _drop(*info.companions)))
        found.append(("no values", _drop(key)))
        if len(lengths) > 1:
            found.append(
                (
                    "a row length too many",
                    _put(info.companions[1], feature("int64_list", [*lengths[1], 0])),
                )
            )
        return found
    count = len(flat_values(value) or [])
    if info.fixed and not info.optional and info.default is None:
        found.append(("missing", _drop(key)))
    found.append((f"a {other}", _put(key, feature(other, [other_value] * max(count, 1)))))
    if info.fixed:
        for n in sorted({count + 1, count - 1, 0} - {count} - ({0} if info.optional else set())):
            found.append((f"{n} values", _put(key, feature(wire, [some] * n))))
    elif len(info.shape) > 1:
        found.append(("3 values", _put(key, feature(wire, [some] * 3))))
    return found


def refused_by_tensorflow(tf: Any, cls: Any, serialized: Any) -> bool:
    """Whether ``tf_parse`` refuses one serialized record or a batch."""
    try:
        cls.tf_parse(serialized)
    except tf.errors.InvalidArgumentError:
        return True
    return False


def full_value(info: FeatureInfo) -> object:
    """A value of ``info`` with values at every level (rows, row lengths, steps)."""
    for seed in range(1, 60):
        value = value_of(info, seed)
        if info.sequence:
            assert isinstance(value, list)
            if value and flat_values(value[0]):
                return value
        elif info.ragged:
            assert isinstance(value, list)
            flat, lengths = ragged_parts(value, info.shape.count(None))
            if flat and all(lengths):
                return value
        elif flat_values(value):
            return value
    raise AssertionError(f"no full value for {info}")


@pytest.mark.parametrize("case", KIND_CASES, ids=CASE_IDS)
def test_records_tensorflow_refuses_are_refused_naming_the_feature(
    tf: Any, kinds: ModuleType, case: KindCase
) -> None:
    cls = getattr(kinds, case.record)
    infos = spec_of(cls)
    given = {info.name: full_value(info) for info in infos}
    good = cls(**given)
    data = good.encode()
    for info in infos:
        for what, mutate in refusals(tf, info, getattr(good, info.name)):
            where = f"{case.record}.{info.name} ({what})"
            message = tf_message(tf, cls, good, given)
            mutate(message)
            bad = message.SerializeToString()
            assert refused_by_tensorflow(tf, cls, bad), f"{where}: TensorFlow parses it"
            assert refused_by_tensorflow(tf, cls, [data, bad]), f"{where}: TensorFlow parses it"
            with pytest.raises(RecordError) as ours:
                cls.decode(bad)
            assert str(ours.value).startswith(f"{case.record}.{info.name} (key {info.key!r})"), (
                where,
                ours.value,
            )


# --- unusual encodings: we decode them as TensorFlow parses them ----------------------------------

Entries = list[tuple[str, Any]]
"""Map entries in wire order: (key, ``tf.train.Feature``) or (key, ``tf.train.FeatureList``)."""


def serialized(tf: Any, context: Entries, lists: Entries | None) -> bytes:
    """An Example (``lists`` is ``None``) or a SequenceExample whose map entries are exactly the
    given ones, in order, duplicates kept."""
    if lists is None:
        return example_of(tf, context)
    features = b"".join(
        tf.train.Features(feature={key: feature}).SerializeToString() for key, feature in context
    )
    feature_lists = b"".join(
        tf.train.FeatureLists(feature_list={key: steps}).SerializeToString() for key, steps in lists
    )
    return (
        b"\x0a"
        + varint(len(features))
        + features
        + b"\x12"
        + varint(len(feature_lists))
        + feature_lists
    )


def entries_of(tf: Any, cls: Any, record: Any) -> tuple[Entries, Entries | None]:
    """The map entries of a record (features or context, and feature lists of a SequenceExample),
    in schema order."""
    infos = spec_of(cls)
    context = [
        (key, feature)
        for info in infos
        if not info.sequence
        for key, feature in feature_entries(tf.train, info, getattr(record, info.name))
    ]
    lists = [
        (info.key, feature_list(tf.train, info, getattr(record, info.name)))
        for info in infos
        if info.sequence
    ]
    return context, (lists if hasattr(cls, "tf_sequence_spec") else None)


def unusual_inputs(tf: Any, cls: Any, record: Any, other: Any) -> dict[str, bytes]:
    """Records written in ways our encoder never writes, by what is unusual: each feature (with its
    companions) or feature list missing, each feature without a list or with empty lists, a step
    without a list or with an empty one, unknown keys, and keys repeated (the last one counts)."""
    context, lists = entries_of(tf, cls, record)
    other_context, other_lists = entries_of(tf, cls, other)
    inputs: dict[str, bytes] = {}
    for info in spec_of(cls):
        if info.sequence:
            assert lists is not None
            inputs[f"{info.name} missing"] = serialized(
                tf, context, [(k, steps) for k, steps in lists if k != info.key]
            )
            for what, step in (
                ("a step without a list", tf.train.Feature()),
                ("an empty step", build_feature(tf.train, info.wire, [])),
            ):
                changed = [
                    (k, type(steps)(feature=[step, *steps.feature[1:]]) if k == info.key else steps)
                    for k, steps in lists
                ]
                inputs[f"{info.name}: {what}"] = serialized(tf, context, changed)
            continue
        wire = {info.key: "bytes_list" if info.encoding == "raw" else info.wire}
        wire.update({key: "int64_list" for key in info.companions})
        inputs[f"{info.name} missing"] = serialized(
            tf, [(k, f) for k, f in context if k not in wire], lists
        )
        kindless = [(k, tf.train.Feature() if k in wire else f) for k, f in context]
        inputs[f"{info.name} without a list"] = serialized(tf, kindless, lists)
        empty = [(k, build_feature(tf.train, wire[k], []) if k in wire else f) for k, f in context]
        inputs[f"{info.name} with empty lists"] = serialized(tf, empty, lists)
    unknown = [(key + " ", feature) for key, feature in context]
    unknown += [(key.upper(), feature) for key, feature in other_context]
    inputs["unknown keys"] = serialized(
        tf,
        [("", tf.train.Feature()), *context, *unknown],
        None if lists is None else [*lists, *((k + "?", steps) for k, steps in other_lists or [])],
    )
    inputs["repeated keys"] = serialized(
        tf, other_context + context, None if lists is None else (other_lists or []) + lists
    )
    inputs["repeated keys, the other last"] = serialized(
        tf, context + other_context, None if lists is None else lists + (other_lists or [])
    )
    return inputs


STEPS_NEVER_REQUIRED_BY_TF = tuple(
    c for c in KIND_CASES if c.kind == "sequence" and None in c.shape
)
"""The records whose required feature list ``steps`` has a leading ``null`` step shape: TensorFlow
has no required ``RaggedFeature``, so its parse reads a missing one as no steps, where our decode
refuses it (the one input of :func:`unusual_inputs` the two read differently)."""


def check_outcomes(tf: Any, cls: Any, inputs: dict[str, bytes]) -> None:
    """For each input, both refuse it, or both give the same values (TensorFlow one record and a
    batch)."""
    accepted: list[tuple[str, bytes, Any]] = []
    for what, data in inputs.items():
        try:
            accepted.append((what, data, cls.decode(data)))
        except RecordError as exc:
            for serialized_input in (data, [data]):
                assert refused_by_tensorflow(tf, cls, serialized_input), (
                    f"{what}: TensorFlow parses it, our decode refuses it: {exc}"
                )
    if not accepted:
        return
    try:
        check_declared(
            tf, cls, [record_values(d) for _, _, d in accepted], [data for _, data, _ in accepted]
        )
    except (AssertionError, tf.errors.InvalidArgumentError) as exc:
        raise AssertionError(f"one of {[what for what, _, _ in accepted]}: {exc}") from None


def inputs_of(tf: Any, cls: Any) -> dict[str, bytes]:
    """:func:`unusual_inputs` of a record with values at every level."""
    record = cls(**{info.name: full_value(info) for info in spec_of(cls)})
    return unusual_inputs(tf, cls, record, cls(**given_values(cls)[3]))


@pytest.mark.parametrize("case", KIND_CASES, ids=CASE_IDS)
def test_unusual_encodings_decode_as_tensorflow_parses_them(
    tf: Any, kinds: ModuleType, case: KindCase
) -> None:
    cls = getattr(kinds, case.record)
    inputs = inputs_of(tf, cls)
    if case in STEPS_NEVER_REQUIRED_BY_TF:
        del inputs["steps missing"]  # see the next test
    check_outcomes(tf, cls, inputs)


@pytest.mark.parametrize(
    "case", STEPS_NEVER_REQUIRED_BY_TF, ids=[c.record for c in STEPS_NEVER_REQUIRED_BY_TF]
)
def test_a_missing_required_ragged_feature_list_is_refused_where_tensorflow_reads_no_steps(
    tf: Any, kinds: ModuleType, case: KindCase
) -> None:
    cls = getattr(kinds, case.record)
    data = inputs_of(tf, cls)["steps missing"]
    with pytest.raises(RecordError, match=r"\.steps \(key .*required feature list is missing"):
        cls.decode(data)
    inputs: list[tuple[object, Callable[[Any], Any]]] = [
        (data, lambda t: t),
        ([data], lambda t: t[0]),
    ]
    for serialized_input, steps_of in inputs:
        parsed = cls.tf_parse(tf.constant(serialized_input))
        assert steps_of(parsed["steps"]).shape[0] == 0
