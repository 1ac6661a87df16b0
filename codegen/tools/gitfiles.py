"""Files as a git revision has them: ``git:REV:path`` arguments and directories at a revision.

Paths are ordinary paths of the working tree; git runs in the repository that contains them (the
nearest existing directory decides, so deleted files and directories work too). Every failure
raises :class:`~codegen.errors.TfrGenError` saying what is missing: git itself, the repository,
the revision, or (for :func:`read_spec`) the file at that revision.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import PurePath, PurePosixPath

from codegen.errors import TfrGenError

GIT_PREFIX = "git:"
"""How an argument names a file at a revision: ``git:REV:path``."""


def parse_spec(spec: str) -> tuple[str, str] | None:
    """``(REV, path)`` of a ``git:REV:path`` argument, ``None`` for a plain path."""
    if not spec.startswith(GIT_PREFIX):
        return None
    rev, sep, path = spec[len(GIT_PREFIX) :].partition(":")
    if not sep or not rev or not path:
        raise TfrGenError(f"{spec!r}: expected git:REV:path, e.g. git:HEAD:schemas/customer.yaml")
    return rev, path


def _git(args: list[str], cwd: str) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=False)
    except FileNotFoundError:
        raise TfrGenError(
            "git is not installed or not on PATH; it is needed to read files at a revision"
            " (git:REV:path, --against REV)"
        ) from None
    except OSError as exc:
        raise TfrGenError(f"cannot run git: {exc.strerror or exc}") from None


def _message(result: subprocess.CompletedProcess[bytes]) -> str:
    return result.stderr.decode("utf-8", "replace").strip() or f"exit status {result.returncode}"


class Repository:
    """The git repository that contains a path of the working tree, at one revision.

    The revision is checked when the object is made.
    """

    def __init__(self, path: str, rev: str) -> None:
        start = os.path.dirname(os.path.abspath(path))
        while not os.path.isdir(start):
            start = os.path.dirname(start)
        result = _git(["rev-parse", "--show-toplevel"], start)
        if result.returncode != 0:
            raise TfrGenError(f"{path}: not inside a git repository ({_message(result)})")
        self.root = result.stdout.decode("utf-8").strip()
        self.rev = rev
        verify = _git(["rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"], self.root)
        if verify.returncode != 0:
            raise TfrGenError(f"unknown git revision {rev!r} in the repository {self.root}")

    def relative(self, path: str) -> str:
        """``path`` relative to the repository root, with ``/`` separators."""
        real = os.path.realpath(path)
        rel = os.path.relpath(real, os.path.realpath(self.root))
        if rel == ".." or rel.startswith(".." + os.sep):
            raise TfrGenError(f"{path}: outside the git repository {self.root}")
        return PurePath(rel).as_posix()

    def read(self, path: str) -> bytes | None:
        """The content of the file ``path`` at the revision, ``None`` if it has no such file."""
        name = f"{self.rev}:{self.relative(path)}"
        kind = _git(["cat-file", "-t", name], self.root)
        if kind.returncode != 0:
            return None
        if kind.stdout.strip() != b"blob":
            raise TfrGenError(f"git:{self.rev}:{path}: not a file at revision {self.rev!r}")
        result = _git(["show", name], self.root)
        if result.returncode != 0:
            raise TfrGenError(f"git:{self.rev}:{path}: git show failed: {_message(result)}")
        return result.stdout

    def files(self, directory: str) -> list[str]:
        """The files directly in ``directory`` at the revision (paths joined to ``directory``)."""
        rel = self.relative(directory)
        tree = self.rev if rel == "." else f"{self.rev}:{rel}"
        result = _git(["ls-tree", "-z", tree], self.root)
        if result.returncode != 0:
            return []  # no such directory at the revision
        names: list[str] = []
        for entry in result.stdout.split(b"\0"):
            meta, _, name = entry.partition(b"\t")
            if meta.split(b" ")[1:2] == [b"blob"]:
                names.append(os.path.join(directory, PurePosixPath(name.decode("utf-8")).name))
        return sorted(names)


def read_spec(spec: str) -> bytes:
    """The content of a path, or of ``git:REV:path`` (the file at that revision).

    A file that cannot be read raises ``OSError``; a missing revision or file at the revision
    raises :class:`~codegen.errors.TfrGenError`.
    """
    parsed = parse_spec(spec)
    if parsed is None:
        with open(spec, "rb") as file:
            return file.read()
    rev, path = parsed
    data = Repository(path, rev).read(path)
    if data is None:
        raise TfrGenError(f"{spec}: no file {path!r} at git revision {rev!r}")
    return data
