"""The runtime of tfr-gen: what its users import to read and write TFRecord data beside their generated modules.

Generated modules import :mod:`codegen.runtime._abi` (the names they use, and the version check) and inherit from
:mod:`codegen.runtime.record`. The runtime depends only on numpy, protobuf and crc32c; TensorFlow is imported
lazily by the ``tf_*`` helpers.
"""

from typing import TYPE_CHECKING

from codegen.dtypes import (
    BOOL,
    BYTES,
    DTYPES,
    FLOAT16,
    FLOAT32,
    FLOAT64,
    INT8,
    INT16,
    INT32,
    INT64,
    STRING,
    UINT8,
    UINT16,
    UINT32,
    UINT64,
    DType,
    Kind,
    Wire,
)
from codegen.errors import DataError, RecordError
from codegen.runtime.accel import release_pooled_memory
from codegen.runtime.codec.batch import BatchCodec
from codegen.runtime.codec.columns import Masked, Ragged
from codegen.runtime.codec.equality import arrays_equal, values_equal
from codegen.runtime.codec.features import (
    NO_DEFAULT,
    BoolScalar,
    BytesScalar,
    BytesTensor,
    Codec,
    FloatScalar,
    IntScalar,
    NumericTensor,
    TextScalar,
    TextTensor,
)
from codegen.runtime.codec.info import FeatureInfo, FeatureSpec
from codegen.runtime.codec.plan import ExampleDecoder, example_decoder
from codegen.runtime.codec.sequences import SequenceRagged, SequenceStrings, SequenceTensor
from codegen.runtime.codec.tensors import RaggedStrings, RaggedTensor, RawTensor
from codegen.runtime.codec.wire import (
    example,
    parse_example,
    parse_sequence_example,
    sequence_example,
)
from codegen.runtime.data.dataset import Dataset, DatasetOptions, Files, record_dataset
from codegen.runtime.data.manifest import Manifest, ShardInfo, load_manifest
from codegen.runtime.data.schemainfo import SchemaInfo
from codegen.runtime.data.shards import read_dataset, write_dataset
from codegen.runtime.io.compression import Compression, CompressionArg, resolve_compression
from codegen.runtime.io.files import PathLike
from codegen.runtime.io.indexed import IndexedReader, IndexedRecords
from codegen.runtime.io.reader import TFRecordReader, read_decoded, read_tfrecord
from codegen.runtime.io.skips import OnError, SkipCounts, SkippedRecord, SkippedSpan
from codegen.runtime.io.writer import TFRecordWriter, write_tfrecord
from codegen.runtime.tf import proto
from codegen.runtime.tf.parse import tf_feature_spec, tf_parse_example, tf_parse_sequence_example
from codegen.runtime.tf.proto import (
    ExampleMessage,
    ProtoMessage,
    SequenceExampleMessage,
    message_bytes,
)

__all__ = [
    "BatchCodec",
    "Dataset",
    "DatasetOptions",
    "Files",
    "Masked",
    "Ragged",
    "record_dataset",
    "IndexedReader",
    "IndexedRecords",
    "Manifest",
    "SchemaInfo",
    "ShardInfo",
    "load_manifest",
    "read_dataset",
    "write_dataset",
    "BOOL",
    "BYTES",
    "DTYPES",
    "FLOAT16",
    "FLOAT32",
    "FLOAT64",
    "INT8",
    "INT16",
    "INT32",
    "INT64",
    "NO_DEFAULT",
    "STRING",
    "UINT8",
    "UINT16",
    "UINT32",
    "UINT64",
    "BoolScalar",
    "BytesTensor",
    "BytesScalar",
    "Codec",
    "DataError",
    "RecordError",
    "Compression",
    "OnError",
    "CompressionArg",
    "DType",
    "ExampleDecoder",
    "ExampleMessage",
    "FeatureInfo",
    "FeatureSpec",
    "FloatScalar",
    "IntScalar",
    "Kind",
    "NumericTensor",
    "PathLike",
    "ProtoMessage",
    "RaggedStrings",
    "RaggedTensor",
    "RawTensor",
    "SequenceExampleMessage",
    "SequenceRagged",
    "SequenceStrings",
    "SequenceTensor",
    "SkipCounts",
    "SkippedRecord",
    "SkippedSpan",
    "TFRecordReader",
    "TFRecordWriter",
    "TextTensor",
    "TextScalar",
    "Wire",
    "arrays_equal",
    "example",
    "example_decoder",
    "message_bytes",
    "parse_example",
    "parse_sequence_example",
    "proto",
    "read_decoded",
    "read_tfrecord",
    "release_pooled_memory",
    "resolve_compression",
    "sequence_example",
    "tf_feature_spec",
    "tf_parse_example",
    "tf_parse_sequence_example",
    "values_equal",
    "write_tfrecord",
]


if not TYPE_CHECKING:  # type checkers keep reporting unknown names as errors

    def __getattr__(name: str) -> object:
        raise AttributeError(
            f"module 'codegen.runtime' has no attribute {name!r}. A generated module that uses it was made by"
            " an older tfr-gen (generated modules now import codegen.runtime._abi): regenerate it with this"
            " tfr-gen, with the command in its header"
        )
