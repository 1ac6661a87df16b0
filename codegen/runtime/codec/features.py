"""The feature codecs: one object per feature of a generated record class, built at import.

A codec validates and coerces attribute values (``coerce``), writes its feature as a serialized
``Features`` map entry (``entry``), reads it back from
:func:`~codegen.runtime.codec.wire.parse_example`'s dict with TensorFlow's rules (``decode``), and
describes it (``info``; :mod:`codegen.runtime.tf.parse` turns that into TensorFlow parse specs).

Values and how they travel:

* ``IntScalar`` -> ``int`` and ``BoolScalar`` -> ``bool``, in an ``Int64List`` (bools as 0/1);
* ``FloatScalar`` -> ``float`` (rounded to float32), in a ``FloatList``;
* ``TextScalar`` -> ``str`` (as UTF-8) and ``BytesScalar`` -> ``bytes``, in a ``BytesList``;
* ``NumericTensor`` -> a numpy array of the declared dtype and shape;
* ``TextTensor``/``BytesTensor`` -> nested lists, one level per dimension.

Tensors and lists travel flat, in C order. Decoding an absent feature (no key, or a ``Feature``
with no kind) gives the default if there is one, else ``None`` for an optional feature
(``decode_optional``, whatever the shape), else no rows for a shape with a leading ``None``, else
an error. An optional feature of a fully known shape also decodes an empty list to ``None`` (it
cannot hold no values); one with a leading ``None`` decodes an empty list to no rows, so ``None``
and ``[]`` both survive a round trip here. TensorFlow cannot tell absent from empty for a leading
``None``: its ``RaggedFeature`` gives an empty row for both (see :mod:`codegen.runtime.tf.parse`).
A present feature must have the right list kind and a value count that fits the shape, even when
there is a default; errors name the feature, malformed list bodies included.

:class:`ArrayRules` and :class:`StringRules` check and convert numeric arrays and nested strings of
one dtype and shape; the codecs of :mod:`codegen.runtime.codec.tensors` (raw and ragged tensors) and
:mod:`codegen.runtime.codec.sequences` (the feature lists of a ``SequenceExample``) share them.
"""

from __future__ import annotations

import abc
import enum
import math
import struct
from collections.abc import Callable, Iterable, Mapping
from typing import Any, ClassVar, Final, Generic, TypeVar, cast

import numpy as np
import numpy.typing as npt

from codegen.dtypes import DType, Kind, Wire
from codegen.errors import RecordError, TfrGenError
from codegen.kinds import codec_row_of, kind_named
from codegen.runtime.codec.equality import values_equal
from codegen.runtime.codec.info import FeatureInfo
from codegen.runtime.codec.varint import encode_packed_int64
from codegen.runtime.codec.wire import (
    decode_bytes_list,
    decode_float_list,
    decode_int64_list,
    encode_varint,
    key_field,
)

__all__ = [
    "NO_DEFAULT",
    "ArrayRules",
    "BoolScalar",
    "BytesTensor",
    "BytesScalar",
    "Codec",
    "Features",
    "FloatScalar",
    "IntScalar",
    "ListCodec",
    "NumericTensor",
    "StringRules",
    "TextTensor",
    "TextScalar",
]

T = TypeVar("T")
S = TypeVar("S", bound=np.generic)

Features = Mapping[bytes, tuple[int, bytes]]
"""What :func:`~codegen.runtime.codec.wire.parse_example` returns: key -> (list kind, list body)."""


class _NoDefault(enum.Enum):
    NO_DEFAULT = "NO_DEFAULT"

    def __repr__(self) -> str:
        return "NO_DEFAULT"


NO_DEFAULT: Final = _NoDefault.NO_DEFAULT
"""The ``default`` of a codec whose feature has no default."""

_F32: Final = struct.Struct("<f")
_F4: Final = np.dtype("<f4")
_HEAD_CACHE: Final = 256
"""How many entry prefixes (one per value size) a codec keeps."""
_ITEM_HEADS: Final = tuple(b"\x0a" + bytes((n,)) for n in range(0x80))
"""The field header of a ``BytesList`` value of each length below 128."""
_LIST_NAMES: Final = {1: "bytes_list", 2: "float_list", 3: "int64_list"}
_KIND_NAMES: Final = {
    "b": "bool",
    "i": "int",
    "u": "int",
    "f": "float",
    "c": "complex",
    "U": "str",
    "S": "bytes",
    "O": "object",
}
_str_encode: Final = str.encode
_bytes_decode: Final = bytes.decode


def _short(value: object) -> str:
    """The repr of ``value`` on one line, cut to at most 40 characters."""
    text = repr(value).replace("\n", " ")
    return text if len(text) <= 40 else text[:37] + "..."


def _describe(value: object) -> str:
    """A value for an error message: its type and a short repr (``str 'abc'``)."""
    return "None" if value is None else f"{type(value).__name__} {_short(value)}"


def _plural(n: int | None, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _bounds(dtype: DType) -> tuple[int, int]:
    """The inclusive range of an integer or bool dtype ((0, 0) for others, which do not use it)."""
    return (dtype.lo or 0, dtype.hi or 0)


def _range_error(dtype: DType, number: object, where: str) -> RecordError:
    """``number`` is outside what ``dtype`` holds (floats: its largest finite magnitude)."""
    if dtype.kind is Kind.FLOAT:
        top = float(np.finfo(cast("np.dtype[np.floating[Any]]", dtype.numpy)).max)
        bounds = f"[{-top!r}, {top!r}]"
    else:
        bounds = f"[{dtype.lo}, {dtype.hi}]"
    return RecordError(f"{where}: value {number!r} out of range for {dtype.name} {bounds}")


def _holds_nothing(kind: int, body: bytes) -> bool:
    """Whether the list body ``body`` of list ``kind`` holds no value (malformed:
    ``RecordError``)."""
    if kind == 1:
        return not decode_bytes_list(body)
    return (decode_float_list(body) if kind == 2 else decode_int64_list(body)).size == 0


def _naming(exc: RecordError, where: str) -> RecordError:
    """``exc`` with ``where`` in front unless it starts with it (the errors of a malformed list body
    name only the list)."""
    text = str(exc)
    return exc if text.startswith(where) else RecordError(f"{where}: {text}")


def _entry_head(kf: bytes, tag: int, list_size: int) -> bytes:
    """The bytes of a map entry with key field ``kf`` before a list body of ``list_size`` bytes.

    ``tag`` is the ``Feature`` oneof field tag of the list (``0a``/``12``/``1a``).
    """
    feature_head = bytes((tag,)) + encode_varint(list_size)
    feature_size = len(feature_head) + list_size
    value_head = b"\x12" + encode_varint(feature_size)
    entry_size = len(kf) + len(value_head) + feature_size
    return b"\x0a" + encode_varint(entry_size) + kf + value_head + feature_head


def _single_head(kf: bytes, tag: int, size: int) -> bytes:
    """The bytes of a map entry before a ``size``-byte payload that is the list's one field.

    The payload is one value of a ``BytesList``, or the packed values of a numeric list.
    """
    value_head = b"\x0a" + encode_varint(size)
    return _entry_head(kf, tag, len(value_head) + size) + value_head


def _int64_entry(kf: bytes, values: Iterable[int]) -> bytes:
    """The map entry with key field ``kf`` of an ``Int64List`` holding ``values`` (packed)."""
    payload = b"".join([encode_varint(v) for v in values])
    return _single_head(kf, 0x1A, len(payload)) + payload if payload else _entry_head(kf, 0x1A, 0)


def _plain(value: object) -> object:
    """A value as a scalar or nested tuples (arrays as nested tuples of scalars): the form of a
    default in :class:`FeatureInfo`."""
    if isinstance(value, np.ndarray):
        return _plain(value.tolist())
    if isinstance(value, list):
        return tuple(_plain(item) for item in value)
    return value


def _fits_float64(number: float) -> bool:
    try:
        float(number)
    except OverflowError:
        return False
    return True


def _exact_ints(
    value: list[Any] | tuple[Any, ...], source: np.ndarray[Any, Any]
) -> np.ndarray[Any, Any]:
    """``value`` as an object array if it holds only integers (numpy made floats of integers beyond
    int64, or of uint64 ones mixed with negative ones), else ``source``."""
    objects = np.array(value, dtype=object)
    for item in objects.flat:
        if not isinstance(item, int | np.integer) or type(item) is bool:
            return source
    return objects


# --- shared rules of numeric arrays and nested strings ------------------------------------------


class ArrayRules:
    """The checks and conversions of numeric arrays of one dtype and shape (``None``: any size).

    Integer dtypes take integers (range-checked), ``bool`` takes bools, float dtypes take integers
    and floats (finite values that would round to infinity are errors). Errors name ``where``.
    """

    __slots__ = ("dtype", "shape", "np", "_kind", "_lo", "_hi", "_wide", "_narrow", "_empty")

    def __init__(self, dtype: DType, shape: tuple[int | None, ...]) -> None:
        self.dtype = dtype
        self.shape = shape
        self.np: np.dtype[Any] = dtype.numpy
        self._kind = dtype.kind
        self._lo, self._hi = _bounds(dtype)
        self._wide = np.dtype(np.uint64 if dtype.name == "uint64" else np.int64)
        """The dtype integers are gathered in before the range check (every value of the dtype
        fits)."""
        self._narrow = dtype.kind is not Kind.FLOAT and dtype.name != "int64"
        """Whether values decoded from an ``Int64List`` need a range check and a cast."""
        self._empty = (0, *(d or 0 for d in shape[1:]))
        """The shape of ``[]`` for a leading ``None``: no rows."""

    def coerce(self, value: object, where: str) -> np.ndarray[Any, Any]:
        """A list, tuple or array of the right kind and shape, as a new C-contiguous array of the
        dtype.

        ``[]`` is no rows for a leading ``None``; shape ``()`` also takes a bare number.
        """
        if isinstance(value, np.ndarray):
            source: np.ndarray[Any, Any] = value
        elif isinstance(value, list | tuple):
            try:
                source = np.array(value)
            except ValueError:
                raise RecordError(
                    f"{where}: expected shape {self.shape}, got a ragged nested "
                    f"{type(value).__name__}"
                ) from None
            if source.dtype.kind == "f" and self._kind is not Kind.FLOAT:
                source = _exact_ints(value, source)
        elif not self.shape and isinstance(value, int | float | np.generic):
            source = np.array(value)
        else:
            raise RecordError(
                f"{where}: expected {self.dtype.name} values with shape {self.shape}, got "
                f"{_describe(value)}"
            )
        if source.size == 0:  # no values to check
            shape = source.shape
            if (
                shape == (0,)
                and len(self.shape) > 1
                and self.shape[0] is None
                and not isinstance(value, np.ndarray)
            ):
                shape = self._empty
            array: np.ndarray[Any, Any] = np.empty(shape, self.np)
        else:
            array = self._cast(source, value, where)
        got = array.shape
        if len(got) != len(self.shape) or any(
            d is not None and d != g for d, g in zip(self.shape, got, strict=True)
        ):
            raise RecordError(f"{where}: expected shape {self.shape}, got {got}")
        return array

    def _cast(
        self, source: np.ndarray[Any, Any], value: object, where: str
    ) -> np.ndarray[Any, Any]:
        """The non-empty ``source`` (built from ``value``) as a new array of the dtype, checked."""
        if source.dtype.kind == "O":
            source = self._from_objects(source, value, where)
        kind = source.dtype.kind
        if self._kind is Kind.FLOAT:
            if kind not in "iuf":
                raise self._elements_error(source, value, where)
            wider = (
                source.dtype.itemsize > self.np.itemsize if kind == "f" else self.np.itemsize == 2
            )
            if wider:  # values may round to infinity
                with np.errstate(over="ignore"):
                    array = source.astype(self.np, order="C")
                over = np.isinf(array) & np.isfinite(source)
                if over.any():
                    raise _range_error(self.dtype, source[over].flat[0].item(), where)
                return array
        elif self._kind is Kind.BOOL:
            if kind != "b":
                raise self._elements_error(source, value, where)
        else:
            if kind not in "iu":
                raise self._elements_error(source, value, where)
            low, high = int(source.min()), int(source.max())
            if low < self._lo:
                raise _range_error(self.dtype, low, where)
            if high > self._hi:
                raise _range_error(self.dtype, high, where)
        return np.array(source, dtype=self.np, order="C")

    def _from_objects(
        self, source: np.ndarray[Any, Any], value: object, where: str
    ) -> np.ndarray[Any, Any]:
        """An object array (mixed types, or Python ints beyond 64 bits) as a numeric array."""
        is_bool = self._kind is Kind.BOOL
        is_float = self._kind is Kind.FLOAT
        allowed: tuple[type, ...]
        if is_bool:
            allowed = (bool, np.bool_)
        elif is_float:
            allowed = (int, float, np.integer, np.floating)
        else:
            allowed = (int, np.integer)
        for item in source.flat:
            if not isinstance(item, allowed) or (not is_bool and type(item) is bool):
                raise RecordError(
                    f"{where}: expected {self.dtype.name} values, got {type(value).__name__} "
                    f"holding {_describe(item)}"
                )
            if not is_float and not self._lo <= int(item) <= self._hi:
                raise _range_error(self.dtype, int(item), where)
        try:
            return np.array(source.tolist(), dtype=np.float64 if is_float else self._wide)
        except OverflowError:  # a Python int beyond float64
            first = next(item for item in source.flat if not _fits_float64(item))
            raise _range_error(self.dtype, first, where) from None

    def _elements_error(
        self, source: np.ndarray[Any, Any], value: object, where: str
    ) -> RecordError:
        if isinstance(value, np.ndarray):
            holding = f"ndarray of {value.dtype}"
        else:
            kind = _KIND_NAMES.get(source.dtype.kind, str(source.dtype))
            holding = f"{type(value).__name__} of {kind}"
        return RecordError(
            f"{where}: expected {self.dtype.name} values, got {holding} {_short(value)}"
        )

    def list_values(self, body: bytes, where: str) -> np.ndarray[Any, Any]:
        """The flat values of an ``Int64List``/``FloatList`` body in the dtype (integers
        range-checked)."""
        if self._kind is Kind.FLOAT:
            size = len(body) - 2
            if 0 <= size < 0x80 and body[0] == 0x0A and body[1] == size and not size % 4:
                return np.frombuffer(body, "<f4", size // 4, 2).astype(self.np)  # short packed
            return decode_float_list(body)
        return self.int64_values(decode_int64_list(body), where)

    def int64_values(self, values: npt.NDArray[np.int64], where: str) -> np.ndarray[Any, Any]:
        """Values read from an ``Int64List`` in the (integer or bool) dtype, range-checked."""
        if self._narrow:
            if values.size:
                low, high = int(values.min()), int(values.max())
                if low < self._lo:
                    raise _range_error(self.dtype, low, where)
                if high > self._hi:
                    raise _range_error(self.dtype, high, where)
            return values.astype(self.np)
        return values

    def list_payload(self, array: np.ndarray[Any, Any]) -> bytes:
        """The packed ``FloatList``/``Int64List`` values of ``array`` (of the dtype, any shape, C
        order)."""
        if self._kind is Kind.FLOAT:
            return array.astype(_F4, copy=False).tobytes()
        return encode_packed_int64(np.ascontiguousarray(array.reshape(-1), dtype=np.int64))


class StringRules:
    """The checks of nested strings of one dtype and shape: iterables (not bare ``str``/``bytes``)
    nested one level per dimension (``None``: any length), as nested lists of ``str`` (``string``:
    encodable as UTF-8) or ``bytes``. Errors name ``where`` and the index path (``R.x[1][0]``).
    """

    __slots__ = ("dtype", "shape", "_rank", "_text")

    def __init__(self, dtype: DType, shape: tuple[int | None, ...]) -> None:
        self.dtype = dtype
        self.shape = shape
        self._rank = len(shape)
        self._text = dtype.kind is Kind.STR

    def coerce(self, value: object, where: str) -> list[Any]:
        """``value`` as nested lists of canonical items (exact ``str``/``bytes`` objects)."""
        return self._level(value, 0, where)

    def _level(self, value: object, depth: int, where: str) -> list[Any]:
        if isinstance(value, str | bytes | bytearray | memoryview) or not isinstance(
            value, Iterable
        ):
            expected = "an iterable"
            if depth == 0:
                expected = f"an iterable of {self.dtype.name} values with shape {self.shape}"
            raise RecordError(f"{where}: expected {expected}, got {_describe(value)}")
        items = list(value)
        dim = self.shape[depth]
        if dim is not None and len(items) != dim:
            raise RecordError(
                f"{where}: expected {_plural(dim, 'item')} (shape {self.shape}), got {len(items)}"
            )
        if depth + 1 == self._rank:
            return self.items(items, where)
        return [self._level(row, depth + 1, f"{where}[{i}]") for i, row in enumerate(items)]

    def items(self, items: list[object], where: str) -> list[Any]:
        """The innermost items of one row (``where`` names the row) as canonical items."""
        return _coerce_texts(items, where) if self._text else _coerce_bytes(items, where)

    def to_bytes(self) -> Callable[[Any], bytes]:
        """One canonical item as a ``BytesList`` value; ``TypeError`` for an item of a wrong
        type."""
        return _str_encode if self._text else _exact_bytes

    def from_bytes(self, values: list[bytes], where: str) -> list[Any]:
        """The values of a decoded ``BytesList`` as canonical items (``str`` must be valid
        UTF-8)."""
        return _decode_texts(values, where) if self._text else values


def _coerce_texts(items: list[object], where: str) -> list[str]:
    texts: list[str] = []
    for i, item in enumerate(items):
        if type(item) is str:
            texts.append(item)
        elif isinstance(item, str):
            texts.append(str.__str__(item))
        else:
            raise RecordError(f"{where}[{i}]: expected string, got {_describe(item)}")
    try:
        "".join(texts).encode()
    except UnicodeEncodeError:
        i = next(i for i, text in enumerate(texts) if not _encodable(text))
        raise RecordError(
            f"{where}[{i}]: expected a string encodable as UTF-8, got {_describe(texts[i])}"
        ) from None
    return texts


def _coerce_bytes(items: list[object], where: str) -> list[bytes]:
    values: list[bytes] = []
    for i, item in enumerate(items):
        if type(item) is bytes:
            values.append(item)
        elif isinstance(item, bytes | bytearray | memoryview):
            values.append(bytes(item))
        else:
            raise RecordError(f"{where}[{i}]: expected bytes, got {_describe(item)}")
    return values


def _decode_texts(values: list[bytes], where: str) -> list[str]:
    try:
        return list(map(_bytes_decode, values))
    except UnicodeDecodeError:
        i = next(i for i, data in enumerate(values) if not _decodable(data))
        raise RecordError(
            f"{where}: expected valid UTF-8 in value {i}, found {_describe(values[i])}"
        ) from None


def _bytes_list_body(items: list[Any], to_bytes: Callable[[Any], bytes]) -> bytes:
    """The body of a ``BytesList`` holding ``items`` (``TypeError``/``UnicodeEncodeError`` when an
    item is not canonical)."""
    parts: list[bytes] = []
    for item in items:
        data = to_bytes(item)
        size = len(data)
        parts.append(_ITEM_HEADS[size] if size < 0x80 else b"\x0a" + encode_varint(size))
        parts.append(data)
    return b"".join(parts)


def check_dims(where: str, shape: tuple[int | None, ...], leading: int, hint: str) -> None:
    """Raise :class:`TfrGenError` unless each dimension is a positive int, or ``None`` among the
    first ``leading`` ones (``-1``: anywhere); ``hint`` ends the message about a misplaced
    ``None``."""
    for i, dim in enumerate(shape):
        if dim is None and (leading < 0 or i < leading):
            continue
        if type(dim) is not int or dim < 1:
            raise TfrGenError(
                f"{where}: dimension {i} of shape {shape} must be a positive int"
                + (hint if dim is None else "")
            )


class Codec(abc.ABC, Generic[T]):
    """The codec of one feature of one record, holding ``T`` values.

    Constructor: ``record`` (class name), ``name`` (attribute), ``key`` (Example key), ``dtype``,
    ``shape`` (``None`` only as the first dimension), ``default`` (``NO_DEFAULT`` or a value
    ``coerce`` accepts; fully known shapes only) and ``optional`` (absent means ``None``; not with
    a default). A configuration the class cannot hold raises :class:`TfrGenError`.

    ``companion_keys`` are the keys of the features written next to the feature's own
    (``part(value, i)`` writes the ``i``-th, from 1), from the registry of feature kinds
    (:mod:`codegen.kinds`); the classes here have none.
    """

    __slots__ = (
        "record",
        "name",
        "key",
        "dtype",
        "shape",
        "optional",
        "companion_keys",
        "_where",
        "_where_key",
        "_key",
        "_kf",
        "_kind",
        "_list_name",
        "_tag",
        "_fixed",
        "_count",
        "_inner",
        "_inner_size",
        "_heads",
        "_empty_entry",
        "_default",
        "_info",
    )

    _kinds: ClassVar[tuple[Kind, ...]]
    """The dtype kinds the class holds."""
    _scalar: ClassVar[bool]
    """Whether the class holds scalars (shape ``()``) or values of rank >= 1."""
    _encoding: ClassVar[str] = "list"
    """How the values travel: ``list`` (the list of the dtype's wire kind), ``raw`` (bytes) or ``image`` (an
    encoded image, one bytes value)."""
    _takes_default: ClassVar[bool] = True
    """Whether the class can hold a default."""

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
        self._check_config(default)
        self.companion_keys = self._companions(key, shape)
        self._kf = key_field(key)
        self._key = key.encode("utf-8")
        wire = Wire.BYTES if self._encoding != "list" else dtype.wire
        self._kind = int(wire)
        self._list_name = wire.list_name
        self._tag = (self._kind << 3) | 2
        self._fixed = None not in shape
        self._inner = tuple(d for d in shape[1:] if d is not None)
        self._inner_size = math.prod(self._inner)
        self._count = math.prod(d for d in shape if d is not None) if self._fixed else None
        self._heads: dict[int, bytes] = {}
        self._empty_entry = _entry_head(self._kf, self._tag, 0)
        self._setup()
        self._default: T | None = None
        if default is not NO_DEFAULT:
            try:
                self._default = self.coerce(default)
            except RecordError as exc:
                detail = str(exc).removeprefix(self._where)
                raise TfrGenError(f"invalid default for {self._where}{detail}") from None
        self._info = FeatureInfo(
            name=name,
            key=key,
            dtype=dtype.name,
            wire=self._list_name,
            shape=shape,
            fixed=self._fixed,
            default=None if self._default is None else _plain(self._default),
            optional=optional,
            encoding=self._encoding,
            companions=self.companion_keys,
            shape_from=getattr(self, "shape_from", None),
        )

    @property
    def default(self) -> T | None:
        """The value an absent required feature decodes to (``None``: it has no default).

        Shared, not copied: do not mutate it.
        """
        return self._default

    def _check_config(self, default: object) -> None:
        """Raise :class:`TfrGenError` unless dtype, shape, default and optional fit the class."""
        where, dtype, shape = self._where, self.dtype, self.shape
        cls = type(self).__name__
        if dtype.kind not in self._kinds:
            raise TfrGenError(f"{where}: {cls} cannot hold dtype {dtype.name}")
        if not dtype.list_ok and self._encoding == "list":
            raise TfrGenError(
                f"{where}: dtype {dtype.name} does not travel in a tf.train.Feature list (it "
                "needs encoding: raw)"
            )
        self._check_shape()
        if default is not NO_DEFAULT:
            if not self._takes_default:
                raise TfrGenError(f"{where}: {cls} takes no default")
            if self.optional:
                raise TfrGenError(f"{where}: a feature cannot both be optional and have a default")
            if None in shape:
                raise TfrGenError(f"{where}: a default needs a fully known shape, got {shape}")

    def _check_shape(self) -> None:
        """Raise :class:`TfrGenError` unless the shape fits the class."""
        where, shape, cls = self._where, self.shape, type(self).__name__
        if self._scalar and shape != ():
            raise TfrGenError(f"{where}: {cls} needs shape (), got {shape}")
        if not self._scalar and not shape:
            raise TfrGenError(f"{where}: {cls} needs a shape of rank >= 1, got ()")
        check_dims(where, shape, 1, " (only the first may be None)")

    def _companions(self, key: str, shape: tuple[int | None, ...]) -> tuple[str, ...]:
        """The companion keys of the feature: its kind's (:mod:`codegen.kinds`) unless it declares others."""
        row = codec_row_of(type(self))
        return () if row is None else kind_named(row.kind).companions(key, shape)

    def _setup(self) -> None:
        """Precompute what the class needs per feature (entry prefixes, bounds)."""

    def _head(self, size: int) -> bytes:
        """The entry bytes before a ``size``-byte payload that is the list's one field (cached)."""
        head = self._heads.get(size)
        if head is None:
            head = _single_head(self._kf, self._tag, size)
            if len(self._heads) < _HEAD_CACHE:
                self._heads[size] = head
        return head

    @abc.abstractmethod
    def coerce(self, value: object) -> T:
        """``value`` as this feature's value type; :class:`RecordError` when it does not fit."""

    def coerce_optional(self, value: object) -> T | None:
        """Like :meth:`coerce`, but ``None`` is kept when the feature is optional."""
        if value is None and self.optional:
            return None
        return self.coerce(value)

    @abc.abstractmethod
    def entry(self, value: T | None) -> bytes:
        """The serialized map entry of ``value`` (validated; ``b""`` for ``None`` if optional)."""

    @abc.abstractmethod
    def decode(self, features: Features) -> T:
        """This feature's value from ``parse_example``'s dict (rules in the module docstring)."""

    @abc.abstractmethod
    def decode_optional(self, features: Features) -> T | None:
        """Like :meth:`decode`, but an absent optional feature decodes to ``None`` whatever its
        shape (TensorFlow reads an absent feature of a leading ``None`` shape as no rows)."""

    def info(self) -> FeatureInfo:
        """The TensorFlow-free description of this feature."""
        return self._info

    def equal(self, a: T | None, b: T | None) -> bool:
        """Whether two values of this feature are equal (as record equality compares them): arrays
        by shape and values, nested lists deeply; ``None`` equals only ``None``."""
        return values_equal(a, b)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._where_key}, {self.dtype.name}, shape={self.shape})"

    # --- errors ---------------------------------------------------------------------------------

    def _type_error(self, value: object, expected: str | None = None) -> RecordError:
        expected = expected or self.dtype.name
        return RecordError(f"{self._where}: expected {expected}, got {_describe(value)}")

    def _range_error(self, number: object, where: str) -> RecordError:
        return _range_error(self.dtype, number, where)

    def _kind_error(self, kind: int) -> RecordError:
        found = _LIST_NAMES.get(kind, f"list kind {kind}")
        return RecordError(f"{self._where_key}: expected {self._list_name}, found {found}")

    def _count_error(self, found: int) -> RecordError:
        wire = self._list_name
        if not self._fixed:
            expected = f"a multiple of {self._inner_size} {wire} values for shape {self.shape}"
        elif self.shape:
            expected = f"{_plural(self._count, wire + ' value')} for shape {self.shape}"
        else:
            expected = _plural(self._count, wire + " value")
        return RecordError(f"{self._where_key}: expected {expected}, found {found}")

    def _check_count(self, found: int) -> None:
        """Raise unless ``found`` values fit the shape (its size, or a multiple of its rows)."""
        if self._fixed:
            if found != self._count:
                raise self._count_error(found)
        elif found % self._inner_size:
            raise self._count_error(found)


class ListCodec(Codec[T]):
    """A codec whose feature is read from the one list under its key (a present one, or the
    default)."""

    __slots__ = ()

    @abc.abstractmethod
    def _present(self, body: bytes) -> T:
        """The value of a present feature of the right list kind, from its list body."""

    @abc.abstractmethod
    def _copy(self, value: T) -> T:
        """A copy of ``value`` that shares nothing mutable with it."""

    def decode(self, features: Features) -> T:
        item = features.get(self._key)
        if item is None or not item[0]:
            return self._absent()
        if item[0] != self._kind:
            raise self._kind_error(item[0])
        try:
            return self._present(item[1])
        except RecordError as exc:
            raise _naming(exc, self._where_key) from None

    def decode_optional(self, features: Features) -> T | None:
        item = features.get(self._key)
        if item is None or not item[0]:
            return None if self.optional else self._absent()
        if item[0] != self._kind:
            raise self._kind_error(item[0])
        try:
            return self._present(item[1])
        except RecordError as exc:
            if self.optional and self._fixed and _holds_nothing(item[0], item[1]):
                return None  # an empty list: TensorFlow reads no row of the shape, as if absent
            raise _naming(exc, self._where_key) from None

    def _absent(self) -> T:
        """The value of an absent required feature: the default (no rows for a leading
        ``None``)."""
        if self._default is not None:
            return self._copy(self._default)
        raise RecordError(
            f"{self._where_key}: required feature is missing "
            f"(expected {self._list_name} with {_plural(self._count, 'value')})"
        )


# --- scalars ------------------------------------------------------------------------------------


class _Scalar(ListCodec[T]):
    """A codec of shape ``()``: immutable Python values."""

    __slots__ = ()
    _scalar = True

    def _copy(self, value: T) -> T:
        return value


class IntScalar(_Scalar[int]):
    """An ``int`` of an integer dtype (range-checked), in an ``Int64List``."""

    __slots__ = ("_lo", "_hi", "_small")
    _kinds = (Kind.INT,)

    def _setup(self) -> None:
        self._lo, self._hi = _bounds(self.dtype)
        for size in range(1, 11):
            self._head(size)
        self._small = tuple(self._heads[1] + bytes((v,)) for v in range(0x80))

    def coerce(self, value: object) -> int:
        """An ``int`` or numpy integer (not a ``bool``) within the dtype's range."""
        if type(value) is int:
            number = value
        elif isinstance(value, int | np.integer) and not isinstance(value, bool):
            number = int(value)
        else:
            raise self._type_error(value)
        if number < self._lo or number > self._hi:
            raise self._range_error(number, self._where)
        return number

    def entry(self, value: int | None) -> bytes:
        if type(value) is int and self._lo <= value <= self._hi:
            if 0 <= value < 0x80:
                return self._small[value]
            encoded = encode_varint(value)
            return self._heads[len(encoded)] + encoded
        if value is None and self.optional:
            return b""
        encoded = encode_varint(self.coerce(value))
        return self._heads[len(encoded)] + encoded

    def _present(self, body: bytes) -> int:
        if len(body) == 3 and body[0] == 0x0A and body[1] == 1 and body[2] < 0x80:
            return body[2]  # one packed value below 128: in range for every integer dtype
        values = decode_int64_list(body)
        if values.size != 1:
            raise self._count_error(values.size)
        number = int(values[0])
        if number < self._lo or number > self._hi:
            raise self._range_error(number, self._where_key)
        return number


class BoolScalar(_Scalar[bool]):
    """A ``bool``, in an ``Int64List`` as 0 or 1."""

    __slots__ = ("_true", "_false")
    _kinds = (Kind.BOOL,)

    def _setup(self) -> None:
        head = self._head(1)
        self._true, self._false = head + b"\x01", head + b"\x00"

    def coerce(self, value: object) -> bool:
        """A ``bool`` or numpy bool."""
        if type(value) is bool or isinstance(value, np.bool_):
            return bool(value)
        raise self._type_error(value)

    def entry(self, value: bool | None) -> bytes:
        if value is True:
            return self._true
        if value is False:
            return self._false
        if value is None and self.optional:
            return b""
        return self._true if self.coerce(value) else self._false

    def _present(self, body: bytes) -> bool:
        if body == b"\x0a\x01\x01":
            return True
        if body == b"\x0a\x01\x00":
            return False
        values = decode_int64_list(body)
        if values.size != 1:
            raise self._count_error(values.size)
        number = int(values[0])
        if number != 0 and number != 1:
            raise self._range_error(number, self._where_key)
        return number == 1


class FloatScalar(_Scalar[float]):
    """A ``float`` rounded to float32, in a ``FloatList`` (finite values beyond float32 fail)."""

    __slots__ = ("_entry_head",)
    _kinds = (Kind.FLOAT,)

    def _setup(self) -> None:
        self._entry_head = self._head(4)

    def coerce(self, value: object) -> float:
        """An ``int``, ``float`` or numpy number (not a ``bool``), rounded to float32."""
        if type(value) is float:
            number = value
        elif isinstance(value, int | float | np.integer | np.floating) and not isinstance(
            value, bool
        ):
            try:
                number = float(value)
            except OverflowError:
                raise self._range_error(value, self._where) from None
        else:
            raise self._type_error(value)
        try:
            rounded: float = _F32.unpack(_F32.pack(number))[0]
        except OverflowError:
            raise self._range_error(value, self._where) from None
        return rounded

    def entry(self, value: float | None) -> bytes:
        if type(value) is float:
            try:
                return self._entry_head + _F32.pack(value)
            except OverflowError:
                pass  # beyond float32: coerce names the problem
        elif value is None and self.optional:
            return b""
        return self._entry_head + _F32.pack(self.coerce(value))

    def _present(self, body: bytes) -> float:
        if len(body) == 6 and body[0] == 0x0A and body[1] == 4:
            number: float = _F32.unpack_from(body, 2)[0]
            return number
        values = decode_float_list(body)
        if values.size != 1:
            raise self._count_error(values.size)
        return float(values[0])


class _BytesValued(_Scalar[T]):
    """A scalar that travels as the one value of a ``BytesList``."""

    __slots__ = ()

    def _wrap(self, data: bytes) -> bytes:
        """The map entry whose ``BytesList`` holds ``data``."""
        return (self._heads.get(len(data)) or self._head(len(data))) + data

    def _single(self, body: bytes) -> bytes:
        """The one value of a ``BytesList`` body in any encoding (the fast path is the callers')."""
        values = decode_bytes_list(body)
        if len(values) != 1:
            raise self._count_error(len(values))
        return values[0]


class TextScalar(_BytesValued[str]):
    """A ``str`` (encodable as UTF-8), in a ``BytesList`` as UTF-8."""

    __slots__ = ()
    _kinds = (Kind.STR,)

    def coerce(self, value: object) -> str:
        """A ``str`` without lone surrogates (so it has a UTF-8 form)."""
        if type(value) is str:
            text = value
        elif isinstance(value, str):
            text = str.__str__(value)
        else:
            raise self._type_error(value)
        try:
            text.encode()
        except UnicodeEncodeError:
            raise self._type_error(value, "a string encodable as UTF-8") from None
        return text

    def entry(self, value: str | None) -> bytes:
        if type(value) is str:
            try:
                return self._wrap(value.encode())
            except UnicodeEncodeError:
                pass  # a lone surrogate: coerce names the problem
        elif value is None and self.optional:
            return b""
        return self._wrap(self.coerce(value).encode())

    def _present(self, body: bytes) -> str:
        if len(body) >= 2 and body[0] == 0x0A and body[1] == len(body) - 2 and body[1] < 0x80:
            data = body[2:]  # one value below 128 bytes, as protobuf writes it
        else:
            data = self._single(body)
        try:
            return data.decode()
        except UnicodeDecodeError as exc:
            raise RecordError(
                f"{self._where_key}: expected valid UTF-8 ({exc.reason} at byte {exc.start}), "
                f"found {_describe(data)}"
            ) from None


class BytesScalar(_BytesValued[bytes]):
    """A ``bytes`` value, in a ``BytesList``."""

    __slots__ = ()
    _kinds = (Kind.BYTES,)

    def coerce(self, value: object) -> bytes:
        """``bytes``, ``bytearray`` or ``memoryview`` (copied into ``bytes``)."""
        if type(value) is bytes:
            return value
        if isinstance(value, bytes | bytearray | memoryview):
            return bytes(value)
        raise self._type_error(value)

    def entry(self, value: bytes | None) -> bytes:
        if type(value) is bytes:
            return self._wrap(value)
        if value is None and self.optional:
            return b""
        return self._wrap(self.coerce(value))

    def _present(self, body: bytes) -> bytes:
        if len(body) >= 2 and body[0] == 0x0A and body[1] == len(body) - 2 and body[1] < 0x80:
            return body[2:]  # one value below 128 bytes, as protobuf writes it
        return self._single(body)


# --- numeric arrays -----------------------------------------------------------------------------


class NumericTensor(ListCodec[npt.NDArray[S]]):
    """A numpy array of the declared numeric dtype and shape (any leading length for ``None``).

    Coerced values are new, owned, C-contiguous arrays (rules: :class:`ArrayRules`). Integers and
    bools travel in an ``Int64List``, float32 in a ``FloatList``.
    """

    __slots__ = (
        "_rules",
        "_np",
        "_out_shape",
        "_fixed_floats",
        "_fixed_head",
        "_body_head",
        "_body_size",
    )
    _kinds = (Kind.INT, Kind.BOOL, Kind.FLOAT)
    _scalar = False

    def _setup(self) -> None:
        self._rules = ArrayRules(self.dtype, self.shape)
        self._np = cast("np.dtype[S]", self.dtype.numpy)
        first = self.shape[0]
        self._out_shape = (-1 if first is None else first, *self._inner)
        # A fixed-shape float32 array has one canonical list body: its head and size never change.
        is_float = self.dtype.kind is Kind.FLOAT
        self._fixed_floats = self._count if is_float and self._count is not None else 0
        self._body_head = b"\x0a" + encode_varint(4 * self._fixed_floats)
        self._body_size = len(self._body_head) + 4 * self._fixed_floats
        self._fixed_head = self._head(4 * self._fixed_floats) if self._fixed_floats else b""

    def coerce(self, value: object) -> npt.NDArray[S]:
        """A list, tuple or array of the right kind and shape, as a new array of the dtype.

        Integer dtypes take integers (range-checked), ``bool`` takes bools, ``float32`` takes
        integers and floats (finite values beyond float32 are errors). ``[]`` is no rows for a
        leading ``None``.
        """
        return self._rules.coerce(value, self._where)

    def entry(self, value: npt.NDArray[S] | None) -> bytes:
        if type(value) is np.ndarray and value.dtype is self._np:
            shape = value.shape
            if self._fixed_head:
                if shape == self.shape:
                    return self._fixed_head + value.astype(_F4, copy=False).tobytes()
            elif shape == self.shape or not self._fixed and shape[1:] == self._inner and shape:
                return self._encode(value)
        if value is None and self.optional:
            return b""
        return self._encode(self.coerce(value))

    def _encode(self, array: npt.NDArray[S]) -> bytes:
        """The map entry of an array of the declared dtype and shape."""
        if self._fixed_head:
            return self._fixed_head + array.astype(_F4, copy=False).tobytes()
        if not array.size:
            return self._empty_entry
        payload = self._rules.list_payload(array)
        return (self._heads.get(len(payload)) or self._head(len(payload))) + payload

    def _present(self, body: bytes) -> npt.NDArray[S]:
        values: np.ndarray[Any, Any]
        n = self._fixed_floats
        if n and len(body) == self._body_size and body.startswith(self._body_head):
            values = np.frombuffer(body, "<f4", n, len(self._body_head)).astype(self._np)
        else:
            values = self._rules.list_values(body, self._where_key)
            self._check_count(values.size)
        if len(self._out_shape) > 1:
            values = values.reshape(self._out_shape)
        return cast("npt.NDArray[S]", values)

    def _absent(self) -> npt.NDArray[S]:
        return super()._absent() if self._fixed else np.empty((0, *self._inner), self._np)

    def _copy(self, value: npt.NDArray[S]) -> npt.NDArray[S]:
        return value.copy()


# --- string lists -------------------------------------------------------------------------------


def _exact_bytes(item: object) -> bytes:
    """``item`` if it is a ``bytes`` object, else ``TypeError``."""
    if type(item) is not bytes:
        raise TypeError(f"expected bytes, got {type(item).__name__}")
    return item


class _StringList(ListCodec[list[Any]]):
    """Strings of rank >= 1 as nested lists (one level per dimension), flat in a ``BytesList``."""

    __slots__ = ("_rules", "_rank", "_list_heads", "_to_bytes")
    _scalar = False

    def _setup(self) -> None:
        self._rules = StringRules(self.dtype, self.shape)
        self._rank = len(self.shape)
        self._list_heads: dict[int, bytes] = {}
        self._to_bytes = self._rules.to_bytes()

    def coerce(self, value: object) -> list[Any]:
        """Iterables (not bare ``str``/``bytes``) nested per dimension, with the fixed counts."""
        return self._rules.coerce(value, self._where)

    def entry(self, value: list[Any] | None) -> bytes:
        if type(value) is list and self._rank == 1 and len(value) == (self._count or len(value)):
            try:
                return self._encode(value)
            except (TypeError, UnicodeEncodeError):
                pass  # not all canonical items: coerce names the problem
        elif value is None and self.optional:
            return b""
        flat = self.coerce(value)
        for _ in range(self._rank - 1):
            flat = [item for row in flat for item in row]
        return self._encode(flat)

    def _encode(self, items: list[Any]) -> bytes:
        """The map entry of a ``BytesList`` holding the canonical ``items``.

        ``TypeError`` (or ``UnicodeEncodeError``) when an item is not canonical.
        """
        if not items:
            return self._empty_entry
        body = _bytes_list_body(items, self._to_bytes)
        head = self._list_heads.get(len(body))
        if head is None:
            head = _entry_head(self._kf, self._tag, len(body))
            if len(self._list_heads) < _HEAD_CACHE:
                self._list_heads[len(body)] = head
        return head + body

    def _present(self, body: bytes) -> list[Any]:
        values = decode_bytes_list(body)
        self._check_count(len(values))
        items = self._rules.from_bytes(values, self._where_key)
        if self._rank > 1:
            for dim in reversed(self._inner):
                items = [items[i : i + dim] for i in range(0, len(items), dim)]
        return items

    def _absent(self) -> list[Any]:
        return super()._absent() if self._fixed else []

    def _copy(self, value: list[Any]) -> list[Any]:
        return self._copy_level(value, 1)

    def _copy_level(self, value: list[Any], depth: int) -> list[Any]:
        if depth == self._rank:
            return list(value)
        return [self._copy_level(row, depth + 1) for row in value]


class TextTensor(_StringList):
    """``str`` values (encodable as UTF-8) of rank >= 1 as nested lists; UTF-8 in a BytesList."""

    __slots__ = ()
    _kinds = (Kind.STR,)


class BytesTensor(_StringList):
    """``bytes`` values of rank >= 1 as nested lists, in a ``BytesList``."""

    __slots__ = ()
    _kinds = (Kind.BYTES,)


def _encodable(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def _decodable(data: bytes) -> bool:
    try:
        data.decode()
    except UnicodeDecodeError:
        return False
    return True
