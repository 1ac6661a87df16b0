"""The files a :class:`~codegen.runtime.data.dataset.Dataset` reads, and what is known of them.

A dataset's ``files`` name TFRecord files, ``write_dataset`` directories and their manifests, as
local paths or URLs (see :mod:`codegen.runtime.io.urls`; globs work on object stores too, and
``storage_options`` pass through):

* a **path** to a TFRecord file, or a **glob pattern** (``"data/train-*.tfrecord.gz"``); index files
  (``FILE.index``) a pattern matches are left out, and a manifest it matches counts as its dataset;
* a **directory** ``write_dataset`` made: its dataset (the one named after the reader's record when
  there are several, as ``read_dataset`` picks it);
* a **manifest** file (``<prefix>.manifest.json``): the shards it lists.

Instead of files, a dataset may read open binary file objects (:data:`Streams`: one, or a
sequence of them, in the order given; see :func:`stream_sources`): each is read from the position
it has when given, again for every epoch, so it must be able to seek.

Each file becomes a :class:`Source`: its path, compression and, when known without reading it,
its record count: from the manifest that lists it, or from a current index beside it
(``tfr-gen index``); a manifest's shard also has its byte size and crc32c, which
:class:`SourceReader` checks in the pass that reads it. With ``check_schema`` (the default) every
manifest's writer schema must be readable by the reader's record, as
:func:`~codegen.runtime.data.shards.read_dataset` checks it.
"""

from __future__ import annotations

import glob
import itertools
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import BinaryIO, Literal, cast

from codegen.errors import TfrGenError
from codegen.runtime.data.manifest import MANIFEST_SUFFIX, default_prefix, load_manifest
from codegen.runtime.data.schemainfo import SchemaInfo, check_readable
from codegen.runtime.data.store import ChecksummedInput, open_store
from codegen.runtime.io.compression import (
    HEAD_SIZE,
    Compression,
    CompressionArg,
    check_declared,
    file_compression,
)
from codegen.runtime.io.files import binary_stream, open_input, read_head, stream_name
from codegen.runtime.io.indexed import INDEX_SUFFIX, read_index
from codegen.runtime.io.reader import DEFAULT_MAX_RECORD_BYTES, TFRecordReader
from codegen.runtime.io.skips import OnError, OnSkip
from codegen.runtime.io.urls import StorageOptions, filesystem, is_url, local_path
from codegen.runtime.io.urls import glob as glob_url

__all__ = [
    "TFDS_INFO",
    "Files",
    "Source",
    "SourceReader",
    "StreamFile",
    "Streams",
    "count_records",
    "find_sources",
    "given_streams",
    "stream_sources",
]

TFDS_INFO = "dataset_info.json"
"""The file of a prepared TFDS dataset that lists its splits and shards (see
:mod:`codegen.runtime.data.tfds`)."""

Files = str | os.PathLike[str] | Sequence[str | os.PathLike[str]]
"""What a dataset reads: paths, glob patterns, dataset directories or manifests, or a sequence of them."""

Streams = BinaryIO | Sequence[BinaryIO]
"""What a dataset reads instead of files: an open binary file object, or a sequence of them."""


@dataclass(frozen=True, slots=True)
class Source:
    """One file a dataset reads: its path, compression, and record count when known (else ``None``)."""

    path: str
    compression: Compression
    records: int | None
    size: int | None = None
    """The byte size a manifest lists for the shard (``None`` for a file named directly)."""
    crc32c: int | None = None
    """The crc32c of its bytes a manifest lists for the shard (``None`` for a file named directly,
    or a shard of a format version 1 manifest)."""


def find_sources(
    files: Files,
    compression: Compression | Literal["auto"],
    schema: SchemaInfo | None,
    *,
    check_schema: bool = True,
    storage_options: StorageOptions | None = None,
) -> tuple[Source, ...]:
    """The files named by ``files``, sorted by path, without repeats (see the module docstring).

    ``compression`` applies to TFRecord files named directly (``"auto"``: detected from each file's
    first bytes); a manifest's shards have the manifest's. ``schema`` is the reader's; ``None`` checks no schema.
    URLs are reached with ``storage_options``.
    """
    if callable(getattr(files, "read", None)):
        raise _not_a_path(files)
    patterns = [files] if isinstance(files, str | os.PathLike) else list(files)
    if not patterns:
        raise TfrGenError("Dataset: no files given")
    for pattern in patterns:
        if not isinstance(pattern, str | os.PathLike):
            raise _not_a_path(pattern)
    found: dict[str, Source] = {}
    for pattern in patterns:
        if is_url(pattern):
            for source in _url_sources(
                os.fspath(pattern), compression, schema, check_schema, storage_options
            ):
                if source.size is not None or source.path not in found:
                    found[source.path] = source  # a shard also matched by name keeps its count
            continue
        name = local_path(pattern)
        if glob.has_magic(name):
            matches = [
                path
                for path in glob.glob(name)
                if os.path.isfile(path) and not path.endswith(INDEX_SUFFIX)
            ]
            if not matches:
                raise TfrGenError(f"Dataset: no file matches {name!r}")
        elif os.path.isdir(name):
            if not any(entry.endswith(MANIFEST_SUFFIX) for entry in os.listdir(name)):
                if os.path.isfile(os.path.join(name, TFDS_INFO)):
                    raise TfrGenError(
                        f"Dataset: {name!r} is a prepared TFDS dataset: name the split to read"
                        " (split='train')"
                    )
                raise TfrGenError(
                    f"Dataset: {name!r} is a directory without a dataset manifest"
                    f" (*{MANIFEST_SUFFIX}); name its files with a glob such as"
                    f" {os.path.join(name, '*.tfrecord*')!r}"
                )
            matches = [name]
        elif not os.path.isfile(name):
            raise TfrGenError(f"Dataset: no such file {name!r}")
        else:
            matches = [name]
        for path in matches:
            if os.path.isdir(path) or path.endswith(MANIFEST_SUFFIX):
                for source in _manifest_sources(path, schema, check_schema):
                    found[source.path] = source  # a shard also matched by name keeps its count
            elif path not in found:
                mode = file_compression(path, compression)
                found[path] = Source(path, mode, _indexed_count(path, mode))
    return tuple(found[path] for path in sorted(found))


def _not_a_path(value: object) -> TypeError:
    return TypeError(
        f"expected paths, URLs or glob patterns, got {type(value).__name__}"
        " (file objects are read by Record.dataset and the readers of one file)"
    )


def _url_sources(
    url: str,
    compression: Compression | Literal["auto"],
    schema: SchemaInfo | None,
    check_schema: bool,
    storage_options: StorageOptions | None,
) -> list[Source]:
    """The sources ``url`` names: a glob, a dataset directory, a manifest or a file of a store."""
    fs, path = filesystem(url, storage_options)
    if glob.has_magic(path):
        matches = [m for m in glob_url(url, storage_options) if not m.endswith(INDEX_SUFFIX)]
        if not matches:
            raise TfrGenError(f"Dataset: no file matches {url!r}")
    elif fs.isdir(path):
        matches = [url]
    elif not fs.isfile(path):
        raise TfrGenError(f"Dataset: no such file {url!r}")
    else:
        matches = [url]
    sources: list[Source] = []
    for match in matches:
        if match.endswith(MANIFEST_SUFFIX) or match == url and fs.isdir(path):
            directory = match == url and fs.isdir(path)
            sources.extend(
                _manifest_sources(match, schema, check_schema, storage_options, directory)
            )
        else:
            mode = file_compression(match, compression, storage_options=storage_options)
            sources.append(Source(match, mode, None))
    return sources


def _manifest_sources(
    path: str,
    schema: SchemaInfo | None,
    check_schema: bool,
    storage_options: StorageOptions | None = None,
    directory_given: bool | None = None,
) -> tuple[Source, ...]:
    """The shards of the dataset in directory ``path``, or of the manifest file ``path``."""
    if directory_given is None:
        directory_given = os.path.isdir(path)
    if directory_given:
        directory, prefix = path, None
        if schema is not None:
            named = default_prefix(schema.record)
            if named + MANIFEST_SUFFIX in open_store(path, storage_options).names():
                prefix = named
    else:
        directory = os.path.dirname(path) or "."
        prefix = os.path.basename(path)[: -len(MANIFEST_SUFFIX)]
    manifest = load_manifest(directory, prefix, storage_options=storage_options)
    if check_schema and schema is not None:
        check_readable(manifest.schema, schema, source=f"dataset {manifest.path}")
    return tuple(
        Source(shard_path, manifest.compression, shard.records, shard.size, shard.crc32c)
        for shard, shard_path in zip(manifest.shards, manifest.paths, strict=True)
    )


def _indexed_count(path: str, compression: Compression) -> int | None:
    """The record count of an uncompressed file from its current index, if it has one."""
    index = path + INDEX_SUFFIX
    if compression is not None or not os.path.isfile(index):
        return None
    try:
        info = read_index(index)
        current = info.matches(os.stat(path))
    except (OSError, TfrGenError):
        return None
    return len(info.offsets) if current else None


def given_streams(files: Files | Streams) -> list[BinaryIO] | None:
    """The file objects ``files`` gives (one, or a sequence of them), or ``None`` when it names
    files; ``TypeError`` for a sequence that mixes file objects with paths."""
    if isinstance(files, str | os.PathLike):
        return None
    if callable(getattr(files, "read", None)):
        return [cast("BinaryIO", files)]
    items = list(cast("Sequence[object]", files))
    streams = [item for item in items if not isinstance(item, str | os.PathLike)]
    if not streams:
        return None
    if len(streams) != len(items):
        raise TypeError("Dataset: give paths and URLs, or binary file objects, not a mix of both")
    return cast("list[BinaryIO]", streams)


class StreamFile:
    """A caller's binary file object that a dataset reads from ``start``, the position it had when
    given (:meth:`rewound` before each read), and whose name (:func:`stream_name`, or
    ``<stream N>``) stands for it in errors. It is never closed here."""

    __slots__ = ("stream", "start", "name")

    def __init__(self, stream: BinaryIO, name: str) -> None:
        self.stream = binary_stream(stream, "Dataset", seek_for="reading it for every epoch")
        self.start = self.stream.tell()
        self.name = name

    def rewound(self) -> BinaryIO:
        """The file object at its start."""
        self.stream.seek(self.start)
        return self.stream

    def size(self) -> int:
        """Its bytes from its start (its position is kept)."""
        position = self.stream.tell()
        end = self.stream.seek(0, os.SEEK_END)
        self.stream.seek(position)
        return end - self.start


def stream_sources(
    streams: Sequence[BinaryIO], compression: CompressionArg
) -> tuple[tuple[Source, ...], tuple[StreamFile, ...]]:
    """The sources of the file objects ``streams`` in the order given (``compression="auto"``:
    detected from each one's first bytes; a declared one the data contradicts raises), and the
    files to read them from. ``TypeError`` for a file that is in text mode or cannot seek."""
    if not streams:
        raise TfrGenError("Dataset: no files given")
    files: list[StreamFile] = []
    sources: list[Source] = []
    for i, stream in enumerate(streams):
        name = stream_name(stream)
        file = StreamFile(stream, f"<stream {i}>" if name == "<stream>" else name)
        mode = check_declared(compression, read_head(file.rewound(), HEAD_SIZE), file.name)
        sources.append(Source(file.name, mode, None))
        files.append(file)
    return tuple(sources), tuple(files)


def count_records(
    source: Source,
    storage_options: StorageOptions | None = None,
    max_record_bytes: int | None = DEFAULT_MAX_RECORD_BYTES,
    stream: StreamFile | None = None,
) -> int:
    """The readable records of ``source`` (its known count, else found by reading it once, from
    ``stream`` when it is a file object; a record larger than ``max_record_bytes`` is not
    readable)."""
    if source.records is not None:
        return source.records
    count = 0
    with TFRecordReader(
        source.path if stream is None else stream.rewound(),
        compression=source.compression,
        on_error="skip",
        storage_options=storage_options,
        max_record_bytes=max_record_bytes,
    ) as reader:
        for _ in reader:
            count += 1
    return count


class SourceReader:
    """A :class:`~codegen.runtime.io.reader.TFRecordReader` of one source (:attr:`reader`) that,
    for a manifest's shard with a crc32c, checksums the bytes as it reads them: when the records
    run out, a file whose bytes are not the shard its manifest lists (same size, other bytes)
    calls ``changed`` with the reason, once; ``changed`` raises or reports it.

    A read that stops before the end of the file (corrupt compressed data skipped to the end) is
    not checked: what stopped it was reported already. ``stream`` is the file already opened (a
    read-ahead of a file at a URL), else it is opened from its path with ``storage_options``.
    ``with`` or :meth:`close` closes it.
    """

    __slots__ = ("reader", "_file", "_source", "_changed")

    def __init__(
        self,
        source: Source,
        changed: Callable[[str], None],
        *,
        on_error: OnError = "raise",
        on_skip: OnSkip | None = None,
        max_record_bytes: int | None,
        stream: BinaryIO | None = None,
        storage_options: StorageOptions | None = None,
    ) -> None:
        self._source = source
        self._changed = changed
        self._file: ChecksummedInput | None = None
        opened: str | BinaryIO = source.path if stream is None else stream
        try:
            if source.crc32c is not None:
                file = stream or open_input(source.path, storage_options=storage_options)
                self._file = ChecksummedInput(file)
                opened = cast("BinaryIO", self._file)
            self.reader = TFRecordReader(
                opened,
                compression=source.compression,
                on_error=on_error,
                on_skip=on_skip,
                max_record_bytes=max_record_bytes,
                storage_options=storage_options,
            )
        except BaseException:
            if self._file is not None:
                self._file.close()
            raise

    def runs(self, views: bool, spans: bool = False) -> Iterator[Sequence[bytes]]:
        """The records in lists, one per stretch of the file the reader holds (memoryviews of
        the reader's buffers with ``views``, a ``Spans`` of each with ``spans``, see
        :meth:`~codegen.runtime.io.reader.TFRecordReader.batches`), then the check."""
        runs = self.reader.batches(views=views, spans=spans)
        if self._file is None:
            return runs
        return itertools.chain(runs, self._checked())

    def _checked(self) -> Iterator[Sequence[bytes]]:
        file, source = self._file, self._source
        assert file is not None and source.size is not None, "only a manifest's shards are checked"
        if file.size == source.size:
            reason = file.mismatch(source.size, source.crc32c)
            if reason is not None:
                self._changed(reason)
        yield from ()

    def close(self) -> None:
        """Closes the reader and the file."""
        self.reader.close()
        if self._file is not None:
            self._file.close()

    def __enter__(self) -> SourceReader:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
