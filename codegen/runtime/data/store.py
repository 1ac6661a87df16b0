"""Where the dataset commit protocol touches storage: :class:`LocalStore` for a directory of the
local file system, :class:`FsspecStore` for a "directory" (a key prefix) of an object store reached
through fsspec; :func:`open_store` picks one for a path or URL.

The protocol (:mod:`~codegen.runtime.data.shards`) needs five things of a store, and nothing else:
list the names in the dataset's directory, create a file exclusively (the writer's lock), write a
file that appears whole under its name or not at all (shards; the manifest, whose publication is
the commit), read a file, and remove files. An object store implements the same methods with its
own primitives (see ``docs/datasets.md``): a conditional create for :meth:`FsspecStore.lock`
(fsspec's mode ``"xb"``: S3 ``If-None-Match: *``, a GCS precondition ``ifGenerationMatch=0``) and
an upload finished only at commit (:class:`~codegen.runtime.io.urls.ObjectFile`) for shards and
:meth:`FsspecStore.publish`.

Locally the lock is a file created with a hard link of a complete temporary file (so it never
exists empty) that its writer holds with ``flock`` until it is removed: a lock that nobody holds
is a killed writer's, and the next writer removes it (checking that it removes the very file it
found unlocked).
"""

from __future__ import annotations

import errno
import io
import json
import os
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, BinaryIO

import crc32c

from codegen.errors import TfrGenError
from codegen.files import (
    STALE_AFTER,
    create_temporary,
    discard_temporary,
    remove_stale_temporaries,
    stale_temporaries,
)
from codegen.runtime.io.files import open_input
from codegen.runtime.io.urls import ObjectFile, StorageOptions, filesystem, is_url, local_path
from codegen.runtime.io.writer import AtomicFile, fsync_directory, write_atomic, write_file

if TYPE_CHECKING:
    from typing_extensions import Buffer

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "ChecksummedInput",
    "FsspecStore",
    "LocalStore",
    "Store",
    "WriterBusyError",
    "open_store",
]

_NO_LINKS = frozenset({errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK})


class WriterBusyError(TfrGenError):
    """Another live writer holds the dataset's lock."""


class ChecksummedInput(io.RawIOBase):
    """A file opened for reading whose :attr:`crc32c` and :attr:`size` cover the bytes read so
    far (read sequentially: the reader streams the whole file once)."""

    def __init__(self, file: BinaryIO) -> None:
        super().__init__()
        self._file = file
        self.name = getattr(file, "name", None)
        self.crc32c = 0
        self.size = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Buffer) -> int:
        view = memoryview(buffer).cast("B")
        count = self._file.readinto(view) or 0  # type: ignore[attr-defined]
        self.crc32c = crc32c.crc32c(view[:count], self.crc32c)
        self.size += count
        return int(count)

    def mismatch(self, size: int, checksum: int | None) -> str | None:
        """Why the bytes read are not the file a manifest lists with ``size`` bytes and crc32c
        ``checksum`` (``None``: not listed), if they are not (the whole file must have been read)."""
        if self.size != size:
            return (
                f"the shard has {self.size} bytes but the manifest lists {size}: it was changed or"
                " replaced after the dataset was written"
            )
        if checksum is not None and self.crc32c != checksum:
            return (
                f"the shard's crc32c is {self.crc32c:08x} but the manifest lists {checksum:08x}: it"
                " was changed or replaced after the dataset was written"
            )
        return None

    def fileno(self) -> int:
        return self._file.fileno()

    def file_size(self) -> int:
        """The size of the whole file (as opened: a later change of the file is not seen)."""
        size = getattr(self._file, "size", None)  # fsspec's file objects know it
        if isinstance(size, int):
            return size
        return os.fstat(self._file.fileno()).st_size

    def close(self) -> None:
        self._file.close()
        super().close()


class LocalStore:
    """A dataset directory on the local file system."""

    def __init__(self, directory: str) -> None:
        self.directory = local_path(directory)

    def path(self, name: str) -> str:
        """The path of the file ``name`` (as errors show it)."""
        return os.path.join(self.directory, name)

    def names(self, *, missing_ok: bool = True) -> list[str]:
        """The names of the files in the directory (sorted; none if it does not exist and
        ``missing_ok``, else :class:`TfrGenError`)."""
        try:
            return sorted(os.listdir(self.directory))
        except FileNotFoundError:
            if not missing_ok:
                raise TfrGenError(
                    f"{self.directory}: cannot list the dataset directory: it does not exist"
                ) from None
            return []
        except OSError as exc:
            raise TfrGenError(
                f"{self.directory}: cannot list the dataset directory: {exc.strerror or exc}"
            ) from None

    def create_directory(self) -> None:
        """Creates the directory (and its parents) if it is missing."""
        os.makedirs(self.directory, exist_ok=True)

    def open_input(self, name: str) -> ChecksummedInput:
        """The file ``name``, open for one sequential read that checksums its bytes."""
        return ChecksummedInput(open_input(self.path(name)))

    def read(self, name: str) -> bytes:
        """The bytes of the file ``name`` (``FileNotFoundError`` if it is missing)."""
        with open_input(self.path(name)) as file:
            return file.read()

    def create(self, name: str) -> AtomicFile:
        """A new file ``name`` that appears whole when committed (names are never reused, so no
        stale temporary files of it are looked for)."""
        return AtomicFile(self.path(name), clean=False)

    def publish(self, name: str, data: bytes) -> None:
        """Replaces (or creates) the file ``name`` with ``data`` in one atomic step."""
        write_atomic(self.path(name), data)

    def rename(self, old: str, new: str) -> None:
        """Renames a file that no reader knows by either name yet."""
        os.replace(self.path(old), self.path(new))

    def sync(self) -> None:
        """Makes the renames in the directory durable."""
        fsync_directory(self.directory)

    def remove(self, names: list[str]) -> None:
        """Removes the files ``names`` (those already gone are no error)."""
        for name in names:
            try:
                os.unlink(self.path(name))
            except FileNotFoundError:
                pass

    def stale_temporaries(self) -> list[str]:
        """The names of the temporary files of killed writers in the directory."""
        return [os.path.basename(p) for p in stale_temporaries(self.directory)]

    def remove_stale_temporaries(self) -> list[str]:
        """Removes the temporary files of killed writers in the directory; returns their names."""
        return [os.path.basename(p) for p in remove_stale_temporaries(self.directory)]

    @contextmanager
    def lock(self, name: str, owner: dict[str, object]) -> Iterator[None]:
        """Holds the lock file ``name`` (holding ``owner`` as JSON, with the process id, host and
        time added) while the block runs; :class:`WriterBusyError` if a live writer holds it."""
        content = {**owner, "pid": os.getpid(), "host": socket.gethostname(), "since": time.time()}
        data = json.dumps(content).encode("utf-8")
        for _ in range(10):
            held = self._try_lock(name, data)
            if held is not None:
                break
        else:  # pragma: no cover - ten stale locks removed by others in a row
            raise WriterBusyError(f"{self.path(name)}: cannot take the writer's lock")
        try:
            yield
        finally:
            self.remove([name])
            held.close()  # releases the flock after the lock file is gone

    def lock_held(self, name: str) -> bool:
        """Whether a live writer holds the lock file ``name`` (``False`` if there is none)."""
        try:
            self._check_holder(self.path(name), remove=False)
        except WriterBusyError:
            return True
        return False

    def _try_lock(self, name: str, data: bytes) -> BinaryIO | None:
        """The open, flocked lock file if it was created, ``None`` if a stale one was removed (try
        again), :class:`WriterBusyError` if a live writer holds it."""
        path = self.path(name)
        file, temporary = create_temporary(path, clean=False)  # locked from its creation
        try:
            file.write(data)
            file.flush()
            try:
                os.link(temporary, path)
            except FileExistsError:
                self._check_holder(path)
                discard_temporary(file, temporary)
                return None
            except OSError as exc:
                if exc.errno not in _NO_LINKS:
                    raise
                discard_temporary(file, temporary)
                return self._create_unlinked(path, data)
            os.unlink(temporary)
            return file
        except BaseException:
            discard_temporary(file, temporary)
            raise

    def _create_unlinked(self, path: str, data: bytes) -> BinaryIO | None:
        """:meth:`_try_lock` on a file system without hard links: ``O_EXCL`` (the grace period of
        :func:`_check_holder` covers the instant before the file is locked and written)."""
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            self._check_holder(path)
            return None
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        file = os.fdopen(fd, "wb")
        file.write(data)
        file.flush()
        return file

    def _check_holder(self, path: str, *, remove: bool = True) -> None:
        """Removes the lock ``path`` if its writer is gone (with ``remove``);
        :class:`WriterBusyError` if not."""
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            return  # released meanwhile
        try:
            stat = os.fstat(fd)
            if fcntl is not None:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    self._busy(path, fd)
                if time.time() - stat.st_mtime < STALE_AFTER and stat.st_size == 0:
                    self._busy(path, fd)  # being created on a file system without hard links
            else:  # pragma: no cover - not POSIX: a lock is trusted for a day
                if time.time() - stat.st_mtime < 86400:
                    self._busy(path, fd)
            if not remove:
                return
            try:
                if os.stat(path).st_ino == stat.st_ino:
                    os.unlink(path)  # still the stale lock we hold: no one else can have it
            except FileNotFoundError:
                pass
        finally:
            os.close(fd)

    def _busy(self, path: str, fd: int) -> None:
        """Raises :class:`WriterBusyError` describing the lock's holder."""
        try:
            owner = json.loads(os.pread(fd, 1 << 16, 0).decode("utf-8"))
            since = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(float(owner["since"])))
            who = f" (write {owner['write_id']}, process {owner['pid']} on {owner['host']}, since {since})"
        except (ValueError, KeyError, TypeError, OSError):
            who = ""
        raise WriterBusyError(
            f"{path}: another writer is writing this dataset{who}; wait for it to finish"
            " (the lock goes away with its writer, even a killed one)"
        )


class FsspecStore:
    """A dataset "directory" of an object store (or any fsspec filesystem): the objects whose
    keys start with ``<directory>/``.

    Shards and the manifest are :class:`~codegen.runtime.io.urls.ObjectFile` uploads that appear
    whole at their commit or not at all, so an interrupted write leaves no object under its name
    and the previous manifest in place. The writer's lock is an object created with fsspec's
    exclusive mode ``"xb"`` where the store offers a conditional create (S3 ``If-None-Match: *``,
    GCS ``ifGenerationMatch=0``, the in-memory store); elsewhere it is created after a check that
    it does not exist, which two writers starting in the same instant can both pass. An object
    store cannot tell a live writer from a killed one: a lock stays until its writer removes it,
    and :class:`WriterBusyError` names it so that it can be deleted once its writer is known to be
    gone. Nothing needs syncing, and no temporary objects are ever made.
    """

    def __init__(self, directory: str, storage_options: StorageOptions | None = None) -> None:
        self.directory = directory.rstrip("/")
        self.storage_options = storage_options
        self.fs, root = filesystem(self.directory, storage_options)
        self._root = root.rstrip("/")

    def path(self, name: str) -> str:
        """The URL of the object ``name`` (as errors show it)."""
        return f"{self.directory}/{name}"

    def _key(self, name: str) -> str:
        return f"{self._root}/{name}"

    def names(self, *, missing_ok: bool = True) -> list[str]:
        """The names of the objects in the directory (sorted), listed afresh; none if it has none
        and ``missing_ok``, else :class:`TfrGenError`."""
        self.fs.invalidate_cache(self._root)
        try:
            entries = self.fs.ls(self._root, detail=True)
        except FileNotFoundError:
            entries = []
        except OSError as exc:
            raise TfrGenError(
                f"{self.directory}: cannot list the dataset directory: {exc}"
            ) from None
        if not entries and not missing_ok:
            raise TfrGenError(
                f"{self.directory}: cannot list the dataset directory: it holds no objects"
            )
        return sorted(
            str(entry["name"]).rstrip("/").rsplit("/", 1)[-1]
            for entry in entries
            if entry.get("type") == "file"
        )

    def create_directory(self) -> None:
        """Creates the directory where the store has directories. Object stores have none (their
        plug-ins may try to create the bucket): a refusal is left for the first write to report,
        naming the object it could not write."""
        try:
            self.fs.makedirs(self._root, exist_ok=True)
        except OSError:
            pass

    def open_input(self, name: str) -> ChecksummedInput:
        """The object ``name``, open for one sequential read that checksums its bytes."""
        return ChecksummedInput(open_input(self.path(name), storage_options=self.storage_options))

    def read(self, name: str) -> bytes:
        """The bytes of the object ``name`` (``FileNotFoundError`` if it is missing)."""
        data: bytes = self.fs.cat_file(self._key(name))
        return data

    def create(self, name: str) -> ObjectFile:
        """A new object ``name`` that appears whole when committed."""
        return ObjectFile(self.path(name), self.storage_options)

    def publish(self, name: str, data: bytes) -> None:
        """Replaces (or creates) the object ``name`` with ``data`` in one upload."""
        write_file(self.path(name), data, storage_options=self.storage_options)

    def rename(self, old: str, new: str) -> None:
        """Renames an object that no reader knows by either name yet (a copy and a delete on
        object stores)."""
        self.fs.mv(self._key(old), self._key(new))

    def sync(self) -> None:
        """Nothing to do: an object is durable once its upload is finished."""

    def remove(self, names: list[str]) -> None:
        """Removes the objects ``names`` (those already gone are no error)."""
        for name in names:
            try:
                self.fs.rm_file(self._key(name))
            except FileNotFoundError:
                pass
        if names:
            self.fs.invalidate_cache(self._root)

    def stale_temporaries(self) -> list[str]:
        """None: an object store has no temporary objects."""
        return []

    def remove_stale_temporaries(self) -> list[str]:
        """None: an unfinished upload is never an object (the store may keep its parts until a
        lifecycle rule removes them, S3's ``AbortIncompleteMultipartUpload``)."""
        return []

    @contextmanager
    def lock(self, name: str, owner: dict[str, object]) -> Iterator[None]:
        """Holds the lock object ``name`` (``owner`` as JSON, with the process id, host and time
        added) while the block runs; :class:`WriterBusyError` if it exists."""
        content = {**owner, "pid": os.getpid(), "host": socket.gethostname(), "since": time.time()}
        data = json.dumps(content).encode("utf-8")
        key = self._key(name)
        try:
            with self.fs.open(key, "xb") as file:
                file.write(data)
        except FileExistsError:
            self._busy(name)
        except (NotImplementedError, ValueError):  # no conditional create: check, then create
            if self.fs.exists(key):
                self._busy(name)
            self.fs.pipe_file(key, data)
        try:
            yield
        finally:
            self.remove([name])

    def lock_held(self, name: str) -> bool:
        """Whether the lock object ``name`` exists (a store cannot tell whether its writer lives)."""
        self.fs.invalidate_cache(self._root)
        return bool(self.fs.exists(self._key(name)))

    def _busy(self, name: str) -> None:
        """Raises :class:`WriterBusyError` describing the lock's holder."""
        try:
            owner = json.loads(self.read(name).decode("utf-8"))
            since = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(float(owner["since"])))
            who = f" (write {owner['write_id']}, process {owner['pid']} on {owner['host']}, since {since})"
        except (ValueError, KeyError, TypeError, OSError):
            who = ""
        raise WriterBusyError(
            f"{self.path(name)}: another writer is writing this dataset{who}; wait for it to"
            " finish (an object store cannot tell a killed writer: if that writer is gone, delete"
            " the lock object)"
        )


Store = LocalStore | FsspecStore
"""A dataset directory of some storage."""


def open_store(
    directory: str | os.PathLike[str], storage_options: StorageOptions | None = None
) -> Store:
    """The store of the dataset directory ``directory``: a :class:`FsspecStore` for a URL of an
    fsspec store (with ``storage_options``), else a :class:`LocalStore` (a local path or a
    ``file://`` URL)."""
    if is_url(directory):
        return FsspecStore(os.fspath(directory), storage_options)
    return LocalStore(os.fspath(directory))
