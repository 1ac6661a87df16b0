"""The base classes generated record and batch classes inherit from.

A generated module declares, per record, its feature codecs, a record class (its attributes, its constructor, and
the two methods whose code depends on its features: ``encode`` and ``decode``) and a batch class (its columns).
Everything the same for every record lives here, typed generically so that each classmethod's result is as precise
as the record's own: ``Customer.read_tfrecord(path)`` is an ``Iterator[Customer]``, ``Customer.decode_batch(data)`` a
``CustomerBatch``, ``Customer.dataset(files, batch_size=1024)`` a ``Dataset[CustomerBatch]``.

What a base class needs of its record is :class:`RecordMeta`, the class attribute ``__tfr__`` the generated record
class sets in its body (its batch class points at the same object)::

    class Customer(_rt.ExampleRecord["CustomerBatch", "CustomerTensors"]):
        __slots__ = ("age", ...)
        __tfr__ = _rt.RecordMeta(SCHEMA, "Customer", (_Customer_age, ...))
        age: int
        ...

    @_dc.dataclass(frozen=True, eq=False)
    class CustomerBatch(_rt.Batch[Customer]):
        __tfr__ = Customer.__tfr__
        age: _npt.NDArray[_np.int64]
        ...
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, BinaryIO, ClassVar, Generic, Protocol, Self, TypeVar, Unpack, cast, overload

from codegen.errors import RecordError, TfrGenError
from codegen.runtime.codec.arrow import ArrowSchema, arrow_schema, arrow_table, column_form
from codegen.runtime.codec.arrow import from_arrow as columns_from_arrow
from codegen.runtime.codec.arrow import to_arrow as columns_to_arrow
from codegen.runtime.codec.batch import BatchCodec
from codegen.runtime.codec.buffer import BytesLike
from codegen.runtime.codec.encode import BatchEncoder
from codegen.runtime.codec.features import Codec
from codegen.runtime.codec.info import FeatureSpec
from codegen.runtime.codec.plan import ExampleDecoder, example_decoder
from codegen.runtime.codec.sequences import SequenceCodec
from codegen.runtime.data.dataset import Dataset, DatasetOptions, Files, Streams, record_dataset
from codegen.runtime.data.frames import scan_polars
from codegen.runtime.data.manifest import Manifest, load_manifest
from codegen.runtime.data.random_access import RandomAccess
from codegen.runtime.data.schemainfo import SchemaInfo
from codegen.runtime.data.shards import read_dataset, write_dataset
from codegen.runtime.data.tfds import read_split
from codegen.runtime.extras import optional_module
from codegen.runtime.io.compression import CompressionArg
from codegen.runtime.io.files import PathLike
from codegen.runtime.io.indexed import IndexedRecords
from codegen.runtime.io.reader import DEFAULT_MAX_RECORD_BYTES, read_decoded
from codegen.runtime.io.skips import OnError, SkippedSpan
from codegen.runtime.io.urls import StorageOptions
from codegen.runtime.io.writer import write_tfrecord
from codegen.runtime.tf import proto
from codegen.runtime.tf.parse import tf_feature_spec, tf_parse_example, tf_parse_sequence_example
from codegen.runtime.tf.proto import ProtoMessage, message_bytes

__all__ = [
    "Batch",
    "BytesLike",
    "ExampleRecord",
    "Record",
    "RecordMeta",
    "Schema",
    "SequenceRecord",
]

B = TypeVar("B", bound="Batch[Any]")


class Columns(Protocol):
    """Records as columns: a ``pyarrow.Table`` or ``RecordBatch``, a ``pandas.DataFrame`` or a ``polars.DataFrame``
    (optional dependencies: what they share is a ``shape`` of rows and columns)."""

    @property
    def shape(self) -> tuple[int, int]: ...


P = TypeVar("P")
R = TypeVar("R", bound="Record[Any, Any]")


@dataclass(frozen=True, slots=True)
class Schema:
    """The schema a generated module was made from: its module name, ``version``, fingerprint (sha256 of the
    canonical form; formatting and comments do not change it) and canonical form (compact JSON), which data written
    with the module names so that readers can check it."""

    module: str
    version: int
    fingerprint: str
    canonical: str


class RecordMeta:
    """What the base classes know of one generated record class: its schema, name and codecs.

    ``features`` are the codecs of a ``tf.train.Example``'s features, or of a ``SequenceExample``'s context with
    ``sequence`` its feature lists (``None`` for an Example), each in schema order; attribute values go in that
    order. ``decode`` is the record's decoder (serialized bytes -> the tuple of its values). The record and batch
    classes bind themselves when they are defined.
    """

    __slots__ = (
        "schema",
        "name",
        "features",
        "sequence",
        "names",
        "decode",
        "info",
        "record",
        "batch",
        "_batch_codec",
        "_arrow",
        "_batch_encoder",
    )

    def __init__(
        self,
        schema: Schema,
        name: str,
        features: Sequence[Codec[Any]],
        sequence: Sequence[SequenceCodec[Any]] | None = None,
    ) -> None:
        self.schema = schema
        self.name = name
        self.features = tuple(features)
        self.sequence = None if sequence is None else tuple(sequence)
        codecs: tuple[Codec[Any] | SequenceCodec[Any], ...] = (
            *self.features,
            *(self.sequence or ()),
        )
        self.names = tuple(c.name for c in codecs)
        self.decode: ExampleDecoder = example_decoder(name, self.features, self.sequence)
        self.info = SchemaInfo(
            schema.module, name, schema.version, schema.fingerprint, schema.canonical
        )
        self.record: type[Record[Any, Any]] | None = None
        self.batch: type[Batch[Any]] | None = None
        self._batch_codec: BatchCodec | None = None
        self._arrow: ArrowSchema | None = None
        self._batch_encoder: BatchEncoder | None = None

    @property
    def batch_encoder(self) -> BatchEncoder:
        """The columnar encoder of the record's batches (built on first use)."""
        if self._batch_encoder is None:
            self._batch_encoder = BatchEncoder(self.features, self.sequence)
        return self._batch_encoder

    @property
    def arrow(self) -> ArrowSchema:
        """What the record's Arrow schema is made of (see :mod:`codegen.runtime.codec.arrow`)."""
        if self._arrow is None:
            schema = self.schema
            forms = tuple(column_form(codec) for codec in self.codecs)
            self._arrow = ArrowSchema(
                schema.module,
                self.name,
                schema.version,
                schema.fingerprint,
                schema.canonical,
                forms,
            )
        return self._arrow

    @property
    def batch_codec(self) -> BatchCodec:
        """The columnar decoder of the record (built on first use)."""
        if self._batch_codec is None:
            self._batch_codec = BatchCodec(
                self.name, self.features, self.sequence, decoder=self.decode
            )
        return self._batch_codec

    @property
    def codecs(self) -> tuple[Codec[Any] | SequenceCodec[Any], ...]:
        """Every attribute's codec, in attribute order."""
        return (*self.features, *(self.sequence or ()))

    def batch_class(self) -> type[Batch[Any]]:
        """The record's batch class."""
        if self.batch is None:
            raise TfrGenError(f"{self.name} has no batch class: its generated module is incomplete")
        return self.batch

    def record_class(self) -> type[Record[Any, Any]]:
        """The record class."""
        if self.record is None:
            raise TfrGenError(f"{self.name}: no record class is bound to this metadata")
        return self.record

    def __repr__(self) -> str:
        return f"RecordMeta({self.schema.module}.{self.name})"


class Record(Generic[B, P]):
    """The base of every generated record class; ``B`` is its batch class, ``P`` the ``TypedDict`` of
    :meth:`tf_parse`'s result.

    A subclass sets ``__tfr__`` and defines ``__slots__``, ``__init__``, :meth:`encode` and :meth:`decode`.
    """

    __slots__ = ()
    __tfr__: ClassVar[RecordMeta]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        meta = cls.__dict__.get("__tfr__")
        if isinstance(meta, RecordMeta):
            meta.record = cls

    def encode(self) -> bytes:
        """Serialize to ``tf.train.Example`` (or ``SequenceExample``) bytes, deterministically: map entries sorted
        by key, byte-identical to protobuf's deterministic serialization."""
        raise NotImplementedError

    @classmethod
    def decode(cls, data: BytesLike) -> Self:
        """Parse serialized bytes (any bytes-like object: ``bytes``, ``bytearray``, ``memoryview``, a contiguous
        ``uint8`` array) with TensorFlow's rules for missing and malformed features
        (:class:`~codegen.errors.RecordError` names the feature and what was wrong)."""
        raise NotImplementedError

    def __eq__(self, other: object) -> bool:
        record = type(self).__tfr__.record_class()
        if not isinstance(other, record):
            return NotImplemented
        return all(
            codec.equal(getattr(self, codec.name), getattr(other, codec.name))
            for codec in self.__tfr__.codecs
        )

    __hash__ = None  # type: ignore[assignment]  # mutable, compared by value

    @classmethod
    def _from_values(cls, values: Sequence[Any]) -> Self:
        """A record holding ``values`` (attribute order) as they are, without coercion."""
        record = object.__new__(cls)
        for name, value in zip(cls.__tfr__.names, values, strict=True):
            setattr(record, name, value)
        return record

    @classmethod
    def feature_spec(cls) -> FeatureSpec:
        """What this record stores, per feature: key, dtype, wire list, shape, default. No TensorFlow needed."""
        meta = cls.__tfr__
        return FeatureSpec(meta.name, tuple(c.info() for c in meta.codecs))

    @classmethod
    def from_proto(cls, message: ProtoMessage) -> Self:
        """From a ``tensorflow.Example`` (``SequenceExample``) message: TensorFlow's class, or ``to_proto()``'s."""
        kind = "SequenceExample" if cls.__tfr__.sequence is not None else "Example"
        return cls.decode(message_bytes(message, f"tensorflow.{kind}"))

    def to_proto(self) -> Any:
        """This record as a ``tensorflow.Example`` (``SequenceExample``) message of tfr-gen's own message class;
        ``tf.train.Example.FromString(record.to_proto().SerializeToString())`` gives TensorFlow's class."""
        message = proto.SequenceExample if self.__tfr__.sequence is not None else proto.Example
        return message.FromString(self.encode())

    @classmethod
    def tf_parse(cls, serialized: Any) -> P:
        """Parse a scalar or 1-D string tensor of serialized records with TensorFlow: one tensor per attribute, in
        the declared dtypes and shapes. For features with a ``null`` dimension, batch before parsing
        (``dataset.batch(n).map(Record.tf_parse)``): ragged tensors cannot be batched after."""
        meta = cls.__tfr__
        if meta.sequence is None:
            return cast("P", tf_parse_example(serialized, meta.features))
        return cast("P", tf_parse_sequence_example(serialized, meta.features, meta.sequence))

    @classmethod
    def _encoded(cls, records: Iterable[Self], what: str) -> Iterator[bytes]:
        """The bytes of each record; :class:`RecordError` for an item that is not a ``cls`` record."""
        for index, record in enumerate(records):
            if not isinstance(record, cls):
                raise RecordError(
                    f"{cls.__name__}.{what}: item {index} is {type(record).__name__}"
                    f" {_short(record)}, not a {cls.__name__} record"
                )
            yield record.encode()

    @classmethod
    def _serialized(cls, records: Iterable[Self] | B | Columns, what: str) -> Iterable[bytes]:
        """The bytes of records given one by one, or as columns (see :meth:`encode_batch`)."""
        if isinstance(records, Batch) or arrow_table(records) is not None:
            return cls.encode_batch(cast("B | Columns", records))
        return cls._encoded(cast("Iterable[Self]", records), what)

    @classmethod
    def encode_batch(cls, data: B | Columns) -> list[bytes]:
        """Serialize records given as columns: a batch of this record, an Arrow table or record batch, or a pandas
        or polars data frame (columns named as the attributes, see :meth:`Batch.from_arrow`). The bytes are those
        of each record's :meth:`encode`; values are checked as the constructor checks them, and an error names
        the row and the column."""
        batch_class = cls.__tfr__.batch_class()
        if isinstance(data, batch_class):
            return data.encode()
        if isinstance(data, Batch):
            raise RecordError(
                f"{cls.__name__}.encode_batch: got a {type(data).__name__}, not a {batch_class.__name__}"
            )
        return batch_class.from_arrow(data).encode()

    @classmethod
    def arrow_schema(cls) -> Any:
        """The ``pyarrow.Schema`` of this record's batches (:meth:`Batch.to_arrow`): a field per attribute, fixed
        dimensions as fixed-size lists, ``null`` ones as large lists, optional features nullable; field metadata
        holds each Example key and the schema fingerprint (needs the ``arrow`` extra)."""
        return arrow_schema(cls.__tfr__.arrow)

    @classmethod
    def scan_polars(cls, files: Files, *, batch_size: int = 65536) -> Any:
        """A ``polars.LazyFrame`` over TFRecord files (paths or globs, read in sorted order), one column per
        attribute as :meth:`Batch.to_polars` gives them. Only the features of the columns a query uses are decoded
        (projection pushdown) and reading stops once a ``head``/``limit`` has its rows; filters run on each batch of
        ``batch_size`` records. Needs the ``arrow`` and ``polars`` extras."""
        return scan_polars(cls.__tfr__, files, batch_size=batch_size)

    @classmethod
    def write_tfrecord(
        cls,
        path: PathLike,
        records: Iterable[Self] | B | Columns,
        *,
        compression: CompressionArg = "auto",
        storage_options: StorageOptions | None = None,
    ) -> int:
        """Write records (one by one, or as columns: see :meth:`encode_batch`) to a TFRecord file (atomically);
        returns how many were written.

        ``path`` is a local path or a URL (``s3://...``, written with ``storage_options``; the object appears only
        when the writing succeeds). ``compression="auto"`` goes by the name (``.gz`` gzip, ``.zlib``/``.zz`` zlib,
        else none).
        """
        return write_tfrecord(
            path,
            cls._serialized(records, "write_tfrecord"),
            compression=compression,
            storage_options=storage_options,
        )

    @classmethod
    def read_tfrecord(
        cls,
        path: PathLike | BinaryIO,
        *,
        compression: CompressionArg = "auto",
        on_error: OnError = "raise",
        on_skip: Callable[[SkippedSpan], None] | None = None,
        max_record_bytes: int | None = DEFAULT_MAX_RECORD_BYTES,
        storage_options: StorageOptions | None = None,
    ) -> Iterator[Self]:
        """Read and decode every record of a TFRecord file, checking both CRCs of each.

        ``path`` is a local path, a URL (``gs://...``, read with ``storage_options``) or an open binary file object.

        ``compression="auto"`` detects it from the data; a declared one the data contradicts raises
        :class:`~codegen.errors.TfrGenError`.

        ``on_error="skip"`` skips corrupt stretches and records that do not decode (reported to ``on_skip``, logged
        as warnings without it) instead of raising :class:`~codegen.errors.DataError`. A record header declaring
        more than ``max_record_bytes`` (256 MiB by default; ``None``: no limit) is damage, found before its data is
        read.
        """
        return read_decoded(
            path,
            cls.decode,
            compression=compression,
            on_error=on_error,
            on_skip=on_skip,
            max_record_bytes=max_record_bytes,
            storage_options=storage_options,
        )

    @classmethod
    def write_dataset(
        cls,
        directory: PathLike,
        records: Iterable[Self] | B | Columns,
        *,
        shards: int | None = None,
        max_records_per_shard: int | None = None,
        compression: CompressionArg = "auto",
        prefix: str | None = None,
        overwrite: bool = False,
        storage_options: StorageOptions | None = None,
    ) -> Manifest:
        """Write records (one by one, or as columns: see :meth:`encode_batch`) as shards
        ``<prefix>-<write id>-00000-of-0000N.tfrecord[.gz]`` plus a manifest naming this schema;
        publishing the manifest is the one commit (docs/datasets.md). ``directory`` is a local path or a URL
        (written with ``storage_options``).

        ``compression="auto"`` writes gzip shards, named ``.tfrecord.gz``.
        """
        return write_dataset(
            directory,
            cls._serialized(records, "write_dataset"),
            schema=cls.__tfr__.info,
            shards=shards,
            max_records_per_shard=max_records_per_shard,
            compression=compression,
            prefix=prefix,
            overwrite=overwrite,
            storage_options=storage_options,
        )

    @classmethod
    def read_dataset(
        cls,
        directory: PathLike,
        *,
        check_schema: bool = True,
        prefix: str | None = None,
        split: str | None = None,
        on_error: OnError = "raise",
        on_skip: Callable[[SkippedSpan], None] | None = None,
        max_record_bytes: int | None = DEFAULT_MAX_RECORD_BYTES,
        storage_options: StorageOptions | None = None,
    ) -> Iterator[Self]:
        """Read every shard of a dataset (a local directory or a URL, read with ``storage_options``) in order;
        refuse data whose schema this record cannot read.

        With ``split`` (``"train"``), ``directory`` is a prepared TensorFlow Datasets directory (holding
        ``dataset_info.json``) and the split's shards are read, each checked against the record count TFDS lists
        (see :mod:`codegen.runtime.data.tfds`; ``tfr-gen import-tfds`` writes the schema of such a directory).

        ``on_error="skip"`` reads what it can of damaged shards and hands every corrupt stretch, unreadable shard
        and record that does not decode to ``on_skip`` (logged as warnings without it) instead of raising.
        """
        if split is not None:
            if prefix is not None:
                raise TfrGenError(
                    f"{cls.__name__}.read_dataset: a TFDS split has no prefix: give split or prefix"
                )
            return read_split(
                directory,
                split,
                cls.decode,
                on_error=on_error,
                on_skip=on_skip,
                max_record_bytes=max_record_bytes,
            )
        return read_dataset(
            directory,
            cls.decode,
            schema=cls.__tfr__.info,
            check_schema=check_schema,
            prefix=prefix,
            on_error=on_error,
            on_skip=on_skip,
            max_record_bytes=max_record_bytes,
            storage_options=storage_options,
        )

    @classmethod
    def dataset_manifest(
        cls,
        directory: PathLike,
        *,
        prefix: str | None = None,
        storage_options: StorageOptions | None = None,
    ) -> Manifest:
        """The dataset's manifest: schema, shards, record counts and sizes (no scanning)."""
        return load_manifest(directory, prefix, storage_options=storage_options)

    @classmethod
    def indexed(
        cls,
        path: PathLike | BinaryIO,
        *,
        index: PathLike | None = None,
        storage_options: StorageOptions | None = None,
    ) -> IndexedRecords[Self]:
        """Random access to an uncompressed TFRecord file (a path, a URL or a seekable binary file object):
        ``len()`` and ``records[i]``, by its index (``tfr-gen index``), or by a scan when it has none."""
        return IndexedRecords(path, cls.decode, index=index, storage_options=storage_options)

    @classmethod
    def random_access(
        cls,
        files: Files,
        *,
        check_schema: bool = True,
        storage_options: StorageOptions | None = None,
    ) -> RandomAccess[Self]:
        """Records of many uncompressed files (paths, URLs, globs, dataset directories or manifests) by global
        position: ``len()`` and ``source[i]``, Grain's random-access data source protocol (see
        :mod:`codegen.runtime.data.random_access`)."""
        return RandomAccess(
            files,
            cls.decode,
            schema=cls.__tfr__.info,
            check_schema=check_schema,
            storage_options=storage_options,
        )

    @classmethod
    def decode_batch(cls, data: Sequence[BytesLike]) -> B:
        """Decode many serialized records (each any bytes-like object) at once into columns (same rules and errors
        as :meth:`decode`)."""
        return cast("B", cls.__tfr__.batch_class().decode(data))

    @overload
    @classmethod
    def dataset(
        cls,
        files: Files | Streams,
        *,
        batch_size: int,
        drop_remainder: bool = False,
        **options: Unpack[DatasetOptions],
    ) -> Dataset[B]: ...

    @overload
    @classmethod
    def dataset(
        cls, files: Files | Streams, *, batch_size: None, **options: Unpack[DatasetOptions]
    ) -> Dataset[Self]: ...

    @classmethod
    def dataset(
        cls,
        files: Files | Streams,
        *,
        batch_size: int | None,
        drop_remainder: bool = False,
        **options: Unpack[DatasetOptions],
    ) -> Dataset[B] | Dataset[Self]:
        """Read many TFRecord files (paths, URLs or globs; ``storage_options`` for URLs; or seekable binary file
        objects) as batches (or records with ``batch_size=None``):
        interleaved, shuffled with a seed, and sharded across DataLoader workers and ranks so each record is read
        once per epoch. With ``split="train"``, ``files`` are prepared TensorFlow Datasets directories and the
        split's shards are read (record counts from their ``dataset_info.json``)."""
        return record_dataset(
            files,
            cls.decode,
            cls.__tfr__.batch_class().decode,
            schema=cls.__tfr__.info,
            batch_size=batch_size,
            arrow_schema=cls.arrow_schema,
            drop_remainder=drop_remainder,
            **options,
        )


class ExampleRecord(Record[B, P]):
    """The base of a generated record class that is a ``tf.train.Example``."""

    __slots__ = ()

    @classmethod
    def tf_feature_spec(cls) -> dict[str, Any]:
        """The ``{key: tf.io.FixedLenFeature | tf.io.RaggedFeature}`` spec for ``tf.io.parse_example``."""
        return tf_feature_spec(cls.__tfr__.features)


class SequenceRecord(Record[B, P]):
    """The base of a generated record class that is a ``tf.train.SequenceExample``."""

    __slots__ = ()

    @classmethod
    def tf_context_spec(cls) -> dict[str, Any]:
        """The ``context_features`` spec for ``tf.io.parse_sequence_example``."""
        return tf_feature_spec(cls.__tfr__.features)

    @classmethod
    def tf_sequence_spec(cls) -> dict[str, Any]:
        """The ``sequence_features`` spec for ``tf.io.parse_sequence_example``."""
        return tf_feature_spec(cls.__tfr__.sequence or ())


class Batch(Generic[R]):
    """The base of every generated batch class: a frozen dataclass of columns, one per attribute of record ``R``.

    Fixed numeric shapes are arrays ``[B, *shape]`` of the declared dtype, strings and bytes lists; each ``null``
    dimension is a level of :class:`~codegen.runtime.codec.columns.Ragged` (flat values plus row splits); an
    optional feature is :class:`~codegen.runtime.codec.columns.Masked` (values plus a ``present`` mask).
    """

    __tfr__: ClassVar[RecordMeta]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        meta = cls.__dict__.get("__tfr__")
        if isinstance(meta, RecordMeta):
            meta.batch = cls

    def __post_init__(self) -> None:
        self.__tfr__.batch_codec.check(self.columns())

    def __len__(self) -> int:
        """The number of records."""
        return len(getattr(self, self.__tfr__.names[0]))

    def columns(self) -> tuple[Any, ...]:
        """Every column, in attribute order."""
        return tuple(getattr(self, name) for name in self.__tfr__.names)

    @classmethod
    def decode(cls, data: Sequence[BytesLike]) -> Self:
        """Decode serialized records (each any bytes-like object) column by column: the values are those of the
        record's ``decode`` of each;
        the first record that does not decode raises :class:`~codegen.errors.RecordError` naming its index."""
        return cls(*cls.__tfr__.batch_codec.decode(data))

    @classmethod
    def from_records(cls, records: Iterable[R]) -> Self:
        """The batch of ``records``, in order."""
        names = cls.__tfr__.names
        rows = [tuple(getattr(r, name) for name in names) for r in records]
        return cls(*cls.__tfr__.batch_codec.columns(rows))

    def records(self) -> list[R]:
        """The records of the batch, in order (they share nothing with it)."""
        record = cast("type[R]", self.__tfr__.record_class())
        return [
            record._from_values(values) for values in self.__tfr__.batch_codec.rows(self.columns())
        ]

    def to_dict(self) -> dict[str, Any]:
        """Every column by attribute name: numpy arrays, lists, ``Ragged`` and ``Masked`` columns."""
        return {name: getattr(self, name) for name in self.__tfr__.names}

    def encode(self) -> list[bytes]:
        """Each record's serialized bytes, as its ``encode()`` gives them. Values are checked as the record's
        constructor checks them; :class:`~codegen.errors.RecordError` names the row and the column."""
        meta = self.__tfr__
        columns = self.columns()
        fast = meta.batch_encoder.encode(columns, meta.batch_codec.check(columns))
        if fast is not None:
            return fast
        record = meta.record_class()
        names = meta.names
        out = []
        for index, values in enumerate(meta.batch_codec.rows(columns)):
            try:
                built = record(**dict(zip(names, values, strict=True)))
            except RecordError as exc:
                raise RecordError(f"{type(self).__name__} row {index}: {exc}") from None
            out.append(built.encode())
        return out

    def to_arrow(self) -> Any:
        """The batch as a ``pyarrow.RecordBatch`` of :meth:`Record.arrow_schema`: numeric columns are handed over
        without copying their numbers (bools excepted: Arrow packs them into bits). Needs the ``arrow`` extra."""
        return columns_to_arrow(self.__tfr__.arrow, self.columns())

    @classmethod
    def from_arrow(cls, data: Columns) -> Self:
        """The batch of an Arrow table or record batch, or a pandas or polars data frame, with a column per
        attribute. Every column is checked against the record: its type (fixed dimensions may come as lists of
        that length, integers in another width if every value fits, strings as UTF-8 binary), and nulls only in
        optional features; :class:`~codegen.errors.RecordError` names the column, the row and the mismatch."""
        table = arrow_table(data)
        if table is None:
            raise RecordError(
                f"{cls.__name__}.from_arrow: expected a pyarrow Table or RecordBatch, or a pandas or polars "
                f"DataFrame, got {type(data).__name__}"
            )
        meta = cls.__tfr__
        return cls(*columns_from_arrow(meta.name, meta.arrow.forms, table))

    def to_pandas(self) -> Any:
        """The batch as a ``pandas.DataFrame`` (through :meth:`to_arrow`; needs the ``arrow`` and ``pandas``
        extras)."""
        optional_module("pandas", f"{type(self).__name__}.to_pandas")
        return self.to_arrow().to_pandas()

    def to_polars(self) -> Any:
        """The batch as a ``polars.DataFrame`` (through :meth:`to_arrow`; needs the ``arrow`` and ``polars``
        extras)."""
        polars = optional_module("polars", f"{type(self).__name__}.to_polars")
        return polars.from_arrow(self.to_arrow())


def _short(value: object) -> str:
    text = repr(value).replace("\n", " ")
    return text if len(text) <= 40 else text[:37] + "..."
