"""Schema inference: valid, distinct names, and any data set round-trips through its inferred schema."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codegen.errors import TfrGenError
from codegen.generator.load import parse_schema
from codegen.runtime.codec import wire
from codegen.tools.dynamic import DynamicRecord
from codegen.tools.inference import feature_names, infer_record, record_name_for, schema_yaml
from codegen.tools.observe import Observation


def test_names_are_valid_distinct_and_keep_valid_keys() -> None:
    keys = [
        "Age",
        "age",
        "Movie Ratings",
        "class",
        "1st",
        "",
        "encode",
        "_private",
        "type",
        "imageRaw",
        "HTTPCode",
    ]
    assert feature_names(keys) == [
        "age_2",
        "age",
        "movie_ratings",
        "class_",
        "f_1st",
        "feature",
        "encode_",
        "private",
        "type_",
        "image_raw",
        "http_code",
    ]
    files = ["customer_1.tfrecord", "d/train-00001-of-00004.gz", "none.tfr", "7.x"]
    names = ["Customer1", "Train00001Of00004", "NoneRecord", "Record7"]
    assert [record_name_for(path) for path in files] == names
    assert feature_names(["a", "B", "a", "b"]) == ["a", "b_2", "a_2", "b"]  # a context and list key
    with pytest.raises(TfrGenError, match="must be CamelCase"):
        infer_record(Observation(), name="lower", doc="")


# --- property: any data set round-trips through its inferred schema -----------------------------

_KEYS = st.text(st.characters(codec="utf-8"), max_size=6)
_COLUMNS = st.dictionaries(
    _KEYS,
    st.tuples(st.sampled_from(["int64", "float", "bytes", "text"]), st.none() | st.integers(1, 3)),
    max_size=4,
)
"""Keys with the list kind they hold and their fixed number of values (``None``: any number)."""


def _feature(draw: st.DrawFn, kind: str, fixed: int | None) -> bytes:
    """A serialized Feature of ``kind`` with ``fixed`` values (or a drawn number of them)."""
    size = draw(st.integers(0, 3)) if fixed is None else fixed
    if kind == "int64":
        ints = draw(st.lists(st.integers(-(2**63), 2**63 - 1), min_size=size, max_size=size))
        return wire.int64_feature(np.array(ints, dtype=np.int64))
    if kind == "float":
        floats = draw(st.lists(st.floats(width=32, allow_nan=False), min_size=size, max_size=size))
        return wire.float_feature(np.array(floats, dtype=np.float32))
    items = st.text(max_size=4).map(str.encode) if kind == "text" else st.binary(max_size=4)
    return wire.bytes_feature(draw(st.lists(items, min_size=size, max_size=size)))


def _present(draw: st.DrawFn) -> bool:
    return draw(st.booleans()) or draw(st.booleans())  # a key is absent from a quarter of records


Context = dict[str, bytes]
Lists = dict[str, list[bytes]]


@st.composite
def _data_sets(draw: st.DrawFn, sequence: bool) -> list[tuple[Context, Lists]]:
    """Records as (key -> serialized Feature, key -> serialized Feature per step); every key keeps
    one list kind. Example records have no feature lists."""
    context_columns = draw(_COLUMNS)
    list_columns = draw(_COLUMNS.filter(bool)) if sequence else {}
    records = []
    for _ in range(draw(st.integers(1, 5))):
        context = {
            key: _feature(draw, kind, fixed)
            for key, (kind, fixed) in context_columns.items()
            if _present(draw)
        }
        lists = {
            key: [_feature(draw, kind, fixed) for _ in range(draw(st.integers(0, 3)))]
            for key, (kind, fixed) in list_columns.items()
            if _present(draw)
        }
        records.append((context, lists))
    return records


def _serialize(context: Context, lists: Lists) -> bytes:
    entries = [wire.map_entry(wire.key_field(k), context[k]) for k in wire.map_key_order(context)]
    if not lists:
        return wire.example(entries)
    steps = [
        wire.feature_list_entry(wire.key_field(k), lists[k]) for k in wire.map_key_order(lists)
    ]
    return wire.sequence_example(entries, steps)


def _check_round_trip(records: list[tuple[Context, Lists]]) -> None:
    """Infer a schema from the records; decoding each record with it and encoding each value again
    gives the bytes of every feature (list) the record has; absent ones read as no value."""
    serialized = [_serialize(context, lists) for context, lists in records]
    observation = Observation()
    for item in serialized:
        observation.add(item)
    try:
        inferred = infer_record(observation, name="Row", doc="Inferred.")
    except TfrGenError as exc:  # only when no key but the empty one holds a value
        assert "nothing to infer" in str(exc)
        return
    assert inferred.is_sequence == bool(inferred.sequence)
    dynamic = DynamicRecord(parse_schema(schema_yaml(inferred), "rows.yaml").records[0])
    for (context, lists), item in zip(records, serialized, strict=True):
        values = dynamic.decode(item)
        for codec in dynamic.codecs:
            value = values[codec.name]
            if codec.key in context:
                expected = wire.map_entry(wire.key_field(codec.key), context[codec.key])
                assert codec.entry(value) == expected
            else:
                assert value is None or isinstance(value, list | np.ndarray) and len(value) == 0
        for codec in dynamic.sequence_codecs:
            value = values[codec.name]
            if codec.key in lists:
                expected = wire.feature_list_entry(wire.key_field(codec.key), lists[codec.key])
                assert codec.entry(value) == expected
            else:
                assert isinstance(value, list | np.ndarray) and len(value) == 0


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_data_sets(sequence=False))
def test_any_example_data_set_round_trips_through_its_inferred_schema(
    records: list[tuple[Context, Lists]],
) -> None:
    _check_round_trip(records)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_data_sets(sequence=True))
def test_any_sequence_data_set_round_trips_through_its_inferred_schema(
    records: list[tuple[Context, Lists]],
) -> None:
    _check_round_trip(records)


def _observed(rows: list[dict[str, list[int]]]) -> Observation:
    observation = Observation()
    for row in rows:
        entries = [
            wire.map_entry(wire.key_field(k), wire.int64_feature(np.array(v, np.int64)))
            for k, v in sorted(row.items())
        ]
        observation.add(wire.example(entries))
    return observation


def test_warnings_name_a_small_sample_and_int64_features_that_fit_narrower_dtypes() -> None:
    many = [
        {"small": [i], "signed": [-i], "wide": [i << 40], "year": [1990 + i], "ids": list(range(i))}
        for i in range(25)
    ]
    inferred = infer_record(_observed(many), name="Row", doc="")
    assert inferred.warnings == (
        "int64 features whose values fit a narrower dtype: ids (0..23: uint8), signed"
        " (-24..0: int8), small (0..24: uint8), year (1990..2014: uint16); declare it where every"
        " value always will",
    )
    # the schema keeps int64: more data may not fit
    assert {f.dtype for f in inferred.features} == {"int64"}
    few = infer_record(_observed(many[:5]), name="Row", doc="")
    assert few.warnings[0] == (
        "only 5 records seen: the fixed shapes of signed, small, wide, year may vary in more data;"
        " infer from at least 20 records or review them"
    )
    wide = infer_record(_observed([{"wide": [1 << 40]}] * 20), name="Row", doc="")
    assert wide.warnings == ()
