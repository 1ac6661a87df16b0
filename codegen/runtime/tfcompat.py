"""The TensorFlow side of the feature codecs: parse specs, post-processing, parsing.

TensorFlow is imported lazily (:func:`import_tensorflow`) by each function here.

A feature's parse spec, from its :class:`FeatureInfo`:

* fully known shape, required or with a default:
  ``tf.io.FixedLenFeature(shape, wire dtype, default_value)``;
* anything else (a leading ``None``, or optional): ``tf.io.RaggedFeature`` of the flat values.

Post-processing gives the flat values of a leading ``None`` shape ``[n, *inner]`` rows (a batch: a
ragged ``[batch, (n), *inner]`` tensor), and those of an optional fixed shape ``[0 or 1, *shape]``
(a batch: ``[batch, (0 or 1), *shape]``), after checking each Example's count fits. (Partitions
``UniformRowLength(k)`` in the spec would not do: over a batch TensorFlow reshapes the values of all
Examples together, so counts of 3 and 3 with ``k = 2`` silently give rows that span Examples.)

Post-processing casts the wire dtype back to the declared one: narrow integers with ``tf.cast``,
``bool`` as ``!= 0``; ``float32`` and strings stay as parsed (strings as ``tf.string`` bytes).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any, Protocol

import numpy as np

from codegen.errors import MissingExtraError, RecordError
from codegen.runtime.dtypes import DTYPES, Kind
from codegen.runtime.featureinfo import FeatureInfo

_WIRE_DTYPES = {"int64_list": "int64", "float_list": "float32", "bytes_list": "string"}


def import_tensorflow(what: str) -> Any:
    """The ``tensorflow`` module, or :class:`MissingExtraError` saying ``what`` needs it."""
    try:
        import tensorflow as tf
    except ImportError as exc:
        raise MissingExtraError(
            f"TensorFlow is required for {what}; install it with: pip install 'tfr-gen[tensorflow]'"
        ) from exc
    return tf


class TfCodec(Protocol):
    """What :func:`tf_parse_example` needs of a feature codec."""

    @property
    def name(self) -> str: ...

    @property
    def key(self) -> str: ...

    def tf_spec(self) -> Any: ...

    def tf_post(self, value: Any, *, batched: bool) -> Any: ...


def parse_spec(info: FeatureInfo) -> Any:
    """The ``tf.io`` parse spec entry (``FixedLenFeature`` or ``RaggedFeature``) of one feature."""
    tf = import_tensorflow(f"the TensorFlow parse spec of feature {info.name!r}")
    wire_dtype = tf.as_dtype(_WIRE_DTYPES[info.wire])
    if info.fixed and (info.default is not None or not info.optional):
        return tf.io.FixedLenFeature(info.shape, wire_dtype, default_value=_wire_default(info))
    return tf.io.RaggedFeature(wire_dtype, row_splits_dtype=tf.int64)


def _wire_default(info: FeatureInfo) -> Any:
    """The default as the ``default_value`` of a ``FixedLenFeature`` (wire dtype), or ``None``."""
    if info.default is None:
        return None
    kind = DTYPES[info.dtype].kind
    if kind is Kind.STR:
        return _utf8(info.default)
    if kind is Kind.BYTES:
        return info.default
    return np.array(info.default, dtype=np.float32 if kind is Kind.FLOAT else np.int64)


def _utf8(value: object) -> object:
    """A string default (a str or nested tuples of str) with every str encoded to UTF-8 bytes."""
    if isinstance(value, str):
        return value.encode("utf-8")
    assert isinstance(value, tuple)
    return [_utf8(item) for item in value]


def post_process(info: FeatureInfo, value: Any, *, batched: bool) -> Any:
    """A tensor parsed under :func:`parse_spec`, in the declared dtype and shape.

    ``batched`` says whether it came from ``tf.io.parse_example`` (a batch) or from
    ``tf.io.parse_single_example``.
    """
    tf = import_tensorflow(f"post-processing feature {info.name!r}")
    leading_none_rows = not info.fixed and len(info.shape) > 1
    if leading_none_rows or info.fixed and info.optional and info.default is None:
        dims = tuple(d for d in info.shape if d is not None)  # the inner shape for a leading None
        value = _rows(tf, info, value, dims, batched=batched)
    dtype = DTYPES[info.dtype]
    if dtype.kind is Kind.BOOL:
        return tf.not_equal(value, 0)
    if dtype.kind is Kind.INT and dtype.name != "int64":
        return tf.cast(value, tf.as_dtype(dtype.numpy))
    return value


def _rows(tf: Any, info: FeatureInfo, value: Any, row: tuple[int, ...], *, batched: bool) -> Any:
    """The flat values of each Example as rows of shape ``row`` (ragged over a batch).

    An optional fixed-shape feature (``row`` is its shape) needs 0 or one row per Example; a
    leading ``None`` (``row`` is the inner shape) needs a whole number of rows.
    """
    size = math.prod(row)
    lengths = value.row_lengths() if batched else tf.size(value, out_type=tf.int64)
    if info.fixed:
        fits, counts = tf.logical_or(tf.equal(lengths, 0), tf.equal(lengths, size)), f"0 or {size}"
    else:
        fits, counts = tf.equal(lengths % size, 0), f"a multiple of {size}"
    tf.debugging.assert_equal(
        tf.reduce_all(fits),
        True,
        message=f"feature {info.name!r} (key {info.key!r}): expected {counts} {info.wire} values "
        f"per Example for shape {info.shape_text}",
    )
    if not batched:
        return tf.reshape(value, [-1, *row])
    rows = tf.reshape(value.values, [-1, *row])
    return tf.RaggedTensor.from_row_splits(rows, value.row_splits // size, validate=False)


def tf_parse_example(serialized: Any, codecs: Iterable[TfCodec] | Mapping[str, TfCodec]) -> dict[str, Any]:
    """Parse serialized Examples with TensorFlow: attribute name -> tensor (declared dtype, shape).

    ``serialized`` is a scalar string tensor (one Example, via ``tf.io.parse_single_example``) or a
    1-D one (a batch, via ``tf.io.parse_example``). ``codecs`` are a record's feature codecs, or a
    mapping from attribute name to codec.
    """
    tf = import_tensorflow("parsing Examples with TensorFlow")
    named = dict(codecs) if isinstance(codecs, Mapping) else {c.name: c for c in codecs}
    try:
        tensor = tf.convert_to_tensor(serialized, dtype=tf.string)
    except (TypeError, ValueError) as exc:
        raise RecordError(f"expected serialized Examples (a string tensor), got {type(serialized).__name__}") from exc
    spec = {codec.key: codec.tf_spec() for codec in named.values()}
    rank = tensor.shape.rank
    if rank == 0:
        parsed = tf.io.parse_single_example(tensor, spec)
    elif rank == 1:
        parsed = tf.io.parse_example(tensor, spec)
    else:
        raise RecordError(f"expected a scalar or 1-D string tensor of serialized Examples, got shape {tensor.shape}")
    return {name: codec.tf_post(parsed[codec.key], batched=rank == 1) for name, codec in named.items()}
