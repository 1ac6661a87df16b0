"""``tfr-gen convert``: TFRecord files and datasets to Parquet and back, losslessly, with the schema in the
Parquet metadata; refusals name what is wrong and write nothing."""

from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType
from typing import Any
from unittest import mock

import numpy as np
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


PICTURES = """\
version: 1
records:
  Picture:
    features:
      label: {dtype: int64}
      photo: {key: image/encoded, dtype: uint8, shape: [8, 12, 3], encoding: jpeg, quality: 90}
      mask: {dtype: uint8, shape: [null, null, 1], encoding: png, optional: true}
      any: {dtype: uint8, shape: [null, null, null], encoding: image, optional: true}
      pixels: {dtype: uint8, shape: [4, 4], encoding: raw}
      rows: {dtype: int8, shape: [null, 3]}
"""


@pytest.fixture(scope="module")
def pictures(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    directory = tmp_path_factory.mktemp("pictures")
    path = directory / "pictures.yaml"
    path.write_text(PICTURES, encoding="utf-8")
    return path, generate_module(PICTURES, "convert_pictures", directory).Picture


def _pictures(cls: Any, count: int) -> list[Any]:
    rng = np.random.default_rng(7)
    return [
        cls(
            label=i,
            photo=rng.integers(0, 256, (8, 12, 3), dtype=np.uint8),
            mask=None if i % 3 == 0 else rng.integers(0, 2, (5, 1 + i, 1), dtype=np.uint8),
            any=None if i % 2 else rng.integers(0, 256, (3, 2, 4), dtype=np.uint8),
            pixels=rng.integers(0, 256, (4, 4), dtype=np.uint8),
            rows=rng.integers(-128, 128, (i % 4, 3), dtype=np.int8),
        )
        for i in range(count)
    ]


def test_encoded_images_go_to_parquet_as_their_bytes_and_come_back_the_same(
    pictures: tuple[Path, Any], pa: Any, pq: Any, tmp_path: Path
) -> None:
    """JPEG and PNG images are stored as the bytes the TFRecord holds (not decoded, not encoded again: a JPEG
    decoded and encoded again has other pixels), byte tensors as binary values; both marked in the field metadata,
    neither dictionary-encoded. The round trip gives the same file."""
    schema, cls = pictures
    records = _pictures(cls, 12)
    cls.write_tfrecord(tmp_path / "p.tfrecord", records)
    assert run_cli("convert", str(schema), "p.tfrecord", "p.parquet", cwd=tmp_path)[0] == 0
    file = pq.ParquetFile(tmp_path / "p.parquet")
    fields = {field.name: field for field in file.schema_arrow}
    assert fields["photo"].type == pa.binary() and fields["mask"].type == pa.binary()
    assert fields["pixels"].type == pa.binary(16)
    assert fields["rows"].type == pa.large_list(pa.binary(3))
    layouts = {name: (field.metadata or {}).get(b"tfr.layout") for name, field in fields.items()}
    assert layouts == {
        "label": None,
        "photo": b"encoded",
        "mask": b"encoded",
        "any": b"encoded",
        "pixels": b"bytes",
        "rows": b"bytes",
    }
    table = file.read()
    stored = [cls.decode(data) for data in read_tfrecord(tmp_path / "p.tfrecord")]
    assert [
        np.frombuffer(b, np.uint8).reshape(4, 4).tolist() for b in table["pixels"].to_pylist()
    ] == [r.pixels.tolist() for r in stored]
    assert all(blob.startswith(b"\xff\xd8\xff") for blob in table["photo"].to_pylist())
    assert table["mask"].null_count == 4 and table["any"].null_count == 6
    group = file.metadata.row_group(0)
    encodings = {
        group.column(i).path_in_schema: group.column(i).encodings for i in range(group.num_columns)
    }
    assert (
        "PLAIN_DICTIONARY" not in encodings["photo"] and "RLE_DICTIONARY" not in encodings["photo"]
    )
    code, _, err = run_cli("convert", str(schema), "p.parquet", "back.tfrecord", cwd=tmp_path)
    assert code == 0, err
    assert (tmp_path / "back.tfrecord").read_bytes() == (tmp_path / "p.tfrecord").read_bytes()


def test_parquet_with_pixels_as_lists_converts_back_encoding_them(
    pictures: tuple[Path, Any], pa: Any, pq: Any, tmp_path: Path
) -> None:
    """Parquet holding images as their pixels and byte tensors as nested lists (``Batch.to_arrow``, as earlier
    versions wrote it and other tools may) converts back: the pixels are encoded by the feature's encoding."""
    schema, cls = pictures
    records = _pictures(cls, 6)
    batch = cls.decode_batch([record.encode() for record in records])
    pq.write_table(pa.Table.from_batches([batch.to_arrow()]), tmp_path / "lists.parquet")
    code, _, err = run_cli("convert", str(schema), "lists.parquet", "back.tfrecord", cwd=tmp_path)
    assert code == 0, err
    back = [cls.decode(data) for data in read_tfrecord(tmp_path / "back.tfrecord")]
    decoded = [cls.decode(record.encode()) for record in records]
    for got, want in zip(back, decoded, strict=True):
        assert (
            got.pixels.tolist() == want.pixels.tolist() and got.rows.tolist() == want.rows.tolist()
        )
        assert (got.mask is None) == (want.mask is None)
        if want.mask is not None:
            assert got.mask.tolist() == want.mask.tolist()  # PNG: lossless
        assert got.photo.shape == want.photo.shape


def test_images_and_byte_tensors_that_do_not_fit_are_refused_by_row(
    pictures: tuple[Path, Any], pa: Any, pq: Any, tmp_path: Path
) -> None:
    schema, cls = pictures
    cls.write_tfrecord(tmp_path / "p.tfrecord", _pictures(cls, 4))
    assert run_cli("convert", str(schema), "p.tfrecord", "p.parquet", cwd=tmp_path)[0] == 0
    table = pq.read_table(tmp_path / "p.parquet")
    png = table["mask"].to_pylist()[1]
    wrong = {
        "photo": (2, png, "expected a jpeg image, found png"),
        "pixels": (
            3,
            b"\x00" * 15,
            "column 'pixels': a binary value of 15 bytes, where a tensor of shape [4, 4] has 16",
        ),
    }
    for column, (row, value, message) in wrong.items():
        values = table[column].to_pylist()
        values[row] = value
        field = table.schema.field(column).with_type(pa.large_binary())
        broken = table.set_column(
            table.schema.get_field_index(column), field, pa.array(values, pa.large_binary())
        )
        pq.write_table(broken, tmp_path / "bad.parquet")
        code, _, err = run_cli("convert", str(schema), "bad.parquet", "bad.tfrecord", cwd=tmp_path)
        assert code == 2, err
        assert f"bad.parquet: row {row}: " in err and message in err, err
        assert not (tmp_path / "bad.tfrecord").exists()
    # an image of another size than declared, in a TFRecord file: named by record and offset, nothing written
    first = cls.decode(next(iter(read_tfrecord(tmp_path / "p.tfrecord"))))
    other = generate_module(
        PICTURES.replace("[8, 12, 3]", "[9, 12, 3]"), "convert_pictures_9", tmp_path
    ).Picture
    kept = {name: getattr(first, name) for name in ("label", "mask", "any", "pixels", "rows")}
    big = other(**kept, photo=np.zeros((9, 12, 3), np.uint8))
    cls.write_tfrecord(tmp_path / "two.tfrecord", [first])
    data = (tmp_path / "two.tfrecord").read_bytes()
    other.write_tfrecord(tmp_path / "big.tfrecord", [big])
    (tmp_path / "mixed.tfrecord").write_bytes(data + (tmp_path / "big.tfrecord").read_bytes())
    code, _, err = run_cli("convert", str(schema), "mixed.tfrecord", "m.parquet", cwd=tmp_path)
    assert code == 2, err
    assert f"mixed.tfrecord: record 1 at byte offset {len(data)}:" in err
    assert "the image of height 9 and width 12 does not fit the declared shape (8, 12, 3)" in err
    assert not (tmp_path / "m.parquet").exists()
