"""The canonical form of a schema, its fingerprint, and loading it back."""

from __future__ import annotations

import ast
import copy
import hashlib
import json
import math
import pathlib
import textwrap
from dataclasses import replace
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from codegen.errors import SchemaError
from codegen.generator import naming
from codegen.generator.canonical import canonical_json, fingerprint
from codegen.generator.ir import FeatureIR, Location, RecordIR, SchemaIR
from codegen.generator.load import parse_canonical, parse_schema
from support.paths import GENERATED, SCHEMAS

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


# -- SequenceExample records, raw and ragged features --------------------------------------------

SEQUENCE = textwrap.dedent(
    """\
    version: 2
    records:
      Clip:
        doc: A clip.
        context:
          title: {dtype: string, optional: true}
          image: {key: img, dtype: uint8, shape: [null, null, 3], encoding: raw}
        sequence:
          frames: {dtype: float32, shape: [null]}
          label: {dtype: int64, optional: true, doc: Per step.}
      Boxes:
        features:
          boxes: {dtype: float32, shape: [null, null, 4]}
    """
)

SEQUENCE_CANONICAL = (
    '{"doc":null,"records":[{"context":['
    '{"default":null,"doc":null,"dtype":"string","encoding":"list","key":"title","name":"title",'
    '"optional":true,"shape":[]},'
    '{"default":null,"doc":null,"dtype":"uint8","encoding":"raw","key":"img","name":"image",'
    '"optional":false,"shape":[null,null,3]}],'
    '"doc":"A clip.","kind":"sequence","name":"Clip","sequence":['
    '{"default":null,"doc":null,"dtype":"float32","encoding":"list","key":"frames",'
    '"name":"frames","optional":false,"shape":[null]},'
    '{"default":null,"doc":"Per step.","dtype":"int64","encoding":"list","key":"label",'
    '"name":"label","optional":true,"shape":[]}]},'
    '{"doc":null,"features":[{"default":null,"doc":null,"dtype":"float32","encoding":"list",'
    '"key":"boxes","name":"boxes","optional":false,"shape":[null,null,4]}],"name":"Boxes"}],'
    '"version":2}'
)


def test_sequence_records_and_raw_features_have_a_canonical_form() -> None:
    ir = schema(SEQUENCE)
    assert ir.canonical == SEQUENCE_CANONICAL
    assert ir.fingerprint == hashlib.sha256(SEQUENCE_CANONICAL.encode()).hexdigest()


def test_sequence_spellings_do_not_change_the_fingerprint() -> None:
    # The same record with its sections in the other order, explicit list encodings, a null
    # context on a record without one.
    reordered = textwrap.dedent(
        """\
        version: 2
        records:
          Clip:
            sequence:
              frames: {dtype: float32, shape: [~], encoding: list}
              label: {dtype: int64, optional: true, doc: Per step., shape: []}
            doc: A clip.
            context:
              title: {dtype: string, optional: true, encoding: list}
              image: {encoding: raw, key: img, dtype: uint8, shape: [null, null, 3]}
          Boxes: {features: {boxes: {dtype: float32, shape: [null, null, 4], optional: false}}}
        """
    )
    assert schema(reordered).fingerprint == schema(SEQUENCE).fingerprint
    only_sequence = "version: 1\nrecords:\n  A:\n    sequence: {s: {dtype: int64}}\n"
    null_context = "version: 1\nrecords:\n  A:\n    context:\n    sequence: {s: {dtype: int64}}\n"
    assert schema(null_context).canonical == schema(only_sequence).canonical
    assert '"context":[],' in schema(only_sequence).canonical


SEQUENCE_EDITS = [
    ("      frames: {dtype: float32, shape: [null]}", "      frames: {dtype: float32, shape: [2]}"),
    (
        "  label: {dtype: int64, optional: true, doc: Per step.}",
        "  label: {dtype: int64, doc: Per step.}",
    ),
    ("shape: [null, null, 3], encoding: raw}", "shape: [null, null, 3]}"),
    ("shape: [null, null, 3], encoding: raw}", "shape: [null, 4, 3], encoding: raw}"),
    ("dtype: uint8, shape: [null, null, 3]", "dtype: int8, shape: [null, null, 3]"),
    ("shape: [null, null, 4]}", "shape: [null, 4]}"),
    (
        "      title: {dtype: string, optional: true}\n",
        "",
    ),
    (
        "    sequence:\n      frames: {dtype: float32, shape: [null]}\n",
        "      frames: {dtype: float32, shape: [null]}\n    sequence:\n",
    ),
    ("      boxes: {dtype: float32, shape: [null, null, 4]}", "      boxes: {dtype: float32}"),
]


@pytest.mark.parametrize(("old", "new"), SEQUENCE_EDITS)
def test_every_semantic_edit_of_a_sequence_schema_changes_the_fingerprint(
    old: str, new: str
) -> None:
    assert SEQUENCE.count(old) == 1
    assert schema(SEQUENCE.replace(old, new)).fingerprint != schema(SEQUENCE).fingerprint


def test_the_record_kind_is_part_of_the_schema() -> None:
    example = "version: 1\nrecords:\n  A:\n    features: {s: {dtype: int64}}\n"
    sequence = "version: 1\nrecords:\n  A:\n    sequence: {s: {dtype: int64}}\n"
    assert schema(example).fingerprint != schema(sequence).fingerprint


def test_parse_canonical_gives_back_sequence_records() -> None:
    ir = schema(SEQUENCE)
    back = parse_canonical(ir.canonical, module="clip", source="clip.py")
    assert back.canonical == ir.canonical
    here = Location("clip.py", 1, 1)
    assert [_relocated_record(r, here) for r in ir.records] == list(back.records)
    clip = back.records[0]
    assert clip.kind == "sequence" and [f.codec.codec for f in clip.all_features] == [
        "TextScalar",
        "RawTensor",
        "SequenceRagged",
        "SequenceTensor",
    ]


def _relocated_record(r: RecordIR, loc: Location) -> RecordIR:
    return replace(
        r,
        loc=loc,
        features=_relocated(r.features, loc),
        sequence=tuple(replace(f, loc=loc) for f in r.sequence),
    )


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (
            '"kind":"sequence"',
            '"kind":"example"',
            "invalid canonical schema: records.0.kind: Input should be 'sequence'",
        ),
        (
            '"kind":"sequence",',
            "",
            "invalid canonical schema: the text is not the canonical form of the schema it"
            " describes",
        ),
        (
            '"context":[',
            '"features":[',
            "record 'Clip' has both 'features' (a tf.train.Example) and 'sequence' (a"
            " tf.train.SequenceExample); give one kind",
        ),
        (
            '"encoding":"raw"',
            '"encoding":"packed"',
            "'encoding' of feature 'image' must be 'list', 'raw', 'jpeg', 'png' or 'image', got 'packed'",
        ),
        (
            '"sequence":[{"default":null,"doc":null,"dtype":"float32"',
            '"sequence":[{"default":1.0,"doc":null,"dtype":"float32"',
            "TensorFlow rejects a default on a sequence feature",
        ),
    ],
)
def test_parse_canonical_rejects_altered_sequence_forms(old: str, new: str, expected: str) -> None:
    assert SEQUENCE_CANONICAL.count(old) == 1
    with pytest.raises(SchemaError) as info:
        parse_canonical(SEQUENCE_CANONICAL.replace(old, new), module="c", source="c.py")
    assert str(info.value).startswith(f"c.py:1:1: {expected}")


@pytest.mark.parametrize("path", sorted(SCHEMAS.glob("*.yaml")), ids=lambda p: p.stem)
def test_committed_modules_keep_their_canonical_form_and_fingerprint(path: pathlib.Path) -> None:
    module = GENERATED / f"{path.stem}.py"
    call = next(
        node.value
        for node in ast.parse(module.read_text(encoding="utf-8")).body
        if isinstance(node, ast.Assign)
        and isinstance(node.targets[0], ast.Name)
        and node.targets[0].id == "SCHEMA"
        and isinstance(node.value, ast.Call)
    )
    constants = {k.arg: ast.literal_eval(k.value) for k in call.keywords}
    ir = schema(path.read_text(encoding="utf-8"), str(path))
    assert (ir.canonical, ir.fingerprint) == (constants["canonical"], constants["fingerprint"])
    assert (
        parse_canonical(ir.canonical, module=path.stem, source=module.name).canonical
        == ir.canonical
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


RAW_DTYPES = ["int64", "uint8", "uint64", "float32", "float64", "float16"]
LIST_SHAPES: list[list[int | None]] = [[], [2], [None], [2, 3], [None, 2], [None, None, 2]]
RAW_SHAPES: list[list[int | None]] = [[2], [None], [2, None, 3], [None, None]]
STEP_SHAPES: list[list[int | None]] = [[], [2], [None], [None, 2]]


@st.composite
def feature_specs(draw: st.DrawFn, section: str) -> dict[str, Any]:
    """One feature of ``section`` (features, context or sequence), leaving out some fields that
    have defaults."""
    raw = section != "sequence" and draw(st.booleans())
    if raw:
        dtype = draw(st.sampled_from(RAW_DTYPES))
        shape = draw(st.sampled_from(RAW_SHAPES))
    else:
        dtype = draw(st.sampled_from(sorted(DEFAULT_VALUES)))
        shape = draw(st.sampled_from(STEP_SHAPES if section == "sequence" else LIST_SHAPES))
    feature: dict[str, Any] = {"dtype": dtype}
    if raw:
        feature["encoding"] = "raw"
    if shape:
        feature["shape"] = shape
    if draw(st.booleans()):
        feature["doc"] = draw(WORDS)
    if section != "sequence" and not raw and None not in shape and draw(st.booleans()):
        size = math.prod(d for d in shape if d is not None)
        values = draw(st.lists(DEFAULT_VALUES[dtype], min_size=size, max_size=size))
        feature["default"] = values if shape else values[0]
    elif draw(st.booleans()):
        feature["optional"] = True
    return feature


@st.composite
def schema_docs(draw: st.DrawFn) -> dict[str, Any]:
    """A valid schema document as plain data: Example and SequenceExample records."""
    records = {}
    for name in draw(st.lists(RECORD_NAMES, min_size=1, max_size=3, unique=True)):
        names = draw(st.lists(FEATURE_NAMES, min_size=1, max_size=5, unique=True))
        if draw(st.booleans()):
            sections = {"features": names}
        else:
            split = draw(st.integers(0, len(names) - 1))
            sections = {"context": names[:split], "sequence": names[split:]}
        record: dict[str, Any] = {}
        for section, section_names in sections.items():
            if section_names:
                features = {n: draw(feature_specs(section)) for n in section_names}
                for n, feature in features.items():
                    if draw(st.booleans()):
                        feature["key"] = f"{n}/{draw(WORDS)}"
                record[section] = features
        records[name] = record
    doc: dict[str, Any] = {"version": draw(st.integers(1, 10**6)), "records": records}
    if draw(st.booleans()):
        doc["doc"] = draw(WORDS)
    return doc


def _explicit(doc: dict[str, Any]) -> dict[str, Any]:
    """The same document with every feature field that has a default spelled out."""
    explicit = copy.deepcopy(doc)
    for record in explicit["records"].values():
        for features in record.values():
            for name, feature in features.items():
                for field, value in (
                    ("key", name),
                    ("shape", []),
                    ("optional", False),
                    ("encoding", "list"),
                ):
                    feature.setdefault(field, value)
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
    assert [[f.name for f in r.all_features] for r in back.records] == [
        [name for features in record.values() for name in features]
        for record in doc["records"].values()
    ]
    assert [r.kind for r in back.records] == [
        "example" if "features" in record else "sequence" for record in doc["records"].values()
    ]


LAYOUTS = textwrap.dedent(
    """\
    version: 1
    records:
      A:
        features:
          image: {dtype: uint8, shape: [null, null, 3], encoding: raw}
          tokens: {dtype: int64, shape: [null, null]}
    """
)


def test_companion_layouts_spelled_as_the_default_do_not_change_the_fingerprint() -> None:
    spelled = LAYOUTS.replace("encoding: raw}", "encoding: raw, shape_from: {key: image/shape}}")
    spelled = spelled.replace(
        "[null, null]}", "[null, null], row_lengths_from: [tokens/row_lengths_1]}"
    )
    assert schema(spelled).canonical == schema(LAYOUTS).canonical
    assert "shape_from" not in schema(LAYOUTS).canonical


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("encoding: raw}", "encoding: raw, shape_from: {key: shape}}"),
        ("encoding: raw}", "encoding: raw, shape_from: {key: image/shape, dtype: int32}}"),
        ("encoding: raw}", "encoding: raw, shape_from: {key: shape, dtype: int32, encoding: raw}}"),
        ("encoding: raw}", "encoding: raw, shape_from: [image/height, image/width]}"),
        ("[null, null]}", "[null, null], row_lengths_from: [tokens/ragged_row_lengths_0]}"),
    ],
)
def test_declared_companion_layouts_are_part_of_the_schema_and_read_back(
    old: str, new: str
) -> None:
    ir = schema(LAYOUTS.replace(old, new))
    assert ir.fingerprint != schema(LAYOUTS).fingerprint
    back = parse_canonical(ir.canonical, module="a", source="a.py")
    assert back.canonical == ir.canonical
    assert [f.companion_keys for f in back.records[0].features] == [
        f.companion_keys for f in ir.records[0].features
    ]
    assert [(f.shape_from, f.row_lengths_from) for f in back.records[0].features] == [
        (f.shape_from, f.row_lengths_from) for f in ir.records[0].features
    ]
