"""Atheris target: any bytes as a TFRecord stream.

The first byte is the mode (``common.read_mode``: compression ``None``/gzip/zlib, raise or skip,
CRCs checked or not); the rest is the stream, read to its end with ``TFRecordReader``. Raising, the
only error allowed is :class:`~codegen.errors.DataError`, and an uncompressed stream read with
CRCs checked starts with exactly the framing of the records yielded. Skipping, nothing may be
raised, and in an uncompressed stream every byte is in a yielded record or a skipped span. In
both modes, opening a stream whose first bytes contradict the declared compression (a gzip or
zlib header read as uncompressed, or the other way round) raises DataError and reads nothing.
An uncompressed stream read a buffer at a time as ``Spans`` (with the accelerator) gives the same
records and raises or skips alike. Anything else is a crash. Run: ``python fuzz/fuzz_tfrecord.py CORPUS [SEEDS]``.
"""

from __future__ import annotations

import io
import sys

import atheris

with atheris.instrument_imports(include=["codegen", "common"]):
    from common import read_mode

    from codegen.errors import DataError
    from codegen.runtime.io.compression import HEAD_SIZE, detect_compression
    from codegen.runtime.io.framing import FRAMES
    from codegen.runtime.io.reader import TFRecordReader
    from codegen.runtime.io.writer import TFRecordWriter


def _framed(records: list[bytes]) -> bytes:
    out = io.BytesIO()
    with TFRecordWriter(out) as writer:
        for record in records:
            writer.write(record)
    return out.getvalue()


def test_one_input(data: bytes) -> None:
    if not data:
        return
    compression, skip, verify = read_mode(data[0])
    stream = data[1:]
    try:
        reader = TFRecordReader(
            io.BytesIO(stream),
            compression=compression,
            verify_crc=verify,
            on_error="skip" if skip else "raise",
        )
    except DataError:
        if detect_compression(stream[:HEAD_SIZE]) == compression:
            raise  # only a contradiction of the declared compression refuses a stream up front
        return
    records: list[bytes] = []
    try:
        records.extend(reader)
    except DataError:
        if skip:
            raise
    if compression is not None:
        return
    if FRAMES.scan_spans is not None:
        again = TFRecordReader(
            io.BytesIO(stream),
            compression=None,
            verify_crc=verify,
            on_error="skip" if skip else "raise",
        )
        runs: list[bytes] = []
        try:
            for run in again.batches(spans=True):
                runs.extend(run)
        except DataError:
            if skip:
                raise
        if runs != records or again.skipped_bytes != reader.skipped_bytes:
            raise AssertionError("the records read as Spans are not those read one by one")
    if skip:
        if sum(len(r) + 16 for r in records) + reader.skipped_bytes != len(stream):
            raise AssertionError("the records and skipped spans do not cover the stream")
    elif verify and not stream.startswith(_framed(records)):
        raise AssertionError("the records read are not framed as the stream frames them")


if __name__ == "__main__":
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()
