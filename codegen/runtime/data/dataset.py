"""Many TFRecord shards read as one stream of batches (or records) for a training loop.

``Record.dataset(files, batch_size=...)`` builds a :class:`Dataset`. Each pass over it reads every
record of its part of the data once per epoch:

* **Files**: a path, a glob pattern (``"data/train-*.tfrecord.gz"``) or a sequence of them; the
  matching files are read in sorted order. ``compression="auto"`` picks by each file's suffix.
* **Interleave**: ``interleave`` files are open at once and take turns, one record each; when one
  ends the next file takes its turn (``tf.data``'s ``interleave(cycle_length=...)``).
* **Shuffle**: ``shuffle_buffer > 0`` shuffles the order of the files of every epoch and passes the
  records through a buffer of that size, from which each next record is drawn at random. The order
  is a function of ``seed``, the epoch and the shard only (``seed=None``: a random seed chosen when
  the ``Dataset`` is built, so the workers of one DataLoader agree).
* **Epochs and batches**: the data is read ``epochs`` times (``None``: without end). Each
  ``batch_size`` records are decoded column by column into one ``<Record>Batch``
  (``batch_size=None``: records one by one). Batches never span two epochs; the last, smaller batch
  of an epoch is kept unless ``drop_remainder``.
* **Sharding** between PyTorch DataLoader workers (``torch.utils.data.get_worker_info()``) and
  distributed ranks (``rank``/``world_size``, or ``torch.distributed`` once it is initialised):
  with ``S = world_size * workers`` shards, shard ``rank * workers + worker`` reads, when there are
  at least ``S`` files, the files whose position ``j`` in the sorted list has ``j % S`` equal to
  it; with fewer files every shard reads all files and keeps record ``i`` of file ``j`` when
  ``(j + i) % S`` equals it. Either way each record is read by exactly one shard in every epoch.
* **Where the work happens**: reading, CRC checks and decoding run in the iterating thread. A
  background reader thread was measured and left out: reading and decoding both hold the GIL, so
  it gained nothing steady (from -30% to +25% across workloads and runs); DataLoader workers,
  which are processes, overlap reading with training.
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
"""

from __future__ import annotations

import glob
import itertools
import logging
import os
import secrets
import sys
from array import array
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, Literal, Protocol, TypedDict, TypeVar, Unpack, cast

import numpy as np

from codegen.errors import DataError, RecordError, TfrGenError
from codegen.runtime.accel import speedups
from codegen.runtime.io.compression import Compression, resolve_compression
from codegen.runtime.io.framing import FRAMING
from codegen.runtime.io.reader import TFRecordReader
from codegen.runtime.io.skips import (
    OnError,
    OnSkip,
    SkipCounts,
    SkippedRecord,
    SkippedSpan,
    SkipReporter,
    check_on_error,
)

if TYPE_CHECKING:
    from torch.utils.data import IterableDataset

__all__ = ["ColumnBatch", "Dataset", "DatasetOptions", "Files", "Shard", "record_dataset"]

T = TypeVar("T")
B = TypeVar("B", bound="ColumnBatch")

_log = logging.getLogger(__name__)

Files = str | os.PathLike[str] | Sequence[str | os.PathLike[str]]
"""What a :class:`Dataset` reads: a path, a glob pattern, or a sequence of them."""

_RECORD_CHUNK = 256
"""Records handed over (and decoded) together when a dataset yields records one by one."""

_Raw = tuple[bytes, int, int]
"""A raw record, its file's position in :attr:`Dataset.files` and its index in that file."""


class ColumnBatch(Protocol):
    """What a batch class offers the torch adapter: its columns by attribute name."""

    def to_dict(self) -> dict[str, Any]: ...


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


@dataclass(frozen=True, slots=True)
class Shard:
    """The part of the data one reader reads: shard ``index`` of ``count``."""

    index: int
    count: int


def _expand(files: Files) -> tuple[str, ...]:
    """The files named by paths and glob patterns, sorted, without repeats."""
    patterns = [files] if isinstance(files, str | os.PathLike) else list(files)
    if not patterns:
        raise TfrGenError("Dataset: no files given")
    found: set[str] = set()
    for pattern in patterns:
        name = os.fspath(pattern)
        if glob.has_magic(name):
            matches = [path for path in glob.glob(name) if os.path.isfile(path)]
            if not matches:
                raise TfrGenError(f"Dataset: no file matches {name!r}")
            found.update(matches)
        elif os.path.isdir(name):
            raise TfrGenError(
                f"Dataset: {name!r} is a directory; name its files with a glob such as "
                f"{os.path.join(name, '*.tfrecord*')!r}"
            )
        elif not os.path.isfile(name):
            raise TfrGenError(f"Dataset: no such file {name!r}")
        else:
            found.add(name)
    return tuple(sorted(found))


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
        files: Files,
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
        if seed is not None and (type(seed) is not int or seed < 0):
            raise TfrGenError(f"Dataset: seed must be an int >= 0 or None, got {seed!r}")
        self.files = _expand(files)
        self._compressions = tuple(resolve_compression(path, compression) for path in self.files)
        self._decode = decode
        self._decode_batch = decode_batch
        self.batch_size = batch_size
        self.drop_remainder = drop_remainder
        self.shuffle_buffer = shuffle_buffer
        self.seed = secrets.randbits(63) if seed is None else seed
        self.epochs = epochs
        self.interleave = interleave
        self._rank = rank
        self._world_size = world_size
        _environment_shard(rank, world_size)  # checks rank and world_size now
        self.on_error = check_on_error(on_error, on_skip, "Dataset")
        self._views = speedups is not None and not shuffle_buffer
        """Whether readers hand records over as views of their buffers (see
        :meth:`TFRecordReader.views`): each is decoded right away, so it pins its buffer only
        briefly, unlike records waiting in a shuffle buffer."""
        self._report = SkipReporter(on_skip, _log)

    @property
    def skipped(self) -> SkipCounts:
        """What iterations in this process skipped so far (``on_error="skip"``)."""
        return self._report.counts

    @classmethod
    def of_batches(
        cls,
        files: Files,
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
        cls, files: Files, decode: Callable[[bytes], T], **options: Unpack[DatasetOptions]
    ) -> Dataset[T]:
        """Records one by one, each decoded by ``decode``."""
        return Dataset(files, decode, None, batch_size=None, **options)

    def shard(self) -> Shard:
        """The part of the data an iteration in this process (and DataLoader worker) reads."""
        return _environment_shard(self._rank, self._world_size)

    def __iter__(self) -> Iterator[T]:
        shard = self.shard()
        offsets = _Offsets(self.files, self._compressions)
        decode_batch = self._decode_batch
        size = self.batch_size or _RECORD_CHUNK
        for records in self._epochs(shard):
            if decode_batch is None:
                for chunk in _grouped(records, size, False):
                    yield from self._records(chunk, offsets)
            elif self.on_error == "skip":
                yield from self._skipping_batches(records, decode_batch, size, offsets)
            else:
                for chunk in _grouped(records, size, self.drop_remainder):
                    yield self._batch(chunk, decode_batch, offsets)

    def to_torch(self) -> IterableDataset[dict[str, Any]]:
        """A ``torch.utils.data.IterableDataset`` of the batches as dicts of tensors (see
        :mod:`codegen.runtime.data.pytorch`); use it with ``DataLoader(..., batch_size=None)``."""
        if self._decode_batch is None:
            raise TfrGenError("Dataset.to_torch needs a dataset of batches: give a batch_size")
        from codegen.runtime.data.pytorch import TorchBatches

        return TorchBatches(self, _to_dict)

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

    def _batch(
        self, chunk: list[_Raw], decode_batch: Callable[[Sequence[bytes]], T], offsets: _Offsets
    ) -> T:
        """The batch of ``chunk``; when it does not decode, the first record to blame raises."""
        try:
            return decode_batch([raw[0] for raw in chunk])
        except RecordError:
            self._records(chunk, offsets)
            raise

    def _skipping_batches(
        self,
        records: Iterator[_Raw],
        decode_batch: Callable[[Sequence[bytes]], T],
        size: int,
        offsets: _Offsets,
    ) -> Iterator[T]:
        """The batches of one epoch with ``on_error="skip"``: the records of a batch that does not
        decode are decoded one by one, those that fail are reported and left out, and the records
        after them fill the batch up."""
        chunk: list[_Raw] = []
        while True:
            chunk += itertools.islice(records, size - len(chunk))
            if not chunk or (len(chunk) < size and self.drop_remainder):
                return
            try:
                batch = decode_batch([raw[0] for raw in chunk])
            except RecordError:
                good = [raw for raw in chunk if self._decodes(raw, offsets)]
                if len(good) == len(chunk):
                    raise  # each record decodes alone: the batch decoder itself failed
                chunk = good
                continue
            yield batch
            if len(chunk) < size:
                return  # the epoch's last, smaller batch
            chunk = []

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

    def _epochs(self, shard: Shard) -> Iterator[Iterator[_Raw]]:
        """The raw records of every epoch of ``shard``, shuffled; each epoch's must be consumed
        before the next is taken."""
        by_file = len(self.files) >= shard.count
        shared = None if by_file else shard
        epoch = 0
        while self.epochs is None or epoch < self.epochs:
            rng = np.random.default_rng([self.seed, epoch, shard.index, shard.count])
            order = list(range(len(self.files)))
            if by_file:
                order = order[shard.index :: shard.count]
            if self.shuffle_buffer:
                rng.shuffle(order)
            records = self._interleaved(order, shared)
            if shared is not None:
                records = _kept(records, shared)
            if self.shuffle_buffer:
                records = _shuffled(records, self.shuffle_buffer, rng)
            yield records
            epoch += 1

    def _interleaved(self, order: list[int], shared: Shard | None) -> Iterator[_Raw]:
        """The records of the files ``order``, ``interleave`` files taking turns."""
        if self.interleave == 1:
            for file in order:
                reader = self._open(file, shared)
                if reader is None:
                    continue
                with reader:
                    # (data, file, index) tuples made in C: this runs per record
                    yield from zip(
                        self._records_of(reader), itertools.repeat(file), itertools.count()
                    )
            return
        pending = iter(order)
        turns: list[tuple[int, TFRecordReader, Iterator[tuple[int, bytes]]]] = []
        try:
            while len(turns) < self.interleave:
                opened = self._next_open(pending, shared)
                if opened is None:
                    break
                turns.append((*opened, enumerate(self._records_of(opened[1]))))
            turn = 0
            while turns:
                turn %= len(turns)
                file, reader, records = turns[turn]
                record = next(records, None)
                if record is None:
                    reader.close()
                    opened = self._next_open(pending, shared)
                    if opened is None:
                        del turns[turn]
                    else:
                        turns[turn] = (*opened, enumerate(self._records_of(opened[1])))
                    continue
                yield record[1], file, record[0]
                turn += 1
        finally:
            for _, reader, _ in turns:
                reader.close()

    def _records_of(self, reader: TFRecordReader) -> Iterator[bytes]:
        """The records of ``reader``: views of its buffers (no copy, memory from the accelerator's
        pool) when it is built and no shuffle buffer holds records for long; else ``bytes``.

        The views stand in for ``bytes``: with the accelerator, every decoder (the compiled plan,
        ``scan_batch``, the C ``parse_example``) takes any buffer.
        """
        if self._views:
            return cast("Iterator[bytes]", reader.views())
        return iter(reader)

    def _next_open(
        self, pending: Iterator[int], shared: Shard | None
    ) -> tuple[int, TFRecordReader] | None:
        """The next of the ``pending`` files that opens, with its reader; ``None`` when none is
        left."""
        for file in pending:
            reader = self._open(file, shared)
            if reader is not None:
                return file, reader
        return None

    def _open(self, file: int, shared: Shard | None) -> TFRecordReader | None:
        """A reader of file ``file``; with ``on_error="skip"``, ``None`` for a file that cannot be
        opened, which is reported.

        ``shared`` is the shard when every shard reads every file: a skipped stretch is then
        reported only by the shard that owns the index of the record after it.
        """
        path, compression = self.files[file], self._compressions[file]
        if self.on_error == "raise":
            return TFRecordReader(path, compression=compression)
        report = self._report

        def owned(span: SkippedSpan) -> None:
            if shared is None or (file + reader.index) % shared.count == shared.index:
                report(span)

        try:
            reader = TFRecordReader(path, compression=compression, on_error="skip", on_skip=owned)
        except OSError as exc:
            if shared is None or file % shared.count == shared.index:
                reason = f"cannot read the file: {exc.strerror or exc}"
                report(SkippedSpan(path, 0, _size(path), reason))
            return None
        return reader


class _Offsets:
    """The byte offsets of the records of ``files``, found when a record that does not decode
    must be reported: one pass over its file (readable records only, as the dataset counts them)
    gives the offsets of all the file's records."""

    def __init__(self, files: tuple[str, ...], compressions: tuple[Compression, ...]) -> None:
        self._files = files
        self._compressions = compressions
        self._tables: dict[int, array[int]] = {}

    def of(self, file: int, index: int) -> int:
        """The byte offset of the header of record ``index`` of file ``file``."""
        table = self._tables.get(file)
        if table is None:
            table = array("q")
            path, compression = self._files[file], self._compressions[file]
            with TFRecordReader(path, compression=compression, on_error="skip") as reader:
                for data in reader:
                    table.append(reader.offset - len(data) - FRAMING)
            self._tables[file] = table
        return table[index]


def _size(path: str) -> int:
    """The size of the file at ``path``, or 0 when it cannot be found."""
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def record_dataset(
    files: Files,
    decode: Callable[[bytes], Any],
    decode_batch: Callable[[Sequence[bytes]], ColumnBatch],
    *,
    batch_size: int | None,
    drop_remainder: bool = False,
    **options: Unpack[DatasetOptions],
) -> Dataset[Any]:
    """What a record class's ``dataset`` returns: batches of ``batch_size`` records decoded by
    ``decode_batch``, or (``batch_size=None``) records decoded one by one by ``decode``."""
    return Dataset(
        files,
        decode,
        None if batch_size is None else decode_batch,
        batch_size=batch_size,
        drop_remainder=drop_remainder,
        **options,
    )


def _to_dict(batch: ColumnBatch) -> dict[str, Any]:
    return batch.to_dict()


def _kept(records: Iterator[_Raw], shard: Shard) -> Iterator[_Raw]:
    """The records of ``shard`` when every shard reads every file: ``(file + index) % count``."""
    index, count = shard.index, shard.count
    return (raw for raw in records if (raw[1] + raw[2]) % count == index)


def _shuffled(records: Iterator[_Raw], size: int, rng: np.random.Generator) -> Iterator[_Raw]:
    """``records`` through a shuffle buffer of ``size``: each next one drawn from the buffer."""
    buffer: list[_Raw] = []
    for raw in records:
        buffer.append(raw)
        if len(buffer) == size:
            break
    draws: list[int] = []
    for raw in records:
        if not draws:
            draws = rng.integers(0, size, 1024).tolist()
        slot = draws.pop()
        yield buffer[slot]
        buffer[slot] = raw
    for slot in rng.permutation(len(buffer)).tolist():
        yield buffer[slot]


def _grouped(records: Iterator[_Raw], size: int, drop_remainder: bool) -> Iterator[list[_Raw]]:
    """``records`` in lists of ``size`` (the last may be shorter, unless ``drop_remainder``)."""
    while chunk := list(itertools.islice(records, size)):
        if len(chunk) < size and drop_remainder:
            return
        yield chunk
