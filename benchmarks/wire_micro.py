"""Micro-benchmark of the Example wire codec against protobuf (upb) in the same process.

Run: ``python benchmarks/wire_micro.py``. For two records (an int64 label with an int64[784] image
of values 0..255, and an int64 label with a float32[128] embedding) it prints the time per record
of encoding and decoding with ``codegen.runtime.codec.wire`` and with the protobuf message classes, and
the speed-up; then the int64 list codecs per list size and value range (the paths they take
change with both). Each time is the best of several interleaved rounds, so that load from other
processes affects both sides alike.
"""

from __future__ import annotations

import timeit
from collections.abc import Callable
from typing import Any

import numpy as np
from google.protobuf.internal import api_implementation

from codegen.runtime.codec import wire
from codegen.runtime.tf import proto

Case = tuple[str, Callable[[], object], Callable[[], object]]
ROUNDS = 7


def _best_us(functions: list[Callable[[], object]], rounds: int = ROUNDS) -> list[float]:
    """The best time per call (microseconds) of each function over interleaved rounds."""
    numbers = [max(1, timeit.Timer(f).autorange()[0] // 4) for f in functions]
    best = [float("inf")] * len(functions)
    for _ in range(rounds):
        for i, (function, number) in enumerate(zip(functions, numbers, strict=True)):
            best[i] = min(best[i], timeit.timeit(function, number=number) / number * 1e6)
    return best


def _pb_example(label: int, key: str, list_name: str, values: Any) -> Any:
    """The protobuf Example built the way a TensorFlow user writes it."""
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
    label_key, image_key, embedding_key = (
        wire.key_field(k) for k in ("label", "image", "embedding")
    )

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
    pb_image = _pb_example(label, "image", "int64_list", image)
    pb_embedding = _pb_example(label, "embedding", "float_list", embedding)
    if (
        pb_image.SerializeToString(deterministic=True) != image_bytes
        or pb_embedding.SerializeToString(deterministic=True) != embedding_bytes
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

    def pb_decode(data: bytes, key: str, list_name: str) -> Callable[[], object]:
        def run() -> object:
            feature = proto.Example.FromString(data).features.feature
            return (
                np.array(feature["label"].int64_list.value),
                np.array(getattr(feature[key], list_name).value),
            )

        return run

    def pb_encode(key: str, list_name: str, values: Any) -> Callable[[], object]:
        return lambda: _pb_example(label, key, list_name, values).SerializeToString()

    return [
        ("encode label + int64[784] 0..255", encode_image, pb_encode("image", "int64_list", image)),
        (
            "  same, protobuf given a Python list",
            encode_image,
            pb_encode("image", "int64_list", image.tolist()),
        ),
        (
            "encode label + float32[128]",
            encode_embedding,
            pb_encode("embedding", "float_list", embedding),
        ),
        (
            "  same, protobuf given a Python list",
            encode_embedding,
            pb_encode("embedding", "float_list", embedding.tolist()),
        ),
        (
            "decode label + int64[784] 0..255",
            decode_image,
            pb_decode(image_bytes, "image", "int64_list"),
        ),
        (
            "decode label + float32[128]",
            decode_embedding,
            pb_decode(embedding_bytes, "embedding", "float_list"),
        ),
    ]


def _sweep_row(size: int, high: int) -> tuple[str, float, float]:
    """Encode and decode time of one int64 list of ``size`` values in ``[0, high)``."""
    values = np.random.default_rng(size).integers(0, high, size).astype(np.int64)
    body = wire.int64_feature(values)
    body = body[len(body) - len(proto.Feature.FromString(body).int64_list.SerializeToString()) :]

    def encode() -> object:
        return wire.int64_feature(values)

    def decode() -> object:
        return wire.decode_int64_list(body)

    encode_us, decode_us = _best_us([encode, decode], rounds=3)
    return f"int64[{size}] in [0, 2**{high.bit_length() - 1})", encode_us, decode_us


def main() -> None:
    print(f"protobuf backend: {api_implementation.Type()}")
    print(f"{'record (time per record)':<40} {'wire us':>9} {'protobuf us':>12} {'speed-up':>9}")
    for name, ours, theirs in _cases():
        ours_us, theirs_us = _best_us([ours, theirs])
        print(f"{name:<40} {ours_us:9.2f} {theirs_us:12.2f} {theirs_us / ours_us:8.1f}x")
    print()
    print(f"{'int64 list':<40} {'encode us':>10} {'decode us':>10}")
    for high in (1 << 7, 1 << 8, 1 << 40):
        for size in (1, 8, 16, 32, 64, 256, 4096):
            name, encode_us, decode_us = _sweep_row(size, high)
            print(f"{name:<40} {encode_us:10.2f} {decode_us:10.2f}")


if __name__ == "__main__":
    main()
