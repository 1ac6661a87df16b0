"""Writes the compatibility corpus: TFRecord files made by other writers, and the values they hold.

For each record set below (records of a schema of ``schemas/``, read by its generated module in
``generated/`` or by the schema rendered on the fly, and of the schemas of ``tests/data/``), with
list, raw and ragged features in Examples and SequenceExamples, ``tests/data/corpus/`` gets:

* ``<set>.tf.tfrecord`` -- ``tf.io.TFRecordWriter``, uncompressed, each record built with
  ``tf.train.Example``/``tf.train.SequenceExample`` and serialized deterministically;
* ``<set>.tf.tfrecord.gz`` and ``<set>.tf.tfrecord.zlib`` -- the same records, GZIP and ZLIB,
  serialized the default (non-deterministic) way, so map entries may come in another order;
* ``<set>.vahidk.tfrecord`` -- the ``tfrecord`` package's ``tfrecord.writer.TFRecordWriter``
  (run in a subprocess: its protobuf classes clash with TensorFlow's);

and ``expected.json`` holds, per set, the decoded value of every attribute of every record (in the
:func:`normal_form` of this module), which features each record leaves out, and the list of files.
``tests/integration/test_corpus.py`` reads every file back through the record classes and compares.

Run from anywhere with TensorFlow and ``tfrecord`` installed: ``python tests/data/make_corpus.py``.
The values are fixed (seeded); the order of map entries in the non-deterministic files can change
from run to run. The files are committed: rerun only to add records or record sets.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

from codegen.dtypes import DTYPES

ROOT = Path(__file__).resolve().parents[2]
CORPUS = Path(__file__).resolve().parent / "corpus"
EXPECTED = CORPUS / "expected.json"

WireValues = list[Any]
"""The flat values of one Feature: ints, floats or bytes."""

_RNG = np.random.default_rng(20240611)
_UNIT = _RNG.standard_normal(128).astype(np.float32)

SETS: dict[str, dict[str, Any]] = {
    "basics": {
        "module": "basics",
        "record": "Basics",
        "records": [
            {"my_ints": [1, 2, 3], "my_float": 0.5, "my_bytes": b"hello"},
            {"my_ints": [], "my_float": -0.0, "my_bytes": b""},
            {
                "my_ints": [-(2**63), 2**63 - 1, -1, 0, 127, 128, 300, 2**32, -(2**31)],
                "my_float": float("nan"),
                "my_bytes": bytes(range(256)),
            },
            {"my_ints": list(range(-700, 700, 7)), "my_float": float("-inf"), "my_bytes": b"\x00"},
            {"my_ints": [0], "my_float": 1e-45, "my_bytes": b"\xff\xfe"},
        ],
    },
    "customer": {
        "module": "customer",
        "record": "Customer",
        "records": [
            {
                "age": 29,
                "movie": ["The Shawshank Redemption", "Fight Club"],
                "movie_ratings": [9.0, 9.7],
                "suggestion": "Inception",
                "suggestion_purchased": 1.0,
                "purchase_price": 9.99,
            },
            {
                "age": 0,
                "movie": [],
                "movie_ratings": [],
                "suggestion": "",
                "suggestion_purchased": 0.0,
            },
            {
                "age": -(2**63),
                "movie": ["Amélie", "千と千尋の神隠し", "🎬", ""],
                "movie_ratings": [float("inf"), 3.4028234663852886e38, -1e-45, -0.0],
                "suggestion": "Le Samouraï",
                "suggestion_purchased": 0.5,
            },
        ],
    },
    "embedding": {
        "module": "embedding",
        "record": "Embedding",
        "records": [
            {"label": 7, "embedding": (_UNIT / np.linalg.norm(_UNIT)).tolist()},
            {"label": 123456789012, "embedding": [0.0] * 127 + [1.0]},
        ],
    },
    "image": {
        "module": "image",
        "record": "Image",
        "records": [
            {"label": 3, "image": _RNG.bytes(2 * 3 * 3), "shape": [2, 3, 3]},
            {"label": 0, "image": b"", "shape": [0, 0, 3]},
        ],
    },
    "mnist": {
        "module": "mnist",
        "record": "Digit",
        "records": [
            {"label": 5, "image": _RNG.integers(0, 256, 784).tolist()},
            {"label": 0, "image": [0] * 784},
        ],
    },
    "sequence": {
        "schema": "tests/data/sequence.yaml",
        "record": "MySeq",
        "records": [
            {"my_bytes": b"seq", "my_ints": [[5, 6], [7, 8, 9]]},
            {"my_bytes": b"", "my_ints": []},
            {"my_bytes": b"\xff", "my_ints": [[], [1], [-1, 2**40]]},
        ],
    },
    "my_seq": {
        "module": "my_seq",
        "record": "MySeq",
        "records": [
            {"my_bytes": "é".encode(), "my_ints": [[-(2**63), 2**63 - 1], [], [0] * 5]},
            {"my_bytes": bytes(range(40)), "my_ints": [[300]]},
        ],
    },
    "sentence": {
        "schema": "schemas/sentence.yaml",
        "record": "Sentence",
        "records": [
            {"length": 3, "tokens": [101, 7592, 102], "labels": [0, 1, 0]},
            {"length": 0, "tokens": [], "labels": []},
            {"length": 1, "tokens": [2**40], "labels": [-1]},
        ],
    },
    "photo": {
        "module": "photo",
        "record": "Photo",
        "records": [
            {
                "label": 1,
                "image": _RNG.integers(0, 256, (2, 2, 3)).tolist(),
                "boxes": [[0.125, 0.25, 0.5, 0.75]],
                "polygons": [[[0.0, 0.0], [1.0, 0.0], [1.0, 1.0]], [[0.5, -0.5], [2.5, 2.5]]],
            },
            {"label": 0, "image": np.zeros((0, 4, 3), np.uint8), "boxes": [], "polygons": []},
            {
                "label": -(2**63),
                "image": [[[255, 0, 128]] * 3],
                "boxes": [[0.0, 0.0, 1.0, 1.0], [-0.0, 1e-45, 3.4028234663852886e38, 0.5]],
                "polygons": [[], [[float("inf"), -1.5]]],
            },
        ],
    },
    "raw_image": {
        "schema": "schemas/raw_image.yaml",
        "record": "RawImage",
        "records": [
            {"label": 3, "image": _RNG.integers(0, 256, (3, 2, 3)).tolist()},
            {"label": 0, "image": np.zeros((1, 0, 3), np.uint8)},
        ],
    },
    "kinds": {
        "schema": "tests/data/kinds.yaml",
        "record": "Kinds",
        "records": [
            {
                "small": -128,
                "flag": [True, False, True],
                "pair": [65535, 0],
                "grid": [[1.5, -2.0], [0.0, 1e-45]],
                "names": [["a", "é"], ["日本", ""]],
                "blobs": [b"", b"\x00", b"\xff" * 3],
                "text": "ключ",
                "pixels": [[[1, 2, 3], [4, 5, 6]]],
                "matrix": [[-(2**31), 2**31 - 1, 0], [1, -1, 7]],
                "polygons": [[[0.5, 1.5]], [], [[2.0, 3.0], [4.0, 5.0]]],
                "words": [["one", "two"], [], ["🙂"]],
            },
            {"small": 127, "flag": [], "pixels": np.zeros((0, 0, 3), np.uint8), "polygons": []},
        ],
    },
    "steps": {
        "schema": "tests/data/kinds.yaml",
        "record": "Steps",
        "records": [
            {
                "length": 2,
                "tokens": [5, -6],
                "vectors": [[0.5, 1.0], [-1.0, 2.0]],
                "ragged": [[1, 2, 3], []],
                "words": [["é"], []],
            },
            {"length": 0, "tokens": [], "ragged": [], "words": []},
        ],
    },
}
"""Per record set: the generated module (in ``generated/``) or the schema (rendered on the fly)
that reads it, the record class, and each record's attribute values (an attribute left out is a
feature the record does not write)."""

_COMPRESSIONS = {"tf.tfrecord": None, "tf.tfrecord.gz": "GZIP", "tf.tfrecord.zlib": "ZLIB"}


# --- reading the record classes -------------------------------------------------------------------


def record_class(entry: Mapping[str, Any]) -> type[Any]:
    """The record class of a set: from its generated module, or its schema rendered now."""
    if "module" in entry:
        generated = str(ROOT / "generated")
        if generated not in sys.path:
            sys.path.append(generated)
        module = importlib.import_module(entry["module"])
    else:
        module = _rendered_module(ROOT / entry["schema"])
    cls: type[Any] = getattr(module, entry["record"])
    return cls


def _rendered_module(schema: Path) -> ModuleType:
    from codegen.generator.load import load_schema
    from codegen.generator.render import render_source

    name = f"corpus_{schema.stem}"
    if name in sys.modules:
        return sys.modules[name]
    source = render_source(load_schema(schema), command="tfr-gen")
    spec = importlib.util.spec_from_loader(name, loader=None)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    exec(compile(source, f"<{name}>", "exec"), module.__dict__)
    return module


# --- the exact, JSON-able form of decoded values --------------------------------------------------


def normal_form(value: object) -> object:
    """``value`` (an attribute of a decoded record) as exact JSON data, types included.

    Arrays become ``{"dtype", "shape", "values"}``; floats are ``float.hex`` text (bit-exact, signed
    zeros and NaN included) inside ``{"float": ...}`` when scalar; bools are ``{"bool": ...}``;
    bytes are ``{"bytes": hex}``; ints, strings and ``None`` stay as they are; lists stay lists.
    """
    if isinstance(value, np.ndarray):
        return {
            "dtype": str(value.dtype),
            "shape": list(value.shape),
            "values": [_scalar(v) for v in value.ravel().tolist()],
        }
    if isinstance(value, list | tuple):
        return [normal_form(v) for v in value]
    if isinstance(value, bool):
        return {"bool": value}
    if isinstance(value, float):
        return {"float": value.hex()}
    if isinstance(value, bytes):
        return {"bytes": value.hex()}
    if value is None or isinstance(value, int | str):
        return value
    raise TypeError(f"no normal form for {type(value).__name__} {value!r}")


def _scalar(value: object) -> object:
    return value.hex() if isinstance(value, float) else value


# --- building the records with other writers ------------------------------------------------------


def _flat(value: object) -> WireValues:
    """The wire values of one Feature of an attribute value: a flat list of ints, floats, bytes."""
    if isinstance(value, str):
        return [value.encode("utf-8")]
    if isinstance(value, bool):
        return [int(value)]
    if isinstance(value, bytes | int | float):
        return [value]
    flat: WireValues = []
    for item in value:  # type: ignore[attr-defined]
        flat.extend(_flat(item))
    return flat


def _row_lengths(value: Sequence[Any], depth: int) -> list[list[int]]:
    """The row lengths of a ragged value (nested lists) at depths 1 .. ``depth``, as its
    ``<key>/row_lengths_<d>`` features hold them."""
    nodes = list(value)
    lengths: list[list[int]] = []
    for _ in range(depth):
        lengths.append([len(node) for node in nodes])
        nodes = [child for node in nodes for child in node]
    return lengths


def _feature_wire(info: Any, value: Any) -> dict[str, tuple[str, WireValues]]:
    """The ``{key: (wire, values)}`` of one feature and its companions.

    A raw tensor is its little-endian C-order bytes (and ``<key>/shape`` when a dimension is
    unknown); a ragged value its flat values and the row lengths of each inner ``None`` dimension.
    """
    if info.encoding == "raw":
        array = np.asarray(value, dtype=DTYPES[info.dtype].numpy)
        shape: WireValues = list(array.shape)
        data = array.astype(array.dtype.newbyteorder("<")).tobytes()
        return {info.key: ("bytes_list", [data])} | {
            k: ("int64_list", shape) for k in info.companions
        }
    wired = {info.key: (info.wire, _flat(value))}
    if info.ragged:
        lengths = _row_lengths(value, len(info.companions))
        wired.update(zip(info.companions, (("int64_list", row) for row in lengths), strict=True))
    return wired


def wire_features(cls: type[Any], values: Mapping[str, object]) -> dict[str, Any]:
    """``{"features": {key: (wire, values)}, "lists": {key: (wire, [values per step])}}``: every
    feature given in ``values`` with its companions, and every feature list given."""
    features: dict[str, tuple[str, WireValues]] = {}
    lists: dict[str, tuple[str, list[WireValues]]] = {}
    for info in cls.feature_spec():
        if info.name not in values:
            continue
        value = values[info.name]
        if info.sequence:
            lists[info.key] = (info.wire, [_flat(step) for step in value])  # type: ignore[attr-defined]
        else:
            features.update(_feature_wire(info, value))
    return {"features": features, "lists": lists}


def _tf_feature(tf: Any, wire: str, flat: WireValues) -> Any:
    classes = {"int64_list": tf.train.Int64List, "float_list": tf.train.FloatList}
    return tf.train.Feature(**{wire: classes.get(wire, tf.train.BytesList)(value=flat)})


def tf_message(tf: Any, wired: Mapping[str, Any], sequence: bool) -> Any:
    """The record as a ``tf.train.Example`` or ``tf.train.SequenceExample``."""
    features = tf.train.Features(
        feature={k: _tf_feature(tf, w, v) for k, (w, v) in wired["features"].items()}
    )
    if not sequence:
        return tf.train.Example(features=features)
    lists = {
        key: tf.train.FeatureList(feature=[_tf_feature(tf, wire, step) for step in steps])
        for key, (wire, steps) in wired["lists"].items()
    }
    return tf.train.SequenceExample(
        context=features, feature_lists=tf.train.FeatureLists(feature_list=lists)
    )


_VAHIDK_TYPES = {"int64_list": "int", "float_list": "float", "bytes_list": "byte"}


def _to_json(flat: WireValues) -> list[object]:
    return [{"hex": v.hex()} if isinstance(v, bytes) else v for v in flat]


def _from_json(flat: list[Any]) -> WireValues:
    return [bytes.fromhex(v["hex"]) if isinstance(v, dict) else v for v in flat]


def write_vahidk(path: str, records: Sequence[Mapping[str, Any]]) -> None:
    """Writes ``records`` (:func:`wire_features`' form, JSON-decoded) with vahidk's writer."""
    from tfrecord.writer import TFRecordWriter  # type: ignore[import-untyped]

    writer = TFRecordWriter(path)
    for record in records:
        datum = {
            key: (_from_json(flat), _VAHIDK_TYPES[wire])
            for key, (wire, flat) in record["features"].items()
        }
        lists = {
            key: ([_from_json(step) for step in steps], _VAHIDK_TYPES[wire])
            for key, (wire, steps) in record["lists"].items()
        }
        writer.write(datum, lists if record["sequence"] else None)
    writer.close()


def _vahidk_in_subprocess(path: Path, wired: list[dict[str, Any]], sequence: bool) -> None:
    payload = [
        {
            "sequence": sequence,
            "features": {k: (w, _to_json(v)) for k, (w, v) in r["features"].items()},
            "lists": {k: (w, [_to_json(s) for s in steps]) for k, (w, steps) in r["lists"].items()},
        }
        for r in wired
    ]
    subprocess.run(
        [sys.executable, __file__, "--vahidk", str(path)],
        input=json.dumps(payload),
        text=True,
        check=True,
    )


def main() -> None:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import tensorflow as tf

    CORPUS.mkdir(exist_ok=True)
    expected: dict[str, Any] = {"sets": {}, "files": []}
    for name, entry in SETS.items():
        cls = record_class(entry)
        sequence = any(info.sequence for info in cls.feature_spec())
        wired = [wire_features(cls, values) for values in entry["records"]]
        messages = [tf_message(tf, w, sequence) for w in wired]
        for suffix, compression in _COMPRESSIONS.items():
            options = tf.io.TFRecordOptions(compression_type=compression or "")
            with tf.io.TFRecordWriter(str(CORPUS / f"{name}.{suffix}"), options) as writer:
                for message in messages:
                    writer.write(message.SerializeToString(deterministic=compression is None))
            expected["files"].append(
                {
                    "file": f"{name}.{suffix}",
                    "set": name,
                    "writer": "tensorflow",
                    "compression": compression and compression.lower(),
                    "deterministic": compression is None,
                }
            )
        _vahidk_in_subprocess(CORPUS / f"{name}.vahidk.tfrecord", wired, sequence)
        expected["files"].append(
            {
                "file": f"{name}.vahidk.tfrecord",
                "set": name,
                "writer": "tfrecord",
                "compression": None,
                "deterministic": False,
            }
        )
        names = [info.name for info in cls.feature_spec()]
        records = [cls(**values) for values in entry["records"]]
        expected["sets"][name] = {
            **{k: v for k, v in entry.items() if k in ("module", "schema", "record")},
            "sequence": sequence,
            "records": [
                {
                    "values": {n: normal_form(getattr(record, n)) for n in names},
                    "absent": [n for n in names if n not in values],
                }
                for record, values in zip(records, entry["records"], strict=True)
            ],
        }
    text = json.dumps(expected, indent=1, ensure_ascii=False, allow_nan=False) + "\n"
    EXPECTED.write_text(text, encoding="utf-8")
    total = sum(p.stat().st_size for p in CORPUS.iterdir())
    print(f"wrote {len(expected['files'])} files and {EXPECTED.name} to {CORPUS} ({total} bytes)")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--vahidk"]:
        write_vahidk(sys.argv[2], json.loads(sys.stdin.read()))
    else:
        main()
