"""Atheris target: any bytes as a tf.train.Example and a SequenceExample.

Each input goes through ``parse_example`` and ``parse_sequence_example`` (and the list decoder of
every feature they find) and through ``decode`` and ``decode_batch`` of every record class
(``generated/`` and the schemas ``tests/data/kinds.yaml`` and ``tests/data/sequence.yaml``). The
only error allowed is :class:`~codegen.errors.RecordError`; a record that decodes must re-encode to
bytes that decode to the same encoding, and a batch of it must decode to the same records (a batch
of an input ``decode`` refuses is refused). Anything else is a crash.
Run: ``python fuzz/fuzz_example.py CORPUS [SEEDS]``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import atheris

GENERATED = [path.stem for path in (Path(__file__).resolve().parents[1] / "generated").glob("*.py")]

with atheris.instrument_imports(include=["codegen", "common", *GENERATED]):
    from common import record_classes

    from codegen.errors import RecordError
    from codegen.runtime.codec import wire

    CLASSES = record_classes()
DECODERS: dict[int, Callable[[bytes], object]] = {
    1: wire.decode_bytes_list,
    2: wire.decode_float_list,
}


def _parse(parse: Callable[[bytes], dict[bytes, Any]], data: bytes) -> None:
    try:
        features = parse(data)
    except RecordError:
        return
    for kind, body in features.values():
        try:
            DECODERS.get(kind, wire.decode_int64_list)(body)
        except RecordError:
            pass


def _batch(cls: Any, data: bytes) -> list[bytes] | None:
    """The encodings of the records of ``decode_batch`` of the input and a good record around it
    (``None``: it refused the batch)."""
    try:
        batch = cls.decode_batch([data, data])
    except RecordError:
        return None
    return [record.encode() for record in batch.records()]


def test_one_input(data: bytes) -> None:
    _parse(wire.parse_example, data)
    _parse(lambda d: wire.parse_sequence_example(d)[0], data)
    for cls in CLASSES:
        try:
            record = cls.decode(data)
        except RecordError:
            record = None
        if record is None:
            if _batch(cls, data) is not None:
                raise AssertionError(f"{cls.__name__}: decode_batch takes what decode refuses")
            continue
        encoded = record.encode()
        if cls.decode(encoded).encode() != encoded:
            raise AssertionError(f"{cls.__name__}: the re-encoded record decodes differently")
        if _batch(cls, data) != [encoded, encoded]:
            raise AssertionError(f"{cls.__name__}: decode_batch differs from decode")


if __name__ == "__main__":
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()
