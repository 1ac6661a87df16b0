"""The Apache Beam transforms (codegen.beam): datasets written by pipelines read back with the
runtime and TensorFlow, the dead-letter output, and ReadDataset's manifest and schema checks.

Beam needs protobuf < 7, so its pipelines run in a separate environment: tests/support/beam_pipelines.py
with the Python named by ``TFR_GEN_BEAM_PYTHON`` (``.ci/beam-env`` creates it and prints it).
What the pipelines wrote is checked here, in the test environment.
"""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import crc32c
import numpy as np
import pytest

from codegen.errors import MissingExtraError
from codegen.generator.load import parse_schema
from codegen.generator.render import render
from codegen.runtime.io.reader import read_tfrecord
from codegen.runtime.io.writer import write_tfrecord
from support.modules import generated_module
from support.paths import GENERATED, ROOT, SCHEMAS, TESTS

PIPELINES = TESTS / "support" / "beam_pipelines.py"
MULTI_PROCESS = ["--direct_num_workers=2", "--direct_running_mode=multi_processing"]
RECORDS = 100_000
SHARDS = 8

Customer: Any = generated_module("customer").Customer
customer_for: Any = importlib.import_module("support.beam_pipelines").customer_for


@pytest.fixture(scope="module")
def beam_python() -> str:
    """The Python of the Beam environment (skips outside CI when it is not given; fails in CI)."""
    python = os.environ.get("TFR_GEN_BEAM_PYTHON")
    if not python:
        reason = 'TFR_GEN_BEAM_PYTHON is not set; export TFR_GEN_BEAM_PYTHON="$(.ci/beam-env)"'
        if os.environ.get("CI"):
            pytest.fail(f"the Beam tests must run in CI: {reason}", pytrace=False)
        pytest.skip(reason)
    return python


def run_beam(python: str, *command: str) -> str:
    """Runs a script with the Beam environment's Python (the checkout's ``codegen`` and
    ``generated/`` first on its path); returns its standard output."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(GENERATED)]))
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    done = subprocess.run([python, *command], env=env, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        pytest.fail(
            f"{command[0]} failed (exit {done.returncode}):\n{done.stderr[-4000:]}", pytrace=False
        )
    return done.stdout


def run_pipeline(
    python: str, scenario: str, workdir: Path, *arguments: str, options: tuple[str, ...] = ()
) -> dict[str, Any]:
    """Runs a scenario of tests/support/beam_pipelines.py in the Beam environment; returns its report."""
    output = run_beam(python, str(PIPELINES), scenario, str(workdir), *arguments, "--", *options)
    report: dict[str, Any] = json.loads(output.strip().splitlines()[-1])
    return report


def dataset_files(directory: Path) -> list[str]:
    """The names of the files in ``directory``, sorted."""
    return sorted(path.name for path in directory.iterdir())


def reader_module(tmp_path: Path, name: str, edit: dict[str, str]) -> Path:
    """A directory holding ``name.py``, generated from schemas/customer.yaml with ``edit``."""
    text = (SCHEMAS / "customer.yaml").read_text(encoding="utf-8")
    for old, new in edit.items():
        assert old in text
        text = text.replace(old, new)
    directory = tmp_path / "modules"
    directory.mkdir()
    (directory / f"{name}.py").write_text(
        render(parse_schema(text, f"{name}.yaml"), command="tfr-gen")
    )
    return directory


def test_pipeline_writes_100k_records_in_8_gzip_shards_read_back_exactly_once(
    beam_python: str, tmp_path: Path, tf: Any
) -> None:
    report = run_pipeline(
        beam_python, "write", tmp_path, str(RECORDS), str(SHARDS), options=tuple(MULTI_PROCESS)
    )
    assert report == {"record_count": RECORDS, "dead_letters": 0}
    directory = tmp_path / "dataset"
    manifest = Customer.dataset_manifest(directory)
    assert manifest.write_id is not None
    shard_names = [
        f"customer-{manifest.write_id}-{i:05d}-of-00008.tfrecord.gz" for i in range(SHARDS)
    ]
    assert dataset_files(directory) == [*shard_names, "customer.manifest.json"]
    assert [shard.file for shard in manifest.shards] == shard_names
    assert manifest.record_count == RECORDS and manifest.compression == "gzip"
    assert [(shard.size, shard.crc32c) for shard in manifest.shards] == [
        ((directory / name).stat().st_size, crc32c.crc32c((directory / name).read_bytes()))
        for name in shard_names
    ]
    assert all(shard.records > 0 for shard in manifest.shards)
    module = generated_module("customer")
    assert (manifest.schema.fingerprint, manifest.schema.version) == (
        module.SCHEMA.fingerprint,
        module.SCHEMA.version,
    )
    text = (directory / "customer.manifest.json").read_text(encoding="utf-8")
    assert text == json.dumps(manifest.to_json(), indent=2) + "\n"  # as the runtime writes it

    expected = {index: customer_for(index) for index in range(RECORDS)}
    records = list(Customer.read_dataset(directory))
    assert sorted(record.age for record in records) == list(range(RECORDS))
    assert all(record == expected[record.age] for record in records)

    batch = next(
        iter(tf.data.TFRecordDataset(list(manifest.paths), compression_type="GZIP").batch(RECORDS))
    )
    parsed = Customer.tf_parse(batch)
    ages = parsed["age"].numpy().tolist()
    assert sorted(ages) == list(range(RECORDS))
    wanted = [expected[age] for age in ages]
    assert [s.decode() for s in parsed["suggestion"].numpy()] == [c.suggestion for c in wanted]
    movies = parsed["movie"].to_list()
    assert [[m.decode() for m in row] for row in movies] == [c.movie for c in wanted]
    assert parsed["movie_ratings"].to_list() == [c.movie_ratings.tolist() for c in wanted]
    for field in ("suggestion_purchased", "purchase_price"):
        values = np.array([getattr(c, field) for c in wanted], np.float32)
        np.testing.assert_array_equal(parsed[field].numpy(), values)


def test_elements_that_do_not_encode_go_to_the_dead_letter_output_with_their_errors(
    beam_python: str, tmp_path: Path
) -> None:
    report = run_pipeline(beam_python, "dead-letter", tmp_path)
    base = "'movie': [], 'movie_ratings': [], 'suggestion': 'x'"
    assert report["dead_letter"] == sorted(
        [
            {"element": "'three'", "error": "Customer.age: expected int64, got str 'three'"},
            {
                "element": f"{{'age': 'forty', {base}, 'suggestion_purchased': 0.0}}",
                "error": "Customer.age: expected int64, got str 'forty'",
            },
            {
                "element": f"{{'age': 5, {base}}}",
                "error": "Customer.__init__() missing 1 required keyword-only argument:"
                " 'suggestion_purchased'",
            },
            {
                "element": f"{{'age': 6, {base}, 'suggestion_purchased': 0.0, 'rating': 1}}",
                "error": "Customer.__init__() got an unexpected keyword argument 'rating'",
            },
            {
                "element": "7",
                "error": "Customer: expected a Customer or a mapping of its fields, got int 7",
            },
        ],
        key=str,
    )
    directory = tmp_path / "dataset"
    assert Customer.dataset_manifest(directory).record_count == 3
    records = sorted(Customer.read_dataset(directory), key=lambda record: record.age)
    from_mapping = Customer(
        age=1, movie=["Alien"], movie_ratings=[8.5], suggestion="Aliens", suggestion_purchased=1.0
    )
    assert records == [customer_for(0), from_mapping, customer_for(2)]


def write_runtime_dataset(
    directory: Path, ages: range, shards: int, compression: str | None
) -> list[str]:
    """Writes the dataset with the runtime; returns its shards' paths."""
    manifest = Customer.write_dataset(
        directory, (customer_for(age) for age in ages), shards=shards, compression=compression
    )
    return list(manifest.paths)


def test_read_dataset_reads_every_dataset_a_glob_of_manifests_matches(
    beam_python: str, tmp_path: Path
) -> None:
    write_runtime_dataset(tmp_path / "runs" / "a", range(0, 300), 3, "zlib")
    write_runtime_dataset(tmp_path / "runs" / "b", range(300, 500), 2, None)
    glob = str(tmp_path / "runs" / "*" / "customer.manifest.json")
    report = run_pipeline(beam_python, "read", tmp_path, glob)
    assert report == {
        "ages": list(range(500)),
        "mismatched": [],
        "output_coder": "RecordCoder(customer.Customer)",
        "coder_round_trip": True,
        "coder_bytes_are_encode": True,
        "coder_deterministic": True,
    }


BREAKING = {"age: {key: Age, dtype: int64": "age: {key: Age, dtype: string"}
COMPATIBLE = {"      age:": "      visits: {dtype: int64, default: 0}\n      age:"}


@pytest.mark.parametrize(
    ("edit", "refused"), [(BREAKING, True), (COMPATIBLE, False)], ids=["breaking", "compatible"]
)
def test_read_dataset_checks_the_writer_schema_when_the_pipeline_is_built(
    beam_python: str, tmp_path: Path, edit: dict[str, str], refused: bool
) -> None:
    write_runtime_dataset(tmp_path / "data", range(20), 2, "gzip")
    modules = reader_module(tmp_path, "customer_next", {"version: 1": "version: 2", **edit})
    report = run_pipeline(beam_python, "read-as", tmp_path, str(tmp_path / "data"), str(modules))
    if not refused:
        assert report == {"error": None, "message": "", "records": [[a, 0] for a in range(20)]}
        return
    assert report["error"] == "SchemaMismatchError" and report["records"] == []
    manifest = tmp_path / "data" / "customer.manifest.json"
    assert report["message"].startswith(
        f"dataset {manifest} was written as customer.Customer (version 1, fingerprint"
        " dce8b7e54f6845e6), which customer_next.Customer (version 2, fingerprint"
    )
    assert (
        "\n  breaking (blocks reading): records.Customer.features.age.dtype:" in report["message"]
    )


def test_write_dataset_refuses_an_existing_dataset_and_replaces_it_with_overwrite(
    beam_python: str, tmp_path: Path
) -> None:
    directory = tmp_path / "dataset"
    write_runtime_dataset(directory, range(10), 5, "gzip")
    report = run_pipeline(beam_python, "overwrite", tmp_path, "6")
    assert report["refused"] == (
        f"{directory}/customer.manifest.json: a dataset with prefix 'customer' already exists;"
        " pass overwrite=True to replace it"
    )
    write_id = Customer.dataset_manifest(directory).write_id
    assert dataset_files(directory) == [
        f"customer-{write_id}-00000-of-00002.tfrecord.gz",
        f"customer-{write_id}-00001-of-00002.tfrecord.gz",
        "customer.manifest.json",
    ]
    records = sorted(Customer.read_dataset(directory), key=lambda record: record.age)
    assert records == [customer_for(age) for age in range(1000, 1006)]


def test_transforms_refuse_bad_arguments_and_datasets_that_differ_from_their_manifest(
    beam_python: str, tmp_path: Path
) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("not a manifest")
    resized = write_runtime_dataset(tmp_path / "resized", range(10), 2, "gzip")[1]
    with open(resized, "ab") as shard:
        shard.write(b"\0")
    replaced = write_runtime_dataset(tmp_path / "replaced", range(10), 2, None)[1]
    reordered = list(read_tfrecord(replaced))[::-1]
    write_tfrecord(replaced, reordered)  # the same size and valid records, in another order
    miscounted = tmp_path / "miscounted"
    [miscounted_shard] = write_runtime_dataset(miscounted, range(4), 1, None)
    manifest = json.loads((miscounted / "customer.manifest.json").read_text())
    manifest["shards"][0]["records"] = manifest["record_count"] = 5
    (miscounted / "customer.manifest.json").write_text(json.dumps(manifest))

    errors = run_pipeline(beam_python, "refusals", tmp_path)
    empty, other = tmp_path / "empty", tmp_path / "other"
    expected = {
        "not_a_record": "TfrGenError: builtins.dict is not a record class generated by tfr-gen",
        "no_shards": "TfrGenError: shards must be a positive int or None, got 0",
        "compression": "TfrGenError: unknown dataset compression 'bz2'",
        "prefix": "TfrGenError: invalid dataset prefix 'a/b'",
        "no_manifest": f"TfrGenError: {empty}: no dataset manifest (*.manifest.json) in the",
        "glob_no_match": f"TfrGenError: {empty}/*.manifest.json: matches no dataset manifest",
        "glob_other_file": f"TfrGenError: {other}/*: matches {other}/notes.txt, which is not a",
        "glob_and_prefix": f"TfrGenError: {other}/*: prefix= chooses a dataset in a directory",
        "resized": f"{resized}: the shard has",
        "replaced": f"{replaced}: the shard's bytes differ from those its manifest lists",
        "miscounted": f"{miscounted_shard}: record 4 at byte offset",
    }
    assert errors.keys() == expected.keys()
    for name, start in expected.items():
        assert start in errors[name], (name, errors[name])
    assert "but the manifest lists" in errors["resized"]
    assert "the shard ends after 4 records; its manifest lists 5" in errors["miscounted"]


def test_csv_example_writes_the_valid_rows_and_rejects_the_others_with_reasons(
    beam_python: str, tmp_path: Path
) -> None:
    example = ROOT / "examples" / "beam_csv_to_dataset.py"
    csv = ROOT / "examples" / "data" / "customers.csv"
    output = tmp_path / "customers"
    command = [str(example), "--input", str(csv), "--output", str(output), "--shards", "4"]
    printed = run_beam(beam_python, *command)
    assert f"wrote 13 customers in 4 shard(s): {output / 'customer.manifest.json'}" in printed
    records = {record.age: record for record in Customer.read_dataset(output)}
    assert sorted(records) == [19, 22, 24, 27, 29, 31, 35, 38, 41, 46, 52, 57, 63]
    assert records[29] == Customer(
        age=29,
        movie=["The Shawshank Redemption", "Fight Club"],
        movie_ratings=[9.0, 9.7],
        suggestion="Inception",
        suggestion_purchased=1.0,
        purchase_price=9.99,
    )
    assert records[63].movie == ["The Good, the Bad and the Ugly"]
    assert (records[41].movie, records[41].purchase_price) == ([], 0.0)
    (rejected,) = output.glob("rejected-*.jsonl")
    errors = sorted(json.loads(line)["error"] for line in rejected.read_text().splitlines())
    assert errors == [
        "Customer.age: expected int64, got str 'forty-four'",
        "Customer.movie_ratings: expected float32 values, got list of str [8.4, 'ten']",
        "expected 6 columns (age,movie,movie_ratings,suggestion,suggestion_purchased,"
        "purchase_price), got 2",
    ]


@pytest.fixture
def without_beam(monkeypatch: pytest.MonkeyPatch) -> None:
    """Makes ``import apache_beam`` fail and forgets the imported ``codegen.beam`` modules."""
    monkeypatch.setitem(sys.modules, "apache_beam", None)
    for name in [name for name in sys.modules if name.startswith("codegen.beam")]:
        monkeypatch.delitem(sys.modules, name)


@pytest.mark.usefixtures("without_beam")
def test_codegen_beam_without_beam_names_the_extra_to_install() -> None:
    with pytest.raises(MissingExtraError, match=r"pip install 'tfr-gen\[beam\]'"):
        importlib.import_module("codegen.beam")
