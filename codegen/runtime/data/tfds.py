"""Prepared TensorFlow Datasets (TFDS) directories read without TensorFlow.

A prepared TFDS dataset is a directory (``<data_dir>/<name>/<version>``) holding ``features.json``,
``dataset_info.json`` and each split's TFRecord shards. ``dataset_info.json`` lists the splits: for
each its name, its shard file name template (``filepathTemplate``, by default
``{DATASET}-{SPLIT}.{FILEFORMAT}-{SHARD_X_OF_Y}``, as ``mnist-train.tfrecord-00000-of-00004``) and
every shard's record count (``shardLengths``). :func:`split_sources` turns one split into the
:class:`~codegen.runtime.data.sources.Source` list a :class:`~codegen.runtime.data.dataset.Dataset`
reads (counts known, so ``len()`` works without a scan); :func:`read_split` reads a split's records
in order and checks each shard's count against ``dataset_info.json``.

Only the ``tfrecord`` file format is read (TFDS can also write ``array_record`` and ``riegeli``
files, which are refused by name). A split is named as TFDS names it (``"train"``); TFDS's slicing
syntax (``"train[:10%]"``) is not understood.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from codegen.errors import DataError, TfrGenError
from codegen.runtime.data.sources import TFDS_INFO, Files, Source
from codegen.runtime.io.files import PathLike
from codegen.runtime.io.reader import DEFAULT_MAX_RECORD_BYTES, read_decoded
from codegen.runtime.io.skips import OnError, OnSkip

__all__ = ["read_split", "read_tfds_json", "split_sources", "splits_sources"]

T = TypeVar("T")

_DEFAULT_TEMPLATE = "{DATASET}-{SPLIT}.{FILEFORMAT}-{SHARD_X_OF_Y}"
_MAX_JSON_BYTES = 64 << 20


def read_tfds_json(path: PathLike) -> dict[str, Any]:
    """The JSON object in the file ``path`` of a prepared TFDS directory (``dataset_info.json``,
    ``features.json``), read with a bound on its size; :class:`TfrGenError` naming the file and
    what is wrong otherwise."""
    path = os.fspath(path)
    root, name = os.path.split(path)
    try:
        with open(path, "rb") as file:
            data = file.read(_MAX_JSON_BYTES + 1)
    except FileNotFoundError:
        raise TfrGenError(
            f"{root}: not a prepared TFDS dataset: it has no {name} (name the version"
            " directory, such as '<data_dir>/mnist/3.0.1')"
        ) from None
    except OSError as exc:
        raise TfrGenError(f"{path}: cannot read it: {exc.strerror or exc}") from None
    if len(data) > _MAX_JSON_BYTES:
        raise TfrGenError(f"{path}: larger than {_MAX_JSON_BYTES} bytes: not a {name}")
    try:
        value = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise TfrGenError(f"{path}: not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise TfrGenError(f"{path}: expected a JSON object, got {type(value).__name__}")
    return value


def _count(value: object, path: str, split: str) -> int:
    """A shard length of ``dataset_info.json`` (protobuf's JSON writes int64 as strings)."""
    try:
        count = int(str(value))
    except ValueError:
        count = -1
    if count < 0:
        raise TfrGenError(
            f"{path}: split {split!r} lists the shard length {value!r}, not a count of records"
        )
    return count


def split_sources(directory: PathLike, split: str) -> tuple[Source, ...]:
    """The shards of ``split`` of the prepared TFDS dataset in ``directory``, in order, each with
    its record count from ``dataset_info.json``; a :class:`TfrGenError` names what is missing."""
    root = os.fspath(directory)
    info = read_tfds_json(os.path.join(root, TFDS_INFO))
    path = os.path.join(root, TFDS_INFO)
    file_format = info.get("fileFormat", "tfrecord")
    if file_format != "tfrecord":
        raise TfrGenError(
            f"{path}: the dataset's files are {file_format!r}; only 'tfrecord' TFDS datasets"
            " can be read"
        )
    splits = {s.get("name"): s for s in info.get("splits", ()) if isinstance(s, dict)}
    entry = splits.get(split)
    if entry is None:
        known = ", ".join(repr(name) for name in splits) or "none"
        raise TfrGenError(f"{path}: the dataset has no split {split!r} (its splits: {known})")
    lengths = [_count(value, path, split) for value in entry.get("shardLengths", ())]
    template = str(entry.get("filepathTemplate") or _DEFAULT_TEMPLATE)
    total = len(lengths)
    sources = []
    for index, records in enumerate(lengths):
        name = (
            template.replace("{SHARD_X_OF_Y}", f"{index:05d}-of-{total:05d}")
            .replace("{SHARD_INDEX}", f"{index:05d}")
            .replace("{NUM_SHARDS}", f"{total:05d}")
            .replace("{DATASET}", str(info.get("name", "")))
            .replace("{SPLIT}", split)
            .replace("{FILEFORMAT}", file_format)
        )
        shard = os.path.join(root, name)
        if not os.path.isfile(shard):
            raise TfrGenError(
                f"{shard}: the shard is missing: {TFDS_INFO} lists {total} shards for split"
                f" {split!r}"
            )
        sources.append(Source(shard, None, records))
    return tuple(sources)


def splits_sources(files: Files, split: str) -> tuple[Source, ...]:
    """The shards of ``split`` of each TFDS dataset directory ``files`` names (one path or a
    sequence of them), in order."""
    directories = [files] if isinstance(files, str | os.PathLike) else list(files)
    if not directories:
        raise TfrGenError("Dataset: no TFDS dataset directory given")
    return tuple(source for root in directories for source in split_sources(root, split))


def read_split(
    directory: PathLike,
    split: str,
    decode: Callable[[bytes], T],
    *,
    on_error: OnError = "raise",
    on_skip: OnSkip | None = None,
    max_record_bytes: int | None = DEFAULT_MAX_RECORD_BYTES,
) -> Iterator[T]:
    """The decoded records of ``split``, shard after shard. With ``on_error="raise"`` a shard
    holding another number of records than ``dataset_info.json`` lists raises
    :class:`~codegen.errors.DataError`; with ``"skip"`` damage is passed over as
    :func:`~codegen.runtime.io.reader.read_decoded` does."""
    sources = split_sources(directory, split)
    return _records(sources, decode, on_error, on_skip, max_record_bytes)


def _records(
    sources: tuple[Source, ...],
    decode: Callable[[bytes], T],
    on_error: OnError,
    on_skip: OnSkip | None,
    max_record_bytes: int | None,
) -> Iterator[T]:
    for source in sources:
        read = 0
        for record in read_decoded(
            source.path,
            decode,
            compression=None,
            on_error=on_error,
            on_skip=on_skip,
            max_record_bytes=max_record_bytes,
        ):
            read += 1
            yield record
        if on_error == "raise" and read != source.records:
            raise DataError(
                f"the shard ends after {read} records; {TFDS_INFO} lists {source.records}",
                path=source.path,
                index=read,
                offset=os.path.getsize(source.path),
            )
