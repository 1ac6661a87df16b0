"""The benchmark workloads: which generated record class, how its values are made, which bars apply.

A workload is one :class:`Workload` entry in :data:`WORKLOADS`. Its generated module is imported
from ``generated/``; when the module (or the record class in it) does not exist yet, or its
features are not the ones the workload builds, :func:`load` says why and the run skips it.
"""

from __future__ import annotations

import importlib
import string
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, cast

import numpy as np

from codegen.runtime import FeatureSpec

ROOT = Path(__file__).resolve().parent.parent
"""The repository root."""
GENERATED = ROOT / "generated"
"""Where the generated modules the workloads import live."""

Values = dict[str, Any]
"""One record's values by attribute name, as the generated class takes and gives them."""


class Record(Protocol):
    """An instance of a generated record class."""

    def encode(self) -> bytes: ...


class RecordClass(Protocol):
    """A generated record class (the members the benchmarks use)."""

    __name__: str

    def __call__(self, **values: Any) -> Record: ...

    def decode(self, data: bytes) -> Record: ...

    def feature_spec(self) -> FeatureSpec: ...

    def tf_parse(self, serialized: Any) -> dict[str, Any]: ...

    def read_tfrecord(self, path: Path) -> Iterator[Record]: ...


@dataclass(frozen=True, slots=True)
class Workload:
    """One benchmark workload.

    ``make_values(rng, spec)`` builds one record's values (``spec`` is the record's
    ``feature_spec()``, for workloads whose values depend on the schema's dtypes); ``records`` and
    ``quick_records`` are the record counts of a default and a ``--quick`` run. ``sequence`` names
    the per-step features of a ``tf.train.SequenceExample`` record (empty for an ``Example``).
    ``encode_bar``/``decode_bar`` are the least speed-ups of per-record ``encode``/``decode`` over
    protobuf the suite requires, ``batch_bar`` that of ``decode_batch`` over TensorFlow's batched
    parse, ``limit_bar`` the least fraction of the ``limit`` row's speed (reading, checking and
    copying the file's bytes) the single-threaded ``Dataset`` must reach, ``threads_bar`` the least
    speed-up of the ``Dataset`` decoding in 2 threads over the single-threaded one, ``workers_bar`` the
    least speed-up of a PyTorch DataLoader with 2 persistent workers (steady state) over the
    single-threaded ``Dataset`` over the same 4 shards, ``image_bar`` the least
    speed-up of the ``Dataset`` over TensorFlow's image pipeline (``parse_example`` + ``decode_jpeg``
    mapped with ``AUTOTUNE``, prefetch). ``shared_bars`` says whether the bars every workload shares
    (:mod:`benchmarks.bars`) apply (not to encoded images, which the other readers do not decode and
    which encoding compresses: the Dataset against TensorFlow's pipelines, vahidk's loader and s3fs's
    fetch of the bytes, and columnar against per-record encoding).
    """

    name: str
    module: str
    record: str
    description: str
    make_values: Callable[[np.random.Generator, FeatureSpec], Values]
    records: int
    quick_records: int
    sequence: tuple[str, ...] = ()
    encode_bar: float | None = None
    decode_bar: float | None = None
    batch_bar: float | None = None
    limit_bar: float | None = None
    threads_bar: float | None = None
    workers_bar: float | None = None
    image_bar: float | None = None
    shared_bars: bool = True


@dataclass(frozen=True, slots=True)
class Skip:
    """Why a workload cannot run in this checkout."""

    reason: str


_LETTERS = np.array(list(string.ascii_lowercase + "      "))  # spaces: about one word break in five


def _title(rng: np.random.Generator) -> str:
    """A movie-title-like string of 10 to 30 characters: lowercase words, capitalised."""
    chars = rng.choice(_LETTERS, int(rng.integers(10, 31)))
    chars[0] = chars[-1] = rng.choice(_LETTERS[:26])  # no leading or trailing space
    return "".join(chars).title()


def customer_values(rng: np.random.Generator, spec: FeatureSpec) -> Values:
    """A movie customer: 2 to 5 watched titles with ratings, a suggestion, maybe a purchase."""
    watched = int(rng.integers(2, 6))
    bought = bool(rng.random() < 0.3)
    return {
        "age": int(rng.integers(18, 81)),
        "movie": [_title(rng) for _ in range(watched)],
        "movie_ratings": (rng.integers(2, 21, watched) / 2).astype(np.float32),
        "suggestion": _title(rng),
        "suggestion_purchased": 1.0 if bought else 0.0,
        "purchase_price": round(float(rng.uniform(0.99, 29.99)), 2) if bought else 0.0,
    }


def mnist_values(rng: np.random.Generator, spec: FeatureSpec) -> Values:
    """A digit: label 0-9 and 784 pixels, about 80% of them 0 and the rest 1-255, as in MNIST."""
    pixels = rng.integers(1, 256, 784)
    pixels[rng.random(784) < 0.8] = 0
    return {"label": int(rng.integers(0, 10)), "image": pixels.astype(np.int64)}


def mnist_uniform_values(rng: np.random.Generator, spec: FeatureSpec) -> Values:
    """A digit whose 784 pixels are uniform in 0..255 (about half of them two-byte varints)."""
    return {"label": int(rng.integers(0, 10)), "image": rng.integers(0, 256, 784).astype(np.int64)}


def embedding_values(rng: np.random.Generator, spec: FeatureSpec) -> Values:
    """An item: a label and an L2-normalised float32[128] embedding."""
    vector = rng.standard_normal(128)
    return {
        "label": int(rng.integers(0, 1000)),
        "embedding": (vector / np.linalg.norm(vector)).astype(np.float32),
    }


def image_values(rng: np.random.Generator, spec: FeatureSpec) -> Values:
    """A 64x64x3 uint8 image (a colour gradient with noise), label 0-9.

    The pixels are a uint8 array when the schema declares the image as a ``uint8`` tensor
    (``encoding: raw``), else their raw bytes next to a ``shape`` feature.
    """
    ramp = np.linspace(0, 200, 64)
    base = ramp[:, None, None] * 0.5 + ramp[None, :, None] * 0.5 + np.array([0, 20, 40])
    pixels = np.clip(base + rng.normal(0, 12, (64, 64, 3)), 0, 255).astype(np.uint8)
    values: Values = {"label": int(rng.integers(0, 10))}
    image = next((f for f in spec if f.name == "image"), None)
    if image is not None and image.dtype == "uint8":
        values["image"] = pixels
    else:
        values["image"] = pixels.tobytes()
        values["shape"] = np.array(pixels.shape, dtype=np.int64)
    return values


def jpeg_values(rng: np.random.Generator, spec: FeatureSpec) -> Values:
    """A 256x256x3 photo-like image (a colour gradient with noise, written as JPEG of quality 90), label 0-999."""
    y, x = np.mgrid[0:256, 0:256]
    base = np.stack([x, y, (x + y) / 2], -1) * 0.9 + rng.uniform(0, 25, 3)
    pixels = np.clip(base + rng.normal(0, 10, (256, 256, 3)), 0, 255).astype(np.uint8)
    return {"label": int(rng.integers(0, 1000)), "image": pixels}


def sequence_values(rng: np.random.Generator, spec: FeatureSpec) -> Values:
    """A tagged sentence of about 50 steps: one token id (1-30000, mostly three-byte varints) and one tag (0-8) per
    step."""
    steps = int(rng.integers(40, 61))
    return {
        "length": steps,
        "tokens": rng.integers(1, 30_001, steps).astype(np.int64),
        "labels": rng.integers(0, 9, steps).astype(np.int64),
    }


WORKLOADS: tuple[Workload, ...] = (
    Workload(
        name="customer",
        module="customer",
        record="Customer",
        description="6 mixed features: int, 2-5 strings, float32 list, string, 2 floats",
        make_values=customer_values,
        records=20_000,
        quick_records=300,
        encode_bar=1.5,
        decode_bar=1.5,
        batch_bar=0.5,
        threads_bar=1.4,
        workers_bar=1.2,
    ),
    Workload(
        name="mnist",
        module="mnist",
        record="Digit",
        description="label + int64[784] pixels in 0..255, ~80% zeros",
        make_values=mnist_values,
        records=5_000,
        quick_records=100,
        encode_bar=5.0,
        decode_bar=3.0,
        batch_bar=1.0,
        threads_bar=1.7,
        workers_bar=1.5,
    ),
    Workload(
        name="mnist_uniform",
        module="mnist",
        record="Digit",
        description="label + int64[784] pixels uniform in 0..255 (half two-byte varints)",
        make_values=mnist_uniform_values,
        records=5_000,
        quick_records=100,
        encode_bar=5.0,
        decode_bar=3.0,
        batch_bar=1.0,
    ),
    Workload(
        name="embedding",
        module="embedding",
        record="Embedding",
        description="label + float32[128]",
        make_values=embedding_values,
        records=10_000,
        quick_records=200,
        encode_bar=5.0,
        decode_bar=3.0,
        batch_bar=1.0,
        threads_bar=1.7,
        workers_bar=1.5,
    ),
    Workload(
        name="image",
        module="raw_image",
        record="RawImage",
        description="label + raw 64x64x3 uint8 image",
        make_values=image_values,
        records=3_000,
        quick_records=100,
        encode_bar=3.0,
        decode_bar=2.0,
        batch_bar=1.0,
        limit_bar=0.7,
        threads_bar=1.7,
        workers_bar=1.5,
    ),
    Workload(
        name="jpeg",
        module="jpeg_image",
        record="JpegImage",
        description="label + 256x256x3 JPEG image of quality 90 (image/encoded)",
        make_values=jpeg_values,
        records=2_000,
        quick_records=40,
        image_bar=1.2,
        shared_bars=False,
    ),
    Workload(
        name="sequence",
        module="sentence",
        record="Sentence",
        description="SequenceExample: int64 tokens + int64 labels per step, T ~ 50",
        make_values=sequence_values,
        records=5_000,
        quick_records=100,
        sequence=("tokens", "labels"),
        encode_bar=5.0,
        decode_bar=2.0,
        batch_bar=0.5,
        threads_bar=1.4,
        workers_bar=1.2,
    ),
)
"""Every workload, in report order."""

BY_NAME: dict[str, Workload] = {w.name: w for w in WORKLOADS}


def load(workload: Workload) -> RecordClass | Skip:
    """The workload's generated record class, or why it cannot run in this checkout."""
    where = f"generated/{workload.module}.py"
    if str(GENERATED) not in sys.path:
        sys.path.insert(0, str(GENERATED))
    try:
        module = importlib.import_module(workload.module)
    except ModuleNotFoundError as exc:
        if exc.name != workload.module:
            raise
        return Skip(f"{where} does not exist yet")
    if not hasattr(module, workload.record):
        return Skip(f"{where} has no record class {workload.record}")
    cls = cast("RecordClass", getattr(module, workload.record))
    spec = cls.feature_spec()
    names = {f.name for f in spec}
    built = set(workload.make_values(np.random.default_rng(0), spec))
    if names != built or not set(workload.sequence) <= names:
        return Skip(
            f"{where}: {workload.record} has features {sorted(names)}, "
            f"the workload builds {sorted(built)} (per step: {sorted(workload.sequence)})"
        )
    return cls
