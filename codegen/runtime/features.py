"""The feature codecs: one object per feature of a generated record class, built at import.

A codec validates and coerces attribute values (``coerce``), writes its feature as a serialized
``Features`` map entry (``entry``), reads it back from :func:`~codegen.runtime.wire.parse_example`'s
dict with TensorFlow's rules (``decode``), and describes it (``info``, ``tf_spec``, ``tf_post``).

Values and how they travel:

* ``IntScalar`` -> ``int`` and ``BoolScalar`` -> ``bool``, in an ``Int64List`` (bools as 0/1);
* ``FloatScalar`` -> ``float`` (rounded to float32), in a ``FloatList``;
* ``TextScalar`` -> ``str`` (as UTF-8) and ``BytesScalar`` -> ``bytes``, in a ``BytesList``;
* ``NumericTensor`` -> a numpy array of the declared dtype and shape;
* ``TextList``/``BytesList`` -> nested lists, one level per dimension.

Tensors and lists travel flat, in C order. Decoding an absent feature (no key, or a ``Feature``
with no kind) gives the default if there is one, else no rows for a shape with a leading ``None``,
else ``None`` for an optional feature (``decode_optional``), else an error. A present feature must
have the right list kind and a value count that fits the shape, even when there is a default.
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

from codegen.errors import RecordError, TfrGenError
from codegen.runtime import tfcompat
from codegen.runtime.dtypes import DType, Kind
from codegen.runtime.featureinfo import FeatureInfo
from codegen.runtime.varint import encode_packed_int64
from codegen.runtime.wire import (
    decode_bytes_list,
    decode_float_list,
    decode_int64_list,
    encode_varint,
    key_field,
)

__all__ = [
    "NO_DEFAULT",
    "BoolScalar",
    "BytesList",
    "BytesScalar",
    "Codec",
    "Features",
    "FloatScalar",
    "IntScalar",
    "NumericTensor",
    "TextList",
    "TextScalar",
]

T = TypeVar("T")
S = TypeVar("S", bound=np.generic)

Features = Mapping[bytes, tuple[int, bytes]]
"""What :func:`~codegen.runtime.wire.parse_example` returns: key -> (list kind, list body)."""


class _NoDefault(enum.Enum):
    NO_DEFAULT = "NO_DEFAULT"

    def __repr__(self) -> str:
        return "NO_DEFAULT"


NO_DEFAULT: Final = _NoDefault.NO_DEFAULT
"""The ``default`` of a codec whose feature has no default."""

_F32: Final = struct.Struct("<f")
_F4: Final = np.dtype("<f4")
_F32_MAX: Final = float(np.finfo(np.float32).max)
_F32_OVERFLOW: Final = 2.0**128 - 2.0**103
"""The smallest magnitude that rounds to infinity in float32 (halfway above the largest float32)."""
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


def _nested_tuples(value: object) -> object:
    """Nested lists as nested tuples (scalars unchanged): the hashable form of a default."""
    if isinstance(value, list):
        return tuple(_nested_tuples(item) for item in value)
    return value


class Codec(abc.ABC, Generic[T]):
    """The codec of one feature of one record, holding ``T`` values.

    Constructor: ``record`` (class name), ``name`` (attribute), ``key`` (Example key), ``dtype``,
    ``shape`` (``None`` only as the first dimension), ``default`` (``NO_DEFAULT`` or a value
    ``coerce`` accepts; fully known shapes only) and ``optional`` (absent means ``None``; not with
    a default). A configuration the class cannot hold raises :class:`TfrGenError`.
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
        "_fixed",
        "_count",
        "_inner",
        "_inner_size",
        "_heads",
        "_empty_entry",
        "_default",
        "_none_if_absent",
        "_info",
    )

    _kinds: ClassVar[tuple[Kind, ...]]
    """The dtype kinds the class holds."""
    _scalar: ClassVar[bool]
    """Whether the class holds scalars (shape ``()``) or values of rank >= 1."""

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
        self._kf = key_field(key)
        self._key = key.encode("utf-8")
        self._kind = int(dtype.wire)
        self._tag = (self._kind << 3) | 2
        self._fixed = None not in shape
        self._inner = tuple(d for d in shape[1:] if d is not None)
        self._inner_size = math.prod(self._inner)
        self._count = math.prod(d for d in shape if d is not None) if self._fixed else None
        self._heads: dict[int, bytes] = {}
        self._empty_entry = _entry_head(self._kf, self._tag, 0)
        self._none_if_absent = optional and self._fixed
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
            wire=dtype.wire.list_name,
            shape=shape,
            fixed=self._fixed,
            default=None if self._default is None else self._plain(self._default),
            optional=optional,
        )

    def _check_config(self, default: object) -> None:
        """Raise :class:`TfrGenError` unless dtype, shape, default and optional fit the class."""
        where, dtype, shape = self._where, self.dtype, self.shape
        cls = type(self).__name__
        if dtype.kind not in self._kinds:
            raise TfrGenError(f"{where}: {cls} cannot hold dtype {dtype.name}")
        if not dtype.list_ok:
            raise TfrGenError(
                f"{where}: dtype {dtype.name} does not travel in a tf.train.Feature list (it needs encoding: raw)"
            )
        if self._scalar and shape != ():
            raise TfrGenError(f"{where}: {cls} needs shape (), got {shape}")
        if not self._scalar and not shape:
            raise TfrGenError(f"{where}: {cls} needs a shape of rank >= 1, got ()")
        for i, dim in enumerate(shape):
            if dim is None and i == 0:
                continue
            if type(dim) is not int or dim < 1:
                raise TfrGenError(
                    f"{where}: dimension {i} of shape {shape} must be a positive int"
                    + (" (only the first may be None)" if dim is None else "")
                )
        if default is not NO_DEFAULT:
            if self.optional:
                raise TfrGenError(f"{where}: a feature cannot both be optional and have a default")
            if None in shape:
                raise TfrGenError(f"{where}: a default needs a fully known shape, got {shape}")

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
    def _present(self, body: bytes) -> T:
        """The value of a present feature of the right list kind, from its list body."""

    @abc.abstractmethod
    def _copy(self, value: T) -> T:
        """A copy of ``value`` that shares nothing mutable with it."""

    @abc.abstractmethod
    def _plain(self, value: T) -> object:
        """``value`` as a scalar or nested tuples (the ``default`` of :class:`FeatureInfo`)."""

    def decode(self, features: Features) -> T:
        """This feature's value from ``parse_example``'s dict (rules in the module docstring)."""
        item = features.get(self._key)
        if item is None or not item[0]:
            return self._absent()
        if item[0] != self._kind:
            raise self._kind_error(item[0])
        return self._present(item[1])

    def decode_optional(self, features: Features) -> T | None:
        """Like :meth:`decode`; an absent optional feature without default decodes to ``None``."""
        item = features.get(self._key)
        if item is None or not item[0]:
            return None if self._none_if_absent else self._absent()
        if item[0] != self._kind:
            raise self._kind_error(item[0])
        return self._present(item[1])

    def _absent(self) -> T:
        """The value of an absent feature: the default (no rows for a leading ``None``)."""
        if self._default is not None:
            return self._copy(self._default)
        raise RecordError(
            f"{self._where_key}: required feature is missing "
            f"(expected {self.dtype.wire.list_name} with {_plural(self._count, 'value')})"
        )

    def info(self) -> FeatureInfo:
        """The TensorFlow-free description of this feature."""
        return self._info

    def tf_spec(self) -> Any:
        """The ``tf.io`` parse spec entry of this feature (needs TensorFlow)."""
        return tfcompat.parse_spec(self._info)

    def tf_post(self, value: Any, *, batched: bool) -> Any:
        """The tensor TensorFlow parsed under :meth:`tf_spec`, in the declared dtype and shape."""
        return tfcompat.post_process(self._info, value, batched=batched)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._where_key}, {self.dtype.name}, shape={self.shape})"

    # --- errors ---------------------------------------------------------------------------------

    def _type_error(self, value: object, expected: str | None = None) -> RecordError:
        expected = expected or self.dtype.name
        return RecordError(f"{self._where}: expected {expected}, got {_describe(value)}")

    def _range_error(self, number: object, where: str) -> RecordError:
        dtype = self.dtype
        if dtype.kind is Kind.FLOAT:
            bounds = f"[{-_F32_MAX!r}, {_F32_MAX!r}]"
        else:
            bounds = f"[{dtype.lo}, {dtype.hi}]"
        return RecordError(f"{where}: value {number!r} out of range for {dtype.name} {bounds}")

    def _kind_error(self, kind: int) -> RecordError:
        found = _LIST_NAMES.get(kind, f"list kind {kind}")
        expected = self.dtype.wire.list_name
        return RecordError(f"{self._where_key}: expected {expected}, found {found}")

    def _count_error(self, found: int) -> RecordError:
        wire = self.dtype.wire.list_name
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


# --- scalars ------------------------------------------------------------------------------------


class _Scalar(Codec[T]):
    """A codec of shape ``()``: immutable Python values."""

    __slots__ = ()
    _scalar = True

    def _copy(self, value: T) -> T:
        return value

    def _plain(self, value: T) -> object:
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
        elif isinstance(value, int | float | np.integer | np.floating) and not isinstance(value, bool):
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
                f"{self._where_key}: expected valid UTF-8 ({exc.reason} at byte {exc.start}), found {_describe(data)}"
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


class NumericTensor(Codec[npt.NDArray[S]]):
    """A numpy array of the declared numeric dtype and shape (any leading length for ``None``).

    Coerced values are new, owned, C-contiguous arrays. Integers and bools travel in an
    ``Int64List``, float32 in a ``FloatList``.
    """

    __slots__ = (
        "_np",
        "_is_float",
        "_lo",
        "_hi",
        "_narrow",
        "_out_shape",
        "_fixed_floats",
        "_fixed_head",
        "_body_head",
        "_body_size",
    )
    _kinds = (Kind.INT, Kind.BOOL, Kind.FLOAT)
    _scalar = False

    def _setup(self) -> None:
        dtype = self.dtype
        self._np = cast("np.dtype[S]", dtype.numpy)
        self._is_float = dtype.kind is Kind.FLOAT
        self._lo, self._hi = _bounds(dtype)
        self._narrow = dtype.name != "int64" and not self._is_float
        first = self.shape[0]
        self._out_shape = (-1 if first is None else first, *self._inner)
        # A fixed-shape float32 array has one canonical list body: its head and size never change.
        self._fixed_floats = self._count if self._is_float and self._count is not None else 0
        self._body_head = b"\x0a" + encode_varint(4 * self._fixed_floats)
        self._body_size = len(self._body_head) + 4 * self._fixed_floats
        self._fixed_head = self._head(4 * self._fixed_floats) if self._fixed_floats else b""

    def coerce(self, value: object) -> npt.NDArray[S]:
        """A list, tuple or array of the right kind and shape, as a new array of the dtype.

        Integer dtypes take integers (range-checked), ``bool`` takes bools, ``float32`` takes
        integers and floats (finite values beyond float32 are errors). ``[]`` is no rows for a
        leading ``None``.
        """
        if isinstance(value, np.ndarray):
            source: np.ndarray[Any, Any] = value
        elif isinstance(value, list | tuple):
            try:
                source = np.array(value)
            except ValueError:
                raise RecordError(
                    f"{self._where}: expected shape {self.shape}, got a ragged nested {type(value).__name__}"
                ) from None
        else:
            raise self._type_error(value, f"{self.dtype.name} values with shape {self.shape}")
        if source.size == 0:  # no values to check
            shape = source.shape
            if shape == (0,) and not self._fixed and not isinstance(value, np.ndarray):
                shape = (0, *self._inner)
            array: npt.NDArray[S] = np.empty(shape, self._np)
        else:
            array = self._cast(source, value)
        got, first = array.shape, self.shape[0]
        if len(got) != len(self.shape) or got[1:] != self._inner or first not in (None, got[0]):
            raise RecordError(f"{self._where}: expected shape {self.shape}, got {got}")
        return array

    def _cast(self, source: np.ndarray[Any, Any], value: object) -> npt.NDArray[S]:
        """The non-empty ``source`` (built from ``value``) as a new array of the dtype, checked."""
        if source.dtype.kind == "O":
            source = self._from_objects(source, value)
        kind = source.dtype.kind
        if self._is_float:
            if kind not in "iuf":
                raise self._elements_error(source, value)
            if kind == "f" and source.dtype.itemsize > 4:  # wider than float32: may overflow
                over = np.isfinite(source) & (np.abs(source) >= _F32_OVERFLOW)
                if over.any():
                    raise self._range_error(float(source[over].flat[0]), self._where)
        elif self.dtype.kind is Kind.BOOL:
            if kind != "b":
                raise self._elements_error(source, value)
        else:
            if kind not in "iu":
                raise self._elements_error(source, value)
            low, high = int(source.min()), int(source.max())
            if low < self._lo:
                raise self._range_error(low, self._where)
            if high > self._hi:
                raise self._range_error(high, self._where)
        return np.array(source, dtype=self._np, order="C")

    def _from_objects(self, source: np.ndarray[Any, Any], value: object) -> np.ndarray[Any, Any]:
        """An object array (mixed types, or Python ints beyond 64 bits) as a numeric array."""
        is_bool = self.dtype.kind is Kind.BOOL
        allowed: tuple[type, ...]
        if is_bool:
            allowed = (bool, np.bool_)
        elif self._is_float:
            allowed = (int, float, np.integer, np.floating)
        else:
            allowed = (int, np.integer)
        for item in source.flat:
            if not isinstance(item, allowed) or (not is_bool and type(item) is bool):
                raise RecordError(
                    f"{self._where}: expected {self.dtype.name} values, got "
                    f"{type(value).__name__} holding {_describe(item)}"
                )
            if not self._is_float and not self._lo <= int(item) <= self._hi:
                raise self._range_error(int(item), self._where)
        try:
            return np.array(source.tolist(), dtype=np.float64 if self._is_float else np.int64)
        except OverflowError:  # a Python int beyond float64
            first = next(item for item in source.flat if abs(item) >= _F32_OVERFLOW)
            raise self._range_error(first, self._where) from None

    def _elements_error(self, source: np.ndarray[Any, Any], value: object) -> RecordError:
        if isinstance(value, np.ndarray):
            holding = f"ndarray of {value.dtype}"
        else:
            kind = _KIND_NAMES.get(source.dtype.kind, str(source.dtype))
            holding = f"{type(value).__name__} of {kind}"
        return RecordError(f"{self._where}: expected {self.dtype.name} values, got {holding} {_short(value)}")

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
        if self._is_float:
            payload = array.astype(_F4, copy=False).tobytes()
        else:
            payload = encode_packed_int64(np.ascontiguousarray(array.reshape(-1), dtype=np.int64))
        return (self._heads.get(len(payload)) or self._head(len(payload))) + payload

    def _present(self, body: bytes) -> npt.NDArray[S]:
        values: np.ndarray[Any, Any]
        n = self._fixed_floats
        if n and len(body) == self._body_size and body.startswith(self._body_head):
            values = np.frombuffer(body, "<f4", n, len(self._body_head)).astype(self._np)
        elif self._is_float:
            size = len(body) - 2
            if 0 <= size < 0x80 and body[0] == 0x0A and body[1] == size and not size % 4:
                values = np.frombuffer(body, "<f4", size // 4, 2).astype(self._np)  # short packed
            else:
                values = decode_float_list(body)
            self._check_count(values.size)
        else:
            values = decode_int64_list(body)
            self._check_count(values.size)
            if self._narrow:
                if values.size:
                    low, high = int(values.min()), int(values.max())
                    if low < self._lo:
                        raise self._range_error(low, self._where_key)
                    if high > self._hi:
                        raise self._range_error(high, self._where_key)
                values = values.astype(self._np)
        if len(self._out_shape) > 1:
            values = values.reshape(self._out_shape)
        return cast("npt.NDArray[S]", values)

    def _absent(self) -> npt.NDArray[S]:
        return super()._absent() if self._fixed else np.empty((0, *self._inner), self._np)

    def _copy(self, value: npt.NDArray[S]) -> npt.NDArray[S]:
        return value.copy()

    def _plain(self, value: npt.NDArray[S]) -> object:
        return _nested_tuples(value.tolist())


# --- string lists -------------------------------------------------------------------------------


def _exact_bytes(item: object) -> bytes:
    """``item`` if it is a ``bytes`` object, else ``TypeError``."""
    if type(item) is not bytes:
        raise TypeError(f"expected bytes, got {type(item).__name__}")
    return item


class _StringList(Codec[list[Any]]):
    """Strings of rank >= 1 as nested lists (one level per dimension), flat in a ``BytesList``."""

    __slots__ = ("_rank", "_list_heads", "_to_bytes")
    _scalar = False

    def _setup(self) -> None:
        self._rank = len(self.shape)
        self._list_heads: dict[int, bytes] = {}
        # One canonical item as a value of the BytesList; TypeError for an item of a wrong type.
        self._to_bytes: Callable[[Any], bytes]
        self._to_bytes = _str_encode if self.dtype.kind is Kind.STR else _exact_bytes

    @abc.abstractmethod
    def _coerce_items(self, items: list[object], where: str) -> list[Any]:
        """The innermost items of one row (``where`` names the row) as canonical values."""

    @abc.abstractmethod
    def _from_bytes(self, values: list[bytes]) -> list[Any]:
        """The values of a decoded ``BytesList`` as canonical items."""

    def coerce(self, value: object) -> list[Any]:
        """Iterables (not bare ``str``/``bytes``) nested per dimension, with the fixed counts."""
        return self._coerce_level(value, 0, self._where)

    def _coerce_level(self, value: object, depth: int, where: str) -> list[Any]:
        if isinstance(value, str | bytes | bytearray | memoryview) or not isinstance(value, Iterable):
            expected = "an iterable"
            if depth == 0:
                expected = f"an iterable of {self.dtype.name} values with shape {self.shape}"
            raise RecordError(f"{where}: expected {expected}, got {_describe(value)}")
        items = list(value)
        dim = self.shape[depth]
        if dim is not None and len(items) != dim:
            raise RecordError(f"{where}: expected {_plural(dim, 'item')} (shape {self.shape}), got {len(items)}")
        if depth + 1 == self._rank:
            return self._coerce_items(items, where)
        return [self._coerce_level(row, depth + 1, f"{where}[{i}]") for i, row in enumerate(items)]

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
        to_bytes = self._to_bytes
        parts: list[bytes] = []
        for item in items:
            data = to_bytes(item)
            size = len(data)
            parts.append(_ITEM_HEADS[size] if size < 0x80 else b"\x0a" + encode_varint(size))
            parts.append(data)
        body = b"".join(parts)
        head = self._list_heads.get(len(body))
        if head is None:
            head = _entry_head(self._kf, self._tag, len(body))
            if len(self._list_heads) < _HEAD_CACHE:
                self._list_heads[len(body)] = head
        return head + body

    def _present(self, body: bytes) -> list[Any]:
        values = decode_bytes_list(body)
        self._check_count(len(values))
        items = self._from_bytes(values)
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

    def _plain(self, value: list[Any]) -> object:
        return _nested_tuples(value)


class TextList(_StringList):
    """``str`` values (encodable as UTF-8) of rank >= 1 as nested lists; UTF-8 in a BytesList."""

    __slots__ = ()
    _kinds = (Kind.STR,)

    def _coerce_items(self, items: list[object], where: str) -> list[str]:
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

    def _from_bytes(self, values: list[bytes]) -> list[Any]:
        try:
            return list(map(_bytes_decode, values))
        except UnicodeDecodeError:
            i = next(i for i, data in enumerate(values) if not _decodable(data))
            raise RecordError(
                f"{self._where_key}: expected valid UTF-8 in value {i}, found {_describe(values[i])}"
            ) from None


class BytesList(_StringList):
    """``bytes`` values of rank >= 1 as nested lists, in a ``BytesList``."""

    __slots__ = ()
    _kinds = (Kind.BYTES,)

    def _coerce_items(self, items: list[object], where: str) -> list[bytes]:
        values: list[bytes] = []
        for i, item in enumerate(items):
            if type(item) is bytes:
                values.append(item)
            elif isinstance(item, bytes | bytearray | memoryview):
                values.append(bytes(item))
            else:
                raise RecordError(f"{where}[{i}]: expected bytes, got {_describe(item)}")
        return values

    def _from_bytes(self, values: list[bytes]) -> list[Any]:
        return values


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
