"""TensorFlow-free descriptions of the features of a record (its ``feature_spec()``)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import overload

from codegen.kinds import ShapeFrom


@dataclass(frozen=True, slots=True)
class FeatureInfo:
    """One feature of a record.

    ``name`` is the attribute, ``key`` the Example key, ``dtype`` the schema dtype name, ``wire``
    the list it travels in (``int64_list``, ``float_list`` or ``bytes_list``), ``shape`` its shape
    (``None`` for a dimension of variable length), ``fixed`` whether the shape is fully known,
    ``default`` its default (a scalar or nested tuples; ``None`` when it has none) and ``optional``
    whether an absent feature means ``None`` (for a feature list: no steps).

    ``encoding`` is ``list`` (values in the list of the dtype's wire kind) or ``raw`` (the whole
    tensor as one little-endian bytes value); ``companions`` are the keys of the int64 features
    written next to it (``<key>/shape`` of a raw tensor with unknown dimensions, the
    ``<key>/row_lengths_<d>`` of a ragged one); ``sequence`` says it is a feature list of a
    ``SequenceExample``, one ``Feature`` per step, and then ``shape`` is the shape of one step.
    ``shape_from`` is the declared layout of a raw tensor's stored shape (``None``: an int64 list
    under ``<key>/shape``; see :class:`~codegen.kinds.ShapeFrom`).
    """

    name: str
    key: str
    dtype: str
    wire: str
    shape: tuple[int | None, ...]
    fixed: bool
    default: object
    optional: bool
    encoding: str = "list"
    companions: tuple[str, ...] = ()
    sequence: bool = False
    shape_from: ShapeFrom | None = None
    quality: int | None = None
    """The JPEG quality an encoded image is written at (``None`` for other features)."""

    @property
    def shape_text(self) -> str:
        """The shape as written in a schema: ``[]``, ``[3]``, ``[null, 2]``."""
        return "[" + ", ".join("null" if d is None else str(d) for d in self.shape) + "]"

    @property
    def ragged(self) -> bool:
        """Whether the feature is ragged: two or more dimensions of variable length, in lists."""
        return self.encoding == "list" and self.shape.count(None) >= 2

    @property
    def wire_text(self) -> str:
        """How the values travel, for a table: ``int64_list``, ``bytes_list (raw)``, ``float_list
        per step``."""
        return (
            self.wire
            + (" (raw)" if self.encoding == "raw" else "")
            + (" per step" if self.sequence else "")
        )


_COLUMNS = ("name", "key", "dtype", "wire", "shape", "default", "optional")


@dataclass(frozen=True, slots=True)
class FeatureSpec(Sequence[FeatureInfo]):
    """The features of one record (``record`` is its class name), in schema order.

    Indexes and iterates like a tuple of :class:`FeatureInfo`; ``str()`` gives a table with one row
    per feature (companion keys follow the feature's key).
    """

    record: str
    features: tuple[FeatureInfo, ...]

    @overload
    def __getitem__(self, index: int) -> FeatureInfo: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[FeatureInfo, ...]: ...

    def __getitem__(self, index: int | slice) -> FeatureInfo | tuple[FeatureInfo, ...]:
        return self.features[index]

    def __len__(self) -> int:
        return len(self.features)

    def __iter__(self) -> Iterator[FeatureInfo]:
        return iter(self.features)

    def __str__(self) -> str:
        rows = [_COLUMNS] + [
            (
                f.name,
                ", ".join((f.key, *f.companions)),
                f.dtype,
                f.wire_text,
                f.shape_text,
                "-" if f.default is None else repr(f.default),
                "yes" if f.optional else "no",
            )
            for f in self.features
        ]
        widths = [max(len(row[i]) for row in rows) for i in range(len(_COLUMNS))]
        lines = [
            "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
            for row in rows
        ]
        count = len(self.features)
        title = f"{self.record}: {count} feature{'' if count == 1 else 's'}"
        return "\n".join([title, *("  " + line for line in lines)])
