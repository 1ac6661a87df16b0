"""The PyTorch side of a :class:`~codegen.runtime.data.dataset.Dataset`: batches as dicts of tensors.

``dataset.to_torch()`` is a ``torch.utils.data.IterableDataset``; give it to
``DataLoader(..., batch_size=None)`` (the batches are already made), with any ``num_workers``: each
worker reads its own shard of the files. Each batch becomes a dict keyed by attribute name, its
columns flattened as :mod:`codegen.runtime.data.tensors` says: a numeric column a tensor of the same
dtype sharing the column's memory (no copy), a ragged column its flat values plus int64 row splits
(``torch.nested.nested_tensor_from_jagged(values, offsets=row_splits)`` builds a nested tensor from
them), a masked column its values plus a bool ``name.present``; strings and bytes stay Python lists.

In a DataLoader worker the batches travel to the main process through shared memory the worker
reuses (:mod:`codegen.runtime.data.transfer`) rather than through fresh shared memory per tensor:
the worker copies a batch's arrays once into a segment, and the main process's tensors are views of
it; a segment is written again only after every tensor of its batch has been freed.
``to_torch(shared_memory=False)`` sends the tensors the DataLoader's own way.

torch is optional: importing this module without it raises
:class:`~codegen.errors.MissingExtraError`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Protocol, cast

from codegen.errors import MissingExtraError

try:
    import torch
    from torch.utils.data import IterableDataset
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise MissingExtraError(
        "Dataset.to_torch needs PyTorch: pip install torch (CPU builds work)"
    ) from exc

from codegen.runtime.data import transfer
from codegen.runtime.data.tensors import leaf_tensors, leaves, tensors

__all__ = ["Batches", "TorchBatches", "tensors"]


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

    In a DataLoader worker (with ``shared_memory``, where :data:`~codegen.runtime.data.transfer.AVAILABLE`)
    it yields :class:`~codegen.runtime.data.transfer.SharedBatch` objects, which the main process
    unpickles into the dicts of tensors.

    ``len()``, ``set_epoch()``, ``state_dict()`` and ``load_state_dict()`` are the dataset's, so
    ``torchdata.stateful_dataloader.StatefulDataLoader`` saves and restores each worker's position
    (and a plain ``DataLoader`` at ``num_workers=0`` the main process's, through these methods).
    """

    def __init__(
        self,
        batches: Batches,
        columns: Callable[[Any], dict[str, Any]],
        *,
        shared_memory: bool = True,
    ) -> None:
        self.batches = batches
        self.columns = columns
        self.shared_memory = shared_memory
        """Whether batches made in DataLoader workers travel through the workers' reused shared
        memory (see the module docstring)."""

    def __iter__(self) -> Iterator[dict[str, Any]]:
        columns = self.columns
        worker = torch.utils.data.get_worker_info() is not None
        if worker and self.shared_memory and transfer.AVAILABLE:
            # Large columns are decoded into shared memory, the rest copied into a segment;
            # unpickled in the main process, each batch becomes its dict of tensors.
            transfer.decode_into_shared_memory()
            for batch in self.batches:
                yield cast("dict[str, Any]", transfer.share(leaves(columns(batch))))
            return
        for batch in self.batches:
            yield {name: leaf_tensors(leaf) for name, leaf in leaves(columns(batch)).items()}

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
