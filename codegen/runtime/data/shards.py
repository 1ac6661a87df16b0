"""Datasets that know their schema: sharded TFRecord files plus a manifest.

A dataset in a directory is ``<prefix>-00000-of-00008.tfrecord.gz`` ... (``.gz`` for gzip,
``.zlib`` for zlib, nothing more when uncompressed) and ``<prefix>.manifest.json`` (see
:mod:`~codegen.runtime.data.manifest`). Records keep their order: shard ``i`` holds the ``i``-th
contiguous run.

Writing is crash-safe: each shard is written to a hidden temporary file and renamed, and the
manifest is written last, the same way, so a dataset without a manifest is incomplete. Reading
checks every shard's size and record count against the manifest, and the writer's schema against
the reader's with :func:`~codegen.runtime.data.schemainfo.check_readable`; with ``on_error="skip"``
it reads what it can of damaged shards and reports the rest (see :func:`read_dataset`).
"""

from __future__ import annotations

import itertools
import logging
import os
import re
import secrets
from collections.abc import Callable, Iterable, Iterator
from typing import Literal, TypeVar

from codegen.errors import DataError, RecordError, TfrGenError
from codegen.runtime.data.manifest import (
    MANIFEST_SUFFIX,
    Manifest,
    ShardInfo,
    check_compression,
    check_prefix,
    default_prefix,
    load_manifest,
    shard_name,
    write_manifest,
)
from codegen.runtime.data.schemainfo import SchemaInfo, check_readable
from codegen.runtime.io.compression import Compression
from codegen.runtime.io.files import PathLike, open_input
from codegen.runtime.io.framing import FRAMING
from codegen.runtime.io.reader import TFRecordReader
from codegen.runtime.io.skips import (
    OnError,
    OnSkip,
    SkippedRecord,
    SkippedSpan,
    SkipReporter,
    check_on_error,
)
from codegen.runtime.io.writer import TFRecordWriter, fsync_directory

__all__ = ["check_count", "read_dataset", "write_dataset"]

T = TypeVar("T")

_log = logging.getLogger(__name__)


def check_count(name: str, value: int | None) -> None:
    """Nothing if ``value`` is ``None`` or a positive int, else :class:`TfrGenError` naming it."""
    if value is not None and (type(value) is not int or value < 1):
        raise TfrGenError(f"{name} must be a positive int or None, got {value!r}")


def _dataset_files(directory: str, prefix: str) -> list[str]:
    """The manifest and shard files of the dataset ``prefix`` that exist in ``directory``."""
    shard = re.compile(re.escape(prefix) + r"-[0-9]{5,}-of-[0-9]{5,}\.tfrecord(?:\.gz|\.zlib)?")
    manifest = prefix + MANIFEST_SUFFIX
    return sorted(
        name for name in os.listdir(directory) if name == manifest or shard.fullmatch(name)
    )


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
    compression: Literal["gzip", "zlib"] | None = "gzip",
    prefix: str | None = None,
    overwrite: bool = False,
) -> Manifest:
    """Writes serialized records as a sharded dataset with a manifest; returns the manifest.

    ``shards`` fixes the number of shards (the payloads are collected first to split them evenly);
    ``max_records_per_shard`` streams, starting a new shard every so many records; with neither,
    all records go to one shard. ``prefix`` defaults to the record name in snake_case. An existing
    dataset with the same prefix (its manifest or any shard) is an error unless ``overwrite``; it
    is then replaced, and its shards that the new dataset does not reuse are deleted. If writing a
    shard fails, the shards written so far are deleted and an existing dataset is left as it was.
    """
    check_count("shards", shards)
    check_count("max_records_per_shard", max_records_per_shard)
    if shards is not None and max_records_per_shard is not None:
        raise TfrGenError("give shards or max_records_per_shard, not both")
    compression = check_compression(compression)
    prefix = check_prefix(default_prefix(schema.record) if prefix is None else prefix)
    schema.record_schema()  # the manifest must hold a canonical form that matches its fingerprint
    root = os.fspath(directory)
    os.makedirs(root, exist_ok=True)
    existing = _dataset_files(root, prefix)
    if existing and not overwrite:
        raise TfrGenError(
            f"{root}: a dataset with prefix {prefix!r} already exists ({', '.join(existing[:3])}"
            f"{', ...' if len(existing) > 3 else ''}); pass overwrite=True to replace it"
        )
    pending: list[tuple[str, int]] = []  # temporary shard files and their record counts
    token = secrets.token_hex(6)
    try:
        for index, run in enumerate(_runs(payloads, shards, max_records_per_shard)):
            temporary = os.path.join(root, f".{prefix}-{index:05d}.{token}.pending")
            with TFRecordWriter(temporary, compression=compression) as writer:
                for payload in run:
                    writer.write(payload)
            pending.append((temporary, writer.records_written))
    except BaseException:
        for temporary, _ in pending:
            os.unlink(temporary)
        raise
    manifest_path = os.path.join(root, prefix + MANIFEST_SUFFIX)
    if os.path.exists(manifest_path):
        os.unlink(manifest_path)  # from here on the old dataset is incomplete, never inconsistent
    infos: list[ShardInfo] = []
    for index, (temporary, records) in enumerate(pending):
        name = shard_name(prefix, index, len(pending), compression)
        os.replace(temporary, os.path.join(root, name))
        infos.append(ShardInfo(name, records, os.path.getsize(os.path.join(root, name))))
    fsync_directory(root)
    manifest = Manifest(root, prefix, schema, compression, tuple(infos))
    write_manifest(manifest)
    written = {info.file for info in infos} | {prefix + MANIFEST_SUFFIX}
    for name in existing:
        if name not in written:
            os.unlink(os.path.join(root, name))
    return manifest


def read_dataset(
    directory: PathLike,
    decode: Callable[[bytes], T],
    *,
    schema: SchemaInfo,
    check_schema: bool = True,
    prefix: str | None = None,
    on_error: OnError = "raise",
    on_skip: OnSkip | None = None,
) -> Iterator[T]:
    """The decoded records of a dataset, in order, checked against its manifest.

    ``prefix=None`` reads the dataset named after ``schema``'s record (as :func:`write_dataset`
    names it) if there is one, else the only dataset in the directory. With ``check_schema`` (the
    default) the writer's schema must be readable by ``schema``: every change from it is
    ``backward`` or ``full``, else :class:`~codegen.errors.SchemaMismatchError` names every change.
    The manifest and schema are checked at once, in both modes.

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
    root = os.fspath(directory)
    if prefix is None:
        named = default_prefix(schema.record)
        prefix = named if os.path.exists(os.path.join(root, named + MANIFEST_SUFFIX)) else None
    manifest = load_manifest(root, prefix)
    if check_schema:
        check_readable(manifest.schema, schema, source=f"dataset {manifest.path}")
    if on_error == "raise":
        return _records(manifest, decode)
    return _skipping_records(manifest, decode, SkipReporter(on_skip, _log))


def _records(manifest: Manifest, decode: Callable[[bytes], T]) -> Iterator[T]:
    for shard, path in zip(manifest.shards, manifest.paths, strict=True):
        try:
            size = os.path.getsize(path)
        except OSError as exc:
            raise TfrGenError(f"{path}: cannot read the shard: {exc.strerror or exc}") from None
        if size != shard.size:
            raise TfrGenError(
                f"{path}: the shard has {size} bytes but the manifest lists {shard.size}: it was"
                " changed or replaced after the dataset was written"
            )
        yield from _shard_records(path, shard, manifest.compression, decode)


def _shard_records(
    path: str, shard: ShardInfo, compression: Compression, decode: Callable[[bytes], T]
) -> Iterator[T]:
    with TFRecordReader(path, compression=compression) as reader:
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
    manifest: Manifest, decode: Callable[[bytes], T], report: SkipReporter
) -> Iterator[T]:
    """The records :func:`read_dataset` yields with ``on_error="skip"``."""
    for shard, path in zip(manifest.shards, manifest.paths, strict=True):
        try:
            file = open_input(path)
        except OSError as exc:
            report(
                SkippedSpan(path, 0, shard.size, f"cannot read the shard: {exc.strerror or exc}")
            )
            continue
        with (
            file,
            TFRecordReader(
                file, compression=manifest.compression, on_error="skip", on_skip=report
            ) as reader,
        ):
            size = os.fstat(file.fileno()).st_size
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
    if report.counts:
        _log.warning("dataset %s: skipped %s", manifest.path, report.counts)
