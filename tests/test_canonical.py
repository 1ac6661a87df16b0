"""The canonical form of a schema, its fingerprint, and loading it back."""

from __future__ import annotations

import copy
import hashlib
import json
import math
import textwrap
from dataclasses import replace
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from codegen import naming
from codegen.errors import SchemaError
from codegen.ir import FeatureIR, Location, SchemaIR
from codegen.schema import canonical_json, fingerprint, parse_canonical, parse_schema

BASE = textwrap.dedent(
    """\
    version: 3
    doc: Purchases.
    records:
      Customer:
        doc: One customer.
        features:
          age: {dtype: int64}
          price: {key: Purchase Price, dtype: float32, default: 0.1}
          tags: {dtype: string, shape: [null]}
          grid: {dtype: uint8, shape: [2, 2], default: [[1, 2], [3, 4]], doc: A grid.}
          blob: {dtype: bytes, default: abc, optional: false}
          nickname: {dtype: string, optional: true}
      Order:
        features:
          id: {dtype: int64}
    """
)

EXPECTED_CANONICAL = (
    '{"doc":"Purchases.","records":[{"doc":"One customer.","features":['
    '{"default":null,"doc":null,"dtype":"int64","encoding":"list","key":"age","name":"age",'
    '"optional":false,"shape":[]},'
    '{"default":0.10000000149011612,"doc":null,"dtype":"float32","encoding":"list",'
    '"key":"Purchase Price","name":"price","optional":false,"shape":[]},'
    '{"default":null,"doc":null,"dtype":"string","encoding":"list","key":"tags","name":"tags",'
    '"optional":false,"shape":[null]},'
    '{"default":[[1,2],[3,4]],"doc":"A grid.","dtype":"uint8","encoding":"list","key":"grid",'
    '"name":"grid","optional":false,"shape":[2,2]},'
    '{"default":"YWJj","doc":null,"dtype":"bytes","encoding":"list","key":"blob","name":"blob",'
    '"optional":false,"shape":[]},'
    '{"default":null,"doc":null,"dtype":"string","encoding":"list","key":"nickname",'
    '"name":"nickname","optional":true,"shape":[]}],"name":"Customer"},'
    '{"doc":null,"features":[{"default":null,"doc":null,"dtype":"int64","encoding":"list",'
    '"key":"id","name":"id","optional":false,"shape":[]}],"name":"Order"}],"version":3}'
)

# The same schema, spelled differently: block style, comments, quoting, explicit defaults, other
# field order, a flat default, !!binary bytes, a float spelled with more digits, aliases.
REFORMATTED = textwrap.dedent(
    """\
    # A comment before everything.
    "records":
      'Customer':
        features:
          age:
            dtype: "int64"        # trailing comment
            key: age
            shape: []
            optional: false
            encoding: list
          price:
            default: 0.10000000149011612
            dtype: float32
            key: "Purchase Price"
          tags: {shape: [~], dtype: string, doc: null}
          grid:
            doc: "A grid."
            dtype: uint8
            shape: &two [2, 2]
            default: [1, 2, 3, 4]
          blob: {dtype: bytes, default: !!binary YWJj}
          nickname: {dtype: string, optional: True}
        doc: >-
          One customer.
      Order: {features: {id: {dtype: int64, shape: []}}}
    doc: 'Purchases.'
    version: 0x3
    """
)


def schema(text: str, path: str = "customer.yaml") -> SchemaIR:
    return parse_schema(text, path)


def test_canonical_form_is_compact_sorted_json_with_every_default_explicit() -> None:
    ir = schema(BASE)
    assert ir.canonical == EXPECTED_CANONICAL
    assert ir.canonical == json.dumps(
        json.loads(ir.canonical), sort_keys=True, separators=(",", ":")
    )
    assert ir.fingerprint == hashlib.sha256(EXPECTED_CANONICAL.encode()).hexdigest()
    assert fingerprint(ir.canonical) == ir.fingerprint
    assert canonical_json(ir.version, ir.doc, ir.records) == ir.canonical


def test_formatting_comments_quoting_and_explicit_defaults_do_not_change_the_fingerprint() -> None:
    base, other = schema(BASE), schema(REFORMATTED, "elsewhere/other_name.yml")
    assert other.canonical == base.canonical
    assert other.fingerprint == base.fingerprint


EDITS = [
    ("version: 3", "version: 4"),
    ("doc: Purchases.", "doc: Purchases!"),
    ("doc: One customer.", "doc: One client."),
    ("Customer:", "Client:"),
    ("age: {dtype: int64}", "years: {dtype: int64}"),
    ("age: {dtype: int64}", "age: {dtype: int32}"),
    ("age: {dtype: int64}", "age: {dtype: int64, key: Age}"),
    ("age: {dtype: int64}", "age: {dtype: int64, default: 0}"),
    ("age: {dtype: int64}", "age: {dtype: int64, optional: true}"),
    ("age: {dtype: int64}", "age: {dtype: int64, doc: Years.}"),
    ("age: {dtype: int64}", "age: {dtype: int64, shape: [1]}"),
    ("default: 0.1}", "default: 0.2}"),
    ("tags: {dtype: string, shape: [null]}", "tags: {dtype: bytes, shape: [null]}"),
    ("tags: {dtype: string, shape: [null]}", "tags: {dtype: string, shape: [null, 2]}"),
    ("[[1, 2], [3, 4]]", "[[1, 2], [4, 3]]"),
    ("default: abc,", "default: abd,"),
    ("optional: true}", "optional: false}"),
    ("id: {dtype: int64}", "id: {dtype: int64}\n      other: {dtype: int64}"),
]


@pytest.mark.parametrize(("old", "new"), EDITS)
def test_every_semantic_edit_changes_the_fingerprint(old: str, new: str) -> None:
    assert BASE.count(old) == 1
    assert schema(BASE.replace(old, new)).fingerprint != schema(BASE).fingerprint


def test_feature_and_record_order_are_part_of_the_schema() -> None:
    swapped = BASE.replace("      age: {dtype: int64}\n      price:", "      price:", 1).replace(
        "      tags:", "      age: {dtype: int64}\n      tags:", 1
    )
    assert [f.name for f in schema(swapped).records[0].features][:2] == ["price", "age"]
    assert schema(swapped).fingerprint != schema(BASE).fingerprint
    first, second = BASE.split("  Order:\n")
    records_swapped = first.replace("  Customer:\n", "  Order:\n" + second + "  Customer:\n")
    assert [r.name for r in schema(records_swapped).records] == ["Order", "Customer"]
    assert schema(records_swapped).fingerprint != schema(BASE).fingerprint


def test_special_defaults_have_a_json_spelling() -> None:
    text = textwrap.dedent(
        """\
        version: 1
        doc: "Caf\\u00e9 \\U0001F600"
        records:
          A:
            features:
              n: {dtype: float32, shape: [3], default: [.nan, .inf, -.inf]}
              z: {dtype: float32, default: -0.0}
              b: {dtype: bytes, shape: [2], default: ["", !!binary /w==]}
              s: {dtype: string, default: "é"}
        """
    )
    ir = schema(text)
    assert ir.canonical.isascii()
    value = json.loads(ir.canonical)
    assert value["doc"] == "Café 😀"
    defaults = [f["default"] for f in value["records"][0]["features"]]
    assert defaults == [["nan", "inf", "-inf"], -0.0, ["", "/w=="], "é"]
    assert math.copysign(1.0, defaults[1]) == -1.0


def test_parse_canonical_gives_back_the_same_schema() -> None:
    ir = schema(BASE)
    back = parse_canonical(ir.canonical, module="customer", source="customer.py")
    assert (back.module, back.source) == ("customer", "customer.py")
    assert (back.canonical, back.fingerprint, back.version, back.doc) == (
        ir.canonical,
        ir.fingerprint,
        ir.version,
        ir.doc,
    )
    here = Location("customer.py", 1, 1)
    assert [
        replace(r, loc=here, features=_relocated(r.features, here)) for r in ir.records
    ] == list(back.records)


def _relocated(features: tuple[FeatureIR, ...], loc: Location) -> tuple[FeatureIR, ...]:
    return tuple(replace(f, loc=loc) for f in features)


def test_parse_canonical_keeps_special_defaults() -> None:
    text = (
        "version: 1\nrecords:\n  A:\n    features:\n"
        "      n: {dtype: float32, shape: [2], default: [.nan, -.inf]}\n"
        "      b: {dtype: bytes, default: !!binary AAEC}\n"
    )
    ir = schema(text)
    n, b = parse_canonical(ir.canonical, module="a", source="a.py").records[0].features
    assert isinstance(n.default, tuple) and math.isnan(n.default[0]) and n.default[1] == -math.inf
    assert b.default == b"\x00\x01\x02"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "{",
            "a.py:1:2: invalid canonical schema: Expecting property name enclosed in double quotes",
        ),
        (
            "[]",
            "a.py:1:1: invalid canonical schema: the top level: Input should be a valid dictionary",
        ),
        (
            '{"version":1,"doc":null}',
            "a.py:1:1: invalid canonical schema: records: Field required",
        ),
        (
            json.dumps(json.loads(EXPECTED_CANONICAL), indent=1, sort_keys=True),
            "a.py:1:1: invalid canonical schema: the text is not the canonical form of the schema"
            " it describes",
        ),
        (
            EXPECTED_CANONICAL.replace('"YWJj"', '"Y!Jj"'),
            "a.py:1:1: invalid canonical schema: the bytes default 'Y!Jj' is not valid base64",
        ),
        (
            EXPECTED_CANONICAL.replace("[[1,2],[3,4]]", "[" * 150 + "]" * 150),
            "a.py:1:1: invalid canonical schema: a default nests deeper than 100 levels",
        ),
        ("[" * 100_000, "a.py:1:1: invalid canonical schema: maximum recursion depth exceeded"),
    ],
)
def test_parse_canonical_rejects_malformed_text(text: str, expected: str) -> None:
    with pytest.raises(SchemaError) as info:
        parse_canonical(text, module="a", source="a.py")
    assert str(info.value).startswith(expected)


def test_parse_canonical_checks_the_schema_like_a_schema_file() -> None:
    text = EXPECTED_CANONICAL.replace('"dtype":"int64"', '"dtype":"float64"', 1)
    with pytest.raises(SchemaError) as info:
        parse_canonical(text, module="customer", source="customer.py")
    assert str(info.value) == (
        "customer.py:1:1: dtype float64 does not fit the list encoding (float_list holds float32);"
        " use dtype float32, or 'encoding: raw' to keep float64"
    )


# -- generated schemas ---------------------------------------------------------------------------

WORDS = st.text(alphabet="abcxyzé _:#'\"", min_size=1, max_size=12)
FEATURE_NAMES = st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True).filter(
    lambda s: naming.feature_name_problem(s) is None
)
RECORD_NAMES = st.from_regex(r"[A-Z][a-zA-Z0-9]{0,5}", fullmatch=True).filter(
    lambda s: naming.record_name_problem(s) is None
)
DEFAULT_VALUES = {
    "int64": st.integers(-(2**63), 2**63 - 1),
    "uint8": st.integers(0, 255),
    "bool": st.booleans(),
    "float32": st.floats(width=32),
    "string": WORDS,
    "bytes": st.binary(max_size=4),
}


@st.composite
def feature_specs(draw: st.DrawFn) -> dict[str, Any]:
    """One feature's fields, leaving out some that have defaults."""
    dtype = draw(st.sampled_from(sorted(DEFAULT_VALUES)))
    shapes: list[list[int | None]] = [[], [2], [None], [2, 3], [None, 2]]
    shape = draw(st.sampled_from(shapes))
    feature: dict[str, Any] = {"dtype": dtype}
    if shape:
        feature["shape"] = shape
    if draw(st.booleans()):
        feature["doc"] = draw(WORDS)
    if None not in shape and draw(st.booleans()):
        size = math.prod(d for d in shape if d is not None)
        values = draw(st.lists(DEFAULT_VALUES[dtype], min_size=size, max_size=size))
        feature["default"] = values if shape else values[0]
    elif draw(st.booleans()):
        feature["optional"] = True
    return feature


@st.composite
def schema_docs(draw: st.DrawFn) -> dict[str, Any]:
    """A valid schema document as plain data."""
    records = {}
    for name in draw(st.lists(RECORD_NAMES, min_size=1, max_size=3, unique=True)):
        names = draw(st.lists(FEATURE_NAMES, min_size=1, max_size=4, unique=True))
        features = {n: draw(feature_specs()) for n in names}
        for n, feature in features.items():
            if draw(st.booleans()):
                feature["key"] = f"{n}/{draw(WORDS)}"
        records[name] = {"features": features}
    doc: dict[str, Any] = {"version": draw(st.integers(1, 10**6)), "records": records}
    if draw(st.booleans()):
        doc["doc"] = draw(WORDS)
    return doc


def _explicit(doc: dict[str, Any]) -> dict[str, Any]:
    """The same document with every feature field that has a default spelled out."""
    explicit = copy.deepcopy(doc)
    for record in explicit["records"].values():
        for name, feature in record["features"].items():
            for field, value in (("key", name), ("shape", []), ("optional", False)):
                feature.setdefault(field, value)
            feature["encoding"] = "list"
    return explicit


@settings(max_examples=60, deadline=None)
@given(schema_docs())
def test_generated_schemas_have_one_canonical_form(doc: dict[str, Any]) -> None:
    spellings = [
        yaml.safe_dump(doc, sort_keys=False, default_flow_style=False),
        yaml.safe_dump(doc, sort_keys=False, default_flow_style=True, width=60),
        yaml.safe_dump(doc, sort_keys=False, canonical=True),
        yaml.safe_dump(_explicit(doc), sort_keys=False, allow_unicode=True),
    ]
    first, *others = [schema(text, "generated.yaml") for text in spellings]
    for other in others:
        assert other.canonical == first.canonical and other.fingerprint == first.fingerprint
    back = parse_canonical(first.canonical, module="generated", source="generated.py")
    assert back.canonical == first.canonical
    assert [f.name for r in back.records for f in r.features] == [
        name for record in doc["records"].values() for name in record["features"]
    ]
