"""The Beam coder of a generated record class: the record's ``tf.train.Example`` bytes."""

from __future__ import annotations

from typing import Any, Generic

import apache_beam as beam

from codegen.beam.record import R

__all__ = ["RecordCoder", "register_coder"]


class RecordCoder(beam.coders.Coder, Generic[R]):  # type: ignore[misc]
    """Encodes records of one generated class as their serialized ``tf.train.Example``.

    Deterministic: a record always encodes to the same bytes (map entries sorted by key, packed
    lists), so the coder may serve as a key coder. ``RecordCoder(Customer)`` is what
    :func:`register_coder` registers for ``Customer``.
    """

    def __init__(self, record: type[R]) -> None:
        self._record = record

    def encode(self, value: R) -> bytes:
        """The record's Example bytes (its ``encode()``)."""
        return value.encode()

    def decode(self, encoded: bytes) -> R:
        """The record of Example bytes (its class's ``decode()``)."""
        return self._record.decode(encoded)

    def is_deterministic(self) -> bool:
        """Always true: equal records give equal bytes."""
        return True

    def to_type_hint(self) -> type[R]:
        """The record class."""
        return self._record

    @classmethod
    def from_type_hint(cls, typehint: type[R], registry: Any) -> RecordCoder[R]:
        """The coder of ``typehint``, a generated record class (how Beam's registry builds it)."""
        return cls(typehint)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, RecordCoder)
            and type(other) is type(self)
            and other._record is self._record
        )

    def __hash__(self) -> int:
        return hash((type(self), self._record))

    def __repr__(self) -> str:
        return f"RecordCoder({self._record.__module__}.{self._record.__qualname__})"


def register_coder(record: type[R]) -> RecordCoder[R]:
    """Registers :class:`RecordCoder` as Beam's coder of ``record`` and returns it.

    PCollections whose element type is ``record`` (``.with_output_types(record)``) then carry the
    records as their Example bytes instead of pickles.
    """
    beam.coders.registry.register_coder(record, RecordCoder)
    return RecordCoder(record)
