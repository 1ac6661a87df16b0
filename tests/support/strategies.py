"""Hypothesis strategies for records of any generated class, and :data:`SHAPES`, a schema with every kind
of column (raw, ragged and ``SequenceExample`` records)."""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence
from typing import Any

import numpy as np
from hypothesis import strategies as st

from codegen.dtypes import DTYPES, DType, Kind
from codegen.kinds import IMAGE_ENCODINGS
from codegen.runtime import FeatureInfo

SHAPES = textwrap.dedent(
    """\
    version: 1
    doc: Raw, ragged and SequenceExample records.
    records:
      Tensors:
        features:
          fixed: {dtype: float64, shape: [2, 2], encoding: raw}
          rows: {dtype: int16, shape: [null, 3], encoding: raw}
          image: {dtype: uint8, shape: [null, null, 2], encoding: raw, optional: true}
          flags: {dtype: int8, shape: [3], encoding: raw, optional: true}
          half: {dtype: float16, shape: [null], encoding: raw, optional: true}
          boxes: {dtype: float32, shape: [null, null]}
          cells: {key: cell/ids, dtype: int64, shape: [null, null, null, 2]}
          words: {dtype: string, shape: [null, null], optional: true}
          pairs: {dtype: bytes, shape: [null, null, 2]}
          small: {dtype: uint8, shape: [null, null], optional: true}
      Steps:
        context:
          length: {dtype: int64}
          source: {dtype: string, optional: true}
          scores: {dtype: float32, shape: [null]}
        sequence:
          tokens: {dtype: int64}
          frame: {dtype: float32, shape: [4]}
          spans: {dtype: int32, shape: [null], optional: true}
          pairs: {dtype: bool, shape: [null, 2]}
          word: {dtype: string}
          grid: {dtype: bytes, shape: [2]}
          words: {dtype: string, shape: [null]}
          letters: {dtype: string, shape: [null, 2], optional: true}
    """
)
"""A schema of every feature kind the list-encoded schemas of ``schemas/`` lack."""


def elements(dtype: DType) -> st.SearchStrategy[Any]:
    """Any value of ``dtype`` a constructor takes (its extremes often)."""
    if dtype.kind is Kind.BOOL:
        return st.booleans()
    if dtype.kind is Kind.INT:
        assert dtype.lo is not None and dtype.hi is not None
        return st.sampled_from((dtype.lo, dtype.hi, 0, 1)) | st.integers(dtype.lo, dtype.hi)
    if dtype.kind is Kind.FLOAT:
        return st.floats(width=8 * dtype.numpy.itemsize)  # type: ignore[arg-type]
    if dtype.kind is Kind.STR:
        return st.text(st.characters(codec="utf-8"), max_size=4)
    return st.binary(max_size=4)


def _block(draw: st.DrawFn, dtype: DType, dims: Sequence[int]) -> Any:
    """Values of ``dtype`` of shape ``dims``: an array, or nested lists of strings."""
    flat = draw(st.lists(elements(dtype), min_size=math.prod(dims), max_size=math.prod(dims)))
    if not dims:
        return flat[0]
    if dtype.numeric:
        return np.array(flat, dtype.numpy).reshape(dims)
    for dim in reversed(dims[1:]):
        flat = [flat[i : i + dim] for i in range(0, len(flat), dim)]
    return flat


def _dims(draw: st.DrawFn, shape: Sequence[int | None]) -> list[int]:
    return [draw(st.integers(0, 3)) if d is None else d for d in shape]


def _ragged(draw: st.DrawFn, dtype: DType, levels: int, row: Sequence[int]) -> Any:
    if levels == 1:
        return _block(draw, dtype, [draw(st.integers(0, 3)), *row])
    return [_ragged(draw, dtype, levels - 1, row) for _ in range(draw(st.integers(0, 3)))]


@st.composite
def feature_value(draw: st.DrawFn, info: FeatureInfo) -> Any:
    """A value a record's constructor takes for the feature ``info``."""
    dtype = DTYPES[info.dtype]
    if info.sequence:
        steps = draw(st.integers(0, 3))
        if dtype.numeric and info.fixed:
            return _block(draw, dtype, [steps, *_dims(draw, info.shape)])
        return [_block(draw, dtype, _dims(draw, info.shape)) for _ in range(steps)]
    if info.optional and draw(st.integers(0, 3)) == 0:
        return None
    if info.encoding in IMAGE_ENCODINGS:  # pixels from a seed: hypothesis draws no 196,608 values
        height, width, channels = info.shape
        dims = [
            height or draw(st.integers(1, 3)),
            width or draw(st.integers(1, 3)),
            channels or draw(st.sampled_from((1, 3))),
        ]
        rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
        return rng.integers(0, 256, dims, dtype=np.uint8)
    nulls = info.shape.count(None)
    if info.encoding == "list" and nulls >= 2:
        return _ragged(draw, dtype, nulls, [d for d in info.shape if d is not None])
    return _block(draw, dtype, _dims(draw, info.shape))


@st.composite
def records_of(draw: st.DrawFn, cls: type) -> list[Any]:
    """A few records of ``cls``."""
    infos = list(cls.feature_spec())  # type: ignore[attr-defined]
    count = draw(st.integers(0, 5))
    return [cls(**{info.name: draw(feature_value(info)) for info in infos}) for _ in range(count)]
