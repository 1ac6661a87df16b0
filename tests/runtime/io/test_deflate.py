"""ISA-L deflate (the default) and the standard library's fallback write and read the same
standard streams."""

from __future__ import annotations

import gzip
import io
import os
import subprocess
import sys
import zlib
from collections.abc import Callable

import pytest

from codegen.errors import TfrGenError
from codegen.runtime.io.compression import Deflate, use_deflate
from codegen.runtime.io.reader import TFRecordReader
from codegen.runtime.io.writer import TFRecordWriter
from support.framing import SOME_RECORDS, frame

DEFLATES: list[Deflate] = ["isal", "zlib"]
STANDARD: dict[str, Callable[[bytes], bytes]] = {"gzip": gzip.decompress, "zlib": zlib.decompress}


def test_isal_is_the_default() -> None:
    assert use_deflate() == "isal"


def test_the_environment_forces_the_standard_library() -> None:
    code = "from codegen.runtime.io.compression import use_deflate; print(use_deflate())"
    env = {**os.environ, "TFR_GEN_STDLIB_DEFLATE": "1"}
    result = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "zlib"


def test_an_unknown_implementation_is_refused() -> None:
    with pytest.raises(TfrGenError, match="'lz4'; expected 'isal' or 'zlib'"):
        use_deflate("lz4")  # type: ignore[arg-type]


@pytest.mark.parametrize("reader", DEFLATES)
@pytest.mark.parametrize("writer", DEFLATES)
@pytest.mark.parametrize("compression", ["gzip", "zlib"])
def test_each_reads_what_the_other_writes(
    compression: str, writer: Deflate, reader: Deflate
) -> None:
    records = [*SOME_RECORDS, os.urandom(1 << 20), b"x" * (3 << 20)]
    use_deflate(writer)
    out = io.BytesIO()
    with TFRecordWriter(out, compression=compression) as w:  # type: ignore[arg-type]
        w.write_many(records)
    assert STANDARD[compression](out.getvalue()) == b"".join(map(frame, records))
    use_deflate(reader)
    assert list(TFRecordReader(io.BytesIO(out.getvalue()), compression=compression)) == records  # type: ignore[arg-type]
