"""Semantic checks of a loaded schema and its lowering to the IR (:mod:`codegen.generator.ir`).

:func:`lower` validates the document's structure with the pydantic models, then checks what they
cannot (record kinds, names, dtypes, encodings, shapes, defaults, colliding wire keys) in every part
that is well-formed, so that one run reports every problem of the file. Every parse spec TensorFlow
would refuse is refused here. Each problem is a
:class:`~codegen.errors.Diagnostic` at the offending value (at the key for unknown or duplicate
keys, at the mapping for missing fields); any problem raises :class:`SchemaError`.
"""

from __future__ import annotations

import difflib
import math
import struct
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from codegen.dtypes import DTYPES, DType, Kind, Wire
from codegen.errors import Diagnostic, SchemaError
from codegen.generator import naming
from codegen.generator.canonical import canonical_json, fingerprint
from codegen.generator.ir import FeatureIR, Location, RecordIR, SchemaIR, Shape
from codegen.generator.schema.loader import Mark, Path, YamlDocument
from codegen.generator.schema.model import (
    LIST_DTYPES,
    RAW_DTYPES,
    SECTIONS,
    SHAPE_DTYPES,
    FeatureDoc,
    RecordDoc,
    SchemaDoc,
    ShapeFromDoc,
)
from codegen.kinds import IMAGE_ENCODINGS, FeatureKind, ShapeFrom, codec_for, select_kind

_MAX_ELEMENTS = 2**63 - 1
_MODEL_AT_DEPTH: dict[int, type[BaseModel]] = {
    0: SchemaDoc,
    2: RecordDoc,
    4: FeatureDoc,
    5: ShapeFromDoc,
}
_EXPECTED = {
    "string_type": "a string",
    "int_type": "an integer",
    "bool_type": "true or false",
    "list_type": "a list",
    "dict_type": "a mapping",
    "model_type": "a mapping",
}


def lower(document: YamlDocument, *, module: str, source: str) -> SchemaIR:
    """The IR of a loaded schema file.

    ``module`` is the generated module's name and ``source`` the schema path that messages show.
    """
    return _Lowering(document, source).run(module)


def show(value: object) -> str:
    """A short YAML-like rendering of a value for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and not math.isfinite(value):
        return ".nan" if math.isnan(value) else (".inf" if value > 0 else "-.inf")
    if isinstance(value, str):
        return repr(value if len(value) <= 40 else value[:37] + "...")
    if isinstance(value, bytes):
        return f"binary data ({len(value)} bytes)"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return repr(value)


def shape_text(shape: Shape) -> str:
    """A shape as written in a schema: ``[null, 3]``."""
    return "[" + ", ".join("null" if d is None else str(d) for d in shape) + "]"


def _count(n: int) -> str:
    return f"{n} value" if n == 1 else f"{n} values"


def _owner(path: Path) -> str:
    """What a path names, for messages: ``feature 'age'``, ``'shape' of feature 'age'``."""
    if not path:
        return "the schema"
    if len(path) == 1:
        return f"{path[0]!r}"
    if len(path) == 2:
        return f"record {path[1]!r}"
    if len(path) == 3:
        return f"{path[2]!r} of record {path[1]!r}"
    if len(path) == 4:
        return f"feature {path[3]!r}"
    field = f"{path[4]}" + "".join(f"[{i}]" for i in path[5:]) if len(path) > 5 else f"{path[4]!r}"
    return f"{field} of feature {path[3]!r}"


class _Lowering:
    """One run of checks and lowering over a loaded document."""

    def __init__(self, document: YamlDocument, source: str) -> None:
        self.document = document
        self.source = source
        self.diagnostics: list[Diagnostic] = list(document.diagnostics)
        self.features: dict[Path, FeatureIR] = {}
        self.steps: dict[Path, FeatureIR] = {}
        self.failed: set[Path] = set()

    def report(self, mark: Mark, message: str) -> None:
        self.diagnostics.append(Diagnostic(self.source, mark.line, mark.col, message))

    def at_value(self, path: Path, message: str) -> None:
        self.report(self.document.positions.value(path), message)

    def at_key(self, path: Path, message: str) -> None:
        self.report(self.document.positions.key(path), message)

    def location(self, path: Path) -> Location:
        mark = self.document.positions.key(path)
        return Location(self.source, mark.line, mark.col)

    def run(self, module: str) -> SchemaIR:
        schema = self.validate()
        self.check_records()
        if self.diagnostics or schema is None:
            raise SchemaError(self.diagnostics)
        records = tuple(self.record_ir(name, record) for name, record in schema.records.items())
        canonical = canonical_json(schema.version, schema.doc, records)
        return SchemaIR(
            module=module,
            source=self.source,
            version=schema.version,
            doc=schema.doc,
            records=records,
            canonical=canonical,
            fingerprint=fingerprint(canonical),
        )

    def record_ir(self, name: str, record: RecordDoc) -> RecordIR:
        """The IR of a valid record from the features lowered by :meth:`check_feature`."""
        path: Path = ("records", name)
        if record.sequence is None:
            return RecordIR(
                name=name,
                doc=record.doc,
                features=tuple(
                    self.features[(*path, "features", f)] for f in record.features or {}
                ),
                loc=self.location(path),
            )
        return RecordIR(
            name=name,
            doc=record.doc,
            kind="sequence",
            features=tuple(self.features[(*path, "context", f)] for f in record.context or {}),
            sequence=tuple(self.steps[(*path, "sequence", f)] for f in record.sequence),
            loc=self.location(path),
        )

    # -- structure -------------------------------------------------------------------------------

    def validate(self) -> SchemaDoc | None:
        """The validated document, or ``None`` after reporting its structural problems."""
        try:
            return SchemaDoc.model_validate(self.document.data)
        except ValidationError as exc:
            errors = exc.errors(include_url=False)
        for error in errors:
            loc = tuple(error["loc"])
            self.failed.add(loc)
            if not any(loc[:end] in self.document.invalid for end in range(len(loc) + 1)):
                self.structural(loc, error)
        return None

    def structural(self, loc: Path, error: ErrorDetails) -> None:
        kind, value = error["type"], error["input"]
        if kind == "missing":
            self.at_value(loc[:-1], f"{_owner(loc[:-1])} is missing the required field {loc[-1]!r}")
        elif kind == "extra_forbidden":
            self.at_key(loc, self.unknown_field(loc))
        elif kind in ("dict_type", "model_type") and not loc:
            self.at_value(
                loc, f"expected a mapping with 'version' and 'records', got {show(value)}"
            )
        elif kind in _EXPECTED:
            self.at_value(loc, f"{_owner(loc)} must be {_EXPECTED[kind]}, got {show(value)}")
        elif kind == "too_short":
            what = "record" if loc == ("records",) else "feature"
            self.at_value(loc, f"{_owner(loc)} must have at least one {what}")
        elif kind == "string_too_short":
            self.at_value(loc, f"{_owner(loc)} must not be empty")
        elif kind == "greater_than_equal":
            self.at_value(
                loc, f"{_owner(loc)} must be at least {error['ctx']['ge']}, got {show(value)}"
            )
        elif kind == "literal_error":
            self.at_value(
                loc, f"{_owner(loc)} must be {error['ctx']['expected']}, got {show(value)}"
            )
        else:
            self.at_value(loc, f"{_owner(loc)}: {error['msg']}")

    def unknown_field(self, loc: Path) -> str:
        allowed = list(_MODEL_AT_DEPTH[len(loc) - 1].model_fields)
        name = str(loc[-1])
        close = difflib.get_close_matches(name, allowed, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        fields = ", ".join(allowed)
        return f"unknown field {name!r} in {_owner(loc[:-1])}{hint}; allowed fields: {fields}"

    def well_formed(self, path: Path) -> bool:
        """Whether nothing at or under ``path`` failed loading or structural validation."""
        n = len(path)
        return not any(p[:n] == path for p in self.failed | self.document.invalid)

    # -- records ---------------------------------------------------------------------------------

    def check_records(self) -> None:
        data = self.document.data
        records = data.get("records") if isinstance(data, dict) else None
        if not isinstance(records, dict):
            return
        for name, record in records.items():
            path: Path = ("records", name)
            problem = naming.record_name_problem(name)
            if problem is None and name.endswith("Batch") and name[: -len("Batch")] in records:
                problem = (
                    f"record name {name!r} clashes with the batch class generated for record"
                    f" {name[: -len('Batch')]!r}; rename it"
                )
            if problem is not None:
                self.at_key(path, problem)
            if isinstance(record, dict):
                self.check_record(path, record)

    def check_record(self, path: Path, record: dict[str, Any]) -> None:
        sections = [s for s in record if s in SECTIONS and record[s] is not None]
        if not sections:
            self.at_value(
                path,
                f"{_owner(path)} has no features; give 'features' (a tf.train.Example) or"
                " 'sequence' and optionally 'context' (a tf.train.SequenceExample)",
            )
        elif "features" in sections and len(sections) > 1:
            other = next(s for s in sections if s != "features")
            self.at_key(
                (*path, other),
                f"{_owner(path)} has both 'features' (a tf.train.Example) and"
                f" {other!r} (a tf.train.SequenceExample); give one kind",
            )
        elif sections == ["context"]:
            self.at_key(
                (*path, "context"),
                f"{_owner(path)} has 'context' but no 'sequence': a SequenceExample record needs"
                " 'sequence' (its feature lists); a tf.train.Example record has 'features'",
            )
        names: dict[str, str] = {}
        for section in sections:
            features = record[section]
            if not isinstance(features, dict):
                continue
            # One Features map per section: TensorFlow parses the context and the feature lists
            # of a SequenceExample separately and accepts the same key in both.
            keys: dict[str, tuple[str, str | None]] = {}
            for name, feature in features.items():
                feature_path: Path = (*path, section, name)
                self.check_feature_name(feature_path, names)
                if self.well_formed(feature_path):
                    doc = FeatureDoc.model_validate(feature)
                    self.check_feature(feature_path, doc)
                    self.check_keys(feature_path, doc, keys)

    def check_feature_name(self, path: Path, names: dict[str, str]) -> None:
        name, section = str(path[-1]), str(path[-2])
        problem = naming.feature_name_problem(name)
        if problem is not None:
            self.at_key(path, problem)
        elif name in names:
            self.at_key(path, f"feature name {name!r} is already used in {names[name]!r}")
        names.setdefault(name, section)

    def check_keys(
        self, path: Path, doc: FeatureDoc, keys: dict[str, tuple[str, str | None]]
    ) -> None:
        """Check that no wire key of the feature (its key, and its companions if it lowered) is
        already used in its section; ``keys`` maps each used key to its feature's name and the
        role of a companion key (``None`` for a feature's own key)."""
        name = str(path[-1])
        wire: list[tuple[str, str | None]] = [(doc.key or name, None)]
        feature = self.features.get(path)
        if feature is not None:
            companion = "shape" if feature.raw else "row lengths"
            wire.extend((key, companion) for key in feature.companion_keys)
        for key, role in wire:
            if key not in keys:
                keys[key] = (name, role)
                continue
            other, other_role = keys[key]
            what = f"has key {key!r}" if role is None else f"stores its {role} under key {key!r}"
            use = "" if other_role is None else f" for its {other_role}"
            message = f"feature {name!r} {what}, which feature {other!r} already uses{use}"
            declared = "shape_from" if doc.shape_from is not None else "row_lengths_from"
            if role is not None and getattr(doc, declared) is not None:
                self.at_value((*path, declared), message)
            elif doc.key is None:
                self.at_key(path, message)
            else:
                self.at_value((*path, "key"), message)

    # -- features --------------------------------------------------------------------------------

    def check_feature(self, path: Path, doc: FeatureDoc) -> None:
        """Check one well-formed feature; remember its IR if it is valid."""
        count = len(self.diagnostics)
        sequence = path[-2] == "sequence"
        if sequence and doc.encoding != "list":
            self.at_value(
                (*path, "encoding"),
                f"encoding {doc.encoding!r} is not supported for sequence features (each step is"
                " one Feature of a FeatureList); use the list encoding",
            )
        image = doc.encoding in IMAGE_ENCODINGS and not sequence
        if doc.quality is not None and doc.encoding != "jpeg":
            self.at_value(
                (*path, "quality"), "'quality' is the JPEG quality: it needs 'encoding: jpeg'"
            )
        raw = doc.encoding == "raw" and not sequence
        if image:
            dtype, shape = self.check_image(path, doc)
        else:
            dtype = self.check_dtype(path, doc, raw=raw, sequence=sequence)
            shape = self.check_shape(path, doc, dtype, raw=raw, sequence=sequence)
        has_default = "default" in doc.model_fields_set
        default: object = None
        if has_default and not image:
            default = self.check_default(path, doc, dtype, shape)
        if len(self.diagnostics) > count or dtype is None or shape is None:
            return
        encoding = "list" if sequence else doc.encoding
        kind = select_kind(dtype, shape, encoding=encoding, sequence=sequence)
        key = doc.key or str(path[-1])
        shape_from = self.check_shape_from(path, doc, kind, key, shape)
        row_lengths_from = self.check_row_lengths_from(path, doc, kind, key, shape)
        if len(self.diagnostics) > count:
            return
        feature = FeatureIR(
            name=str(path[-1]),
            key=key,
            dtype=dtype,
            shape=shape,
            kind=kind,
            shape_from=shape_from,
            row_lengths_from=row_lengths_from,
            encoding=encoding,
            quality=doc.quality,
            codec=codec_for(kind.name, dtype, shape),
            optional=doc.optional,
            has_default=has_default,
            default=default,
            doc=doc.doc,
            loc=self.location(path),
        )
        if sequence:
            self.steps[path] = feature
        else:
            self.features[path] = feature

    def check_image(self, path: Path, doc: FeatureDoc) -> tuple[DType | None, Shape | None]:
        """The dtype (uint8) and shape ``[height, width, channels]`` of an encoded image feature."""
        dtype: DType | None = DTYPES["uint8"]
        if doc.dtype != "uint8":
            self.at_value(
                (*path, "dtype"),
                f"an encoded image ('encoding: {doc.encoding}') has dtype uint8, not"
                f" {show(doc.dtype)}",
            )
            dtype = None
        shape: Shape | None = tuple(doc.shape)
        dims = doc.shape
        at = (*path, "shape") if "shape" in doc.model_fields_set else (*path, "encoding")
        if len(dims) != 3:
            self.at_value(
                at,
                "an encoded image has shape [height, width, channels] (null for any size, e.g."
                f" [null, null, 3]), got {shape_text(tuple(dims))}",
            )
            shape = None
        else:
            for i, dim in enumerate(dims):
                if dim is not None and dim <= 0:
                    self.at_value(
                        (*path, "shape", i),
                        f"a dimension must be a positive integer or null, got {dim}",
                    )
                    shape = None
            channels = dims[2]
            allowed = (1, 3) if doc.encoding == "jpeg" else (1, 2, 3, 4)
            if channels is not None and channels > 0 and channels not in allowed:
                self.at_value(
                    (*path, "shape", 2),
                    f"a {doc.encoding} image has {' or '.join(map(str, allowed))} channels, got"
                    f" {channels}",
                )
                shape = None
        if "default" in doc.model_fields_set:
            self.at_value(
                (*path, "default"),
                "a default is not supported for an encoded image; set 'optional: true' to allow"
                " the feature to be absent",
            )
        return dtype, shape

    def check_shape_from(
        self, path: Path, doc: FeatureDoc, kind: FeatureKind, key: str, shape: Shape
    ) -> ShapeFrom | None:
        """The declared layout of a raw tensor's stored shape; ``None`` for the default one (spelled out or not)."""
        declared = doc.shape_from
        if declared is None:
            return None
        at = (*path, "shape_from")
        if isinstance(declared, dict):
            try:
                declared = ShapeFromDoc.model_validate(declared)
            except ValidationError as exc:
                for error in exc.errors(include_url=False):
                    self.structural((*at, *error["loc"]), error)
                return None
        elif not isinstance(declared, list) or not all(isinstance(k, str) for k in declared):
            self.at_value(
                at,
                "'shape_from' must be a mapping ({key: ..., dtype: ..., encoding: ...}: one feature"
                f" holding the shape) or a list of keys (one per null dimension), got {show(declared)}",
            )
            return None
        if kind.name != "raw_tensor":
            self.at_value(
                at,
                "'shape_from' says where a raw tensor's unknown dimensions are stored; it needs"
                " 'encoding: raw'",
            )
            return None
        nulls = shape.count(None)
        if not nulls:
            self.at_value(
                at,
                f"shape {shape_text(shape)} has no null dimension, so no shape is stored; remove"
                " 'shape_from'",
            )
            return None
        if isinstance(declared, list):
            layout = ShapeFrom(tuple(declared), per_dim=True)
            if len(declared) != nulls:
                self.at_value(
                    at,
                    f"a list 'shape_from' names one int64 feature per null dimension: shape"
                    f" {shape_text(shape)} needs {nulls}, got {len(declared)}",
                )
            for i, name in enumerate(declared):
                if not name:
                    self.at_value((*at, i), "a key must not be empty")
                elif name in declared[:i]:
                    self.at_value((*at, i), f"key {name!r} is named twice")
            return layout
        dtype = DTYPES.get(declared.dtype)
        if dtype is None or declared.dtype not in SHAPE_DTYPES:
            self.at_value(
                (*at, "dtype"),
                f"a stored shape has an integer dtype ({', '.join(SHAPE_DTYPES)}), got"
                f" {show(declared.dtype)}",
            )
            return None
        if declared.encoding == "list" and not dtype.list_ok:
            self.at_value(
                (*at, "dtype"),
                f"dtype {dtype.name} does not fit the list encoding; use int64, or 'encoding: raw'",
            )
            return None
        layout = ShapeFrom((declared.key,), declared.dtype, declared.encoding)
        return None if layout == ShapeFrom((f"{key}/shape",)) else layout

    def check_row_lengths_from(
        self, path: Path, doc: FeatureDoc, kind: FeatureKind, key: str, shape: Shape
    ) -> tuple[str, ...] | None:
        """The declared keys of a ragged tensor's row lengths; ``None`` for the default ones."""
        declared = doc.row_lengths_from
        if declared is None:
            return None
        at = (*path, "row_lengths_from")
        if kind.name != "ragged_tensor":
            self.at_value(
                at,
                "'row_lengths_from' names the row lengths of a ragged feature (two or more leading"
                " null dimensions, the list encoding, not in 'sequence')",
            )
            return None
        needed = len(kind.companions(key, shape))
        if len(declared) != needed:
            self.at_value(
                at,
                f"shape {shape_text(shape)} has {needed} row length feature(s) (one per null"
                f" dimension after the first), got {len(declared)}",
            )
        for i, name in enumerate(declared):
            if not name:
                self.at_value((*at, i), "a key must not be empty")
            elif name in declared[:i]:
                self.at_value((*at, i), f"key {name!r} is named twice")
        keys = tuple(declared)
        return None if keys == kind.companions(key, shape) else keys

    def check_dtype(
        self, path: Path, doc: FeatureDoc, *, raw: bool, sequence: bool
    ) -> DType | None:
        at = (*path, "dtype")
        dtype = DTYPES.get(doc.dtype)
        if dtype is None:
            expected = ", ".join(RAW_DTYPES if raw else LIST_DTYPES)
            self.at_value(at, f"unknown dtype {doc.dtype!r}; expected one of {expected}")
            return None
        if raw and dtype.name not in RAW_DTYPES:
            self.at_value(
                at,
                f"encoding 'raw' stores integer and float tensors, not {dtype.name}; use the list"
                " encoding (remove 'encoding: raw')",
            )
            return None
        if not raw and not dtype.list_ok:
            instead = "float32" if dtype.wire is Wire.FLOAT else "int64"
            keep = (
                " (sequence features cannot use 'encoding: raw')"
                if sequence
                else f", or 'encoding: raw' to keep {dtype.name}"
            )
            self.at_value(
                at,
                f"dtype {dtype.name} does not fit the list encoding ({dtype.wire.list_name} holds"
                f" {dtype.wire.tf_dtype_name}); use dtype {instead}{keep}",
            )
            return None
        return dtype

    def check_shape(
        self, path: Path, doc: FeatureDoc, dtype: DType | None, *, raw: bool, sequence: bool
    ) -> Shape | None:
        ok = True
        dims = doc.shape
        for i, dim in enumerate(dims):
            if dim is None:
                problem = _null_problem(dims[:i], dtype, raw=raw, sequence=sequence)
                if problem is not None:
                    self.at_value((*path, "shape", i), problem)
                    ok = False
            elif dim <= 0:
                self.at_value(
                    (*path, "shape", i),
                    f"a dimension must be a positive integer or null, got {dim}",
                )
                ok = False
        shape = tuple(dims)
        if ok and math.prod(d for d in shape if d is not None) > _MAX_ELEMENTS:
            self.at_value(
                (*path, "shape"), f"shape {shape_text(shape)} has more than 2**63-1 elements"
            )
            ok = False
        return shape if ok else None

    def check_default(
        self, path: Path, doc: FeatureDoc, dtype: DType | None, shape: Shape | None
    ) -> object:
        at = (*path, "default")
        if path[-2] == "sequence":
            self.at_value(
                at,
                "TensorFlow rejects a default on a sequence feature; remove it ('optional: true'"
                " reads a missing feature list as zero steps)",
            )
        elif doc.encoding == "raw":
            self.at_value(
                at,
                "a default is not supported with encoding: raw; remove it, or set"
                " 'optional: true' to allow the feature to be absent",
            )
        elif doc.optional:
            self.at_value(at, "a feature cannot be both optional and have a default; remove one")
        elif shape is not None and None in shape:
            self.at_value(
                at,
                f"a default needs a fully known shape; shape {shape_text(shape)} has a dimension of"
                " unknown length",
            )
        elif dtype is not None and shape is not None:
            return _Defaults(self, dtype, shape).normalize(doc.default, at)
        return None


def _null_problem(
    before: list[int | None], dtype: DType | None, *, raw: bool, sequence: bool
) -> str | None:
    """What is wrong with a ``null`` dimension after the dimensions ``before``, or ``None``."""
    if raw:
        return None
    if sequence:
        if not before:
            return None
        return (
            "the shape of a sequence feature is that of one step, and only its first dimension"
            " may be null (of unknown length)"
        )
    if all(d is None for d in before):
        return None
    message = (
        "only leading dimensions may be null (of unknown length) with the list encoding, not one"
        " after a fixed dimension"
    )
    if dtype is not None and dtype.name in RAW_DTYPES:
        message += "; use 'encoding: raw' for unknown dimensions anywhere"
    return message


class _Defaults:
    """Checks a default value against a feature's dtype and fixed shape and normalizes it."""

    def __init__(self, lowering: _Lowering, dtype: DType, shape: tuple[int | None, ...]) -> None:
        self.lowering = lowering
        self.dtype = dtype
        self.shape = tuple(d for d in shape if d is not None)

    def normalize(self, value: object, path: Path) -> object:
        """The default as a scalar or nested tuples matching the shape."""
        if not self.shape:
            return self.element(value, path)
        size = math.prod(self.shape)
        if not isinstance(value, list):
            self.lowering.at_value(
                path,
                f"a default for shape {shape_text(self.shape)} must be a list, got {show(value)}",
            )
            return None
        if len(self.shape) > 1 and any(isinstance(v, list) for v in value):
            return self.nested(value, path, 0)
        if len(value) != size:
            nested = " a nested list matching the shape or" if len(self.shape) > 1 else ""
            self.lowering.at_value(
                path,
                f"a default for shape {shape_text(self.shape)} must be{nested} a list of {size}"
                f" values, got {_count(len(value))}",
            )
            return None
        flat = [self.element(v, (*path, i)) for i, v in enumerate(value)]
        return _reshape(flat, self.shape)

    def nested(self, value: object, path: Path, level: int) -> object:
        if level == len(self.shape):
            return self.element(value, path)
        size = self.shape[level]
        if not isinstance(value, list) or len(value) != size:
            got = _count(len(value)) if isinstance(value, list) else show(value)
            self.lowering.at_value(
                path,
                f"expected a list of {size} values at this level of shape"
                f" {shape_text(self.shape)}, got {got}",
            )
            return None
        return tuple(self.nested(v, (*path, i), level + 1) for i, v in enumerate(value))

    def element(self, value: object, path: Path) -> object:
        try:
            return _element(self.dtype, value)
        except _BadValue as exc:
            self.lowering.at_value(path, str(exc))
            return None


class _BadValue(Exception):
    """A default value does not fit its dtype; the message says why."""


def _element(dtype: DType, value: object) -> object:
    """One default value of ``dtype``, normalized: float32-rounded floats, UTF-8 encoded bytes."""
    name = dtype.name
    if dtype.kind is Kind.BOOL:
        if isinstance(value, bool):
            return value
        raise _BadValue(f"expected true or false for bool, got {show(value)}")
    if isinstance(value, bool):
        raise _BadValue(f"expected {_EXPECTED_VALUE[dtype.kind]} for {name}, got {show(value)}")
    if dtype.kind is Kind.INT:
        if not isinstance(value, int):
            raise _BadValue(f"expected an integer for {name}, got {show(value)}")
        if not (dtype.lo is None or dtype.lo <= value) or not (
            dtype.hi is None or value <= dtype.hi
        ):
            raise _BadValue(f"{value} is out of range for {name} ({dtype.lo} to {dtype.hi})")
        return value
    if dtype.kind is Kind.FLOAT:
        if not isinstance(value, int | float):
            raise _BadValue(f"expected a number for {name}, got {show(value)}")
        try:
            return _float32(value)
        except OverflowError:
            raise _BadValue(
                f"{show(value)} is out of range for {name} (about ±3.4028235e+38)"
            ) from None
    if dtype.kind is Kind.STR:
        if isinstance(value, str):
            return value
        raise _BadValue(f"expected a string for {name}, got {show(value)}")
    if isinstance(value, bytes):
        return value
    if not isinstance(value, str):
        raise _BadValue(f"expected a string or !!binary for {name}, got {show(value)}")
    try:
        return value.encode("utf-8")
    except UnicodeEncodeError:
        raise _BadValue(f"{show(value)} is not valid Unicode text") from None


_EXPECTED_VALUE = {
    Kind.INT: "an integer",
    Kind.FLOAT: "a number",
    Kind.STR: "a string",
    Kind.BYTES: "a string",
}


def _float32(value: int | float) -> float:
    """``value`` rounded to the nearest float32; ``OverflowError`` if a finite one does not fit."""
    result: float = struct.unpack("<f", struct.pack("<f", value))[0]
    return result


def _reshape(flat: list[object], shape: tuple[int, ...]) -> object:
    """Row-major nested tuples of ``flat`` with the given shape."""
    if len(shape) == 1:
        return tuple(flat)
    step = len(flat) // shape[0]
    return tuple(_reshape(flat[i * step : (i + 1) * step], shape[1:]) for i in range(shape[0]))
