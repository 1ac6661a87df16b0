"""``tfr-gen diff``: paths, ``git:REV:path``, ``--against REV DIR`` on a scratch repository, modes,
version rules, JSON output and errors."""

from __future__ import annotations

import json
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from support.cli import run_cli

V1 = textwrap.dedent(
    """\
    version: 1
    records:
      Customer:
        features:
          age: {key: Age, dtype: int32}
          name: {dtype: string}
    """
)
# Backward compatible: a feature with a default, and a widened dtype.
V2 = (
    V1.replace("version: 1", "version: 2")
    .replace("dtype: int32", "dtype: int64")
    .replace("{dtype: string}", "{dtype: string}\n      score: {dtype: float32, default: 0.5}")
)
# Breaking: the key of 'age' changed.
V2_BREAKING = V1.replace("key: Age", "key: age_years")
OTHER = "version: 1\nrecords:\n  Other:\n    features:\n      x: {dtype: bytes}\n"

requires_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def run(*args: str, cwd: Path) -> tuple[int, str, str]:
    """Run ``tfr-gen diff`` in ``cwd``: (exit code, stdout, stderr)."""
    return run_cli("diff", *args, cwd=cwd)


def git(repo: Path, *args: str) -> str:
    result = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    )
    return result.stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository whose first commit (tag ``v1``) holds ``schemas/customer.yaml`` at V1."""
    git(tmp_path, "init", "--quiet")
    (tmp_path / "schemas").mkdir()
    (tmp_path / "schemas" / "customer.yaml").write_text(V1)
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "--quiet", "-m", "v1")
    git(tmp_path, "tag", "v1")
    return tmp_path


def write(repo: Path, text: str, name: str = "customer.yaml") -> None:
    (repo / "schemas" / name).write_text(text)


def test_two_paths_compatible_change_with_a_bump_exits_0(tmp_path: Path) -> None:
    (tmp_path / "old.yaml").write_text(V1)
    (tmp_path / "new.yaml").write_text(V2)
    code, out, err = run("old.yaml", "new.yaml", cwd=tmp_path)
    assert code == 0, out + err
    assert "old.yaml (version 1) -> new.yaml (version 2): 3 change(s), backward" in out
    assert "new.yaml:5:23: backward: dtype of 'age' changed from int32 to int64" in out
    assert "new.yaml:7:7: full: feature 'score'" in out
    assert "new.yaml:1:1: full: version changed from 1 to 2" in out
    assert out.rstrip().endswith(": ok")


@requires_git
def test_breaking_change_without_a_bump_exits_1_naming_both_problems(repo: Path) -> None:
    write(repo, V2_BREAKING)
    code, out, _ = run("--against", "HEAD", "schemas", cwd=repo)
    assert code == 1
    assert (
        "schemas/customer.yaml:5:13: breaking (violates --mode backward): key of 'age' changed"
        " from 'Age' to 'age_years'" in out
    )
    assert (
        "schemas/customer.yaml:1:1: the schema changed (1 change(s) beyond docs) but version" in out
    )
    assert "git:HEAD:schemas/customer.yaml (version 1) -> schemas/customer.yaml (version 1)" in out
    assert out.rstrip().endswith("1 violating --mode backward, 1 version problem(s): not ok")


@requires_git
def test_compatible_change_with_a_bump_against_a_revision_exits_0(repo: Path) -> None:
    write(repo, V2)
    git(repo, "commit", "--quiet", "-am", "v2")
    assert run("--against", "v1", "schemas", cwd=repo)[0] == 0
    assert run("--against", "HEAD", "schemas", cwd=repo)[1].count("0 change(s), full") == 1
    code, out, err = run("git:v1:schemas/customer.yaml", "git:HEAD:schemas/customer.yaml", cwd=repo)
    assert code == 0, out + err
    assert "git:HEAD:schemas/customer.yaml:5:23: backward:" in out


@requires_git
def test_modes_decide_which_classifications_fail(repo: Path) -> None:
    write(repo, V2)  # backward-only changes
    assert run("--against", "HEAD", "schemas", "--mode", "backward", cwd=repo)[0] == 0
    assert run("--against", "HEAD", "schemas", "--mode", "full", cwd=repo)[0] == 1
    code, out, _ = run("--against", "HEAD", "schemas", "--mode", "forward", cwd=repo)
    assert code == 1 and "backward (violates --mode forward): dtype of 'age'" in out
    write(repo, V2_BREAKING.replace("version: 1", "version: 2"))
    assert run("--against", "HEAD", "schemas", "--mode", "none", cwd=repo)[0] == 0


@requires_git
def test_version_rules(repo: Path) -> None:
    write(repo, V1.replace("records:", "doc: Only the docs changed.\nrecords:"))
    code, out, _ = run("--against", "HEAD", "schemas", cwd=repo)
    assert code == 0 and "full: schema doc changed" in out  # docs need no new version
    write(repo, V2)
    git(repo, "commit", "--quiet", "-am", "v2")
    write(repo, V1)
    code, out, _ = run("--against", "HEAD", "schemas", "--mode", "none", cwd=repo)
    assert code == 1 and "schemas/customer.yaml:1:1: version went down from 2 to 1" in out


@requires_git
def test_json_output_has_stable_keys(repo: Path) -> None:
    write(repo, V2_BREAKING)
    code, out, _ = run("--against", "HEAD", "schemas", "--format", "json", cwd=repo)
    assert code == 1
    report = json.loads(out)
    assert list(report) == ["mode", "ok", "schemas"] and report["ok"] is False
    (schema,) = report["schemas"]
    assert list(schema) == [
        "old",
        "new",
        "status",
        "old_version",
        "new_version",
        "classification",
        "ok",
        "problems",
        "changes",
    ]
    assert schema["old"] == "git:HEAD:schemas/customer.yaml" and schema["status"] == "changed"
    assert schema["classification"] == "breaking"
    (change,) = schema["changes"]
    assert change == {
        "path": "records.Customer.features.age.key",
        "kind": "key_changed",
        "classification": "breaking",
        "message": change["message"],
        "location": {"file": "schemas/customer.yaml", "line": 5, "col": 13},
        "violates": True,
    }
    assert schema["problems"] == [
        "schemas/customer.yaml:1:1: the schema changed (1 change(s) beyond docs) but version is"
        " still 1; increase it"
    ]


@requires_git
def test_against_accepts_new_schemas(repo: Path) -> None:
    write(repo, OTHER, "other.yml")
    code, out, _ = run("--against", "HEAD", "schemas", cwd=repo)
    assert code == 0 and "schemas/other.yml: new schema (version 1)" in out
    code, out, _ = run("--against", "HEAD", "schemas", "--format", "json", cwd=repo)
    statuses = {s["new"]: s["status"] for s in json.loads(out)["schemas"]}
    assert statuses == {"schemas/customer.yaml": "unchanged", "schemas/other.yml": "added"}


@requires_git
def test_against_reports_deleted_schemas_as_breaking(repo: Path) -> None:
    write(repo, OTHER, "other.yaml")
    git(repo, "add", ".")
    git(repo, "commit", "--quiet", "-m", "other")
    (repo / "schemas" / "other.yaml").unlink()
    code, out, _ = run("--against", "HEAD", "schemas", cwd=repo)
    assert code == 1
    assert "git:HEAD:schemas/other.yaml (version 1): deleted" in out
    assert "git:HEAD:schemas/other.yaml:1:1: breaking (violates --mode backward): schema" in out
    shutil.rmtree(repo / "schemas")  # a deleted directory is still compared with the revision
    code, out, _ = run("--against", "HEAD", "schemas", "--format", "json", cwd=repo)
    kinds = [(s["status"], s["changes"][0]["kind"]) for s in json.loads(out)["schemas"]]
    assert code == 1 and kinds == [("removed", "schema_removed")] * 2


@requires_git
def test_git_errors_exit_2(repo: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    code, _, err = run("--against", "no-such-rev", "schemas", cwd=repo)
    assert code == 2 and "unknown git revision 'no-such-rev'" in err
    code, _, err = run("git:HEAD:schemas/missing.yaml", "schemas/customer.yaml", cwd=repo)
    assert code == 2 and "no file 'schemas/missing.yaml' at git revision 'HEAD'" in err
    code, _, err = run("git:HEAD", "schemas/customer.yaml", cwd=repo)
    assert code == 2 and "expected git:REV:path" in err
    outside = tmp_path_factory.mktemp("not_a_repo")
    (outside / "a.yaml").write_text(V1)
    code, _, err = run("git:HEAD:a.yaml", "a.yaml", cwd=outside)
    assert code == 2 and "not inside a git repository" in err


@requires_git
def test_missing_git_is_a_clear_error(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(repo / "no-bin"))
    code, _, err = run("--against", "HEAD", "schemas", cwd=repo)
    assert code == 2 and "git is not installed or not on PATH" in err


def test_invalid_schemas_exit_2_with_their_diagnostics(tmp_path: Path) -> None:
    (tmp_path / "old.yaml").write_text(V1)
    (tmp_path / "new.yaml").write_text(V1.replace("int32", "int33"))
    code, out, err = run("old.yaml", "new.yaml", cwd=tmp_path)
    assert code == 2 and out == ""
    assert "new.yaml:5:30: unknown dtype 'int33'" in err
    code, _, err = run("old.yaml", "absent.yaml", cwd=tmp_path)
    assert code == 2 and "absent.yaml:1:1: cannot read the schema file" in err
    code, _, err = run("old.yaml", cwd=tmp_path)
    assert code == 2 and "tfr-gen diff: error: expected OLD and NEW, got 1 argument\n" in err
