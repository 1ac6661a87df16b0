"""The PyTorch adapter: a real DataLoader with two workers reads every record once, and batches
become dicts of tensors (ragged columns as values plus row splits)."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from codegen.runtime.codec.columns import Masked, Ragged
from codegen.runtime.data.dataset import Dataset
from support.modules import generate_module
from support.shards import ITEM_SCHEMA, SIZES, write_shards

torch = pytest.importorskip("torch")
from codegen.runtime.data.pytorch import tensors  # noqa: E402  (needs torch)


@pytest.fixture(scope="module")
def module(tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    return generate_module(ITEM_SCHEMA, "torch_items", tmp_path_factory.mktemp("torch_module"))


def test_a_dataloader_with_two_workers_reads_every_record_once(
    module: ModuleType, tmp_path: Path
) -> None:
    paths = write_shards(module, tmp_path)
    dataset = Dataset.of_batches(
        paths, module.ItemBatch.decode, module.Item.decode, batch_size=5, shuffle_buffer=8
    )
    loader = torch.utils.data.DataLoader(dataset.to_torch(), batch_size=None, num_workers=2)
    seen: list[int] = []
    for batch in loader:
        assert set(batch) == {"id", "tokens.values", "tokens.row_splits", "name"}
        assert batch["id"].dtype == torch.int64 and batch["tokens.values"].dtype == torch.int32
        splits = batch["tokens.row_splits"]
        assert (
            splits.dtype == torch.int64 and splits[0] == 0 and len(splits) == len(batch["id"]) + 1
        )
        ids = batch["id"].tolist()
        rows = [
            batch["tokens.values"][a:b].tolist()
            for a, b in zip(splits.tolist()[:-1], splits.tolist()[1:], strict=True)
        ]
        assert rows == [list(range(i % 4)) for i in ids]
        assert batch["name"] == [f"item {i}" for i in ids]
        seen.extend(ids)
    assert sorted(seen) == list(range(sum(SIZES)))


def test_columns_become_tensors_without_copies() -> None:
    dense = np.arange(6, dtype=np.uint16).reshape(3, 2)
    inner = Ragged(np.arange(5, dtype=np.float32).reshape(5, 1), np.array([0, 2, 2, 5]))
    nested = Ragged(inner, np.array([0, 1, 3, 3]))
    masked = Masked(np.array([1.5, 0.0, 2.5], np.float64), np.array([True, False, True]))
    frozen = np.frombuffer(b"\x01\x02\x03", np.uint8)
    out = tensors(
        {
            "dense": dense,
            "nested": nested,
            "masked": masked,
            "texts": ["a", "b", "c"],
            "frozen": frozen,
            "images": [np.zeros((1, 2), np.uint8), np.ones((2, 1), np.uint8)],
        }
    )
    assert set(out) == {
        "dense",
        "nested.row_splits",
        "nested.row_splits.1",
        "nested.values",
        "masked",
        "masked.present",
        "texts",
        "frozen",
        "images",
    }
    assert out["dense"].dtype == torch.uint16 and out["dense"].shape == (3, 2)
    dense[0, 0] = 9
    assert int(out["dense"][0, 0]) == 9, "the tensor shares the array's memory"
    assert out["nested.row_splits"].tolist() == [0, 1, 3, 3]
    assert out["nested.row_splits.1"].tolist() == [0, 2, 2, 5]
    assert out["nested.values"].shape == (5, 1)
    assert out["masked"].tolist() == [1.5, 0.0, 2.5] and out["masked.present"].tolist() == [
        True,
        False,
        True,
    ]
    assert out["texts"] == ["a", "b", "c"]
    assert out["frozen"].tolist() == [1, 2, 3]
    assert [tuple(t.shape) for t in out["images"]] == [(1, 2), (2, 1)]


def test_values_and_row_splits_make_a_nested_tensor() -> None:
    out: dict[str, Any] = tensors(
        {"x": Ragged(np.arange(5, dtype=np.float32), np.array([0, 2, 2, 5]))}
    )
    nested = torch.nested.nested_tensor_from_jagged(out["x.values"], offsets=out["x.row_splits"])
    assert [t.tolist() for t in nested.unbind()] == [[0.0, 1.0], [], [2.0, 3.0, 4.0]]
