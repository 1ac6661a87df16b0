"""Many TFRecord shards read as one stream of batches (or records) for a training loop.

``Record.dataset(files, batch_size=...)`` builds a :class:`Dataset`. Each pass over it reads every
record of its part of the data once per epoch:

* **Files**: paths or URLs (``"s3://bucket/train-*.tfrecord.gz"``, reached with
  ``storage_options``), glob patterns (``"data/train-*.tfrecord.gz"``), ``write_dataset`` directories
  or their manifests, or a sequence of them (see :mod:`codegen.runtime.data.sources`); the files
  are read in sorted order. ``compression="auto"`` detects each file's from its first bytes. A
  manifest's writer schema is checked against the reader's record as ``read_dataset`` checks it
  (``check_schema=False`` skips the check). With ``split="train"``, ``files`` are prepared TFDS
  dataset directories and the split's shards are read, counts from ``dataset_info.json`` (see
  :mod:`codegen.runtime.data.tfds`). ``files`` may instead be open binary file objects (one, or a
  sequence of them), read in the order given, each from the position it had when given, again for
  every epoch: they must be able to seek (``TypeError`` otherwise, and for a text-mode file). They
  stay open, one iteration reads them at a time, and DataLoader workers cannot share them (an
  iteration in a worker raises :class:`~codegen.errors.TfrGenError`: give paths or URLs).
* **Interleave**: ``interleave`` files are open at once and take turns, one record each; when one
  ends the next file takes its turn (``tf.data``'s ``interleave(cycle_length=...)``).
* **Shuffle**: ``shuffle_buffer > 0`` shuffles the order of the files of every epoch and passes the
  records through a buffer of that size, from which each next record is drawn at random. The order
  is a function of ``seed``, the epoch and the shard only (``seed=None``: a random seed chosen when
  the ``Dataset`` is built, so the workers of one DataLoader agree).
* **Epochs and batches**: each iteration reads ``epochs`` epochs (``None``: without end). Each
  ``batch_size`` records are decoded column by column into one ``<Record>Batch``
  (``batch_size=None``: records one by one). Batches never span two epochs; the last, smaller batch
  of an epoch is kept unless ``drop_remainder``. Every iteration starts at the next epoch (the
  first at 0), so each ``for`` loop and each DataLoader epoch, with persistent workers or fresh
  ones, has its own order; :meth:`Dataset.set_epoch` sets the next epoch (see
  :mod:`codegen.runtime.data.position`).
* **Lengths and equal batches**: ``len(dataset)`` is what one iteration of this shard yields, when
  every file's record count is known (from manifests, current indexes, or a counting pass with
  ``count=True``). ``equal_batches`` gives every shard the same number of full batches per epoch,
  so distributed ranks never wait on each other: ``"drop"`` takes ``min`` over the shards of
  their full batches and leaves out the rest of each shard's epoch; ``"pad"`` takes the ``max``
  over the shards of their batches (the last counted whole) and fills each shard's epoch up by
  reading it again from its start (records of the same epoch, in the same order).
* **Resuming**: :meth:`Dataset.state_dict` says where this shard's iteration is (epoch and records
  taken from it, plus what identifies the data and the order); :meth:`Dataset.load_state_dict`
  makes the next iteration go on from there. Through ``to_torch()`` these are the torch dataset's
  methods, so ``torchdata``'s ``StatefulDataLoader`` checkpoints each worker.
* **Sharding** between PyTorch DataLoader workers (``torch.utils.data.get_worker_info()``) and
  distributed ranks (``rank``/``world_size``, or ``torch.distributed`` once it is initialised):
  with ``S = world_size * workers`` shards, shard ``rank * workers + worker`` reads, when there are
  at least ``S`` files, the files whose position ``j`` in the sorted list has ``j % S`` equal to
  it; with fewer files every shard reads all files and keeps record ``i`` of file ``j`` when
  ``(j + i) % S`` equals it. Either way each record is read by exactly one shard in every epoch.
* **Where the work happens**: the iterating thread reads each file a buffer (about 1 MiB) at a
  time (the reads release the GIL), finds and CRC-checks the buffer's frames in one call (without
  the GIL when the accelerator is built) and hands the buffer's records over together: they become
  batches without a step of Python per record, and a shuffle buffer plays its draws 1024 at a
  time on arrays of records. Without a shuffle buffer (and with the accelerator, files read one at
  a time) a buffer's records are one ``Spans`` of it, a batch is slices of those joined, and
  ``scan_batch`` decodes them in place: no object is made per record. Batches are decoded by
  ``num_threads`` threads (``None``, the default, is one: on two cores more threads pay for
  large batches of numeric features only; ask for more where such decoding dominates). The
  accelerator decodes a batch's records without holding the GIL (``scan_batch``), so the threads
  decode in parallel while the iterating thread reads ahead; up to ``2 * num_threads`` batches
  are in flight. The
  batches come out in the order their records were read, so the order, the positions of
  :meth:`Dataset.state_dict`, epochs and the exactly-once guarantees are those of
  ``num_threads=1`` (decoding in the iterating thread). Records (``batch_size=None``) are
  decoded one by one in the iterating thread.
* **Bad data**: with ``on_error="raise"`` (the default) a corrupt or truncated file raises
  :class:`~codegen.errors.DataError` naming the file, record and byte offset; so does a record
  that does not decode. With ``on_error="skip"`` the readers resynchronise after corrupt stretches,
  a file that cannot be opened is passed over, and a record that does not decode is left out of
  its batch, which the next records fill up. Each piece passed over is handed to ``on_skip`` (see
  :mod:`codegen.runtime.io.skips`; without a callback it is logged as a warning) and counted in
  :attr:`Dataset.skipped`. Good records are still read exactly once across shards: a record's
  index in its file counts the readable records before it, which every shard reading the file
  finds alike, and when every shard reads every file, a stretch is reported by the one shard that
  owns the index of the record after it (a file that cannot be opened: index 0). Callbacks and
  counters live in the process that reads, so in DataLoader workers they are the workers'.
* **Changed shards**: a manifest's shard is read only if its size is the manifest's, and its
  crc32c is computed in the pass that reads it: a shard replaced after the dataset was written
  (other bytes of the same size) raises :class:`~codegen.errors.TfrGenError` when its last record
  has been read, or with ``on_error="skip"`` is reported as a span of length 0 at its end (its
  records were read; a size that differs skips the whole shard before it is read).
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import itertools
import logging
import operator
import os
import secrets
import sys
from array import array
from collections.abc import Callable, Generator, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import (
    TYPE_CHECKING,
    Any,
    BinaryIO,
    Generic,
    Literal,
    Protocol,
    TypedDict,
    TypeVar,
    Unpack,
    cast,
)

import numpy as np
import numpy.typing as npt

from codegen.errors import DataError, RecordError, TfrGenError
from codegen.runtime.accel import speedups
from codegen.runtime.data.position import EpochCounter, Position
from codegen.runtime.data.schemainfo import SchemaInfo
from codegen.runtime.data.sources import (
    Files,
    SourceReader,
    StreamFile,
    Streams,
    count_records,
    find_sources,
    given_streams,
    stream_sources,
)
from codegen.runtime.data.tfds import splits_sources
from codegen.runtime.extras import optional_module
from codegen.runtime.io import prefetch
from codegen.runtime.io.compression import Compression
from codegen.runtime.io.files import file_size
from codegen.runtime.io.framing import FRAMING
from codegen.runtime.io.prefetch import FilesAhead
from codegen.runtime.io.reader import (
    DEFAULT_MAX_RECORD_BYTES,
    TFRecordReader,
    check_max_record_bytes,
)
from codegen.runtime.io.skips import (
    OnError,
    OnSkip,
    SkipCounts,
    SkippedRecord,
    SkippedSpan,
    SkipReporter,
    check_on_error,
)
from codegen.runtime.io.urls import StorageOptions, is_url, read_parts

if TYPE_CHECKING:
    from torch.utils.data import IterableDataset

__all__ = [
    "ColumnBatch",
    "Dataset",
    "DatasetOptions",
    "EqualBatches",
    "Files",
    "Shard",
    "Streams",
    "record_dataset",
]

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)
B = TypeVar("B", bound="ColumnBatch")

_log = logging.getLogger(__name__)

EqualBatches = Literal["drop", "pad"]
"""How ``equal_batches`` gives every shard the same number of batches per epoch."""

_STATE_FORMAT = "tfr-gen dataset state"
_STATE_VERSION = 1

_RECORD_CHUNK = 256
"""Records handed over (and decoded) together when a dataset yields records one by one."""

_Raw = tuple[bytes, int, int]
"""A raw record, its file's position in :attr:`Dataset.files` and its index in that file."""

_Run = tuple[Sequence[bytes], int, int]
"""Records read together from one file (a buffer of it), in order: the records (a list, or a
``Spans`` of the buffer), the file's position in :attr:`Dataset.files` and the index of the first
record in that file."""


_DATA = operator.itemgetter(0)
"""A raw record's data."""


class ColumnBatch(Protocol):
    """What a batch class offers the torch adapter: its columns by attribute name."""

    def to_dict(self) -> dict[str, Any]: ...


class ArrowBatch(Protocol):
    """What a batch class offers the Arrow reader."""

    def to_arrow(self) -> Any: ...


class DatasetOptions(TypedDict, total=False):
    """The options of a :class:`Dataset` besides its files, batching and decoding."""

    shuffle_buffer: int
    seed: int | None
    epochs: int | None
    interleave: int
    compression: Compression | Literal["auto"]
    rank: int | None
    world_size: int | None
    on_error: OnError
    on_skip: OnSkip | None
    check_schema: bool
    count: bool
    equal_batches: EqualBatches | None
    storage_options: StorageOptions | None
    max_record_bytes: int | None
    num_threads: int | None
    split: str | None


@dataclass(frozen=True, slots=True)
class Shard:
    """The part of the data one reader reads: shard ``index`` of ``count``."""

    index: int
    count: int


def _positive(name: str, value: int | None, *, zero: bool = False) -> None:
    if value is not None and (type(value) is not int or value < (0 if zero else 1)):
        least = "0" if zero else "1"
        raise TfrGenError(f"Dataset: {name} must be an int >= {least}, got {value!r}")


def _environment_shard(rank: int | None, world_size: int | None) -> Shard:
    """This reader's shard, from the rank (given, or ``torch.distributed``'s) and the worker."""
    torch = sys.modules.get("torch")  # a DataLoader worker or a distributed job has imported it
    if rank is None and world_size is None:
        rank, world_size = 0, 1
        distributed = sys.modules.get("torch.distributed")
        if distributed is not None and distributed.is_available() and distributed.is_initialized():
            rank, world_size = distributed.get_rank(), distributed.get_world_size()
    elif rank is None or world_size is None:
        raise TfrGenError(
            f"Dataset: give both rank and world_size, or neither (got {rank=}, {world_size=})"
        )
    elif not 0 <= rank < world_size:
        raise TfrGenError(f"Dataset: rank must be in [0, {world_size}), got {rank}")
    worker, workers = 0, 1
    if torch is not None:
        info = torch.utils.data.get_worker_info()
        if info is not None:
            worker, workers = info.id, info.num_workers
    return Shard(rank * workers + worker, world_size * workers)


class Dataset(Generic[T]):
    """An iterable of batches (or records) read from TFRecord shards; see the module docstring.

    Build it with :meth:`of_batches` or :meth:`of_records` (``Record.dataset`` does, through
    :func:`record_dataset`). ``files`` are the files found, in sorted order. Iterating runs every
    epoch; each new iteration starts again from epoch 0.
    """

    def __init__(
        self,
        files: Files | Streams,
        decode: Callable[[bytes], Any],
        decode_batch: Callable[[Sequence[bytes]], Any] | None,
        *,
        batch_size: int | None,
        drop_remainder: bool = False,
        shuffle_buffer: int = 0,
        seed: int | None = None,
        epochs: int | None = 1,
        interleave: int = 1,
        compression: Compression | Literal["auto"] = "auto",
        rank: int | None = None,
        world_size: int | None = None,
        on_error: OnError = "raise",
        on_skip: OnSkip | None = None,
        schema: SchemaInfo | None = None,
        check_schema: bool = True,
        count: bool = False,
        equal_batches: EqualBatches | None = None,
        max_record_bytes: int | None = DEFAULT_MAX_RECORD_BYTES,
        num_threads: int | None = None,
        arrow_schema: Callable[[], Any] | None = None,
        storage_options: StorageOptions | None = None,
        split: str | None = None,
    ) -> None:
        if decode_batch is None:
            if batch_size is not None or drop_remainder:
                raise TfrGenError("Dataset: batch_size and drop_remainder need a decode_batch")
        else:
            _positive("batch_size", batch_size)
        _positive("shuffle_buffer", shuffle_buffer, zero=True)
        _positive("epochs", epochs, zero=True)
        _positive("interleave", interleave)
        _positive("rank", rank, zero=True)
        _positive("world_size", world_size)
        _positive("num_threads", num_threads)
        if seed is not None and (type(seed) is not int or seed < 0):
            raise TfrGenError(f"Dataset: seed must be an int >= 0 or None, got {seed!r}")
        if equal_batches not in (None, "drop", "pad"):
            raise TfrGenError(
                f"Dataset: equal_batches must be 'drop', 'pad' or None, got {equal_batches!r}"
            )
        if equal_batches is not None and drop_remainder:
            raise TfrGenError(
                "Dataset: equal_batches already decides the last batch; leave out drop_remainder"
            )
        self._storage = storage_options
        self.max_record_bytes = check_max_record_bytes(max_record_bytes)
        """The largest record read (``None``: no limit): a record header that declares more is
        damage, found before its data is read (see :class:`~codegen.runtime.io.reader.TFRecordReader`)."""
        streams = given_streams(files)
        self._streams: tuple[StreamFile, ...] | None = None
        if streams is not None:
            if split is not None:
                raise TfrGenError(
                    "Dataset: a TFDS split is read from its directories, not file objects"
                )
            self._sources, self._streams = stream_sources(streams, compression)
        elif split is None:
            self._sources = find_sources(
                cast("Files", files),
                compression,
                schema,
                check_schema=check_schema,
                storage_options=storage_options,
            )
        else:
            self._sources = splits_sources(cast("Files", files), split)
        if count:
            self._sources = tuple(
                dataclasses.replace(
                    s,
                    records=count_records(s, storage_options, max_record_bytes, self._stream(i)),
                )
                for i, s in enumerate(self._sources)
            )
        self.files = tuple(source.path for source in self._sources)
        self._compressions = tuple(source.compression for source in self._sources)
        self._schema = schema
        self._decode = decode
        self._decode_batch = decode_batch
        self.batch_size = batch_size
        self.drop_remainder = drop_remainder
        self.equal_batches = equal_batches
        self.shuffle_buffer = shuffle_buffer
        self._seed_given = seed is not None
        self.seed = secrets.randbits(63) if seed is None else seed
        self.epochs = epochs
        self.interleave = interleave
        self.num_threads = num_threads
        """Threads decoding batches (``None``: chosen when an iteration starts, see the module
        docstring)."""
        self._rank = rank
        self._world_size = world_size
        _environment_shard(rank, world_size)  # checks rank and world_size now
        self.on_error = check_on_error(on_error, on_skip, "Dataset")
        self._views = speedups is not None and not shuffle_buffer
        """Whether readers hand records over as views of their buffers (see
        :meth:`TFRecordReader.views`): each is decoded right away, so it pins its buffer only
        briefly, unlike records waiting in a shuffle buffer. A file read alone (``interleave``
        1) hands over each buffer's records as one ``Spans``: no object per record."""
        self._report = SkipReporter(on_skip, _log)
        self._quiet = False
        """Set while a resumed iteration re-reads what was read before: nothing is reported twice."""
        self._counter = EpochCounter()
        self._resume: Position | None = None
        self._resume_shard: Shard | None = None
        self._at: list[int] | None = None
        """The running iteration's ``[epoch, consumed, stop]`` (``stop`` -1: without end)."""
        self._sizes: tuple[int, ...] | None = None
        self._arrow_schema = arrow_schema

    def _stream(self, file: int) -> StreamFile | None:
        """The caller's file object that file ``file`` is, if the dataset reads file objects."""
        return None if self._streams is None else self._streams[file]

    @property
    def skipped(self) -> SkipCounts:
        """What iterations in this process skipped so far (``on_error="skip"``)."""
        return self._report.counts

    @classmethod
    def of_batches(
        cls,
        files: Files | Streams,
        decode_batch: Callable[[Sequence[bytes]], B],
        decode: Callable[[bytes], object],
        *,
        batch_size: int,
        drop_remainder: bool = False,
        **options: Unpack[DatasetOptions],
    ) -> Dataset[B]:
        """Batches of ``batch_size`` records, each decoded by ``decode_batch``; ``decode`` (the
        record's per-record decoding) finds the record to blame when a batch does not decode."""
        return Dataset(
            files,
            decode,
            decode_batch,
            batch_size=batch_size,
            drop_remainder=drop_remainder,
            **options,
        )

    @classmethod
    def of_records(
        cls,
        files: Files | Streams,
        decode: Callable[[bytes], T],
        **options: Unpack[DatasetOptions],
    ) -> Dataset[T]:
        """Records one by one, each decoded by ``decode``."""
        return Dataset(files, decode, None, batch_size=None, **options)

    def shard(self) -> Shard:
        """The part of the data an iteration in this process (and DataLoader worker) reads."""
        return _environment_shard(self._rank, self._world_size)

    # --- epochs, lengths and resuming ------------------------------------------------------------

    def set_epoch(self, epoch: int) -> None:
        """Sets the epoch the next iteration starts at, in this process and in DataLoader workers
        started from it (see :mod:`codegen.runtime.data.position`); forgets a loaded state."""
        _positive("epoch", epoch, zero=True)
        self._counter.set(epoch)
        self._resume = None

    def __len__(self) -> int:
        """The batches (records with ``batch_size=None``) one iteration of this shard yields: per
        epoch times ``epochs``. Needs every file's record count (from manifests, current indexes,
        or ``count=True``); ``TypeError`` otherwise, or when the epochs do not end."""
        if self.epochs is None:
            raise TypeError("len() of a Dataset that repeats without end (epochs=None)")
        shard = self.shard()
        quota = self._quota(shard)
        records = self._shard_records(shard)[shard.index] if quota is None else quota
        if self.batch_size is None:
            return records * self.epochs
        full, rest = divmod(records, self.batch_size)
        return (full + (1 if rest and not self.drop_remainder else 0)) * self.epochs

    def _counts(self) -> tuple[int, ...]:
        """Every file's record count; ``TypeError`` when one is not known."""
        counts = tuple(source.records for source in self._sources)
        if None in counts:
            unknown = next(s.path for s in self._sources if s.records is None)
            raise TypeError(
                f"Dataset: the record count of {unknown!r} is not known: read a write_dataset"
                " directory or manifest, index the files (tfr-gen index), or pass count=True"
            )
        return cast("tuple[int, ...]", counts)

    def _shard_records(self, shard: Shard) -> list[int]:
        """How many records each of the ``shard.count`` shards reads per epoch."""
        counts, total = self._counts(), shard.count
        out = [0] * total
        if len(counts) >= total:
            for file, records in enumerate(counts):
                out[file % total] += records
            return out
        for file, records in enumerate(counts):
            whole, rest = divmod(records, total)
            for index in range(total):
                out[index] += whole + (1 if (index - file) % total < rest else 0)
        return out

    def _quota(self, shard: Shard) -> int | None:
        """With ``equal_batches``, the records every shard takes per epoch (see the module
        docstring); else ``None``."""
        if self.equal_batches is None:
            return None
        per_shard = self._shard_records(shard)
        size = self.batch_size or 1
        if self.equal_batches == "drop":
            return min(per_shard) // size * size
        return max(-(-records // size) for records in per_shard) * size

    def state_dict(self) -> dict[str, Any]:
        """Where this shard's iteration is, as a small JSON-serialisable dict (see
        :meth:`load_state_dict`): the files' names and sizes, the schema fingerprint, the seed,
        the options that decide the order, the epoch and the records taken from it."""
        if self._at is not None:
            epoch, consumed, stop = self._at
            position = Position(epoch, consumed, None if stop < 0 else stop)
        elif self._resume is not None:
            position = self._resume
        else:  # between iterations: the next one starts afresh
            epoch = self._counter.get(_worker_slot())
            position = Position(epoch, 0, epoch)
        shard = self.shard()
        return {
            "format": _STATE_FORMAT,
            "version": _STATE_VERSION,
            **self._identity(),
            "seed": self.seed,
            "shard": [shard.index, shard.count],
            "epoch": position.epoch,
            "consumed": position.consumed,
            "stop": position.stop,
        }

    def _identity(self) -> dict[str, Any]:
        """What a state must agree with to be loaded: the data and the order's options."""
        if self._sizes is None:
            self._sizes = tuple(
                _size(path, self._storage) if stream is None else stream.size()
                for path, stream in ((path, self._stream(i)) for i, path in enumerate(self.files))
            )
        return {
            "files": [
                [os.path.basename(p), n] for p, n in zip(self.files, self._sizes, strict=True)
            ],
            "fingerprint": None if self._schema is None else self._schema.fingerprint,
            "order": {
                "batch_size": self.batch_size,
                "drop_remainder": self.drop_remainder,
                "equal_batches": self.equal_batches,
                "shuffle_buffer": self.shuffle_buffer,
                "interleave": self.interleave,
            },
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Makes the next iteration go on from ``state`` (from :meth:`state_dict`): it yields what
        the iteration the state was taken from would have yielded after it, re-reading the records
        before the position without decoding them. A state taken after an iteration's last batch
        starts the next iteration afresh. A state of other files (names and sizes), another
        schema fingerprint, seed, shard or order options is refused with
        :class:`~codegen.errors.TfrGenError` naming what differs."""
        if not isinstance(state, dict) or state.get("format") != _STATE_FORMAT:
            raise TfrGenError("Dataset.load_state_dict: not a dataset state")
        if state.get("version") != _STATE_VERSION:
            raise TfrGenError(
                f"Dataset.load_state_dict: state version {state.get('version')!r} is not"
                f" supported (expected {_STATE_VERSION})"
            )
        mine = self._identity()
        for key, what in (
            ("fingerprint", "schema fingerprint"),
            ("order", "options"),
            ("files", "files"),
        ):
            if state.get(key) != mine[key]:
                raise TfrGenError(
                    f"Dataset.load_state_dict: the state was saved for other data: its {what}"
                    f" {_short(state.get(key))} differ from this dataset's {_short(mine[key])}"
                )
        shard = self.shard()
        if state.get("shard") != [shard.index, shard.count]:
            raise TfrGenError(
                f"Dataset.load_state_dict: the state is of shard {state.get('shard')!r}; this"
                f" process reads shard [{shard.index}, {shard.count}]"
            )
        seed = state.get("seed")
        if type(seed) is not int or (self._seed_given and seed != self.seed):
            raise TfrGenError(
                f"Dataset.load_state_dict: the state's seed {seed!r} is not this dataset's"
                f" {self.seed}"
            )
        epoch, consumed, stop = state.get("epoch"), state.get("consumed"), state.get("stop")
        if not (
            type(epoch) is int
            and type(consumed) is int
            and epoch >= 0
            and consumed >= 0
            and (stop is None or type(stop) is int)
        ):
            raise TfrGenError("Dataset.load_state_dict: invalid epoch, consumed or stop")
        self.seed = seed
        if stop is not None and epoch >= stop:
            self._counter.set(epoch, _worker_slot())  # the iteration had ended: a fresh one
            self._resume = None
        else:
            self._resume = Position(epoch, consumed, stop)
            self._resume_shard = shard

    def __iter__(self) -> Iterator[T]:
        shard = self.shard()
        slot = _worker_slot()
        resume, self._resume = self._resume, None
        if resume is not None and self._resume_shard != shard:
            raise TfrGenError(
                f"Dataset: a state of shard {self._resume_shard} was loaded, but this iteration reads"
                f" {shard}: a state loaded in the main process does not fit DataLoader workers; use"
                " torchdata's StatefulDataLoader, which loads each worker's state in the worker"
            )
        if resume is None:
            start = self._counter.claim(slot, self.epochs)
            resume = Position(start, 0, None if self.epochs is None else start + self.epochs)
        elif resume.stop is not None:
            self._counter.set(resume.stop, slot)
        quota = self._quota(shard)
        offsets = _Offsets(
            self.files, self._compressions, self._storage, self.max_record_bytes, self._streams
        )
        stop = -1 if resume.stop is None else resume.stop
        epoch, skip = resume.epoch, resume.consumed
        try:
            while stop < 0 or epoch < stop:
                tape = self._tape(shard, epoch, quota)
                try:
                    if skip:
                        self._quiet = True
                        try:
                            tape.skip(skip)
                        finally:
                            self._quiet = False
                    self._at = [epoch, tape.consumed, stop]
                    yield from self._epoch_items(tape, offsets)
                finally:
                    tape.close()
                epoch += 1
                skip = 0
        finally:
            self._at = None

    def _epoch_items(self, tape: _Tape | _RunTape, offsets: _Offsets) -> Iterator[T]:
        """The batches (or records) of one epoch's raw records; :attr:`_at` says where each is."""
        decode_batch = self._decode_batch
        at = cast("list[int]", self._at)
        if decode_batch is None:
            while chunk := _raws_of(tape.take(_RECORD_CHUNK)):
                base = tape.consumed - len(chunk)
                last = len(chunk) - 1
                for j, raw in enumerate(chunk):
                    try:
                        record = self._decode(raw[0])
                    except RecordError as exc:
                        self._failed(raw, exc, offsets)
                        continue
                    _mark(at, tape, base + j + 1, j == last)
                    yield record
        else:
            yield from self._batches(tape, decode_batch, offsets)

    def to_torch(self, *, shared_memory: bool = True) -> IterableDataset[dict[str, Any]]:
        """A ``torch.utils.data.IterableDataset`` of the batches as dicts of tensors sharing the
        columns' memory (see :mod:`codegen.runtime.data.pytorch`); use it with
        ``DataLoader(..., batch_size=None)``. In DataLoader workers the batches reach the main
        process through shared memory each worker reuses (``shared_memory=False``: through the
        DataLoader's fresh shared memory per tensor)."""
        if self._decode_batch is None:
            raise TfrGenError("Dataset.to_torch needs a dataset of batches: give a batch_size")
        from codegen.runtime.data.pytorch import TorchBatches

        return TorchBatches(self, _to_dict, shared_memory=shared_memory)

    def to_arrow_reader(self) -> Any:
        """A ``pyarrow.RecordBatchReader`` streaming the batches as Arrow record batches (numbers not copied; see
        ``Batch.to_arrow``), one epoch after another as iteration runs them. Needs the ``arrow`` extra."""
        if self._decode_batch is None or self._arrow_schema is None:
            raise TfrGenError(
                "Dataset.to_arrow_reader needs a dataset of a record's batches: give a batch_size"
            )
        pa = optional_module("pyarrow", "Dataset.to_arrow_reader")
        schema = self._arrow_schema()
        batches = (cast("ArrowBatch", batch).to_arrow() for batch in self)
        return pa.RecordBatchReader.from_batches(schema, batches)

    def to_arrow(self) -> Any:
        """Every batch as one ``pyarrow.Table`` (all in memory: :meth:`to_arrow_reader` streams)."""
        return self.to_arrow_reader().read_all()

    # --- decoding --------------------------------------------------------------------------------

    def _records(self, chunk: list[_Raw], offsets: _Offsets) -> list[T]:
        """The records of ``chunk`` decoded one by one (see :meth:`_failed` for those that do not
        decode)."""
        decode = self._decode
        out: list[T] = []
        for raw in chunk:
            try:
                out.append(decode(raw[0]))
            except RecordError as exc:
                self._failed(raw, exc, offsets)
        return out

    def _batches(
        self,
        tape: _Tape | _RunTape,
        decode_batch: Callable[[Sequence[bytes]], T],
        offsets: _Offsets,
    ) -> Iterator[T]:
        """The batches of one epoch, decoded by :meth:`_threads` threads, in the order of their
        records. A batch that does not decode raises :class:`DataError` for the first record to
        blame; with ``on_error="skip"`` its records are decoded one by one, those that fail are
        reported and left out, and the records after them fill the batch up (the batches read
        ahead are given back to the tape and made again)."""
        size = cast("int", self.batch_size)
        at = cast("list[int]", self._at)
        threads = self._threads()
        pool = ThreadPoolExecutor(threads, "tfr-gen-decode") if threads > 1 else None
        submit: Callable[..., _Pending[T]] = _Decoded if pool is None else pool.submit
        pending: collections.deque[tuple[_Taken, int, _Pending[T]]] = collections.deque()
        carry: list[_Raw] = []
        ended = False
        try:
            while True:
                while not ended and len(pending) < 2 * threads:
                    taken = tape.take(size - len(carry))
                    chunk: _Taken = carry + _raws_of(taken) if carry else taken
                    carry = []
                    if not chunk or (len(chunk) < size and self.drop_remainder):
                        tape.unread(chunk)  # a batch that fails before it may need them
                        ended = True
                        break
                    ended = len(chunk) < size  # the epoch's last, smaller batch
                    data = chunk.data() if isinstance(chunk, _Chunk) else list(map(_DATA, chunk))
                    pending.append((chunk, tape.consumed, submit(decode_batch, data)))
                if not pending:
                    return
                taken, consumed, decoding = pending.popleft()
                try:
                    batch = decoding.result()
                except RecordError:
                    chunk = _raws_of(taken)
                    if self.on_error == "raise":
                        self._records(chunk, offsets)
                        raise
                    good = [raw for raw in chunk if self._decodes(raw, offsets)]
                    if len(good) == len(chunk):
                        raise  # each record decodes alone: the batch decoder itself failed
                    tape.unread([raw for later in pending for raw in _raws_of(later[0])])
                    for later in pending:
                        later[2].cancel()
                    pending.clear()
                    carry, ended = good, False
                    continue
                _mark(at, tape, consumed, True)
                yield batch
        finally:
            if pool is not None:
                pool.shutdown(wait=True, cancel_futures=True)

    def _threads(self) -> int:
        """The threads that decode batches in this iteration (see the module docstring)."""
        return 1 if self.num_threads is None else self.num_threads

    def _decodes(self, raw: _Raw, offsets: _Offsets) -> bool:
        """Whether the raw record decodes on its own (see :meth:`_failed` when it does not)."""
        try:
            self._decode(raw[0])
        except RecordError as exc:
            self._failed(raw, exc, offsets)
            return False
        return True

    def _failed(self, raw: _Raw, error: RecordError, offsets: _Offsets) -> None:
        """Raises :class:`DataError` for a raw record that does not decode, naming its file, index
        and byte offset; with ``on_error="skip"`` reports it instead."""
        data, file, index = raw
        path = self.files[file]
        offset = offsets.of(file, index)
        if self.on_error == "raise":
            raise DataError(str(error), path=path, index=index, offset=offset) from error
        self._report(SkippedRecord(path, offset, len(data) + FRAMING, str(error), index))

    # --- the raw records of one shard ------------------------------------------------------------

    def _tape(self, shard: Shard, epoch: int, quota: int | None) -> _Tape | _RunTape:
        """The tape of ``epoch`` of ``shard``: of its runs when batches are made of whole runs'
        records in the order read (no shuffle, no shared files, no quota), else of raw records."""
        if (
            self._views
            and self._decode_batch is not None
            and quota is None
            and self.interleave == 1
            and len(self.files) >= shard.count
        ):
            return _RunTape(self._epoch_runs(shard, None)[0])
        return _Tape(self._epoch_records(shard, epoch, quota))

    def _epoch_records(
        self, shard: Shard, epoch: int, quota: int | None
    ) -> tuple[Iterator[_Raw], Callable[[], None]]:
        """The raw records of ``epoch`` of ``shard``, shuffled, and what closes their files; with
        ``equal_batches`` exactly ``quota`` of them: the first ``quota``, or the epoch's records
        followed by its first records again until there are ``quota``."""
        if quota is None:
            return self._epoch_stream(shard, epoch)
        filled = self._filled(shard, epoch, quota)
        return filled, filled.close

    def _filled(self, shard: Shard, epoch: int, quota: int) -> Generator[_Raw]:
        given = 0
        while given < quota:
            stream, close = self._epoch_stream(shard, epoch)
            before = given
            try:
                for raw in itertools.islice(stream, quota - given):
                    given += 1
                    yield raw
            finally:
                close()
            if given == before:
                raise TfrGenError(
                    f"Dataset: shard {shard.index} of {shard.count} read no record in epoch"
                    f" {epoch}, so equal_batches={self.equal_batches!r} cannot fill its batches"
                )

    def _epoch_stream(self, shard: Shard, epoch: int) -> tuple[Iterator[_Raw], Callable[[], None]]:
        """The raw records of ``epoch`` of ``shard``, shuffled, and what closes their files.

        The readers hand their records over a run (a buffer of the file) at a time, and the runs
        become raw records in C (``zip``, slices for a shard's part of a run, ``chain``): without
        shuffling, no step of Python runs per record."""
        rng = np.random.default_rng([self.seed, epoch, shard.index, shard.count])
        runs, shared = self._epoch_runs(shard, rng if self.shuffle_buffer else None)
        raws = _raws if shared is None else functools.partial(_kept, shard=shared)
        records: Iterator[_Raw] = itertools.chain.from_iterable(map(raws, runs))
        if self.shuffle_buffer:
            records = _shuffled(records, self.shuffle_buffer, rng)
        return records, runs.close

    def _epoch_runs(
        self, shard: Shard, shuffle: np.random.Generator | None
    ) -> tuple[Generator[_Run], Shard | None]:
        """The runs of the files of ``shard``, in the order read (shuffled by ``shuffle`` when it
        is given: the epoch's generator when there is a shuffle buffer), and the shard when every
        shard reads every file (``None`` when each reads files of its own). Nothing is opened
        before the first run is asked for."""
        by_file = len(self.files) >= shard.count
        shared = None if by_file else shard
        order = list(range(len(self.files)))
        if by_file:
            order = order[shard.index :: shard.count]
        if shuffle is not None:
            shuffle.shuffle(order)
        return self._interleaved(order, shared), shared

    def _interleaved(self, order: list[int], shared: Shard | None) -> Generator[_Run]:
        """The runs of records of the files ``order``, ``interleave`` files taking turns (a run of
        one record each); a file at a URL is fetched ahead in a background thread, from the time
        the file before it is opened."""
        ahead = FilesAhead(
            order, self._read_ahead, self.files.__getitem__, chained=self.interleave == 1
        )
        try:
            yield from self._turns(order, shared, ahead)
        finally:
            ahead.close()

    def _read_ahead(self, file: int) -> Callable[[], Iterator[memoryview]] | None:
        """How a read-ahead fetches file ``file`` (in parts of
        :data:`~codegen.runtime.io.prefetch.PART_SIZE` bytes, one request each): ``None`` for a
        local file or a file object."""
        path = self.files[file]
        if self._streams is not None or not is_url(path):
            return None
        return functools.partial(read_parts, path, self._storage, prefetch.PART_SIZE)

    def _turns(self, order: list[int], shared: Shard | None, ahead: FilesAhead) -> Iterator[_Run]:
        if self.interleave == 1:
            for file in order:
                reader = self._open(file, shared, ahead)
                if reader is None:
                    continue
                with reader:
                    start = 0
                    for run in reader.runs(self._views, spans=self._views):
                        yield run, file, start
                        start += len(run)
            return
        pending = iter(order)
        turns: list[tuple[int, SourceReader, Iterator[tuple[int, bytes]]]] = []
        try:
            while len(turns) < self.interleave:
                opened = self._next_open(pending, shared, ahead)
                if opened is None:
                    break
                turns.append((*opened, self._numbered(opened[1])))
            turn = 0
            while turns:
                turn %= len(turns)
                file, reader, records = turns[turn]
                record = next(records, None)
                if record is None:
                    reader.close()
                    opened = self._next_open(pending, shared, ahead)
                    if opened is None:
                        del turns[turn]
                    else:
                        turns[turn] = (*opened, self._numbered(opened[1]))
                    continue
                yield [record[1]], file, record[0]
                turn += 1
        finally:
            for _, reader, _ in turns:
                reader.close()

    def _numbered(self, reader: SourceReader) -> Iterator[tuple[int, bytes]]:
        """The records of ``reader`` one by one, with their indexes."""
        return enumerate(itertools.chain.from_iterable(reader.runs(self._views)))

    def _next_open(
        self, pending: Iterator[int], shared: Shard | None, ahead: FilesAhead
    ) -> tuple[int, SourceReader] | None:
        """The next of the ``pending`` files that opens, with its reader; ``None`` when none is
        left."""
        for file in pending:
            reader = self._open(file, shared, ahead)
            if reader is not None:
                return file, reader
        return None

    def _open(self, file: int, shared: Shard | None, ahead: FilesAhead) -> SourceReader | None:
        """A reader of file ``file`` (of its read-ahead from ``ahead`` for a file at a URL); with
        ``on_error="skip"``, ``None`` for a file that cannot be opened, which is reported.

        Its records are views of its buffers (no copy, memory from the accelerator's pool) when
        it is built and no shuffle buffer holds records for long; else ``bytes``. The views stand
        in for ``bytes``: with the accelerator, every decoder (the compiled plan, ``scan_batch``,
        the C ``parse_example``) takes any buffer.

        ``shared`` is the shard when every shard reads every file: a skipped stretch is then
        reported only by the shard that owns the index of the record after it. A manifest's shard
        whose size is not the manifest's is not read; one whose crc32c is not the manifest's is
        found when its last record has been read: it raises, or is reported as a span of length
        0 at its end (its records were read: a check in the reading pass cannot take them back).
        """
        source = self._sources[file]
        path, listed = source.path, source.size
        stream = self._stream(file)
        if stream is not None and _worker_info() is not None:
            raise TfrGenError(
                "Dataset: DataLoader workers cannot share the file objects it reads (each process"
                " needs files of its own): give paths or URLs, or num_workers=0"
            )
        owner = not self._quiet and (shared is None or file % shared.count == shared.index)
        size = None if listed is None else _size(path, self._storage)
        if size != listed:
            changed = (
                f"the shard has {size} bytes but its manifest lists {listed}: it was changed"
                " or replaced after the dataset was written"
            )
            if self.on_error == "raise":
                raise TfrGenError(f"{path}: {changed}")
            if owner:
                self._report(SkippedSpan(path, 0, size or 0, changed))
            return None
        fetched = cast("BinaryIO | None", ahead.take(file))
        if stream is not None:
            fetched = stream.rewound()
        if self.on_error == "raise":

            def refused(reason: str) -> None:
                raise TfrGenError(f"{path}: {reason}")

            return SourceReader(
                source,
                refused,
                max_record_bytes=self.max_record_bytes,
                stream=fetched,
                storage_options=self._storage,
            )
        report = self._report

        def owned(span: SkippedSpan) -> None:
            if self._quiet:
                return
            if shared is None or (file + reader.reader.index) % shared.count == shared.index:
                report(span)

        def reported(reason: str) -> None:
            if owner:
                report(SkippedSpan(path, size or 0, 0, f"{reason}; its records were read"))

        try:
            reader = SourceReader(
                source,
                reported,
                on_error="skip",
                on_skip=owned,
                max_record_bytes=self.max_record_bytes,
                stream=fetched,
                storage_options=self._storage,
            )
        except OSError as exc:
            if owner:
                reason = f"cannot read the file: {exc.strerror or exc}"
                report(SkippedSpan(path, 0, _size(path, self._storage), reason))
            return None
        return reader


class _Offsets:
    """The byte offsets of the records of ``files``, found when a record that does not decode
    must be reported: one pass over its file (readable records only, as the dataset counts them)
    gives the offsets of all the file's records."""

    def __init__(
        self,
        files: tuple[str, ...],
        compressions: tuple[Compression, ...],
        storage_options: StorageOptions | None,
        max_record_bytes: int | None,
        streams: tuple[StreamFile, ...] | None,
    ) -> None:
        self._files = files
        self._streams = streams
        self._compressions = compressions
        self._storage = storage_options
        self._max_record_bytes = max_record_bytes
        self._tables: dict[int, array[int]] = {}

    def of(self, file: int, index: int) -> int:
        """The byte offset of the header of record ``index`` of file ``file``."""
        table = self._tables.get(file)
        if table is None:
            table = array("q")
            path, compression = self._files[file], self._compressions[file]
            stream = None if self._streams is None else self._streams[file]
            position = None if stream is None else stream.stream.tell()  # a reader's, kept
            with TFRecordReader(
                path if stream is None else stream.rewound(),
                compression=compression,
                on_error="skip",
                storage_options=self._storage,
                max_record_bytes=self._max_record_bytes,
            ) as reader:
                for data in reader:
                    table.append(reader.offset - len(data) - FRAMING)
            if stream is not None and position is not None:
                stream.stream.seek(position)
            self._tables[file] = table
        return table[index]


def _size(path: str, storage_options: StorageOptions | None) -> int:
    """The size of the file at ``path``, or 0 when it cannot be found."""
    try:
        return file_size(path, storage_options=storage_options)
    except OSError:
        return 0


def record_dataset(
    files: Files | Streams,
    decode: Callable[[bytes], Any],
    decode_batch: Callable[[Sequence[bytes]], ColumnBatch],
    *,
    batch_size: int | None,
    schema: SchemaInfo | None = None,
    drop_remainder: bool = False,
    arrow_schema: Callable[[], Any] | None = None,
    **options: Unpack[DatasetOptions],
) -> Dataset[Any]:
    """What a record class's ``dataset`` returns: batches of ``batch_size`` records decoded by
    ``decode_batch``, or (``batch_size=None``) records decoded one by one by ``decode``; manifests
    are checked against ``schema``, the record's; ``arrow_schema`` gives the Arrow schema of the
    batches (:meth:`Dataset.to_arrow_reader`)."""
    return Dataset(
        files,
        decode,
        None if batch_size is None else decode_batch,
        batch_size=batch_size,
        drop_remainder=drop_remainder,
        schema=schema,
        arrow_schema=arrow_schema,
        **options,
    )


def _to_dict(batch: ColumnBatch) -> dict[str, Any]:
    return batch.to_dict()


def _raws(run: _Run) -> Iterator[_Raw]:
    """The raw records of a run."""
    records, file, start = run
    return zip(records, itertools.repeat(file), range(start, start + len(records)), strict=False)


def _kept(run: _Run, shard: Shard) -> Iterator[_Raw]:
    """The raw records of a run that are ``shard``'s when every shard reads every file: those of
    record index ``i`` of file ``j`` with ``(j + i) % count`` equal to the shard's index."""
    records, file, start = run
    count = shard.count
    first = (shard.index - file - start) % count
    indexes = range(start + first, start + len(records), count)
    return zip(records[first::count], itertools.repeat(file), indexes, strict=False)


def _shuffled(records: Iterator[_Raw], size: int, rng: np.random.Generator) -> Iterator[_Raw]:
    """``records`` through a shuffle buffer of ``size``: once it is full, each next record takes
    the place of the one drawn from it (a slot of ``rng.integers(0, size)``, drawn 1024 at a time
    and taken last first), and at the end what the buffer holds comes out in the order of
    ``rng.permutation``. Each 1024 draws are played at once on arrays of the records, so no step of
    Python runs per record."""
    return itertools.chain.from_iterable(_shuffled_runs(records, size, rng))


_DRAWS = 1024
"""Shuffle-buffer slots drawn at a time."""


def _shuffled_runs(
    records: Iterator[_Raw], size: int, rng: np.random.Generator
) -> Iterator[list[_Raw]]:
    """The records :func:`_shuffled` gives, a list per 1024 draws: draw ``k`` gives what its slot
    holds then, which is the record the latest earlier draw of the same slot put there, or else
    what the slot held before the draws; each slot drawn then holds the record of its last draw."""
    buffer = _objects(list(itertools.islice(records, size)))
    while len(buffer) == size and (incoming := list(itertools.islice(records, _DRAWS))):
        slots = rng.integers(0, size, _DRAWS)[::-1][: len(incoming)]
        new = _objects(incoming)
        keys = np.sort(slots * _DRAWS + np.arange(len(slots)))  # by slot, then by draw
        order, ranked = keys % _DRAWS, keys // _DRAWS
        again = ranked[1:] == ranked[:-1]
        earlier = np.full(len(slots), -1)
        earlier[order[1:][again]] = order[:-1][again]
        out = buffer[slots]
        taken = earlier >= 0
        out[taken] = new[earlier[taken]]
        last = np.append(~again, True)
        buffer[ranked[last]] = new[order[last]]
        yield out.tolist()
    yield buffer[rng.permutation(len(buffer))].tolist()


def _objects(items: list[_Raw]) -> npt.NDArray[np.object_]:
    """``items`` in a one-dimensional array of objects."""
    return np.fromiter(items, dtype=object, count=len(items))


class _Tape:
    """An epoch's raw records taken in lists, counting them, with a look one record ahead."""

    __slots__ = ("_close", "_held", "_records", "consumed")

    def __init__(self, records: tuple[Iterator[_Raw], Callable[[], None]]) -> None:
        self._records, self._close = records
        self._held: _Raw | None = None
        self.consumed = 0

    def take(self, count: int) -> list[_Raw]:
        """The next ``count`` records (fewer at the end)."""
        if self._held is None:
            out = list(itertools.islice(self._records, count))
        else:
            out = [self._held, *itertools.islice(self._records, count - 1)]
            self._held = None
        self.consumed += len(out)
        return out

    def skip(self, count: int) -> None:
        """Passes over the next ``count`` records (fewer at the end)."""
        while count > 0 and (taken := len(self.take(min(count, 4096)))):
            count -= taken

    def unread(self, taken: _Taken) -> None:
        """Gives back ``taken``, the last records taken, in order: the next :meth:`take` has them
        first."""
        raws = _raws_of(taken)
        if not raws:
            return
        self.consumed -= len(raws)
        back = raws if self._held is None else [*raws, self._held]
        self._held = None
        self._records = itertools.chain(back, self._records)

    def ended(self) -> bool:
        """Whether no record is left."""
        if self._held is None:
            self._held = next(self._records, None)
        return self._held is None

    def close(self) -> None:
        """Closes the files being read."""
        self._close()


class _Chunk:
    """Records taken from a :class:`_RunTape`: whole runs or parts of them, in order."""

    __slots__ = ("_size", "runs")

    def __init__(self, runs: list[_Run], size: int) -> None:
        self.runs = runs
        self._size = size

    def __len__(self) -> int:
        return self._size

    def data(self) -> Sequence[bytes]:
        """The records' data for a batch decoder: the runs' Spans joined into one (no object per
        record), or a list."""
        if len(self.runs) == 1:
            return self.runs[0][0]
        parts = [records for records, _, _ in self.runs]
        if speedups is not None and all(type(part) is speedups.Spans for part in parts):
            joined: Sequence[bytes] = speedups.join_spans(parts)
            return joined
        return list(itertools.chain.from_iterable(parts))

    def raws(self) -> list[_Raw]:
        """The raw records (for a batch that failed)."""
        return list(itertools.chain.from_iterable(map(_raws, self.runs)))


_Taken = list[_Raw] | _Chunk
"""What a tape's ``take`` gives: raw records (:class:`_Tape`) or runs of them (:class:`_RunTape`)."""


def _raws_of(taken: _Taken) -> list[_Raw]:
    return taken.raws() if isinstance(taken, _Chunk) else taken


class _RunTape:
    """An epoch's records taken as runs (a buffer's records each, as the readers give them)
    rather than record by record: a batch is a few slices of runs, so no step of Python runs per
    record. Counts records, looks a run ahead, and takes back what a failed batch gives back
    (:meth:`unread`), as :class:`_Tape` does."""

    __slots__ = ("_held", "_runs", "consumed")

    def __init__(self, runs: Generator[_Run]) -> None:
        self._runs = runs
        self._held: collections.deque[_Run] = collections.deque()
        self.consumed = 0

    def _next(self) -> bool:
        """Whether a run is held (one is taken from the readers when none is)."""
        while not self._held:
            run = next(self._runs, None)
            if run is None:
                return False
            if len(run[0]):
                self._held.append(run)
        return True

    def take(self, count: int) -> _Chunk:
        """The next ``count`` records (fewer at the end)."""
        runs: list[_Run] = []
        need = count
        while need > 0 and self._next():
            records, file, start = self._held[0]
            if len(records) <= need:
                runs.append(self._held.popleft())
                need -= len(records)
            else:
                runs.append((records[:need], file, start))
                self._held[0] = (records[need:], file, start + need)
                need = 0
        self.consumed += count - need
        return _Chunk(runs, count - need)

    def skip(self, count: int) -> None:
        """Passes over the next ``count`` records (fewer at the end)."""
        while count > 0 and (taken := len(self.take(min(count, 1 << 16)))):
            count -= taken

    def unread(self, taken: _Taken) -> None:
        """Gives back ``taken``, the last records taken, in order: the next :meth:`take` has them
        first."""
        self.consumed -= len(taken)
        runs = taken.runs if isinstance(taken, _Chunk) else [([d], f, i) for d, f, i in taken]
        self._held.extendleft(reversed(runs))

    def ended(self) -> bool:
        """Whether no record is left."""
        return not self._next()

    def close(self) -> None:
        """Closes the files being read."""
        self._runs.close()


def _mark(at: list[int], tape: _Tape | _RunTape, consumed: int, maybe_last: bool) -> None:
    """Records in ``at`` (``[epoch, consumed, stop]``) the position after an item: past the end of
    the epoch (the next epoch, nothing consumed) when it took the epoch's last record."""
    if maybe_last and consumed == tape.consumed and tape.ended():
        at[0] += 1
        at[1] = 0
    else:
        at[1] = consumed


class _Pending(Protocol[T_co]):
    """A batch being decoded: a ``concurrent.futures.Future`` or a :class:`_Decoded`."""

    def result(self) -> T_co: ...

    def cancel(self) -> bool: ...


class _Decoded(Generic[T]):
    """A batch decoded in the iterating thread (``num_threads=1``), as a finished future."""

    __slots__ = ("_error", "_value")

    def __init__(self, decode_batch: Callable[[Sequence[bytes]], T], data: list[bytes]) -> None:
        self._value: T | None = None
        self._error: Exception | None = None
        try:
            self._value = decode_batch(data)
        except Exception as exc:  # raised by result(), in order, as a future raises it
            self._error = exc

    def result(self) -> T:
        if self._error is not None:
            raise self._error
        return cast("T", self._value)

    def cancel(self) -> bool:
        return False


def _worker_info() -> Any:
    """The PyTorch DataLoader worker's information in a worker process, else ``None``."""
    torch = sys.modules.get("torch")
    return None if torch is None else torch.utils.data.get_worker_info()


def _worker_slot() -> int:
    """This DataLoader worker's id (0 in a process that is not one)."""
    info = _worker_info()
    return 0 if info is None else int(info.id)


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."
