"""The ``tf.train.Example`` and ``SequenceExample`` wire format, without protobuf message objects.

Decoding follows protobuf's parser: fields in any order, packed or unpacked lists (in several
chunks), repeated occurrences of a message field merged (their bytes concatenated), the last of the
``Feature.kind`` oneof members winning, the last map entry of a key winning, an entry without key
meaning the empty key and one without value a ``Feature`` with no kind, unknown fields of every wire
type (groups included, properly nested; inside a group, as in protobuf, a field number may be 0)
skipped. One deviation follows TensorFlow's parser of
``Example``: a later entry of a key whose ``Feature`` has no kind leaves an earlier entry that has a
list in place (protobuf's map would replace it; ``SequenceExample`` context and feature lists keep
protobuf's rule, as TensorFlow does). The list of a replaced or kept earlier entry is checked.
Malformed bytes raise :class:`RecordError` naming the byte offset and what was expected; a length
never allocates more than the input holds, and the work is linear in the input size.

``parse_example`` checks the structure down to each ``Feature`` and that map keys are UTF-8 (as
protobuf's proto3 parser does); a list body (``BytesList``/``FloatList``/``Int64List``) is checked
by the ``decode_*`` function that reads it. Unknown groups may nest deeper than protobuf's recursion
limit of 100 (the open ones cost 4 bytes each). An entry carrying unknown fields is an ordinary
entry, as protobuf's wire rules say (upb's Python parser keeps such an entry as an unknown field
instead, and TensorFlow's parse ops reject unknown fields inside ``Features``).

Encoding is byte-identical to protobuf's deterministic serialization when the map entries come in
the order of :func:`map_key_order`. The ``features`` of an ``Example`` and the ``context`` and
``feature_lists`` of a ``SequenceExample`` are always written, even when empty (``0a 00``), as
protobuf does for ``Example(features=Features(feature=...))``.
"""

from __future__ import annotations

import math
import operator
import struct
from array import array
from collections.abc import Callable, Iterable, Sequence
from types import SimpleNamespace as _Namespace
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

import codegen.runtime.accel as _accel
from codegen.errors import RecordError
from codegen.runtime.codec.varint import (
    decode_packed_int64,
    encode_length,
    encode_packed_int64,
    encode_varint,
    read_varint,
    to_int64,
)

if TYPE_CHECKING:
    from codegen.runtime.codec.buffer import BytesLike

__all__ = [
    "as_bytes",
    "bytes_feature",
    "bytes_scalar_feature",
    "decode_bytes_list",
    "decode_float_list",
    "decode_int64_list",
    "encode_varint",
    "example",
    "feature_list_entry",
    "float_feature",
    "float_scalar_feature",
    "int64_feature",
    "int64_scalar_feature",
    "key_field",
    "map_entry",
    "map_key_order",
    "parse_example",
    "parse_sequence_example",
    "sequence_example",
]

_VARINT, _I64, _LEN, _START_GROUP, _END_GROUP, _I32 = 0, 1, 2, 3, 4, 5
_KIND_NAMES = {1: "BytesList", 2: "FloatList", 3: "Int64List"}
_FLOAT32 = struct.Struct("<f")
_INT64_LO, _INT64_HI = -(1 << 63), (1 << 63) - 1

IntArray = NDArray[np.integer[Any]] | NDArray[np.bool_]
"""What ``int64_feature`` takes: an array of any integer (or bool) dtype, any shape."""
FloatArray = NDArray[np.floating[Any]] | NDArray[np.integer[Any]]
"""What ``float_feature`` takes: an array of any float (or integer) dtype, any shape."""
FeatureValue = tuple[int, bytes]
"""A parsed ``Feature``: (kind, list body); kind 1/2/3 is ``Wire.BYTES/FLOAT/INT64``, 0 none."""


# --- reading fields -------------------------------------------------------------------------------


def _read_tag(
    data: bytes, pos: int, end: int, what: str, in_group: bool = False
) -> tuple[int, int, int]:
    """Read the tag at ``pos``: (field number, wire type, next position); at most 32 bits. Field
    number 0 is refused but ``in_group`` (protobuf checks no field number inside an unknown group,
    only that each end-group tag closes the group it matches)."""
    byte = data[pos]
    if byte < 0x80:
        tag, after = byte, pos + 1
    else:
        tag, after = read_varint(data, pos, end, what)
        if after - pos > 5 or tag > 0xFFFFFFFF:
            raise RecordError(f"{what}: the tag at byte offset {pos} is longer than 32 bits")
    if tag < 8 and not in_group:
        raise RecordError(f"{what}: field number 0 in the tag at byte offset {pos}")
    return tag >> 3, tag & 7, after


def _skip_value(data: bytes, pos: int, end: int, wire_type: int, tag_pos: int, what: str) -> int:
    """Skip the value of a non-group field whose tag ended at ``pos``; return the next position."""
    if wire_type == _VARINT:
        return read_varint(data, pos, end, what)[1]
    if wire_type == _LEN:
        length, start = read_varint(data, pos, end, what)
        if length > end - start:
            raise RecordError(
                f"{what}: length {length} at byte offset {pos} runs past the end of the message "
                f"at byte offset {end}"
            )
        return start + length
    if wire_type == _I64 or wire_type == _I32:
        after = pos + (8 if wire_type == _I64 else 4)
        if after > end:
            raise RecordError(
                f"{what}: truncated fixed{64 if wire_type == _I64 else 32} value at byte offset "
                f"{pos} (the message ends at byte offset {end})"
            )
        return after
    if wire_type == _END_GROUP:
        raise RecordError(
            f"{what}: end-group tag at byte offset {tag_pos} without a matching start-group tag"
        )
    raise RecordError(
        f"{what}: invalid wire type {wire_type} in the tag at byte offset {tag_pos} "
        "(expected 0 to 5)"
    )


def _skip_group(data: bytes, pos: int, end: int, field: int, tag_pos: int, what: str) -> int:
    """Skip the group of ``field`` opened by the tag at ``tag_pos`` (nested groups included).

    The open groups are kept as the byte offsets of their start-group tags (4 bytes each below
    4 GiB), their field numbers read again from there when an end-group tag comes.
    """
    open_groups = array("I" if end <= 0xFFFFFFFF else "q", (tag_pos,))
    while open_groups:
        if pos >= end:
            opened = open_groups[-1]
            raise RecordError(
                f"{what}: the group of field {_read_tag(data, opened, end, what, True)[0]} opened at "
                f"byte offset {opened} is not closed before byte offset {end}"
            )
        at = pos
        number, wire_type, pos = _read_tag(data, pos, end, what, True)
        if wire_type == _START_GROUP:
            open_groups.append(at)
        elif wire_type == _END_GROUP:
            opened = open_groups.pop()
            expected = _read_tag(data, opened, end, what, True)[0]
            if number != expected:
                raise RecordError(
                    f"{what}: end-group tag of field {number} at byte offset {at} does not match "
                    f"the group of field {expected} opened at byte offset {opened}"
                )
        else:
            pos = _skip_value(data, pos, end, wire_type, at, what)
    return pos


def _next_field(data: bytes, pos: int, end: int, what: str) -> tuple[int, int, int, int]:
    """Read the field at ``pos``: (field number, wire type, value start, value end).

    The next field starts at value end. For a length-delimited field the value is its payload
    (after the length); a group's value runs up to and including its end-group tag.
    """
    tag_pos = pos
    field, wire_type, pos = _read_tag(data, pos, end, what)
    if wire_type == _LEN:
        byte = data[pos] if pos < end else 0x80
        if byte < 0x80:
            start = pos + 1
            length = byte
        else:
            length, start = read_varint(data, pos, end, what)
        if length > end - start:
            raise RecordError(
                f"{what}: length {length} at byte offset {pos} runs past the end of the message "
                f"at byte offset {end}"
            )
        return field, _LEN, start, start + length
    if wire_type == _START_GROUP:
        return field, wire_type, pos, _skip_group(data, pos, end, field, tag_pos, what)
    return field, wire_type, pos, _skip_value(data, pos, end, wire_type, tag_pos, what)


def _check_message(data: bytes, start: int, end: int, what: str) -> None:
    """Raise unless ``data[start:end]`` is a sequence of well-formed fields."""
    pos = start
    while pos < end:
        pos = _next_field(data, pos, end, what)[3]


def _check_key(key: bytes, offset: int, what: str) -> None:
    if not key.isascii():
        try:
            key.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise RecordError(
                f"{what}: the map key at byte offset {offset} is not valid UTF-8 ({exc.reason})"
            ) from None


# --- parsing Example and SequenceExample ----------------------------------------------------------


def as_bytes(data: BytesLike) -> bytes:
    """``data``, any C-contiguous bytes-like object (bytes, bytearray, memoryview, a contiguous
    numpy array), as ``bytes``; the errors the C accelerator raises for anything else (a
    ``TypeError`` for an object without the buffer protocol, a ``ValueError`` or ``BufferError``
    for a non-contiguous buffer), so that both implementations take the same inputs."""
    if type(data) is bytes:
        return data
    try:
        view = memoryview(data)  # type: ignore[arg-type]  # an ndarray is a Buffer from Python 3.12
    except TypeError:
        raise TypeError(f"a bytes-like object is required, not '{type(data).__name__}'") from None
    with view:
        if not view.c_contiguous:
            name = type(data).__name__
            if name == "ndarray":
                raise ValueError("ndarray is not C-contiguous")
            raise BufferError(f"{name}: underlying buffer is not C-contiguous")
        return view.tobytes()


def parse_example(data: BytesLike) -> dict[bytes, FeatureValue]:
    """The features of a serialized ``Example``: key (UTF-8 bytes) -> (kind, list body).

    Of several entries of a key the last wins, except that one whose ``Feature`` has no kind
    leaves an earlier entry with a list in place, as TensorFlow's parser does. ``data`` may be
    any bytes-like object (:func:`as_bytes`).
    """
    if type(data) is not bytes:
        data = as_bytes(data)
    features: dict[bytes, FeatureValue] = {}
    end = len(data)
    if end > 1 and data[0] == 0x0A:  # the usual Example: one features field and nothing else
        length = data[1]
        start = 2
        if length >= 0x80:
            if end > 2 and data[2] < 0x80:
                length = (length & 0x7F) | data[2] << 7
                start = 3
            else:
                length = -1
        if start + length == end:
            _read_features(data, start, end, features, "Example.features", True)
            return features
    pos = 0
    while pos < end:
        field, wire_type, start, pos = _next_field(data, pos, end, "Example")
        if field == 1 and wire_type == _LEN:
            _read_features(data, start, pos, features, "Example.features", True)
    return features


def has_other_fields(data: bytes) -> bool:
    """Whether serialized ``Example`` bytes have a top-level field other than ``features`` (1),
    such as a ``SequenceExample``'s ``feature_lists``; :class:`RecordError` if malformed."""
    pos, end = 0, len(data)
    while pos < end:
        field, _, _, pos = _next_field(data, pos, end, "Example")
        if field != 1:
            return True
    return False


def parse_sequence_example(
    data: BytesLike,
) -> tuple[dict[bytes, FeatureValue], dict[bytes, list[FeatureValue]]]:
    """The context features and feature lists of a serialized ``SequenceExample``.

    The context is like :func:`parse_example`'s result; a feature list maps its key to one
    (kind, list body) per step, in order. ``data`` may be any bytes-like object
    (:func:`as_bytes`).
    """
    if type(data) is not bytes:
        data = as_bytes(data)
    context: dict[bytes, FeatureValue] = {}
    feature_lists: dict[bytes, list[FeatureValue]] = {}
    pos, end = 0, len(data)
    while pos < end:
        field, wire_type, start, pos = _next_field(data, pos, end, "SequenceExample")
        if wire_type != _LEN:
            continue
        if field == 1:
            _read_features(data, start, pos, context, "SequenceExample.context", False)
        elif field == 2:
            _read_feature_lists(data, start, pos, feature_lists, "SequenceExample.feature_lists")
    return context, feature_lists


def _read_features(
    data: bytes, pos: int, end: int, out: dict[bytes, FeatureValue], what: str, keep_listed: bool
) -> None:
    """Add the map entries of the ``Features`` message ``data[pos:end]`` to ``out``.

    ``keep_listed`` is TensorFlow's rule for an ``Example``: a later entry of a key whose
    ``Feature`` has no kind does not replace an earlier one that has a list.
    """
    # Canonical entries (0a <n> 0a <key length> <key> 12 <n> [<kind tag> <n> <body>]) are read
    # inline, with one- and two-byte lengths; anything else goes through _feature_entry.
    while pos < end:
        if data[pos] != 0x0A or pos + 1 >= end:
            field, wire_type, start, pos = _next_field(data, pos, end, what)
            if field == 1 and wire_type == _LEN:
                key, value = _feature_entry(data, start, pos, what)
                if out.setdefault(key, value) is not value:
                    _replace(out, key, value, what, keep_listed)
            continue
        length = data[pos + 1]
        p = pos + 2
        if length >= 0x80:
            if p < end and data[p] < 0x80:
                length = (length & 0x7F) | data[p] << 7
                p += 1
            else:
                length, p = read_varint(data, pos + 1, end, what)
        entry_end = p + length
        if entry_end > end:
            raise RecordError(
                f"{what}: length {length} at byte offset {pos + 1} runs past the end of the "
                f"message at byte offset {end}"
            )
        pos = entry_end
        if length >= 4 and data[p] == 0x0A and data[p + 1] < 0x80:
            key_end = p + 2 + data[p + 1]
            if key_end + 2 <= entry_end and data[key_end] == 0x12:
                f = key_end + 2
                size = data[key_end + 1]
                if size >= 0x80:
                    if f < entry_end and data[f] < 0x80:
                        size = (size & 0x7F) | data[f] << 7
                        f += 1
                    else:
                        size = -1
                if f + size == entry_end:
                    key = data[p + 2 : key_end]
                    if size == 0:
                        if key.isascii():
                            value = (0, b"")
                            if out.setdefault(key, value) is not value:
                                _replace(out, key, value, what, keep_listed)
                            continue
                    elif size >= 2 and key.isascii():
                        kind_tag = data[f]
                        b = f + 2
                        body_length = data[f + 1]
                        if body_length >= 0x80:
                            if b < entry_end and data[b] < 0x80:
                                body_length = (body_length & 0x7F) | data[b] << 7
                                b += 1
                            else:
                                body_length = -1
                        if b + body_length == entry_end and (
                            kind_tag == 0x1A or kind_tag == 0x12 or kind_tag == 0x0A
                        ):
                            value = (kind_tag >> 3, data[b:entry_end])
                            if out.setdefault(key, value) is not value:
                                _replace(out, key, value, what, keep_listed)
                            continue
        key, value = _feature_entry(data, p, entry_end, what)
        if out.setdefault(key, value) is not value:
            _replace(out, key, value, what, keep_listed)


def _replace(
    out: dict[bytes, FeatureValue], key: bytes, value: FeatureValue, what: str, keep_listed: bool
) -> None:
    """Let the later entry ``value`` of a duplicate ``key`` win, after checking the list of the
    earlier one (as protobuf does); with ``keep_listed``, a kindless ``value`` leaves an earlier
    entry that has a list in place."""
    kind, body = out[key]
    _check_list(kind, body, f"{what}: the feature of an earlier entry of key {key!r}")
    if not (keep_listed and kind and not value[0]):
        out[key] = value


def _feature_entry(data: bytes, pos: int, end: int, what: str) -> tuple[bytes, FeatureValue]:
    """The ``Features.feature`` map entry ``data[pos:end]``, in any encoding: (key, feature)."""
    key = b""
    chunks: list[tuple[int, int]] = []
    while pos < end:
        field, wire_type, start, pos = _next_field(data, pos, end, what)
        if wire_type == _LEN:
            if field == 1:
                key = data[start:pos]
                _check_key(key, start, what)
            elif field == 2:
                chunks.append((start, pos))
    return key, _feature(data, chunks, what)


def _feature(data: bytes, chunks: Sequence[tuple[int, int]], what: str) -> FeatureValue:
    """The ``Feature`` merged from the serialized pieces ``data[start:end]`` of ``chunks``."""
    kind = 0
    parts: list[tuple[int, int]] = []
    for pos, end in chunks:
        while pos < end:
            field, wire_type, start, pos = _next_field(data, pos, end, what)
            if wire_type == _LEN and 1 <= field <= 3:
                if field != kind:
                    _check_replaced(data, kind, parts, what)
                    kind = field
                    parts = []
                parts.append((start, pos))
    if not parts:
        return kind, b""
    if len(parts) == 1:
        start, end = parts[0]
        return kind, data[start:end]
    for start, end in parts:
        _check_message(data, start, end, f"{what} {_KIND_NAMES[kind]}")
    return kind, b"".join([data[start:end] for start, end in parts])


def _check_replaced(data: bytes, kind: int, parts: Sequence[tuple[int, int]], what: str) -> None:
    """Raise unless each piece of a list that a later ``Feature.kind`` member replaced is valid."""
    for start, end in parts:
        _check_list(
            kind,
            data[start:end],
            f"{what}: the {_KIND_NAMES[kind]} at byte offset {start} (replaced by a later "
            "member of Feature.kind)",
        )


def _check_list(kind: int, body: bytes, where: str) -> None:
    """Raise, naming ``where``, unless ``body`` is a valid list of ``kind`` (protobuf checks lists
    that later fields replace; this parser otherwise reads a list only when it is decoded)."""
    if kind:
        try:
            _DECODERS[kind](body)
        except RecordError as exc:
            raise RecordError(f"{where} is malformed: {exc}") from None


def _read_feature_lists(
    data: bytes, pos: int, end: int, out: dict[bytes, list[FeatureValue]], what: str
) -> None:
    """Add the map entries of the ``FeatureLists`` message ``data[pos:end]`` to ``out``."""
    while pos < end:
        field, wire_type, start, pos = _next_field(data, pos, end, what)
        if field != 1 or wire_type != _LEN:
            continue
        key = b""
        steps: list[FeatureValue] = []
        entry_pos = start
        while entry_pos < pos:
            number, kind, value_start, entry_pos = _next_field(data, entry_pos, pos, what)
            if kind != _LEN:
                continue
            if number == 1:
                key = data[value_start:entry_pos]
                _check_key(key, value_start, what)
            elif number == 2:
                steps.extend(_feature_list(data, value_start, entry_pos, what))
        for kind, body in out.get(key, ()):
            _check_list(kind, body, f"{what}: a step of an earlier entry of key {key!r}")
        out[key] = steps


def _feature_list(data: bytes, pos: int, end: int, what: str) -> list[FeatureValue]:
    """The features of the ``FeatureList`` message ``data[pos:end]``, in order."""
    steps: list[FeatureValue] = []
    while pos < end:
        field, wire_type, start, pos = _next_field(data, pos, end, what)
        if field == 1 and wire_type == _LEN:
            steps.append(_feature(data, ((start, pos),), what))
    return steps


# --- decoding list bodies -------------------------------------------------------------------------


def _single_packed(body: bytes, what: str) -> int:
    """If ``body`` is one length-delimited field 1: the offset of its payload, else -1."""
    end = len(body)
    if end < 2 or body[0] != 0x0A:
        return -1
    length = body[1]
    if length < 0x80:
        return 2 if length == end - 2 else -1
    if end > 2 and body[2] < 0x80:
        return 3 if (length & 0x7F | body[2] << 7) == end - 3 else -1
    length, start = read_varint(body, 1, end, what)
    return start if start + length == end else -1


def decode_int64_list(body: bytes) -> NDArray[np.int64]:
    """The values of a serialized ``Int64List`` (packed and unpacked, in any number of chunks)."""
    if len(body) == 3 and body[0] == 0x0A and body[1] == 1 and body[2] < 0x80:
        return np.array((body[2],), dtype=np.int64)  # one small value: a scalar feature
    start = _single_packed(body, "Int64List")
    if start >= 0:
        return decode_packed_int64(body, start, len(body), "Int64List")
    pieces: list[NDArray[np.int64]] = []
    loose: list[int] = []
    pos, end = 0, len(body)
    while pos < end:
        field, wire_type, start, pos = _next_field(body, pos, end, "Int64List")
        if field != 1:
            continue
        if wire_type == _VARINT:
            loose.append(to_int64(read_varint(body, start, pos, "Int64List")[0]))
        elif wire_type == _LEN:
            if loose:
                pieces.append(np.array(loose, dtype=np.int64))
                loose = []
            pieces.append(decode_packed_int64(body, start, pos, "Int64List"))
    if loose or not pieces:
        pieces.append(np.array(loose, dtype=np.int64))
    return pieces[0] if len(pieces) == 1 else np.concatenate(pieces)


def decode_float_list(body: bytes) -> NDArray[np.float32]:
    """The values of a serialized ``FloatList`` (packed and unpacked, in any number of chunks)."""
    start = _single_packed(body, "FloatList")
    if start >= 0:
        _check_floats(start, len(body) - start)
        return np.frombuffer(body, "<f4", (len(body) - start) // 4, start).astype(np.float32)
    pieces: list[bytes] = []
    pos, end = 0, len(body)
    while pos < end:
        field, wire_type, start, pos = _next_field(body, pos, end, "FloatList")
        if field == 1 and (wire_type == _I32 or wire_type == _LEN):
            if wire_type == _LEN:
                _check_floats(start, pos - start)
            pieces.append(body[start:pos])
    return np.frombuffer(b"".join(pieces), "<f4").astype(np.float32)


def _check_floats(start: int, size: int) -> None:
    if size % 4:
        raise RecordError(
            f"FloatList: the packed floats at byte offset {start} take {size} bytes, "
            "not a multiple of 4"
        )


def decode_bytes_list(body: bytes) -> list[bytes]:
    """The values of a serialized ``BytesList``."""
    values: list[bytes] = []
    pos, end = 0, len(body)
    while pos < end:
        if body[pos] == 0x0A and pos + 1 < end and body[pos + 1] < 0x80:
            start = pos + 2
            pos = start + body[pos + 1]
            if pos > end:
                raise RecordError(
                    f"BytesList: length {body[start - 1]} at byte offset {start - 1} runs past "
                    f"the end of the message at byte offset {end}"
                )
            values.append(body[start:pos])
            continue
        field, wire_type, start, pos = _next_field(body, pos, end, "BytesList")
        if field == 1 and wire_type == _LEN:
            values.append(body[start:pos])
    return values


_DECODERS: dict[int, Callable[[bytes], object]] = {
    1: decode_bytes_list,
    2: decode_float_list,
    3: decode_int64_list,
}


# --- encoding -------------------------------------------------------------------------------------


def key_field(key: str) -> bytes:
    """The serialized ``key`` field of a map entry: ``0a len utf8``."""
    try:
        raw = key.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise RecordError(f"feature key {key!r} is not encodable as UTF-8 ({exc.reason})") from None
    return _field_1(len(raw)) + raw


def map_key_order(keys: Iterable[str]) -> list[str]:
    """``keys`` in the order protobuf's deterministic serialization writes map entries.

    That is UTF-8 byte order, except that a key comes before the keys that are its prefixes (the
    order of protobuf's upb backend: ``"ab"`` before ``"a"``, the empty key last).
    """
    return sorted(keys, key=_map_key_rank)


def _map_key_rank(key: str) -> tuple[int, ...]:
    return (*key.encode("utf-8", "surrogatepass"), 0x100)


_FIELD_1 = tuple(b"\x0a" + bytes((n,)) for n in range(0x80))
_FIELD_2 = tuple(b"\x12" + bytes((n,)) for n in range(0x80))


def _field_1(size: int) -> bytes:
    """The tag and length of a length-delimited field 1 of ``size`` bytes."""
    return _FIELD_1[size] if size < 0x80 else b"\x0a" + encode_length(size)


def _field_2(size: int) -> bytes:
    """The tag and length of a length-delimited field 2 of ``size`` bytes."""
    return _FIELD_2[size] if size < 0x80 else b"\x12" + encode_length(size)


def _feature_of(tag: int, payload: bytes) -> bytes:
    """A ``Feature`` whose list (oneof field ``tag``) holds the single field-1 value ``payload``."""
    size = len(payload)
    if size < 0x7E:
        return bytes((tag, size + 2, 0x0A, size)) + payload
    length = encode_length(size)
    return b"".join(
        (bytes((tag,)), encode_length(1 + len(length) + size), b"\x0a", length, payload)
    )


_INT64 = np.dtype(np.int64)
_LITTLE_FLOAT32 = np.dtype("<f4")


def int64_feature(values: IntArray) -> bytes:
    """A serialized ``Feature`` holding ``values`` (any shape, C order) in its ``int64_list``."""
    array: NDArray[Any] = values if type(values) is np.ndarray else np.asarray(values)
    if array.dtype != _INT64:
        array = _int64_array(array)
    if not array.size:
        return b"\x1a\x00"
    return _feature_of(0x1A, encode_packed_int64(array.ravel()))


def _int64_array(array: NDArray[Any]) -> NDArray[np.int64]:
    """``array`` as int64, after checking it holds integers that fit (any dtype when empty)."""
    kind = array.dtype.kind
    if array.size:
        if kind not in "iub":
            raise RecordError(
                f"int64_feature: expected integer values, got an array of {array.dtype}"
            )
        if kind == "u" and int(array.max()) > _INT64_HI:
            raise RecordError(f"int64_feature: value {int(array.max())} is outside the int64 range")
    return array.astype(np.int64)


def float_feature(values: FloatArray) -> bytes:
    """A serialized ``Feature`` with ``values`` (any shape, C order, float32) in its float_list."""
    array: NDArray[Any] = values if type(values) is np.ndarray else np.asarray(values)
    if array.dtype != _LITTLE_FLOAT32:
        if array.dtype.kind not in "fiub" and array.size:
            raise RecordError(
                f"float_feature: expected float values, got an array of {array.dtype}"
            )
        with np.errstate(over="ignore"):
            array = array.astype(_LITTLE_FLOAT32)
    if not array.size:
        return b"\x12\x00"
    return _feature_of(0x12, array.tobytes())


def bytes_feature(values: Sequence[bytes]) -> bytes:
    """A serialized ``Feature`` holding ``values`` in its ``bytes_list``."""
    fields: list[bytes] = []
    for value in values:
        if not isinstance(value, bytes):
            if not isinstance(value, bytearray | memoryview):
                raise RecordError(f"bytes_feature: expected bytes, got {type(value).__name__}")
            value = bytes(value)
        fields.append(b"\x0a")
        fields.append(encode_length(len(value)))
        fields.append(value)
    body = b"".join(fields)
    return _field_1(len(body)) + body


_SMALL_INT64_FEATURES = tuple(b"\x1a\x03\x0a\x01" + bytes((i,)) for i in range(0x80))


def int64_scalar_feature(value: int) -> bytes:
    """A serialized ``Feature`` whose ``int64_list`` holds the one int64 ``value``."""
    if type(value) is int and 0 <= value < 0x80:
        return _SMALL_INT64_FEATURES[value]
    try:
        number = operator.index(value)
    except TypeError:
        raise RecordError(
            f"int64_scalar_feature: expected an integer, got {type(value).__name__}"
        ) from None
    if not _INT64_LO <= number <= _INT64_HI:
        raise RecordError(f"int64_scalar_feature: {number} is outside the int64 range")
    encoded = encode_varint(number)
    size = len(encoded)
    return b"\x1a" + bytes((size + 2,)) + b"\x0a" + bytes((size,)) + encoded


def float_scalar_feature(value: float) -> bytes:
    """A serialized ``Feature`` whose ``float_list`` holds ``value`` rounded to float32."""
    try:
        packed = _FLOAT32.pack(value)
    except OverflowError:
        packed = _FLOAT32.pack(math.copysign(math.inf, value))
    except struct.error:
        raise RecordError(
            f"float_scalar_feature: expected a float, got {type(value).__name__}"
        ) from None
    return b"\x12\x06\x0a\x04" + packed


def bytes_scalar_feature(value: bytes) -> bytes:
    """A serialized ``Feature`` whose ``bytes_list`` holds the one ``value``."""
    if not isinstance(value, bytes):
        if not isinstance(value, bytearray | memoryview):
            raise RecordError(f"bytes_scalar_feature: expected bytes, got {type(value).__name__}")
        value = bytes(value)
    return _feature_of(0x0A, value)


def map_entry(key_field: bytes, feature: bytes) -> bytes:
    """One serialized map entry (``Features.feature``): ``0a len(key_field 12 len feature)``."""
    size = len(feature)
    value = _field_2(size)
    return b"".join((_field_1(len(key_field) + len(value) + size), key_field, value, feature))


def example(entries: Iterable[bytes]) -> bytes:
    """A serialized ``Example`` whose ``features`` holds the map ``entries`` (in key order)."""
    body = b"".join(entries)
    return _field_1(len(body)) + body


def feature_list_entry(key_field: bytes, features: Sequence[bytes]) -> bytes:
    """A serialized ``FeatureLists.feature_list`` map entry: key and a FeatureList of features."""
    fields: list[bytes] = []
    for feature in features:
        fields.append(b"\x0a")
        fields.append(encode_length(len(feature)))
        fields.append(feature)
    return map_entry(key_field, b"".join(fields))


def sequence_example(
    context_entries: Iterable[bytes], feature_list_entries: Iterable[bytes]
) -> bytes:
    """A serialized ``SequenceExample`` of context map entries and :func:`feature_list_entry`'s."""
    context = b"".join(context_entries)
    lists = b"".join(feature_list_entries)
    return b"".join((_field_1(len(context)), context, _field_2(len(lists)), lists))


PURE_PYTHON = _Namespace(
    parse_example=parse_example,
    parse_sequence_example=parse_sequence_example,
    decode_int64_list=decode_int64_list,
    decode_float_list=decode_float_list,
    decode_bytes_list=decode_bytes_list,
)
"""The pure-Python implementations, whichever implementation the public names are bound to."""

if _accel.speedups is not None:
    # The C accelerator keeps the same contracts and error messages
    # (tests/runtime/codec/test_speedups.py).
    _c = _accel.speedups
    parse_example = _c.parse_example  # type: ignore[assignment]  # noqa: F811
    parse_sequence_example = _c.parse_sequence_example  # type: ignore[assignment]  # noqa: F811

    def decode_int64_list(body: bytes) -> NDArray[np.int64]:  # noqa: F811
        """Values of an Int64List body (C accelerator)."""
        return np.frombuffer(memoryview(_c.decode_int64_values(body)), dtype="<i8")

    def decode_float_list(body: bytes) -> NDArray[np.float32]:  # noqa: F811
        """Values of a FloatList body (C accelerator)."""
        return np.frombuffer(memoryview(_c.decode_float_values(body)), dtype="<f4")

    decode_bytes_list = _c.decode_bytes_values  # type: ignore[assignment]  # noqa: F811
