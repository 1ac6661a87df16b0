"""Writes the seed corpora of the fuzz targets: ``python fuzz/seeds.py OUT`` fills ``OUT/example``,
``OUT/tfrecord`` and ``OUT/schema`` from the test data and generated records.

* ``example``: every record of the compatibility corpus (``tests/data/corpus/``, written by
  TensorFlow and the ``tfrecord`` package) and each record re-encoded by its record class;
* ``tfrecord``: every corpus file, behind a mode byte for each way of reading it (raise or skip,
  CRCs checked or not), and the plain files compressed the other two ways;
* ``schema``: every schema of ``schemas/`` and ``tests/data/``, and the canonical form of each.

File names are the sha1 of the content, so rerunning into the same directory adds nothing twice.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import sys
import zlib
from pathlib import Path

from common import COMPRESSIONS, DATA, ROOT, mode_byte, record_classes

from codegen.generator.load import load_schema
from codegen.runtime.io.compression import Compression
from codegen.runtime.io.reader import read_tfrecord

CORPUS = DATA / "corpus"


def _write(directory: Path, data: bytes) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / hashlib.sha1(data).hexdigest()).write_bytes(data)


_SUFFIXES: dict[str, Compression] = {".gz": "gzip", ".zlib": "zlib"}


def _compression_of(path: Path) -> Compression:
    return _SUFFIXES.get(path.suffix)


def _compress(data: bytes, compression: Compression) -> bytes:
    if compression == "gzip":
        return gzip.compress(data, mtime=0)
    return data if compression is None else zlib.compress(data)


def example_seeds(out: Path) -> None:
    classes = {cls.__name__: cls for cls in record_classes()}
    expected = json.loads((CORPUS / "expected.json").read_text(encoding="utf-8"))
    for entry in expected["files"]:
        cls = classes[expected["sets"][entry["set"]]["record"]]
        for data in read_tfrecord(CORPUS / entry["file"]):
            _write(out, data)
            _write(out, cls.decode(data).encode())


def tfrecord_seeds(out: Path) -> None:
    for path in sorted(CORPUS.glob("*.tfrecord*")):
        data = path.read_bytes()
        streams = {_compression_of(path): data}
        if path.suffix == ".tfrecord":
            streams.update({c: _compress(data, c) for c in COMPRESSIONS[1:]})
        for compression, stream in streams.items():
            for skip in (False, True):
                for verify in (True, False):
                    mode = mode_byte(compression, skip=skip, verify_crc=verify)
                    _write(out, bytes((mode,)) + stream)


def schema_seeds(out: Path) -> None:
    for path in sorted([*(ROOT / "schemas").glob("*.yaml"), *DATA.glob("*.yaml")]):
        _write(out, path.read_bytes())
        _write(out, load_schema(path).canonical.encode())


def main(out: Path) -> None:
    example_seeds(out / "example")
    tfrecord_seeds(out / "tfrecord")
    schema_seeds(out / "schema")
    for target in ("example", "tfrecord", "schema"):
        print(f"{target}: {sum(1 for _ in (out / target).iterdir())} seeds in {out / target}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python fuzz/seeds.py OUT_DIRECTORY")
    main(Path(sys.argv[1]))
