"""What killed writers leave in a directory, and removing it: stale temporary files, stale dataset
locks, and shards that no manifest names (the files of writes that never committed; see
``docs/datasets.md``). ``tfr-gen clean`` lists and removes them. A directory is a local path or a
URL of an object store, where no temporary objects exist and a lock is never judged stale (a store
cannot tell whether its writer lives: such a dataset is left alone)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from codegen.errors import TfrGenError
from codegen.runtime.data.manifest import (
    LOCK_SUFFIX,
    MANIFEST_SUFFIX,
    Manifest,
    dataset_file_pattern,
    load_manifest,
)
from codegen.runtime.data.store import FsspecStore, Store, WriterBusyError, open_store
from codegen.runtime.io.files import PathLike
from codegen.runtime.io.urls import StorageOptions

__all__ = ["Leftover", "find_leftovers", "remove_leftovers"]

_SHARD_PREFIX = re.compile(r"(?P<prefix>.+?)-[0-9a-f]{16}-[0-9]{5,}(?:-of-[0-9]{5,})?\.tfrecord")


@dataclass(frozen=True, slots=True)
class Leftover:
    """A file a killed writer left: its name in the directory and what it is."""

    name: str
    kind: str


def _prefixes(names: list[str]) -> list[str]:
    """The datasets the files ``names`` belong to (by manifest, lock or shard name)."""
    found = set()
    for name in names:
        for suffix in (MANIFEST_SUFFIX, LOCK_SUFFIX):
            if name.endswith(suffix) and not name.startswith("."):
                found.add(name[: -len(suffix)])
        match = _SHARD_PREFIX.match(name)
        if match is not None:
            found.add(match["prefix"])
    return sorted(found)


def _dataset_leftovers(
    store: Store, prefix: str, names: list[str], *, locked: bool = False
) -> list[Leftover]:
    """The leftovers of the dataset ``prefix`` (none while a live writer holds its lock; with
    ``locked`` the caller holds it)."""
    if not locked and store.lock_held(prefix + LOCK_SUFFIX):
        return []
    kept: set[str] = set()
    if prefix + MANIFEST_SUFFIX in names:
        try:
            kept = {shard.file for shard in _manifest(store, prefix).shards}
        except TfrGenError:
            return []  # an unreadable manifest: nothing of the dataset is judged garbage
    pattern = dataset_file_pattern(prefix)
    found = [
        Leftover(name, "temporary file" if name.startswith(".") else "shard no manifest names")
        for name in names
        if pattern.fullmatch(name) and name not in kept
    ]
    if prefix + LOCK_SUFFIX in names and not locked:
        found.append(Leftover(prefix + LOCK_SUFFIX, "lock of a writer that is gone"))
    return found


def _manifest(store: Store, prefix: str) -> Manifest:
    options = store.storage_options if isinstance(store, FsspecStore) else None
    return load_manifest(store.directory, prefix, storage_options=options)


def find_leftovers(
    directory: PathLike, *, storage_options: StorageOptions | None = None
) -> list[Leftover]:
    """What killed writers left in ``directory`` (a path, or a URL opened with
    ``storage_options``), sorted by name."""
    store = open_store(directory, storage_options)
    names = store.names()
    found = {
        item.name: item for p in _prefixes(names) for item in _dataset_leftovers(store, p, names)
    }
    for name in store.stale_temporaries():
        found.setdefault(name, Leftover(name, "temporary file"))
    return sorted(found.values(), key=lambda item: item.name)


def remove_leftovers(
    directory: PathLike, *, storage_options: StorageOptions | None = None
) -> list[Leftover]:
    """Removes what :func:`find_leftovers` lists, each dataset's under its lock (a dataset whose
    writer started meanwhile is left alone); returns what was removed, sorted by name."""
    store = open_store(directory, storage_options)
    removed: dict[str, Leftover] = {}
    names = store.names()
    for prefix in _prefixes(names):
        lock = prefix + LOCK_SUFFIX
        stale_lock = lock in names and not store.lock_held(lock)
        try:
            with store.lock(lock, {"write_id": "tfr-gen clean"}):  # removes a stale lock
                items = _dataset_leftovers(store, prefix, store.names(), locked=True)
                store.remove([item.name for item in items])
        except WriterBusyError:
            continue
        removed.update((item.name, item) for item in items)
        if stale_lock:
            removed[lock] = Leftover(lock, "lock of a writer that is gone")
    for name in store.remove_stale_temporaries():
        removed.setdefault(name, Leftover(name, "temporary file"))
    return sorted(removed.values(), key=lambda item: item.name)
