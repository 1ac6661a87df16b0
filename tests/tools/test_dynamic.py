"""Dynamic decoding (records of a schema without a generated module) as the generated class decodes."""

from __future__ import annotations

import numpy as np
import pytest

from codegen.errors import RecordError, TfrGenError
from codegen.generator.ir import RecordIR
from codegen.generator.load import parse_schema
from codegen.runtime.codec import registry, wire
from codegen.tools.dynamic import DynamicRecord, build_codec
from support.modules import generated_module
from support.paths import SCHEMAS
from support.tutorial import customer_records


def test_dynamic_records_decode_like_the_generated_class() -> None:
    customer = generated_module("customer")
    schema = parse_schema((SCHEMAS / "customer.yaml").read_text(), "customer.yaml")
    dynamic = DynamicRecord(schema.records[0])
    record = customer_records()[0]
    values = dynamic.decode(record.encode())
    assert list(values) == [f.name for f in schema.records[0].features]
    for name, value in values.items():
        expected = getattr(record, name)
        if isinstance(expected, np.ndarray):
            assert isinstance(value, np.ndarray) and value.dtype == expected.dtype
            np.testing.assert_array_equal(value, expected)
        else:
            assert value == expected
    with pytest.raises(RecordError) as ours:
        dynamic.decode(wire.example([]))
    with pytest.raises(RecordError) as theirs:
        customer.Customer.decode(wire.example([]))
    assert str(ours.value) == str(theirs.value)


def test_codecs_this_runtime_lacks_are_named(monkeypatch: pytest.MonkeyPatch) -> None:
    schema = parse_schema((SCHEMAS / "mnist.yaml").read_text(), "mnist.yaml")
    record: RecordIR = schema.records[0]
    feature = next(f for f in record.features if f.kind.name == "numeric_tensor")
    assert build_codec(record, feature).shape == (784,)
    monkeypatch.delitem(registry.CODEC_CLASSES, "NumericTensor")
    message = r"Digit.image: features of shape \[784\] need the runtime codec NumericTensor"
    with pytest.raises(TfrGenError, match=message):
        build_codec(record, feature)
