"""The decode rules of generated readers, stated on canonical features.

Each function answers one question about a WRITER feature and a READER feature that share a key,
mirroring the runtime codecs (:mod:`codegen.runtime.codec.features`, ``tensors``, ``sequences``):

* the list kind must match (``Int64List``/``FloatList``/``BytesList``; raw encoding is one bytes
  value), else the read fails;
* every value the writer's dtype can hold must pass the reader's range check (ints), or be valid
  UTF-8 (``string``);
* list values travel flat: a fixed shape needs exactly its size, one leading ``null`` a multiple of
  its row size (the values are regrouped, and row lengths a writer stored are not looked at), two or
  more leading ``null`` (ragged) the row-length companions of the same depth and the same row size;
  a sequence feature applies this to every step;
* a raw value is checked by its byte count against a fixed shape, or by the ``<key>/shape``
  companion (written only for shapes with a ``null``) against the reader's shape;
* the companions of a raw tensor's stored shape (``shape_from``) or of a ragged tensor's row lengths
  (``row_lengths_from``) must be where, and in the form, the reader looks for them;
* an absent feature (the writer's ``optional`` value was ``None``) reads as the reader's default,
  ``None`` when it is optional (whatever its shape), no rows for a required list shape with a
  leading ``null``, zero steps for a feature list, and fails otherwise.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from codegen.dtypes import DTYPES, Kind

Feature = Mapping[str, Any]
"""One feature of a canonical schema (``name``, ``key``, ``dtype``, ``shape``, ...)."""

STEP_SECTION = "sequence"
"""The record field that holds per-step features (a SequenceExample's feature lists)."""


def list_kind(feature: Feature) -> str:
    """The list a feature's values travel in, as a message names it."""
    if feature.get("encoding", "list") != "list":
        return f"bytes_list ({feature['encoding']} encoding)"
    dtype = DTYPES.get(feature["dtype"])
    return dtype.wire.list_name if dtype is not None else f"dtype {feature['dtype']}"


def a_list_kind(feature: Feature) -> str:
    """:func:`list_kind` with its article: ``an int64_list``, ``a float_list``."""
    kind = list_kind(feature)
    return f"{'an' if kind[:1] in ('a', 'e', 'i', 'o', 'u') else 'a'} {kind}"


def values_fit(writer: Feature, reader: Feature) -> bool:
    """Whether the reader's dtype accepts every value the writer's dtype can hold."""
    if writer["dtype"] == reader["dtype"]:
        return True
    if writer.get("encoding", "list") != "list" or reader.get("encoding", "list") != "list":
        return False  # raw bytes of one dtype are not the raw bytes of another
    w, r = DTYPES.get(writer["dtype"]), DTYPES.get(reader["dtype"])
    if w is None or r is None or w.wire is not r.wire:
        return False
    if w.lo is not None and w.hi is not None and r.lo is not None and r.hi is not None:
        return r.lo <= w.lo and w.hi <= r.hi
    return w.kind is Kind.STR and r.kind is Kind.BYTES  # UTF-8 text is bytes, not the reverse


def wire_part(section: str) -> str:
    """Which part of the serialized record a section's features travel in.

    An Example's ``features`` and a SequenceExample's ``context`` are the same protobuf field
    (field 1 of both messages), so they read across; ``sequence`` features are feature lists.
    """
    return "feature lists" if section == STEP_SECTION else "features"


def is_fixed(feature: Feature) -> bool:
    """Whether every dimension of the feature's shape is known."""
    return None not in feature["shape"]


def _is_raw(feature: Feature) -> bool:
    return bool(feature.get("encoding", "list") != "list")


def _leading_nulls(shape: list[int | None]) -> int:
    return next((i for i, d in enumerate(shape) if d is not None), len(shape))


def _size(dims: list[int | None]) -> int:
    """How many values the known dimensions hold (1 for none)."""
    return math.prod(d for d in dims if d is not None)


def counts_fit(writer: Feature, reader: Feature) -> bool:
    """Whether every value the writer writes has a count (or stored shape) the reader accepts."""
    w_shape: list[int | None] = writer["shape"]
    r_shape: list[int | None] = reader["shape"]
    if w_shape == r_shape:
        return True
    if _is_raw(writer) or _is_raw(reader):
        if not (_is_raw(writer) and _is_raw(reader)):
            return False  # an encoding change: reported on its own
        if is_fixed(reader):  # the byte count must match; a variable writer's does not
            return is_fixed(writer) and _size(w_shape) == _size(r_shape)
        if is_fixed(writer):
            return False  # a fixed writer stores no shape, which this reader needs
        return len(w_shape) == len(r_shape) and all(
            r is None or w == r for w, r in zip(w_shape, r_shape, strict=True)
        )  # every stored shape must fit the reader's
    w_nulls, r_nulls = _leading_nulls(w_shape), _leading_nulls(r_shape)
    w_row, r_row = _size(w_shape[w_nulls:]), _size(r_shape[r_nulls:])
    if r_nulls == 0:
        return w_nulls == 0 and w_row == r_row
    if r_nulls == 1:
        return w_row % r_row == 0  # any number of the writer's rows (or its one fixed value set)
    return w_nulls == r_nulls and w_row == r_row  # the same row-length companions


def _companion_layout(feature: Feature) -> object:
    """Where a feature's companions are (``None``: the default keys), when it writes or reads any."""
    return (feature.get("shape_from"), feature.get("row_lengths_from"))


def _has_companions(feature: Feature) -> bool:
    shape: list[int | None] = feature["shape"]
    if _is_raw(feature):
        return not is_fixed(feature)
    return _leading_nulls(shape) >= 2


def layouts_fit(writer: Feature, reader: Feature) -> bool:
    """Whether the reader finds the companions the writer stores where and as it writes them (a
    reader of a fixed or plain shape reads none; a writer storing none is a shape change)."""
    if not (_has_companions(writer) and _has_companions(reader)):
        return True
    return _companion_layout(writer) == _companion_layout(reader)


def may_be_absent(writer: Feature) -> bool:
    """Whether the writer leaves the feature out of some records (an optional value of ``None``)."""
    return bool(writer["optional"])


def reads_absent(reader: Feature, section: str) -> bool:
    """Whether the reader reads an absent feature without error (default, ``None`` or no rows)."""
    if reader["default"] is not None or reader["optional"]:
        return True
    shape: list[int | None] = reader["shape"]
    return section != STEP_SECTION and not _is_raw(reader) and bool(shape) and shape[0] is None


def absent_value(feature: Feature, section: str) -> str:
    """What a reader of ``feature`` gives when it is absent (it must read absence), for messages:
    zero steps for a feature list, else the default, else ``None`` for an optional feature, else
    no rows (a required list shape with a leading ``null``)."""
    if section == STEP_SECTION:
        return "zero steps"
    if feature["default"] is not None:
        return f"the default {feature['default']!r}"
    return "None" if feature["optional"] else "no values"


def absence_fits(writer: Feature, reader: Feature, section: str) -> bool:
    """Whether the reader copes with every record in which the writer left the feature out."""
    return not may_be_absent(writer) or reads_absent(reader, section)


def shape_text(shape: list[int | None]) -> str:
    """A shape as written in a schema: ``[null, 3]``."""
    return "[" + ", ".join("null" if d is None else str(d) for d in shape) + "]"
