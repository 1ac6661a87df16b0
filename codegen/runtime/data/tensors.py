"""A batch's columns as flat leaves, and the leaves as tensors sharing the columns' memory.

The columns of a batch (``Batch.to_dict()``) are flattened into leaves keyed by attribute name:

* a numeric array column -> ``name``: the array ``[B, *shape]``;
* a :class:`~codegen.runtime.codec.columns.Ragged` column -> ``name.values``: the flat values (an
  array, or a list of strings) and ``name.row_splits``: the int64 row splits over the batch; each
  further nesting level adds ``name.row_splits.<level>`` (1, 2, ...) splitting the rows of the level
  above, like the ``nested_row_splits`` of a ``tf.RaggedTensor``;
* a :class:`~codegen.runtime.codec.columns.Masked` column -> its values as above plus ``name.present``
  (a bool array);
* strings and bytes stay Python lists; a list of arrays stays a list of arrays.

:func:`leaf_tensors` makes each array a tensor over the same memory (``torch.from_numpy``: no copy;
an array numpy marks read-only is copied first, as a tensor cannot be read-only).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from codegen.runtime.codec.columns import Masked, Ragged

__all__ = ["leaf_tensors", "leaves", "tensor", "tensors"]


def tensor(array: np.ndarray[Any, Any]) -> torch.Tensor:
    """``array`` as a tensor sharing its memory (copied first when numpy marks it read-only)."""
    return torch.from_numpy(array if array.flags.writeable else array.copy())


def leaf_tensors(leaf: Any) -> Any:
    """A leaf as tensors: an array as a tensor, arrays in a list as tensors, strings as they are."""
    if isinstance(leaf, np.ndarray):
        return tensor(leaf)
    if isinstance(leaf, list) and leaf and isinstance(leaf[0], np.ndarray):
        return [tensor(value) for value in leaf]
    return leaf


def _add(out: dict[str, Any], name: str, column: Any) -> None:
    """Put the leaves of one column into ``out`` under ``name`` (see the module docstring)."""
    if isinstance(column, Masked):
        _add(out, name, column.values)
        out[f"{name}.present"] = column.present
    elif isinstance(column, Ragged):
        out[f"{name}.row_splits"] = column.row_splits
        level = 1
        values = column.values
        while isinstance(values, Ragged):
            out[f"{name}.row_splits.{level}"] = values.row_splits
            values = values.values
            level += 1
        out[f"{name}.values"] = values
    else:
        out[name] = column


def leaves(columns: dict[str, Any]) -> dict[str, Any]:
    """The columns of a batch (``to_dict()``) as leaves, keyed as the module docstring says."""
    out: dict[str, Any] = {}
    for name, column in columns.items():
        _add(out, name, column)
    return out


def tensors(columns: dict[str, Any]) -> dict[str, Any]:
    """The columns of a batch as tensors, keyed as the module docstring says."""
    return {name: leaf_tensors(leaf) for name, leaf in leaves(columns).items()}
