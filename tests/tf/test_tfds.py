"""TensorFlow Datasets: a dataset built by TFDS's own builder machinery imports to a schema (``tfr-gen
import-tfds``), and the generated record reads every split without TensorFlow, equal to TFDS's ``as_numpy``."""

from __future__ import annotations

import json
import pickle
import subprocess
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from codegen.errors import DataError, TfrGenError
from support.cli import run_cli
from support.modules import generate_module
from support.processes import PYTHON


@pytest.fixture(scope="module")
def prepared(tf: Any, tfds: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    from support.tfds_builders import prepare

    return prepare(tmp_path_factory.mktemp("tfds"))


@pytest.fixture(scope="module")
def tiny(prepared: Path, tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    out = tmp_path_factory.mktemp("tiny")
    code, _, err = run_cli("import-tfds", str(prepared), "-o", "tiny.yaml", cwd=out)
    assert code == 0, err
    return generate_module((out / "tiny.yaml").read_text(encoding="utf-8"), "tfds_tiny", out)


def test_import_tfds_maps_every_feature_and_names_what_it_leaves_out(
    prepared: Path, tmp_path: Path
) -> None:
    code, out, err = run_cli("import-tfds", str(prepared), "-o", "tiny.yaml", cwd=tmp_path)
    assert code == 0, err
    assert out == "wrote tiny.yaml (TfrGenTiny: 15 features)\n"
    assert (
        "feature 'depth' left out: Tensor: a zlib-compressed tensor (encoding: zlib) has no tfr-gen form"
        in err
    )
    text = (tmp_path / "tiny.yaml").read_text(encoding="utf-8")
    assert text.startswith("# Imported by 'tfr-gen import-tfds'")
    for line in (
        "      embedding: {dtype: float32, shape: [2, 3]}\n",
        "      flag: {dtype: bool}\n",
        "      heights: {key: heights/value, dtype: float32, shape: [null, null], encoding: raw,"
        " shape_from: {key: heights/shape}}\n",
        "      patch: {dtype: uint16, shape: [2, 2], encoding: raw}\n",
        "      image: {dtype: uint8, shape: [null, null, 3], encoding: jpeg}\n",
        "      label: {dtype: int64, doc: 'TFDS ClassLabel of 3 classes: 0 cat, 1 dog, 2 bird.'}\n",
        "      mask: {dtype: uint8, shape: [8, 8, 1], encoding: png}\n",
        "      meta_id: {key: meta/id, dtype: int64}\n",
        "      meta_name: {key: meta/name, dtype: string}\n",
        "      meta_positions: {key: meta/positions, dtype: int32, shape: [null]}\n",
        "      objects_bbox: {key: objects/bbox, dtype: float32, shape: [null, 4]}\n",
        "      objects_kind: {key: objects/kind, dtype: int64, shape: [null], doc: TFDS ClassLabel of 5 classes.}\n",
        "      scores: {dtype: float32, shape: [null]}\n",
        "      text: {dtype: string}\n",
        "      tokens: {key: tokens/ragged_flat_values, dtype: int64, shape: [null, null],"
        " row_lengths_from: [tokens/ragged_row_lengths_0]}\n",
    ):
        assert line in text


def _assert_equal(record: Any, expected: dict[str, Any]) -> None:
    for name, value in expected.items():
        if name == "depth":
            continue  # left out of the schema
        got = getattr(record, name)
        if name in ("text", "meta_name"):
            assert got == value.decode("utf-8"), name
        elif name == "tokens":
            assert [list(row) for row in got] == value, name
        elif isinstance(value, np.ndarray):
            assert got.dtype == value.dtype, name
            np.testing.assert_array_equal(got, value, err_msg=name)
        else:
            assert got == value, name


@pytest.mark.parametrize("split", ["train", "test"])
def test_every_split_reads_as_tfds_reads_it(prepared: Path, tiny: ModuleType, split: str) -> None:
    from support.tfds_builders import SPLITS, as_numpy

    expected = as_numpy(prepared, split)
    records = list(tiny.TfrGenTiny.read_dataset(prepared, split=split))
    assert len(records) == len(expected) == SPLITS[split]
    for record, example in zip(records, expected, strict=True):
        _assert_equal(record, example)


def test_a_split_reads_as_a_dataset_with_its_counts_from_dataset_info(
    prepared: Path, tiny: ModuleType
) -> None:
    records = list(tiny.TfrGenTiny.read_dataset(prepared, split="train"))
    dataset = tiny.TfrGenTiny.dataset(prepared, split="train", batch_size=4)
    assert [Path(f).name for f in dataset.files] == [
        f"tfr_gen_tiny-train.tfrecord-0000{i}-of-00003" for i in range(3)
    ]
    assert len(dataset) == 3  # 11 records in batches of 4, counted by TFDS: nothing scanned
    batches = list(dataset)
    assert [len(b) for b in batches] == [4, 4, 3]
    assert [r for b in batches for r in b.records()] == records
    one_by_one = tiny.TfrGenTiny.dataset(prepared, split="test", batch_size=None)
    assert len(one_by_one) == 4
    assert list(one_by_one) == list(tiny.TfrGenTiny.read_dataset(prepared, split="test"))


def test_a_wrong_split_a_missing_shard_and_a_wrong_count_are_named(
    prepared: Path, tiny: ModuleType, tmp_path: Path
) -> None:
    Tiny = tiny.TfrGenTiny
    with pytest.raises(
        TfrGenError, match=r"has no split 'validation' \(its splits: 'train', 'test'\)"
    ):
        Tiny.read_dataset(prepared, split="validation")
    with pytest.raises(TfrGenError, match=r"is a prepared TFDS dataset: name the split"):
        Tiny.dataset(prepared, batch_size=4)
    with pytest.raises(
        TfrGenError, match=r"not a prepared TFDS dataset: it has no dataset_info.json"
    ):
        Tiny.read_dataset(tmp_path, split="train")
    copy = tmp_path / "copy"
    copy.mkdir()
    for path in prepared.iterdir():
        (copy / path.name).write_bytes(path.read_bytes())
    info = json.loads((copy / "dataset_info.json").read_text(encoding="utf-8"))
    train = next(s for s in info["splits"] if s["name"] == "train")
    train["shardLengths"][1] = str(int(train["shardLengths"][1]) + 1)
    (copy / "dataset_info.json").write_text(json.dumps(info), encoding="utf-8")
    with pytest.raises(
        DataError, match=r"00001-of-00003: record \d+ at byte offset \d+: the shard ends"
    ):
        list(Tiny.read_dataset(copy, split="train"))
    (copy / "tfr_gen_tiny-test.tfrecord-00002-of-00003").unlink()
    with pytest.raises(TfrGenError, match=r"00002-of-00003: the shard is missing"):
        Tiny.dataset(copy, split="test", batch_size=2)


_READ_WITHOUT_TENSORFLOW = """
import pickle, sys
sys.modules["tensorflow"] = None  # the generated class reads TFDS data without TensorFlow
sys.path.insert(0, sys.argv[1])
import tfds_tiny
rows = {}
for split in ("train", "test"):
    records = tfds_tiny.TfrGenTiny.read_dataset(sys.argv[2], split=split)
    rows[split] = [{name: getattr(r, name) for name in type(r).__slots__} for r in records]
sys.stdout.buffer.write(pickle.dumps(rows))
"""


def test_every_split_reads_without_tensorflow(prepared: Path, tiny: ModuleType) -> None:
    from support.tfds_builders import SPLITS, as_numpy

    run = subprocess.run(
        [*PYTHON, "-c", _READ_WITHOUT_TENSORFLOW, str(Path(tiny.__file__ or "").parent), prepared],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stderr.decode()
    rows = pickle.loads(run.stdout)
    for split, count in SPLITS.items():
        expected = as_numpy(prepared, split)
        assert len(rows[split]) == len(expected) == count
        for values, example in zip(rows[split], expected, strict=True):
            _assert_equal(tiny.TfrGenTiny(**values), example)


def test_import_tfds_names_a_directory_that_is_not_a_prepared_dataset(tmp_path: Path) -> None:
    code, out, err = run_cli("import-tfds", str(tmp_path), cwd=tmp_path)
    assert (code, out) == (2, "")
    assert err == (
        f"tfr-gen import-tfds: error: {tmp_path}: not a prepared TFDS dataset: it has no"
        " features.json (name the version directory, such as '<data_dir>/mnist/3.0.1')\n"
    )
    (tmp_path / "features.json").write_text("[1]", encoding="utf-8")
    code, _, err = run_cli("import-tfds", str(tmp_path), cwd=tmp_path)
    assert code == 2
    assert err.endswith("features.json: expected a JSON object, got list\n")
