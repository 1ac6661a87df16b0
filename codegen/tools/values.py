"""Record values as JSON (for tools) and as short readable text (for people).

JSON follows protobuf's JSON mapping where it has one: float32 values print as the shortest decimal
that reads back to the same float32, and NaN and infinities as the strings ``"NaN"``,
``"Infinity"`` and ``"-Infinity"``. Bytes that are valid UTF-8 print as text; other bytes as
``{"base64": "..."}``. Without a schema a feature is ``{"int64_list": [...]}`` (or ``float_list``,
``bytes_list``; ``{}`` for a ``Feature`` with no list), as in the ``Feature`` message.
"""

from __future__ import annotations

import base64
import math
from collections.abc import Sequence
from typing import Any, TypeAlias

import numpy as np

from codegen.dtypes import Wire
from codegen.runtime.codec.wire import decode_bytes_list, decode_float_list, decode_int64_list

__all__ = [
    "Json",
    "bytes_json",
    "feature_json",
    "feature_text",
    "float32_json",
    "float32_text",
    "value_json",
    "value_text",
]

Json: TypeAlias = None | bool | int | float | str | list["Json"] | dict[str, "Json"]
"""A value ``json.dumps`` writes as is."""

TEXT_ITEMS = 10
"""How many items of a list the text form shows before ``...``."""
TEXT_BYTES = 80
"""About how many characters of a long string or bytes value the text form shows."""


def float32_text(value: float) -> str:
    """The shortest decimal that reads back to the float32 ``value``: ``9.7``, ``nan``, ``-inf``."""
    return str(np.float32(value))


def float32_json(value: float) -> Json:
    """A float32 for JSON: the shortest decimal, or ``"NaN"``, ``"Infinity"``, ``"-Infinity"``."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return float(float32_text(value))


def bytes_json(data: bytes) -> Json:
    """Bytes for JSON: the text when they are valid UTF-8, else ``{"base64": ...}``."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return {"base64": base64.b64encode(data).decode("ascii")}


def value_json(value: object) -> Json:
    """A decoded attribute value (scalar, array, nested lists, ``None``) for JSON."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return float32_json(value)
    if isinstance(value, bytes):
        return bytes_json(value)
    if isinstance(value, np.ndarray):
        if value.dtype.kind == "f":
            if value.ndim > 1:
                return [value_json(row) for row in value]
            return [float32_json(x) for x in value.tolist()]
        items: list[Json] = value.tolist()
        return items
    if isinstance(value, list):
        return [value_json(item) for item in value]
    raise TypeError(f"no JSON form for a value of type {type(value).__name__}")


def _decoded(kind: int, body: bytes) -> list[Any]:
    """The values of a list body of ``kind`` as Python values (floats as float32 values)."""
    if kind == Wire.INT64:
        values: list[Any] = decode_int64_list(body).tolist()
        return values
    if kind == Wire.FLOAT:
        floats: list[Any] = decode_float_list(body).tolist()
        return floats
    return list(decode_bytes_list(body))


def feature_json(kind: int, body: bytes) -> Json:
    """A parsed ``Feature`` (list kind and body) for JSON: ``{"int64_list": [1, 2]}``.

    :class:`~codegen.errors.RecordError` when the list body is malformed.
    """
    if not kind:
        return {}
    values = _decoded(kind, body)
    items: list[Json]
    if kind == Wire.FLOAT:
        items = [float32_json(x) for x in values]
    elif kind == Wire.BYTES:
        items = [bytes_json(x) for x in values]
    else:
        items = values
    return {Wire(kind).list_name: items}


def _items_text(items: Sequence[Any], total: int | None = None, full: bool = False) -> str:
    """``[a, b, ...]`` of already rendered items, cut after :data:`TEXT_ITEMS` with the count
    (unless ``full``)."""
    if full or len(items) <= TEXT_ITEMS:
        return f"[{', '.join(items)}]"
    shown = ", ".join(items[:TEXT_ITEMS])
    return f"[{shown}, ...] ({total if total is not None else len(items)} values)"


def _short(value: str | bytes, full: bool) -> str:
    """The ``repr`` of a string or bytes value; a long one is cut to about :data:`TEXT_BYTES`
    characters (never inside an escape) and followed by its size in bytes, unless ``full``."""
    text = repr(value)
    if full or len(text) <= TEXT_BYTES:
        return text
    size = len(value.encode("utf-8")) if isinstance(value, str) else len(value)
    keep = TEXT_BYTES
    while len(shown := repr(value[:keep])) > TEXT_BYTES and keep > 1:
        keep = max(1, keep * TEXT_BYTES // len(shown) - 1)
    return f"{shown}... ({size:,} bytes)"


def _bytes_text(data: bytes, full: bool = False) -> str:
    """Raw bytes for people: as text when valid UTF-8 (``'abc'``), else ``b'\\xff'``; long
    ones cut (unless ``full``)."""
    try:
        return _short(data.decode("utf-8"), full)
    except UnicodeDecodeError:
        return _short(data, full)


def value_text(value: object, full: bool = False) -> str:
    """A decoded attribute value for people: ``29``, ``'Inception'``, ``[9.0, 9.7]``, ``None``;
    long lists and strings cut (unless ``full``)."""
    if isinstance(value, float):
        return float32_text(value)
    many = None if full else TEXT_ITEMS + 1
    if isinstance(value, np.ndarray):
        if value.ndim > 1:
            rows = [value_text(row, full) for row in value[:many]]
            return _items_text(rows, len(value), full)
        head = value[:many].tolist()
        show = float32_text if value.dtype.kind == "f" else str
        return _items_text([show(x) for x in head], value.size, full)
    if isinstance(value, list):
        return _items_text([value_text(item, full) for item in value[:many]], len(value), full)
    if isinstance(value, str | bytes):
        return _short(value, full)
    return repr(value)


def feature_text(kind: int, body: bytes, full: bool = False) -> str:
    """A parsed ``Feature`` for people: ``int64_list [29]``, ``bytes_list ['a', 'b']``; long
    lists and values cut (unless ``full``).

    :class:`~codegen.errors.RecordError` when the list body is malformed.
    """
    if not kind:
        return "no list"
    values = _decoded(kind, body)
    head = values if full else values[: TEXT_ITEMS + 1]
    if kind == Wire.FLOAT:
        rendered = [float32_text(x) for x in head]
    elif kind == Wire.BYTES:
        rendered = [_bytes_text(x, full) for x in head]
    else:
        rendered = [str(x) for x in head]
    return f"{Wire(kind).list_name} {_items_text(rendered, len(values), full)}"
