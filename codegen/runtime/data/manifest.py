"""The manifest of a sharded dataset: ``<prefix>.manifest.json``, which names the writer's schema
(module, record, version, fingerprint and canonical form), the write that produced the dataset
(its write id) and every shard with its record count, byte size and the crc32c of its bytes; and
the file names of a dataset's shards, which embed the write id (``docs/datasets.md``).

Manifests of format version 1 (no write id, no checksums; shards named without a write id) are
still read: their shards are checked by size and record count only.

:func:`load_manifest` reads and validates a manifest, :func:`write_manifest` writes one
atomically; :mod:`~codegen.runtime.data.shards` writes and reads the shards it lists.
"""

from __future__ import annotations

import json
import os
import re
import secrets
from dataclasses import dataclass
from typing import Any

from codegen.errors import TfrGenError
from codegen.runtime.data.schemainfo import SchemaInfo
from codegen.runtime.data.store import open_store
from codegen.runtime.io.compression import Compression
from codegen.runtime.io.files import PathLike, open_input
from codegen.runtime.io.urls import StorageOptions
from codegen.runtime.io.writer import write_file

__all__ = [
    "EXTENSIONS",
    "LOCK_SUFFIX",
    "MANIFEST_SUFFIX",
    "Manifest",
    "ShardInfo",
    "check_compression",
    "check_prefix",
    "default_prefix",
    "load_manifest",
    "shard_name",
    "write_manifest",
]

MANIFEST_SUFFIX = ".manifest.json"
"""The file name of a dataset's manifest is its prefix followed by this."""

LOCK_SUFFIX = ".lock"
"""The file name of a dataset's writer lock is its prefix followed by this."""

EXTENSIONS: dict[Compression, str] = {
    None: ".tfrecord",
    "gzip": ".tfrecord.gz",
    "zlib": ".tfrecord.zlib",
}
"""The file name extension of a dataset's shards, by their compression."""

_FORMAT = "tfr-gen dataset"
_FORMAT_VERSION = 2
_READABLE_VERSIONS = (1, 2)
_WRITE_ID = re.compile(r"[0-9a-f]{16}")
_MAX_MANIFEST_BYTES = 1 << 30
_BAD_PREFIX = re.compile(r"[/\\\x00]")
_CAMEL_BOUNDARY = re.compile(
    r"(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])|(?<=[0-9])(?=[A-Z][a-z])"
)


@dataclass(frozen=True, slots=True)
class ShardInfo:
    """One shard of a dataset: its file name (in the dataset's directory), records, bytes and the
    crc32c of its bytes (``None`` in a manifest of format version 1)."""

    file: str
    records: int
    size: int
    crc32c: int | None = None


@dataclass(frozen=True, slots=True)
class Manifest:
    """What ``<prefix>.manifest.json`` says about a dataset: its writer's schema and its shards."""

    directory: str
    prefix: str
    schema: SchemaInfo
    compression: Compression
    shards: tuple[ShardInfo, ...]
    write_id: str | None = None
    """The id of the write that produced the dataset (``None`` in a manifest of format version 1)."""

    @property
    def record_count(self) -> int:
        """How many records the dataset holds (from the manifest: nothing is scanned)."""
        return sum(shard.records for shard in self.shards)

    @property
    def paths(self) -> tuple[str, ...]:
        """The shard files, in record order."""
        return tuple(os.path.join(self.directory, shard.file) for shard in self.shards)

    @property
    def path(self) -> str:
        """The manifest file."""
        return os.path.join(self.directory, self.prefix + MANIFEST_SUFFIX)

    def to_json(self) -> dict[str, object]:
        """The manifest file's content."""
        schema = self.schema
        return {
            "format": _FORMAT,
            "format_version": _FORMAT_VERSION,
            "write_id": self.write_id,
            "module": schema.module,
            "record": schema.record,
            "version": schema.version,
            "fingerprint": schema.fingerprint,
            "schema": json.loads(schema.canonical),
            "compression": self.compression,
            "record_count": self.record_count,
            "shards": [
                {"file": s.file, "records": s.records, "bytes": s.size, "crc32c": s.crc32c}
                for s in self.shards
            ],
        }

    def to_text(self) -> str:
        """The manifest file's text: :meth:`to_json` as indented JSON and a final newline."""
        return json.dumps(self.to_json(), indent=2) + "\n"


def default_prefix(record: str) -> str:
    """The file prefix of a record's datasets: its name in snake_case (``MovieRating`` ->
    ``movie_rating``)."""
    return _CAMEL_BOUNDARY.sub("_", record).lower()


def shard_name(
    prefix: str, index: int, count: int, compression: Compression, write_id: str | None
) -> str:
    """``<prefix>-<write id>-00003-of-00008.tfrecord.gz`` (``<prefix>-00003-of-00008.tfrecord.gz``
    without a write id, as format version 1 names shards)."""
    head = prefix if write_id is None else f"{prefix}-{write_id}"
    return f"{head}-{index:05d}-of-{count:05d}{EXTENSIONS[compression]}"


def dataset_file_pattern(prefix: str) -> re.Pattern[str]:
    """Matches the names of every file a write of the dataset ``prefix`` makes: shards of any
    write (finished or not) and their temporary files, the manifest's temporary files and the
    lock's (not the manifest or the lock themselves)."""
    shard = (
        re.escape(prefix)
        + r"-(?:[0-9a-f]{16}-)?[0-9]{5,}(?:-of-[0-9]{5,})?\.tfrecord(?:\.gz|\.zlib)?"
    )
    own = (
        re.escape(prefix) + "(?:" + re.escape(MANIFEST_SUFFIX) + "|" + re.escape(LOCK_SUFFIX) + ")"
    )
    return re.compile(rf"{shard}|\.(?:{shard}|{own})\.[0-9a-f]{{12}}\.tmp")


def new_write_id() -> str:
    """A fresh write id: 16 random hex digits."""
    return secrets.token_hex(8)


def check_prefix(prefix: str) -> str:
    """``prefix`` if it can name a dataset's files, else :class:`TfrGenError`."""
    if not prefix or prefix.startswith(".") or _BAD_PREFIX.search(prefix):
        raise TfrGenError(
            f"invalid dataset prefix {prefix!r}: expected a file name part without '/', '\\' or"
            " NUL that does not start with '.'"
        )
    return prefix


def check_compression(compression: object) -> Compression:
    """``compression`` if a dataset's shards can have it, else :class:`TfrGenError`."""
    if compression is None or compression == "gzip" or compression == "zlib":
        return compression
    raise TfrGenError(
        f"unknown dataset compression {compression!r}; expected None, 'gzip' or 'zlib'"
    )


def write_manifest(manifest: Manifest, *, storage_options: StorageOptions | None = None) -> None:
    """Writes ``manifest`` to its :attr:`~Manifest.path`, atomically (replacing an older one)."""
    write_file(manifest.path, manifest.to_text(), storage_options=storage_options)


def _find_prefix(directory: str, names: list[str]) -> str:
    """The prefix of the only dataset in ``directory``, whose files are ``names``."""
    prefixes = sorted(n[: -len(MANIFEST_SUFFIX)] for n in names if n.endswith(MANIFEST_SUFFIX))
    if not prefixes:
        raise TfrGenError(f"{directory}: no dataset manifest (*{MANIFEST_SUFFIX}) in the directory")
    if len(prefixes) > 1:
        raise TfrGenError(
            f"{directory}: {len(prefixes)} datasets ({', '.join(prefixes)}); pass prefix= to"
            " choose one"
        )
    return prefixes[0]


_TYPE_NAMES = {int: "an integer", str: "a string"}


def _field(data: dict[str, Any], name: str, kind: type, where: str) -> Any:
    """``data[name]`` if it is exactly of type ``kind`` (no bools for ints), else an error."""
    value = data.get(name)
    if type(value) is not kind:
        raise TfrGenError(
            f"{where}: invalid manifest: {name!r} must be {_TYPE_NAMES[kind]}, got {value!r}"
        )
    return value


def load_manifest(
    directory: PathLike,
    prefix: str | None = None,
    *,
    storage_options: StorageOptions | None = None,
) -> Manifest:
    """The manifest of the dataset ``prefix`` in ``directory`` (without scanning its shards).

    ``directory`` is a local path or a URL (an fsspec store, given ``storage_options``).
    ``prefix=None`` takes the only dataset in the directory. A missing or malformed manifest, or
    one whose canonical schema does not match its fingerprint, raises
    :class:`~codegen.errors.TfrGenError`.
    """
    store = open_store(directory, storage_options)
    root = store.directory
    prefix = check_prefix(
        _find_prefix(root, store.names(missing_ok=False)) if prefix is None else prefix
    )
    name = prefix + MANIFEST_SUFFIX
    path = store.path(name)
    try:
        with open_input(path, storage_options=storage_options) as file:
            return parse_manifest(file.read(_MAX_MANIFEST_BYTES + 1), root, prefix, path)
    except FileNotFoundError:
        raise TfrGenError(
            f"{path}: no such manifest: no dataset {prefix!r} here, or its writing did not finish"
        ) from None
    except OSError as exc:
        raise TfrGenError(f"{path}: cannot read the manifest: {exc}") from None


def parse_manifest(content: bytes, directory: str, prefix: str, path: str) -> Manifest:
    """The manifest of the dataset ``prefix`` in ``directory`` from the bytes of its file
    ``path`` (as errors name it), checked as :func:`load_manifest` checks it."""
    if len(content) > _MAX_MANIFEST_BYTES:
        raise TfrGenError(f"{path}: cannot read the manifest: larger than 1 GiB")
    try:
        data = json.loads(content.decode("utf-8"))
    except (ValueError, RecursionError) as exc:
        reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        raise TfrGenError(f"{path}: cannot read the manifest: {reason}") from None
    if not isinstance(data, dict) or data.get("format") != _FORMAT:
        raise TfrGenError(f"{path}: not a tfr-gen dataset manifest")
    version = data.get("format_version")
    if version not in _READABLE_VERSIONS or type(version) is not int:
        raise TfrGenError(
            f"{path}: manifest format version {version!r} is not supported"
            f" (this tfr-gen reads versions {', '.join(map(str, _READABLE_VERSIONS))})"
        )
    write_id: str | None = None
    if version >= 2:
        write_id = _field(data, "write_id", str, path)
        if not _WRITE_ID.fullmatch(write_id):
            raise TfrGenError(
                f"{path}: invalid manifest: write id {write_id!r} is not 16 hex digits"
            )
    canonical = data.get("schema")
    if not isinstance(canonical, dict):
        raise TfrGenError(f"{path}: invalid manifest: 'schema' must be an object")
    schema = SchemaInfo(
        module=_field(data, "module", str, path),
        record=_field(data, "record", str, path),
        version=_field(data, "version", int, path),
        fingerprint=_field(data, "fingerprint", str, path),
        canonical=json.dumps(
            canonical, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False
        ),
    )
    try:
        schema.record_schema()
    except TfrGenError as exc:
        raise TfrGenError(f"{path}: invalid manifest: {exc}") from None
    compression = data.get("compression")
    if compression not in EXTENSIONS:
        raise TfrGenError(f"{path}: invalid manifest: unknown compression {compression!r}")
    shards = data.get("shards")
    if not isinstance(shards, list) or not shards:
        raise TfrGenError(f"{path}: invalid manifest: 'shards' must be a non-empty list")
    infos: list[ShardInfo] = []
    for index, shard in enumerate(shards):
        where = f"{path}: shard {index}"
        if not isinstance(shard, dict):
            raise TfrGenError(f"{where}: invalid manifest: expected an object, got {shard!r}")
        name = _field(shard, "file", str, where)
        expected = shard_name(prefix, index, len(shards), compression, write_id)
        if name != expected:
            raise TfrGenError(f"{where}: invalid manifest: file {name!r} should be {expected!r}")
        records, size = _field(shard, "records", int, where), _field(shard, "bytes", int, where)
        if records < 0 or size < 0:
            raise TfrGenError(f"{where}: invalid manifest: negative record count or size")
        checksum: int | None = None
        if write_id is not None:
            checksum = _field(shard, "crc32c", int, where)
            if not 0 <= checksum < 1 << 32:
                raise TfrGenError(f"{where}: invalid manifest: crc32c {checksum} out of range")
        infos.append(ShardInfo(name, records, size, checksum))
    if data.get("record_count") != sum(info.records for info in infos):
        raise TfrGenError(
            f"{path}: invalid manifest: 'record_count' is not the sum of the shards' records"
        )
    return Manifest(directory, prefix, schema, compression, tuple(infos), write_id)
