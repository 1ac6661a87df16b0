"""Batches of records as Apache Arrow data and back (the optional ``arrow`` extra: pyarrow).

The Arrow schema of a record follows its schema, one field per attribute (named as the attribute):

* the leaf type is the dtype's own: ``int8`` .. ``uint64``, ``float16``/``float32``/``float64``,
  ``bool``, ``string`` (UTF-8) and ``binary``;
* every dimension of a fixed size ``n`` is a ``fixed_size_list<n>`` level, every ``null`` dimension a
  ``large_list`` level (64-bit offsets: the batch's row splits are handed over as they are); a
  ``SequenceExample`` feature list has one more ``large_list`` level outside, for its steps. Fixed
  shapes are nested fixed-size lists rather than Arrow's fixed-shape tensor extension type, which
  Parquet, pandas, polars and DuckDB all read as plain nested lists;
* an optional feature is a nullable field: the batch's ``present`` mask is its validity. Required
  fields are not nullable.

Each field's metadata holds its Example key (``tfr.key``) and the schema fingerprint
(``tfr.fingerprint``); the schema's metadata names the module, record, version, fingerprint and the
canonical schema, so that data written elsewhere can be checked against the record reading it.

Numeric columns are handed to Arrow without copying their numbers (bool columns excepted: Arrow packs booleans into
bits; a raw tensor's arrays of different shapes are joined by a copy unless they lie one after the other in one buffer,
as ``decode_batch`` gives them); strings and bytes are copied into Arrow's buffers (with the accelerator, in one pass:
``join_strings`` gives the offsets and the joined bytes). Reading Arrow data back (:func:`from_arrow`) checks every
column against the schema and accepts the forms data frames give: any list type where a dimension is fixed (each row's
length is checked), integer columns of another width (each value's range is checked), UTF-8 checked ``binary`` for
strings. Errors name the column and, for values, the row."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np
import numpy.typing as npt

import codegen.runtime.accel as accel
from codegen.dtypes import DTYPES, DType, Kind
from codegen.errors import RecordError
from codegen.runtime.codec.columns import Masked, Ragged
from codegen.runtime.codec.features import Codec
from codegen.runtime.codec.images import EncodedImage
from codegen.runtime.codec.sequences import SequenceCodec
from codegen.runtime.codec.tensors import RawTensor
from codegen.runtime.extras import optional_module

__all__ = [
    "ArrowSchema",
    "ColumnForm",
    "arrow_schema",
    "arrow_table",
    "column_form",
    "from_arrow",
    "to_arrow",
]

KEY = b"tfr.key"
FINGERPRINT = b"tfr.fingerprint"
MODULE = b"tfr.module"
RECORD = b"tfr.record"
VERSION = b"tfr.version"
CANONICAL = b"tfr.schema"


def pyarrow(needed_for: str) -> Any:
    """The ``pyarrow`` module (a clear error naming the ``arrow`` extra when it is missing)."""
    return optional_module("pyarrow", needed_for)


@dataclass(frozen=True, slots=True)
class ColumnForm:
    """The form of one attribute's batch column.

    ``dims`` are the dimensions after the record one (``None``: variable), a feature list's steps
    first. A column is an array ``[B, *dims]`` (numeric, all fixed), nested lists (strings, all
    fixed), ``levels`` nested :class:`Ragged` around ``[N, *inner]`` values (leading ``null``
    dimensions), or a list of arrays (``arrays``: a raw tensor with a ``null`` dimension after the
    first); ``masked`` wraps it in :class:`Masked`.
    """

    name: str
    key: str
    dtype: DType
    dims: tuple[int | None, ...]
    masked: bool
    arrays: bool

    @property
    def levels(self) -> int:
        """How many leading ``null`` dimensions the column holds as :class:`Ragged` levels."""
        if self.arrays:
            return 0
        count = 0
        while count < len(self.dims) and self.dims[count] is None:
            count += 1
        return count

    @property
    def inner(self) -> tuple[int, ...]:
        """The fixed dimensions inside the ragged levels."""
        return cast("tuple[int, ...]", self.dims[self.levels :])

    @property
    def item(self) -> str | bytes:
        """The placeholder of one string or bytes value."""
        return "" if self.dtype.kind is Kind.STR else b""

    def shape_text(self) -> str:
        return "[" + ", ".join("null" if d is None else str(d) for d in self.dims) + "]"


def column_form(codec: Codec[Any] | SequenceCodec[Any]) -> ColumnForm:
    """The :class:`ColumnForm` of a feature's (or feature list's) batch column."""
    if isinstance(codec, SequenceCodec):
        return ColumnForm(codec.name, codec.key, codec.dtype, (None, *codec.shape), False, False)
    # A raw tensor with a null dimension after its first, or an image of any size: a list of arrays.
    arrays = (isinstance(codec, RawTensor) and None in codec.shape[1:]) or (
        isinstance(codec, EncodedImage) and None in codec.shape
    )
    return ColumnForm(
        codec.name, codec.key, codec.dtype, tuple(codec.shape), codec.optional, arrays
    )


# --- the schema -----------------------------------------------------------------------------------


def _leaf_type(pa: Any, dtype: DType) -> Any:
    if dtype.kind is Kind.STR:
        return pa.string()
    if dtype.kind is Kind.BYTES:
        return pa.binary()
    return pa.from_numpy_dtype(dtype.numpy)


def arrow_type(pa: Any, form: ColumnForm) -> Any:
    """The Arrow type of a column of ``form``."""
    kind = _leaf_type(pa, form.dtype)
    if form.arrays:
        return pa.struct(
            [
                pa.field("shape", pa.list_(pa.int64(), len(form.dims))),
                pa.field("data", pa.large_list(kind)),
            ]
        )
    for dim in reversed(form.dims):
        kind = pa.large_list(kind) if dim is None else pa.list_(kind, dim)
    return kind


@dataclass(frozen=True, slots=True)
class ArrowSchema:
    """What the Arrow schema of a record is built from: its schema's identity and column forms."""

    module: str
    record: str
    version: int
    fingerprint: str
    canonical: str
    forms: tuple[ColumnForm, ...]
    plans: list[Any] = field(default_factory=list, init=False, compare=False, repr=False)
    """The conversion of batches to Arrow, made on first use (see :func:`to_arrow`)."""


def arrow_schema(schema: ArrowSchema) -> Any:
    """The ``pyarrow.Schema`` of a record's batches."""
    pa = pyarrow("Arrow conversion")
    fields = [
        pa.field(
            form.name,
            arrow_type(pa, form),
            nullable=form.masked,
            metadata={KEY: form.key.encode("utf-8"), FINGERPRINT: schema.fingerprint.encode()},
        )
        for form in schema.forms
    ]
    metadata = {
        MODULE: schema.module.encode("utf-8"),
        RECORD: schema.record.encode("utf-8"),
        VERSION: str(schema.version).encode(),
        FINGERPRINT: schema.fingerprint.encode(),
        CANONICAL: schema.canonical.encode("utf-8"),
    }
    return pa.schema(fields, metadata=metadata)


def arrow_table(data: object) -> Any:
    """``data`` as an Arrow table or record batch when it is one, or a pandas or polars data frame
    (converted, numbers shared where they can be); ``None`` for anything else."""
    module = type(data).__module__.split(".")[0]
    if module == "pyarrow":
        pa = pyarrow("Arrow input")
        return data if isinstance(data, pa.Table | pa.RecordBatch) else None
    if module == "pandas" and type(data).__name__ == "DataFrame":
        pa = pyarrow("pandas input")
        return pa.Table.from_pandas(data, preserve_index=False)
    if module == "polars" and type(data).__name__ == "DataFrame":
        pyarrow("polars input")
        return cast("Any", data).to_arrow()
    return None


# --- columns to Arrow -----------------------------------------------------------------------------


def to_arrow(schema: ArrowSchema, columns: Sequence[Any]) -> Any:
    """A ``pyarrow.RecordBatch`` of a batch's ``columns`` (numeric buffers shared, not copied)."""
    pa = pyarrow("Arrow conversion")
    plan = cast("_Plan", schema.plans[0]) if schema.plans else _plan(pa, schema)
    nodes = tuple(convert(column) for convert, column in zip(plan.columns, columns, strict=True))
    rows = nodes[0][0] if nodes else 0
    if plan.importable and accel.speedups is not None:
        # The whole batch as one ArrowArray, imported at once: one call, whatever the columns.
        _owner, address = accel.speedups.export_arrow((rows, 0, (None,), nodes))
        return pa.RecordBatch._import_from_c(address, plan.schema)
    arrays = [_built(pa, f.type, node) for f, node in zip(plan.schema, nodes, strict=True)]
    return pa.RecordBatch.from_arrays(arrays, schema=plan.schema)


_Node = tuple[int, int, tuple[Any, ...], tuple[Any, ...]]
"""An Arrow array as its length, null count, buffers (objects with the buffer protocol, or ``None``) and children
(nodes), in the layout of the Arrow columnar format for the type it is imported as."""


def _built(pa: Any, kind: Any, node: _Node) -> Any:
    """The ``pyarrow.Array`` of type ``kind`` of ``node``, level by level."""
    length, nulls, buffers, children = node
    if pa.types.is_struct(kind):
        types = [kind.field(i).type for i in range(kind.num_fields)]
    else:
        types = [kind.value_type] if children else []
    return pa.Array.from_buffers(
        kind,
        length,
        [None if b is None else pa.py_buffer(b) for b in buffers],
        nulls,
        children=[_built(pa, t, child) for t, child in zip(types, children, strict=True)] or None,
    )


@dataclass(frozen=True, slots=True)
class _Plan:
    """What converting a record's batches takes, made once per record: the ``pyarrow.Schema``, a
    function per column that gives its :data:`_Node`, and whether pyarrow imports an ArrowArray of the
    Arrow C data interface (which the accelerator exports a tree of nodes as)."""

    schema: Any
    columns: tuple[Callable[[Any], _Node], ...]
    importable: bool


def _plan(pa: Any, schema: ArrowSchema) -> _Plan:
    """The :class:`_Plan` of ``schema``, made on first use and kept in it."""
    if not schema.plans:
        arrow = arrow_schema(schema)
        columns = tuple(_column(schema.record, form) for form in schema.forms)
        importable = hasattr(pa.RecordBatch, "_import_from_c")
        schema.plans.append(_Plan(arrow, columns, importable))
    return cast("_Plan", schema.plans[0])


def _column(record: str, form: ColumnForm) -> Callable[[Any], _Node]:
    """The function giving the :data:`_Node` of a column of ``form`` (of its Arrow type). The leaf values are
    checked to be as many as the column's shape says and of its dtype (a batch's constructor checks only the
    columns' lengths)."""
    if form.arrays:
        return functools.partial(_arrays_column, form)
    # From the outermost level in: ``levels`` large lists, a fixed-size list per inner dimension, the leaf.
    inner = form.inner
    leaf = _leaf_column(record, form)
    fixed = [math.prod(inner[:position]) for position in range(len(inner))]
    ragged = form.levels
    masked = form.masked
    whole = math.prod(inner)
    if not (masked or ragged or inner):  # a number or string per record: the leaf itself
        return lambda column: leaf(column, len(column), _ALL_VALID)

    def convert(column: Any) -> _Node:
        validity: tuple[Any, int] = _ALL_VALID
        if masked:
            validity = _validity(column.present)
            column = column.values
        splits = []
        for _ in range(ragged):
            splits.append(column.row_splits)
            column = column.values
        size = len(column)
        outermost = not (ragged or fixed)
        node = leaf(column, size * whole, validity if outermost else _ALL_VALID)
        for position in range(len(fixed) - 1, -1, -1):
            buffer, nulls = validity if not (position or ragged) else _ALL_VALID
            node = (size * fixed[position], nulls, (buffer,), (node,))
        for position in range(ragged - 1, -1, -1):
            buffer, nulls = _ALL_VALID if position else validity
            row_splits = splits[position]
            node = (len(row_splits) - 1, nulls, (buffer, row_splits), (node,))
        return node

    return convert


_ALL_VALID: tuple[Any, int] = (None, 0)


def _validity(present: npt.NDArray[np.bool_]) -> tuple[Any, int]:
    """The Arrow validity bitmap of a ``present`` mask and its null count (``None``: every row is valid)."""
    nulls = len(present) - int(np.count_nonzero(present))
    if not nulls:
        return _ALL_VALID
    return np.packbits(present, bitorder="little"), nulls


def _leaf_column(record: str, form: ColumnForm) -> Callable[[Any, int, tuple[Any, int]], _Node]:
    """The function giving the node of the flat values of a column's innermost level (``count`` of them, with a
    validity bitmap and null count): numbers share their buffer (bools are packed into bits), strings and bytes
    are joined (by the accelerator in one pass)."""
    dtype = form.dtype

    def unfit(message: str) -> RecordError:
        return RecordError(
            f"{record}Batch.to_arrow: column {form.name!r} ({dtype.name} of shape {form.shape_text()}): {message}"
        )

    if dtype.numeric:
        boolean = dtype.kind is Kind.BOOL
        numpy = dtype.numpy

        def numbers(values: Any, count: int, validity: tuple[Any, int]) -> _Node:
            flat = np.ascontiguousarray(values).reshape(-1)
            if flat.dtype != numpy or flat.size != count:
                raise unfit(f"expected {count} values of {numpy}, got {flat.size} of {flat.dtype}")
            if boolean:
                flat = np.packbits(flat, bitorder="little")
            return (count, validity[1], (validity[0], flat), ())

        return numbers
    text = dtype.kind is Kind.STR
    depth = len(form.inner)

    def strings(values: Any, count: int, validity: tuple[Any, int]) -> _Node:
        for _ in range(depth):
            values = [item for row in values for item in row]
        if len(values) != count:
            raise unfit(f"expected {count} values, got {len(values)}")
        if accel.speedups is not None and type(values) is list:
            try:
                offsets, data = accel.speedups.join_strings(values, text)
            except (TypeError, OverflowError, UnicodeError):
                pass  # pyarrow converts (or names the problem)
            else:
                return (count, validity[1], (validity[0], offsets, data), ())
        pa = pyarrow("Arrow conversion")
        array = pa.array(values, pa.string() if text else pa.binary())
        return (count, validity[1], (validity[0], *array.buffers()[1:]), ())

    return strings


def _arrays_column(form: ColumnForm, column: Any) -> _Node:
    validity = _ALL_VALID
    if form.masked:
        validity = _validity(column.present)
        column = column.values
    return _arrays_node(form, cast("list[npt.NDArray[Any]]", column), validity)


def _leaf(values: npt.NDArray[Any]) -> _Node:
    """The node of a flat numeric array (not bool), sharing its buffer."""
    array = np.ascontiguousarray(values)
    return (array.size, 0, (None, array), ())


def _arrays_node(
    form: ColumnForm, arrays: list[npt.NDArray[Any]], validity: tuple[Any, int]
) -> _Node:
    """Arrays of different shapes: a struct of each one's ``shape`` and its flat ``data``."""
    dtype = form.dtype.numpy
    rank = len(form.dims)
    joined = _adjacent(arrays, dtype, rank)
    if joined is not None:
        values, shapes, offsets = joined
    else:
        flat = [np.ascontiguousarray(a, dtype).reshape(-1) for a in arrays]
        values = np.concatenate(flat) if flat else np.zeros(0, dtype)
        offsets = np.zeros(len(flat) + 1, np.int64)
        np.cumsum([a.size for a in flat], out=offsets[1:])
        shapes = np.array([a.shape for a in arrays], np.int64).reshape(-1, rank)
    count = len(arrays)
    if form.dtype.kind is Kind.BOOL:
        data = (values.size, 0, (None, np.packbits(values, bitorder="little")), ())
    else:
        data = _leaf(values)
    shape = (count, 0, (None,), (_leaf(shapes.reshape(-1)),))
    return (count, validity[1], (validity[0],), (shape, (count, 0, (None, offsets), (data,))))


def _adjacent(
    arrays: list[npt.NDArray[Any]], dtype: np.dtype[Any], rank: int
) -> tuple[npt.NDArray[Any], npt.NDArray[np.int64], npt.NDArray[np.int64]] | None:
    """The values of arrays of ``dtype`` that are views lying one after the other in one array's buffer (as
    ``decode_batch`` gives them), as one view of that buffer, their shapes and the offsets of their values;
    ``None`` for other arrays."""
    if accel.speedups is None or type(arrays) is not list or not arrays:
        return None
    owner = getattr(arrays[0], "base", None)
    if type(owner) is not np.ndarray:
        return None
    run = accel.speedups.adjacent_arrays(arrays, owner, rank, _buffer_format(dtype))
    if run is None:
        return None
    offset, size, shapes, offsets = run
    values = np.frombuffer(owner, np.uint8, size, offset).view(dtype)
    return (
        values,
        np.frombuffer(shapes, np.int64).reshape(-1, rank),
        np.frombuffer(offsets, np.int64),
    )


@functools.cache
def _buffer_format(dtype: np.dtype[Any]) -> str:
    """The buffer protocol's format of arrays of ``dtype`` (``struct`` syntax, as numpy gives it)."""
    return np.zeros(0, dtype).data.format


# --- Arrow to columns -----------------------------------------------------------------------------


class _Where:
    """Maps an element index of a nested level back to the row it belongs to (for messages)."""

    def __init__(self, rows: npt.NDArray[np.int64] | None) -> None:
        self.rows = rows
        self.levels: list[int | npt.NDArray[np.int64]] = []

    def row(self, index: int) -> int:
        for level in reversed(self.levels):
            if isinstance(level, int):
                index //= max(level, 1)
            else:
                index = int(np.searchsorted(level, index, side="right")) - 1
        return index if self.rows is None else int(self.rows[index])


def _fail(record: str, form: ColumnForm, message: str, row: int | None = None) -> RecordError:
    where = f" row {row}" if row is not None else ""
    return RecordError(
        f"{record}Batch.from_arrow: column {form.name!r}{where} "
        f"({form.dtype.name} of shape {form.shape_text()}): {message}"
    )


def from_arrow(record: str, forms: Sequence[ColumnForm], table: Any) -> list[Any]:
    """The batch columns of an Arrow table or record batch whose columns are named as ``forms``."""
    pa = pyarrow("Arrow conversion")
    names = list(table.schema.names)
    wanted = [form.name for form in forms]
    missing = [name for name in wanted if name not in names]
    extra = [name for name in names if name not in wanted]
    if missing or extra or len(set(names)) != len(names):
        parts = []
        if missing:
            parts.append("missing " + ", ".join(map(repr, missing)))
        if extra:
            parts.append("unknown " + ", ".join(map(repr, extra)))
        if len(set(names)) != len(names):
            parts.append("repeated column names")
        raise RecordError(
            f"{record}Batch.from_arrow: the columns do not match the record ({'; '.join(parts)}); "
            f"expected {', '.join(map(repr, wanted))}"
        )
    columns = []
    for form in forms:
        array = table.column(form.name)
        if isinstance(array, pa.ChunkedArray):
            array = array.combine_chunks() if array.num_chunks != 1 else array.chunk(0)
        columns.append(_column_values(pa, record, form, array))
    return columns


def _column_values(pa: Any, record: str, form: ColumnForm, array: Any) -> Any:
    if pa.types.is_dictionary(array.type):
        array = array.dictionary_decode()
    nulls = array.null_count
    if not form.masked:
        if nulls:
            row = int(np.flatnonzero(~_valid(pa, array))[0])
            raise _fail(record, form, "null in a column of a required feature", row)
        return _plain(pa, record, form, array, None)
    present = _valid(pa, array)
    if not nulls:
        return Masked(_plain(pa, record, form, array, None), present)
    rows = np.flatnonzero(present).astype(np.int64)
    kept = _plain(pa, record, form, array.filter(pa.array(present)), rows)
    return Masked(_expanded(form, kept, present), present)


def _valid(pa: Any, array: Any) -> npt.NDArray[np.bool_]:
    if not array.null_count:
        return np.ones(len(array), np.bool_)
    return cast("npt.NDArray[np.bool_]", array.is_valid().to_numpy(zero_copy_only=False))


def _plain(
    pa: Any, record: str, form: ColumnForm, array: Any, rows: npt.NDArray[np.int64] | None
) -> Any:
    """The column of ``array`` (no nulls at its top level); ``rows`` maps its rows to the input's."""
    where = _Where(rows)
    if form.arrays:
        return _arrays_of(pa, record, form, array, where)
    size = len(array)
    levels: list[int | npt.NDArray[np.int64]] = []
    current = array
    for depth, dim in enumerate(form.dims):
        kind = current.type
        if not (
            pa.types.is_list(kind)
            or pa.types.is_large_list(kind)
            or pa.types.is_fixed_size_list(kind)
        ):
            raise _fail(record, form, f"dimension {depth + 1} expects a list, got {kind}")
        if current.null_count:
            index = int(np.flatnonzero(~_valid(pa, current))[0])
            raise _fail(record, form, f"a null list at dimension {depth + 1}", where.row(index))
        if pa.types.is_fixed_size_list(kind):
            if dim is not None and kind.list_size != dim:
                raise _fail(
                    record,
                    form,
                    f"dimension {depth + 1} has size {dim}, got a fixed-size list of {kind.list_size}",
                )
            width = kind.list_size
            offsets = np.arange(len(current) + 1, dtype=np.int64) * width
        else:
            offsets = current.offsets.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
            offsets = offsets - offsets[0]
            width = dim if dim is not None else -1
            if dim is not None:
                lengths = np.diff(offsets)
                bad = np.flatnonzero(lengths != dim)
                if bad.size:
                    index = int(bad[0])
                    raise _fail(
                        record,
                        form,
                        f"dimension {depth + 1} has size {dim}, got a list of {int(lengths[index])}",
                        where.row(index),
                    )
        levels.append(offsets if dim is None else width)
        where.levels.append(offsets if dim is None else width)
        current = current.flatten()
    leaves = _leaf_values(pa, record, form, current, where)
    return _assembled(record, form, leaves, levels, size, where)


def _leaf_values(pa: Any, record: str, form: ColumnForm, array: Any, where: _Where) -> Any:
    """The leaf values as a numpy array of the dtype, or a list of ``str``/``bytes``."""
    kind = array.type
    dtype = form.dtype
    if array.null_count:
        index = int(np.flatnonzero(~_valid(pa, array))[0])
        raise _fail(record, form, "a null value", where.row(index))
    if dtype.kind in (Kind.STR, Kind.BYTES):
        texts = (
            pa.types.is_string(kind)
            or pa.types.is_large_string(kind)
            or pa.types.is_string_view(kind)
        )
        binary = (
            pa.types.is_binary(kind)
            or pa.types.is_large_binary(kind)
            or pa.types.is_fixed_size_binary(kind)
            or pa.types.is_binary_view(kind)
        )
        if dtype.kind is Kind.BYTES:
            if not binary:
                raise _fail(record, form, f"expected binary values, got {kind}")
            return array.to_pylist()
        if texts:
            return array.to_pylist()
        if not binary:
            raise _fail(record, form, f"expected string values, got {kind}")
        items = array.to_pylist()
        for index, item in enumerate(items):
            try:
                items[index] = item.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise _fail(
                    record, form, f"invalid UTF-8: {exc.reason}", where.row(index)
                ) from None
        return items
    is_int = pa.types.is_integer(kind)
    is_bool = pa.types.is_boolean(kind)
    is_float = pa.types.is_floating(kind)
    if dtype.kind is Kind.FLOAT:
        if not (is_float or is_int):
            raise _fail(record, form, f"expected numbers, got {kind}")
    elif dtype.kind is Kind.BOOL:
        if not (is_bool or is_int):
            raise _fail(record, form, f"expected booleans, got {kind}")
    elif not is_int:
        raise _fail(record, form, f"expected integers, got {kind}")
    values = array.to_numpy(zero_copy_only=False)
    if values.dtype == dtype.numpy:
        return values
    if dtype.kind is not Kind.FLOAT and values.size:
        lo, hi = cast("int", dtype.lo), cast("int", dtype.hi)
        bad = np.flatnonzero(_out_of_range(values, lo, hi))
        if bad.size:
            index = int(bad[0])
            raise _fail(
                record,
                form,
                f"{values[index].item()} is out of range for {dtype.name} ({lo} .. {hi})",
                where.row(index),
            )
    return values.astype(dtype.numpy)


def _out_of_range(values: npt.NDArray[Any], lo: int, hi: int) -> npt.NDArray[np.bool_]:
    """Which integers are outside ``lo .. hi`` (compared in their own type, without overflow)."""
    limits = np.iinfo(values.dtype)
    bad = np.zeros(values.size, np.bool_)
    if lo > limits.min:
        bad |= values < lo
    if hi < limits.max:
        bad |= values > hi
    return bad


def _assembled(
    record: str,
    form: ColumnForm,
    leaves: Any,
    levels: list[int | npt.NDArray[np.int64]],
    size: int,
    where: _Where,
) -> Any:
    """The column from the leaf values and the offsets (or width) of each dimension."""
    ragged = form.levels
    inner = form.inner
    if form.dtype.numeric:
        values: Any = leaves.reshape(-1, *inner) if (ragged or inner) else leaves
        if not ragged:
            return values.reshape(size, *inner)
    else:
        values = _nest(leaves, inner)
    for offsets in reversed(levels[:ragged]):
        values = Ragged(values, cast("npt.NDArray[np.int64]", offsets))
    return values


def _nest(items: list[Any], dims: Sequence[int]) -> list[Any]:
    for dim in reversed(dims):
        items = [items[i : i + dim] for i in range(0, len(items), dim)]
    return items


def _arrays_of(pa: Any, record: str, form: ColumnForm, array: Any, where: _Where) -> list[Any]:
    """The arrays of a struct of ``shape`` and ``data`` (see :func:`_arrays_array`)."""
    kind = array.type
    if not pa.types.is_struct(kind) or {kind.field(i).name for i in range(kind.num_fields)} != {
        "shape",
        "data",
    }:
        raise _fail(record, form, f"expected a struct of 'shape' and 'data', got {kind}")
    shape_form = ColumnForm(form.name, form.key, DTYPES["int64"], (len(form.dims),), False, False)
    shapes = _plain(pa, record, shape_form, array.field("shape"), where.rows)
    data_form = ColumnForm(form.name, form.key, form.dtype, (None,), False, False)
    data = cast("Ragged[Any]", _plain(pa, record, data_form, array.field("data"), where.rows))
    arrays = []
    for row, (dims, start, stop) in enumerate(
        zip(
            shapes.tolist(),
            data.row_splits[:-1].tolist(),
            data.row_splits[1:].tolist(),
            strict=True,
        )
    ):
        fits = all(d >= 0 and (n is None or d == n) for d, n in zip(dims, form.dims, strict=True))
        if not fits or math.prod(dims) != stop - start:
            raise _fail(
                record,
                form,
                f"a shape of {dims} for {stop - start} values",
                where.row(row),
            )
        arrays.append(np.array(data.values[start:stop]).reshape(dims))
    return arrays


def _expanded(form: ColumnForm, kept: Any, present: npt.NDArray[np.bool_]) -> Any:
    """The column of every row from that of the present rows: placeholders where absent."""
    size = int(present.size)
    positions = np.flatnonzero(present).tolist()
    if form.arrays:
        empty = tuple(0 if d is None else d for d in form.dims)
        arrays = [np.zeros(empty, form.dtype.numpy) for _ in range(size)]
        for position, array in zip(positions, kept, strict=True):
            arrays[position] = array
        return arrays
    if form.levels:
        ragged = cast("Ragged[Any]", kept)
        lengths = np.zeros(size, np.int64)
        lengths[present] = ragged.row_lengths()
        splits = np.zeros(size + 1, np.int64)
        np.cumsum(lengths, out=splits[1:])
        return Ragged(ragged.values, splits)
    if form.dtype.numeric:
        column = np.zeros((size, *form.inner), form.dtype.numpy)
        column[present] = kept
        return column
    rows: list[Any] = [_filled(form.inner, form.item) for _ in range(size)]
    for position, item in zip(positions, kept, strict=True):
        rows[position] = item
    return rows


def _filled(shape: Sequence[int], item: object) -> Any:
    if not shape:
        return item
    return [_filled(shape[1:], item) for _ in range(shape[0])]
