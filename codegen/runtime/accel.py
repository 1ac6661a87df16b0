"""Selection of the optional C accelerator of the wire codec (``codegen._speedups``).

``speedups`` is the extension module when it is built and importable, else ``None`` (a machine
without a C compiler installs the pure-Python package); setting the environment variable
``TFR_GEN_PURE_PYTHON=1`` before the import forces ``None``, so the pure-Python path of
``codegen.runtime.wire`` runs everywhere. :class:`Speedups` describes what the module offers.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from typing_extensions import Buffer

PURE_PYTHON_VARIABLE = "TFR_GEN_PURE_PYTHON"
"""The environment variable that, set to ``1``, turns the C accelerator off."""

ScanColumns = tuple[bytearray, bytearray, bytearray, bytearray, list[bytes]]
"""What ``scan_batch`` gives per key: kinds, counts, int64 values, float32 values, bytes values."""


@runtime_checkable
class Speedups(Protocol):
    """The functions of ``codegen._speedups``: the contracts of ``codegen.runtime.wire``.

    Results and :class:`~codegen.errors.RecordError` messages are those of the pure-Python
    functions; numeric values come as little-endian ``bytearray`` buffers for ``np.frombuffer``.
    """

    ABSENT: int
    """The kind ``scan_batch`` reports for a record without the key (255)."""
    SMALL_DECODE_BYTES: int
    """The packed-run length up to which errors read like ``varint.read_varint``'s."""

    def parse_example(self, data: Buffer, /) -> dict[bytes, tuple[int, bytes]]:
        """Like ``wire.parse_example``."""
        ...

    def parse_sequence_example(
        self, data: Buffer, /
    ) -> tuple[dict[bytes, tuple[int, bytes]], dict[bytes, list[tuple[int, bytes]]]]:
        """Like ``wire.parse_sequence_example``."""
        ...

    def decode_int64_values(self, body: Buffer, /) -> bytearray:
        """Like ``wire.decode_int64_list``, as little-endian int64 bytes."""
        ...

    def decode_float_values(self, body: Buffer, /) -> bytearray:
        """Like ``wire.decode_float_list``, as little-endian float32 bytes."""
        ...

    def decode_bytes_values(self, body: Buffer, /) -> list[bytes]:
        """Like ``wire.decode_bytes_list``."""
        ...

    def encode_int64_packed(self, values: object, /) -> bytes:
        """The packed varints of ``values``, a C-contiguous buffer of native int64 (an ndarray or
        a memoryview, any shape), like ``varint.encode_packed_int64``."""
        ...

    def ExamplePlan(  # noqa: N802  (a class of the extension)
        self,
        keys: tuple[bytes, ...],
        ops: tuple[tuple[object, ...], ...],
        fallback: Callable[[bytes], tuple[Any, ...]],
        list_keys: tuple[bytes, ...] | None = None,
        /,
    ) -> Callable[[bytes], tuple[Any, ...]]:
        """A callable decoding Example (with ``list_keys``: SequenceExample) bytes to attribute
        values (see ``codegen.runtime.plan``)."""
        ...

    def scan_batch(
        self, records: Sequence[Buffer], keys: tuple[bytes, ...], /
    ) -> list[ScanColumns]:
        """Per key, the columns of its feature over all ``records`` (see the extension's doc)."""
        ...


def load_speedups() -> Speedups | None:
    """The C accelerator, or ``None`` when it is not built or ``TFR_GEN_PURE_PYTHON=1``."""
    if os.environ.get(PURE_PYTHON_VARIABLE) == "1":
        return None
    try:
        module = importlib.import_module("codegen._speedups")
    except ImportError:
        return None
    if not isinstance(module, Speedups):
        raise ImportError(
            f"{module.__file__}: the codegen._speedups extension is out of date (it lacks "
            "functions of codegen.runtime.accel.Speedups); rebuild it with "
            "'python setup.py build_ext --inplace', reinstall tfr-gen, or set "
            f"{PURE_PYTHON_VARIABLE}=1"
        )
    return module


speedups: Speedups | None = load_speedups()
"""The C accelerator in use, or ``None`` for the pure-Python wire codec."""
