"""fsspec stores for the tests of URLs: fresh roots in fsspec's in-memory store, an object store
kept in memory whose uploads are finished only at commit (and fail on demand, as a broken
connection does), and a local directory reached as an object store (``objlocal://``)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, ClassVar

import fsspec
from fsspec.implementations.local import LocalFileSystem
from fsspec.implementations.memory import MemoryFile, MemoryFileSystem
from fsspec.spec import AbstractBufferedFile


class UploadFailed(OSError):
    """The failure :class:`ObjectMemoryFileSystem` injects into an upload."""


class _Upload(AbstractBufferedFile):  # type: ignore[misc]
    """An upload in parts (as S3's multipart upload): the object appears at :meth:`commit`."""

    fs: ObjectMemoryFileSystem

    def _initiate_upload(self) -> None:
        self.parts: list[bytes] = []

    def _upload_chunk(self, final: bool = False) -> bool:
        data = self.buffer.getvalue()
        fs = type(self.fs)
        fs.uploaded += len(data)
        if fs.fail_after is not None and fs.uploaded > fs.fail_after:
            raise UploadFailed("the connection broke during the upload")
        self.parts.append(data)
        if final and self.autocommit:
            self.commit()
        return True

    def commit(self) -> None:
        self.fs.store[self.path] = MemoryFile(self.fs, self.path, b"".join(self.parts))
        type(self.fs).committed.append(self.path)

    def discard(self) -> None:
        self.parts = []
        type(self.fs).discarded.append(self.path)


class ObjectMemoryFileSystem(MemoryFileSystem):  # type: ignore[misc]
    """``objmem://``: objects kept in memory, written as an object store writes them (uploads in
    parts of :attr:`blocksize` bytes, finished by ``commit()``, aborted by ``discard()``). With
    :attr:`fail_after` set, an upload fails once that many bytes were sent."""

    protocol = "objmem"
    store: ClassVar[dict[str, Any]] = {}
    pseudo_dirs: ClassVar[list[str]] = [""]
    blocksize = 1024
    fail_after: ClassVar[int | None] = None
    uploaded: ClassVar[int] = 0
    committed: ClassVar[list[str]] = []
    discarded: ClassVar[list[str]] = []
    options: ClassVar[list[dict[str, Any]]] = []

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        type(self).options.append(dict(kwargs))

    @classmethod
    def _strip_protocol(cls, path: Any) -> Any:
        return super()._strip_protocol(str(path).replace(f"{cls.protocol}://", "memory://", 1))

    def _open(
        self,
        path: str,
        mode: str = "rb",
        block_size: int | None = None,
        autocommit: bool = True,
        **kwargs: Any,
    ) -> Any:
        if "r" in mode:
            return super()._open(path, mode, **kwargs)
        if "x" in mode and self.exists(path):
            raise FileExistsError(path)
        return _Upload(
            self, self._strip_protocol(path), "wb", block_size or self.blocksize, autocommit
        )

    @classmethod
    def reset(cls) -> None:
        cls.store.clear()
        del cls.pseudo_dirs[1:]
        cls.fail_after, cls.uploaded = None, 0
        cls.committed.clear()
        cls.discarded.clear()
        cls.options.clear()
        cls.clear_instance_cache()


class NoExclusiveFileSystem(ObjectMemoryFileSystem):
    """``noexcl://``: :class:`ObjectMemoryFileSystem` without a conditional create (mode ``"xb"``
    is refused, as by stores that have none)."""

    protocol = "noexcl"

    def _open(self, path: str, mode: str = "rb", *args: Any, **kwargs: Any) -> Any:
        if "x" in mode:
            raise NotImplementedError("File mode not supported")
        return super()._open(path, mode, *args, **kwargs)


class EagerFileSystem(ObjectMemoryFileSystem):
    """``eager://``: :class:`ObjectMemoryFileSystem` whose files ignore ``autocommit=False`` (they
    would publish whatever was written when closed)."""

    protocol = "eager"

    def _open(self, path: str, mode: str = "rb", *args: Any, **kwargs: Any) -> Any:
        kwargs["autocommit"] = True
        return super()._open(path, mode, *args, **kwargs)


class ObjectLocalFileSystem(LocalFileSystem):  # type: ignore[misc]
    """``objlocal://<path>``: a local directory written as an object store is: an object opened
    with ``autocommit=False`` goes to a temporary file elsewhere and is moved under its name only
    by ``commit()``; a killed writer never makes it."""

    protocol = ("objlocal",)

    def unstrip_protocol(self, name: str) -> str:
        return f"objlocal://{self._strip_protocol(name)}"


def register() -> None:
    """Makes ``objmem://``, ``noexcl://``, ``eager://`` and ``objlocal://`` known to fsspec (in
    this process)."""
    fsspec.register_implementation("objmem", ObjectMemoryFileSystem, clobber=True)
    fsspec.register_implementation("objlocal", ObjectLocalFileSystem, clobber=True)
    fsspec.register_implementation("noexcl", NoExclusiveFileSystem, clobber=True)
    fsspec.register_implementation("eager", EagerFileSystem, clobber=True)


@contextmanager
def memory_directory() -> Iterator[str]:
    """A fresh ``memory://`` directory, removed afterwards."""
    root = f"memory://t{uuid.uuid4().hex}"
    try:
        yield root
    finally:
        fs = fsspec.filesystem("memory")
        if fs.exists(root):
            fs.rm(root, recursive=True)


@contextmanager
def object_store() -> Iterator[type[ObjectMemoryFileSystem]]:
    """``objmem://`` (and ``objlocal://``) registered, the in-memory object store empty."""
    register()
    ObjectMemoryFileSystem.reset()
    try:
        yield ObjectMemoryFileSystem
    finally:
        ObjectMemoryFileSystem.reset()


def memory_bytes(url: str) -> bytes:
    """The bytes of the ``memory://`` object ``url``."""
    with fsspec.open(url, "rb") as file:
        data: bytes = file.read()
    return data


def stored_names(fs: type[MemoryFileSystem]) -> list[str]:
    """The keys of the objects of an in-memory store class."""
    return sorted(fs.store)


__all__ = [
    "EagerFileSystem",
    "NoExclusiveFileSystem",
    "ObjectLocalFileSystem",
    "ObjectMemoryFileSystem",
    "UploadFailed",
    "memory_bytes",
    "memory_directory",
    "object_store",
    "register",
    "stored_names",
]
