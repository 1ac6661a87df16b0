"""Reading a schema back from its canonical form (:mod:`codegen.generator.canonical`), as generated modules embed it:
canonical JSON -> the same schema document a YAML file gives, so lowering checks it like a schema file.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from codegen.dtypes import DTYPES, Kind
from codegen.errors import Diagnostic, SchemaError
from codegen.generator.schema.loader import MAX_DEPTH, Positions, YamlDocument

_NON_FINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}
"""The canonical spelling of each non-finite float default."""


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
    shape_from: dict[str, str] | list[str] | None = None
    row_lengths_from: list[str] | None = None
    quality: int | None = None


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


def load_canonical(text: str, source: str) -> YamlDocument:
    """The schema document (as :func:`~codegen.generator.schema.loader.load_yaml` gives) of a schema in canonical
    form. Malformed JSON, a form that is not a canonical schema, or an undecodable default raises
    :class:`SchemaError` (at line 1, column 1 unless the JSON itself is malformed); lowering checks the rest.
    """

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
    return YamlDocument(data=data, positions=Positions(), diagnostics=(), invalid=frozenset())


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
    data = f.model_dump(exclude={"name", "default"}, exclude_none=True)
    data["doc"] = f.doc
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
