"""Files named by URL: every store fsspec reaches (``s3://``, ``gs://``, ``https://``, ``memory://``,
chained URLs such as ``simplecache::s3://...``), beside plain local paths.

A path argument is a URL when it starts with a protocol (``<scheme>://`` or ``<scheme>::``);
anything else is a local path and never touches fsspec, so local files keep ``open`` and
``os.replace``. ``file://`` and ``local://`` URLs are mapped to the local path they name
(:func:`local_path`), so they get the local guarantees (temporary file, ``fsync``, rename).

``storage_options`` (a mapping such as ``{"key": ..., "secret": ...}`` or
``{"client_kwargs": {"endpoint_url": ...}}``) go to the store's fsspec filesystem as they are;
without them fsspec reads its configuration as usual (``FSSPEC_<PROTOCOL>_<OPTION>`` environment
variables, ``~/.config/fsspec``), and the plug-ins their own (``AWS_*``, application default
credentials). A store whose plug-in is not installed raises
:class:`~codegen.errors.MissingExtraError` naming the extra of ``tfr-gen`` that installs it.

Writing: :class:`ObjectFile` makes an object appear whole under its name on a successful
:meth:`~ObjectFile.commit`, or not at all.
"""

from __future__ import annotations

import errno
import io
import os
import re
import weakref
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, BinaryIO

import crc32c

from codegen.errors import MissingExtraError, TfrGenError
from codegen.runtime.io.whole import WholeOrNothing

if TYPE_CHECKING:
    from fsspec import AbstractFileSystem

__all__ = [
    "EXTRAS",
    "ObjectFile",
    "StorageOptions",
    "filesystem",
    "glob",
    "is_url",
    "local_path",
    "open_url",
    "read_parts",
]

StorageOptions = Mapping[str, Any]
"""Options for a store's fsspec filesystem (credentials, endpoint, ...)."""

EXTRAS: dict[str, str] = {
    "s3": "s3",
    "s3a": "s3",
    "gs": "gcs",
    "gcs": "gcs",
    "http": "http",
    "https": "http",
}
"""The extra of ``tfr-gen`` that installs the fsspec plug-in of each protocol."""

_PROTOCOL = re.compile(r"(?P<protocol>[A-Za-z][A-Za-z0-9+.\-]*)(?:://|::)")
_LOCAL = ("file", "local")


def _protocol(path: str) -> str | None:
    match = _PROTOCOL.match(path)
    return None if match is None else match["protocol"].lower()


def is_url(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` names a file of an fsspec store (not a local path nor a ``file://`` URL)."""
    if not isinstance(path, str):
        return False
    protocol = _protocol(path)
    return protocol is not None and protocol not in _LOCAL


def local_path(path: str | os.PathLike[str]) -> str:
    """``path`` as a string, with a ``file://`` (or ``local://``) URL turned into its local path."""
    name = os.fspath(path)
    protocol = _protocol(name)
    if protocol in _LOCAL and name[len(protocol) : len(protocol) + 3] == "://":
        rest = name[len(protocol) + 3 :]
        return rest if rest.startswith("/") else os.path.join(os.getcwd(), rest)
    return name


def filesystem(url: str, storage_options: StorageOptions | None) -> tuple[AbstractFileSystem, str]:
    """The fsspec filesystem of ``url`` (with ``storage_options``) and the path inside it.

    A store whose plug-in is missing raises :class:`~codegen.errors.MissingExtraError` naming the
    extra; an unknown protocol :class:`~codegen.errors.TfrGenError`.
    """
    from fsspec.core import url_to_fs

    try:
        fs, path = url_to_fs(url, **dict(storage_options or {}))
    except ImportError as exc:
        protocol = _protocol(url) or ""
        extra = EXTRAS.get(protocol)
        hint = f"; pip install 'tfr-gen[{extra}]'" if extra else ""
        raise MissingExtraError(
            f"{url}: {protocol}:// URLs need an fsspec plug-in that is not installed ({exc}){hint}"
        ) from None
    except ValueError as exc:
        if "Protocol not known" not in str(exc):
            raise
        raise TfrGenError(f"{url}: {exc} (no fsspec filesystem is installed for it)") from None
    return fs, str(path)


def open_url(
    url: str,
    storage_options: StorageOptions | None = None,
    *,
    block_size: int | None = None,
    cache_type: str | None = None,
) -> BinaryIO:
    """The object at ``url``, opened to read its bytes (``OSError`` when it cannot be).

    ``block_size`` and ``cache_type`` are fsspec's (how many bytes each request asks for, and how
    the file keeps them); ``None`` leaves the store's default."""
    fs, path = filesystem(url, storage_options)
    how = {"block_size": block_size, "cache_type": cache_type}
    try:
        file: BinaryIO = fs.open(path, "rb", **{k: v for k, v in how.items() if v is not None})
    except FileNotFoundError:
        raise _missing(fs, path, url) from None
    except IsADirectoryError:
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), url) from None
    return file


def _missing(fs: AbstractFileSystem, path: str, url: str) -> OSError:
    """The error for the object ``url`` (``path`` in ``fs``) that was not found: a directory, or
    no such object."""
    if fs.isdir(path):
        return IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), url)
    return FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), url)


def read_parts(
    url: str, storage_options: StorageOptions | None, part_size: int
) -> Iterator[memoryview]:
    """The bytes of the object at ``url`` in parts of ``part_size`` (the last one shorter), each
    fetched by one ranged request (``cat_file``) as the part before it is taken: no file object,
    and no request for the object's size when it holds at most ``part_size`` bytes.

    The first request asks for one byte more than a part: fewer come back for an object of one
    part, which ends it. A larger object's size is then asked once, and its other parts are asked
    for exactly; a part of another length than asked (the object changed while it was read, or the
    store ignored the range) is an ``OSError`` naming the object, as is an object that cannot be
    found (``FileNotFoundError``, ``IsADirectoryError``). A store that answers the first request
    with more bytes than asked ignored the range and sent the whole object: it is the only part.
    """
    fs, path = filesystem(url, storage_options)
    try:
        first: bytes = fs.cat_file(path, start=0, end=part_size + 1)
    except FileNotFoundError:
        raise _missing(fs, path, url) from None
    except IsADirectoryError:
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), url) from None
    except Exception:  # the plug-in's own error (aiohttp's for HTTP) for an unsatisfiable range
        if _size_or_none(fs, path) == 0:  # a range of an empty object is not satisfiable
            return
        raise
    if len(first) != part_size + 1:
        if first:
            yield memoryview(first)
        return
    yield memoryview(first)[:part_size]
    del first
    size = int(fs.size(path))
    for start in range(part_size, size, part_size):
        end = min(start + part_size, size)
        part: bytes = fs.cat_file(path, start=start, end=end)
        if len(part) != end - start:
            raise OSError(
                errno.EIO,
                f"the store returned {len(part)} bytes for the {end - start} bytes at offset"
                f" {start} (the object changed while it was read, or the store ignores ranges)",
                url,
            )
        yield memoryview(part)


def _size_or_none(fs: AbstractFileSystem, path: str) -> int | None:
    """The size of the object ``path`` of ``fs``, ``None`` if it cannot be found."""
    try:
        return int(fs.size(path))
    except OSError:
        return None


def glob(pattern: str, storage_options: StorageOptions | None = None) -> list[str]:
    """The URLs of the files (not directories) that ``pattern``, a URL with wildcards, matches (sorted)."""
    fs, path = filesystem(pattern, storage_options)
    found = fs.glob(path, detail=True)
    return sorted(
        fs.unstrip_protocol(name) for name, info in found.items() if info["type"] == "file"
    )


def _stages(fs: AbstractFileSystem) -> bool:
    """Whether objects of ``fs`` are built in memory and stored in one step at commit: for
    filesystems whose ``open`` for writing creates the object at once, whatever ``autocommit``
    says (fsspec's in-memory filesystem)."""
    from fsspec.implementations.memory import MemoryFileSystem

    return getattr(type(fs), "_open", None) is MemoryFileSystem._open


class ObjectFile(WholeOrNothing):
    """An object of an fsspec store that appears at ``url`` whole, on :meth:`commit`, or not at all.

    The object is opened with ``autocommit=False``, so its upload is finished only by
    :meth:`commit` (an S3 multipart upload is completed, a GCS resumable upload finalised); a
    failure or discarding it (see :class:`WholeOrNothing`) aborts the upload, and a killed process never
    finishes it: no object appears under ``url``. Stores whose files cannot defer their creation
    (``memory://``) get the whole object in one ``pipe_file`` at :meth:`commit`.

    :attr:`crc32c`
    is the crc32c of the bytes written so far, :attr:`size` their count; the same interface as
    :class:`~codegen.runtime.io.writer.AtomicFile`.
    """

    def __init__(self, url: str, storage_options: StorageOptions | None = None) -> None:
        self.name = url
        self.fs, self.path = filesystem(url, storage_options)
        self._staged: io.BytesIO | None = None
        self._file: Any
        if _stages(self.fs):
            self._staged = self._file = io.BytesIO()
        else:
            try:
                self._file = self.fs.open(self.path, "wb", autocommit=False)
            except OSError as exc:
                raise _naming(exc, url) from exc
            except NotImplementedError:
                raise TfrGenError(f"{url}: the store cannot write objects") from None
            if getattr(self._file, "autocommit", True) is not False:
                _discard(self._file)
                raise TfrGenError(f"{url}: the store cannot defer the creation of an object")
        self._finalizer = weakref.finalize(self, _discard, self._file)
        self.crc32c = 0
        self._written = 0

    def write(self, data: bytes) -> int:
        """Appends ``data`` to the object (sent to the store in parts, not visible yet)."""
        try:
            self._file.write(data)
        except OSError as exc:
            raise _naming(exc, self.name) from exc
        self.crc32c = crc32c.crc32c(data, self.crc32c)
        self._written += len(data)
        return len(data)

    @property
    def size(self) -> int:
        """How many bytes were written."""
        return self._written

    def flush(self) -> None:
        """Nothing to do: the object appears on :meth:`commit`."""

    def tell(self) -> int:
        """The position of the next byte written: :attr:`size` (for writers such as pyarrow's)."""
        return self._written

    def commit(self) -> None:
        """Finishes the upload: the object appears under its name. If that fails the upload is
        aborted and the error re-raised."""
        try:
            if self._staged is not None:
                self.fs.pipe_file(self.path, self._staged.getvalue())
            else:
                self._file.close()
                self._file.commit()
            self._finalizer.detach()
        except OSError as exc:
            self._finalizer()
            raise _naming(exc, self.name) from exc
        except BaseException:
            self._finalizer()
            raise


def _naming(exc: OSError, url: str) -> OSError:
    """``exc`` (of the same class) naming the object ``url`` that could not be written."""
    reason = exc.strerror or str(exc) or type(exc).__name__
    args = (
        (f"{url}: cannot write it: {reason}",)
        if exc.errno is None
        else (exc.errno, f"cannot write it: {reason}", url)
    )
    try:
        return type(exc)(*args)
    except TypeError:  # a plug-in's error class with a signature of its own
        return OSError(*args)


def _discard(file: Any) -> None:
    """Aborts an unfinished upload (errors of the abort itself are ignored)."""
    try:
        discard = getattr(file, "discard", None)
        if discard is not None:
            discard()
    except Exception:  # noqa: BLE001 - the upload is abandoned either way
        pass
