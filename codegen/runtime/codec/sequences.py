"""The codecs of the feature lists of a ``tf.train.SequenceExample``: one ``Feature`` per step.

A sequence codec is built like a feature codec, ``(record, name, key, dtype, shape, *,
optional=False)``, where ``shape`` is the shape of ONE step and there is never a default:

* ``SequenceTensor`` (numeric, a fixed step shape, ``()`` included) -> an array ``[T, *shape]``;
* ``SequenceRagged`` (numeric, a step shape ``(None, *fixed)``) -> a list of ``T`` arrays
  ``[n_t, *fixed]``;
* ``SequenceStrings`` (``string``/``bytes``) -> a list of ``T`` steps, each a ``str``/``bytes``
  for a scalar step, else nested lists per the step shape.

``entry(value)`` is the ``FeatureLists.feature_list`` map entry (byte-identical to protobuf's
deterministic serialization); ``decode(feature_lists)`` reads the second result of
:func:`~codegen.runtime.codec.wire.parse_sequence_example`. Every step must hold the dtype's list kind
(a step ``Feature`` with no list holds no values) and a value count that fits the step shape. A
required feature list that is absent is an error; an optional one decodes to zero steps. Feature
lists are independent: two of one record may have different numbers of steps.
"""

from __future__ import annotations

import abc
import math
from collections.abc import Iterable, Mapping
from itertools import accumulate
from typing import Any, ClassVar, Generic, TypeVar, cast

import numpy as np
import numpy.typing as npt

import codegen.runtime.accel as accel
from codegen.dtypes import DType, Kind
from codegen.errors import RecordError, TfrGenError
from codegen.runtime.codec.equality import values_equal
from codegen.runtime.codec.features import (
    _ITEM_HEADS,
    _LIST_NAMES,
    NO_DEFAULT,
    ArrayRules,
    S,
    StringRules,
    _describe,
    _naming,
    _plural,
    check_dims,
)
from codegen.runtime.codec.info import FeatureInfo
from codegen.runtime.codec.varint import (
    decode_packed_int64,
    encode_packed_int64,
    read_varint,
    varint_size,
)
from codegen.runtime.codec.wire import decode_bytes_list, encode_varint, key_field, map_entry

__all__ = ["FeatureLists", "SequenceCodec", "SequenceRagged", "SequenceStrings", "SequenceTensor"]

T = TypeVar("T")

FeatureLists = Mapping[bytes, list[tuple[int, bytes]]]
"""The feature lists :func:`~codegen.runtime.codec.wire.parse_sequence_example` returns: key -> (kind,
list body) per step."""

_F4 = np.dtype("<f4")
"""How ``FloatList`` values travel: little-endian float32."""


def _step_prefix(tag: int, size: int) -> bytes:
    """The bytes of one ``FeatureList.feature`` item before a ``size``-byte payload that is the one
    field of its list (oneof field tag ``tag``); for ``size`` 0, the whole item (a list that is set
    but empty)."""
    if not size:
        return bytes((0x0A, 2, tag, 0))
    list_size = 1 + varint_size(size) + size
    feature_size = 1 + varint_size(list_size) + list_size
    return (
        b"\x0a"
        + encode_varint(feature_size)
        + bytes((tag,))
        + encode_varint(list_size)
        + b"\x0a"
        + encode_varint(size)
    )


_SHORT_STEP = 0x80
"""Step payloads shorter than this many bytes take their prefix from :data:`_STEP_PREFIXES`."""
_STEP_PREFIXES = {
    tag: tuple(_step_prefix(tag, n) for n in range(_SHORT_STEP)) for tag in (0x12, 0x1A)
}
"""The step prefix of every short payload size, per list tag (``FloatList``, ``Int64List``)."""


def _uniform_body(tag: int, payload: bytes, steps: int, size: int) -> bytes:
    """The body of a ``FeatureList`` of ``steps`` steps, each holding the next ``size`` (>= 1)
    bytes of ``payload`` as the one field of its list: numpy lays the rows out."""
    if not steps:
        return b""
    prefix = _STEP_PREFIXES[tag][size] if size < _SHORT_STEP else _step_prefix(tag, size)
    rows = np.empty((steps, len(prefix) + size), np.uint8)
    rows[:, : len(prefix)] = np.frombuffer(prefix, np.uint8)
    rows[:, len(prefix) :] = np.frombuffer(payload, np.uint8).reshape(steps, size)
    return rows.tobytes()


def _split_body(tag: int, payload: bytes, ends: Iterable[int]) -> bytes:
    """The body of a ``FeatureList`` whose step ``i`` holds ``payload[ends[i - 1]:ends[i]]`` (from
    0) as the one field of its list."""
    prefixes = _STEP_PREFIXES[tag]
    parts: list[bytes] = []
    start = 0
    for end in ends:
        size = end - start
        parts.append(prefixes[size] if size < _SHORT_STEP else _step_prefix(tag, size))
        parts.append(payload[start:end])
        start = end
    return b"".join(parts)


def _packed_start(body: bytes) -> int:
    """Where the payload of a list body that is one length-delimited field 1 starts (0 for an empty
    body), else -1."""
    end = len(body)
    if not end:
        return 0
    if end < 2 or body[0] != 0x0A:
        return -1
    if body[1] < 0x80:
        return 2 if body[1] == end - 2 else -1
    try:
        length, start = read_varint(body, 1, end, "list")
    except RecordError:
        return -1
    return start if start + length == end else -1


class SequenceCodec(abc.ABC, Generic[T]):
    """The codec of one feature list of one record, holding ``T`` values (``T`` steps each).

    A configuration the class cannot hold (dtype, step shape, a default) raises
    :class:`TfrGenError`.
    """

    __slots__ = (
        "record",
        "name",
        "key",
        "dtype",
        "shape",
        "optional",
        "_where",
        "_where_key",
        "_key",
        "_kf",
        "_kind",
        "_tag",
        "_list_name",
        "_step_size",
        "_info",
    )

    _kinds: ClassVar[tuple[Kind, ...]]
    """The dtype kinds the class holds."""

    def __init__(
        self,
        record: str,
        name: str,
        key: str,
        dtype: DType,
        shape: tuple[int | None, ...],
        *,
        default: object = NO_DEFAULT,
        optional: bool = False,
    ) -> None:
        self.record = record
        self.name = name
        self.key = key
        self.dtype = dtype
        self.shape = shape = tuple(shape)
        self.optional = optional
        self._where = f"{record}.{name}"
        self._where_key = f"{record}.{name} (key {key!r})"
        cls = type(self).__name__
        if dtype.kind not in self._kinds:
            raise TfrGenError(f"{self._where}: {cls} cannot hold dtype {dtype.name}")
        if not dtype.list_ok:
            raise TfrGenError(
                f"{self._where}: dtype {dtype.name} does not travel in a tf.train.Feature list "
                "(feature lists "
                "have no raw encoding)"
            )
        if default is not NO_DEFAULT:
            raise TfrGenError(
                f"{self._where}: {cls} takes no default (an absent optional feature list has no "
                "steps)"
            )
        self._check_shape()
        self._kf = key_field(key)
        self._key = key.encode("utf-8")
        self._kind = int(dtype.wire)
        self._tag = (self._kind << 3) | 2
        self._list_name = dtype.wire.list_name
        self._step_size = math.prod(d for d in shape if d is not None)
        """The values of one step (fixed shape), or of one row of a step (leading ``None``)."""
        self._setup()
        self._info = FeatureInfo(
            name=name,
            key=key,
            dtype=dtype.name,
            wire=self._list_name,
            shape=shape,
            fixed=None not in shape,
            default=None,
            optional=optional,
            sequence=True,
        )

    @abc.abstractmethod
    def _check_shape(self) -> None:
        """Raise :class:`TfrGenError` unless the step shape fits the class."""

    def _setup(self) -> None:
        """Precompute what the class needs per feature."""

    @abc.abstractmethod
    def coerce(self, value: object) -> T:
        """``value`` (an iterable of steps) as this feature's value type; :class:`RecordError`
        when it does not fit."""

    @abc.abstractmethod
    def entry(self, value: T) -> bytes:
        """The serialized ``FeatureLists`` map entry of ``value`` (validated)."""

    @abc.abstractmethod
    def _steps(self, steps: list[tuple[int, bytes]]) -> T:
        """The value of a present feature list, from its steps' (kind, list body)."""

    @abc.abstractmethod
    def _no_steps(self) -> T:
        """The value of zero steps."""

    def decode(self, feature_lists: FeatureLists) -> T:
        """This feature's value from the feature lists of ``parse_sequence_example``."""
        steps = feature_lists.get(self._key)
        if steps is None:
            if self.optional:
                return self._no_steps()
            raise RecordError(
                f"{self._where_key}: required feature list is missing (expected one "
                f"{self._list_name} per step)"
            )
        return self._steps(steps)

    def info(self) -> FeatureInfo:
        """The TensorFlow-free description of this feature list."""
        return self._info

    def equal(self, a: T, b: T) -> bool:
        """Whether two values of this feature list are equal (as record equality compares them)."""
        return values_equal(a, b)

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({self._where_key}, {self.dtype.name}, step shape={self.shape})"
        )

    def _step_kind(self, t: int, kind: int) -> None:
        """Raise unless step ``t`` holds the dtype's list (or no list)."""
        if kind and kind != self._kind:
            found = _LIST_NAMES.get(kind, f"list kind {kind}")
            raise RecordError(
                f"{self._where_key} step {t}: expected {self._list_name}, found {found}"
            )

    def _step_count_error(self, t: int, found: int) -> RecordError:
        wire = self._list_name
        if None in self.shape:
            expected = f"a multiple of {self._step_size} {wire} values for step shape {self.shape}"
        elif self.shape:
            expected = f"{_plural(self._step_size, wire + ' value')} for step shape {self.shape}"
        else:
            expected = _plural(self._step_size, wire + " value")
        return RecordError(f"{self._where_key} step {t}: expected {expected}, found {found}")


class _NumericSteps(SequenceCodec[T]):
    """Numeric steps: integers and bools in an ``Int64List``, float32 in a ``FloatList``."""

    __slots__ = ("_rules", "_np", "_row")
    _kinds = (Kind.INT, Kind.BOOL, Kind.FLOAT)
    _exact: ClassVar[bool]
    """Whether a step holds exactly one step shape of values (else any number of rows)."""
    _rules: ArrayRules
    _np: np.dtype[Any]
    _row: tuple[int, ...]

    def _gather(self, steps: list[tuple[int, bytes]]) -> tuple[npt.NDArray[Any], list[int]]:
        """The values of all steps, flat, and how many each step holds (checked to fit)."""
        joined = self._joined(steps)
        if joined is not None:
            return joined
        arrays = [self._step_values(t, kind, body) for t, (kind, body) in enumerate(steps)]
        values = np.concatenate(arrays) if arrays else np.empty(0, self._np)
        return values, [array.size for array in arrays]

    def _joined(self, steps: list[tuple[int, bytes]]) -> tuple[npt.NDArray[Any], list[int]] | None:
        """:meth:`_gather` for steps whose lists are each one packed field of valid values that
        fit (as protobuf writes them), read in one go; ``None`` for anything else."""
        if accel.speedups is not None:
            return self._joined_c(steps, accel.speedups)
        parts: list[memoryview] = []
        sizes: list[int] = []
        for kind, body in steps:
            start = _packed_start(body)
            if start < 0 or kind != self._kind and (kind or body):
                return None
            parts.append(memoryview(body)[start:])
            sizes.append(len(body) - start)
        data = b"".join(parts)
        try:
            if self.dtype.kind is Kind.FLOAT:
                if any(size % 4 for size in sizes):
                    return None
                values = np.frombuffer(data, "<f4").astype(self._np)
                counts = [size // 4 for size in sizes]
            else:
                last = np.frombuffer(data, np.uint8) < 0x80
                lengths = np.array(sizes, np.intp)
                ends = np.cumsum(lengths)
                if not last[ends[lengths > 0] - 1].all():
                    return None  # a varint runs on into the next step
                done = np.concatenate(([0], np.cumsum(last, dtype=np.intp)))
                counts = (done[ends] - done[ends - lengths]).tolist()
                ints = decode_packed_int64(data, 0, len(data), "Int64List")
                values = self._rules.int64_values(ints, self._where_key)
        except RecordError:
            return None  # the steps one by one name the problem
        size = self._step_size
        if any(n != size for n in counts) if self._exact else any(n % size for n in counts):
            return None
        return values, counts

    def _joined_c(
        self, steps: list[tuple[int, bytes]], speedups: accel.Speedups
    ) -> tuple[npt.NDArray[Any], list[int]] | None:
        """:meth:`_joined` with the C list decoders: every step's list decoded in C (any valid
        encoding), joined once; ``None`` when a step is malformed or of another kind."""
        floats = self.dtype.kind is Kind.FLOAT
        decode = speedups.decode_float_values if floats else speedups.decode_int64_values
        item = 4 if floats else 8
        chunks: list[accel.BlockBuffer] = []
        counts: list[int] = []
        try:
            for kind, body in steps:
                if kind != self._kind and (kind or body):
                    return None
                chunk = decode(body)
                chunks.append(chunk)
                counts.append(len(chunk) // item)
        except RecordError:
            return None  # the steps one by one name the problem
        size = self._step_size
        if any(n != size for n in counts) if self._exact else any(n % size for n in counts):
            return None
        data = bytearray().join(chunks)
        if floats:
            return np.frombuffer(data, "<f4").astype(self._np), counts
        try:
            values = self._rules.int64_values(np.frombuffer(data, "<i8"), self._where_key)
        except RecordError:
            return None
        return values, counts

    def _step_values(self, t: int, kind: int, body: bytes) -> npt.NDArray[Any]:
        """The flat values of step ``t``, checked to fit the step shape."""
        self._step_kind(t, kind)
        where = f"{self._where_key} step {t}"
        try:
            values = self._rules.list_values(body, where)
        except RecordError as exc:
            raise _naming(exc, where) from None
        n = values.size
        if n != self._step_size if self._exact else n % self._step_size:
            raise self._step_count_error(t, n)
        return values

    def _steps_entry(self, flat: npt.NDArray[Any], steps: int, counts: list[int] | None) -> bytes:
        """The map entry of ``steps`` steps holding the C-order values of ``flat``:
        ``counts[i]`` in step ``i``, or ``_step_size`` each when ``counts`` is ``None``."""
        tag = self._tag
        if self.dtype.kind is Kind.FLOAT:
            payload = flat.astype(_F4, copy=False).tobytes()
            width = 4
        else:
            ints = np.ascontiguousarray(flat.reshape(-1), dtype=np.int64)
            payload = encode_packed_int64(ints) if ints.size else b""
            width = 1
            if len(payload) != ints.size:  # some varints are longer than one byte
                lasts = (np.frombuffer(payload, np.uint8) < 0x80).nonzero()[0]
                if counts is None:
                    step_lasts = lasts[self._step_size - 1 :: self._step_size]
                else:  # the last value of each step; -1 (no byte) before the first
                    step_lasts = np.concatenate(([-1], lasts))[list(accumulate(counts))]
                ends = (step_lasts + 1).tolist()
                return map_entry(self._kf, _split_body(tag, payload, ends))
        if counts is None:
            body = _uniform_body(tag, payload, steps, width * self._step_size)
        else:
            body = _split_body(tag, payload, accumulate(width * n for n in counts))
        return map_entry(self._kf, body)


class SequenceTensor(_NumericSteps[npt.NDArray[S]]):
    """Numeric steps of a fixed shape (``()`` included): an array ``[T, *shape]`` of the dtype
    (rules: :class:`ArrayRules`). Each feature list has its own number of steps ``T``.
    """

    __slots__ = ()
    _exact = True

    def _check_shape(self) -> None:
        check_dims(self._where, self.shape, 0, f" ({type(self).__name__} needs a fixed step shape)")

    def _setup(self) -> None:
        self._rules = ArrayRules(self.dtype, (None, *self.shape))
        self._np = self.dtype.numpy
        self._row = cast("tuple[int, ...]", self.shape)

    def coerce(self, value: object) -> npt.NDArray[S]:
        """A list, tuple or array of ``T`` steps, as a new array ``[T, *shape]`` of the dtype."""
        return cast("npt.NDArray[S]", self._rules.coerce(value, self._where))

    def entry(self, value: npt.NDArray[S]) -> bytes:
        if not (
            type(value) is np.ndarray
            and value.dtype is self._np
            and value.shape[1:] == self._row
            and value.ndim == len(self._row) + 1
        ):
            value = self.coerce(value)
        return self._steps_entry(value, value.shape[0], None)

    def _steps(self, steps: list[tuple[int, bytes]]) -> npt.NDArray[S]:
        values = self._gather(steps)[0]
        return cast("npt.NDArray[S]", values.reshape(len(steps), *self._row))

    def _no_steps(self) -> npt.NDArray[S]:
        return np.empty((0, *self._row), self._np)


class SequenceRagged(_NumericSteps[list[npt.NDArray[S]]]):
    """Numeric steps of shape ``(None, *fixed)``: a list of ``T`` arrays ``[n_t, *fixed]`` of the
    dtype (rules: :class:`ArrayRules`; the arrays of a decoded value share one buffer). Each
    feature list has its own number of steps ``T``.
    """

    __slots__ = ()
    _exact = False

    def _check_shape(self) -> None:
        if not self.shape or self.shape[0] is not None:
            raise TfrGenError(
                f"{self._where}: {type(self).__name__} needs a step shape with a leading None, "
                f"got {self.shape}"
            )
        check_dims(self._where, self.shape, 1, " (only the first may be None)")

    def _setup(self) -> None:
        self._rules = ArrayRules(self.dtype, self.shape)
        self._np = self.dtype.numpy
        self._row = cast("tuple[int, ...]", self.shape[1:])

    def coerce(self, value: object) -> list[npt.NDArray[S]]:
        """An iterable of ``T`` steps, each a list, tuple or array ``[n_t, *fixed]``, as new
        arrays."""
        if isinstance(value, str | bytes | bytearray | memoryview) or not isinstance(
            value, Iterable
        ):
            raise RecordError(
                f"{self._where}: expected an iterable of steps ({self.dtype.name} values with "
                f"shape {self.shape} each), got {_describe(value)}"
            )
        return [self._rules.coerce(step, f"{self._where}[{t}]") for t, step in enumerate(value)]

    def _canonical(self, value: object) -> bool:
        if type(value) is not list:
            return False
        row, dtype = self._row, self._np
        rank = len(row) + 1
        return all(
            type(s) is np.ndarray and s.dtype is dtype and s.ndim == rank and s.shape[1:] == row
            for s in value
        )

    def entry(self, value: list[npt.NDArray[S]]) -> bytes:
        if not self._canonical(value):
            value = self.coerce(value)
        if not value:
            return map_entry(self._kf, b"")
        flat = np.concatenate([step.reshape(-1) for step in value])
        return self._steps_entry(flat, len(value), [step.size for step in value])

    def _steps(self, steps: list[tuple[int, bytes]]) -> list[npt.NDArray[S]]:
        values, counts = self._gather(steps)
        rows = values.reshape(-1, *self._row)
        ends = np.cumsum(counts, dtype=np.intp) // self._step_size
        return [
            rows[end - n // self._step_size : end]
            for n, end in zip(counts, ends.tolist(), strict=True)
        ]

    def _no_steps(self) -> list[npt.NDArray[S]]:
        return []


class SequenceStrings(SequenceCodec[list[Any]]):
    """``string``/``bytes`` steps: a list of ``T`` steps, each a ``str``/``bytes`` for a scalar
    step shape, else nested lists per the step shape, which may lead with ``None`` (rules:
    :class:`StringRules`). Each feature list has its own number of steps ``T``.
    """

    __slots__ = ("_rules", "_to_bytes", "_rows", "_inner")
    _kinds = (Kind.STR, Kind.BYTES)

    def _check_shape(self) -> None:
        check_dims(self._where, self.shape, 1, " (only the first may be None)")

    def _setup(self) -> None:
        self._rules = StringRules(self.dtype, (None, *self.shape))
        self._to_bytes = self._rules.to_bytes()
        self._rows = bool(self.shape) and self.shape[0] is None
        """Whether a step has any number of rows (a leading ``None``)."""
        self._inner = cast("tuple[int, ...]", self.shape[1:])

    def coerce(self, value: object) -> list[Any]:
        """An iterable of ``T`` steps, each an item or iterables nested per the step shape."""
        return self._rules.coerce(value, self._where)

    def entry(self, value: list[Any]) -> bytes:
        if type(value) is list:
            try:
                return self._encode(value)
            except (TypeError, UnicodeEncodeError):
                pass  # not canonical: coerce names the problem, or makes it canonical
        return self._encode(self.coerce(value))

    def _encode(self, steps: list[Any]) -> bytes:
        """The map entry of canonical ``steps``; ``TypeError`` (or ``UnicodeEncodeError``) when
        they are not."""
        to_bytes = self._to_bytes
        parts: list[bytes] = []
        for step in steps:
            items = [step]
            for dim in self.shape:
                flat: list[Any] = []
                for node in items:
                    if type(node) is not list or dim is not None and len(node) != dim:
                        raise TypeError("not a canonical step")
                    flat.extend(node)
                items = flat
            fields: list[bytes] = []
            for item in items:
                data = to_bytes(item)
                size = len(data)
                fields.append(_ITEM_HEADS[size] if size < 0x80 else b"\x0a" + encode_varint(size))
                fields.append(data)
            body = b"".join(fields)
            feature = b"\x0a" + encode_varint(len(body)) + body
            parts.append(b"\x0a" + encode_varint(len(feature)))
            parts.append(feature)
        return map_entry(self._kf, b"".join(parts))

    def _steps(self, steps: list[tuple[int, bytes]]) -> list[Any]:
        value: list[Any] = []
        rows = self._rows
        for t, (kind, body) in enumerate(steps):
            self._step_kind(t, kind)
            where = f"{self._where_key} step {t}"
            try:
                items = self._rules.from_bytes(decode_bytes_list(body), where)
            except RecordError as exc:
                raise _naming(exc, where) from None
            if len(items) % self._step_size if rows else len(items) != self._step_size:
                raise self._step_count_error(t, len(items))
            for dim in reversed(self._inner):
                items = [items[i : i + dim] for i in range(0, len(items), dim)]
            value.append(items if self.shape else items[0])
        return value

    def _no_steps(self) -> list[Any]:
        return []
