"""The compatibility corpus: TFRecord files written by TensorFlow and by the ``tfrecord`` package
(``tests/data/corpus/``, made by ``tests/data/make_corpus.py``) read back through the record
classes and the runtime reader, without TensorFlow, to the values in ``expected.json``."""

from __future__ import annotations

import json
from typing import Any

import pytest

from codegen.runtime.codec.wire import parse_example, parse_sequence_example
from codegen.runtime.io.reader import TFRecordReader, read_tfrecord
from support.modules import load_module
from support.paths import CORPUS, DATA

MAX_CORPUS_BYTES = 200_000


make_corpus = load_module(DATA / "make_corpus.py", "make_corpus")
"""``tests/data/make_corpus.py``, for its record classes and normal form of values."""
EXPECTED: dict[str, Any] = json.loads((CORPUS / "expected.json").read_text(encoding="utf-8"))
FILES: list[dict[str, Any]] = EXPECTED["files"]
SETS: dict[str, dict[str, Any]] = EXPECTED["sets"]


def record_class(set_name: str) -> type[Any]:
    return make_corpus.record_class(SETS[set_name])  # type: ignore[no-any-return]


def expected_values(set_name: str) -> list[dict[str, object]]:
    return [record["values"] for record in SETS[set_name]["records"]]


def written_keys(set_name: str) -> list[set[bytes]]:
    """Per record, the keys of the features it writes, companions included (context and feature
    lists together)."""
    infos = list(record_class(set_name).feature_spec())
    return [
        {
            key.encode()
            for info in infos
            if info.name not in record["absent"]
            for key in (info.key, *info.companions)
        }
        for record in SETS[set_name]["records"]
    ]


def file_records(entry: dict[str, Any]) -> list[bytes]:
    return list(read_tfrecord(CORPUS / entry["file"], compression=entry["compression"]))


def test_corpus_holds_the_listed_files_within_its_size_budget() -> None:
    on_disk = {path.name for path in CORPUS.iterdir()}
    assert on_disk == {entry["file"] for entry in FILES} | {"expected.json"}
    assert sum(path.stat().st_size for path in CORPUS.iterdir()) < MAX_CORPUS_BYTES
    writers = {(entry["set"], entry["writer"], entry["compression"]) for entry in FILES}
    for name in SETS:
        for compression in (None, "gzip", "zlib"):
            assert (name, "tensorflow", compression) in writers
        assert (name, "tfrecord", None) in writers
    assert any(s["sequence"] for s in SETS.values()) and not all(
        s["sequence"] for s in SETS.values()
    )


@pytest.mark.parametrize("entry", FILES, ids=[entry["file"] for entry in FILES])
def test_record_class_reads_the_expected_values(entry: dict[str, Any]) -> None:
    cls = record_class(entry["set"])
    names = [info.name for info in cls.feature_spec()]
    records = list(cls.read_tfrecord(CORPUS / entry["file"], compression="auto"))
    decoded = [{n: make_corpus.normal_form(getattr(r, n)) for n in names} for r in records]
    assert decoded == expected_values(entry["set"])


@pytest.mark.parametrize("entry", FILES, ids=[entry["file"] for entry in FILES])
def test_runtime_reader_yields_every_record_with_its_keys(entry: dict[str, Any]) -> None:
    with (
        open(CORPUS / entry["file"], "rb") as file,
        TFRecordReader(file, compression=entry["compression"]) as reader,
    ):
        records = list(reader)
        assert reader.index == len(records) == len(expected_values(entry["set"]))
        assert reader.offset == sum(len(r) + 16 for r in records)
    keys: list[set[bytes]] = []
    for data in records:
        if SETS[entry["set"]]["sequence"]:
            context, lists = parse_sequence_example(data)
            keys.append(set(context) | set(lists))
        else:
            keys.append(set(parse_example(data)))
    assert keys == written_keys(entry["set"])


def _prefix_free(keys: list[str]) -> bool:
    encoded = sorted(k.encode() for k in keys)
    return not any(b.startswith(a) for a, b in zip(encoded, encoded[1:], strict=False))


def _entries(data: bytes, sequence: bool) -> object:
    """The map entries of a record, by key: (list kind, list body), per step for feature lists."""
    return parse_sequence_example(data) if sequence else parse_example(data)


DETERMINISTIC = [e for e in FILES if e["deterministic"]]


@pytest.mark.parametrize("entry", DETERMINISTIC, ids=[e["file"] for e in DETERMINISTIC])
def test_deterministic_tensorflow_bytes_equal_our_encoding(entry: dict[str, Any]) -> None:
    """Our encoding of each record is TensorFlow's deterministic serialization: byte for byte when
    no key is a prefix of another (protobuf's upb and C++ backends order such keys differently, and
    a companion ``<key>/...`` always has its feature's key as a prefix), else the same map entries
    byte for byte in another order. A record that leaves out a feature with a default or an
    optional feature list differs by the default or empty list we write for it; it decodes to the
    same values."""
    cls = record_class(entry["set"])
    infos = list(cls.feature_spec())
    names = [info.name for info in infos]
    sequence = SETS[entry["set"]]["sequence"]
    prefix_free = _prefix_free([key for info in infos for key in (info.key, *info.companions)])
    for data, record in zip(file_records(entry), SETS[entry["set"]]["records"], strict=True):
        ours = cls.decode(data).encode()
        left_out = [info for info in infos if info.name in record["absent"]]
        if any(info.sequence or info.default is not None for info in left_out):
            again = cls.decode(ours)
            assert {n: make_corpus.normal_form(getattr(again, n)) for n in names} == record[
                "values"
            ]
        elif prefix_free:
            assert ours == data
        else:
            assert (len(ours), _entries(ours, sequence)) == (len(data), _entries(data, sequence))
