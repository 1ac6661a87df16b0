"""Protobuf wire bytes made by hand, independently of the codecs: field tags, Int64List bodies, and
the hypothesis pieces the wire tests share (value ranges, random splits, mutations)."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from codegen.runtime.codec import wire

INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1

Spec = tuple[int, list[Any]]
"""A feature: (kind 0-3, values); kind 0 is a Feature with no kind."""

INT_RANGES = [(0, 127), (0, 255), (0, 1 << 21), (-300, 300), (INT64_MIN, INT64_MAX)]
"""Ranges of int64 values, from one-byte varints to the whole range (small negatives too)."""


def tag(field: int, wire_type: int) -> bytes:
    """The tag of field number ``field`` with ``wire_type``."""
    return wire.encode_varint(field << 3 | wire_type)


def int64_list(*values: int) -> bytes:
    """The body of an Int64List holding ``values`` (one packed field)."""
    payload = b"".join(wire.encode_varint(v) for v in values)
    return b"\x0a" + wire.encode_varint(len(payload)) + payload


def split(draw: st.DrawFn, fields: list[bytes]) -> list[bytes]:
    """``fields`` cut at random field boundaries into one or more concatenated pieces."""
    pieces: list[bytes] = []
    start = 0
    while start < len(fields):
        size = draw(st.integers(1, len(fields) - start))
        pieces.append(b"".join(fields[start : start + size]))
        start += size
    return pieces or [b""]


@st.composite
def mutated(draw: st.DrawFn, valid: st.SearchStrategy[bytes]) -> bytes:
    """Bytes of ``valid`` with one to three flips, insertions, deletions or truncations."""
    data = bytearray(draw(valid))
    for _ in range(draw(st.integers(1, 3))):
        position = draw(st.integers(0, len(data)))
        action = draw(st.sampled_from(["flip", "insert", "delete", "truncate"]))
        if action == "insert":
            data[position:position] = draw(st.binary(min_size=1, max_size=3))
        elif position < len(data):
            if action == "flip":
                data[position] ^= draw(st.integers(1, 255))
            elif action == "delete":
                del data[position]
            else:
                del data[position:]
    return bytes(data)
