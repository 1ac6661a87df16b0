"""A data set of numbered items in several TFRecord files, for the ``Dataset`` loader and its
PyTorch adapter."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

from codegen.runtime import write_tfrecord
from codegen.runtime.io.compression import Compression

ITEM_SCHEMA = """\
version: 1
records:
  Item:
    features:
      id: {dtype: int64}
      tokens: {dtype: int32, shape: [null]}
      name: {dtype: string}
"""
"""The schema of the items (record ``Item``)."""

SIZES = (7, 0, 12, 5, 9, 3, 11, 4)
"""Records per file (one empty file); ids run through them in order."""


def item(module: ModuleType, i: int) -> Any:
    """The item with id ``i`` of ``module`` (generated from :data:`ITEM_SCHEMA`)."""
    return module.Item(id=i, tokens=list(range(i % 4)), name=f"item {i}")


def write_shards(module: ModuleType, directory: Path, sizes: tuple[int, ...] = SIZES) -> list[Path]:
    """One file per size, alternately uncompressed and gzip; ids count up across the files."""
    paths = []
    first = 0
    for j, size in enumerate(sizes):
        compression: Compression = "gzip" if j % 2 else None
        path = directory / f"part-{j:02d}.tfrecord{'.gz' if compression else ''}"
        write_tfrecord(
            path,
            (item(module, i).encode() for i in range(first, first + size)),
            compression=compression,
        )
        paths.append(path)
        first += size
    return paths
