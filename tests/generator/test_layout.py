"""Generated modules come out formatted: ``codegen.generator.layout`` splits long statements as ruff's formatter does,
and literals and docstrings are written as the formatter writes them, so ``ruff format --check`` and ``ruff check``
accept every generated module (checked here on random schemas) whatever ruff the user has installed, or none."""

from __future__ import annotations

import math
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from codegen.errors import SchemaError
from codegen.generator import naming
from codegen.generator.layout import WIDTH, reflow, text_width
from codegen.generator.load import parse_schema
from codegen.generator.render import pyrepr, render
from support.paths import GENERATED
from support.processes import tool

RUFF_RULES = "E,F,W,I,B,UP,RUF022"
"""The rules generated modules are checked with (E501 at the layout's width included)."""


def _check_with_ruff(directory: Path) -> None:
    """Every module in ``directory`` is formatted as ruff formats it and passes its lint rules, at ruff's defaults
    (``--isolated``: the width of 88 the layout uses) with the runtime package third-party."""
    fmt = subprocess.run(
        [tool("ruff"), "format", "--isolated", "--check", "--diff", "."],
        cwd=directory,
        capture_output=True,
        text=True,
    )
    assert fmt.returncode == 0, fmt.stdout[-4000:] + fmt.stderr[-2000:]
    check = subprocess.run(
        [tool("ruff"), "check", "--isolated", "--select", RUFF_RULES, "--config",
         'lint.isort.known-third-party=["codegen"]', "--output-format", "concise", "."],
        cwd=directory,
        capture_output=True,
        text=True,
    )  # fmt: skip
    assert check.returncode == 0, check.stdout[-4000:] + check.stderr[-2000:]


# --- the layout of single statements --------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("x = f(a, b)", "x = f(a, b)"),
        (
            "value = make_a_codec('Record', 'a_feature_name', 'A key', _rt.FLOAT32, (None,), default=1)",
            """\
            value = make_a_codec(
                'Record', 'a_feature_name', 'A key', _rt.FLOAT32, (None,), default=1
            )""",
        ),
        (
            "value = make(" + ", ".join(f"argument_{i}" for i in range(9)) + ")",
            "value = make(\n" + "".join(f"    argument_{i},\n" for i in range(9)) + ")",
        ),
        (
            "return example((" + ", ".join(f"_R_f{i}.entry(self.f{i})" for i in range(5)) + "))",
            "return example(\n    (\n"
            + "".join(f"        _R_f{i}.entry(self.f{i}),\n" for i in range(5))
            + "    )\n)",
        ),
        (
            "(self.first_attribute, self.second_attribute, self.third_attribute) = cls.meta.decode(data)",
            """\
            (
                self.first_attribute,
                self.second_attribute,
                self.third_attribute,
            ) = cls.meta.decode(data)""",
        ),
        (
            "def __init__(self, *, first: int, second: str, third: float = 0.0, fourth: bytes) -> None:",
            """\
            def __init__(
                self, *, first: int, second: str, third: float = 0.0, fourth: bytes
            ) -> None:""",
        ),
        (
            "def f(self, *, "
            + "n" * 40
            + ": _Iterable[_Iterable[_Iterable[str]]] | None = None) -> None:",
            "def f(\n    self,\n    *,\n    "
            + "n" * 40
            + ": _Iterable[_Iterable[_Iterable[str]]]\n"
            "    | None = None,\n) -> None:",
        ),
        (
            "def f(self, *, "
            + "n" * 50
            + ": _Iterable[_Iterable[_Iterable[str]]] | None = None) -> None:",
            "def f(\n    self,\n    *,\n    "
            + "n" * 50
            + ": _Iterable[\n        _Iterable[_Iterable[str]]\n"
            "    ]\n    | None = None,\n) -> None:",
        ),
        (
            "S = Schema(module='m', canonical=('" + "a" * 70 + "' '" + "b" * 70 + "'))",
            "S = Schema(\n    module='m',\n    canonical=(\n        '"
            + "a" * 70
            + "'\n        '"
            + "b" * 70
            + "'\n    ),\n)",
        ),
    ],
)
def test_long_statements_split_like_the_formatter(line: str, expected: str) -> None:
    assert reflow(line) == textwrap.dedent(expected)


_CALLED = "_rt.NumericTensor[_np.float32]"
_ARGUMENTS = '"Customer", "movie_ratings", "Movie Ratings", _rt.FLOAT, (3,)'


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("n" * 40, f"{'n' * 40} = {_CALLED}(\n    {_ARGUMENTS}\n)"),
        # The call's first line does not fit, the subscript's does: split there.
        ("n" * 60, f"{'n' * 60} = _rt.NumericTensor[\n    _np.float32\n]({_ARGUMENTS})"),
        # Neither fits: in parentheses of its own.
        ("n" * 70, f"{'n' * 70} = (\n    {_CALLED}(\n        {_ARGUMENTS}\n    )\n)"),
        # Not even ``name = (`` fits: at the subscript.
        ("n" * 85, f"{'n' * 85} = _rt.NumericTensor[\n    _np.float32\n]({_ARGUMENTS})"),
    ],
)
def test_a_called_subscript_splits_like_the_formatter(name: str, expected: str) -> None:
    assert reflow(f"{name} = {_CALLED}({_ARGUMENTS})") == expected


def test_called_subscripts_of_any_length_need_no_formatter(tmp_path: Path) -> None:
    """Long names before ``X[T](...)``, as long record and feature names give, short and long arguments."""
    lines = [
        f"{'n' * size} = _rt.NumericTensor[{subscript}]({arguments})"
        for size in range(20, 100, 3)
        for subscript in ("_np.float32", "_np.float32, _np.int64", "Mapping[str, " + "B" * 30 + "]")
        for arguments in (_ARGUMENTS, _ARGUMENTS.replace("Ratings", "Ratings and more " * 2), '"C"')
    ]
    (tmp_path / "m.py").write_text(reflow("\n".join(lines) + "\n"), encoding="utf-8")
    fmt = subprocess.run(
        [tool("ruff"), "format", "--isolated", "--check", "--diff", "."],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert fmt.returncode == 0, fmt.stdout[-4000:] + fmt.stderr[-2000:]


def test_short_lines_comments_and_docstrings_stay_as_written() -> None:
    long_comment = "# " + "word " * 30
    docstring = '    """' + "word " * 30 + '"""'
    source = f"x = 1\n{long_comment}\n{docstring}\n"
    assert reflow(source) == source


def test_width_counts_wide_characters_twice() -> None:
    assert text_width("abc") == 3
    assert text_width("日本") == 4
    assert text_width("e\u0301") == 1  # a combining accent takes no column


@pytest.mark.parametrize(
    ("value", "literal"),
    [
        ("plain", '"plain"'),
        ("it's", '"it\'s"'),
        ('say "hi"', "'say \"hi\"'"),
        ("both ' and \"", '"both \' and \\""'),
        ("back\\slash\n\t\x00\u202e", '"back\\\\slash\\n\\t\\x00\\u202e"'),
        (b"\x00\xff'\"", 'b"\\x00\\xff\'\\""'),
        (1.5e-05, "1.5e-05"),
        (math.inf, 'float("inf")'),
        (("a",), '("a",)'),
    ],
)
def test_literals_are_quoted_as_the_formatter_quotes_them(value: object, literal: str) -> None:
    assert pyrepr(value) == literal
    assert eval(literal, {}) == value  # noqa: S307 - a literal written by the test


# --- random schemas --------------------------------------------------------------------------------

TEXT = st.text(
    alphabet=st.sampled_from(list("abc xyz ABC 0123 _:#'\"\\é日本😀\u202e\u200b\t")),
    min_size=1,
    max_size=140,
)
KEY_TEXT = st.text(alphabet=st.sampled_from(list("abcxyz _:'\"\\é日😀")), min_size=1, max_size=40)
AMBIGUOUS = ("l", "I", "O")
"""Names pycodestyle's E741/E742 flag in any code; a schema may still use them."""
FEATURE_NAMES = st.from_regex(r"[a-z][a-z0-9_]{0,30}", fullmatch=True).filter(
    lambda s: naming.feature_name_problem(s) is None and s not in AMBIGUOUS
)
RECORD_NAMES = st.from_regex(r"[A-Z][a-zA-Z0-9]{0,24}", fullmatch=True).filter(
    lambda s: naming.record_name_problem(s) is None and s not in AMBIGUOUS
)
DEFAULTS: dict[str, st.SearchStrategy[Any]] = {
    "int64": st.integers(-(2**63), 2**63 - 1),
    "uint8": st.integers(0, 255),
    "bool": st.booleans(),
    "float32": st.floats(width=32),
    "string": KEY_TEXT,
    "bytes": st.binary(max_size=12),
}
LIST_SHAPES: list[list[int | None]] = [[], [2], [None], [2, 3], [None, 2], [None, None, 2]]
RAW_SHAPES: list[list[int | None]] = [[2], [None], [2, None, 3], [None, None], [3, 4]]
STEP_SHAPES: list[list[int | None]] = [[], [2], [None], [None, 2]]


@st.composite
def features(draw: st.DrawFn, section: str) -> dict[str, Any]:
    raw = section != "sequence" and draw(st.booleans())
    if raw:
        dtype = draw(st.sampled_from(["int64", "uint8", "float64", "float16", "uint64"]))
        shape = draw(st.sampled_from(RAW_SHAPES))
    else:
        dtype = draw(st.sampled_from(sorted(DEFAULTS)))
        shape = draw(st.sampled_from(STEP_SHAPES if section == "sequence" else LIST_SHAPES))
    feature: dict[str, Any] = {"dtype": dtype, "shape": shape}
    if raw:
        feature["encoding"] = "raw"
    if draw(st.booleans()):
        feature["doc"] = draw(TEXT)
    if draw(st.booleans()):
        feature["key"] = draw(KEY_TEXT)
    if section != "sequence" and not raw and None not in shape and draw(st.booleans()):
        size = math.prod(d for d in shape if d is not None)
        values = draw(st.lists(DEFAULTS[dtype], min_size=size, max_size=size))
        feature["default"] = values if shape else values[0]
    elif draw(st.booleans()):
        feature["optional"] = True
    return feature


@st.composite
def schemas(draw: st.DrawFn) -> str:
    records: dict[str, Any] = {}
    for name in draw(st.lists(RECORD_NAMES, min_size=1, max_size=2, unique=True)):
        names = draw(st.lists(FEATURE_NAMES, min_size=1, max_size=6, unique=True))
        if draw(st.booleans()):
            sections = {"features": names}
        else:
            split = draw(st.integers(0, len(names) - 1))
            sections = {"context": names[:split], "sequence": names[split:]}
        record: dict[str, Any] = {}
        if draw(st.booleans()):
            record["doc"] = draw(TEXT)
        for section, section_names in sections.items():
            if section_names:
                record[section] = {n: draw(features(section)) for n in section_names}
        records[name] = record
    doc: dict[str, Any] = {"version": draw(st.integers(1, 10**6)), "records": records}
    if draw(st.booleans()):
        doc["doc"] = draw(TEXT)
    return str(yaml.safe_dump(doc, allow_unicode=True, sort_keys=False))


@settings(
    max_examples=4,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(texts=st.lists(schemas(), min_size=25, max_size=25))
def test_generated_modules_need_no_formatter(texts: list[str], tmp_path_factory: Any) -> None:
    directory: Path = tmp_path_factory.mktemp("layout")
    written = 0
    for i, text in enumerate(texts):
        try:
            schema = parse_schema(text, f"m{i}.yaml")
        except SchemaError:  # drawn keys that collide: not what this test is about
            continue
        source = render(schema, command=f"tfr-gen m{i}.yaml")
        compile(source, f"m{i}.py", "exec")
        (directory / f"m{i}.py").write_text(source, encoding="utf-8")
        written += 1
    assert written >= len(texts) // 2, "most drawn schemas must be valid"
    _check_with_ruff(directory)


def test_committed_generated_modules_fit_the_width() -> None:
    for path in sorted(GENERATED.glob("*.py")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            assert text_width(line) <= WIDTH, f"{path.name}:{number} is {text_width(line)} wide"
