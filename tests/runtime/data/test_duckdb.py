"""The DuckDB example of docs/loading.md: SQL over TFRecord files through a dataset's Arrow reader."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from support.modules import generated_module


def test_duckdb_queries_tfrecords_through_arrow(duckdb: Any, tmp_path: Path) -> None:
    customer: Any = generated_module("customer").Customer
    records = [
        customer(
            age=i,
            movie=["a"] * (i % 3),
            movie_ratings=[2.0] * (i % 3),
            suggestion="odd" if i % 2 else "even",
            suggestion_purchased=0.0,
        )
        for i in range(10)
    ]
    customer.write_tfrecord(tmp_path / "a.tfrecord", records[:6])
    customer.write_tfrecord(tmp_path / "b.tfrecord", records[6:])
    reader = customer.dataset(str(tmp_path / "*.tfrecord"), batch_size=4).to_arrow_reader()
    query = "SELECT suggestion, avg(age) AS age, sum(len(movie)) AS movies FROM reader GROUP BY suggestion ORDER BY age"
    rows = duckdb.sql(query).fetchall()  # DuckDB finds the Arrow reader by its variable name
    del reader
    assert rows == [("even", 4.0, 5), ("odd", 5.0, 4)]
