"""TFRecord files (or a dataset directory) to Parquet, and Parquet back to a TFRecord file or a dataset directory,
decoded and encoded by a schema at run time.

Both directions stream: records are read a reader buffer at a time (:class:`~codegen.tools.scan.Scanner`),
decoded into columns (:class:`~codegen.runtime.codec.batch.BatchCodec`) and gathered into Parquet row groups,
which a thread of their own writes while the next ones decode (:mod:`codegen.tools.parquet_sink`, which also
chooses the writer's options per column); Parquet is read a batch of rows at a time and encoded column by column
(a whole column at once in C when the accelerator is built). Memory stays bounded by a few row groups (or a batch
of rows, from Parquet) whatever the size of the data. The output appears whole or not at all (a temporary file
renamed at the end).

The Parquet columns are the record's Arrow columns, but for encoded images (their encoded bytes) and byte tensors
(binary values): see :mod:`codegen.tools.parquet_layout`.

The Parquet file's schema metadata names the record's schema (module, record, version, fingerprint, canonical
form: :func:`~codegen.runtime.codec.arrow.arrow_schema`) and, when the input was a dataset, its manifest
(``tfr.manifest``). Converting Parquet back checks that metadata: data written with another schema must be
readable by this one (:func:`~codegen.runtime.data.schemainfo.check_readable`); Parquet without it is checked
column by column only.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO, cast

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
from codegen.runtime.codec.columns import Masked
from codegen.runtime.codec.encode import BatchEncoder
from codegen.runtime.codec.images import EncodedImage
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
from codegen.tools.parquet_layout import (
    ENCODED,
    LAYOUT,
    byte_tensor,
    encoded_images,
    pack,
    parquet_field,
    stored_record,
    unpack,
)
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


class Side:
    """One way of reading and writing a record's columns: its codecs (a :class:`DynamicRecord`), its Arrow
    schema and its column encoder."""

    def __init__(self, record: DynamicRecord, schema: ArrowSchema) -> None:
        self.record = record
        codecs = (*record.codecs, *record.sequence_codecs)
        self.arrow = dataclasses.replace(
            schema, forms=tuple(column_form(codec) for codec in codecs)
        )
        self.batch_encoder = BatchEncoder(
            record.codecs, record.sequence_codecs if record.is_sequence else None
        )

    @property
    def batch_codec(self) -> BatchCodec:
        return self.record.batch_codec


class Converter:
    """The record ``name`` (or the only one) of the schema file at ``schema_path``, with its Arrow schema.

    ``pixels`` reads and writes the record's columns as its class does; ``stored`` reads and writes each encoded
    image as the bytes it is stored as (the same as ``pixels`` for a record without encoded images), which is how
    Parquet holds them (:mod:`codegen.tools.parquet_layout`).
    """

    def __init__(self, schema_path: str, name: str | None) -> None:
        schema = load_schema(Path(schema_path))
        ir = select_record(schema, name)
        self.info = SchemaInfo(
            schema.module, ir.name, schema.version, schema.fingerprint, schema.canonical
        )
        identity = ArrowSchema(
            schema.module, ir.name, schema.version, schema.fingerprint, schema.canonical, ()
        )
        self.pixels = Side(DynamicRecord(ir), identity)
        self.images = encoded_images(ir)
        self.stored = (
            Side(DynamicRecord(stored_record(ir)), identity) if self.images else self.pixels
        )
        by_name = {codec.name: codec for codec in self.pixels.record.codecs}
        self.image_codecs = tuple(cast("EncodedImage", by_name[name]) for name in self.images)

    @property
    def record(self) -> DynamicRecord:
        return self.pixels.record

    @property
    def arrow(self) -> ArrowSchema:
        return self.pixels.arrow

    @property
    def batch_codec(self) -> BatchCodec:
        return self.pixels.batch_codec

    @property
    def batch_encoder(self) -> BatchEncoder:
        return self.pixels.batch_encoder

    def parquet_schema(self, pa: Any) -> Any:
        """The Parquet file's schema: the stored columns' Arrow schema, each encoded image and byte tensor marked
        (and a byte tensor's type packed)."""
        schema = arrow_schema(self.stored.arrow)
        fields = [
            parquet_field(pa, field, form, form.name in self.images)
            for field, form in zip(schema, self.pixels.arrow.forms, strict=True)
        ]
        return pa.schema(fields, metadata=schema.metadata)

    def bad_image(self, columns: Sequence[Any]) -> tuple[int, RecordError] | None:
        """The row of the first encoded image in ``columns`` (the stored side's) whose header does not fit its
        feature (:meth:`~codegen.runtime.codec.images.EncodedImage.check_header`), and why; ``None`` when
        every image fits."""
        names = [form.name for form in self.stored.arrow.forms]
        for codec in self.image_codecs:
            column = columns[names.index(codec.name)]
            present = None
            if isinstance(column, Masked):
                present, column = column.present, column.values
            for row, blob in enumerate(column):
                if present is not None and not present[row]:
                    continue
                try:
                    codec.check_header(blob)
                except RecordError as exc:
                    return row, exc
        return None


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
    schema = converter.parquet_schema(pa)
    if manifest is not None:
        schema = schema.with_metadata({**schema.metadata, MANIFEST: manifest})
    stored = converter.stored
    codec = stored.batch_codec
    # The columns stored otherwise than their Arrow form: byte tensors, packed into binary values.
    packed = [
        (index, schema.field(index).type)
        for index, form in enumerate(converter.arrow.forms)
        if byte_tensor(form) and form.name not in converter.images
    ]
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
                        columns = _decode_each(stored, batch)
                    bad = converter.bad_image(columns)
                    if bad is not None:
                        item = batch.item(bad[0])
                        raise DataError(
                            str(bad[1]), path=item.path, index=item.index, offset=item.offset
                        )
                    arrays = to_arrow(stored.arrow, columns).columns
                    for index, kind in packed:
                        arrays[index] = pack(pa, arrays[index], kind)
                    pending.append(pa.RecordBatch.from_arrays(arrays, schema=schema))
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


def _decode_each(side: Side, batch: Any) -> tuple[Any, ...]:
    """Decode the records of a batch one by one: the first that does not decode raises a
    :class:`DataError` naming its file, index and offset."""
    for item in batch:
        try:
            side.record.decode(item.data)
        except RecordError as exc:
            raise DataError(
                str(exc), path=item.path, index=item.index, offset=item.offset
            ) from None
    return side.batch_codec.decode(batch.records)


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
    pa = optional_module("pyarrow", "tfr-gen convert")
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
            side = _side(pa, converter, file.schema_arrow)
            types = {field.name: field.type for field in arrow_schema(side.arrow)}
            unpacked = [form.name for form in side.arrow.forms if byte_tensor(form)]
            start = 0
            for table in file.iter_batches(batch_size=batch_rows, columns=names):
                if unpacked:
                    table = _unpacked(pa, table, unpacked, types, path, start)
                yield from _encoded_rows(converter, side, table, path, start)
                start += table.num_rows
                records += table.num_rows
                if bar is not None:
                    bar.update(size * records // max(rows, 1), records)
        if bar is not None:
            bar.clear()


def _side(pa: Any, converter: Converter, schema: Any) -> Side:
    """How to read a Parquet file's columns: with its encoded images as bytes (``stored``) when it holds them so
    (:mod:`~codegen.tools.parquet_layout`), else as pixels (nested lists, as earlier versions wrote them)."""
    for name in converter.images:
        index = schema.get_field_index(name)
        if index < 0:
            continue
        field = schema.field(index)
        metadata = field.metadata or {}
        kind = field.type
        if (
            metadata.get(LAYOUT) == ENCODED
            or pa.types.is_binary(kind)
            or pa.types.is_large_binary(kind)
        ):
            return converter.stored
    return converter.pixels


def _unpacked(
    pa: Any, table: Any, names: Sequence[str], types: dict[str, Any], path: str, start: int
) -> Any:
    """``table`` with its byte tensor columns (``names``) in their Arrow form (:func:`~codegen.tools.parquet_layout.
    unpack`): binary values or nested lists, whichever the file holds."""
    arrays = list(table.columns)
    for name in names:
        index = table.schema.get_field_index(name)
        if index < 0:
            continue  # (from_arrow names it)
        try:
            arrays[index] = unpack(pa, arrays[index], types[name], f"column {name!r}", start)
        except RecordError as exc:
            raise TfrGenError(f"{path}: {exc}") from None
    return pa.RecordBatch.from_arrays(arrays, names=table.schema.names)


def _encoded_rows(
    converter: Converter, side: Side, table: Any, path: str, start: int
) -> list[bytes]:
    """The serialized records of one Arrow batch read from ``path`` at row ``start``: a column at a time when
    the columns allow (:class:`~codegen.runtime.codec.encode.BatchEncoder`), else record by record, which names
    the first row that does not encode."""
    record = side.record
    try:
        columns = from_arrow(record.name, side.arrow.forms, table)
        size = side.batch_codec.check(columns)
    except RecordError as exc:
        raise TfrGenError(f"{path}: rows from {start}: {exc}") from None
    if side is not converter.pixels:
        bad = converter.bad_image(columns)
        if bad is not None:
            raise TfrGenError(f"{path}: row {start + bad[0]}: {bad[1]}")
    encoded = side.batch_encoder.encode(columns, size)
    if encoded is not None:
        return encoded
    encode = record.encode
    out = []
    for index, values in enumerate(side.batch_codec.rows(columns)):
        try:
            out.append(encode(dict(zip(record.names, values, strict=True))))
        except RecordError as exc:
            raise TfrGenError(f"{path}: row {start + index}: {exc}") from None
    return out
