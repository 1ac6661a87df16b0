"""TFRecord files (or a dataset directory) to Parquet, and Parquet back to a TFRecord file or a dataset directory,
decoded and encoded by a schema at run time.

Both directions stream: records are read a reader buffer at a time (:class:`~codegen.tools.scan.Scanner`),
decoded into columns (:class:`~codegen.runtime.codec.batch.BatchCodec`) and gathered into Parquet row groups,
which a thread of their own writes while the next ones decode (:mod:`codegen.tools.parquet_sink`, which also
chooses the writer's options per column); Parquet is read a batch of rows at a time and encoded column by column
(a whole column at once in C when the accelerator is built). Memory stays bounded by a few row groups (or a batch
of rows, from Parquet) whatever the size of the data. The output appears whole or not at all (a temporary file
renamed at the end).

The Parquet file's schema metadata names the record's schema (module, record, version, fingerprint, canonical
form: :func:`~codegen.runtime.codec.arrow.arrow_schema`) and, when the input was a dataset, its manifest
(``tfr.manifest``). Converting Parquet back checks that metadata: data written with another schema must be
readable by this one (:func:`~codegen.runtime.data.schemainfo.check_readable`); Parquet without it is checked
column by column only.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from codegen.errors import DataError, RecordError, TfrGenError
from codegen.generator.load import load_schema
from codegen.runtime.codec.arrow import (
    CANONICAL,
    FINGERPRINT,
    MODULE,
    RECORD,
    VERSION,
    ArrowSchema,
    arrow_schema,
    column_form,
    from_arrow,
    to_arrow,
)
from codegen.runtime.codec.batch import BatchCodec
from codegen.runtime.codec.encode import BatchEncoder
from codegen.runtime.data.manifest import load_manifest
from codegen.runtime.data.schemainfo import SchemaInfo, check_readable
from codegen.runtime.data.shards import write_dataset
from codegen.runtime.extras import optional_module
from codegen.runtime.io.compression import Compression, CompressionArg
from codegen.runtime.io.files import file_size, is_directory, open_input
from codegen.runtime.io.reader import DEFAULT_MAX_RECORD_BYTES
from codegen.runtime.io.urls import StorageOptions
from codegen.runtime.io.writer import AtomicFile, TFRecordWriter, open_output
from codegen.tools.dynamic import DynamicRecord, select_record
from codegen.tools.parquet_sink import ParquetSink, writer_options
from codegen.tools.progress import Progress
from codegen.tools.scan import Scanner, expand_inputs

__all__ = [
    "MANIFEST",
    "Converted",
    "Converter",
    "parquet_to_dataset",
    "parquet_to_tfrecord",
    "tfrecord_to_parquet",
]

MANIFEST = b"tfr.manifest"
"""The Parquet schema metadata key of the manifest of the dataset a file was converted from."""


ROW_GROUP_ROWS = 65536
"""Decoded batches are gathered into Parquet row groups of about this many rows ..."""
ROW_GROUP_BYTES = 64 << 20
"""... or of records holding about this many bytes, whichever comes first (what bounds the memory)."""


@dataclass(frozen=True, slots=True)
class Converted:
    """What a conversion wrote: records and output bytes."""

    records: int
    bytes: int


class Converter:
    """The record ``name`` (or the only one) of the schema file at ``schema_path``, with its Arrow schema."""

    def __init__(self, schema_path: str, name: str | None) -> None:
        schema = load_schema(Path(schema_path))
        ir = select_record(schema, name)
        self.record = DynamicRecord(ir)
        codecs = (*self.record.codecs, *self.record.sequence_codecs)
        self.info = SchemaInfo(
            schema.module, ir.name, schema.version, schema.fingerprint, schema.canonical
        )
        self.arrow = ArrowSchema(
            schema.module,
            ir.name,
            schema.version,
            schema.fingerprint,
            schema.canonical,
            tuple(column_form(codec) for codec in codecs),
        )

        self.batch_encoder = BatchEncoder(
            self.record.codecs, self.record.sequence_codecs if self.record.is_sequence else None
        )

    @property
    def batch_codec(self) -> BatchCodec:
        return self.record.batch_codec


def _inputs(
    arguments: Sequence[str],
    converter: Converter,
    compression: CompressionArg,
    storage_options: StorageOptions | None,
) -> tuple[list[str], bytes | None, CompressionArg]:
    """The TFRecord files named (a dataset directory: its shards, after checking its schema), the
    manifest of a dataset as JSON, and the compression to read the files with (a dataset's shards:
    its manifest's, as ``read_dataset`` reads them)."""
    if len(arguments) == 1 and is_directory(arguments[0], storage_options=storage_options):
        manifest = load_manifest(arguments[0], storage_options=storage_options)
        check_readable(manifest.schema, converter.info, source=arguments[0])
        return list(manifest.paths), manifest.to_text().encode("utf-8"), manifest.compression
    return expand_inputs(arguments, storage_options), None, compression


def tfrecord_to_parquet(
    converter: Converter,
    inputs: Sequence[str],
    output: str,
    *,
    compression: str = "snappy",
    progress: TextIO | None = None,
    tfrecord_compression: CompressionArg = "auto",
    max_record_bytes: int | None = DEFAULT_MAX_RECORD_BYTES,
    storage_options: StorageOptions | None = None,
) -> Converted:
    """Convert TFRecord files (paths, globs, or one dataset directory) to the Parquet file ``output``.

    ``compression`` is the Parquet codec; ``tfrecord_compression`` that of the TFRecord files named
    (``"auto"``: detected per file from its first bytes; a dataset's shards have its manifest's).
    ``max_record_bytes`` is the largest record read (see :class:`~codegen.tools.scan.Scanner`);
    ``storage_options`` go to the fsspec store of inputs and output named by URL.
    """
    pa = optional_module("pyarrow", "tfr-gen convert")
    pq = optional_module("pyarrow.parquet", "tfr-gen convert")
    paths, manifest, tfrecord_compression = _inputs(
        inputs, converter, tfrecord_compression, storage_options
    )
    schema = arrow_schema(converter.arrow)
    if manifest is not None:
        schema = schema.with_metadata({**schema.metadata, MANIFEST: manifest})
    codec = converter.batch_codec
    records = 0
    scanner = Scanner(
        paths,
        on_error="raise",
        progress=progress,
        label="convert",
        compression=tfrecord_compression,
        max_record_bytes=max_record_bytes,
        storage_options=storage_options,
    )
    with open_output(output, storage_options=storage_options) as sink:
        # pyarrow writes a local temporary file through its own handle, an object through the
        # upload; leaving the block syncs and renames it or finishes the upload (or deletes it,
        # aborts it, after an error).
        where = sink.temporary if isinstance(sink, AtomicFile) else sink
        options = writer_options(pa, schema)
        writer = pq.ParquetWriter(where, schema, compression=compression, **options)
        # Row groups are written on a thread of their own while the next ones decode.
        groups = ParquetSink(writer)
        pending: list[Any] = []
        pending_rows = pending_bytes = 0
        try:
            with scanner:
                for batch in scanner.batches():
                    try:
                        columns = codec.decode(batch.records)
                    except RecordError:
                        columns = _decode_each(converter, batch)
                    table = to_arrow(converter.arrow, columns)
                    pending.append(pa.RecordBatch.from_arrays(table.columns, schema=schema))
                    pending_rows += len(batch)
                    pending_bytes += sum(map(len, batch.records))
                    records += len(batch)
                    if pending_rows >= ROW_GROUP_ROWS or pending_bytes >= ROW_GROUP_BYTES:
                        groups.write(pa.Table.from_batches(pending, schema))
                        pending, pending_rows, pending_bytes = [], 0, 0
                if pending:
                    groups.write(pa.Table.from_batches(pending, schema))
            groups.close()
        finally:
            groups.stop()  # after an error: the thread ends before the output is removed
            writer.close()
    return Converted(records, file_size(output, storage_options=storage_options))


def _decode_each(converter: Converter, batch: Any) -> tuple[Any, ...]:
    """Decode the records of a batch one by one: the first that does not decode raises a
    :class:`DataError` naming its file, index and offset."""
    for item in batch:
        try:
            converter.record.decode(item.data)
        except RecordError as exc:
            raise DataError(
                str(exc), path=item.path, index=item.index, offset=item.offset
            ) from None
    return converter.batch_codec.decode(batch.records)


def _parquet_schema_check(
    converter: Converter, metadata: dict[bytes, bytes] | None, path: str
) -> None:
    """Refuse Parquet data written with a schema this record cannot read."""
    if not metadata or FINGERPRINT not in metadata or CANONICAL not in metadata:
        return
    writer = SchemaInfo(
        metadata.get(MODULE, b"").decode("utf-8"),
        metadata.get(RECORD, b"").decode("utf-8"),
        int(metadata.get(VERSION, b"0")),
        metadata[FINGERPRINT].decode(),
        metadata[CANONICAL].decode("utf-8"),
    )
    check_readable(writer, converter.info, source=path)


def parquet_to_tfrecord(
    converter: Converter,
    inputs: Sequence[str],
    output: str,
    *,
    batch_rows: int = 8192,
    progress: TextIO | None = None,
    storage_options: StorageOptions | None = None,
) -> Converted:
    """Convert Parquet files (paths or globs) to the TFRecord file ``output`` (``.gz``/``.zlib``: compressed);
    ``storage_options`` go to the fsspec store of inputs and output named by URL."""
    records = 0
    with TFRecordWriter(output, compression="auto", storage_options=storage_options) as writer:
        for data in _parquet_records(converter, inputs, batch_rows, progress, storage_options):
            writer.write(data)
            records += 1
    return Converted(records, file_size(output, storage_options=storage_options))


def parquet_to_dataset(
    converter: Converter,
    inputs: Sequence[str],
    directory: str,
    *,
    shards: int | None = None,
    max_records_per_shard: int | None = None,
    compression: Compression = "gzip",
    prefix: str | None = None,
    overwrite: bool = False,
    batch_rows: int = 8192,
    progress: TextIO | None = None,
    storage_options: StorageOptions | None = None,
) -> Converted:
    """Convert Parquet files (paths or globs) to a dataset directory: shards and a manifest naming the schema,
    written by :func:`~codegen.runtime.data.shards.write_dataset` (``shards`` splits the records evenly, after
    collecting them; ``max_records_per_shard`` streams; with neither, one shard). The manifest's publication is
    the one commit: a failed conversion leaves the directory's previous dataset as it was. ``storage_options`` go
    to the fsspec store of inputs and directory named by URL."""
    manifest = write_dataset(
        directory,
        _parquet_records(converter, inputs, batch_rows, progress, storage_options),
        schema=converter.info,
        shards=shards,
        max_records_per_shard=max_records_per_shard,
        compression=compression,
        prefix=prefix,
        overwrite=overwrite,
        storage_options=storage_options,
    )
    return Converted(manifest.record_count, sum(shard.size for shard in manifest.shards))


def _parquet_records(
    converter: Converter,
    inputs: Sequence[str],
    batch_rows: int,
    progress: TextIO | None,
    storage_options: StorageOptions | None,
) -> Iterator[bytes]:
    """The serialized records of Parquet files (paths or globs), after checking the schema in their metadata,
    read a batch of ``batch_rows`` rows at a time (with a progress bar on ``progress``)."""
    pq = optional_module("pyarrow.parquet", "tfr-gen convert")
    paths = expand_inputs(inputs, storage_options)
    with ExitStack() as opened:
        sources = [
            opened.enter_context(open_input(path, buffered=True, storage_options=storage_options))
            for path in paths
        ]
        files = [pq.ParquetFile(source) for source in sources]
        for path, file in zip(paths, files, strict=True):
            _parquet_schema_check(converter, file.schema_arrow.metadata, path)
        rows = sum(file.metadata.num_rows for file in files)
        size = sum(file_size(path, storage_options=storage_options) for path in paths)
        bar = None if progress is None else Progress(progress, size, label="convert")
        names = [form.name for form in converter.arrow.forms]
        records = 0
        for path, file in zip(paths, files, strict=True):
            start = 0
            for table in file.iter_batches(batch_size=batch_rows, columns=names):
                yield from _encoded_rows(converter, table, path, start)
                start += table.num_rows
                records += table.num_rows
                if bar is not None:
                    bar.update(size * records // max(rows, 1), records)
        if bar is not None:
            bar.clear()


def _encoded_rows(converter: Converter, table: Any, path: str, start: int) -> list[bytes]:
    """The serialized records of one Arrow batch read from ``path`` at row ``start``: a column at a time when
    the columns allow (:class:`~codegen.runtime.codec.encode.BatchEncoder`), else record by record, which names
    the first row that does not encode."""
    record = converter.record
    try:
        columns = from_arrow(record.name, converter.arrow.forms, table)
        size = converter.batch_codec.check(columns)
    except RecordError as exc:
        raise TfrGenError(f"{path}: rows from {start}: {exc}") from None
    encoded = converter.batch_encoder.encode(columns, size)
    if encoded is not None:
        return encoded
    encode = record.encode
    out = []
    for index, values in enumerate(converter.batch_codec.rows(columns)):
        try:
            out.append(encode(dict(zip(record.names, values, strict=True))))
        except RecordError as exc:
            raise TfrGenError(f"{path}: row {start + index}: {exc}") from None
    return out
