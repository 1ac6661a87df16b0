"""``tfr-gen convert``: TFRecord files and datasets to Parquet and back, losslessly, with the schema in the
Parquet metadata; refusals name what is wrong and write nothing."""

from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codegen.runtime.io.reader import read_tfrecord
from support.cli import Terminal, run_cli
from support.modules import generate_module, generated_module
from support.paths import SCHEMAS
from support.strategies import SHAPES, records_of

CUSTOMER_SCHEMA = str(SCHEMAS / "customer.yaml")


@pytest.fixture(scope="module")
def shapes(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, ModuleType]:
    directory = tmp_path_factory.mktemp("convert")
    path = directory / "shapes.yaml"
    path.write_text(SHAPES, encoding="utf-8")
    return path, generate_module(SHAPES, "convert_shapes", directory)


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_tfrecord_to_parquet_and_back_is_lossless(
    shapes: tuple[Path, ModuleType], pq: Any, tmp_path: Path, data: st.DataObject
) -> None:
    schema, module = shapes
    name = data.draw(st.sampled_from(["Tensors", "Steps"]))
    cls: Any = getattr(module, name)
    records = data.draw(records_of(cls))
    source = tmp_path / f"{name}.tfrecord"
    cls.write_tfrecord(source, records)
    parquet, back = tmp_path / f"{name}.parquet", tmp_path / f"{name}.back.tfrecord"
    code, _, err = run_cli(
        "convert", str(schema), str(source), str(parquet), "--record", name, cwd=tmp_path
    )
    assert code == 0, err
    assert (
        err
        == f"tfr-gen convert: wrote {len(records)} records to {parquet} ({parquet.stat().st_size:,} bytes)\n"
    )
    metadata = pq.read_schema(parquet).metadata
    assert metadata[b"tfr.fingerprint"] == module.SCHEMA.fingerprint.encode()
    assert metadata[b"tfr.record"] == name.encode()
    code, _, err = run_cli(
        "convert", str(schema), str(parquet), str(back), "--record", name, cwd=tmp_path
    )
    assert code == 0, err
    assert list(read_tfrecord(back)) == [record.encode() for record in records]


def _customers(module: Any, count: int) -> list[Any]:
    return [
        module.Customer(
            age=i,
            movie=["a"] * (i % 3),
            movie_ratings=[1.5] * (i % 3),
            suggestion="s",
            suggestion_purchased=0.5,
        )
        for i in range(count)
    ]


def test_a_dataset_to_parquet_keeps_its_manifest(pq: Any, tmp_path: Path) -> None:
    customer: Any = generated_module("customer")
    records = _customers(customer, 50)
    customer.Customer.write_dataset(tmp_path / "ds", records, shards=3)
    code, _, err = run_cli(
        "convert", CUSTOMER_SCHEMA, "ds", "out.parquet", cwd=tmp_path, err=Terminal()
    )
    assert code == 0, err
    assert "convert [" in err and "records" in err  # the progress bar
    metadata = pq.read_schema(tmp_path / "out.parquet").metadata
    assert b'"record_count": 50' in metadata[b"tfr.manifest"]
    code, _, err = run_cli(
        "convert", CUSTOMER_SCHEMA, "out.parquet", "back.tfrecord.gz", cwd=tmp_path
    )
    assert code == 0, err
    assert list(read_tfrecord(tmp_path / "back.tfrecord.gz")) == [r.encode() for r in records]
    assert pq.read_table(tmp_path / "out.parquet").num_rows == 50


def test_parquet_to_a_dataset_directory_writes_shards_and_a_manifest(
    pq: Any, tmp_path: Path
) -> None:
    customer: Any = generated_module("customer")
    records = _customers(customer, 50)
    customer.Customer.write_tfrecord(tmp_path / "c.tfrecord", records)
    assert run_cli("convert", CUSTOMER_SCHEMA, "c.tfrecord", "c.parquet", cwd=tmp_path)[0] == 0
    expected = [r.encode() for r in records]
    # --shards: even shards, uncompressed
    code, _, err = run_cli(
        "convert",
        CUSTOMER_SCHEMA,
        "c.parquet",
        "even",
        "--shards",
        "3",
        "--shard-compression",
        "none",
        cwd=tmp_path,
    )
    assert code == 0, err
    manifest = customer.Customer.dataset_manifest(tmp_path / "even")
    assert [s.records for s in manifest.shards] == [17, 17, 16]
    assert manifest.compression is None
    assert manifest.schema.fingerprint == customer.SCHEMA.fingerprint
    size = sum(s.size for s in manifest.shards)
    assert err == f"tfr-gen convert: wrote 50 records to the dataset even ({size:,} bytes)\n"
    assert [r.encode() for r in customer.Customer.read_dataset(tmp_path / "even")] == expected
    # OUT ending in /: one gzip shard; --max-records-per-shard streams
    for args, shards in ((("streamed/",), 1), (("streamed", "--max-records-per-shard", "20"), 3)):
        overwrite = ("--overwrite",) if shards == 3 else ()
        code, _, err = run_cli(
            "convert", CUSTOMER_SCHEMA, "c.parquet", *args, *overwrite, cwd=tmp_path
        )
        assert code == 0, err
        manifest = customer.Customer.dataset_manifest(tmp_path / "streamed")
        assert (len(manifest.shards), manifest.compression) == (shards, "gzip")
        assert all(path.endswith(".tfrecord.gz") for path in manifest.paths)
        assert [
            r.encode() for r in customer.Customer.read_dataset(tmp_path / "streamed")
        ] == expected
    # an existing dataset is kept unless --overwrite
    before = sorted(p.name for p in (tmp_path / "even").iterdir())
    code, _, err = run_cli("convert", CUSTOMER_SCHEMA, "c.parquet", "even", cwd=tmp_path)
    assert code == 2
    assert "a dataset with prefix 'customer' already exists" in err
    assert sorted(p.name for p in (tmp_path / "even").iterdir()) == before
    # the dataset options write from Parquet only
    code, _, err = run_cli(
        "convert", CUSTOMER_SCHEMA, "c.tfrecord", "x.parquet", "--shards", "2", cwd=tmp_path
    )
    assert (code, err) == (
        2,
        "tfr-gen convert: error: 'x.parquet': a dataset directory and its options are for Parquet to TFRecord; "
        "Parquet is written to one .parquet file\n",
    )
    assert not (tmp_path / "x.parquet").exists()


def test_refusals_name_what_is_wrong_and_write_nothing(pa: Any, pq: Any, tmp_path: Path) -> None:
    customer: Any = generated_module("customer")
    sentence_schema = str(SCHEMAS / "sentence.yaml")
    customer.Customer.write_tfrecord(tmp_path / "c.tfrecord", _customers(customer, 3))
    assert run_cli("convert", CUSTOMER_SCHEMA, "c.tfrecord", "c.parquet", cwd=tmp_path)[0] == 0
    # another schema's data
    code, _, err = run_cli("convert", sentence_schema, "c.parquet", "s.tfrecord", cwd=tmp_path)
    assert code == 2
    assert err.startswith("tfr-gen convert: error: c.parquet was written as customer.Customer")
    assert not (tmp_path / "s.tfrecord").exists()
    # a null in a required column
    table = pq.read_table(tmp_path / "c.parquet")
    ages = pa.array([1, None, 3], pa.int64())
    broken = table.set_column(0, table.schema.field(0).with_nullable(True), ages)
    pq.write_table(broken.replace_schema_metadata(None), tmp_path / "bad.parquet")
    code, _, err = run_cli("convert", CUSTOMER_SCHEMA, "bad.parquet", "bad.tfrecord", cwd=tmp_path)
    assert code == 2
    assert "bad.parquet: rows from 0: CustomerBatch.from_arrow: column 'age' row 1" in err
    assert not (tmp_path / "bad.tfrecord").exists()
    # a direction that cannot be told
    code, _, err = run_cli("convert", CUSTOMER_SCHEMA, "c.tfrecord", "out.bin", cwd=tmp_path)
    assert (code, err) == (
        2,
        "tfr-gen convert: error: cannot tell the direction from 'out.bin': name OUT .parquet, or give --to\n",
    )
    # records that do not decode
    (tmp_path / "bytes.tfrecord").write_bytes((tmp_path / "c.tfrecord").read_bytes())
    code, _, err = run_cli(
        "convert", sentence_schema, "bytes.tfrecord", "--to", "parquet", "x.out", cwd=tmp_path
    )
    assert code == 2
    assert "bytes.tfrecord: record 0 at byte offset 0:" in err
    assert not (tmp_path / "x.out").exists()


def test_a_missing_pyarrow_names_the_extra(tmp_path: Path) -> None:
    customer: Any = generated_module("customer")
    customer.Customer.write_tfrecord(tmp_path / "c.tfrecord", _customers(customer, 1))
    with mock.patch.dict(sys.modules, {"pyarrow": None, "pyarrow.parquet": None}):
        code, _, err = run_cli("convert", CUSTOMER_SCHEMA, "c.tfrecord", "c.parquet", cwd=tmp_path)
    assert code == 2
    assert err == (
        "tfr-gen convert: error: tfr-gen convert needs pyarrow, which is not installed:"
        " pip install 'tfr-gen[arrow]'\n"
    )


def test_max_record_bytes_limits_the_records_read(pq: Any, tmp_path: Path) -> None:
    customer: Any = generated_module("customer")
    customer.Customer.write_tfrecord(tmp_path / "c.tfrecord", _customers(customer, 3))
    sizes = [len(r) for r in read_tfrecord(tmp_path / "c.tfrecord")]
    args = ("convert", CUSTOMER_SCHEMA, "c.tfrecord", "c.parquet", "--max-record-bytes")
    code, _, err = run_cli(*args, str(sizes[0] - 1), cwd=tmp_path)
    assert code == 2
    assert "c.tfrecord: record 0 at byte offset 0:" in err
    assert f"declares {sizes[0]} bytes of data, more than max_record_bytes ({sizes[0] - 1})" in err
    assert not (tmp_path / "c.parquet").exists()
    code, _, err = run_cli(*args, str(max(sizes)), cwd=tmp_path)
    assert (code, err.count("error")) == (0, 0)
    assert pq.read_table(tmp_path / "c.parquet").num_rows == 3
    assert run_cli(*args, "0", cwd=tmp_path)[0] == 2  # a usage error
