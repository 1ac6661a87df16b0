"""What every generated record class inherits from ``codegen.runtime.record``."""

from __future__ import annotations

from pathlib import Path

import pytest

from codegen.errors import RecordError
from support.modules import generated_module


def test_writers_refuse_items_that_are_not_records_of_the_class_and_write_nothing(
    tmp_path: Path,
) -> None:
    customer = generated_module("customer").Customer
    digit = generated_module("mnist").Digit
    good = customer(
        age=29, movie=["a"], movie_ratings=[4.5], suggestion="b", suggestion_purchased=1.0
    )
    target = tmp_path / "c.tfrecord"
    assert customer.write_tfrecord(target, [good]) == 1
    before = target.read_bytes()

    with pytest.raises(RecordError) as caught:
        customer.write_tfrecord(target, [good, {"age": 29}])
    assert str(caught.value) == (
        "Customer.write_tfrecord: item 1 is dict {'age': 29}, not a Customer record"
    )
    assert target.read_bytes() == before  # the earlier file is kept whole

    refused = r"^Customer.write_dataset: item 0 is Digit .*, not a Customer record$"
    with pytest.raises(RecordError, match=refused):
        customer.write_dataset(tmp_path / "ds", [digit(label=1, image=[0] * 784)], shards=1)
    assert not (tmp_path / "ds").exists() or not any((tmp_path / "ds").iterdir())
