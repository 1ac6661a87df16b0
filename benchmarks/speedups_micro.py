"""Micro-benchmark of the C accelerator (codegen._speedups) against the pure-Python wire codec and
protobuf's upb parser, in the same process.

Run: ``python benchmarks/speedups_micro.py [--tensorflow]``. Prints microseconds per call of:

* parsing the movie-customer record (``schemas/customer.yaml``) into its feature map, and into
  the values of every feature;
* decoding and encoding an int64[784] list (values 0..255, an MNIST image) and a float32[128]
  list (an embedding); float encoding has no C function (numpy's ``tobytes`` is the encoder);
* ``scan_batch`` over 1024 customer records against a loop of ``parse_example`` and, with
  ``--tensorflow``, ``tf.io.parse_example`` on the same batch.

Needs the built extension (``pip install -e .`` or ``python setup.py build_ext --inplace``).
"""

from __future__ import annotations

import argparse
import importlib
import statistics
import time
import timeit
from collections.abc import Callable
from typing import Any

import numpy as np
from google.protobuf.internal import api_implementation

from codegen.runtime import accel
from codegen.runtime.codec import varint, wire
from codegen.runtime.tf import proto

Timed = Callable[[], object] | None
"""A callable to time, or None where a contender has no such function."""
Row = tuple[str, Timed, Timed, Timed]
"""A case: name, then the C, pure-Python and protobuf callables (None where there is none)."""

CUSTOMER_KEYS = (
    b"Age",
    b"Movie",
    b"Movie Ratings",
    b"Suggestion",
    b"Suggestion Purchased",
    b"Purchase Price",
)


def per_call_us(fn: Callable[[], object], budget_s: float = 0.3) -> float:
    """Median over 7 runs of the time per call in microseconds (each run about budget/7 seconds).

    Times are the process's CPU time, so that other work on a shared machine does not count.
    """
    timer = timeit.Timer(fn, timer=time.process_time)
    number, elapsed = timer.autorange()
    number = max(1, int(number * budget_s / 7 / max(elapsed, 1e-9)))
    return statistics.median(timer.repeat(repeat=7, number=number)) / number * 1e6


def customer_record(index: int = 0) -> bytes:
    """A serialized movie-customer Example, as protobuf writes it deterministically."""
    message = proto.Example()
    feature = message.features.feature
    feature["Age"].int64_list.value.append(29 + index % 40)
    feature["Movie"].bytes_list.value.extend([b"The Shawshank Redemption", b"Fight Club"])
    feature["Movie Ratings"].float_list.value.extend([9.0, 9.7])
    feature["Suggestion"].bytes_list.value.append(b"Inception")
    feature["Suggestion Purchased"].float_list.value.append(1.0)
    feature["Purchase Price"].float_list.value.append(9.99)
    return bytes(message.SerializeToString(deterministic=True))


def list_body(list_class: Any, values: Any) -> bytes:
    return bytes(list_class(value=values).SerializeToString())


def customer_rows(sp: accel.Speedups) -> list[Row]:
    data = customer_record()
    decoders_c: dict[int, Callable[[bytes], object]] = {
        1: sp.decode_bytes_values,
        2: lambda body: np.frombuffer(memoryview(sp.decode_float_values(body)), "<f4"),
        3: lambda body: np.frombuffer(memoryview(sp.decode_int64_values(body)), "<i8"),
    }
    decoders_py: dict[int, Callable[[bytes], object]] = {
        1: wire.decode_bytes_list,
        2: wire.decode_float_list,
        3: wire.decode_int64_list,
    }

    def values_c() -> object:
        return {k: decoders_c[kind](body) for k, (kind, body) in sp.parse_example(data).items()}

    def values_py() -> object:
        return {k: decoders_py[kind](body) for k, (kind, body) in wire.parse_example(data).items()}

    def values_pb() -> object:
        out: dict[str, object] = {}
        for key, feature in proto.Example.FromString(data).features.feature.items():
            kind = feature.WhichOneof("kind")
            if kind == "bytes_list":
                out[key] = list(feature.bytes_list.value)
            elif kind == "float_list":
                out[key] = np.array(feature.float_list.value, np.float32)
            else:
                out[key] = np.array(feature.int64_list.value, np.int64)
        return out

    return [
        (
            "customer: parse to the feature map",
            lambda: sp.parse_example(data),
            lambda: wire.parse_example(data),
            lambda: proto.Example.FromString(data),
        ),
        ("customer: parse and decode every value", values_c, values_py, values_pb),
    ]


def list_rows(sp: accel.Speedups) -> list[Row]:
    rng = np.random.default_rng(0)
    image = rng.integers(0, 256, 784).astype(np.int64)
    embedding = rng.standard_normal(128).astype(np.float32)
    int_body = list_body(proto.Int64List, image)
    float_body = list_body(proto.FloatList, embedding)
    return [
        (
            "int64[784] decode to numpy",
            lambda: np.frombuffer(memoryview(sp.decode_int64_values(int_body)), "<i8"),
            lambda: wire.decode_int64_list(int_body),
            lambda: np.array(proto.Int64List.FromString(int_body).value, np.int64),
        ),
        (
            "int64[784] encode from numpy (packed payload)",
            lambda: sp.encode_int64_packed(image),
            lambda: varint.encode_packed_int64(image),
            lambda: proto.Int64List(value=image).SerializeToString(),
        ),
        (
            "float32[128] decode to numpy",
            lambda: np.frombuffer(memoryview(sp.decode_float_values(float_body)), "<f4"),
            lambda: wire.decode_float_list(float_body),
            lambda: np.array(proto.FloatList.FromString(float_body).value, np.float32),
        ),
        (
            "float32[128] encode from numpy (Feature)",
            None,
            lambda: wire.float_feature(embedding),
            lambda: proto.Feature(float_list=proto.FloatList(value=embedding)).SerializeToString(),
        ),
    ]


def batch_rows(sp: accel.Speedups, with_tensorflow: bool) -> list[tuple[str, float]]:
    """Microseconds per record of columnar decoding of a batch of 1024 customer records."""
    records = [customer_record(i) for i in range(1024)]

    def parse_loop() -> object:
        return [sp.parse_example(record) for record in records]

    rows = [
        ("scan_batch, 6 keys", per_call_us(lambda: sp.scan_batch(records, CUSTOMER_KEYS)) / 1024),
        ("parse_example loop (C)", per_call_us(parse_loop) / 1024),
    ]
    if with_tensorflow:
        tf: Any = importlib.import_module("tensorflow")
        spec = {
            "Age": tf.io.FixedLenFeature([], tf.int64),
            "Movie": tf.io.VarLenFeature(tf.string),
            "Movie Ratings": tf.io.VarLenFeature(tf.float32),
            "Suggestion": tf.io.FixedLenFeature([], tf.string),
            "Suggestion Purchased": tf.io.FixedLenFeature([], tf.float32),
            "Purchase Price": tf.io.FixedLenFeature([], tf.float32),
        }
        batch = tf.constant(records)
        parse_us = per_call_us(lambda: tf.io.parse_example(batch, spec))
        rows.append(("tf.io.parse_example (eager)", parse_us / 1024))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tensorflow", action="store_true", help="also time tf.io.parse_example")
    args = parser.parse_args()
    sp = accel.speedups
    if sp is None:
        raise SystemExit(
            f"codegen._speedups is not in use: build it; {accel.PURE_PYTHON_VARIABLE}=1?"
        )
    print(f"protobuf backend: {api_implementation.Type()}")
    print(f"{'case':<48} {'C us':>8} {'Python us':>10} {'protobuf us':>12} {'C vs pb':>8}")
    for name, ours, python, theirs in customer_rows(sp) + list_rows(sp):
        c_us = per_call_us(ours) if ours else float("nan")
        py_us = per_call_us(python) if python else float("nan")
        pb_us = per_call_us(theirs) if theirs else float("nan")
        print(f"{name:<48} {c_us:8.2f} {py_us:10.2f} {pb_us:12.2f} {pb_us / c_us:7.1f}x")
    print()
    print(f"{'batch of 1024 customer records':<48} {'us/record':>10}")
    for name, us in batch_rows(sp, args.tensorflow):
        print(f"{name:<48} {us:10.3f}")


if __name__ == "__main__":
    main()
