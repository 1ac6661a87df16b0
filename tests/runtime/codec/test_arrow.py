"""Batches as Arrow data and back: the schema-derived Arrow schema, records -> batch -> Arrow (and
Parquet, pandas, polars) -> records on every dtype and shape form, present and absent, in Examples and
SequenceExamples; ``encode_batch`` equals per-record ``encode``; numeric buffers are shared; bad Arrow
input names its column and row and writes nothing."""

from __future__ import annotations

import gc
import io
import sys
import threading
import weakref
from pathlib import Path
from types import ModuleType
from typing import Any
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codegen.errors import MissingExtraError, RecordError
from codegen.runtime import accel
from support.matrix import matrix_yaml
from support.modules import generate_module
from support.paths import SCHEMAS
from support.speedups import import_speedups
from support.strategies import SHAPES, records_of


@pytest.fixture(scope="module")
def modules(tmp_path_factory: pytest.TempPathFactory) -> dict[str, ModuleType]:
    """The matrix (every list dtype x shape form, required, optional, default), :data:`SHAPES` (raw,
    ragged and SequenceExample records) and every schema of ``schemas/``."""
    directory = tmp_path_factory.mktemp("arrow_modules")
    out = {
        path.stem: generate_module(
            path.read_text(encoding="utf-8"), f"arrow_{path.stem}", directory
        )
        for path in sorted(SCHEMAS.glob("*.yaml"))
    }
    out["matrix"] = generate_module(matrix_yaml(), "arrow_matrix", directory)
    out["shapes"] = generate_module(SHAPES, "arrow_shapes", directory)
    return out


def _classes(modules: dict[str, ModuleType]) -> list[type]:
    return [
        getattr(module, name)
        for module in modules.values()
        for name in module.__all__
        if hasattr(module, f"{name}Batch")
    ]


def batch_class(cls: type) -> Any:
    return getattr(sys.modules[cls.__module__], f"{cls.__name__}Batch")


def any_class(modules: dict[str, ModuleType]) -> st.SearchStrategy[type]:
    """Any record class, half of the time one of :data:`SHAPES` (raw, ragged, feature lists)."""
    classes = _classes(modules)
    shapes = [cls for cls in classes if cls.__module__ == modules["shapes"].__name__]
    return st.sampled_from(classes) | st.sampled_from(shapes)


def test_every_record_has_a_schema_derived_arrow_schema(
    modules: dict[str, ModuleType], pa: Any
) -> None:
    shapes = modules["shapes"]
    schema = shapes.Tensors.arrow_schema()
    assert schema.field("fixed").type == pa.list_(pa.list_(pa.float64(), 2), 2)
    assert not schema.field("fixed").nullable
    assert schema.field("rows").type == pa.large_list(pa.list_(pa.int16(), 3))
    assert schema.field("image").type == pa.struct(
        [
            pa.field("shape", pa.list_(pa.int64(), 3)),
            pa.field("data", pa.large_list(pa.uint8())),
        ]
    )
    assert schema.field("image").nullable
    assert schema.field("half").type == pa.large_list(pa.float16())
    assert schema.field("cells").type == pa.large_list(
        pa.large_list(pa.large_list(pa.list_(pa.int64(), 2)))
    )
    assert schema.field("words").type == pa.large_list(pa.large_list(pa.string()))
    assert schema.field("pairs").type == pa.large_list(pa.large_list(pa.list_(pa.binary(), 2)))
    assert schema.field("cells").metadata[b"tfr.key"] == b"cell/ids"
    fingerprint = shapes.SCHEMA.fingerprint.encode()
    assert all(field.metadata[b"tfr.fingerprint"] == fingerprint for field in schema)
    assert schema.metadata[b"tfr.record"] == b"Tensors"
    assert schema.metadata[b"tfr.schema"] == shapes.SCHEMA.canonical.encode()
    steps = shapes.Steps.arrow_schema()
    assert steps.field("tokens").type == pa.large_list(pa.int64())  # one level for the steps
    assert steps.field("frame").type == pa.large_list(pa.list_(pa.float32(), 4))
    assert steps.field("spans").type == pa.large_list(pa.large_list(pa.int32()))
    assert steps.field("source").type == pa.string() and steps.field("source").nullable
    matrix = modules["matrix"]
    assert matrix.Uint8Mat2x2.arrow_schema().field("req").type == pa.list_(
        pa.list_(pa.uint8(), 2), 2
    )
    assert matrix.BoolScalar.arrow_schema().field("opt").type == pa.bool_()


def exact(record: Any) -> tuple[Any, ...]:
    """What tells records apart exactly (NaN payloads included): their bytes and attribute types."""
    types = tuple(type(getattr(record, info.name)).__name__ for info in record.feature_spec())
    return record.encode(), types


def _parquet_round_trip(pa: Any, pq: Any, table: Any) -> Any:
    sink = io.BytesIO()
    pq.write_table(pa.Table.from_batches([table]), sink)
    return pq.read_table(io.BytesIO(sink.getvalue()))


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_records_to_arrow_and_parquet_and_back(
    modules: dict[str, ModuleType], pa: Any, pq: Any, data: st.DataObject
) -> None:
    cls = data.draw(any_class(modules))
    records = data.draw(records_of(cls))
    batch = batch_class(cls).from_records(records)
    table = batch.to_arrow()
    assert table.schema == cls.arrow_schema()  # type: ignore[attr-defined]
    assert table.num_rows == len(records)
    expected = [exact(record) for record in records]
    assert [exact(r) for r in batch_class(cls).from_arrow(table).records()] == expected
    back = _parquet_round_trip(pa, pq, table)
    assert back.schema.metadata == table.schema.metadata
    assert [exact(r) for r in batch_class(cls).from_arrow(back).records()] == expected


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_encode_batch_equals_each_record_s_encode(
    modules: dict[str, ModuleType], pa: Any, data: st.DataObject
) -> None:
    cls: Any = data.draw(any_class(modules))
    records = data.draw(records_of(cls))
    expected = [record.encode() for record in records]
    batch = batch_class(cls).from_records(records)
    assert cls.encode_batch(batch) == expected
    assert cls.encode_batch(batch.to_arrow()) == expected
    assert cls.encode_batch(pa.Table.from_batches([batch.to_arrow()])) == expected


def test_decoded_and_decoded_from_data_frames(modules: dict[str, ModuleType], pl: Any) -> None:
    """Batches decoded from bytes convert alike, and polars frames (large lists, string views) come back."""
    cls: Any = modules["shapes"].Steps
    records = [
        cls(
            length=i,
            source=None if i % 2 else "é",
            scores=[0.5] * i,
            tokens=list(range(i)),
            frame=np.ones((i, 4), np.float32),
            spans=[[1, 2]] * i,
            pairs=np.zeros((i, 1, 2), np.bool_),
            word=["w"] * i,
            grid=[[b"a", b"b"]] * i,
            words=[["x", "y"]] * i,
            letters=[[["a", "b"]]] * i,
        )
        for i in range(4)
    ]
    batch = cls.decode_batch([r.encode() for r in records])
    frame = batch.to_polars()
    assert frame.height == 4
    assert cls.encode_batch(frame) == [r.encode() for r in records]
    assert [exact(r) for r in batch_class(cls).from_arrow(frame).records()] == [
        exact(r) for r in records
    ]


def _leaf(array: Any) -> Any:
    """The innermost values of a nested Arrow array (its children's buffers as they are)."""
    if hasattr(array, "chunks"):
        (array,) = array.chunks
    while array.type.num_fields:
        array = array.values
    return array


def test_numeric_buffers_are_shared_not_copied(modules: dict[str, ModuleType]) -> None:
    shapes: Any = modules["shapes"]
    records = [
        shapes.Tensors(
            fixed=np.full((2, 2), i, np.float64),
            rows=np.full((i, 3), i, np.int16),
            image=None,
            flags=np.array([1, 2, 3], np.int8) if i % 2 else None,
            half=np.ones(i, np.float16),
            boxes=[[1.0] * i],
            cells=[[[[i, i]]]],
            words=None,
            pairs=[],
            small=[[i]],
        )
        for i in range(5)
    ]
    for batch in (
        batch_class(shapes.Tensors).from_records(records),
        shapes.Tensors.decode_batch([r.encode() for r in records]),
    ):
        table = batch.to_arrow()

        def shares(name: str, array: np.ndarray[Any, Any], table: Any = table) -> bool:
            leaf = _leaf(table.column(name))
            return bool(leaf.buffers()[1].address == array.ctypes.data)

        assert shares("fixed", batch.fixed)
        assert shares("rows", batch.rows.values)
        assert (
            table.column("rows").offsets.buffers()[1].address == batch.rows.row_splits.ctypes.data
        )
        assert shares("flags", batch.flags.values)
        assert shares("half", batch.half.values.values)
        assert shares("cells", batch.cells.values.values.values)
        assert table.column("flags").null_count == 3


# --- bad input ------------------------------------------------------------------------------------


def _customer_table(pa: Any, **changes: Any) -> Any:
    columns: dict[str, Any] = {
        "age": pa.array([30, 40], pa.int64()),
        "movie": pa.array([["a"], []], pa.large_list(pa.string())),
        "movie_ratings": pa.array([[1.0], []], pa.large_list(pa.float32())),
        "suggestion": pa.array(["x", "y"]),
        "suggestion_purchased": pa.array([1.0, 0.0], pa.float32()),
        "purchase_price": pa.array([0.0, 2.5], pa.float32()),
    }
    columns.update(changes)
    return pa.table({name: value for name, value in columns.items() if value is not None})


def test_bad_arrow_input_names_the_column_and_row_and_writes_nothing(
    modules: dict[str, ModuleType], pa: Any, tmp_path: Path
) -> None:
    customer: Any = modules["customer"].Customer
    good = _customer_table(pa)
    assert customer.write_tfrecord(tmp_path / "good.tfrecord", good) == 2
    cases = {
        "wrong type": (
            _customer_table(pa, age=pa.array(["30", "40"])),
            "column 'age' (int64 of shape []): expected integers, got string",
        ),
        "null in a required column": (
            _customer_table(pa, suggestion=pa.array(["x", None])),
            "column 'suggestion' row 1 (string of shape []): null in a column of a required feature",
        ),
        "invalid UTF-8": (
            _customer_table(pa, suggestion=pa.array([b"x", b"\xff"], pa.binary())),
            "column 'suggestion' row 1 (string of shape []): invalid UTF-8",
        ),
        "missing column": (
            _customer_table(pa, purchase_price=None),
            "the columns do not match the record (missing 'purchase_price')",
        ),
        "null inside a list": (
            _customer_table(pa, movie=pa.array([["a"], ["b", None]], pa.large_list(pa.string()))),
            "column 'movie' row 1 (string of shape [null]): a null value",
        ),
    }
    for name, (table, message) in cases.items():
        path = tmp_path / f"{name}.tfrecord"
        with pytest.raises(RecordError) as info:
            customer.write_tfrecord(path, table)
        assert message in str(info.value), name
        assert not path.exists(), name
    matrix: Any = modules["matrix"]
    vec = matrix.Int8Vec3
    bad_size = pa.table(
        {
            "req": pa.array([[1, 2, 3, 4]], pa.list_(pa.int8(), 4)),
            "dflt": pa.array([[1, 2, 3]], pa.list_(pa.int8(), 3)),
            "opt": pa.array([None], pa.list_(pa.int8(), 3)),
        }
    )
    with pytest.raises(
        RecordError, match=r"column 'req' \(int8 of shape \[3\]\): dimension 1 has size 3"
    ):
        vec.encode_batch(bad_size)
    short_row = bad_size.set_column(0, "req", pa.array([[1, 2]], pa.list_(pa.int64())))
    with pytest.raises(RecordError, match="column 'req' row 0 .*got a list of 2"):
        vec.encode_batch(short_row)
    out_of_range = bad_size.set_column(
        0, "req", pa.array([[1, 2, 3], [1, 200, 3]][1:], pa.list_(pa.int64()))
    )
    with pytest.raises(
        RecordError, match=r"column 'req' row 0 .*200 is out of range for int8 \(-128 .. 127\)"
    ):
        vec.encode_batch(out_of_range)
    fits = out_of_range.set_column(0, "req", pa.array([[1, -128, 127]], pa.list_(pa.int64())))
    assert vec.encode_batch(fits) == [vec(req=[1, -128, 127], dflt=[1, 2, 3], opt=None).encode()]


def test_an_int_column_out_of_range_names_its_row(modules: dict[str, ModuleType], pa: Any) -> None:
    scalar: Any = modules["matrix"].Uint16Scalar
    table = pa.table(
        {
            "req": pa.array([1, 65535, 65536], pa.int64()),
            "dflt": pa.array([1, 2, 3], pa.uint16()),
            "opt": pa.array([None, -1, None], pa.int32()),
        }
    )
    with pytest.raises(RecordError, match=r"column 'req' row 2 .*65536 is out of range for uint16"):
        scalar.encode_batch(table)
    table = table.set_column(0, "req", pa.array([1, 2, 3], pa.uint64()))
    with pytest.raises(RecordError, match=r"column 'opt' row 1 .*-1 is out of range for uint16"):
        scalar.encode_batch(table)


def test_batch_input_is_checked_like_the_constructor(modules: dict[str, ModuleType]) -> None:
    customer: Any = modules["customer"]
    batch = customer.CustomerBatch(
        age=np.array([1, 2]),
        movie=Ragged_of(modules, ["a", 7]),
        movie_ratings=Ragged_of(modules, np.array([1.0, 2.0], np.float32)),
        suggestion=["x", "y"],
        suggestion_purchased=np.zeros(2, np.float32),
        purchase_price=np.zeros(2, np.float32),
    )
    with pytest.raises(RecordError, match=r"CustomerBatch row 1: Customer.movie"):
        customer.Customer.encode_batch(batch)


def test_to_arrow_checks_each_column_s_dtype_and_count(
    modules: dict[str, ModuleType], pa: Any
) -> None:
    customer: Any = modules["customer"]
    good = dict(
        age=np.array([1, 2]),
        movie=Ragged_of(modules, ["a", "b"]),
        movie_ratings=Ragged_of(modules, np.array([1.0, 2.0], np.float32)),
        suggestion=["x", "y"],
        suggestion_purchased=np.zeros(2, np.float32),
        purchase_price=np.zeros(2, np.float32),
    )
    assert customer.CustomerBatch(**good).to_arrow().num_rows == 2
    for name, other, message in (
        ("age", np.array([1.0, 2.0]), "expected 2 values of int64, got 2 of float64"),
        ("purchase_price", np.zeros((2, 2), np.float32), "expected 2 values of float32, got 4 of"),
        ("movie_ratings", Ragged_of(modules, np.array([1.0, 2.0])), "got 2 of float64"),
    ):
        batch = customer.CustomerBatch(**{**good, name: other})
        with pytest.raises(
            RecordError, match=rf"CustomerBatch.to_arrow: column {name!r} .*{message}"
        ):
            batch.to_arrow()
    mnist: Any = modules["mnist"]
    short = mnist.DigitBatch(label=np.array([1]), image=np.zeros((1, 783), np.int64))
    with pytest.raises(
        RecordError, match=r"column 'image' \(int64 of shape \[784\]\): expected 784 values"
    ):
        short.to_arrow()


def Ragged_of(modules: dict[str, ModuleType], values: Any) -> Any:  # noqa: N802
    from codegen.runtime.codec.columns import Ragged

    return Ragged(values, np.array([0, 1, 2]))


def test_a_missing_extra_names_it(modules: dict[str, ModuleType]) -> None:
    customer: Any = modules["customer"]
    batch = customer.Customer.decode_batch([])
    with mock.patch.dict(sys.modules, {"pyarrow": None}):
        with pytest.raises(MissingExtraError, match=r"pip install 'tfr-gen\[arrow\]'"):
            batch.to_arrow()
    with mock.patch.dict(sys.modules, {"polars": None}):
        with pytest.raises(MissingExtraError, match=r"needs polars.*'tfr-gen\[polars\]'"):
            batch.to_polars()
    with mock.patch.dict(sys.modules, {"pandas": None}):
        with pytest.raises(MissingExtraError, match=r"needs pandas.*'tfr-gen\[pandas\]'"):
            batch.to_pandas()


def test_a_dataset_streams_arrow_batches(
    modules: dict[str, ModuleType], pa: Any, tmp_path: Path
) -> None:
    customer: Any = modules["customer"].Customer
    table = _customer_table(pa)
    path = tmp_path / "c.tfrecord"
    customer.write_tfrecord(path, pa.concat_tables([table] * 5))
    reader = customer.dataset(str(path), batch_size=4).to_arrow_reader()
    assert reader.schema == customer.arrow_schema()
    sizes = [batch.num_rows for batch in reader]
    assert sizes == [4, 4, 2]
    whole = customer.dataset(str(path), batch_size=3).to_arrow()
    assert whole.column("age").to_pylist() == [30, 40] * 5
    assert whole.column("movie").to_pylist() == [["a"], []] * 5


def test_write_dataset_takes_columns(
    modules: dict[str, ModuleType], pa: Any, pd: Any, tmp_path: Path
) -> None:
    customer: Any = modules["customer"].Customer
    table = _customer_table(pa)
    expected = customer.encode_batch(table)
    manifest = customer.write_dataset(tmp_path / "ds", table.to_pandas(), shards=2)
    assert manifest.record_count == 2
    assert [r.encode() for r in customer.read_dataset(tmp_path / "ds")] == expected
    with pytest.raises(RecordError, match="column 'age' row 1"):
        customer.write_dataset(tmp_path / "bad", _customer_table(pa, age=pa.array([1, None])))
    assert not (tmp_path / "bad").exists() or not any((tmp_path / "bad").iterdir())


def test_string_columns_convert_alike_with_and_without_the_accelerator(
    modules: dict[str, ModuleType], pa: Any
) -> None:
    sp = import_speedups()
    customer: Any = modules["customer"]
    records = [
        customer.Customer(
            age=i,
            movie=["", "Amélie", "東京物語"][: i % 4],
            movie_ratings=[1.0] * min(i % 4, 3),
            suggestion="\x00" * i,
            suggestion_purchased=0.0,
        )
        for i in range(6)
    ]
    batch = customer.Customer.decode_batch([r.encode() for r in records])
    fast = batch.to_arrow()
    with mock.patch.object(accel, "speedups", None):
        plain = batch.to_arrow()
    assert fast.equals(plain)
    assert fast.column("movie").to_pylist() == [r.movie for r in records]
    assert fast.column("suggestion").to_pylist() == [r.suggestion for r in records]
    # the buffers themselves: int32 offsets and the UTF-8 (or bytes) joined
    offsets, data = sp.join_strings(["a", "", "é"], True)
    assert np.frombuffer(offsets, np.int32).tolist() == [0, 1, 1, 3]
    assert data == "aé".encode()
    assert sp.join_strings([b"\x00", b"xy"], False)[1] == b"\x00xy"
    with pytest.raises(TypeError, match="not a str"):
        sp.join_strings([b"x"], True)
    with pytest.raises(TypeError, match="not bytes"):
        sp.join_strings(["x"], False)
    with pytest.raises(UnicodeEncodeError):
        sp.join_strings(["\ud800"], True)


def test_decoded_raw_arrays_of_different_shapes_share_the_batch_buffer(
    modules: dict[str, ModuleType],
) -> None:
    import_speedups()
    raw: Any = modules["raw_image"]
    rng = np.random.default_rng(3)
    records = [
        raw.RawImage(label=i, image=rng.integers(0, 256, (h, w, 3), dtype=np.uint8))
        for i, (h, w) in enumerate(((2, 3), (0, 4), (5, 1), (1, 1)))
    ]
    decoded = raw.RawImage.decode_batch([r.encode() for r in records])
    built = batch_class(raw.RawImage).from_records(records)  # separate arrays: joined by a copy
    shared, copied = decoded.to_arrow(), built.to_arrow()
    assert shared.equals(copied)
    data = shared.column("image").field("data").values
    assert data.buffers()[1].address == decoded.image[0].ctypes.data
    assert shared.column("image").field("shape").to_pylist() == [
        list(r.image.shape) for r in records
    ]
    assert [np.array_equal(a, r.image) for a, r in zip(decoded.image, records, strict=True)] == [
        True
    ] * 4
    sp = import_speedups()
    owner = np.arange(10, dtype=np.int16)
    fmt = owner.data.format
    assert sp.adjacent_arrays([owner[1:3], owner[3:7].reshape(2, 2)[:1]], owner, 1, fmt) is None
    run = sp.adjacent_arrays([owner[1:3], owner[3:7]], owner, 1, fmt)
    assert run is not None
    offset, size, shapes, offsets = run
    assert (offset, size, np.frombuffer(shapes, np.int64).tolist()) == (2, 12, [2, 4])
    assert np.frombuffer(offsets, np.int64).tolist() == [0, 2, 6]
    assert sp.adjacent_arrays([owner[1:3], owner[4:7]], owner, 1, fmt) is None  # a gap
    assert sp.adjacent_arrays([owner[::2]], owner, 1, fmt) is None  # not contiguous
    assert (
        sp.adjacent_arrays([owner[1:3], owner[3:7].view(np.uint16)], owner, 1, fmt) is None
    )  # dtype
    assert sp.adjacent_arrays([owner[1:3]], owner, 1, "H") is None  # another format


# --- one ArrowArray per batch (the accelerator's export) ------------------------------------------


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_exported_batches_equal_batches_built_level_by_level(
    modules: dict[str, ModuleType], data: st.DataObject
) -> None:
    import_speedups()
    cls = data.draw(any_class(modules))
    records = data.draw(records_of(cls))
    for batch in (
        batch_class(cls).from_records(records),
        cls.decode_batch([r.encode() for r in records]),  # type: ignore[attr-defined]
    ):
        exported = batch.to_arrow()
        with mock.patch.object(accel, "speedups", None):
            built = batch.to_arrow()
        exported.validate(full=True)
        built.validate(full=True)
        assert exported.schema == built.schema  # and every buffer alike (NaN included):
        assert exported.serialize().to_pybytes() == built.serialize().to_pybytes()


def test_an_exported_batch_keeps_its_columns_until_arrow_lets_go(
    modules: dict[str, ModuleType],
) -> None:
    import_speedups()
    embedding: Any = modules["embedding"]
    records = [
        embedding.Embedding(label=i, embedding=np.full(128, i, np.float32)) for i in range(9)
    ]
    batch = batch_class(embedding.Embedding).from_records(records)
    assert batch.embedding.base is None  # the array owns its numbers
    column = weakref.ref(batch.embedding)
    table = batch.to_arrow()
    del batch
    gc.collect()
    assert column() is not None  # Arrow reads the batch's own buffer
    assert table.column("embedding").values.to_numpy()[128 * 8] == 8.0
    # Arrow may free its last buffer in any thread, with or without the GIL: the release takes it.
    dropped = threading.Thread(target=lambda items=[table]: items.clear())
    del table
    dropped.start()
    dropped.join()
    gc.collect()
    assert column() is None


def test_export_arrow_shares_buffers_and_gives_back_every_view(pa: Any) -> None:
    sp = import_speedups()
    values = np.arange(6, dtype=np.int64)
    splits = np.array([0, 2, 6], np.int64)
    node = (2, 0, (None, splits), ((6, 0, (None, values), ()),))
    before = sys.getrefcount(values), sys.getrefcount(splits)
    owner, address = sp.export_arrow((2, 0, (None,), (node,)))
    assert sys.getrefcount(values) == before[0] + 1  # a view held until released
    schema = pa.schema([pa.field("x", pa.large_list(pa.int64()))])
    table = pa.RecordBatch._import_from_c(address, schema)
    del owner  # moved into Arrow: the capsule frees only the struct
    assert table.column("x").to_pylist() == [[0, 1], [2, 3, 4, 5]]
    assert table.column("x").values.buffers()[1].address == values.ctypes.data
    del table
    assert (sys.getrefcount(values), sys.getrefcount(splits)) == before
    owner, _ = sp.export_arrow((2, 0, (None,), (node,)))
    del owner  # never imported: the capsule releases it
    assert (sys.getrefcount(values), sys.getrefcount(splits)) == before


@pytest.mark.parametrize(
    ("node", "error"),
    [
        ((1, 0, (None,)), "a node is a tuple"),
        ((-1, 0, (None,), ()), "invalid"),
        ((1, 2, (None,), ()), "invalid"),
        ((1, 0, [None], ()), "invalid"),
        ((1, 0, (None, "text"), ()), "bytes-like"),
        ((1, 0, (None,), ((1, 0, (None, np.arange(3)[::2]), ()),)), "contiguous"),
        ((1, 0, (None,), ((1, 0, (None, b"x"), ()), "child")), "a node is a tuple"),
    ],
)
def test_export_arrow_refuses_a_bad_node_and_keeps_nothing(node: Any, error: str) -> None:
    sp = import_speedups()
    held = node[2][1] if len(node) > 2 and len(node[2]) > 1 else None
    before = sys.getrefcount(held)
    with pytest.raises((TypeError, ValueError, BufferError), match=error):
        sp.export_arrow(node)
    assert sys.getrefcount(held) == before
    deep: Any = (0, 0, (), ())
    for _ in range(70):
        deep = (0, 0, (), (deep,))
    with pytest.raises(ValueError, match="nested too deep"):
        sp.export_arrow(deep)


def test_images_of_any_size_are_a_struct_of_shapes_and_data(pa: Any, tmp_path: Path) -> None:
    """An encoded image with a ``null`` dimension decodes to a list of arrays, as a raw tensor of any size does:
    its Arrow column is the same struct of each image's shape and its flat pixels, and comes back the same."""
    text = (
        "version: 1\nrecords:\n  Shot:\n    features:\n"
        "      photo: {dtype: uint8, shape: [null, null, 3], encoding: png}\n"
        "      mask: {dtype: uint8, shape: [4, null, 1], encoding: png, optional: true}\n"
    )
    cls: Any = generate_module(text, "arrow_shots", tmp_path).Shot
    rng = np.random.default_rng(3)
    records = [
        cls(
            photo=rng.integers(0, 256, (1 + i, 2 + i, 3), dtype=np.uint8),
            mask=None if i == 1 else rng.integers(0, 256, (4, 1 + i, 1), dtype=np.uint8),
        )
        for i in range(3)
    ]
    batch = cls.decode_batch([r.encode() for r in records])
    table = batch.to_arrow()
    assert table.schema.field("photo").type == pa.struct(
        [pa.field("shape", pa.list_(pa.int64(), 3)), pa.field("data", pa.large_list(pa.uint8()))]
    )
    assert table.column("photo").field("shape").to_pylist() == [[1, 2, 3], [2, 3, 3], [3, 4, 3]]
    assert table.column("mask").null_count == 1
    back = type(batch).from_arrow(table)
    assert [p.tolist() for p in back.photo] == [r.photo.tolist() for r in records]
    assert cls.encode_batch(table) == [r.encode() for r in records]
