"""The runtime of tfr-gen: what users import to read and write TFRecord data beside their generated modules.

Generated record classes inherit from :class:`ExampleRecord` / :class:`SequenceRecord` and :class:`Batch` and import
the names they use from :mod:`codegen.runtime._abi`. The runtime depends only on numpy, protobuf and crc32c;
TensorFlow is imported lazily by the ``tf_*`` methods. The layers below it (``codec``, ``io``, ``data``, ``tf``) hold
the rest; see ``docs/architecture.md``.
"""

from typing import TYPE_CHECKING

from codegen.errors import (
    DataError,
    MissingExtraError,
    RecordError,
    SchemaMismatchError,
    TfrGenError,
)
from codegen.runtime.accel import AcceleratorWarning, release_pooled_memory
from codegen.runtime.accel import status as accelerator_status
from codegen.runtime.codec.columns import Masked, Ragged
from codegen.runtime.codec.info import FeatureInfo, FeatureSpec
from codegen.runtime.codec.wire import (
    example,
    parse_example,
    parse_sequence_example,
    sequence_example,
)
from codegen.runtime.data.dataset import Dataset, DatasetOptions, Files
from codegen.runtime.data.manifest import Manifest, ShardInfo, load_manifest
from codegen.runtime.data.random_access import RandomAccess
from codegen.runtime.data.schemainfo import SchemaInfo
from codegen.runtime.data.shards import read_dataset, write_dataset
from codegen.runtime.io.compression import Compression, CompressionArg
from codegen.runtime.io.files import PathLike
from codegen.runtime.io.indexed import IndexedReader, IndexedRecords
from codegen.runtime.io.reader import TFRecordReader, read_tfrecord
from codegen.runtime.io.skips import OnError, SkipCounts, SkippedRecord, SkippedSpan
from codegen.runtime.io.writer import TFRecordWriter, write_tfrecord
from codegen.runtime.record import Batch, ExampleRecord, Record, RecordMeta, Schema, SequenceRecord
from codegen.runtime.tf import proto

__all__ = [
    "AcceleratorWarning",
    "Batch",
    "Compression",
    "CompressionArg",
    "DataError",
    "Dataset",
    "DatasetOptions",
    "ExampleRecord",
    "FeatureInfo",
    "FeatureSpec",
    "Files",
    "IndexedReader",
    "IndexedRecords",
    "Manifest",
    "Masked",
    "MissingExtraError",
    "OnError",
    "PathLike",
    "Ragged",
    "RandomAccess",
    "Record",
    "RecordError",
    "RecordMeta",
    "Schema",
    "SchemaInfo",
    "SchemaMismatchError",
    "SequenceRecord",
    "ShardInfo",
    "SkipCounts",
    "SkippedRecord",
    "SkippedSpan",
    "TFRecordReader",
    "TFRecordWriter",
    "TfrGenError",
    "accelerator_status",
    "example",
    "load_manifest",
    "parse_example",
    "parse_sequence_example",
    "proto",
    "read_dataset",
    "read_tfrecord",
    "release_pooled_memory",
    "sequence_example",
    "write_dataset",
    "write_tfrecord",
]


if not TYPE_CHECKING:  # type checkers keep reporting unknown names as errors

    def __getattr__(name: str) -> object:
        raise AttributeError(
            f"module 'codegen.runtime' has no attribute {name!r}. A generated module that uses it was made by"
            " an older tfr-gen (generated modules now import codegen.runtime._abi): regenerate it with this"
            " tfr-gen, with the command in its header"
        )
