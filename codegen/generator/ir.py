"""The typed intermediate representation between a validated schema and the templates.

Each feature names its kind and runtime codec from the registry of feature kinds (:mod:`codegen.kinds`). Lowering
(``codegen.generator.lower``) builds the IR from the schema models; rendering only reads it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from codegen.dtypes import DType
from codegen.kinds import CodecRow, FeatureKind, ShapeFrom

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

    ``kind`` is its row of the registry of feature kinds (:data:`codegen.kinds.KINDS`: which template renders it and
    which companion keys it writes) and ``codec`` the runtime codec class the generated module builds for it.
    ``default`` is the normalized default value (a scalar, or nested tuples matching ``shape``) and only meaningful
    when ``has_default``; float defaults are already rounded to float32. ``shape`` is one step's shape for a feature
    list of a SequenceExample (kind ``sequence_feature``), whose ``optional`` means the whole list may be absent
    (zero steps) and which never has a default. ``shape_from`` and ``row_lengths_from`` are the companion layouts
    the schema declares (``None``: the kind's own companion keys); ``encoding`` is the schema's (``list``, ``raw``,
    ``jpeg``, ``png``, ``image``) and ``quality`` the JPEG quality it declares.
    """

    name: str
    key: str
    dtype: DType
    shape: Shape
    kind: FeatureKind
    codec: CodecRow
    optional: bool = False
    has_default: bool = False
    default: object = None
    doc: str | None = None
    shape_from: ShapeFrom | None = None
    row_lengths_from: tuple[str, ...] | None = None
    encoding: str = "list"
    quality: int | None = None
    loc: Location

    @property
    def is_fixed(self) -> bool:
        return all(d is not None for d in self.shape)

    @property
    def template(self) -> str:
        """The template of the feature's kind (``templates/features/<template>.py.jinja``)."""
        return self.kind.name

    @property
    def raw(self) -> bool:
        """Whether the feature is stored with ``encoding: raw``."""
        return self.kind.name == "raw_tensor"

    @property
    def companion_keys(self) -> tuple[str, ...]:
        """The keys of the companion features written beside the feature's own key, in order."""
        if self.shape_from is not None:
            return self.shape_from.keys
        if self.row_lengths_from is not None:
            return self.row_lengths_from
        return self.kind.companions(self.key, self.shape)


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
    sequence: tuple[FeatureIR, ...] = ()

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
            parts.extend((key, f, i) for i, key in enumerate(f.companion_keys, start=1))
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
