"""Records of many uncompressed TFRecord files by global position: the random-access data source of
Grain (``grain.MapDataset.source(...)``, ``grain.python.DataLoader(data_source=...)``) and of any
loader that asks for ``len(source)`` and ``source[i]``.

``Record.random_access(files)`` takes what ``Record.dataset`` takes (paths, globs, ``write_dataset``
directories and manifests, checked against the record's schema). Record ``i`` is record
``i - start(f)`` of file ``f``, the files in sorted order, each file's records counted by its
manifest, its index (``tfr-gen index``) or, failing both, by reading it once. Each file is opened
on first use, in the process that reads it, and closed by ``close()``, at the end of a ``with``
block, or when the source is collected: a source pickles without open files (for Grain's
worker processes), and reads from several threads at once are serialised per file.
"""

from __future__ import annotations

import bisect
import itertools
import operator
import threading
from collections.abc import Callable, Iterator
from typing import Any, Generic, Literal, SupportsIndex, TypeVar

from codegen.errors import DataError, RecordError, TfrGenError
from codegen.runtime.data.schemainfo import SchemaInfo
from codegen.runtime.data.sources import Files, count_records, find_sources
from codegen.runtime.io.compression import Compression
from codegen.runtime.io.indexed import IndexedReader
from codegen.runtime.io.urls import StorageOptions

__all__ = ["RandomAccess"]

T = TypeVar("T")


class RandomAccess(Generic[T]):
    """``len(source)`` records of ``files``; ``source[i]`` is record ``i`` decoded by ``decode``
    (see the module docstring). A compressed file is refused: its records cannot be reached without
    decompressing all before them."""

    def __init__(
        self,
        files: Files,
        decode: Callable[[bytes], T],
        *,
        schema: SchemaInfo | None = None,
        check_schema: bool = True,
        compression: Compression | Literal["auto"] = "auto",
        storage_options: StorageOptions | None = None,
    ) -> None:
        sources = find_sources(
            files, compression, schema, check_schema=check_schema, storage_options=storage_options
        )
        for source in sources:
            if source.compression is not None:
                raise TfrGenError(
                    f"{source.path}: a {source.compression}-compressed file has no random access;"
                    " write the data uncompressed (compression=None) to read it by position"
                )
        self.files = tuple(source.path for source in sources)
        self._storage = storage_options
        self._starts = tuple(
            itertools.accumulate((count_records(s, storage_options) for s in sources), initial=0)
        )
        self._decode = decode
        self._readers: dict[int, IndexedReader] = {}
        self._locks = [threading.Lock() for _ in self.files]

    def __len__(self) -> int:
        return self._starts[-1]

    def __getitem__(self, i: SupportsIndex) -> T:
        position = operator.index(i)
        total = len(self)
        if position < 0:
            position += total
        if not 0 <= position < total:
            raise IndexError(f"record {operator.index(i)} out of range for {total} records")
        file = bisect.bisect_right(self._starts, position) - 1
        index = position - self._starts[file]
        with self._locks[file]:
            reader = self._readers.get(file)
            if reader is None:
                reader = self._readers[file] = IndexedReader(
                    self.files[file], storage_options=self._storage
                )
            data = reader[index]
            offset = reader.offset(index)
        try:
            return self._decode(data)
        except RecordError as exc:
            raise DataError(str(exc), path=self.files[file], index=index, offset=offset) from exc

    def __iter__(self) -> Iterator[T]:
        for i in range(len(self)):
            yield self[i]

    def __repr__(self) -> str:
        return f"RandomAccess({len(self.files)} files, {len(self)} records)"

    def close(self) -> None:
        """Closes the files opened so far (they open again when read)."""
        for file, reader in list(self._readers.items()):
            with self._locks[file]:
                reader.close()
                del self._readers[file]

    def __enter__(self) -> RandomAccess[T]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        # a loader (Grain's) holds a source to the end without closing it: its files close with it
        for reader in getattr(self, "_readers", {}).values():
            reader.close()

    def __getstate__(self) -> dict[str, Any]:
        return {
            "files": self.files,
            "starts": self._starts,
            "decode": self._decode,
            "storage_options": self._storage,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.files = state["files"]
        self._starts = state["starts"]
        self._decode = state["decode"]
        self._storage = state["storage_options"]
        self._readers = {}
        self._locks = [threading.Lock() for _ in self.files]
