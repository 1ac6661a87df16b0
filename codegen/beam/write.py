"""``WriteDataset``: a pipeline's records as a sharded dataset with its manifest."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any, NamedTuple

import apache_beam as beam
from apache_beam.io.filesystem import CompressionTypes

from codegen.beam.encode import EncodeRecords
from codegen.beam.files import (
    dataset_files,
    delete,
    file_size,
    join,
    open_records,
    write_text_atomic,
)
from codegen.beam.record import R, schema_info
from codegen.errors import TfrGenError
from codegen.runtime.data.manifest import (
    EXTENSIONS,
    MANIFEST_SUFFIX,
    Manifest,
    ShardInfo,
    check_compression,
    check_prefix,
    default_prefix,
    shard_name,
)
from codegen.runtime.data.schemainfo import SchemaInfo
from codegen.runtime.data.shards import check_count
from codegen.runtime.io.compression import Compression
from codegen.runtime.io.files import PathLike

__all__ = ["WriteDataset", "WriteDatasetResult"]

_BEAM_COMPRESSION: dict[Compression, str] = {
    None: CompressionTypes.UNCOMPRESSED,
    "gzip": CompressionTypes.GZIP,
    "zlib": CompressionTypes.DEFLATE,  # Beam's DEFLATE is the zlib format TensorFlow calls ZLIB
}


class WriteDatasetResult(NamedTuple):
    """The outputs of :class:`WriteDataset`.

    ``manifest`` holds one :class:`~codegen.runtime.data.shards.Manifest` once the dataset is complete;
    ``dead_letter`` a :class:`~codegen.beam.encode.DeadLetter` for every element that was not
    written because it does not make a valid record.
    """

    manifest: Any
    dead_letter: Any


@dataclass(frozen=True, slots=True)
class _Layout:
    """Where and how the dataset is written (what the steps after the sink need to know)."""

    directory: str
    prefix: str
    compression: Compression
    shards: int | None
    overwrite: bool

    @property
    def manifest_path(self) -> str:
        return join(self.directory, self.prefix + MANIFEST_SUFFIX)


class WriteDataset(beam.PTransform):  # type: ignore[misc]
    """Writes a PCollection of records (or mappings of their fields) as a schema-typed dataset.

    The dataset is the one ``Record.write_dataset`` writes and ``Record.read_dataset`` reads:
    shards ``<prefix>-00000-of-00008.tfrecord.gz`` (``.tfrecord.zlib`` for ``"zlib"``,
    ``.tfrecord`` for ``None``) and ``<prefix>.manifest.json``, which names the record's schema
    and lists every shard with its record count and byte size. ``prefix`` defaults to the record
    name in snake_case; ``shards=None`` lets the runner choose how many shards. Records are in no
    particular order (a PCollection has none).

    The shards are written by ``beam.io.WriteToTFRecord``; once they are all finished, each one is
    read back (checking every CRC) to count its records, and the manifest is written last, to a
    temporary file renamed into place, so a dataset without a manifest is incomplete.

    An existing dataset with the same prefix is an error when the pipeline is built, unless
    ``overwrite``: then its manifest is deleted before any shard is written and, after the new
    manifest, its shards that the new dataset did not replace.

    The result's ``.manifest`` holds the written manifest and ``.dead_letter`` every element that
    did not encode, as ``DeadLetter(element, error)``.
    """

    def __init__(
        self,
        record: type[R],
        directory: PathLike,
        *,
        shards: int | None = None,
        compression: Compression = "gzip",
        prefix: str | None = None,
        overwrite: bool = False,
    ) -> None:
        super().__init__()
        check_count("shards", shards)
        self._record: type[Any] = record
        self._schema = schema_info(record)
        compression = check_compression(compression)
        prefix = check_prefix(default_prefix(self._schema.record) if prefix is None else prefix)
        self._layout = _Layout(os.fspath(directory), prefix, compression, shards, overwrite)

    def expand(self, elements: Any) -> WriteDatasetResult:
        layout = self._layout
        existing = dataset_files(layout.directory, layout.prefix)
        if existing and not layout.overwrite:
            raise TfrGenError(
                f"{layout.directory}: a dataset with prefix {layout.prefix!r} already exists"
                f" ({', '.join(existing[:3])}{', ...' if len(existing) > 3 else ''}); pass"
                " overwrite=True to replace it"
            )
        encoded = elements | "Encode" >> EncodeRecords(self._record)
        payloads = encoded.records
        if layout.overwrite:
            removed = (
                elements.pipeline
                | "Start" >> beam.Create([None])
                | "RemoveOldManifest" >> beam.Map(_remove_manifest, layout)
            )
            payloads = payloads | "AfterOldManifest" >> beam.Map(
                _after, beam.pvalue.AsSingleton(removed)
            )
        finished = payloads | "WriteShards" >> beam.io.WriteToTFRecord(
            join(layout.directory, layout.prefix),
            file_name_suffix=EXTENSIONS[layout.compression],
            num_shards=layout.shards or 0,
            shard_name_template="-SSSSS-of-NNNNN",
            compression_type=_BEAM_COMPRESSION[layout.compression],
        )
        manifest = (
            finished
            | "ListShards" >> beam.combiners.ToList()
            | "ShardFiles" >> beam.FlatMap(_shard_files, layout)
            | "SpreadShards" >> beam.Reshuffle()
            | "CountRecords" >> beam.Map(_shard_info, layout)
            | "CollectShards" >> beam.combiners.ToList()
            | "WriteManifest" >> beam.Map(_write_manifest, layout, self._schema)
        )
        return WriteDatasetResult(manifest, encoded.dead_letter)


def _remove_manifest(_: None, layout: _Layout) -> None:
    """Deletes the manifest of the dataset being replaced: from now on it is incomplete."""
    if layout.prefix + MANIFEST_SUFFIX in dataset_files(layout.directory, layout.prefix):
        delete([layout.manifest_path])


def _after(payload: bytes, _: None) -> bytes:
    """The payload, once the side input it waited for exists."""
    return payload


def _shard_files(finished: list[str], layout: _Layout) -> list[tuple[int, str]]:
    """Every shard of the dataset, from the files the sink reports finished."""
    extension = EXTENSIONS[layout.compression]
    pattern = re.compile(
        re.escape(layout.prefix) + r"-([0-9]{5,})-of-([0-9]{5,})" + re.escape(extension)
    )
    counts: set[int] = set()
    for path in finished:
        name = os.path.basename(path)
        match = pattern.fullmatch(name)
        if match is None:
            raise TfrGenError(
                f"{path}: the sink wrote a file named unlike the dataset's shards"
                f" ({layout.prefix}-NNNNN-of-NNNNN{extension})"
            )
        counts.add(int(match.group(2)))
    if layout.shards is not None:
        counts.add(layout.shards)
    if len(counts) != 1:
        raise TfrGenError(
            f"{layout.directory}: cannot tell how many shards the sink wrote (it reported"
            f" {len(finished)} finished files: {', '.join(sorted(finished)[:3])})"
        )
    count = counts.pop()
    return [
        (index, shard_name(layout.prefix, index, count, layout.compression))
        for index in range(count)
    ]


def _shard_info(shard: tuple[int, str], layout: _Layout) -> tuple[int, ShardInfo]:
    """A finished shard's record count (every record read, its CRCs checked) and byte size."""
    index, name = shard
    path = join(layout.directory, name)
    size = file_size(path)
    with open_records(path, layout.compression) as reader:
        for _ in reader:
            pass
        records: int = reader.index
    return index, ShardInfo(name, records, size)


def _write_manifest(
    shards: list[tuple[int, ShardInfo]], layout: _Layout, schema: SchemaInfo
) -> Manifest:
    """Writes the manifest of the finished shards; with ``overwrite``, deletes the old shards."""
    infos = tuple(info for _, info in sorted(shards, key=lambda shard: shard[0]))
    manifest = Manifest(layout.directory, layout.prefix, schema, layout.compression, infos)
    write_text_atomic(layout.manifest_path, manifest.to_text())
    if layout.overwrite:
        current = {info.file for info in infos} | {layout.prefix + MANIFEST_SUFFIX}
        stale = [
            name for name in dataset_files(layout.directory, layout.prefix) if name not in current
        ]
        delete([join(layout.directory, name) for name in stale])
    return manifest
