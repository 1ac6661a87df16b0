"""Equality of attribute values as generated records compare them: arrays by shape and values, nested lists deeply."""

from __future__ import annotations

from typing import Any

import numpy as np


def arrays_equal(a: np.ndarray[Any, Any] | None, b: np.ndarray[Any, Any] | None) -> bool:
    """Whether two optional arrays hold the same shape and values (``None`` equals only ``None``)."""
    if a is None or b is None:
        return a is b
    return a.shape == b.shape and bool(np.array_equal(a, b))


def values_equal(a: object, b: object) -> bool:
    """Deep equality of nested lists/tuples of arrays, scalars and strings; arrays compare by shape and values."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and arrays_equal(a, b)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(values_equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)
