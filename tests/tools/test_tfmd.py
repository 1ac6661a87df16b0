"""TFX schemas: a taxi-like ``schema.pbtxt`` (as TFX's examples write it) imports to a tfr-gen schema, exports back
to the same features, and TensorFlow parses the same data with the exported spec and with tfr-gen's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from google.protobuf import text_format
from tensorflow_metadata.proto.v0 import schema_pb2

from support.cli import run_cli
from support.modules import generate_module

TAXI = """\
feature { name: "trip_miles" type: FLOAT value_count { min: 1 max: 1 } presence { min_fraction: 1.0 min_count: 1 } }
feature { name: "fare" type: FLOAT value_count { min: 1 max: 1 } presence { min_fraction: 1.0 } }
feature { name: "payment_type" type: BYTES string_domain { value: "Cash" value: "Credit Card" }
          presence { min_fraction: 1.0 } shape { dim { size: 1 } } }
feature { name: "trip_start_hour" type: INT int_domain { min: 0 max: 23 } shape { } presence { min_fraction: 1.0 } }
feature { name: "pickup_community_area" type: INT value_count { min: 1 max: 1 } presence { min_fraction: 0.9 } }
feature { name: "tips" type: FLOAT presence { min_fraction: 1.0 } value_count { min: 0 } }
feature { name: "is_airport" type: INT bool_domain { } shape { } presence { min_fraction: 1.0 } }
feature { name: "stops" type: INT }
feature { name: "stops_lengths" type: INT }
feature { name: "company" type: STRUCT }
sparse_feature { name: "dropoff" index_feature { name: "dropoff_idx" } value_feature { name: "dropoff_val" } }
tensor_representation_group {
  key: ""
  value {
    tensor_representation {
      key: "route"
      value { ragged_tensor { feature_path { step: "stops" } partition { row_length: "stops_lengths" } } }
    }
  }
}
"""


def test_a_taxi_schema_imports_with_narrow_dtypes_presence_and_ragged_representations(
    tmp_path: Path,
) -> None:
    (tmp_path / "schema.pbtxt").write_text(TAXI, encoding="utf-8")
    code, out, err = run_cli(
        "import-schema", "schema.pbtxt", "-o", "taxi.yaml", "--record", "Trip", cwd=tmp_path
    )
    assert code == 0, err
    assert out == "wrote taxi.yaml (Trip: 8 features)\n"
    assert "feature 'company' left out: type STRUCT has no tfr-gen form" in err
    assert "feature 'dropoff' left out: a sparse_feature has no tfr-gen form" in err
    text = (tmp_path / "taxi.yaml").read_text(encoding="utf-8")
    for line in (
        "      fare: {dtype: float32}\n",
        "      payment_type: {dtype: string, shape: [1]}\n",
        "      trip_start_hour: {dtype: uint8}\n",
        "      pickup_community_area: {dtype: int64, optional: true}\n",
        "      tips: {dtype: float32, shape: [null]}\n",
        "      is_airport: {dtype: bool}\n",
        "      route: {key: stops, dtype: int64, shape: [null, null],"
        " row_lengths_from: [stops_lengths]}\n",
    ):
        assert line in text, (line, text)
    # A binary Schema imports the same.
    binary = text_format.Parse(TAXI, schema_pb2.Schema()).SerializeToString()
    (tmp_path / "schema.pb").write_bytes(binary)
    code, out, _ = run_cli("import-schema", "schema.pb", "--record", "Trip", cwd=tmp_path)
    assert code == 0 and out.splitlines()[5:] == text.splitlines()[5:]  # all but the doc


def _tft_feature_spec(tf: Any, schema: Any) -> dict[str, Any]:
    """TensorFlow Transform's ``schema_as_feature_spec`` rules: ``shape`` -> FixedLenFeature, else
    VarLenFeature; a ragged_tensor representation -> RaggedFeature (its components are not features)."""
    dtypes = {schema_pb2.INT: tf.int64, schema_pb2.FLOAT: tf.float32, schema_pb2.BYTES: tf.string}
    by_name = {f.name: f for f in schema.feature}
    spec: dict[str, Any] = {}
    components: set[str] = set()
    for group in schema.tensor_representation_group.values():
        for name, rep in group.tensor_representation.items():
            ragged = rep.ragged_tensor
            values = ragged.feature_path.step[0]
            lengths = [p.row_length for p in ragged.partition]
            spec[name] = tf.io.RaggedFeature(
                dtypes[by_name[values].type],
                value_key=values,
                partitions=[tf.io.RaggedFeature.RowLengths(k) for k in lengths],
            )
            components.update([values, *lengths])
    for f in schema.feature:
        if f.name in components:
            continue
        if f.HasField("shape"):
            spec[f.name] = tf.io.FixedLenFeature([d.size for d in f.shape.dim], dtypes[f.type])
        else:
            spec[f.name] = tf.io.VarLenFeature(dtypes[f.type])
    return spec


@pytest.mark.tensorflow
def test_export_round_trips_and_tensorflow_parses_the_data_alike(tf: Any, tmp_path: Path) -> None:
    (tmp_path / "schema.pbtxt").write_text(TAXI, encoding="utf-8")
    assert (
        run_cli(
            "import-schema", "schema.pbtxt", "-o", "taxi.yaml", "--record", "Trip", cwd=tmp_path
        )[0]
        == 0
    )
    code, out, err = run_cli(
        "export-schema", "taxi.yaml", "--format", "tfmd", "-o", "out.pbtxt", cwd=tmp_path
    )
    assert (code, err) == (0, ""), err
    exported = text_format.Parse((tmp_path / "out.pbtxt").read_text(), schema_pb2.Schema())
    # Export -> import gives the same tfr-gen schema back.
    code, again, _ = run_cli("import-schema", "out.pbtxt", "--record", "Trip", cwd=tmp_path)
    assert code == 0
    text = (tmp_path / "taxi.yaml").read_text(encoding="utf-8")
    assert again.splitlines()[5:] == text.splitlines()[5:]  # all but the doc
    hour = next(f for f in exported.feature if f.name == "trip_start_hour")
    assert (hour.int_domain.min, hour.int_domain.max, hour.presence.min_fraction) == (0, 255, 1.0)
    module = generate_module(text, "taxi", tmp_path)
    rows = [
        module.Trip(
            trip_miles=1.5 * i,
            fare=10.0 + i,
            payment_type=["Cash"],
            trip_start_hour=i,
            pickup_community_area=None if i == 1 else 8,
            tips=[0.5] * i,
            is_airport=i == 2,
            route=[[1, 2], [3]][:i],
        )
        for i in range(3)
    ]
    data = [row.encode() for row in rows]
    theirs = tf.io.parse_example(tf.constant(data), _tft_feature_spec(tf, exported))
    ours = module.Trip.tf_parse(tf.constant(data))
    np.testing.assert_allclose(theirs["fare"].numpy(), ours["fare"].numpy())
    area = tf.RaggedTensor.from_sparse(theirs["pickup_community_area"]).to_list()
    assert area == [[8], [], [8]]
    np.testing.assert_array_equal(
        theirs["trip_start_hour"].numpy(), ours["trip_start_hour"].numpy()
    )
    np.testing.assert_array_equal(theirs["is_airport"].numpy() == 1, ours["is_airport"].numpy())
    assert theirs["payment_type"].numpy().tolist() == ours["payment_type"].numpy().tolist()
    assert theirs["route"].to_list() == ours["route"].to_list()
    tips = tf.RaggedTensor.from_sparse(theirs["tips"]).to_list()
    assert tips == ours["tips"].to_list()
