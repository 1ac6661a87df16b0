"""The documentation stays true to the code: links resolve, generated tables match, every command and option is
documented, and CI runs the README's test command and the files the task runner names."""

from __future__ import annotations

import argparse
import ast
import re
import shlex
from pathlib import Path

import pytest

from codegen.cli.commands import COMMANDS, Command
from codegen.compat import markdown_table
from support.paths import ROOT

PAGES = sorted(
    [ROOT / "README.md", ROOT / "CONTRIBUTING.md", ROOT / "CHANGELOG.md", *ROOT.glob("docs/*.md")]
)
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)


def _anchor(heading: str) -> str:
    """The anchor GitHub gives a Markdown heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    return {_anchor(line.lstrip("#")) for line in text.splitlines() if line.startswith("#")}


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(ROOT).as_posix() for p in PAGES])
def test_relative_links_and_anchors_resolve(page: Path) -> None:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    links = [link for link in LINK.findall(text) if "://" not in link]
    assert links or page.name == "CHANGELOG.md"
    for link in links:
        target, _, anchor = link.partition("#")
        path = (page.parent / target).resolve() if target else page
        assert path.exists(), f"{page.name}: {link}: no such file"
        if anchor and path.suffix == ".md":
            assert anchor in _anchors(path), f"{page.name}: {link}: no such heading"


def test_versioning_page_holds_the_compatibility_table() -> None:
    assert markdown_table() in (ROOT / "docs" / "versioning.md").read_text(encoding="utf-8")


def _options(command: Command) -> list[str]:
    parser = argparse.ArgumentParser()
    command.load().configure(parser)
    return [
        option
        for action in parser._actions
        for option in action.option_strings
        if option.startswith("--") and option != "--help"
    ]


@pytest.mark.parametrize("command", COMMANDS, ids=[c.name for c in COMMANDS])
def test_cli_page_documents_every_command_and_option(command: Command) -> None:
    page = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    name = command.name
    section = page.split(f"\n## {name}\n", 1)
    assert len(section) == 2, f"docs/cli.md has no section '## {name}'"
    body = section[1].split("\n## ", 1)[0]
    missing = [option for option in _options(command) if option not in body]
    assert not missing, f"docs/cli.md, section {name}, does not mention {missing}"
    assert (
        f"`tfr-gen {name}" in (ROOT / "README.md").read_text(encoding="utf-8") or name == "generate"
    )


def _quickstart() -> list[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Quickstart\n", 1)[1].split("\n## ", 1)[0]
    block = section.split("```bash\n", 1)[1].split("```", 1)[0]
    return block.strip().splitlines()


def test_ci_runs_the_readme_test_command() -> None:
    """The second Quickstart command installs the test extra and runs the suite; .ci/run runs both steps as
    written, in a fresh virtual environment."""
    commands = _quickstart()
    assert len(commands) == 2
    steps = [step.strip() for step in commands[1].split("&&")]
    assert steps[:2] == ["python3 -m venv .venv", ". .venv/bin/activate"]
    ci = [line.split("#")[0].strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert "python3 -m venv .venv" in ci and ". .venv/bin/activate" in ci
    position = -1
    for step in steps[2:]:
        assert step in ci, f".ci/run does not run {step!r}"
        assert ci.index(step) > position, f".ci/run runs {step!r} out of order"
        position = ci.index(step)
    assert shlex.split(steps[-1])[0] == "pytest"


def test_pure_python_session_names_existing_test_files() -> None:
    """``nox -s tests_pure`` (and so CI) runs these files; a moved or renamed file must be renamed there too."""
    tree = ast.parse((ROOT / "noxfile.py").read_text(encoding="utf-8"))
    (files,) = [
        ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == "PURE_PYTHON_TESTS" for t in node.targets)
    ]
    assert files
    assert [f for f in files if not (ROOT / f).is_file()] == []
