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
    join,
    load_dataset_manifest,
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
    new_write_id,
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
    write_id: str

    @property
    def manifest_path(self) -> str:
        return join(self.directory, self.prefix + MANIFEST_SUFFIX)


class WriteDataset(beam.PTransform):  # type: ignore[misc]
    """Writes a PCollection of records (or mappings of their fields) as a schema-typed dataset.

    The dataset is the one ``Record.write_dataset`` writes and ``Record.read_dataset`` reads:
    shards ``<prefix>-<write id>-00000-of-00008.tfrecord.gz`` (``.tfrecord.zlib`` for ``"zlib"``,
    ``.tfrecord`` for ``None``) and ``<prefix>.manifest.json``, which names the record's schema
    and the write, and lists every shard with its record count, byte size and crc32c. ``prefix`` defaults to the record
    name in snake_case; ``shards=None`` lets the runner choose how many shards. Records are in no
    particular order (a PCollection has none).

    It follows the commit protocol of ``docs/datasets.md``: the shards, written by
    ``beam.io.WriteToTFRecord``, get names that embed a write id new to this transform
    (``<prefix>-<write id>-00000-of-00008.tfrecord.gz``); once they are all finished each one is
    read back (checking every CRC) to count its records and checksum its bytes, and the manifest
    is published last, to a temporary file renamed into place: that is the commit, and until then
    an existing dataset is untouched and readable.

    An existing dataset with the same prefix is an error when the pipeline is built, and again
    just before the commit, unless ``overwrite``: then, after the commit, the shards of the
    manifest it replaced are deleted. Beam's file systems have no conditional create, so two
    pipelines writing one dataset at once are not refused as ``write_dataset`` refuses them: the
    manifest published last wins, whole, and names only its own shards.

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
        self._layout = _Layout(
            os.fspath(directory), prefix, compression, shards, overwrite, new_write_id()
        )

    def expand(self, elements: Any) -> WriteDatasetResult:
        layout = self._layout
        _check_absent(layout)
        encoded = elements | "Encode" >> EncodeRecords(self._record)
        finished = encoded.records | "WriteShards" >> beam.io.WriteToTFRecord(
            join(layout.directory, f"{layout.prefix}-{layout.write_id}"),
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


def _check_absent(layout: _Layout) -> None:
    """An error if the dataset exists and may not be replaced."""
    if not layout.overwrite and _exists(layout):
        raise TfrGenError(
            f"{layout.manifest_path}: a dataset with prefix {layout.prefix!r} already exists;"
            " pass overwrite=True to replace it"
        )


def _exists(layout: _Layout) -> bool:
    return layout.prefix + MANIFEST_SUFFIX in dataset_files(layout.directory, layout.prefix)


def _shard_files(finished: list[str], layout: _Layout) -> list[tuple[int, str]]:
    """Every shard of the dataset, from the files the sink reports finished."""
    extension = EXTENSIONS[layout.compression]
    pattern = re.compile(
        re.escape(f"{layout.prefix}-{layout.write_id}")
        + r"-([0-9]{5,})-of-([0-9]{5,})"
        + re.escape(extension)
    )
    counts: set[int] = set()
    for path in finished:
        name = os.path.basename(path)
        match = pattern.fullmatch(name)
        if match is None:
            raise TfrGenError(
                f"{path}: the sink wrote a file named unlike the dataset's shards"
                f" ({layout.prefix}-{layout.write_id}-NNNNN-of-NNNNN{extension})"
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
        (index, shard_name(layout.prefix, index, count, layout.compression, layout.write_id))
        for index in range(count)
    ]


def _shard_info(shard: tuple[int, str], layout: _Layout) -> tuple[int, ShardInfo]:
    """A finished shard's record count (every record read, its CRCs checked), byte size and
    crc32c."""
    index, name = shard
    path = join(layout.directory, name)
    with open_records(path, layout.compression) as (reader, file):
        for _ in reader:
            pass
        records: int = reader.index
    return index, ShardInfo(name, records, file.size, file.crc32c)


def _write_manifest(
    shards: list[tuple[int, ShardInfo]], layout: _Layout, schema: SchemaInfo
) -> Manifest:
    """Publishes the manifest of the finished shards (the commit); with ``overwrite``, then deletes
    the shards of the manifest it replaced."""
    infos = tuple(info for _, info in sorted(shards, key=lambda shard: shard[0]))
    manifest = Manifest(
        layout.directory, layout.prefix, schema, layout.compression, infos, layout.write_id
    )
    _check_absent(layout)
    replaced = load_dataset_manifest(layout.directory, layout.prefix) if _exists(layout) else None
    write_text_atomic(layout.manifest_path, manifest.to_text())
    if replaced is not None:
        current = {info.file for info in infos}
        delete([join(layout.directory, s.file) for s in replaced.shards if s.file not in current])
    return manifest
