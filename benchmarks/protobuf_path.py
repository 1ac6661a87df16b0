"""The protobuf contender: what user code does with ``tf.train.Example`` message classes.

:class:`ProtobufPath` builds a message from the same Python values a generated record class takes
(one ``Feature`` per feature, put in a dict, wrapped in ``Features`` and ``Example``, the way the
TensorFlow tutorials write it) and pulls every feature of a parsed message back into the values the
generated class gives (``int``, ``float``, ``str``, ``bytes``, lists, numpy arrays of the declared
dtype and shape). It uses protobuf's fastest idioms: numpy arrays go in as ``tolist()`` and come
out through ``np.array(repeated_field, dtype)``.

The message classes are ``codegen.runtime.tf.proto``'s (TensorFlow's wire format, in a private
descriptor pool, so this works next to TensorFlow in one process).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from codegen.dtypes import DTYPES, Kind
from codegen.kinds import IMAGE_ENCODINGS
from codegen.runtime import FeatureInfo, FeatureSpec
from codegen.runtime.codec.images import decode_image, encode_image
from codegen.runtime.tf import proto

Message = Any
"""A protobuf message (its class is built at run time)."""
Values = dict[str, Any]
"""One record's values by attribute name."""

Make = Callable[[Any], Message]
"""One value -> its ``Feature`` message."""
Read = Callable[[Message], Any]
"""A ``Feature`` message -> its value."""
Put = Callable[[Values, dict[str, Message]], None]
"""Adds one feature of a record's values to a key -> message dict."""
Get = Callable[[Any], Any]
"""Reads one feature from a message's key -> message map."""


def is_raw(info: FeatureInfo) -> bool:
    """Whether a feature has ``encoding: raw`` (a numeric dtype travelling in a ``BytesList``)."""
    numeric_bytes = DTYPES[info.dtype].numeric and info.wire == "bytes_list"
    return numeric_bytes and info.encoding not in IMAGE_ENCODINGS


def _identity(value: Any) -> Any:
    return value


def _flatten(value: Any, rank: int) -> list[Any]:
    """Nested lists of ``rank`` levels as one flat list."""
    for _ in range(rank - 1):
        value = [item for row in value for item in row]
    return list(value)


def _nest(items: list[Any], inner: tuple[int, ...]) -> list[Any]:
    """A flat list as nested lists whose inner levels have the sizes ``inner``."""
    for size in reversed(inner):
        items = [items[i : i + size] for i in range(0, len(items), size)]
    return items


def _inner(info: FeatureInfo) -> tuple[int, ...]:
    """The known dimensions after the first (all of them are known)."""
    return tuple(d for d in info.shape[1:] if d is not None)


def _string_codec(info: FeatureInfo) -> tuple[Make, Read]:
    """``str``/``bytes`` values of any rank, in a ``BytesList``."""
    text = DTYPES[info.dtype].kind is Kind.STR
    to_bytes: Callable[[Any], bytes] = str.encode if text else _identity
    from_bytes: Callable[[bytes], Any] = bytes.decode if text else _identity
    if not info.shape:

        def make_scalar(value: Any) -> Message:
            return proto.Feature(bytes_list=proto.BytesList(value=[to_bytes(value)]))

        def read_scalar(feature: Message) -> Any:
            return from_bytes(feature.bytes_list.value[0])

        return make_scalar, read_scalar
    rank, inner = len(info.shape), _inner(info)

    def make(value: Any) -> Message:
        items = [to_bytes(item) for item in _flatten(value, rank)]
        return proto.Feature(bytes_list=proto.BytesList(value=items))

    def read(feature: Message) -> Any:
        return _nest([from_bytes(item) for item in feature.bytes_list.value], inner)

    return make, read


def _numeric_scalar_codec(info: FeatureInfo) -> tuple[Make, Read]:
    """An ``int``, ``bool`` or ``float`` in a one-value ``Int64List``/``FloatList``."""
    kind = DTYPES[info.dtype].kind
    if kind is Kind.FLOAT:

        def make_float(value: Any) -> Message:
            return proto.Feature(float_list=proto.FloatList(value=[value]))

        def read_float(feature: Message) -> Any:
            return feature.float_list.value[0]

        return make_float, read_float
    convert: Callable[[Any], Any] = bool if kind is Kind.BOOL else _identity

    def make_int(value: Any) -> Message:
        return proto.Feature(int64_list=proto.Int64List(value=[int(value)]))

    def read_int(feature: Message) -> Any:
        return convert(feature.int64_list.value[0])

    return make_int, read_int


def _numeric_tensor_codec(info: FeatureInfo) -> tuple[Make, Read]:
    """A numeric array, flat in an ``Int64List`` or ``FloatList``, back as the declared dtype."""
    dtype = DTYPES[info.dtype]
    np_dtype = dtype.numpy
    rows = (-1, *_inner(info)) if len(info.shape) > 1 else None
    if dtype.kind is Kind.FLOAT:

        def make_floats(value: Any) -> Message:
            return proto.Feature(float_list=proto.FloatList(value=np.ravel(value).tolist()))

        def read_floats(feature: Message) -> Any:
            array = np.array(feature.float_list.value, np_dtype)
            return array if rows is None else array.reshape(rows)

        return make_floats, read_floats
    as_int = np.int64 if dtype.kind is Kind.BOOL else None  # Int64List refuses Python bools

    def make_ints(value: Any) -> Message:
        flat = np.ravel(value) if as_int is None else np.ravel(value).astype(as_int)
        return proto.Feature(int64_list=proto.Int64List(value=flat.tolist()))

    def read_ints(feature: Message) -> Any:
        array = np.array(feature.int64_list.value, np_dtype)
        return array if rows is None else array.reshape(rows)

    return make_ints, read_ints


def _raw_bytes(info: FeatureInfo) -> tuple[Callable[[Any], bytes], Callable[[bytes, Any], Any]]:
    """``encoding: raw``: an array as little-endian C-order bytes, and back given its shape."""
    np_dtype = DTYPES[info.dtype].numpy
    little = np_dtype.newbyteorder("<")

    def to_bytes(value: Any) -> bytes:
        return np.ascontiguousarray(value, dtype=little).tobytes()

    def from_bytes(data: bytes, shape: Any) -> Any:
        return np.frombuffer(data, little).astype(np_dtype).reshape(shape)

    return to_bytes, from_bytes


def _codec(info: FeatureInfo) -> tuple[Make, Read]:
    """How one feature (or one step of a per-step feature) becomes a ``Feature`` and back."""
    if info.encoding in IMAGE_ENCODINGS:
        encoding, quality, channels = info.encoding, info.quality or 95, info.shape[2]

        def make_image(value: Any) -> Message:
            data = encode_image(np.asarray(value, np.uint8), encoding, quality)
            return proto.Feature(bytes_list=proto.BytesList(value=[data]))

        def read_image(feature: Message) -> Any:
            return decode_image(feature.bytes_list.value[0], channels)

        return make_image, read_image
    if is_raw(info):
        to_bytes, from_bytes = _raw_bytes(info)
        shape = info.shape

        def make_raw(value: Any) -> Message:
            return proto.Feature(bytes_list=proto.BytesList(value=[to_bytes(value)]))

        def read_raw(feature: Message) -> Any:
            return from_bytes(feature.bytes_list.value[0], shape)

        return make_raw, read_raw
    if not DTYPES[info.dtype].numeric:
        return _string_codec(info)
    if not info.shape:
        return _numeric_scalar_codec(info)
    return _numeric_tensor_codec(info)


def _feature_accessors(info: FeatureInfo) -> tuple[Put, Get]:
    """How one ``Example``/context feature goes into and comes out of a ``Features`` map.

    An optional feature whose value is ``None`` is left out, and an absent one reads as ``None``.
    A raw tensor with an unknown dimension carries its shape in the companion ``<key>/shape``.
    """
    name, key, optional = info.name, info.key, info.optional
    if is_raw(info) and not info.fixed:
        to_bytes, from_bytes = _raw_bytes(info)
        shape_key = f"{key}/shape"

        def put_raw(values: Values, out: dict[str, Message]) -> None:
            value = values[name]
            if value is not None:
                out[key] = proto.Feature(bytes_list=proto.BytesList(value=[to_bytes(value)]))
                out[shape_key] = proto.Feature(int64_list=proto.Int64List(value=list(value.shape)))

        def get_raw(features: Any) -> Any:
            if optional and key not in features:
                return None
            shape = tuple(features[shape_key].int64_list.value)
            return from_bytes(features[key].bytes_list.value[0], shape)

        return put_raw, get_raw
    make, read = _codec(info)

    def put(values: Values, out: dict[str, Message]) -> None:
        value = values[name]
        if value is not None:
            out[key] = make(value)

    if optional:

        def get_optional(features: Any) -> Any:
            return read(features[key]) if key in features else None

        return put, get_optional

    def get(features: Any) -> Any:
        return read(features[key])

    return put, get


def _feature_list_accessors(info: FeatureInfo) -> tuple[Put, Get]:
    """How one per-step feature goes into and comes out of a ``FeatureLists`` map.

    Steps of a fixed numeric shape stack to an array ``[T, *shape]``; other steps form a list.
    """
    name, key = info.name, info.key
    make, read = _codec(info)  # info.shape is the shape of one step
    numeric = DTYPES[info.dtype].numeric
    stacked = numeric and info.fixed
    np_dtype = DTYPES[info.dtype].numpy

    def put(values: Values, out: dict[str, Message]) -> None:
        value = values[name]
        steps = value.tolist() if stacked else value
        out[key] = proto.FeatureList(feature=[make(step) for step in steps])

    def get(feature_lists: Any) -> Any:
        if key not in feature_lists:
            return np.empty((0, *info.shape), np_dtype) if stacked else []
        steps = [read(feature) for feature in feature_lists[key].feature]
        if stacked:
            return np.array(steps, np_dtype).reshape((len(steps), *info.shape))
        return steps

    return put, get


class ProtobufPath:
    """Builds and reads the protobuf messages of one record type.

    ``spec`` is the record's ``feature_spec()``; ``sequence`` names its per-step features (then
    the messages are ``SequenceExample``s with the other features as context).
    """

    def __init__(self, spec: FeatureSpec, sequence: tuple[str, ...] = ()) -> None:
        self.sequence = sequence
        context = [(f.name, *_feature_accessors(f)) for f in spec if f.name not in sequence]
        steps = [(f.name, *_feature_list_accessors(f)) for f in spec if f.name in sequence]
        self._puts = [put for _, put, _ in context]
        self._gets = [(name, get) for name, _, get in context]
        self._list_puts = [put for _, put, _ in steps]
        self._list_gets = [(name, get) for name, _, get in steps]

    def build(self, values: Values) -> Message:
        """The ``Example`` (or ``SequenceExample``) message of one record's values."""
        feature: dict[str, Message] = {}
        for put in self._puts:
            put(values, feature)
        if not self.sequence:
            return proto.Example(features=proto.Features(feature=feature))
        lists: dict[str, Message] = {}
        for put in self._list_puts:
            put(values, lists)
        return proto.SequenceExample(
            context=proto.Features(feature=feature),
            feature_lists=proto.FeatureLists(feature_list=lists),
        )

    def parse(self, data: bytes) -> Message:
        """The message of serialized bytes."""
        if self.sequence:
            return proto.SequenceExample.FromString(data)
        return proto.Example.FromString(data)

    def access(self, message: Message) -> Values:
        """Every feature of a parsed message as the values the generated class gives."""
        if not self.sequence:
            features = message.features.feature
            return {name: get(features) for name, get in self._gets}
        context = message.context.feature
        values = {name: get(context) for name, get in self._gets}
        lists = message.feature_lists.feature_list
        for name, get in self._list_gets:
            values[name] = get(lists)
        return values
