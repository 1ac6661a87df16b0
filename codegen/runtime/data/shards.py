"""Datasets that know their schema: sharded TFRecord files plus a manifest.

A dataset in a directory is ``<prefix>-<write id>-00000-of-00008.tfrecord.gz`` ... (``.gz`` for
gzip, ``.zlib`` for zlib, nothing more when uncompressed) and ``<prefix>.manifest.json`` (see
:mod:`~codegen.runtime.data.manifest`). Records keep their order: shard ``i`` holds the ``i``-th
contiguous run.

Writing follows the commit protocol of ``docs/datasets.md``: one writer at a time (a lock), shard
names no other write produces, and the atomic publication of the manifest as the one commit;
storage is reached through a :class:`~codegen.runtime.data.store.LocalStore` (a local directory)
or :class:`~codegen.runtime.data.store.FsspecStore` (a URL; ``storage_options`` pass through). Reading reads exactly
the shards the manifest names and checks each one's size, record count and crc32c against it, and
the writer's schema against the reader's with
:func:`~codegen.runtime.data.schemainfo.check_readable`; with ``on_error="skip"`` it reads what it
can of damaged shards and reports the rest (see :func:`read_dataset`).
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from typing import TypeVar

from codegen.errors import DataError, RecordError, TfrGenError
from codegen.runtime.data.manifest import (
    EXTENSIONS,
    LOCK_SUFFIX,
    MANIFEST_SUFFIX,
    Manifest,
    ShardInfo,
    check_compression,
    check_prefix,
    dataset_file_pattern,
    default_prefix,
    load_manifest,
    new_write_id,
    shard_name,
)
from codegen.runtime.data.schemainfo import SchemaInfo, check_readable
from codegen.runtime.data.store import ChecksummedInput, Store, open_store
from codegen.runtime.io.compression import Compression, CompressionArg
from codegen.runtime.io.files import PathLike
from codegen.runtime.io.framing import FRAMING
from codegen.runtime.io.reader import (
    DEFAULT_MAX_RECORD_BYTES,
    TFRecordReader,
    check_max_record_bytes,
)
from codegen.runtime.io.skips import (
    OnError,
    OnSkip,
    SkippedRecord,
    SkippedSpan,
    SkipReporter,
    check_on_error,
)
from codegen.runtime.io.urls import StorageOptions
from codegen.runtime.io.writer import TFRecordWriter

__all__ = ["check_count", "read_dataset", "write_dataset"]

T = TypeVar("T")

_log = logging.getLogger(__name__)


def check_count(name: str, value: int | None) -> None:
    """Nothing if ``value`` is ``None`` or a positive int, else :class:`TfrGenError` naming it."""
    if value is not None and (type(value) is not int or value < 1):
        raise TfrGenError(f"{name} must be a positive int or None, got {value!r}")


def _runs(
    payloads: Iterable[bytes], shards: int | None, per_shard: int | None
) -> Iterator[Iterator[bytes]]:
    """The payloads cut into the contiguous runs of the shards (at least one, possibly empty).

    With ``shards`` the payloads are collected first, to cut them into runs whose sizes differ by
    at most one; otherwise they stream, ``per_shard`` at a time (all in one run when ``None``).
    Each run must be consumed before the next one is taken.
    """
    if shards is not None:
        items = list(payloads)
        base, extra = divmod(len(items), shards)
        start = 0
        for i in range(shards):
            stop = start + base + (i < extra)
            yield iter(items[start:stop])
            start = stop
        return
    iterator = iter(payloads)
    if per_shard is None:
        yield iterator
        return
    head = list(itertools.islice(iterator, 1))
    yield itertools.chain(head, itertools.islice(iterator, per_shard - 1))
    while head := list(itertools.islice(iterator, 1)):
        yield itertools.chain(head, itertools.islice(iterator, per_shard - 1))


def write_dataset(
    directory: PathLike,
    payloads: Iterable[bytes],
    *,
    schema: SchemaInfo,
    shards: int | None = None,
    max_records_per_shard: int | None = None,
    compression: CompressionArg = "auto",
    prefix: str | None = None,
    overwrite: bool = False,
    storage_options: StorageOptions | None = None,
) -> Manifest:
    """Writes serialized records as a sharded dataset with a manifest; returns the manifest.

    ``directory`` is a local path or a URL (an fsspec store, given ``storage_options``; see
    :mod:`codegen.runtime.io.urls`).

    ``compression`` is ``"auto"`` (the default, as for :func:`~codegen.runtime.io.writer.write_tfrecord`:
    by the suffix the shards get, which for a dataset is gzip's ``.tfrecord.gz``), ``"gzip"``,
    ``"zlib"`` (``.tfrecord.zlib``) or ``None`` (``.tfrecord``).

    ``shards`` fixes the number of shards (the payloads are collected first to split them evenly);
    ``max_records_per_shard`` streams, starting a new shard every so many records; with neither,
    all records go to one shard. ``prefix`` defaults to the record name in snake_case.

    The write follows the commit protocol of ``docs/datasets.md``: it holds the dataset's lock
    (``<prefix>.lock``) from start to end, so a second writer of the same dataset fails with
    :class:`~codegen.runtime.data.store.WriterBusyError`; an existing dataset (its manifest) is an
    error unless ``overwrite``. The shards get names that embed a new write id, and publishing the
    manifest is the one commit: until then the previous dataset is untouched and readable, and a
    write that fails, is interrupted or killed leaves it so. After the commit, every other file of
    the dataset (the previous write's shards, and what killed writes left) is removed.
    """
    check_count("shards", shards)
    check_count("max_records_per_shard", max_records_per_shard)
    if shards is not None and max_records_per_shard is not None:
        raise TfrGenError("give shards or max_records_per_shard, not both")
    compression = check_compression("gzip" if compression == "auto" else compression)
    prefix = check_prefix(default_prefix(schema.record) if prefix is None else prefix)
    schema.record_schema()  # the manifest must hold a canonical form that matches its fingerprint
    store = open_store(directory, storage_options)
    store.create_directory()
    write_id = new_write_id()
    with store.lock(prefix + LOCK_SUFFIX, {"write_id": write_id}):
        manifest_name = prefix + MANIFEST_SUFFIX
        if not overwrite and manifest_name in store.names():
            raise TfrGenError(
                f"{store.path(manifest_name)}: a dataset with prefix {prefix!r} already exists;"
                " pass overwrite=True to replace it"
            )
        infos = _write_shards(
            store, payloads, prefix, write_id, compression, shards, max_records_per_shard
        )
        manifest = Manifest(store.directory, prefix, schema, compression, infos, write_id)
        COMMIT_HOOK("publish")
        try:
            store.publish(manifest_name, manifest.to_text().encode("utf-8"))  # the commit
        except BaseException:
            store.remove([info.file for info in infos])
            raise
        COMMIT_HOOK("published")
        keep = {info.file for info in infos}
        pattern = dataset_file_pattern(prefix)
        store.remove([n for n in store.names() if pattern.fullmatch(n) and n not in keep])
    return manifest


def _commit_hook(step: str) -> None:
    """Called at each step of the commit (``"publish"`` before the manifest is published,
    ``"published"`` after): tests replace it to stop a writer at that very step."""


COMMIT_HOOK: Callable[[str], None] = _commit_hook


def _write_shards(
    store: Store,
    payloads: Iterable[bytes],
    prefix: str,
    write_id: str,
    compression: Compression,
    shards: int | None,
    per_shard: int | None,
) -> tuple[ShardInfo, ...]:
    """Writes the shards of one write under their final names (with ``shards``) or under names
    without their count, renamed once it is known; returns their manifest entries. On failure the
    shards written so far are removed."""
    written: list[ShardInfo] = []
    created: list[str] = []  # every name a shard of this write may have on failure
    try:
        for index, run in enumerate(_runs(payloads, shards, per_shard)):
            name = (
                f"{prefix}-{write_id}-{index:05d}{EXTENSIONS[compression]}"
                if shards is None
                else shard_name(prefix, index, shards, compression, write_id)
            )
            created.append(name)
            with store.create(name) as file:
                with TFRecordWriter(file, compression=compression) as writer:  # type: ignore[arg-type]
                    writer.write_many(run)
            written.append(ShardInfo(name, writer.records_written, file.size, file.crc32c))
        if shards is None:
            count = len(written)
            for i, info in enumerate(written):
                written[i] = replace(info, file=shard_name(prefix, i, count, compression, write_id))
                created.append(written[i].file)
                store.rename(info.file, written[i].file)
            store.sync()
    except BaseException:
        store.remove(created)
        raise
    return tuple(written)


def read_dataset(
    directory: PathLike,
    decode: Callable[[bytes], T],
    *,
    schema: SchemaInfo,
    check_schema: bool = True,
    prefix: str | None = None,
    on_error: OnError = "raise",
    on_skip: OnSkip | None = None,
    max_record_bytes: int | None = DEFAULT_MAX_RECORD_BYTES,
    storage_options: StorageOptions | None = None,
) -> Iterator[T]:
    """The decoded records of a dataset, in order, checked against its manifest.

    ``directory`` is a local path or a URL (an fsspec store, given ``storage_options``).

    ``prefix=None`` reads the dataset named after ``schema``'s record (as :func:`write_dataset`
    names it) if there is one, else the only dataset in the directory. With ``check_schema`` (the
    default) the writer's schema must be readable by ``schema``: every change from it is
    ``backward`` or ``full``, else :class:`~codegen.errors.SchemaMismatchError` names every change.
    The manifest and schema are checked at once, in both modes.

    ``max_record_bytes`` is the largest record read (see
    :class:`~codegen.runtime.io.reader.TFRecordReader`).

    With ``on_error="raise"`` (the default) each shard's byte size is checked before it is read
    and its record count after; a shard that cannot be opened raises
    :class:`~codegen.errors.TfrGenError`, and a corrupt or truncated shard, or a record that does
    not decode, :class:`~codegen.errors.DataError` with its file, index and offset.

    With ``on_error="skip"`` nothing of a shard raises. Each piece passed over goes to ``on_skip``
    (see :mod:`codegen.runtime.io.skips`; without a callback it is logged as a warning): a corrupt
    or truncated stretch (the reader resynchronises after it), a shard that cannot be opened (a
    span of offset 0 and the manifest's byte size for it), and a record that does not decode (a
    :class:`~codegen.runtime.io.skips.SkippedRecord`). A shard whose byte size or record count does
    not match the manifest is read all the same and the mismatch logged as a warning: it follows
    from what was skipped, or from a shard replaced after writing. When the read ends, a summary
    of what was skipped is logged (if anything was).
    """
    on_error = check_on_error(on_error, on_skip, "read_dataset")
    check_max_record_bytes(max_record_bytes)
    store = open_store(directory, storage_options)
    if prefix is None:
        named = default_prefix(schema.record)
        prefix = named if named + MANIFEST_SUFFIX in store.names() else None
    manifest = load_manifest(directory, prefix, storage_options=storage_options)
    if check_schema:
        check_readable(manifest.schema, schema, source=f"dataset {manifest.path}")
    if on_error == "raise":
        return _records(manifest, store, decode, max_record_bytes)
    return _skipping_records(manifest, store, decode, SkipReporter(on_skip, _log), max_record_bytes)


def _open_shard(store: Store, shard: ShardInfo) -> ChecksummedInput:
    """The shard, opened to be read once and checksummed; a :class:`TfrGenError` if it cannot
    be."""
    try:
        return store.open_input(shard.file)
    except FileNotFoundError:
        raise TfrGenError(
            f"{store.path(shard.file)}: the shard is missing: the dataset was overwritten or"
            " removed after its manifest was read, or the shard was deleted"
        ) from None
    except OSError as exc:
        raise TfrGenError(
            f"{store.path(shard.file)}: cannot read the shard: {exc.strerror or exc}"
        ) from None


def _changed(path: str, shard: ShardInfo, file: ChecksummedInput) -> str | None:
    """Why the shard read through ``file`` is not the one its manifest lists, if it is not."""
    reason = file.mismatch(shard.size, shard.crc32c)
    return None if reason is None else f"{path}: {reason}"


def _records(
    manifest: Manifest, store: Store, decode: Callable[[bytes], T], max_record_bytes: int | None
) -> Iterator[T]:
    for shard, path in zip(manifest.shards, manifest.paths, strict=True):
        file = _open_shard(store, shard)
        with file:
            size = file.file_size()
            if size != shard.size:
                raise TfrGenError(
                    f"{path}: the shard has {size} bytes but the manifest lists {shard.size}: it"
                    " was changed or replaced after the dataset was written"
                )
            yield from _shard_records(
                file, path, shard, manifest.compression, decode, max_record_bytes
            )
            changed = _changed(path, shard, file)
            if changed is not None:
                raise TfrGenError(changed)


def _shard_records(
    file: ChecksummedInput,
    path: str,
    shard: ShardInfo,
    compression: Compression,
    decode: Callable[[bytes], T],
    max_record_bytes: int | None,
) -> Iterator[T]:
    with TFRecordReader(
        file,  # type: ignore[arg-type]
        compression=compression,
        max_record_bytes=max_record_bytes,
    ) as reader:
        for data in reader:
            offset = reader.offset - len(data) - FRAMING  # the record's header
            index = reader.index - 1
            if index >= shard.records:
                raise DataError(
                    f"the shard holds more records than the {shard.records} its manifest lists",
                    path=path,
                    index=index,
                    offset=offset,
                )
            try:
                record = decode(data)
            except RecordError as exc:
                raise DataError(str(exc), path=path, index=index, offset=offset) from exc
            yield record
        if reader.index != shard.records:
            raise DataError(
                f"the shard ends after {reader.index} records; its manifest lists {shard.records}",
                path=path,
                index=reader.index,
                offset=reader.offset,
            )


def _skipping_records(
    manifest: Manifest,
    store: Store,
    decode: Callable[[bytes], T],
    report: SkipReporter,
    max_record_bytes: int | None,
) -> Iterator[T]:
    """The records :func:`read_dataset` yields with ``on_error="skip"``."""
    for shard, path in zip(manifest.shards, manifest.paths, strict=True):
        try:
            file = _open_shard(store, shard)
        except TfrGenError as exc:
            report(SkippedSpan(path, 0, shard.size, str(exc).removeprefix(f"{path}: ")))
            continue
        with (
            file,
            TFRecordReader(
                file,  # type: ignore[arg-type]
                compression=manifest.compression,
                on_error="skip",
                on_skip=report,
                max_record_bytes=max_record_bytes,
            ) as reader,
        ):
            size = file.file_size()
            if size != shard.size:
                _log.warning(
                    "%s: the shard has %d bytes but the manifest lists %d; reading it all the same",
                    path,
                    size,
                    shard.size,
                )
            for data in reader:
                try:
                    record = decode(data)
                except RecordError as exc:
                    offset = reader.offset - len(data) - FRAMING
                    report(
                        SkippedRecord(path, offset, len(data) + FRAMING, str(exc), reader.index - 1)
                    )
                    continue
                yield record
            if reader.index != shard.records:
                _log.warning(
                    "%s: the shard holds %d readable records; its manifest lists %d",
                    path,
                    reader.index,
                    shard.records,
                )
            if size == shard.size and (changed := _changed(path, shard, file)) is not None:
                _log.warning("%s; read all the same", changed)
    if report.counts:
        _log.warning("dataset %s: skipped %s", manifest.path, report.counts)
