"""The PyTorch side of a :class:`~codegen.runtime.data.dataset.Dataset`: batches as dicts of tensors.

``dataset.to_torch()`` is a ``torch.utils.data.IterableDataset``; give it to
``DataLoader(..., batch_size=None)`` (the batches are already made), with any ``num_workers``: each
worker reads its own shard of the files. Each batch becomes a dict keyed by attribute name:

* a numeric array column -> ``name``: a tensor ``[B, *shape]`` of the same dtype (no copy);
* a :class:`~codegen.runtime.codec.columns.Ragged` column -> ``name.values``: the flat values (a tensor,
  or a list of strings) and ``name.row_splits``: int64 row splits over the batch; each further
  nesting level adds ``name.row_splits.<level>`` (1, 2, ...) splitting the rows of the level above,
  like the ``nested_row_splits`` of a ``tf.RaggedTensor``. Values plus splits rather than
  ``torch.nested`` tensors: they are exact for every nesting depth, cost no copy, and
  ``torch.nested.nested_tensor_from_jagged(values, offsets=row_splits)`` builds a nested tensor from
  them when one is wanted;
* a :class:`~codegen.runtime.codec.columns.Masked` column -> its values as above plus ``name.present``
  (a bool tensor);
* strings and bytes stay Python lists; a list of arrays becomes a list of tensors.

torch is optional: importing this module without it raises
:class:`~codegen.errors.MissingExtraError`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Protocol

import numpy as np

from codegen.errors import MissingExtraError
from codegen.runtime.codec.columns import Masked, Ragged

try:
    import torch
    from torch.utils.data import IterableDataset
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise MissingExtraError(
        "Dataset.to_torch needs PyTorch: pip install torch (CPU builds work)"
    ) from exc

__all__ = ["Batches", "TorchBatches", "tensors"]


def _tensor(array: np.ndarray[Any, Any]) -> torch.Tensor:
    """``array`` as a tensor sharing its memory (copied first when numpy marks it read-only)."""
    return torch.from_numpy(array if array.flags.writeable else array.copy())


def _leaf(values: Any) -> Any:
    """Flat values: an array as a tensor, strings as they are, arrays in a list as tensors."""
    if isinstance(values, np.ndarray):
        return _tensor(values)
    if values and isinstance(values[0], np.ndarray):
        return [_tensor(value) for value in values]
    return values


def _add(out: dict[str, Any], name: str, column: Any) -> None:
    """Put the tensors of one column into ``out`` under ``name`` (see the module docstring)."""
    if isinstance(column, Masked):
        _add(out, name, column.values)
        out[f"{name}.present"] = _tensor(column.present)
    elif isinstance(column, Ragged):
        out[f"{name}.row_splits"] = _tensor(column.row_splits)
        level = 1
        values = column.values
        while isinstance(values, Ragged):
            out[f"{name}.row_splits.{level}"] = _tensor(values.row_splits)
            values = values.values
            level += 1
        out[f"{name}.values"] = _leaf(values)
    else:
        out[name] = _leaf(column)


def tensors(columns: dict[str, Any]) -> dict[str, Any]:
    """The columns of a batch (``to_dict()``) as tensors, keyed as the module docstring says."""
    out: dict[str, Any] = {}
    for name, column in columns.items():
        _add(out, name, column)
    return out


class Batches(Protocol):
    """What the adapter needs of a dataset: its batches (sharded per DataLoader worker), its
    length, epoch and resume state (see :class:`~codegen.runtime.data.dataset.Dataset`)."""

    def __iter__(self) -> Iterator[Any]: ...

    def __len__(self) -> int: ...

    def set_epoch(self, epoch: int) -> None: ...

    def state_dict(self) -> dict[str, Any]: ...

    def load_state_dict(self, state: dict[str, Any]) -> None: ...


class TorchBatches(IterableDataset[dict[str, Any]]):
    """The batches of ``batches`` as dicts of tensors; ``columns`` gives a batch's columns by
    attribute name.

    ``len()``, ``set_epoch()``, ``state_dict()`` and ``load_state_dict()`` are the dataset's, so
    ``torchdata.stateful_dataloader.StatefulDataLoader`` saves and restores each worker's position
    (and a plain ``DataLoader`` at ``num_workers=0`` the main process's, through these methods).
    """

    def __init__(self, batches: Batches, columns: Callable[[Any], dict[str, Any]]) -> None:
        self.batches = batches
        self.columns = columns

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for batch in self.batches:
            yield tensors(self.columns(batch))

    def __len__(self) -> int:
        return len(self.batches)

    def set_epoch(self, epoch: int) -> None:
        """The dataset's :meth:`~codegen.runtime.data.dataset.Dataset.set_epoch`."""
        self.batches.set_epoch(epoch)

    def state_dict(self) -> dict[str, Any]:
        """The dataset's state in this process (a DataLoader worker's, in a worker)."""
        return self.batches.state_dict()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Loads a state from :meth:`state_dict` into the dataset."""
        self.batches.load_state_dict(state)
