"""The canonical form of a schema and its fingerprint.

The canonical form is compact JSON (sorted object keys, ASCII only) of the lowered schema with every
default made explicit: records and features are lists in schema order, each feature has its
``key``, ``shape``, ``optional``, ``encoding`` (``"list"``, ``"raw"`` or an image encoding), ``doc`` and normalized
``default`` (``null`` when it has none), and ``shape_from`` or ``row_lengths_from`` only when the schema declares
a companion layout other than the default one. A tf.train.Example record has ``name``, ``doc`` and
``features``; a SequenceExample record has ``"kind": "sequence"``, ``context`` (possibly empty) and
``sequence`` instead of ``features``, so the form of Example records never depends on the other
kind. Formatting, comments, quoting, flow or block style and spelling a default out do not change
it; every semantic change does. Default values are JSON values of their dtype, except non-finite
floats (``"nan"``, ``"inf"``, ``"-inf"``) and bytes (base64 text).

Generated modules embed the canonical form; :func:`codegen.generator.schema.parse_canonical` loads it back into
the IR.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
from collections.abc import Sequence

from codegen.generator.ir import FeatureIR, RecordIR


def canonical_json(version: int, doc: str | None, records: Sequence[RecordIR]) -> str:
    """The canonical JSON text of a schema's lowered parts."""
    value: dict[str, object] = {
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
    value: dict[str, object] = {
        "name": f.name,
        "key": f.key,
        "dtype": f.dtype.name,
        "shape": list(f.shape),
        "optional": f.optional,
        "encoding": f.encoding,
        "doc": f.doc,
        "default": _encode_default(f.default) if f.has_default else None,
    }
    if f.shape_from is not None:
        layout = f.shape_from
        value["shape_from"] = (
            list(layout.keys)
            if layout.per_dim
            else {"key": layout.keys[0], "dtype": layout.dtype, "encoding": layout.encoding}
        )
    if f.row_lengths_from is not None:
        value["row_lengths_from"] = list(f.row_lengths_from)
    if f.quality is not None:
        value["quality"] = f.quality
    return value


def _encode_default(value: object) -> object:
    if isinstance(value, tuple):
        return [_encode_default(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    return value
