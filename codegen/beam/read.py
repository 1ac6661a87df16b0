"""``ReadDataset``: the records of one or more datasets, checked against their manifests."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any, Generic

import apache_beam as beam

from codegen.beam.coder import register_coder
from codegen.beam.files import (
    choose_prefix,
    file_size,
    join,
    load_dataset_manifest,
    match_manifests,
    open_records,
)
from codegen.beam.record import R, schema_info
from codegen.errors import DataError, RecordError, TfrGenError
from codegen.runtime.data.manifest import MANIFEST_SUFFIX, Manifest, check_prefix
from codegen.runtime.data.schemainfo import check_readable
from codegen.runtime.io.compression import Compression
from codegen.runtime.io.files import PathLike

__all__ = ["ReadDataset"]

_GLOB = frozenset("*?[")

_Shard = tuple[str, int, int, int | None, Compression]
"""One shard to read: its path, and its record count, byte size, crc32c and compression per its
manifest."""


class ReadDataset(beam.PTransform):  # type: ignore[misc]
    """Reads the records of schema-typed datasets into a PCollection of ``record`` instances.

    ``source`` is a dataset directory (its dataset is the one ``Record.read_dataset`` picks: the
    one named after the record if there is one, else the only one, or the one ``prefix`` names),
    or a glob of manifest files (``gs://bucket/runs/*/customer.manifest.json``): every dataset it
    matches is read.

    While the pipeline is built, each manifest is loaded and checked, and with ``check_schema``
    (the default) its writer's schema must be readable by ``record``'s: every change from it is
    ``backward`` or ``full``, else :class:`~codegen.errors.SchemaMismatchError` names every change.
    When the pipeline runs, each shard's byte size is checked before it is read and its record
    count after; every CRC is checked, and a record that does not decode fails the pipeline with a
    :class:`~codegen.errors.DataError` naming its file, index and offset. The output's coder is
    :class:`~codegen.beam.coder.RecordCoder`.
    """

    def __init__(
        self,
        record: type[R],
        source: PathLike,
        *,
        prefix: str | None = None,
        check_schema: bool = True,
    ) -> None:
        super().__init__()
        self._record: type[Any] = record
        self._schema = schema_info(record)
        self._source = os.fspath(source)
        if prefix is not None and _GLOB.intersection(self._source):
            raise TfrGenError(
                f"{self._source}: prefix= chooses a dataset in a directory; a glob names the"
                f" manifests (*{MANIFEST_SUFFIX}) itself"
            )
        self._prefix = None if prefix is None else check_prefix(prefix)
        self._check_schema = check_schema

    def manifests(self) -> list[Manifest]:
        """The manifests of the datasets ``source`` names, each checked against the schema."""
        if _GLOB.intersection(self._source):
            located = [os.path.split(path) for path in match_manifests(self._source)]
        else:
            prefix = self._prefix or choose_prefix(self._source, self._schema.record)
            located = [(self._source, prefix + MANIFEST_SUFFIX)]
        manifests = [
            load_dataset_manifest(directory, name[: -len(MANIFEST_SUFFIX)])
            for directory, name in located
        ]
        if self._check_schema:
            for manifest in manifests:
                check_readable(manifest.schema, self._schema, source=f"dataset {manifest.path}")
        return manifests

    def expand(self, begin: Any) -> Any:
        shards: list[_Shard] = [
            (
                join(manifest.directory, shard.file),
                shard.records,
                shard.size,
                shard.crc32c,
                manifest.compression,
            )
            for manifest in self.manifests()
            for shard in manifest.shards
        ]
        register_coder(self._record)
        return (
            begin
            | "Shards" >> beam.Create(shards)
            | "SpreadShards" >> beam.Reshuffle()
            | "ReadShards" >> beam.FlatMap(_ReadShard(self._record)).with_output_types(self._record)
        )


class _ReadShard(Generic[R]):
    """:func:`_read_shard` for one record class (Beam 2.78 refuses a class as a side argument
    hinted ``type[R]``)."""

    def __init__(self, record: type[R]) -> None:
        self._record = record

    def __call__(self, shard: _Shard) -> Iterator[R]:
        return _read_shard(shard, self._record)


def _read_shard(shard: _Shard, record: type[R]) -> Iterator[R]:
    """The decoded records of one shard, checked against its manifest entry."""
    path, records, size, checksum, compression = shard
    actual = file_size(path)
    if actual != size:
        raise TfrGenError(
            f"{path}: the shard has {actual} bytes but the manifest lists {size}: it was"
            " changed or replaced after the dataset was written"
        )
    with open_records(path, compression) as (reader, file):
        for data in reader:
            index = reader.index - 1
            offset = reader.offset - len(data) - 16  # the record's header
            if index >= records:
                raise DataError(
                    f"the shard holds more records than the {records} its manifest lists",
                    path=path,
                    index=index,
                    offset=offset,
                )
            try:
                value = record.decode(data)
            except RecordError as exc:
                raise DataError(str(exc), path=path, index=index, offset=offset) from exc
            yield value
        if reader.index != records:
            raise DataError(
                f"the shard ends after {reader.index} records; its manifest lists {records}",
                path=path,
                index=reader.index,
                offset=reader.offset,
            )
    if (file.size, file.crc32c) != (size, checksum if checksum is not None else file.crc32c):
        raise TfrGenError(
            f"{path}: the shard's bytes differ from those its manifest lists (crc32c"
            f" {file.crc32c:08x}, {file.size} bytes): it was changed or replaced after the"
            " dataset was written"
        )
