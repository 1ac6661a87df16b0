"""Selection of the optional C accelerator of the wire codec (``codegen._speedups``).

``speedups`` is the extension module when it is built and importable, else ``None`` (a machine
without a C compiler installs the pure-Python package; a source checkout on ``sys.path`` that was
not built offers only its C sources, ``codegen/_speedups/``, as a namespace package); setting the
environment variable ``TFR_GEN_PURE_PYTHON=1`` before the import forces ``None``, so the pure-Python
path of ``codegen.runtime.codec.wire`` runs everywhere. :class:`Speedups` describes what the module
offers.
"""

from __future__ import annotations

import importlib
import os
import warnings
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from typing_extensions import Buffer

    from codegen.runtime.codec.buffer import BytesLike

PURE_PYTHON_VARIABLE = "TFR_GEN_PURE_PYTHON"
"""The environment variable that, set to ``1``, turns the C accelerator off."""


class BlockBuffer(Protocol):
    """A ``codegen._speedups.Block``: a writable little-endian buffer of decoded values;
    ``len()`` is its size in bytes (``np.frombuffer(memoryview(block), dtype)`` views it)."""

    def __buffer__(self, flags: int, /) -> memoryview: ...

    def __len__(self) -> int: ...


ScanColumns = tuple[
    bytearray,
    bytearray,
    BlockBuffer,
    BlockBuffer,
    list[bytes] | list[str] | tuple[BlockBuffer, BlockBuffer],
]
"""What ``scan_batch`` gives per key: kinds, counts, int64 values, float32 values (``Block``
objects), and the bytes values: a list (of ``str`` for a key of ``texts`` whose values are all
UTF-8), or for a joined key a ``(blob, sizes)`` pair of Blocks."""


@runtime_checkable
class ExamplePlan(Protocol):
    """A compiled plan (``codegen/_speedups/plan.c``): called with one record's bytes, its attribute values."""

    def __call__(self, data: BytesLike, /) -> tuple[Any, ...]: ...

    def batch(self, records: Sequence[BytesLike], /) -> tuple[Any, ...] | None:
        """Every record's values in one call, per attribute: a list, or for a feature list the
        joined steps and each record's number of steps; ``None`` when a record needs the fallback."""
        ...


@runtime_checkable
class Speedups(Protocol):
    """The functions of ``codegen._speedups``: the contracts of ``codegen.runtime.codec.wire``.

    Results and :class:`~codegen.errors.RecordError` messages are those of the pure-Python
    functions; numeric values come as little-endian buffers for ``np.frombuffer``: ``Block`` objects,
    writable, whose large memory is recycled through a small pool when the last view of it goes
    (so that batch after batch reuses memory that is already paged in).
    """

    ABSENT: int
    """The kind ``scan_batch`` reports for a record without the key (255)."""
    SMALL_DECODE_BYTES: int
    """The packed-run length up to which errors read like ``varint.read_varint``'s."""

    def parse_example(self, data: BytesLike, /) -> dict[bytes, tuple[int, bytes]]:
        """Like ``wire.parse_example``."""
        ...

    def parse_sequence_example(
        self, data: BytesLike, /
    ) -> tuple[dict[bytes, tuple[int, bytes]], dict[bytes, list[tuple[int, bytes]]]]:
        """Like ``wire.parse_sequence_example``."""
        ...

    Block: type
    """The writable buffer type of decoded numeric values."""

    Spans: type
    """Records that are stretches of buffers: a sequence of ``bytes`` (made when an item is
    asked for) that ``scan_batch`` reads in place (made by ``scan_spans``, see
    :class:`~codegen.runtime.io.framing.FrameCodec`)."""

    def decode_int64_values(self, body: Buffer, /) -> BlockBuffer:
        """Like ``wire.decode_int64_list``, as little-endian int64 bytes."""
        ...

    def decode_float_values(self, body: Buffer, /) -> BlockBuffer:
        """Like ``wire.decode_float_list``, as little-endian float32 bytes."""
        ...

    def decode_bytes_values(self, body: Buffer, /) -> list[bytes]:
        """Like ``wire.decode_bytes_list``."""
        ...

    def encode_int64_packed(self, values: object, /) -> bytes:
        """The packed varints of ``values``, a C-contiguous buffer of native int64 (an ndarray or
        a memoryview, any shape), like ``varint.encode_packed_int64``."""
        ...

    def adjacent_arrays(
        self, arrays: list[Any], owner: Any, rank: int, format: str, /
    ) -> tuple[int, int, bytes, bytes] | None:
        """Where arrays of buffer ``format`` that follow each other lie in ``owner``'s buffer: the first's byte
        offset, the bytes of all, their int64 shapes and the int64 offsets of their values
        (``codegen/_speedups/arrays.c``; used by ``codec/arrow.py``)."""
        ...

    def export_arrow(
        self, node: tuple[int, int, tuple[Any, ...], tuple[Any, ...]], /
    ) -> tuple[Any, int]:
        """A tree of Arrow arrays (length, null count, buffers, children) as one ArrowArray of the Arrow C data
        interface: a capsule owning it and its address (``codegen/_speedups/export.c``; used by
        ``codec/arrow.py``)."""
        ...

    def join_strings(self, items: list[Any], text: bool, /) -> tuple[bytes, bytes]:
        """A list of str (``text``) or bytes as an Arrow array's int32 offsets and joined data
        (``codegen/_speedups/strings.c``; used by ``codec/arrow.py``)."""
        ...

    def encode_examples(
        self,
        count: int,
        entries: tuple[tuple[Any, ...], ...],
        lists: tuple[tuple[Any, ...], ...] | None = None,
        /,
    ) -> list[bytes]:
        """``count`` serialized Examples from columns: one ``(key_field, kind, values, offsets, present)``
        entry per feature, in map order; with ``lists`` (entries with each record's ``steps`` last),
        SequenceExamples whose context is ``entries`` (``codegen/_speedups/encode.c``; used by
        ``codec/encode.py``)."""
        ...

    def ExamplePlan(  # noqa: N802  (a class of the extension)
        self,
        keys: tuple[bytes, ...],
        ops: tuple[tuple[object, ...], ...],
        fallback: Callable[[BytesLike], tuple[Any, ...]],
        list_keys: tuple[bytes, ...] | None = None,
        /,
    ) -> ExamplePlan:
        """A callable decoding Example (with ``list_keys``: SequenceExample) bytes to attribute
        values (see ``codegen.runtime.codec.plan``)."""
        ...

    def scan_batch(
        self,
        records: Sequence[BytesLike],
        keys: tuple[bytes, ...],
        joined: tuple[bytes, ...] = (),
        unrequested: dict[bytes, int] | None = None,
        irregular: list[int] | None = None,
        texts: tuple[bytes, ...] = (),
        /,
    ) -> list[ScanColumns]:
        """Per key, the columns of its feature over all ``records``; for the keys in ``joined``,
        ``(blob, sizes)`` in place of the list of bytes values; for the keys in ``texts``, the
        values as ``str`` when they are all valid UTF-8; the other keys found go into
        ``unrequested`` (key -> first record), the records with top-level fields besides
        ``features`` into ``irregular`` (see the extension's doc)."""
        ...

    def hash_values(self, blob: Buffer, sizes: object, /) -> bytes:
        """The 64-bit FNV-1a hash of each value joined in ``blob`` as native uint64 bytes
        (``sizes``: native int64, a C-contiguous buffer such as an ndarray: the size of each), like
        ``batch.hash_joined``."""
        ...

    def tally_values(self, blob: Buffer, sizes: object, /) -> tuple[bytes, bytes, bytes]:
        """The distinct hashes of :meth:`hash_values`, in the order they first appear, with how
        many values have each and the index of the first (native uint64, int64, int64 bytes),
        like ``batch.tally_joined``."""
        ...

    def joined_traits(
        self,
        blob: Buffer,
        sizes: object,
        signatures: tuple[bytes, ...],
        short: int,
        held: object | None,
        kept: Buffer,
        kept_ends: object,
        /,
    ) -> tuple[bool, tuple[int, ...], bytes, bytes]:
        """Whether the values joined in ``blob`` hold a NUL byte, how many start with each
        signature, the indexes of values of at most ``short`` bytes (native int64 bytes) and how
        many equal each ``kept`` value (its ``held`` table of probes given), like
        ``observe.joined_traits``."""
        ...

    def pooled_block(self, size: int, /) -> BlockBuffer:
        """A writable ``Block`` of ``size`` bytes whose memory comes from the pool (a reader's
        buffer)."""
        ...

    def bind_libdeflate(self, path: str, /) -> bool:
        """Finds libdeflate's functions in the loaded shared object at ``path`` (the ``deflate``
        package's extension module); whether it found them (``codegen/_speedups/inflate.c``)."""
        ...

    def inflate_members(self, members: list[Buffer], header: int, outs: list[Buffer], /) -> bytes:
        """Inflates each gzip member of ``members`` (a header of ``header`` bytes, deflate data,
        the trailer) into the buffer of ``outs`` at its place with libdeflate, all without the
        GIL; a byte a member, 1 when it inflated whole: to exactly the size of its buffer, the size
        and CRC-32 its trailer declares, its deflate data ending at the trailer (used by
        ``runtime/io/members.py``)."""
        ...

    def join_spans(self, parts: Sequence[Sequence[bytes]], /) -> Sequence[bytes]:
        """The records of the ``Spans`` ``parts``, one after another, in one ``Spans``."""
        ...

    def pool_stats(self) -> tuple[int, int]:
        """How many freed large ``Block`` buffers wait for reuse, and their bytes."""
        ...

    def pool_clear(self) -> int:
        """Frees every buffer waiting in the pool; returns their bytes."""
        ...

    def use_shared_blocks(self, enable: bool, /) -> None:
        """Whether pooled ``Block`` buffers made from now on in this process are shared memory (Linux;
        ``OSError`` elsewhere): a DataLoader worker's, whose batch columns reach the main process
        without a copy (``codegen.runtime.data.transfer``). Empties the pool."""
        ...

    def shared_retired(self) -> list[int]:
        """The numbers of the shared blocks whose memory was let go since the last call."""
        ...

    def after_fork(self) -> None:
        """In a child just forked: the pool lets the parent's shared memory go (it is the parent's
        too) and makes private memory again."""
        ...


class AcceleratorWarning(RuntimeWarning):
    """The C accelerator is not built or cannot be imported: the runtime runs its pure-Python path."""


_missing: str | None = None
"""Why the accelerator could not be imported (``None`` when it was, or was turned off)."""


def load_speedups() -> Speedups | None:
    """The C accelerator, or ``None`` when it is not built or ``TFR_GEN_PURE_PYTHON=1``.

    When it is missing without ``TFR_GEN_PURE_PYTHON=1``, an :class:`AcceleratorWarning` says so once, with how to
    build it (the pure-Python path is 5 to 17 times slower).
    """
    global _missing
    if os.environ.get(PURE_PYTHON_VARIABLE) == "1":
        return None
    try:
        module = importlib.import_module("codegen._speedups")
        if getattr(module, "__file__", None) is None:  # a namespace package: an unbuilt checkout
            raise ImportError(f"{', '.join(module.__path__)} holds only its C sources, not built")
    except ImportError as exc:
        _missing = str(exc) or type(exc).__name__
        warnings.warn(
            f"tfr-gen runs its pure-Python path, 5 to 17 times slower: the C accelerator codegen._speedups"
            f" cannot be imported ({_missing}). Build it with 'python setup.py build_ext --inplace' in a"
            " checkout, or reinstall tfr-gen on a machine with a C compiler; set"
            f" {PURE_PYTHON_VARIABLE}=1 to choose the pure-Python path without this warning.",
            AcceleratorWarning,
            stacklevel=2,
        )
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

if speedups is not None and hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=speedups.after_fork)


def status() -> str:
    """Whether the C accelerator is active, in a few words (``tfr-gen --version`` shows it)."""
    if speedups is not None:
        return "C accelerator: active"
    if os.environ.get(PURE_PYTHON_VARIABLE) == "1":
        return f"C accelerator: off ({PURE_PYTHON_VARIABLE}=1), pure-Python path"
    return f"C accelerator: not available ({_missing}), pure-Python path"


def release_pooled_memory() -> int:
    """Gives the memory of the freed batch columns and reader buffers that the accelerator keeps
    for reuse (at most 512 MiB) back to the C allocator, and returns how many bytes that was
    (0 without the accelerator). Batches and readers still alive keep theirs."""
    return 0 if speedups is None else speedups.pool_clear()
