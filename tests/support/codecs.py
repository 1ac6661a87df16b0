"""Map entries written by the runtime's codecs, for records built feature by feature."""

from __future__ import annotations

from typing import Any

from codegen.runtime.codec.features import Codec
from codegen.runtime.codec.tensors import RaggedStrings, RaggedTensor, RawTensor


def codec_entries(codec: Codec[Any], value: Any) -> list[tuple[str, bytes]]:
    """(key, map entry) of ``value``'s feature and of each of its companion features (the shape of
    a raw tensor, the row lengths of a ragged one)."""
    entries = [(codec.key, codec.entry(value))]
    if codec.companion_keys:
        assert isinstance(codec, RawTensor | RaggedTensor | RaggedStrings), codec
        entries += [(key, codec.part(value, i)) for i, key in enumerate(codec.companion_keys, 1)]
    return entries
