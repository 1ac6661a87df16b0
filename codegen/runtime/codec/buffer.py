"""``BytesLike``: the type of what decoders take, any bytes-like object: ``bytes``, ``bytearray``,
``memoryview``, a contiguous ``uint8`` array (``Buffer`` is ``collections.abc.Buffer`` from Python
3.12, ``typing_extensions.Buffer`` before, for type checkers only; numpy's arrays declare the
buffer protocol to type checkers only from 3.12, so they are named besides it)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

if sys.version_info >= (3, 12):
    from collections.abc import Buffer
elif TYPE_CHECKING:
    from typing_extensions import Buffer
else:  # the runtime needs only numpy, protobuf and crc32c: type checkers see the protocol above
    Buffer = bytes | bytearray | memoryview

__all__ = ["Buffer", "BytesLike"]

BytesLike = Buffer | npt.NDArray[np.uint8]
"""Any bytes-like object (see the module's description)."""
