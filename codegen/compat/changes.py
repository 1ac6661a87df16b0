"""What the compatibility engine reports: one :class:`Change` per difference between two schemas.

A change is classified by which readers still read which data, under the decode rules the
generated code has:

* ``backward`` -- readers generated from the NEW schema read data written with the OLD one;
* ``forward`` -- readers generated from the OLD schema read data written with the NEW one;
* ``full`` -- both; ``breaking`` -- neither.

"Read" means every record the writer can produce decodes without error and every attribute the
two sides share gets the value that was written (or, where the writer left the feature out, the
reader's documented value for an absent feature: its default, ``None`` or no rows).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol


class Classification(enum.StrEnum):
    """Which readers still read which data after a change (see the module docstring)."""

    FULL = "full"
    BACKWARD = "backward"
    FORWARD = "forward"
    BREAKING = "breaking"

    @classmethod
    def of(cls, backward: bool, forward: bool) -> Classification:
        """The classification of a change that keeps ``backward`` and ``forward`` reading."""
        if backward:
            return cls.FULL if forward else cls.BACKWARD
        return cls.FORWARD if forward else cls.BREAKING

    @property
    def backward(self) -> bool:
        """Whether NEW readers read OLD data."""
        return self in (Classification.FULL, Classification.BACKWARD)

    @property
    def forward(self) -> bool:
        """Whether OLD readers read NEW data."""
        return self in (Classification.FULL, Classification.FORWARD)

    def meet(self, other: Classification) -> Classification:
        """The classification of two changes together: what both keep."""
        return Classification.of(self.backward and other.backward, self.forward and other.forward)


class Mode(enum.StrEnum):
    """What a set of changes must keep: ``tfr-gen diff --mode``."""

    BACKWARD = "backward"
    FORWARD = "forward"
    FULL = "full"
    NONE = "none"

    def allows(self, classification: Classification) -> bool:
        """Whether a change of ``classification`` keeps what this mode asks for."""
        if self is Mode.BACKWARD:
            return classification.backward
        if self is Mode.FORWARD:
            return classification.forward
        if self is Mode.FULL:
            return classification is Classification.FULL
        return True


class ChangeKind(enum.StrEnum):
    """Every kind of change the engine reports (the values are stable: ``--format json``)."""

    VERSION_CHANGED = "version_changed"
    DOC_CHANGED = "doc_changed"
    SCHEMA_REMOVED = "schema_removed"
    RECORD_ADDED = "record_added"
    RECORD_REMOVED = "record_removed"
    RECORD_RENAMED = "record_renamed"
    RECORD_KIND_CHANGED = "record_kind_changed"
    FEATURE_ADDED = "feature_added"
    FEATURE_REMOVED = "feature_removed"
    FEATURE_RENAMED = "feature_renamed"
    FEATURE_MOVED = "feature_moved"
    KEY_CHANGED = "key_changed"
    KEY_REUSED = "key_reused"
    DTYPE_WIDENED = "dtype_widened"
    DTYPE_NARROWED = "dtype_narrowed"
    DTYPE_CHANGED = "dtype_changed"
    DTYPE_KIND_CHANGED = "dtype_kind_changed"
    SHAPE_CHANGED = "shape_changed"
    MADE_VARIABLE = "made_variable"
    MADE_FIXED = "made_fixed"
    DEFAULT_ADDED = "default_added"
    DEFAULT_REMOVED = "default_removed"
    DEFAULT_CHANGED = "default_changed"
    MADE_OPTIONAL = "made_optional"
    MADE_REQUIRED = "made_required"
    ENCODING_CHANGED = "encoding_changed"
    LAYOUT_CHANGED = "layout_changed"
    QUALITY_CHANGED = "quality_changed"
    FIELD_CHANGED = "field_changed"

    @property
    def semantic(self) -> bool:
        """Whether the change needs a higher ``version`` (all but docs and the version itself)."""
        return self not in (ChangeKind.DOC_CHANGED, ChangeKind.VERSION_CHANGED)


class Position(Protocol):
    """Where a schema element is written: a file and a 1-based line and column."""

    @property
    def path(self) -> str: ...

    @property
    def line(self) -> int: ...

    @property
    def col(self) -> int: ...


@dataclass(frozen=True, slots=True)
class Change:
    """One difference between an OLD and a NEW schema.

    ``path`` names the element as its path in the schema file (``records.Customer.features.age``,
    ``records.Customer.features.age.dtype``, ``version``); ``location`` is where it is written: in
    the NEW file, or in the OLD one for removals (``None`` when no positions were given).
    """

    path: str
    kind: ChangeKind
    classification: Classification
    message: str
    location: Position | None = None

    def where(self) -> str:
        """``file:line:col`` of the change, or its path when it has no location."""
        if self.location is None:
            return self.path
        return f"{self.location.path}:{self.location.line}:{self.location.col}"

    def to_json(self) -> dict[str, object]:
        """The change as JSON data with stable keys."""
        location = self.location
        return {
            "path": self.path,
            "kind": self.kind.value,
            "classification": self.classification.value,
            "message": self.message,
            "location": None
            if location is None
            else {"file": location.path, "line": location.line, "col": location.col},
        }

    def __str__(self) -> str:
        return f"{self.where()}: {self.classification.value}: {self.message}"


def overall(changes: Iterable[Change]) -> Classification:
    """What all ``changes`` keep together (``full`` for no changes)."""
    result = Classification.FULL
    for change in changes:
        result = result.meet(change.classification)
    return result
