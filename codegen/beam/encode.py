"""Encoding records in a pipeline, with a dead-letter output for the elements that do not encode."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, Generic, NamedTuple, cast

import apache_beam as beam

from codegen.beam.record import R, schema_info
from codegen.errors import RecordError

__all__ = ["DEAD_LETTER", "RECORDS", "DeadLetter", "EncodeRecords"]

RECORDS = "records"
"""The tag of the encoded records (``tf.train.Example`` bytes)."""

DEAD_LETTER = "dead_letter"
"""The tag of the elements that did not encode (:class:`DeadLetter`)."""


class DeadLetter(NamedTuple):
    """An element that did not become a record: the element as it came, and why."""

    element: object
    error: str


def _record_of(element: object, record: type[R]) -> R:
    """``element`` if it is a ``record``, else ``record(**element)`` for a mapping of its fields."""
    if isinstance(element, record):
        return element
    if isinstance(element, Mapping):
        construct = cast(Callable[..., R], record)
        try:
            return construct(**element)
        except TypeError as exc:  # an unknown or missing field, or a key that is not a string
            raise RecordError(str(exc)) from None
    raise RecordError(
        f"{record.__name__}: expected a {record.__name__} or a mapping of its fields, got"
        f" {type(element).__name__} {element!r:.200}"
    )


class _Encode(Generic[R]):
    """The element's Example bytes, or a :class:`DeadLetter` tagged ``dead_letter``.

    A callable holding the record class rather than a function taking it as a side argument:
    Beam (2.78) type-checks side arguments against their hints and refuses a class for ``type[R]``.
    """

    def __init__(self, record: type[R]) -> None:
        self._record = record

    def __call__(self, element: object) -> Iterator[object]:
        try:
            data = _record_of(element, self._record).encode()
        except RecordError as exc:
            yield beam.pvalue.TaggedOutput(DEAD_LETTER, DeadLetter(element, str(exc)))
            return
        yield data


class EncodeRecords(beam.PTransform):  # type: ignore[misc]
    """Encodes records, or mappings of their fields, as ``tf.train.Example`` bytes.

    ``pcoll | EncodeRecords(Customer)`` has two outputs: ``.records``, the Example bytes of every
    element that is a valid ``Customer`` (or builds one: ``Customer(**element)``), and
    ``.dead_letter``, a :class:`DeadLetter` for every other element, with the error message that
    says which field is wrong and why. No element is dropped.
    """

    def __init__(self, record: type[R]) -> None:
        super().__init__()
        schema_info(record)  # fail while the pipeline is built, not on the workers
        self._record: type[Any] = record

    def expand(self, elements: Any) -> Any:
        return elements | "Encode" >> beam.FlatMap(_Encode(self._record)).with_outputs(
            DEAD_LETTER, main=RECORDS
        )
