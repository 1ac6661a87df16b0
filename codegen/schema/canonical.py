"""The canonical form of a schema and its fingerprint.

The canonical form is compact JSON (sorted object keys, ASCII only) of the lowered schema with every
default made explicit: records and features are lists in schema order, each feature has its
``key``, ``shape``, ``optional``, ``encoding`` (``"list"`` or ``"raw"``), ``doc`` and normalized
``default`` (``null`` when it has none). A tf.train.Example record has ``name``, ``doc`` and
``features``; a SequenceExample record has ``"kind": "sequence"``, ``context`` (possibly empty) and
``sequence`` instead of ``features``, so the form of Example records never depends on the other
kind. Formatting, comments, quoting, flow or block style and spelling a default out do not change
it; every semantic change does. Default values are JSON values of their dtype, except non-finite
floats (``"nan"``, ``"inf"``, ``"-inf"``) and bytes (base64 text).

Generated modules embed the canonical form; :func:`parse_canonical` loads it back into the IR.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import math
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from codegen.errors import Diagnostic, SchemaError
from codegen.ir import FeatureIR, RawTensor, RecordIR, SchemaIR
from codegen.runtime.dtypes import DTYPES, Kind
from codegen.schema.loader import MAX_DEPTH, Positions, YamlDocument

_NON_FINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


def canonical_json(version: int, doc: str | None, records: Sequence[RecordIR]) -> str:
    """The canonical JSON text of a schema's lowered parts."""
    value = {
        "version": version,
        "doc": doc,
        "records": [_record(r) for r in records],
    }
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False
    )


def fingerprint(canonical: str) -> str:
    """The sha256 hex digest of a canonical form."""
    return hashlib.sha256(canonical.encode("ascii")).hexdigest()


def _record(r: RecordIR) -> dict[str, object]:
    if r.kind == "example":
        return {"name": r.name, "doc": r.doc, "features": [_feature(f) for f in r.features]}
    return {
        "name": r.name,
        "doc": r.doc,
        "kind": r.kind,
        "context": [_feature(f) for f in r.features],
        "sequence": [_feature(f) for f in r.sequence],
    }


def _feature(f: FeatureIR) -> dict[str, object]:
    return {
        "name": f.name,
        "key": f.key,
        "dtype": f.dtype.name,
        "shape": list(f.shape),
        "optional": f.optional,
        "encoding": "raw" if isinstance(f, RawTensor) else "list",
        "doc": f.doc,
        "default": _encode_default(f.default) if f.has_default else None,
    }


def _encode_default(value: object) -> object:
    if isinstance(value, tuple):
        return [_encode_default(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    return value


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")


class _CanonicalFeature(_Strict):
    name: str
    key: str
    dtype: str
    shape: list[int | None]
    optional: bool
    encoding: str
    doc: str | None
    default: Any


class _CanonicalRecord(_Strict):
    """A record: ``features`` for a tf.train.Example, or ``kind: "sequence"`` with ``context`` and
    ``sequence`` for a SequenceExample; which fields a kind needs is checked by lowering it."""

    name: str
    doc: str | None
    kind: Literal["sequence"] | None = None
    features: list[_CanonicalFeature] | None = None
    context: list[_CanonicalFeature] | None = None
    sequence: list[_CanonicalFeature] | None = None


class _CanonicalSchema(_Strict):
    version: int
    doc: str | None
    records: list[_CanonicalRecord]


def parse_canonical(text: str, *, module: str, source: str) -> SchemaIR:
    """The IR of a schema given in canonical form (as embedded in generated modules).

    The schema is checked like a schema file, and ``text`` must be exactly its canonical form; every
    problem raises :class:`SchemaError` (at line 1, column 1 unless the JSON itself is malformed).
    """
    # Imported here: lowering computes canonical forms with this module.
    from codegen.lower import lower

    def error(message: str, line: int = 1, col: int = 1) -> SchemaError:
        return SchemaError([Diagnostic(source, line, col, f"invalid canonical schema: {message}")])

    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise error(exc.msg, exc.lineno, exc.colno) from None
    except (ValueError, RecursionError) as exc:
        raise error(str(exc)) from None
    try:
        schema = _CanonicalSchema.model_validate(raw)
    except ValidationError as exc:
        raise SchemaError(
            [
                Diagnostic(
                    source, 1, 1, f"invalid canonical schema: {_where(e['loc'])}: {e['msg']}"
                )
                for e in exc.errors(include_url=False)
            ]
        ) from None
    try:
        data = {
            "version": schema.version,
            "doc": schema.doc,
            "records": {r.name: _record_data(r) for r in schema.records},
        }
    except _BadDefault as exc:
        raise error(str(exc)) from None
    document = YamlDocument(data=data, positions=Positions(), diagnostics=(), invalid=frozenset())
    lowered = lower(document, module=module, source=source)
    if lowered.canonical != text:
        raise error("the text is not the canonical form of the schema it describes")
    return lowered


def _where(loc: tuple[int | str, ...]) -> str:
    return ".".join(str(part) for part in loc) or "the top level"


class _BadDefault(Exception):
    """A canonical default value cannot be decoded; the message says why."""


def _record_data(r: _CanonicalRecord) -> dict[str, object]:
    """A canonical record in schema-language form; an empty ``context`` is left out."""
    data: dict[str, object] = {"doc": r.doc}
    for section in ("features", "context", "sequence"):
        features: list[_CanonicalFeature] | None = getattr(r, section)
        if features is not None and (features or section != "context"):
            data[section] = {f.name: _feature_data(f) for f in features}
    return data


def _feature_data(f: _CanonicalFeature) -> dict[str, object]:
    data = f.model_dump(exclude={"name", "default"})
    if f.default is not None:
        dtype = DTYPES.get(f.dtype)
        data["default"] = _decode_default(f.default, dtype.kind if dtype else None)
    return data


def _decode_default(value: object, kind: Kind | None, depth: int = 0) -> object:
    """A canonical default value in schema-language form (inverse of :func:`_encode_default`)."""
    if isinstance(value, list):
        if depth >= MAX_DEPTH:
            raise _BadDefault(f"a default nests deeper than {MAX_DEPTH} levels")
        return [_decode_default(v, kind, depth + 1) for v in value]
    if kind is Kind.FLOAT and isinstance(value, str) and value in _NON_FINITE:
        return _NON_FINITE[value]
    if kind is Kind.BYTES and isinstance(value, str):
        try:
            return base64.b64decode(value.encode("ascii"), validate=True)
        except (UnicodeEncodeError, binascii.Error):
            raise _BadDefault(f"the bytes default {value!r} is not valid base64") from None
    return value
