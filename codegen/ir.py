"""The typed intermediate representation between a validated schema and the templates.

One class per feature kind; each names the template that renders it and the runtime codec class the generated module
instantiates for it. Lowering (``codegen.lower``) builds these from the schema models; rendering only reads them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from codegen.runtime.dtypes import DType, Kind

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
        return {Kind.INT: "IntScalar", Kind.BOOL: "BoolScalar", Kind.FLOAT: "FloatScalar"}[self.dtype.kind]


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
class RecordIR:
    """One record class: a ``tf.train.Example`` with ``features`` in schema order."""

    name: str
    doc: str | None
    features: tuple[FeatureIR, ...]
    loc: Location

    @property
    def features_by_key(self) -> tuple[FeatureIR, ...]:
        """Features in serialization order: by the UTF-8 bytes of their key (protobuf's deterministic map order)."""
        return tuple(sorted(self.features, key=lambda f: f.key.encode("utf-8")))


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
