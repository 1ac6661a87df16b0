"""Writing output files: atomically, with the permissions of the umask, errors naming the output.

Every file tfr-gen writes (generated modules, inferred schemas, TFRecord files, indexes, dataset
manifests) first goes to a hidden temporary file beside its target, ``.<name>.<random>.tmp``,
which replaces the target only when it is complete: a failure leaves the target as it was. The
temporary file is created with mode ``0o666`` less the umask (``0o644`` under the usual umask
``022``), as ``open()`` creates files, so the target gets the permissions any new file would.

An ``OSError`` while writing names the target the caller asked for, never the temporary file,
and says what is wrong in plain words (a missing directory, a directory without write
permission). :func:`check_output` tells the same before any work is done, so a command that scans
gigabytes fails before the scan rather than after it.

A writer holds an exclusive ``flock`` on its temporary file from its creation until it is renamed
(POSIX), so the temporary files of killed writers are recognised without guessing: a temporary
file that nobody holds locked (and that is older than :data:`STALE_AFTER` seconds, which covers
the instant between its creation and its locking) is stale. :func:`stale_temporaries` lists them
and :func:`remove_stale_temporaries` removes them; every new temporary file first removes the stale
ones of its target. Where ``flock`` is missing, a temporary file is stale after a day. Removing a
temporary file never depends on closing it first: a disk that is full when the file is closed
still gets its space back.
"""

from __future__ import annotations

import errno
import os
import re
import secrets
import time
from typing import BinaryIO

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "STALE_AFTER",
    "check_output",
    "create_temporary",
    "discard_temporary",
    "fsync_directory",
    "output_error",
    "remove_stale_temporaries",
    "replace",
    "stale_temporaries",
    "temporary_name",
    "write_atomic",
]

STALE_AFTER = 10.0
"""Seconds after which an unlocked temporary file is stale (where ``flock`` exists)."""

_STALE_WITHOUT_LOCKS = 86400.0
"""Seconds after which a temporary file is stale where files cannot be locked."""

_TEMPORARY = re.compile(r"\.(?P<target>.+)\.[0-9a-f]{12}\.tmp")


def temporary_name(path: str | os.PathLike[str]) -> str:
    """A fresh hidden name beside ``path`` for its temporary file (absolute)."""
    directory, name = os.path.split(os.path.abspath(os.fspath(path)))
    return os.path.join(directory, f".{name}.{secrets.token_hex(6)}.tmp")


def _parent(path: str) -> str:
    return os.path.dirname(path) or "."


def output_error(exc: OSError, path: str | os.PathLike[str]) -> OSError:
    """``exc`` (of the same class) naming the output ``path`` and what keeps it from being
    written."""
    name = os.fspath(path)
    parent = _parent(name)
    if exc.errno == errno.ENOENT and not os.path.isdir(parent):
        reason = f"cannot write it: the directory {parent} does not exist"
    elif exc.errno == errno.ENOTDIR:
        reason = f"cannot write it: {parent} is not a directory"
    elif exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        reason = f"cannot write it: no permission to create files in {parent}"
    elif exc.errno == errno.EISDIR or os.path.isdir(name):
        reason = "cannot write it: it is a directory"
    else:
        reason = f"cannot write it: {exc.strerror or exc}"
    error = type(exc)(exc.errno, reason, name)
    return error


def check_output(path: str | os.PathLike[str]) -> None:
    """Raises ``OSError`` naming ``path`` when a file cannot be written there: its directory is
    missing or not writable, or ``path`` is a directory."""
    name = os.fspath(path)
    parent = _parent(name)
    if os.path.isdir(name):
        raise output_error(OSError(errno.EISDIR, os.strerror(errno.EISDIR)), name)
    if not os.path.exists(parent):
        raise output_error(FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT)), name)
    if not os.path.isdir(parent):
        raise output_error(NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR)), name)
    if not os.access(parent, os.W_OK | os.X_OK):
        raise output_error(PermissionError(errno.EACCES, os.strerror(errno.EACCES)), name)


def create_temporary(path: str | os.PathLike[str], *, clean: bool = True) -> tuple[BinaryIO, str]:
    """A new temporary file beside ``path``, open for binary writing and locked while it is open,
    and its name.

    With ``clean`` the stale temporary files of ``path`` (left by killed writers) are removed
    first. An ``OSError`` names ``path`` (:func:`output_error`).
    """
    if clean:
        remove_stale_temporaries(
            os.path.dirname(os.path.abspath(os.fspath(path))), os.path.basename(os.fspath(path))
        )
    temporary = temporary_name(path)
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_BINARY, 0o666)
    except OSError as exc:
        raise output_error(exc, path) from None
    if fcntl is not None:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            pass  # a file system without locks: the temporary file is recognised by its age
    return os.fdopen(fd, "wb"), temporary


def discard_temporary(file: BinaryIO, temporary: str) -> None:
    """Closes (ignoring errors such as a full disk) and deletes an unfinished temporary file."""
    try:
        os.unlink(temporary)
    except FileNotFoundError:
        pass
    finally:
        try:
            file.close()
        except OSError:
            pass


def _is_stale(path: str, now: float) -> bool:
    """Whether the temporary file ``path`` belongs to no live writer."""
    try:
        fd = os.open(path, os.O_RDONLY | _O_BINARY)
    except OSError:
        return False  # gone, or not ours to judge
    try:
        age = now - os.fstat(fd).st_mtime
        if fcntl is None:
            return age > _STALE_WITHOUT_LOCKS
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False  # its writer holds it
        except OSError:
            return age > _STALE_WITHOUT_LOCKS  # a file system without locks
        return age > STALE_AFTER
    finally:
        os.close(fd)


def stale_temporaries(directory: str | os.PathLike[str], target: str | None = None) -> list[str]:
    """The stale temporary files in ``directory`` (of the file named ``target`` only, if given),
    as sorted paths: hidden ``.<name>.<random>.tmp`` files that no live writer holds."""
    root = os.fspath(directory)
    try:
        names = os.listdir(root)
    except OSError:
        return []
    now = time.time()
    found = []
    for name in names:
        match = _TEMPORARY.fullmatch(name)
        if match is None or (target is not None and match["target"] != target):
            continue
        path = os.path.join(root, name)
        if _is_stale(path, now):
            found.append(path)
    return sorted(found)


def remove_stale_temporaries(
    directory: str | os.PathLike[str], target: str | None = None
) -> list[str]:
    """Removes the files :func:`stale_temporaries` lists; returns their paths."""
    removed = []
    for path in stale_temporaries(directory, target):
        try:
            os.unlink(path)
        except FileNotFoundError:
            continue
        removed.append(path)
    return removed


_O_BINARY: int = getattr(os, "O_BINARY", 0)


def replace(
    temporary: str, path: str | os.PathLike[str], *, name: str | os.PathLike[str] | None = None
) -> None:
    """Renames the finished ``temporary`` onto ``path``; an ``OSError`` names ``path`` (or
    ``name``, how the caller called it)."""
    try:
        os.replace(temporary, path)
    except OSError as exc:
        raise output_error(exc, path if name is None else name) from None


def fsync_directory(directory: str) -> None:
    """Makes renames in ``directory`` durable (POSIX; tolerates filesystems that cannot)."""
    if os.name != "posix":
        return
    fd = os.open(directory or ".", os.O_RDONLY)
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.ENOTSUP):
            raise
    finally:
        os.close(fd)


def write_atomic(path: str | os.PathLike[str], data: bytes | str) -> None:
    """Replaces (or creates) the file at ``path`` with ``data`` (text as UTF-8) through a
    temporary file beside it, synced to disk before the rename (and the directory after). On
    failure the temporary file is removed and ``path`` is untouched."""
    file, temporary = create_temporary(path)
    try:
        try:
            file.write(data.encode("utf-8") if isinstance(data, str) else data)
            file.flush()
            os.fsync(file.fileno())
        except OSError as exc:
            raise output_error(exc, path) from None
        replace(temporary, path)  # while the file is open, so it stays locked until renamed
    except BaseException:
        discard_temporary(file, temporary)
        raise
    file.close()
    fsync_directory(os.path.dirname(os.path.abspath(os.fspath(path))))
