"""The registry of feature kinds (``codegen.kinds``) is the one table every layer reads: each kind has its template
with the same macros, each codec row its runtime class, batch column and plan operation, and the numbers the C
accelerator shares with Python are generated from it."""

from __future__ import annotations

import re

import pytest

from codegen import kinds
from codegen.dtypes import DTYPES
from codegen.generator.render import environment
from codegen.runtime.codec import batch, registry
from codegen.runtime.codec.features import Codec
from codegen.runtime.codec.sequences import SequenceCodec
from support.paths import ROOT


def test_the_c_contract_header_is_generated_from_the_registry() -> None:
    header = (ROOT / "codegen" / "_speedups" / "contract.h").read_text(encoding="utf-8")
    assert header == kinds.contract_header(), (
        "regenerate it: python -m codegen.kinds > codegen/_speedups/contract.h"
    )


def test_the_c_sources_use_the_contract_names_not_their_numbers() -> None:
    plan = (ROOT / "codegen" / "_speedups" / "plan.c").read_text(encoding="utf-8")
    assert '#include "contract.h"' in plan
    assert not re.search(r"\bOP_\w+ = \d", plan) and "LIST_BYTES = 1" not in plan
    assert not re.search(r"case '[a-zA-Z?]':", plan), "element codes are ELEMENT_* names"


def test_every_kind_has_a_template_with_the_same_macros() -> None:
    env = environment()
    for kind in kinds.KINDS:
        module = env.get_template(f"features/{kind.name}.py.jinja").module
        for macro in ("attr_type", "param", "batch_type"):
            assert callable(getattr(module, macro, None)), f"{kind.name} has no macro {macro}"
    templates = {
        p.stem.removesuffix(".py") for p in (ROOT / "templates" / "features").glob("*.jinja")
    }
    assert templates - {"_common"} == {kind.name for kind in kinds.KINDS}


def test_every_codec_row_has_its_runtime_class_and_batch_layout() -> None:
    assert set(registry.CODEC_CLASSES) == {row.codec for row in kinds.CODECS}
    for row in kinds.CODECS:
        cls = registry.CODEC_CLASSES[row.codec]
        assert kinds.kind_named(row.kind)
        if row.kind == "sequence_feature":
            assert issubclass(cls, SequenceCodec) and row.column in batch.SEQUENCE_LAYOUTS
        else:
            assert issubclass(cls, Codec) and row.column in batch.COLUMNS
        assert row.generic == bool(getattr(cls, "__parameters__", ())), row.codec


@pytest.mark.parametrize("dtype", sorted(DTYPES))
def test_every_valid_dtype_and_shape_has_exactly_one_kind_and_codec(dtype: str) -> None:
    d = DTYPES[dtype]
    shapes: list[tuple[int | None, ...]] = [(), (2,), (None,), (None, 2), (None, None), (2, 3)]
    for encoding, sequence in (("list", False), ("raw", False), ("list", True), ("jpeg", False)):
        for shape in shapes:
            kind = kinds.select_kind(d, shape, encoding=encoding, sequence=sequence)
            rows = [r for r in kinds.CODECS if r.kind == kind.name and r.matches(d, shape)]
            if not rows:  # the schema checks refuse these (a ragged raw tensor has no codec row)
                continue
            assert kinds.codec_for(kind.name, d, shape) is rows[0]


def test_plan_operations_follow_the_registry() -> None:
    int64, string = DTYPES["int64"], DTYPES["string"]
    assert kinds.codec_row("IntScalar").plan(int64, ()) is kinds.PlanOp.INT
    assert kinds.codec_row("TextTensor").plan(string, (None,)) is kinds.PlanOp.TEXT_LIST
    assert (
        kinds.codec_row("TextTensor").plan(string, (None, 2)) is None
    )  # rank > 1: the codec's path
    assert kinds.codec_row("RaggedTensor").plan(int64, (None, None)) is None
    assert kinds.element_code(DTYPES["uint16"]) == "H" and kinds.RAW_ELEMENT == "x"


def test_codecs_take_their_companion_keys_from_the_registry() -> None:
    codec = registry.build_codec(
        "R", "image", "img", DTYPES["uint8"], (None, None, 3), kind="raw_tensor"
    )
    assert codec.companion_keys == kinds.kind_named("raw_tensor").companions("img", (None, None, 3))
    assert codec.companion_keys == ("img/shape",)
    ragged = registry.build_codec(
        "R", "t", "t", DTYPES["int64"], (None, None, None), kind="ragged_tensor"
    )
    assert ragged.companion_keys == ("t/row_lengths_1", "t/row_lengths_2")
