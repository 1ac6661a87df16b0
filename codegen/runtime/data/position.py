"""Where a :class:`~codegen.runtime.data.dataset.Dataset` is: its epoch counter and resume state.

**Epochs.** Every iteration over a dataset (a ``for`` loop, or a DataLoader epoch in each worker)
starts at the dataset's next epoch and moves it on by ``epochs`` as it starts, so each runs new
epochs with their own order, deterministic for the seed: the first iteration runs epoch 0, the
second epoch 1 (with ``epochs=1``), and so on. :meth:`EpochCounter.set` (``Dataset.set_epoch``)
sets the next epoch explicitly, as ``DistributedSampler.set_epoch`` does. The counter lives in
shared memory, one slot per DataLoader worker, so it advances the same way whether the workers
persist or are started afresh each epoch, and ``set_epoch`` in the main process reaches them.

**State.** :class:`Position` is where an iteration is: its epoch, the records it has taken from
that epoch's stream of raw records (after sharding and shuffling, before decoding) and the epoch
it stops at. Since that stream is a function of the seed, the epoch and the shard, resuming
re-reads the epoch's records up to the position without decoding them, and goes on from there.
"""

from __future__ import annotations

import multiprocessing
from dataclasses import dataclass
from multiprocessing.context import get_spawning_popen
from typing import Any

__all__ = ["SLOTS", "EpochCounter", "Position"]

SLOTS = 256
"""Workers with their own slot in the shared epoch counter; workers beyond share the last."""


@dataclass(frozen=True, slots=True)
class Position:
    """An iteration at ``consumed`` raw records into ``epoch``, running until epoch ``stop``
    (``None``: without end)."""

    epoch: int
    consumed: int
    stop: int | None


class EpochCounter:
    """The next epoch of each worker's iterations (slot 0 is the main process's and worker 0's).

    Held in shared memory made before the DataLoader starts its workers, which inherit it; a copy
    pickled otherwise (not for a worker being spawned) carries the values, not the memory.
    """

    def __init__(self) -> None:
        self._slots: Any = multiprocessing.RawArray("q", SLOTS)

    def get(self, slot: int) -> int:
        """The next epoch of ``slot``."""
        return int(self._slots[min(slot, SLOTS - 1)])

    def claim(self, slot: int, count: int | None) -> int:
        """The next epoch of ``slot``, moved on by ``count`` epochs (``None``: without end)."""
        index = min(slot, SLOTS - 1)
        epoch = int(self._slots[index])
        if count is not None:
            self._slots[index] = epoch + count
        return epoch

    def set(self, epoch: int, slot: int | None = None) -> None:
        """Sets the next epoch of ``slot``, or of every slot."""
        if slot is None:
            self._slots[:] = [epoch] * SLOTS
        else:
            self._slots[min(slot, SLOTS - 1)] = epoch

    def __getstate__(self) -> object:
        if get_spawning_popen() is not None:
            return self._slots  # a worker being started inherits the shared memory
        return list(self._slots)

    def __setstate__(self, state: object) -> None:
        if isinstance(state, list):
            self._slots = multiprocessing.RawArray("q", state)
        else:
            self._slots = state
