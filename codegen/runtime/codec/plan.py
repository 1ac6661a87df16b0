"""Decoding a whole ``tf.train.Example`` or ``SequenceExample`` record in one call:
:func:`example_decoder`.

A generated ``Record.decode(data)`` calls the decoder made here from its codecs and gets the tuple
of attribute values, in schema order. The decoder is the codecs' own path (``parse_example`` or
``parse_sequence_example``, then each codec's ``decode``), which defines every value and every
error. When the C accelerator is
built, the codecs that have a plain value form are compiled into its ``ExamplePlan``: one C call
reads an Example in the canonical form protobuf and TensorFlow write and builds the values
directly, and hands anything else (another encoding of the same values, a repeated key, a value
out of range, a missing feature without a default, any error) to the codecs' path, so the results
and errors are those of the codecs in every case.

The plan covers int, bool and float scalars, str and bytes scalars, numeric list tensors (fixed
shape or a leading ``None``), rank-1 string lists, raw tensors (fixed or stored shapes), and
numeric feature lists of a fixed step shape. A record with any other feature (ragged tensors,
string lists of rank > 1, string or ragged feature lists) decodes through its codecs alone.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, cast

from codegen.dtypes import Kind
from codegen.errors import RecordError
from codegen.kinds import RAW_ELEMENT, PlanOp, codec_row_of, element_code
from codegen.runtime.accel import ExamplePlan, speedups
from codegen.runtime.codec.buffer import BytesLike
from codegen.runtime.codec.features import Codec
from codegen.runtime.codec.sequences import SequenceCodec
from codegen.runtime.codec.wire import as_bytes, parse_example, parse_sequence_example

__all__ = ["ExampleDecoder", "codec_decoder", "compile_plan", "example_decoder", "sequence_hint"]

ExampleDecoder = Callable[[BytesLike], tuple[Any, ...]]
"""Serialized ``tf.train.Example`` bytes (any bytes-like object) to the tuple of a record's
attribute values."""


class _Op(NamedTuple):
    """One attribute of an ``ExamplePlan``, in the field order its C side reads."""

    op: int
    slot: int
    """Where the feature's key is in the plan's keys."""
    companion: int = -1
    """Where the key of a raw tensor's stored shape is, or -1."""
    optional: bool = False
    has_default: bool = False
    default: object = None
    """The immutable value of an absent scalar feature (with ``has_default``)."""
    lo: int = 0
    hi: int = 0
    """The range of integer values."""
    code: int = 0
    """The element code of an array (``ord`` of :func:`codegen.kinds.element_code`, or of
    :data:`codegen.kinds.RAW_ELEMENT` for a raw tensor of a non-bool dtype)."""
    itemsize: int = 1
    values: int = -1
    """The values of a fixed shape, or -1 (a leading ``None``)."""
    shape: tuple[int, ...] = ()
    """Arrays: the fixed shape, or the dims after a leading ``None``; raw: every dim (-1: any)."""
    dtype: object = None
    """The numpy dtype of arrays."""


def example_decoder(
    record: str,
    codecs: Sequence[Codec[Any]],
    sequence_codecs: Sequence[SequenceCodec[Any]] | None = None,
) -> ExampleDecoder:
    """The decoder of the record class ``record`` with ``codecs`` (its features, in order; with
    ``sequence_codecs``, a ``SequenceExample`` record: its context, then its feature lists): the
    compiled plan when there is one, else :func:`codec_decoder`."""
    decode = codec_decoder(record, codecs, sequence_codecs)
    return compile_plan(codecs, decode, sequence_codecs) or decode


def codec_decoder(
    record: str,
    codecs: Sequence[Codec[Any]],
    sequence_codecs: Sequence[SequenceCodec[Any]] | None = None,
) -> ExampleDecoder:
    """The reference decoder: ``parse_example`` (``parse_sequence_example``), then each codec's
    ``decode``.

    Errors are :class:`~codegen.errors.RecordError`; one in the message's framing is prefixed with
    ``record``, one in a feature names the feature.
    """
    readers = tuple(c.decode_optional if c.optional else c.decode for c in codecs)
    if sequence_codecs is None:

        def decode(data: BytesLike) -> tuple[Any, ...]:
            if type(data) is not bytes:
                data = as_bytes(data)
            try:
                features = parse_example(data)
            except RecordError as exc:
                raise RecordError(f"{record}: {exc}") from None
            try:
                return tuple([read(features) for read in readers])
            except RecordError as exc:
                hint = sequence_hint(data)
                if hint:
                    raise RecordError(f"{exc}{hint}") from None
                raise

        return decode
    lists = tuple(c.decode for c in sequence_codecs)
    # TensorFlow reads a context Feature without a list as a list of no values, not as absent (as
    # it does in an Example): only a feature with a default tells the two apart.
    defaulted = tuple(
        (c.key.encode("utf-8"), int(c.dtype.wire)) for c in codecs if c.default is not None
    )

    def decode_sequence(data: BytesLike) -> tuple[Any, ...]:
        try:
            context, feature_lists = parse_sequence_example(data)
        except RecordError as exc:
            raise RecordError(f"{record}: {exc}") from None
        for key, kind in defaulted:
            item = context.get(key)
            if item is not None and not item[0]:
                context[key] = (kind, b"")
        values = [read(context) for read in readers]
        values.extend([read(feature_lists) for read in lists])
        return tuple(values)

    return decode_sequence


def sequence_hint(data: bytes) -> str:
    """For bytes an Example record does not decode: a hint when they are a ``SequenceExample``
    with feature lists (read by the wrong kind of record), else ``""``. Only error paths call it."""
    try:
        _, lists = parse_sequence_example(data)
    except RecordError:
        return ""
    if not lists:
        return ""
    keys = sorted(lists)
    shown = ", ".join(repr(key.decode("utf-8", "replace")) for key in keys[:3])
    more = f" and {len(keys) - 3} more" if len(keys) > 3 else ""
    return (
        f" (the bytes are a tf.train.SequenceExample with the feature lists {shown}{more}; read"
        " them with a SequenceExample record: its schema has 'context:' and 'sequence:' instead"
        " of 'features:')"
    )


def compile_plan(
    codecs: Sequence[Codec[Any]],
    fallback: ExampleDecoder,
    sequence_codecs: Sequence[SequenceCodec[Any]] | None = None,
) -> ExamplePlan | None:
    """The C ``ExamplePlan`` of ``codecs`` (and ``sequence_codecs``, as in
    :func:`example_decoder`) that hands what it does not decode to ``fallback``, or ``None``
    without the accelerator (or on a big-endian machine) or when a codec has no plan."""
    if speedups is None or sys.byteorder != "little":
        return None
    keys: list[bytes] = []
    ops: list[_Op] = []
    for codec in codecs:
        op = _op(codec, keys)
        if op is None:
            return None
        ops.append(op)
    if sequence_codecs is None:
        return speedups.ExamplePlan(tuple(keys), tuple(ops), fallback)
    list_keys: list[bytes] = []
    for steps in sequence_codecs:
        op = _steps_op(steps, len(keys) + len(list_keys))
        if op is None:
            return None
        list_keys.append(steps.key.encode("utf-8"))
        ops.append(op)
    return speedups.ExamplePlan(tuple(keys), tuple(ops), fallback, tuple(list_keys))


def _steps_op(codec: SequenceCodec[Any], slot: int) -> _Op | None:
    """The plan operation of a feature list, or ``None`` when the plan has none for it."""
    dtype = codec.dtype
    row = codec_row_of(type(codec))
    op = None if row is None else row.plan(dtype, codec.shape)
    if op is None:
        return None
    lo, hi = (dtype.lo or 0, dtype.hi or 0) if dtype.kind is Kind.INT else (0, 1)
    return _Op(
        op,
        slot,
        optional=codec.optional,
        lo=lo,
        hi=hi,
        code=ord(element_code(dtype)),
        shape=cast("tuple[int, ...]", codec.shape),
        dtype=dtype.numpy,
    )


def _slot(keys: list[bytes], key: str) -> int:
    """The position of ``key`` (UTF-8) in ``keys``, appended if new."""
    data = key.encode("utf-8")
    if data not in keys:
        keys.append(data)
    return keys.index(data)


_SCALAR_OPS = frozenset({PlanOp.INT, PlanOp.BOOL, PlanOp.FLOAT, PlanOp.TEXT, PlanOp.BYTES})
_LIST_OPS = frozenset({PlanOp.TEXT_LIST, PlanOp.BYTES_LIST})


def _op(codec: Codec[Any], keys: list[bytes]) -> _Op | None:
    """The plan operation of ``codec`` (by its row of :data:`codegen.kinds.CODECS`), or ``None``
    when the plan has none for it."""
    dtype, shape, optional = codec.dtype, codec.shape, codec.optional
    row = codec_row_of(type(codec))
    op = None if row is None else row.plan(dtype, shape)
    if op is None:
        return None
    slot = _slot(keys, codec.key)
    lo, hi = (dtype.lo or 0, dtype.hi or 0) if dtype.kind is Kind.INT else (0, 1)
    count = -1 if None in shape else math.prod(cast("tuple[int, ...]", shape))
    if op in _SCALAR_OPS:
        default = codec.default
        return _Op(op, slot, -1, optional, default is not None, default, lo, hi)
    if op in _LIST_OPS:
        return _Op(op, slot, optional=optional, values=count)
    if op is PlanOp.RAW:
        if getattr(codec, "shape_from", None) is not None:
            return None  # a declared layout of the stored shape: the codec's own decoding
        companion = _slot(keys, codec.companion_keys[0]) if codec.companion_keys else -1
        return _Op(
            op,
            slot,
            companion,
            optional,
            code=ord(element_code(dtype) if dtype.kind is Kind.BOOL else RAW_ELEMENT),
            itemsize=dtype.numpy.itemsize,
            values=count,
            shape=tuple(-1 if d is None else d for d in shape),
            dtype=dtype.numpy,
        )
    dims = cast("tuple[int, ...]", shape if count >= 0 else shape[1:])
    return _Op(
        op,
        slot,
        optional=optional,
        lo=lo,
        hi=hi,
        code=ord(element_code(dtype)),
        values=count,
        shape=dims,
        dtype=dtype.numpy,
    )
