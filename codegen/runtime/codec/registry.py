"""The runtime side of the registry of feature kinds (:mod:`codegen.kinds`): each codec row's class.

Generated modules build their codecs by name (``_rt.IntScalar(...)``); tools that decode by a schema at run time
build the same codecs from the IR with :func:`build_codec`. Importing this module checks that every row of
:data:`codegen.kinds.CODECS` has its class here and the reverse.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from codegen.dtypes import DType
from codegen.errors import TfrGenError
from codegen.kinds import CODECS, ShapeFrom, codec_for
from codegen.runtime.codec.features import (
    NO_DEFAULT,
    BoolScalar,
    BytesScalar,
    BytesTensor,
    Codec,
    FloatScalar,
    IntScalar,
    NumericTensor,
    TextScalar,
    TextTensor,
)
from codegen.runtime.codec.images import EncodedImage
from codegen.runtime.codec.sequences import SequenceRagged, SequenceStrings, SequenceTensor
from codegen.runtime.codec.tensors import RaggedStrings, RaggedTensor, RawTensor

__all__ = ["CODEC_CLASSES", "build_codec"]

CODEC_CLASSES: dict[str, type[Any]] = {
    cls.__name__: cls
    for cls in (
        IntScalar,
        BoolScalar,
        FloatScalar,
        NumericTensor,
        TextScalar,
        BytesScalar,
        TextTensor,
        BytesTensor,
        RawTensor,
        EncodedImage,
        RaggedTensor,
        RaggedStrings,
        SequenceTensor,
        SequenceRagged,
        SequenceStrings,
    )
}
"""Every runtime codec class by name: one per row of :data:`codegen.kinds.CODECS`."""

if set(CODEC_CLASSES) != {row.codec for row in CODECS}:  # pragma: no cover - a broken registry
    raise ImportError(
        "codegen.kinds.CODECS and codegen.runtime.codec.registry.CODEC_CLASSES name different codecs:"
        f" {sorted(set(CODEC_CLASSES) ^ {row.codec for row in CODECS})}"
    )


def build_codec(
    record: str,
    name: str,
    key: str,
    dtype: DType,
    shape: tuple[int | None, ...],
    *,
    kind: str,
    default: object = NO_DEFAULT,
    optional: bool = False,
    shape_from: ShapeFrom | None = None,
    row_lengths_from: tuple[str, ...] | None = None,
    encoding: str | None = None,
    quality: int | None = None,
) -> Codec[Any]:
    """The codec a generated module builds for a feature of ``kind`` (a name of :data:`codegen.kinds.KINDS`):
    its class from the registry, subscripted with the dtype's numpy type where generated code does so, with
    the companion layout the schema declares (``shape_from``, ``row_lengths_from``)."""
    row = codec_for(kind, dtype, shape)
    cls: Any = CODEC_CLASSES.get(row.codec)
    if cls is None:
        raise TfrGenError(
            f"{record}.{name}: features of shape {list(shape)} need the runtime codec {row.codec},"
            " which this version of tfr-gen does not have"
        )
    if row.generic:
        cls = cls[np.dtype(dtype.numpy).type]
    layout: dict[str, object] = {}
    if shape_from is not None:
        layout["shape_from"] = shape_from
    if row_lengths_from is not None:
        layout["row_lengths_from"] = row_lengths_from
    if kind == "encoded_image":
        layout["encoding"] = encoding or "image"
        if quality is not None:
            layout["quality"] = quality
    codec: Codec[Any] = cls(
        record, name, key, dtype, shape, default=default, optional=optional, **layout
    )
    return codec
