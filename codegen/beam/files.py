"""Dataset files through Beam's ``FileSystems``: local paths and every filesystem Beam supports
(``gs://``, ``s3://``, ``hdfs://``, ...), so the transforms run the same on every runner."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from contextlib import contextmanager

from apache_beam.io.filesystem import (
    BeamIOError,
    CompressionTypes,
)
from apache_beam.io.filesystems import FileSystems

from codegen.errors import DataError, TfrGenError
from codegen.runtime.data.manifest import (
    MANIFEST_SUFFIX,
    Manifest,
    dataset_file_pattern,
    default_prefix,
    parse_manifest,
)
from codegen.runtime.data.store import ChecksummedInput
from codegen.runtime.io.compression import Compression
from codegen.runtime.io.reader import TFRecordReader

__all__ = [
    "choose_prefix",
    "dataset_files",
    "delete",
    "file_size",
    "join",
    "load_dataset_manifest",
    "match_manifests",
    "open_records",
    "write_text_atomic",
]


def join(directory: str, name: str) -> str:
    """``name`` in ``directory`` (on the directory's filesystem)."""
    return str(FileSystems.join(directory, name))


def _match(pattern: str) -> list[tuple[str, int]]:
    """The files that ``pattern`` matches, with their sizes (none for a missing directory)."""
    try:
        result = FileSystems.match([pattern])[0]
    except BeamIOError as exc:
        raise TfrGenError(f"{pattern}: cannot list the files: {exc}") from None
    return sorted((m.path, m.size_in_bytes) for m in result.metadata_list)


def dataset_files(directory: str, prefix: str) -> list[str]:
    """The manifest and shard files of the dataset ``prefix`` that exist in ``directory``."""
    shard = dataset_file_pattern(prefix)
    manifest = prefix + MANIFEST_SUFFIX
    names = (FileSystems.split(path)[1] for path, _ in _match(join(directory, prefix + "*")))
    return sorted(name for name in names if name == manifest or shard.fullmatch(name))


def match_manifests(pattern: str) -> list[str]:
    """The manifest files that the glob ``pattern`` matches; matching anything else is an error."""
    paths = [path for path, _ in _match(pattern)]
    if not paths:
        raise TfrGenError(f"{pattern}: matches no dataset manifest")
    for path in paths:
        if not path.endswith(MANIFEST_SUFFIX):
            raise TfrGenError(
                f"{pattern}: matches {path}, which is not a dataset manifest (*{MANIFEST_SUFFIX})"
            )
    return paths


def file_size(path: str) -> int:
    """The size of the file ``path`` in bytes."""
    for found, size in _match(path):
        if found == path:
            return size
    raise TfrGenError(f"{path}: no such file")


def delete(paths: list[str]) -> None:
    """Deletes the files ``paths``."""
    if paths:
        try:
            FileSystems.delete(paths)
        except BeamIOError as exc:
            raise TfrGenError(f"cannot delete {', '.join(paths)}: {exc}") from None


def write_text_atomic(path: str, text: str) -> None:
    """Writes ``text`` to a hidden temporary file next to ``path`` and renames it onto ``path``."""
    directory, name = FileSystems.split(path)
    temporary = join(directory, f".{name}.{secrets.token_hex(6)}.tmp")
    try:
        with FileSystems.create(
            temporary, mime_type="application/json", compression_type=CompressionTypes.UNCOMPRESSED
        ) as file:
            file.write(text.encode("utf-8"))
        FileSystems.rename([temporary], [path])
    except BaseException:
        if FileSystems.exists(temporary):
            FileSystems.delete([temporary])
        raise


@contextmanager
def open_records(
    path: str, compression: Compression
) -> Iterator[tuple[TFRecordReader, ChecksummedInput]]:
    """A CRC-checking reader of the TFRecord file ``path`` (its errors name ``path``), and the
    file it reads, whose ``crc32c`` and ``size`` cover the bytes read."""
    try:
        file = ChecksummedInput(
            FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED)
        )
    except (BeamIOError, OSError) as exc:
        raise TfrGenError(f"{path}: cannot read the shard: {exc}") from None
    try:
        with TFRecordReader(file, compression=compression) as reader:  # type: ignore[arg-type]
            try:
                yield reader, file
            except DataError as exc:
                if exc.path == path:
                    raise
                raise DataError(exc.reason, path=path, index=exc.index, offset=exc.offset) from None
    finally:
        file.close()


def _manifest_prefixes(directory: str) -> list[str]:
    """The prefixes of the datasets whose manifests are in ``directory``."""
    paths = _match(join(directory, "*" + MANIFEST_SUFFIX))
    return [FileSystems.split(path)[1][: -len(MANIFEST_SUFFIX)] for path, _ in paths]


def choose_prefix(directory: str, record: str) -> str:
    """The dataset ``Record.read_dataset`` reads in ``directory``: the one named after the record
    if there is one, else the only one."""
    prefixes = _manifest_prefixes(directory)
    if default_prefix(record) in prefixes:
        return default_prefix(record)
    if not prefixes:
        raise TfrGenError(f"{directory}: no dataset manifest (*{MANIFEST_SUFFIX}) in the directory")
    if len(prefixes) > 1:
        raise TfrGenError(
            f"{directory}: {len(prefixes)} datasets ({', '.join(prefixes)}); pass prefix= to"
            " choose one"
        )
    return prefixes[0]


def load_dataset_manifest(directory: str, prefix: str) -> Manifest:
    """The manifest of the dataset ``prefix`` in ``directory``, checked as
    :func:`~codegen.runtime.data.manifest.load_manifest` checks it (its errors name its path)."""
    path = join(directory, prefix + MANIFEST_SUFFIX)
    try:
        with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as file:
            content: bytes = file.read()
    except (BeamIOError, OSError):
        raise TfrGenError(
            f"{path}: no such manifest: no dataset {prefix!r} here, or its writing did not finish"
        ) from None
    return parse_manifest(content, directory, prefix, path)
