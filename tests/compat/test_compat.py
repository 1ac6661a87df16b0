"""Every row of the compatibility table, proved with generated modules.

One OLD and one NEW schema hold one record per case. Both are generated and imported; records
written by each module are decoded by the other, and each direction must read (decode without
error, shared attributes keep the written values, absent ones read as documented) exactly when
the engine's classification says so.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from codegen.compat import (
    RULES,
    Change,
    ChangeKind,
    Classification,
    Mode,
    compare_records,
    compare_schemas,
    markdown_table,
    overall,
)
from codegen.errors import RecordError
from codegen.generator.load import parse_schema
from codegen.generator.render import render

K, C = ChangeKind, Classification


@dataclass(frozen=True)
class Case:
    """One record in both schemas: its OLD and NEW features (YAML flow mappings by name), the
    changes the engine must report for it, and values each side writes (besides ``id``)."""

    rule: str
    old: dict[str, str]
    new: dict[str, str]
    changes: list[tuple[ChangeKind, Classification]]
    old_values: list[dict[str, Any]]
    new_values: list[dict[str, Any]]
    renames: dict[str, str] = field(default_factory=dict)  # OLD attribute -> NEW attribute
    variant: str = ""
    steps: frozenset[str] = frozenset()  # per-step features: a SequenceExample on that side
    old_is_sequence: bool = False
    new_is_sequence: bool = False

    @property
    def record(self) -> str:
        return "".join(part.title() for part in f"{self.rule}_{self.variant}".split("_") if part)


I64 = "{dtype: int64}"

CASES = [
    Case("version_changed", {"v": I64}, {"v": I64}, [], [{"v": 1}], [{"v": 2}]),
    Case(
        "doc_changed",
        {"v": "{dtype: int64, doc: Old.}"},
        {"v": "{dtype: int64, doc: New.}"},
        [(K.DOC_CHANGED, C.FULL)],
        [{"v": 1}],
        [{"v": 2}],
    ),
    Case(
        "feature_added_required", {}, {"v": I64}, [(K.FEATURE_ADDED, C.FORWARD)], [{}], [{"v": 5}]
    ),
    Case(
        "feature_added_default",
        {},
        {"v": "{dtype: int64, default: 7}"},
        [(K.FEATURE_ADDED, C.FULL)],
        [{}],
        [{"v": 5}],
    ),
    Case(
        "feature_added_optional",
        {},
        {"v": "{dtype: int64, optional: true}"},
        [(K.FEATURE_ADDED, C.FULL)],
        [{}],
        [{"v": 5}, {"v": None}],
    ),
    Case(
        "feature_added_variable",
        {},
        {"v": "{dtype: float32, shape: [null]}"},
        [(K.FEATURE_ADDED, C.FULL)],
        [{}],
        [{"v": [1.5, 2.5]}],
    ),
    Case(
        "feature_removed_required",
        {"v": I64},
        {},
        [(K.FEATURE_REMOVED, C.BACKWARD)],
        [{"v": 5}],
        [{}],
    ),
    Case(
        "feature_removed_default",
        {"v": "{dtype: int64, default: 7}"},
        {},
        [(K.FEATURE_REMOVED, C.FULL)],
        [{"v": 5}],
        [{}],
    ),
    Case(
        "feature_removed_optional",
        {"v": "{dtype: string, optional: true}"},
        {},
        [(K.FEATURE_REMOVED, C.FULL)],
        [{"v": "x"}, {"v": None}],
        [{}],
    ),
    Case(
        "feature_removed_variable",
        {"v": "{dtype: bytes, shape: [null]}"},
        {},
        [(K.FEATURE_REMOVED, C.FULL)],
        [{"v": [b"a", b"b"]}],
        [{}],
    ),
    Case(
        "feature_renamed",
        {"a": "{key: k, dtype: int64}"},
        {"b": "{key: k, dtype: int64}"},
        [(K.FEATURE_RENAMED, C.FULL)],
        [{"a": 3}],
        [{"b": 4}],
        renames={"a": "b"},
    ),
    Case(
        "key_changed",
        {"v": "{key: ka, dtype: int64}"},
        {"v": "{key: kb, dtype: int64}"},
        [(K.KEY_CHANGED, C.BREAKING)],
        [{"v": 1}],
        [{"v": 2}],
    ),
    Case(
        "key_changed",
        {"v": "{key: ka, dtype: int64, optional: true}"},
        {"v": "{key: kb, dtype: int64, optional: true}"},
        [(K.KEY_CHANGED, C.BREAKING)],
        [{"v": 1}],
        [{"v": 2}],
        variant="optional",  # decodes both ways, but every value is lost
    ),
    Case(
        "key_reused",
        {"a": "{key: ka, dtype: int64}"},
        {"a": "{key: kb, dtype: int64}", "c": "{key: ka, dtype: int64}"},
        [(K.KEY_CHANGED, C.BREAKING), (K.KEY_REUSED, C.BREAKING)],
        [{"a": 1}],
        [{"a": 1, "c": 2}],
    ),
    Case(
        "dtype_widened",
        {"v": "{dtype: int32}"},
        {"v": I64},
        [(K.DTYPE_WIDENED, C.BACKWARD)],
        [{"v": -(2**31)}, {"v": 2**31 - 1}],
        [{"v": 2**40}],
        variant="int",
    ),
    Case(
        "dtype_widened",
        {"v": "{dtype: uint8, shape: [2]}"},
        {"v": "{dtype: int16, shape: [2]}"},
        [(K.DTYPE_WIDENED, C.BACKWARD)],
        [{"v": [0, 255]}],
        [{"v": [-5, 300]}],
        variant="unsigned",
    ),
    Case(
        "dtype_widened",
        {"v": "{dtype: bool}"},
        {"v": "{dtype: int8}"},
        [(K.DTYPE_WIDENED, C.BACKWARD)],
        [{"v": True}, {"v": False}],
        [{"v": 5}],
        variant="bool",
    ),
    Case(
        "dtype_widened",
        {"v": "{dtype: string}"},
        {"v": "{dtype: bytes}"},
        [(K.DTYPE_WIDENED, C.BACKWARD)],
        [{"v": "h\u00e9"}],
        [{"v": b"\xff"}],
        variant="text",
    ),
    Case(
        "dtype_narrowed",
        {"v": I64},
        {"v": "{dtype: int32}"},
        [(K.DTYPE_NARROWED, C.FORWARD)],
        [{"v": 2**40}],
        [{"v": 5}],
        variant="int",
    ),
    Case(
        "dtype_narrowed",
        {"v": "{dtype: bytes, shape: [null]}"},
        {"v": "{dtype: string, shape: [null]}"},
        [(K.DTYPE_NARROWED, C.FORWARD)],
        [{"v": [b"ok", b"\xff"]}],
        [{"v": ["ok"]}],
        variant="text",
    ),
    Case(
        "dtype_narrowed",
        {"v": "{dtype: int8}"},
        {"v": "{dtype: bool}"},
        [(K.DTYPE_NARROWED, C.FORWARD)],
        [{"v": 2}],
        [{"v": True}],
        variant="bool",
    ),
    Case(
        "dtype_changed",
        {"v": "{dtype: int8}"},
        {"v": "{dtype: uint8}"},
        [(K.DTYPE_CHANGED, C.BREAKING)],
        [{"v": -1}],
        [{"v": 200}],
    ),
    Case(
        "dtype_kind_changed",
        {"v": I64},
        {"v": "{dtype: float32}"},
        [(K.DTYPE_KIND_CHANGED, C.BREAKING)],
        [{"v": 1}],
        [{"v": 1.5}],
        variant="float",
    ),
    Case(
        "dtype_kind_changed",
        {"v": "{dtype: string, shape: [null]}"},
        {"v": "{dtype: int64, shape: [null]}"},
        [(K.DTYPE_KIND_CHANGED, C.BREAKING)],
        [{"v": []}],  # even an empty list has its list kind
        [{"v": []}],
        variant="text",
    ),
    Case(
        "shape_same_count",
        {"v": "{dtype: int64, shape: [6]}"},
        {"v": "{dtype: int64, shape: [2, 3]}"},
        [(K.SHAPE_CHANGED, C.FULL)],
        [{"v": [1, 2, 3, 4, 5, 6]}],
        [{"v": [[6, 5, 4], [3, 2, 1]]}],
    ),
    Case(
        "shape_other_count",
        {"v": "{dtype: float32, shape: [3]}"},
        {"v": "{dtype: float32, shape: [4]}"},
        [(K.SHAPE_CHANGED, C.BREAKING)],
        [{"v": [1, 2, 3]}],
        [{"v": [1, 2, 3, 4]}],
    ),
    Case(
        "shape_row_divides",
        {"v": "{dtype: int64, shape: [null, 6]}"},
        {"v": "{dtype: int64, shape: [null, 3]}"},
        [(K.SHAPE_CHANGED, C.BACKWARD)],
        [{"v": np.arange(12).reshape(2, 6)}, {"v": []}],
        [{"v": np.arange(3).reshape(1, 3)}],
    ),
    Case(
        "shape_row_multiple",
        {"v": "{dtype: int64, shape: [null, 3]}"},
        {"v": "{dtype: int64, shape: [null, 6]}"},
        [(K.SHAPE_CHANGED, C.FORWARD)],
        [{"v": np.arange(3).reshape(1, 3)}],
        [{"v": np.arange(12).reshape(2, 6)}],
    ),
    Case(
        "shape_row_other",
        {"v": "{dtype: string, shape: [null, 2]}"},
        {"v": "{dtype: string, shape: [null, 3]}"},
        [(K.SHAPE_CHANGED, C.BREAKING)],
        [{"v": [["a", "b"]]}],
        [{"v": [["a", "b", "c"]]}],
    ),
    Case(
        "made_variable",
        {"v": "{dtype: int64, shape: [3]}"},
        {"v": "{dtype: int64, shape: [null]}"},
        [(K.MADE_VARIABLE, C.BACKWARD)],
        [{"v": [1, 2, 3]}],
        [{"v": [1, 2]}],
    ),
    Case(
        "made_variable",
        {"v": "{dtype: string}"},
        {"v": "{dtype: string, shape: [null]}"},
        [(K.MADE_VARIABLE, C.BACKWARD)],
        [{"v": "a"}],
        [{"v": ["a", "b"]}],
        variant="scalar",
    ),
    Case(
        "made_variable_misfit",
        {"v": "{dtype: int64, shape: [3]}"},
        {"v": "{dtype: int64, shape: [null, 2]}"},
        [(K.MADE_VARIABLE, C.BREAKING)],
        [{"v": [1, 2, 3]}],
        [{"v": [[1, 2]]}],
    ),
    Case(
        "made_fixed",
        {"v": "{dtype: float32, shape: [null]}"},
        {"v": "{dtype: float32, shape: [3]}"},
        [(K.MADE_FIXED, C.FORWARD)],
        [{"v": [1, 2]}],
        [{"v": [1, 2, 3]}],
    ),
    Case(
        "made_fixed_misfit",
        {"v": "{dtype: int64, shape: [null, 2]}"},
        {"v": "{dtype: int64, shape: [3]}"},
        [(K.MADE_FIXED, C.BREAKING)],
        [{"v": [[1, 2]]}],
        [{"v": [1, 2, 3]}],
    ),
    Case(
        "default_added",
        {"v": I64},
        {"v": "{dtype: int64, default: 3}"},
        [(K.DEFAULT_ADDED, C.FULL)],
        [{"v": 1}],
        [{"v": 2}],
    ),
    Case(
        "default_removed",
        {"v": "{dtype: string, default: x}"},
        {"v": "{dtype: string}"},
        [(K.DEFAULT_REMOVED, C.FULL)],
        [{"v": "a"}],
        [{"v": "b"}],
    ),
    Case(
        "default_changed",
        {"v": "{dtype: float32, shape: [2], default: [1, 2]}"},
        {"v": "{dtype: float32, shape: [2], default: [3, 4]}"},
        [(K.DEFAULT_CHANGED, C.FULL)],
        [{"v": [5, 6]}],
        [{"v": [7, 8]}],
    ),
    Case(
        "made_optional",
        {"v": I64},
        {"v": "{dtype: int64, optional: true}"},
        [(K.MADE_OPTIONAL, C.BACKWARD)],
        [{"v": 1}],
        [{"v": 2}, {"v": None}],
    ),
    Case(
        "made_optional_default",
        {"v": "{dtype: int64, default: 3}"},
        {"v": "{dtype: int64, optional: true}"},
        [(K.MADE_OPTIONAL, C.FULL), (K.DEFAULT_REMOVED, C.FULL)],
        [{"v": 1}],
        [{"v": 2}, {"v": None}],
    ),
    Case(
        "made_optional_variable",
        {"v": "{dtype: int64, shape: [null]}"},
        {"v": "{dtype: int64, shape: [null], optional: true}"},
        [(K.MADE_OPTIONAL, C.FULL)],
        [{"v": [1]}],
        [{"v": [2, 3]}, {"v": None}],
    ),
    Case(
        "made_required",
        {"v": "{dtype: bytes, optional: true}"},
        {"v": "{dtype: bytes}"},
        [(K.MADE_REQUIRED, C.FORWARD)],
        [{"v": b"a"}, {"v": None}],
        [{"v": b"b"}],
    ),
    Case(
        "made_required_default",
        {"v": "{dtype: int64, optional: true}"},
        {"v": "{dtype: int64, default: 3}"},
        [(K.MADE_REQUIRED, C.FULL), (K.DEFAULT_ADDED, C.FULL)],
        [{"v": 1}, {"v": None}],
        [{"v": 2}],
    ),
    Case(
        "made_required_variable",
        {"v": "{dtype: string, shape: [null], optional: true}"},
        {"v": "{dtype: string, shape: [null]}"},
        [(K.MADE_REQUIRED, C.FULL)],
        [{"v": ["a"]}, {"v": None}],
        [{"v": ["b", "c"]}],
    ),
    Case(
        "dtype_changed",
        {"v": "{dtype: int32, shape: [2], encoding: raw}"},
        {"v": "{dtype: uint32, shape: [2], encoding: raw}"},
        [(K.DTYPE_CHANGED, C.BREAKING)],
        [{"v": [-1, 0]}],  # the same bytes, another value
        [{"v": [4_000_000_000, 0]}],
        variant="raw",
    ),
    Case(
        "encoding_changed",
        {"v": "{dtype: int32, shape: [2]}"},
        {"v": "{dtype: int32, shape: [2], encoding: raw}"},
        [(K.ENCODING_CHANGED, C.BREAKING)],
        [{"v": [1, 2]}],
        [{"v": [1, 2]}],
    ),
    Case(
        "layout_changed",
        {"v": "{dtype: uint8, shape: [null, 3], encoding: raw}"},
        {
            "v": "{dtype: uint8, shape: [null, 3], encoding: raw, shape_from: {key: s, dtype: int32, encoding: raw}}"
        },
        [(K.LAYOUT_CHANGED, C.BREAKING)],
        [{"v": np.ones((2, 3), np.uint8)}],
        [{"v": np.ones((1, 3), np.uint8)}],
    ),
    Case(
        "layout_changed",
        {"v": "{dtype: int64, shape: [null, null]}"},
        {"v": "{dtype: int64, shape: [null, null], row_lengths_from: [v/ragged_row_lengths_0]}"},
        [(K.LAYOUT_CHANGED, C.BREAKING)],
        [{"v": [[1], [2, 3]]}],
        [{"v": [[4, 5]]}],
        variant="ragged",
    ),
    Case(
        "quality_changed",
        {"v": "{dtype: uint8, shape: [2, 2, 3], encoding: jpeg}"},
        {"v": "{dtype: uint8, shape: [2, 2, 3], encoding: jpeg, quality: 100}"},
        [(K.QUALITY_CHANGED, C.FULL)],
        [{"v": np.full((2, 2, 3), 128, np.uint8)}],
        [{"v": np.full((2, 2, 3), 64, np.uint8)}],
    ),
    Case(
        "raw_same_size",
        {"v": "{dtype: float64, shape: [2, 2], encoding: raw}"},
        {"v": "{dtype: float64, shape: [4], encoding: raw}"},
        [(K.SHAPE_CHANGED, C.FULL)],
        [{"v": np.arange(4.0).reshape(2, 2)}],
        [{"v": np.arange(4.0)}],
    ),
    Case(
        "raw_relaxed",
        {"v": "{dtype: uint64, shape: [null, 3], encoding: raw}"},
        {"v": "{dtype: uint64, shape: [null, null], encoding: raw}"},
        [(K.SHAPE_CHANGED, C.BACKWARD)],
        [{"v": np.ones((2, 3), np.uint64)}],
        [{"v": np.ones((1, 2), np.uint64)}],
    ),
    Case(
        "raw_fixed_variable",
        {"v": "{dtype: float16, shape: [4], encoding: raw}"},
        {"v": "{dtype: float16, shape: [null], encoding: raw}"},
        [(K.MADE_VARIABLE, C.BREAKING)],
        [{"v": np.arange(4.0)}],  # no stored shape for the new reader
        [{"v": np.arange(3.0)}],  # a byte count the old reader refuses
    ),
    Case(
        "ragged_same_row",
        {"v": "{dtype: int64, shape: [null, null, 6]}"},
        {"v": "{dtype: int64, shape: [null, null, 2, 3]}"},
        [(K.SHAPE_CHANGED, C.FULL)],
        [{"v": [np.arange(12).reshape(2, 6), np.arange(6).reshape(1, 6)]}],
        [{"v": [np.arange(6).reshape(1, 2, 3)]}],
    ),
    Case(
        "ragged_to_rows",
        {"v": "{dtype: string, shape: [null, null]}"},
        {"v": "{dtype: string, shape: [null]}"},
        [(K.SHAPE_CHANGED, C.BACKWARD)],
        [{"v": [["a", "b"], ["c"]]}, {"v": []}],
        [{"v": ["a", "b", "c"]}],
    ),
    Case(
        "ragged_depth",
        {"v": "{dtype: int64, shape: [null, null]}"},
        {"v": "{dtype: int64, shape: [null, null, null]}"},
        [(K.SHAPE_CHANGED, C.BREAKING)],
        [{"v": [np.array([1]), np.array([2, 3])]}],
        [{"v": [[np.array([1, 2])]]}],
    ),
    Case(
        "step_shape",
        {"v": "{dtype: int64, shape: [3]}"},
        {"v": "{dtype: int64, shape: [null]}"},
        [(K.MADE_VARIABLE, C.BACKWARD)],
        [{"v": [[1, 2, 3], [4, 5, 6]]}],
        [{"v": [np.array([1, 2])]}],
        steps=frozenset({"v"}),
        old_is_sequence=True,
        new_is_sequence=True,
    ),
    Case(
        "record_kind_changed",
        {},
        {"steps": "{dtype: float32, optional: true}"},
        [(K.RECORD_KIND_CHANGED, C.FULL), (K.FEATURE_ADDED, C.FULL)],
        [{}],
        [{"steps": [1.5, 2.5]}, {"steps": []}],
        steps=frozenset({"steps"}),
        new_is_sequence=True,
    ),
    Case(
        "feature_moved",
        {"v": I64},
        {"v": I64},
        [(K.RECORD_KIND_CHANGED, C.FULL), (K.FEATURE_MOVED, C.BREAKING)],
        [{"v": 1}],
        [{"v": [1, 2]}],
        steps=frozenset({"v"}),
        new_is_sequence=True,
    ),
]

# Records only one side has, or that change their name (their features keep the records apart).
RECORD_ONLY_OLD = {"RecordRemoved": {"removed_thing": "{dtype: string}"}}
RECORD_ONLY_NEW = {"RecordAdded": {"added_thing": "{dtype: float32}"}}
RECORD_RENAMED = ("RecordRenamedOld", "RecordRenamedNew", {"x": "{dtype: string, shape: [2]}"})

PROVED_ELSEWHERE = {
    "record_added": "test_record_added_is_backward",
    "record_removed": "test_record_removed_is_forward",
    "record_renamed": "test_record_renamed_is_full",
    "schema_removed": "tests/cli/test_diff.py::test_against_reports_deleted_schemas_as_breaking",
    "field_changed": "test_fields_without_a_rule_are_breaking",
}

Layout = tuple[dict[str, str], frozenset[str]]
"""A record's features, and which of them are per-step (the record is then a SequenceExample)."""


def _schema_text(version: int, records: dict[str, Layout]) -> str:
    lines = [f"version: {version}", "records:"]
    for name, (features, steps) in records.items():
        context = {n: spec for n, spec in features.items() if n not in steps}
        lines += [f"  {name}:", "    context:" if steps else "    features:", f"      id: {I64}"]
        lines += [f"      {feature}: {spec}" for feature, spec in context.items()]
        if steps:
            lines.append("    sequence:")
            lines += [f"      {n}: {spec}" for n, spec in features.items() if n in steps]
    return "\n".join(lines) + "\n"


def _layout(features: dict[str, str], case: Case, sequence: bool) -> Layout:
    return features, case.steps if sequence else frozenset()


def _import(tmp: Path, name: str, text: str) -> ModuleType:
    schema = parse_schema(text, f"{name}.yaml")
    path = tmp / f"{name}.py"
    path.write_text(render(schema, command=f"tfr-gen {name}.yaml"))
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


NO_STEPS: frozenset[str] = frozenset()
OLD_RECORDS = (
    {c.record: _layout(c.old, c, c.old_is_sequence) for c in CASES}
    | {name: (features, NO_STEPS) for name, features in RECORD_ONLY_OLD.items()}
    | {RECORD_RENAMED[0]: (RECORD_RENAMED[2], NO_STEPS)}
)
NEW_RECORDS = (
    {c.record: _layout(c.new, c, c.new_is_sequence) for c in CASES}
    | {name: (features, NO_STEPS) for name, features in RECORD_ONLY_NEW.items()}
    | {RECORD_RENAMED[1]: (RECORD_RENAMED[2], NO_STEPS)}
)
OLD_TEXT = _schema_text(1, OLD_RECORDS)
NEW_TEXT = _schema_text(2, NEW_RECORDS)


@pytest.fixture(scope="module")
def modules(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ModuleType, ModuleType]]:
    tmp = tmp_path_factory.mktemp("compat")
    pair = (_import(tmp, "compat_rows_old", OLD_TEXT), _import(tmp, "compat_rows_new", NEW_TEXT))
    yield pair
    for module in pair:
        del sys.modules[module.__name__]


@pytest.fixture(scope="module")
def changes() -> list[Change]:
    old = parse_schema(OLD_TEXT, "compat_rows_old.yaml")
    new = parse_schema(NEW_TEXT, "compat_rows_new.yaml")
    return compare_schemas(json.loads(old.canonical), json.loads(new.canonical))


def _under(changes: list[Change], path: str) -> list[Change]:
    return [c for c in changes if c.path == path or c.path.startswith(path + ".")]


# --- reading one side's records with the other side's class ---------------------------------


def _flat(value: object) -> list[object]:
    """A value as its flat list of scalars, text as UTF-8 and bools as ints (the wire's view)."""
    if isinstance(value, np.ndarray):
        return _flat(value.tolist())
    if isinstance(value, list | tuple):
        return [item for part in value for item in _flat(part)]
    if isinstance(value, str):
        return [value.encode()]
    if isinstance(value, bool):
        return [int(value)]
    return [value]


def _absent_ok(info: Any, value: object, steps: frozenset[str]) -> bool:
    """Whether ``value`` is what a reader documents for an absent feature: default, None, no rows
    (zero steps for the per-step features named in ``steps``)."""
    if info.default is not None:
        return _flat(value) == _flat(info.default)
    if info.optional and info.name not in steps:
        return value is None
    return value is not None and len(value) == 0  # type: ignore[arg-type]


def reads(
    writer: Any,
    reader: Any,
    samples: list[dict[str, Any]],
    renames: dict[str, str],
    steps: frozenset[str] = frozenset(),
) -> bool:
    """Whether ``reader`` reads every sample ``writer`` writes: it decodes, every shared attribute
    has the written value, and every attribute the writer left out reads as documented."""
    reader_info = {info.name: info for info in reader.feature_spec()}
    for values in samples:
        written = writer(id=7, **values)
        try:
            read = reader.decode(written.encode())
        except RecordError:
            return False
        seen = set()
        for info in writer.feature_spec():
            name = renames.get(info.name, info.name)
            if name not in reader_info:
                continue
            seen.add(name)
            value = getattr(written, info.name)
            got = getattr(read, name)
            if value is None:
                if not _absent_ok(reader_info[name], got, steps):
                    return False
            elif _flat(value) != _flat(got):
                return False
        for name, info in reader_info.items():
            if name not in seen and not _absent_ok(info, getattr(read, name), steps):
                return False
    return True


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.record)
def test_rows_classify_and_read_as_the_table_says(
    case: Case, modules: tuple[ModuleType, ModuleType], changes: list[Change]
) -> None:
    found = _under(changes, f"records.{case.record}")
    assert sorted((c.kind, c.classification) for c in found) == sorted(case.changes), found
    rule = next(r for r in RULES if r.id == case.rule)
    if rule.kind is not K.VERSION_CHANGED:  # reported at the top: see the next test
        assert (rule.kind, C(rule.classification)) in case.changes
    expected = overall(found)
    old, new = (getattr(m, case.record) for m in modules)
    back = {v: k for k, v in case.renames.items()}
    steps = case.steps
    assert reads(old, new, case.old_values, case.renames, steps) is expected.backward, (
        "new reads old"
    )
    assert reads(new, old, case.new_values, back, steps) is expected.forward, "old reads new"


def test_version_change_is_reported_once_at_the_top(changes: list[Change]) -> None:
    top = [c for c in changes if not c.path.startswith("records.")]
    assert [(c.path, c.kind, c.classification) for c in top] == [
        ("version", K.VERSION_CHANGED, C.FULL)
    ]
    assert "from 1 to 2" in top[0].message


def test_every_row_of_the_table_is_proved() -> None:
    ids = [r.id for r in RULES]
    assert len(ids) == len(set(ids))
    assert {c.rule for c in CASES} | set(PROVED_ELSEWHERE) == set(ids)
    assert not {c.rule for c in CASES} & set(PROVED_ELSEWHERE)
    names = {c.record for c in CASES}
    assert len(names) == len(CASES)


def test_markdown_table_has_one_row_per_rule() -> None:
    table = markdown_table().splitlines()
    assert table[0].startswith("| change |") and len(table) == 2 + len(RULES)
    for rule, line in zip(RULES, table[2:], strict=True):
        assert f"`{rule.kind.value}`" in line and f"| {rule.classification} |" in line


def test_record_added_is_backward(
    modules: tuple[ModuleType, ModuleType], changes: list[Change]
) -> None:
    (change,) = _under(changes, "records.RecordAdded")
    assert (change.kind, change.classification) == (K.RECORD_ADDED, C.BACKWARD)
    old, new = modules
    assert new.RecordAdded(id=1, added_thing=1.5).encode()  # new data of it exists
    assert not hasattr(old, "RecordAdded")  # ... and old code has no class to read it


def test_record_removed_is_forward(
    modules: tuple[ModuleType, ModuleType], changes: list[Change]
) -> None:
    (change,) = _under(changes, "records.RecordRemoved")
    assert (change.kind, change.classification) == (K.RECORD_REMOVED, C.FORWARD)
    old, new = modules
    assert old.RecordRemoved(id=1, removed_thing="x").encode()
    assert not hasattr(new, "RecordRemoved")


def test_record_renamed_is_full(
    modules: tuple[ModuleType, ModuleType], changes: list[Change]
) -> None:
    (change,) = _under(changes, "records.RecordRenamedNew")
    assert (change.kind, change.classification) == (K.RECORD_RENAMED, C.FULL)
    assert "not stored in the data" in change.message and "must change" in change.message
    assert not _under(changes, "records.RecordRenamedOld")
    old, new = modules
    samples = [{"x": ["a", "b"]}]
    assert reads(old.RecordRenamedOld, new.RecordRenamedNew, samples, {})
    assert reads(new.RecordRenamedNew, old.RecordRenamedOld, samples, {})


def _canonical(features: list[dict[str, Any]], **record: Any) -> dict[str, Any]:
    return {
        "version": 1,
        "doc": None,
        "records": [{"name": "R", "doc": None, "features": features, **record}],
    }


def _feature(name: str, **fields: Any) -> dict[str, Any]:
    base = {"name": name, "key": name, "dtype": "int64", "shape": [], "optional": False}
    return base | {"encoding": "list", "doc": None, "default": None} | fields


def test_fields_without_a_rule_are_breaking() -> None:
    old = _canonical([_feature("a")])
    new = _canonical([_feature("a", partition="rows")], sharding=2)
    found = compare_schemas(old, new)
    assert [(c.path, c.kind, c.classification) for c in found] == [
        ("records.R.sharding", K.FIELD_CHANGED, C.BREAKING),
        ("records.R.features.a.partition", K.FIELD_CHANGED, C.BREAKING),
    ]
    assert all("no compatibility rule" in c.message for c in found)


def test_identical_schemas_have_no_changes() -> None:
    schema = parse_schema(OLD_TEXT, "compat_rows_old.yaml")
    assert compare_schemas(json.loads(schema.canonical), json.loads(schema.canonical)) == []


def test_compare_records_reports_a_rename_and_the_feature_changes() -> None:
    old = _canonical([_feature("a")])["records"][0]
    new = {**old, "name": "S", "features": [_feature("a", dtype="int32")]}
    found = compare_records(old, new)
    assert [(c.path, c.kind) for c in found] == [
        ("records.S", K.RECORD_RENAMED),
        ("records.S.features.a.dtype", K.DTYPE_NARROWED),
    ]


def test_locations_point_into_the_new_file_and_the_old_one_for_removals() -> None:
    old = _canonical([_feature("a"), _feature("b")])
    new = _canonical([_feature("a", dtype="int32")])
    old_at = {"records.R.features.b": _Pos("old.yaml", 9, 7)}
    new_at = {"records.R.features.a": _Pos("new.yaml", 5, 7)}
    found = compare_schemas(old, new, old_locations=old_at, new_locations=new_at)
    assert [c.where() for c in found] == ["old.yaml:9:7", "new.yaml:5:7"]
    assert found[1].to_json()["location"] == {"file": "new.yaml", "line": 5, "col": 7}
    assert str(found[0]).startswith("old.yaml:9:7: backward: feature 'b'")


@dataclass(frozen=True)
class _Pos:
    path: str
    line: int
    col: int


def test_classification_algebra_and_modes() -> None:
    assert C.of(True, True) is C.FULL and C.of(False, False) is C.BREAKING
    assert C.BACKWARD.meet(C.FORWARD) is C.BREAKING and C.FULL.meet(C.FORWARD) is C.FORWARD
    assert overall([]) is C.FULL
    allowed = {m: {c for c in C if m.allows(c)} for m in Mode}
    assert allowed == {
        Mode.BACKWARD: {C.FULL, C.BACKWARD},
        Mode.FORWARD: {C.FULL, C.FORWARD},
        Mode.FULL: {C.FULL},
        Mode.NONE: set(C),
    }


# --- every pair of a pool of features: the engine against real reads ---------------------------

POOL: list[tuple[str, list[Any]]] = [
    ("{dtype: int64}", [2**40, -(2**40), 0]),
    ("{dtype: int32}", [2**31 - 1, -(2**31)]),
    ("{dtype: uint8}", [255, 0]),
    ("{dtype: int8}", [-128, 127]),
    ("{dtype: bool}", [True, False]),
    ("{dtype: float32}", [1.5]),
    ("{dtype: string}", ["\u00e9"]),
    ("{dtype: bytes}", [b"\xff"]),
    ("{dtype: int64, optional: true}", [None, 2**40, -1]),
    ("{dtype: int64, default: 1}", [2**40, -1]),
    ("{dtype: int64, shape: [3]}", [[1, 2, 3]]),
    ("{dtype: int64, shape: [null]}", [[], [1], [1, 2], [1, 2, 3, 4, 5, 6]]),
    (
        "{dtype: int64, shape: [null, 3]}",
        [np.zeros((0, 3), int), np.ones((1, 3), int), np.ones((2, 3), int)],
    ),
    ("{dtype: int64, shape: [2, 3]}", [np.ones((2, 3), int)]),
    ("{dtype: int64, shape: [null, 2]}", [np.ones((1, 2), int), np.ones((3, 2), int)]),
    ("{dtype: string, shape: [null]}", [["a"], [], ["a", "b"]]),
    ("{dtype: int64, shape: [null], optional: true}", [None, [1, 2, 3, 4, 5]]),
    (
        "{dtype: int64, shape: [null, null]}",
        [[np.ones(1, int)], [np.ones(2, int)], [np.ones(2, int), np.ones(1, int)]],
    ),
    ("{dtype: float32, shape: [null]}", [[1.5], []]),
    ("{dtype: int64, shape: [2], encoding: raw}", [[1, -1]]),
    ("{dtype: int64, shape: [null], encoding: raw}", [[1], [1, 2, 3]]),
]
POOL_TEXT = _schema_text(1, {f"P{i}": ({"v": spec}, NO_STEPS) for i, (spec, _) in enumerate(POOL)})


@pytest.fixture(scope="module")
def pool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ModuleType]:
    module = _import(tmp_path_factory.mktemp("pool"), "compat_pool", POOL_TEXT)
    yield module
    del sys.modules[module.__name__]


def test_every_pair_of_pooled_features_reads_as_the_engine_says(pool: ModuleType) -> None:
    records = json.loads(parse_schema(POOL_TEXT, "compat_pool.yaml").canonical)["records"]
    wrong = []
    for i, (_, samples) in enumerate(POOL):
        for j in range(len(POOL)):
            writer, reader = getattr(pool, f"P{i}"), getattr(pool, f"P{j}")
            found = compare_records(records[i], records[j])
            expected = overall(found).backward  # the reader plays NEW, the writer OLD
            if reads(writer, reader, [{"v": v} for v in samples], {}) is not expected:
                wrong.append((POOL[i][0], POOL[j][0], [str(c) for c in found]))
    assert wrong == []
