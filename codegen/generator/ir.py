"""The typed intermediate representation between a validated schema and the templates.

One class per feature kind; each names the template that renders it and the runtime codec class the generated module
instantiates for it. Lowering (``codegen.generator.lower``) builds these from the schema models; rendering only reads
them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from codegen.dtypes import DType, Kind

Shape = tuple[int | None, ...]


@dataclass(frozen=True, slots=True)
class Location:
    """Where a schema element is written (1-based line and column)."""

    path: str
    line: int
    col: int


@dataclass(frozen=True, kw_only=True)
class FeatureIR:
    """One feature of a record.

    ``default`` is the normalized default value (a scalar, or nested tuples matching ``shape``) and only meaningful
    when ``has_default``; float defaults are already rounded to float32.
    """

    template: ClassVar[str]

    name: str
    key: str
    dtype: DType
    shape: Shape
    optional: bool = False
    has_default: bool = False
    default: object = None
    doc: str | None = None
    loc: Location

    @property
    def is_fixed(self) -> bool:
        return all(d is not None for d in self.shape)

    @property
    def codec(self) -> str:
        """The name of the runtime codec class (in ``codegen.runtime``) for this feature."""
        raise NotImplementedError


@dataclass(frozen=True, kw_only=True)
class NumericScalar(FeatureIR):
    """An int, bool or float scalar: ``shape: []``."""

    template: ClassVar[str] = "numeric_scalar"

    @property
    def codec(self) -> str:
        return {Kind.INT: "IntScalar", Kind.BOOL: "BoolScalar", Kind.FLOAT: "FloatScalar"}[
            self.dtype.kind
        ]


@dataclass(frozen=True, kw_only=True)
class NumericTensor(FeatureIR):
    """A numeric array: fixed shape (``[2, 3]``) or a leading ``null`` (``[null]``, ``[null, 3]``)."""

    template: ClassVar[str] = "numeric_tensor"

    @property
    def codec(self) -> str:
        return "NumericTensor"


@dataclass(frozen=True, kw_only=True)
class StringScalar(FeatureIR):
    """A ``string`` (UTF-8 text) or ``bytes`` scalar."""

    template: ClassVar[str] = "string_scalar"

    @property
    def codec(self) -> str:
        return "TextScalar" if self.dtype.kind is Kind.STR else "BytesScalar"


@dataclass(frozen=True, kw_only=True)
class StringList(FeatureIR):
    """``string``/``bytes`` values of rank >= 1: nested Python lists, one nesting level per dimension."""

    template: ClassVar[str] = "string_list"

    @property
    def codec(self) -> str:
        return "TextList" if self.dtype.kind is Kind.STR else "BytesList"


@dataclass(frozen=True, kw_only=True)
class RawTensor(FeatureIR):
    """``encoding: raw``: the whole tensor as one little-endian C-order bytes value (any numeric dtype).

    When a dimension is unknown (``null`` anywhere) the full shape travels in a companion int64 feature
    ``<key>/shape``; fixed shapes store no companion and are checked on decode.
    """

    template: ClassVar[str] = "raw_tensor"

    @property
    def codec(self) -> str:
        return "RawTensor"

    @property
    def companion_keys(self) -> tuple[str, ...]:
        return () if self.is_fixed else (f"{self.key}/shape",)


@dataclass(frozen=True, kw_only=True)
class RaggedTensor(FeatureIR):
    """Two or more leading ``null`` dimensions with the list encoding: flat values in ``<key>`` plus one row-lengths
    companion ``<key>/row_lengths_<d>`` per inner ``null`` dimension ``d`` (1-based position in the shape), the way
    ``tf.io.RaggedFeature(partitions=[RowLengths(...), ...])`` reads them. Fixed dimensions may only trail the nulls.
    Numeric values are nested lists (depth = number of nulls - 1) of arrays of shape ``[n, *trailing fixed dims]``;
    string values are nested lists of ``str``/``bytes``.
    """

    template: ClassVar[str] = "ragged_tensor"

    @property
    def codec(self) -> str:
        return "RaggedStrings" if self.dtype.kind in (Kind.STR, Kind.BYTES) else "RaggedTensor"

    @property
    def companion_keys(self) -> tuple[str, ...]:
        return tuple(
            f"{self.key}/row_lengths_{d}" for d, n in enumerate(self.shape) if n is None and d > 0
        )


@dataclass(frozen=True, kw_only=True)
class SequenceFeature(FeatureIR):
    """One ``sequence:`` feature of a SequenceExample: a FeatureList with one Feature per step; ``shape`` is the shape
    of one step. Per-step fixed numeric shapes give an array ``[T, *shape]``; a leading ``null`` per step gives a list
    of arrays (numeric) or a list of lists (strings); strings with a fixed per-step shape give nested lists.
    ``optional`` means the whole feature list may be absent (-> zero steps); ``default`` is never set.
    """

    template: ClassVar[str] = "sequence_feature"

    @property
    def codec(self) -> str:
        if self.dtype.kind in (Kind.STR, Kind.BYTES):
            return "SequenceStrings"
        return "SequenceTensor" if self.is_fixed else "SequenceRagged"


@dataclass(frozen=True, kw_only=True)
class RecordIR:
    """One record class.

    ``kind`` is ``"example"`` (a ``tf.train.Example``: ``features``) or ``"sequence"`` (a ``tf.train.SequenceExample``:
    ``features`` is its context, ``sequence`` its feature lists). Both in schema order.
    """

    name: str
    doc: str | None
    features: tuple[FeatureIR, ...]
    loc: Location
    kind: str = "example"
    sequence: tuple[SequenceFeature, ...] = ()

    @property
    def all_features(self) -> tuple[FeatureIR, ...]:
        """Every attribute of the record class, in schema order (context or features first, then sequence)."""
        return self.features + self.sequence

    @staticmethod
    def wire_order(features: tuple[FeatureIR, ...]) -> tuple[tuple[str, FeatureIR, int], ...]:
        """``(key, feature, part)`` for every map entry the features write, sorted by the UTF-8 bytes of the key
        (protobuf's deterministic map order). ``part`` 0 is the feature's own key, ``i > 0`` its ``i``-th companion.
        """
        parts: list[tuple[str, FeatureIR, int]] = []
        for f in features:
            parts.append((f.key, f, 0))
            companions: tuple[str, ...] = getattr(f, "companion_keys", ())
            parts.extend((key, f, i) for i, key in enumerate(companions, start=1))
        return tuple(sorted(parts, key=lambda p: p[0].encode("utf-8")))


@dataclass(frozen=True, kw_only=True)
class SchemaIR:
    """One schema file, to become one Python module.

    ``source`` is the schema path as given to the generator (shown in the header), ``canonical`` the canonical JSON
    form the fingerprint is computed from.
    """

    module: str
    source: str
    version: int
    doc: str | None
    records: tuple[RecordIR, ...]
    canonical: str
    fingerprint: str
    extra: dict[str, object] = field(default_factory=dict)
