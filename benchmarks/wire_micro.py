"""Micro-benchmark of the Example wire codec against protobuf (upb) in the same process.

Run: ``python benchmarks/wire_micro.py``. Prints the time per record of encoding and decoding two
records (an int64 label with an int64[784] image of values 0..255, and an int64 label with a
float32[128] embedding) with ``codegen.runtime.wire`` and with protobuf message classes, the ratio,
and a sweep of list sizes for the int64 list codecs.
"""

from __future__ import annotations

import statistics
import timeit
from collections.abc import Callable
from typing import Any

import numpy as np
from google.protobuf.internal import api_implementation

from codegen.runtime import proto, wire

Case = tuple[str, Callable[[], object], Callable[[], object]]


def _per_call_us(fn: Callable[[], object], budget_s: float = 0.25) -> float:
    """Median over 7 runs of the time per call in microseconds (each run about budget/7 seconds)."""
    timer = timeit.Timer(fn)
    number, _ = timer.autorange()
    number = max(1, int(number * budget_s / 7 / 0.2))
    runs = timer.repeat(repeat=7, number=number)
    return statistics.median(runs) / number * 1e6


def _pb_example(label: int, key: str, list_name: str, values: Any) -> Any:
    """Build the protobuf Example the way a TensorFlow user writes it."""
    list_class = proto.Int64List if list_name == "int64_list" else proto.FloatList
    return proto.Example(
        features=proto.Features(
            feature={
                "label": proto.Feature(int64_list=proto.Int64List(value=[label])),
                key: proto.Feature(**{list_name: list_class(value=values)}),
            }
        )
    )


def _cases() -> list[Case]:
    rng = np.random.default_rng(0)
    image = rng.integers(0, 256, 784).astype(np.int64)
    embedding = rng.standard_normal(128).astype(np.float32)
    label = 7
    label_key, image_key, embedding_key = (wire.key_field(k) for k in ("label", "image", "embedding"))

    def encode_image() -> bytes:
        return wire.example(
            [
                wire.map_entry(image_key, wire.int64_feature(image)),
                wire.map_entry(label_key, wire.int64_scalar_feature(label)),
            ]
        )

    def encode_embedding() -> bytes:
        return wire.example(
            [
                wire.map_entry(embedding_key, wire.float_feature(embedding)),
                wire.map_entry(label_key, wire.int64_scalar_feature(label)),
            ]
        )

    image_bytes = encode_image()
    embedding_bytes = encode_embedding()
    pb_image = _pb_example(label, "image", "int64_list", image).SerializeToString(deterministic=True)
    pb_embedding = _pb_example(label, "embedding", "float_list", embedding)
    if pb_image != image_bytes or pb_embedding.SerializeToString(deterministic=True) != (
        embedding_bytes
    ):
        raise SystemExit("the wire codec and protobuf disagree on the benchmark records")

    def decode_image() -> object:
        features = wire.parse_example(image_bytes)
        return (
            wire.decode_int64_list(features[b"label"][1]),
            wire.decode_int64_list(features[b"image"][1]),
        )

    def decode_embedding() -> object:
        features = wire.parse_example(embedding_bytes)
        return (
            wire.decode_int64_list(features[b"label"][1]),
            wire.decode_float_list(features[b"embedding"][1]),
        )

    def pb_decode(data: bytes, key: str, list_name: str, dtype: type) -> Callable[[], object]:
        def run() -> object:
            feature = proto.Example.FromString(data).features.feature
            return (
                np.array(feature["label"].int64_list.value, dtype=np.int64),
                np.array(getattr(feature[key], list_name).value, dtype=dtype),
            )

        return run

    image_list = image.tolist()
    embedding_list = embedding.tolist()
    return [
        (
            "encode label + int64[784] (numpy input)",
            encode_image,
            lambda: _pb_example(label, "image", "int64_list", image).SerializeToString(),
        ),
        (
            "encode label + int64[784] (protobuf given a list)",
            encode_image,
            lambda: _pb_example(label, "image", "int64_list", image_list).SerializeToString(),
        ),
        (
            "encode label + float32[128] (numpy input)",
            encode_embedding,
            lambda: _pb_example(label, "embedding", "float_list", embedding).SerializeToString(),
        ),
        (
            "encode label + float32[128] (protobuf given a list)",
            encode_embedding,
            lambda: _pb_example(
                label, "embedding", "float_list", embedding_list
            ).SerializeToString(),
        ),
        (
            "decode label + int64[784] to numpy",
            decode_image,
            pb_decode(image_bytes, "image", "int64_list", np.int64),
        ),
        (
            "decode label + float32[128] to numpy",
            decode_embedding,
            pb_decode(embedding_bytes, "embedding", "float_list", np.float32),
        ),
    ]


def _sweep() -> list[tuple[str, float, float]]:
    """Time of the int64 list codecs per list size, for values < 128 and for values 0..255."""
    rows = []
    rng = np.random.default_rng(1)
    for size in (1, 4, 8, 16, 32, 64, 256, 1024, 4096):
        for high in (128, 256, 1 << 40):
            values = rng.integers(0, high, size).astype(np.int64)
            feature = wire.int64_feature(values)
            body = wire.parse_example(wire.example([wire.map_entry(b"\x0a\x01k", feature)]))[b"k"][1]
            rows.append(
                (
                    f"int64[{size}] values < {high:#x}",
                    _per_call_us(lambda v=values: wire.int64_feature(v), 0.05),
                    _per_call_us(lambda b=body: wire.decode_int64_list(b), 0.05),
                )
            )
    return rows


def main() -> None:
    print(f"protobuf backend: {api_implementation.Type()}")
    print(f"{'case':<52} {'wire us':>9} {'protobuf us':>12} {'speed-up':>9}")
    for name, ours, theirs in _cases():
        ours_us = _per_call_us(ours)
        theirs_us = _per_call_us(theirs)
        print(f"{name:<52} {ours_us:9.2f} {theirs_us:12.2f} {theirs_us / ours_us:8.1f}x")
    print()
    print(f"{'int64 list size sweep':<40} {'encode us':>10} {'decode us':>10}")
    for name, encode_us, decode_us in _sweep():
        print(f"{name:<40} {encode_us:10.2f} {decode_us:10.2f}")


if __name__ == "__main__":
    main()
