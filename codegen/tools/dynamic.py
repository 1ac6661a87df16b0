"""Decoding records by schema at run time, without writing a module.

:class:`DynamicRecord` builds one runtime codec per feature of a record's IR, exactly as a generated
module does at import (``_rt.IntScalar("Customer", "age", "Age", _rt.INT64, ())``), so decoding
follows the same rules and raises the same errors as the generated class's ``decode``. Values come
back as a dict from attribute name to value, in schema order. A SequenceExample record reads its
context features from the context and its sequence features from the feature lists.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from codegen.errors import TfrGenError
from codegen.generator.ir import FeatureIR, RecordIR, SchemaIR
from codegen.generator.load import load_schema
from codegen.runtime.codec import registry
from codegen.runtime.codec.batch import BatchCodec
from codegen.runtime.codec.features import NO_DEFAULT, Codec
from codegen.runtime.codec.plan import example_decoder
from codegen.runtime.codec.wire import (
    example,
    parse_example,
    parse_sequence_example,
    sequence_example,
)

__all__ = ["DynamicRecord", "build_codec", "load_record", "select_record"]

Features = Mapping[bytes, tuple[int, bytes]]
"""What :func:`~codegen.runtime.codec.wire.parse_example` returns: key -> (list kind, list body)."""
FeatureLists = Mapping[bytes, list[tuple[int, bytes]]]
"""The feature lists of a SequenceExample: key -> (list kind, list body) per step."""


def build_codec(record: RecordIR, feature: FeatureIR) -> Codec[Any]:
    """The runtime codec a generated module builds for ``feature`` of ``record``."""
    return registry.build_codec(
        record.name,
        feature.name,
        feature.key,
        feature.dtype,
        feature.shape,
        kind=feature.kind.name,
        default=feature.default if feature.has_default else NO_DEFAULT,
        optional=feature.optional,
        shape_from=feature.shape_from,
        row_lengths_from=feature.row_lengths_from,
        encoding=feature.encoding,
        quality=feature.quality,
    )


class DynamicRecord:
    """The decoding side of one record class, built at run time from its IR.

    ``codecs`` holds the codecs of ``record.features`` (an Example's features, or a
    SequenceExample's context), ``sequence_codecs`` those of ``record.sequence``; both in schema
    order.
    """

    def __init__(self, record: RecordIR) -> None:
        self.record = record
        self.name = record.name
        self.is_sequence = record.kind == "sequence"
        self.codecs = tuple(build_codec(record, f) for f in record.features)
        # Sequence codecs decode feature lists (key -> one feature per step), not features.
        self.sequence_codecs: tuple[Any, ...] = tuple(
            build_codec(record, f) for f in record.sequence
        )
        self.names = tuple(f.name for f in record.all_features)
        self._decode = example_decoder(
            record.name, self.codecs, self.sequence_codecs if self.is_sequence else None
        )
        by_name = {codec.name: codec for codec in (*self.codecs, *self.sequence_codecs)}
        self._wire = tuple(
            tuple((by_name[f.name], part) for _, f, part in RecordIR.wire_order(features))
            for features in (record.features, record.sequence)
        )

    def encode(self, values: Mapping[str, Any]) -> bytes:
        """The serialized record of attribute -> value, checked as the generated constructor checks values
        (:class:`~codegen.errors.RecordError` names the attribute) and written as its ``encode`` writes it."""
        coerced: dict[str, Any] = {}
        for codec in self.codecs:
            value = values[codec.name]
            coerced[codec.name] = (
                codec.coerce_optional(value) if codec.optional else codec.coerce(value)
            )
        for codec in self.sequence_codecs:
            coerced[codec.name] = codec.coerce(values[codec.name])
        features, lists = (
            [
                codec.entry(coerced[codec.name])
                if part == 0
                else codec.part(coerced[codec.name], part)
                for codec, part in order
            ]
            for order in self._wire
        )
        return sequence_example(features, lists) if self.is_sequence else example(features)

    @functools.cached_property
    def batch_codec(self) -> BatchCodec:
        """The columnar codec of the record, as a generated ``<Record>Batch`` uses it."""
        return BatchCodec(
            self.name, self.codecs, self.sequence_codecs if self.is_sequence else None
        )

    def parse(self, data: bytes) -> tuple[Features, FeatureLists]:
        """The features (or context) and feature lists of serialized record bytes."""
        if self.is_sequence:
            return parse_sequence_example(data)
        return parse_example(data), {}

    def decode(self, data: bytes) -> dict[str, object]:
        """Attribute -> value of serialized record bytes, as the generated ``decode`` reads them
        (with the same decoder: the compiled plan when the accelerator has one).

        :class:`~codegen.errors.RecordError` for malformed bytes or the first feature that does not
        fit its declaration.
        """
        return dict(zip(self.names, self._decode(data), strict=True))

    @staticmethod
    def decode_feature(codec: Codec[Any], features: Features) -> object:
        """One feature's value from ``parse_example``'s dict (``None`` for an absent optional)."""
        return codec.decode_optional(features) if codec.optional else codec.decode(features)


def select_record(schema: SchemaIR, name: str | None) -> RecordIR:
    """The record ``name`` of ``schema``, or its only record when ``name`` is ``None``."""
    names = ", ".join(r.name for r in schema.records)
    if name is None:
        if len(schema.records) == 1:
            return schema.records[0]
        raise TfrGenError(f"{schema.source} has several records ({names}); name one with --record")
    for record in schema.records:
        if record.name == name:
            return record
    raise TfrGenError(f"{schema.source} has no record {name!r}; its records: {names}")


def load_record(schema_path: str, name: str | None) -> DynamicRecord:
    """The :class:`DynamicRecord` of record ``name`` (or the only one) of the schema file.

    :class:`~codegen.errors.SchemaError` when the schema is invalid.
    """
    return DynamicRecord(select_record(load_schema(Path(schema_path)), name))
