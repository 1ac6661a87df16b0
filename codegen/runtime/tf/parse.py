"""The TensorFlow side of the feature codecs: parse specs, post-processing, parsing.

TensorFlow is imported lazily (:func:`import_tensorflow`) by each function here.

A feature's parse spec entries (:func:`parse_specs`, by key), from its :class:`FeatureInfo`:

* list encoding, fully known shape, required or with a default:
  ``tf.io.FixedLenFeature(shape, wire dtype, default_value)``;
* list encoding, anything else (a leading ``None``, or optional): ``tf.io.RaggedFeature`` of the
  flat values;
* ragged (two or more leading ``None``): one ``tf.io.RaggedFeature(value_key=key,
  partitions=[RowLengths(<key>/row_lengths_1), ..., UniformRowLength(k), ...])``;
* raw: the bytes (``FixedLenFeature((), string)``) and, with an unknown dimension, ``<key>/shape``
  (``FixedLenFeature((rank,), int64)``); an optional one reads both as ``RaggedFeature``\\ s;
* a feature list (``sequence_features``): ``tf.io.FixedLenSequenceFeature(step shape, wire dtype,
  allow_missing=optional)`` for a fixed step shape, else ``tf.io.RaggedFeature`` of each step's
  flat values.

Post-processing (:func:`post_process`) gives the flat values of a leading ``None`` shape ``[n,
*inner]`` rows (a batch: a ragged ``[batch, (n), *inner]`` tensor), and those of an optional fixed
shape ``[0 or 1, *shape]`` (a batch: ``[batch, (0 or 1), *shape]``), after checking each Example's
count fits. (Partitions ``UniformRowLength(k)`` in the spec would not do for them: over a batch
TensorFlow reshapes the values of all Examples together, so counts of 3 and 3 with ``k = 2``
silently give rows that span Examples.) Raw bytes are checked against the fixed or stored shape and
decoded (``tf.io.decode_raw``, little-endian) to ``shape`` (a batch with an unknown dimension: a
ragged tensor; optional: a leading dimension of 0 or 1). Ragged features are checked to have row
lengths that fit each Example: over a batch TensorFlow joins the row lengths of all Examples
before partitioning, so lengths that do not fit their own Example but balance out over the batch
would move values between Examples; a batch parse therefore also reads each Example's values and
row lengths apart (:func:`record_check_specs`) and checks every Example's counts. Feature lists give ``[T, *shape]``
(a batch: ``[batch, (T), *shape]``, ragged).

An optional feature with a leading ``None`` (list or ragged) that is absent from an Example
parses as an empty row, exactly like one written empty: TensorFlow's ``RaggedFeature`` cannot tell
absent from empty, so post-processing gives no rows (``[0, *inner]``) where the codecs'
``decode_optional`` gives ``None``. (An optional fixed shape, and an optional raw feature, do tell
them apart: a leading dimension of 0 means absent.)

Post-processing casts the wire dtype back to the declared one: narrow integers with ``tf.cast``,
``bool`` as ``!= 0``; ``float32`` and strings stay as parsed (strings as ``tf.string`` bytes).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any, Protocol

import numpy as np

from codegen.dtypes import DTYPES, DType, Kind
from codegen.errors import MissingExtraError, RecordError, TfrGenError
from codegen.kinds import IMAGE_ENCODINGS
from codegen.runtime.codec.info import FeatureInfo

_WIRE_DTYPES = {"int64_list": "int64", "float_list": "float32", "bytes_list": "string"}
_RAW_READ = {"uint32": "int32", "uint64": "int64", "bool": "uint8"}
"""What ``tf.io.decode_raw`` reads for dtypes it cannot give (then bitcast, or compared with 0)."""


def import_tensorflow(what: str) -> Any:
    """The ``tensorflow`` module, or :class:`MissingExtraError` saying ``what`` needs it."""
    try:
        import tensorflow as tf
    except ImportError as exc:
        raise MissingExtraError(
            f"TensorFlow is required for {what}; install it with: pip install 'tfr-gen[tensorflow]'"
        ) from exc
    return tf


class TfCodec(Protocol):
    """What the TensorFlow helpers need of a feature (or feature list) codec: its description."""

    @property
    def name(self) -> str: ...

    def info(self) -> FeatureInfo: ...


# --- parse specs ----------------------------------------------------------------------------------


def parse_specs(info: FeatureInfo) -> dict[str, Any]:
    """The ``tf.io`` parse spec entries of one feature and its companions, by key."""
    tf = import_tensorflow(f"the TensorFlow parse spec of feature {info.name!r}")
    wire_dtype = tf.as_dtype(_WIRE_DTYPES[info.wire])
    if info.sequence:
        if info.fixed:
            return {
                info.key: tf.io.FixedLenSequenceFeature(
                    info.shape, wire_dtype, allow_missing=info.optional
                )
            }
        return {info.key: tf.io.RaggedFeature(wire_dtype, row_splits_dtype=tf.int64)}
    if info.encoding in IMAGE_ENCODINGS:
        if info.optional:
            return {info.key: tf.io.RaggedFeature(tf.string, row_splits_dtype=tf.int64)}
        return {info.key: tf.io.FixedLenFeature((), tf.string)}
    if info.encoding == "raw":
        layout = info.shape_from
        stored = tf.string if layout is not None and layout.encoding == "raw" else tf.int64
        if info.optional:
            specs = {info.key: tf.io.RaggedFeature(tf.string, row_splits_dtype=tf.int64)}
            specs.update(
                {
                    key: tf.io.RaggedFeature(stored, row_splits_dtype=tf.int64)
                    for key in info.companions
                }
            )
            return specs
        specs = {info.key: tf.io.FixedLenFeature((), tf.string)}
        dims = (
            ()
            if layout is not None and (layout.per_dim or stored == tf.string)
            else (len(info.shape),)
        )
        specs.update({key: tf.io.FixedLenFeature(dims, stored) for key in info.companions})
        return specs
    if info.ragged:
        partitions = [tf.io.RaggedFeature.RowLengths(key) for key in info.companions]
        partitions += [tf.io.RaggedFeature.UniformRowLength(d) for d in info.shape if d is not None]
        return {
            info.key: tf.io.RaggedFeature(
                wire_dtype, value_key=info.key, partitions=partitions, row_splits_dtype=tf.int64
            )
        }
    if info.fixed and (info.default is not None or not info.optional):
        return {
            info.key: tf.io.FixedLenFeature(
                info.shape, wire_dtype, default_value=_wire_default(info)
            )
        }
    return {info.key: tf.io.RaggedFeature(wire_dtype, row_splits_dtype=tf.int64)}


def _wire_default(info: FeatureInfo) -> Any:
    """The default as the ``default_value`` of a ``FixedLenFeature`` (wire dtype), or ``None``."""
    if info.default is None:
        return None
    kind = DTYPES[info.dtype].kind
    if kind is Kind.STR:
        return _utf8(info.default)
    if kind is Kind.BYTES:
        return info.default
    return np.array(info.default, dtype=np.float32 if kind is Kind.FLOAT else np.int64)


def _utf8(value: object) -> object:
    """A string default (a str or nested tuples of str) with every str encoded to UTF-8 bytes."""
    if isinstance(value, str):
        return value.encode("utf-8")
    assert isinstance(value, tuple)
    return [_utf8(item) for item in value]


_CHECK = "\0per record:"
"""The start of the names of the parse spec entries :func:`record_check_specs` adds."""


def record_check_specs(codecs: Iterable[TfCodec]) -> dict[str, Any]:
    """Extra parse spec entries for a batch: each ragged feature's flat values and each of its
    row-lengths companions, per Example (names that cannot be keys of the record's spec), so that
    :func:`post_process` can check every Example's counts."""
    tf = import_tensorflow("the per-record checks of ragged features")
    extra: dict[str, Any] = {}
    for codec in codecs:
        info = codec.info()
        if info.ragged and not info.sequence:
            wire_dtype = tf.as_dtype(_WIRE_DTYPES[info.wire])
            extra[_CHECK + info.key] = tf.io.RaggedFeature(
                wire_dtype, value_key=info.key, row_splits_dtype=tf.int64
            )
            for key in info.companions:
                extra[_CHECK + key] = tf.io.RaggedFeature(
                    tf.int64, value_key=key, row_splits_dtype=tf.int64
                )
    return extra


def tf_feature_spec(codecs: Iterable[TfCodec]) -> dict[str, Any]:
    """The parse spec of a record's features (or feature lists): every codec's entries, by key."""
    spec: dict[str, Any] = {}
    for codec in codecs:
        spec.update(parse_specs(codec.info()))
    return spec


# --- post-processing ------------------------------------------------------------------------------


def post_process(
    info: FeatureInfo,
    parsed: Mapping[str, Any],
    *,
    batched: bool,
    lengths: Mapping[str, Any] | None = None,
) -> Any:
    """One feature's tensor, in the declared dtype and shape, from what TensorFlow parsed under
    :func:`parse_specs` (by key).

    ``batched`` says whether it came from a batch (``tf.io.parse_example``,
    ``tf.io.parse_sequence_example``) or one record; ``lengths`` are the step counts of a batch of
    feature lists (the third result of ``tf.io.parse_sequence_example``).
    """
    tf = import_tensorflow(f"post-processing feature {info.name!r}")
    dtype = DTYPES[info.dtype]
    if info.sequence:
        return _declared(
            tf, dtype, _steps(tf, info, parsed[info.key], batched=batched, lengths=lengths)
        )
    if info.encoding in IMAGE_ENCODINGS:
        return _images(tf, info, parsed, batched=batched)
    if info.encoding == "raw":
        return _raw(tf, info, parsed, batched=batched)
    value = parsed[info.key]
    if info.ragged:
        _check_row_lengths(tf, info, value.values if batched else value)
        if batched and _CHECK + info.key in parsed:
            _check_each_record(tf, info, parsed)
    elif (
        not info.fixed
        and len(info.shape) > 1
        or info.fixed
        and info.optional
        and info.default is None
    ):
        dims = tuple(d for d in info.shape if d is not None)  # the inner shape for a leading None
        value = _rows(tf, info, value, dims, batched=batched)
    return _declared(tf, dtype, value)


def _declared(tf: Any, dtype: DType, value: Any) -> Any:
    """``value`` (in the wire dtype) in the declared ``dtype``."""
    if dtype.kind is Kind.BOOL:
        return tf.not_equal(value, 0)
    if dtype.kind is Kind.INT and dtype.name != "int64":
        return tf.cast(value, tf.as_dtype(dtype.numpy))
    return value


def _where(info: FeatureInfo) -> str:
    return f"feature {info.name!r} (key {info.key!r})"


def _rows(tf: Any, info: FeatureInfo, value: Any, row: tuple[int, ...], *, batched: bool) -> Any:
    """The flat values of each Example as rows of shape ``row`` (ragged over a batch).

    An optional fixed-shape feature (``row`` is its shape) needs 0 or one row per Example; a
    leading ``None`` (``row`` is the inner shape) needs a whole number of rows.
    """
    size = math.prod(row)
    lengths = value.row_lengths() if batched else tf.size(value, out_type=tf.int64)
    if info.fixed:
        fits, counts = tf.logical_or(tf.equal(lengths, 0), tf.equal(lengths, size)), f"0 or {size}"
    else:
        fits, counts = tf.equal(lengths % size, 0), f"a multiple of {size}"
    tf.debugging.assert_equal(
        tf.reduce_all(fits),
        True,
        message=f"{_where(info)}: expected {counts} {info.wire} values per Example for shape "
        f"{info.shape_text}",
    )
    if not batched:
        return tf.reshape(value, [-1, *row])
    rows = tf.reshape(value.values, [-1, *row])
    return tf.RaggedTensor.from_row_splits(rows, value.row_splits // size, validate=False)


def _check_row_lengths(tf: Any, info: FeatureInfo, value: Any) -> None:
    """Raise unless each row-lengths partition of one Example's ragged ``value`` (or of the joined
    Examples of a batch) has non-negative lengths that add up to the rows below it."""
    node = value
    for key in info.companions:
        lengths = node.row_lengths()
        below = node.values
        rows = (
            below.nrows()
            if isinstance(below, tf.RaggedTensor)
            else tf.shape(below, out_type=tf.int64)[0]
        )
        fits = tf.logical_and(tf.reduce_all(lengths >= 0), tf.equal(tf.reduce_sum(lengths), rows))
        tf.debugging.assert_equal(
            fits,
            True,
            message=f"{_where(info)}: the row lengths in {key!r} do not fit the rows they "
            "partition",
        )
        node = below


def _check_each_record(tf: Any, info: FeatureInfo, parsed: Mapping[str, Any]) -> None:
    """Raise unless, in every Example of a batch, each row-lengths companion's lengths are
    non-negative and add up to the rows below them (the next companion's count, or the values'
    count over the inner size)."""
    inner = math.prod(d for d in info.shape if d is not None)
    counts = [parsed[_CHECK + key] for key in info.companions]
    below = [c.row_lengths() for c in counts[1:]]
    below.append(parsed[_CHECK + info.key].row_lengths())
    for i, (key, lengths) in enumerate(zip(info.companions, counts, strict=True)):
        sums = tf.reduce_sum(lengths, axis=1)
        if i == len(counts) - 1:
            sums = sums * inner
        fits = tf.logical_and(
            tf.reduce_all(lengths.values >= 0), tf.reduce_all(tf.equal(sums, below[i]))
        )
        tf.debugging.assert_equal(
            fits,
            True,
            message=f"{_where(info)}: in some Example the row lengths in {key!r} do not fit the"
            " rows they partition",
        )


def _steps(
    tf: Any, info: FeatureInfo, value: Any, *, batched: bool, lengths: Mapping[str, Any] | None
) -> Any:
    """A parsed feature list as ``[T, *shape]`` (a batch: ``[batch, (T), *shape]``)."""
    if info.fixed:
        if not batched:
            return value
        if lengths is None:
            raise TfrGenError(
                f"{_where(info)}: a batch of fixed-shape feature lists needs the step counts"
            )
        return tf.RaggedTensor.from_tensor(value, lengths=lengths[info.key])
    row = tuple(d for d in info.shape[1:] if d is not None)
    size = math.prod(row)
    if not row:
        return value
    steps = value.values if batched else value
    tf.debugging.assert_equal(
        tf.reduce_all(tf.equal(steps.row_lengths() % size, 0)),
        True,
        message=f"{_where(info)}: expected a multiple of {size} {info.wire} values per step for "
        f"step shape {info.shape_text}",
    )
    rows = tf.RaggedTensor.from_row_splits(
        tf.reshape(steps.values, [-1, *row]), steps.row_splits // size, validate=False
    )
    return value.with_values(rows) if batched else rows


def _raw(tf: Any, info: FeatureInfo, parsed: Mapping[str, Any], *, batched: bool) -> Any:
    """A raw feature's bytes (and stored shape), checked and decoded to the declared dtype and
    shape."""
    dtype = DTYPES[info.dtype]
    rank, where = len(info.shape), _where(info)
    data = parsed[info.key]
    counts = None
    if info.optional:
        blobs = data.values if batched else data
        counts = (
            data.row_lengths() if batched else tf.reshape(tf.size(data, out_type=tf.int64), [1])
        )
        tf.debugging.assert_less_equal(
            counts,
            tf.constant(1, tf.int64),
            message=f"{where}: expected 0 or 1 bytes_list values per Example",
        )
    else:
        blobs = data if batched else tf.reshape(data, [1])
    n = tf.size(blobs, out_type=tf.int64)
    itemsize = dtype.numpy.itemsize
    if info.fixed:
        expected = tf.constant(
            math.prod(d for d in info.shape if d is not None) * itemsize, tf.int64
        )
    else:
        shapes = _stored_shapes(tf, info, parsed, n, batched=batched)
        declared = tf.constant([-1 if d is None else d for d in info.shape], tf.int64)
        fits = tf.logical_and(shapes >= 0, tf.logical_or(declared < 0, tf.equal(shapes, declared)))
        tf.debugging.assert_equal(
            tf.reduce_all(fits),
            True,
            message=f"{where}: the shape in {info.companions[0]!r} does not fit the declared "
            f"shape {info.shape_text}",
        )
        expected = tf.reduce_prod(shapes, axis=1) * itemsize
    tf.debugging.assert_equal(
        tf.cast(tf.strings.length(blobs), tf.int64),
        expected,
        message=f"{where}: the byte count does not fit the shape ({itemsize} bytes per "
        f"{dtype.name} value)",
    )
    read = tf.as_dtype(_RAW_READ.get(dtype.name, dtype.name))
    values = tf.io.decode_raw(tf.strings.reduce_join(blobs), read, little_endian=True)
    if dtype.kind is Kind.BOOL:
        tf.debugging.assert_less_equal(
            values, tf.constant(1, tf.uint8), message=f"{where}: expected bytes 0 or 1"
        )
        values = tf.not_equal(values, 0)
    elif read.name != dtype.name:
        values = tf.bitcast(values, tf.as_dtype(dtype.name))
    if info.fixed:
        items = tf.reshape(values, [-1, *info.shape])
        if not batched:
            return items if info.optional else tf.reshape(items, info.shape)
    elif not batched:
        if not info.optional:
            return tf.reshape(values, shapes[0])
        empty = tf.constant([[d or 0 for d in info.shape]], tf.int64, shape=[1, rank])
        shape = tf.concat([shapes, empty], axis=0)[0]  # the stored shape, or zeros when absent
        return tf.reshape(values, tf.concat([tf.reshape(n, [1]), shape], axis=0))
    else:
        items = _raw_items(tf, info, values, shapes)
    return tf.RaggedTensor.from_row_lengths(items, counts) if counts is not None else items


def _images(tf: Any, info: FeatureInfo, parsed: Mapping[str, Any], *, batched: bool) -> Any:
    """Encoded images decoded with ``tf.io.decode_jpeg``/``decode_png``/``decode_image`` and checked against the
    declared shape: one image ``[h, w, c]``; a batch ``[N, h, w, c]`` (ragged when a dimension is unknown); an
    optional feature one level more (0 or 1 images per Example), as an optional raw tensor is."""
    where, shape = _where(info), info.shape
    channels = shape[2] or 0
    decode: Any = {
        "jpeg": lambda data: tf.io.decode_jpeg(data, channels=channels),
        "png": lambda data: tf.io.decode_png(data, channels=channels),
        "image": lambda data: tf.io.decode_image(data, channels=channels, expand_animations=False),
    }[info.encoding]

    def one(data: Any) -> Any:
        image = decode(data)
        declared = tf.constant([-1 if d is None else d for d in shape], tf.int32)
        found = tf.shape(image, out_type=tf.int32)
        tf.debugging.assert_equal(
            tf.reduce_all(tf.logical_or(declared < 0, tf.equal(found, declared))),
            True,
            message=f"{where}: the image's shape does not fit the declared shape {info.shape_text}",
        )
        return tf.ensure_shape(image, shape)

    data = parsed[info.key]
    counts = None
    if info.optional:
        blobs = data.values if batched else data
        counts = (
            data.row_lengths() if batched else tf.reshape(tf.size(data, out_type=tf.int64), [1])
        )
        tf.debugging.assert_less_equal(
            counts,
            tf.constant(1, tf.int64),
            message=f"{where}: expected 0 or 1 bytes_list values per Example",
        )
    elif not batched:
        return one(data)
    else:
        blobs = data
    if info.fixed:
        items = tf.map_fn(one, blobs, fn_output_signature=tf.TensorSpec(shape, tf.uint8))
    else:
        rank = max(1, max(i for i, d in enumerate(shape) if d is None))
        items = tf.map_fn(
            lambda data: tf.RaggedTensor.from_tensor(one(data), ragged_rank=rank),
            blobs,
            fn_output_signature=tf.RaggedTensorSpec(list(shape), tf.uint8, ragged_rank=rank),
        )
    if counts is None:
        return items
    if not batched:
        return items if info.fixed else items.to_tensor()
    return tf.RaggedTensor.from_row_lengths(items, counts)


def _stored_shapes(
    tf: Any, info: FeatureInfo, parsed: Mapping[str, Any], n: Any, *, batched: bool
) -> Any:
    """The shapes ``[N, rank]`` (int64) of a raw feature's ``n`` values, from its companions."""
    rank, where, layout = len(info.shape), _where(info), info.shape_from
    if layout is not None and layout.per_dim:
        columns = []
        for key in layout.keys:
            stored = parsed[key]
            flat = stored.values if info.optional and batched else stored
            columns.append(tf.reshape(flat, [-1]))
            tf.debugging.assert_equal(
                tf.size(columns[-1], out_type=tf.int64),
                n,
                message=f"{where}: expected 1 int64_list value in {key!r} with each value",
            )
        found = iter(columns)
        return tf.stack(
            [
                next(found) if d is None else tf.fill([n], tf.constant(d, tf.int64))
                for d in info.shape
            ],
            axis=1,
        )
    name = info.companions[0]
    stored = parsed[name]
    flat = stored.values if info.optional and batched else stored
    if layout is not None and layout.encoding == "raw":
        dims = DTYPES[layout.dtype]
        itemsize = dims.numpy.itemsize
        blobs = tf.reshape(flat, [-1])
        tf.debugging.assert_equal(
            tf.cast(tf.strings.length(blobs), tf.int64),
            tf.fill(tf.shape(blobs, out_type=tf.int64), tf.constant(rank * itemsize, tf.int64)),
            message=f"{where}: expected {rank * itemsize} bytes ({rank} {dims.name} values) in"
            f" {name!r}",
        )
        read = tf.as_dtype(_RAW_READ.get(dims.name, dims.name))
        values = tf.io.decode_raw(tf.strings.reduce_join(blobs), read, little_endian=True)
        if read.name != dims.name:
            values = tf.bitcast(values, tf.as_dtype(dims.name))
        return tf.reshape(tf.cast(values, tf.int64), [-1, rank])
    if info.optional:
        tf.debugging.assert_equal(
            tf.size(flat, out_type=tf.int64),
            n * rank,
            message=f"{where}: expected {rank} int64_list values in {name!r} with each value",
        )
        return tf.reshape(flat, [-1, rank])
    return stored if batched else tf.reshape(stored, [1, rank])


def _raw_items(tf: Any, info: FeatureInfo, values: Any, shapes: Any) -> Any:
    """The flat ``values`` of items of the (fully known) ``shapes`` ``[N, rank]``, as a ragged
    ``[N, ...]``."""
    last = max(i for i, d in enumerate(info.shape) if d is None)
    items = tf.reshape(values, [-1, *info.shape[last + 1 :]])
    for i in range(last, -1, -1):
        dim = info.shape[i]
        if dim is None:
            items = tf.RaggedTensor.from_row_lengths(
                items, tf.repeat(shapes[:, i], tf.reduce_prod(shapes[:, :i], axis=1))
            )
        else:
            items = tf.RaggedTensor.from_uniform_row_length(items, dim)
    return items


# --- parsing --------------------------------------------------------------------------------------


def _serialized(tf: Any, serialized: Any, what: str) -> Any:
    """``serialized`` as a scalar or 1-D string tensor."""
    try:
        tensor = tf.convert_to_tensor(serialized, dtype=tf.string)
    except (TypeError, ValueError) as exc:
        raise RecordError(
            f"expected serialized {what} (a string tensor), got {type(serialized).__name__}"
        ) from exc
    if tensor.shape.rank not in (0, 1):
        raise RecordError(
            f"expected a scalar or 1-D string tensor of serialized {what}, got shape {tensor.shape}"
        )
    return tensor


def tf_parse_example(
    serialized: Any, codecs: Iterable[TfCodec] | Mapping[str, TfCodec]
) -> dict[str, Any]:
    """Parse serialized Examples with TensorFlow: attribute name -> tensor (declared dtype, shape).

    ``serialized`` is a scalar string tensor (one Example, via ``tf.io.parse_single_example``) or a
    1-D one (a batch, via ``tf.io.parse_example``). ``codecs`` are a record's feature codecs, or a
    mapping from attribute name to codec.
    """
    tf = import_tensorflow("parsing Examples with TensorFlow")
    named = dict(codecs) if isinstance(codecs, Mapping) else {c.name: c for c in codecs}
    tensor = _serialized(tf, serialized, "Examples")
    spec = tf_feature_spec(named.values())
    batched = tensor.shape.rank == 1
    if batched:
        parsed = tf.io.parse_example(tensor, spec | record_check_specs(named.values()))
    else:
        parsed = tf.io.parse_single_example(tensor, spec)
    return {name: post_process(c.info(), parsed, batched=batched) for name, c in named.items()}


def tf_parse_sequence_example(
    serialized: Any, context_codecs: Iterable[TfCodec], sequence_codecs: Iterable[TfCodec]
) -> dict[str, Any]:
    """Parse serialized SequenceExamples with TensorFlow: attribute name -> tensor (declared dtype).

    ``serialized`` is a scalar string tensor (one record, via
    ``tf.io.parse_single_sequence_example``) or a 1-D one (a batch, via
    ``tf.io.parse_sequence_example``). Context features come first, as with ``tf_parse_example``;
    feature lists give ``[T, *shape]`` (a batch: ``[batch, (T), *shape]``).
    """
    tf = import_tensorflow("parsing SequenceExamples with TensorFlow")
    tensor = _serialized(tf, serialized, "SequenceExamples")
    context = {c.name: c for c in context_codecs}
    sequence = {c.name: c for c in sequence_codecs}
    if not context and not sequence:
        return {}
    context_spec = tf_feature_spec(context.values()) or None
    sequence_spec = tf_feature_spec(sequence.values()) or None
    batched = tensor.shape.rank == 1
    lengths = None
    if batched:
        if context_spec is not None:
            context_spec |= record_check_specs(context.values())
        parsed_context, parsed_lists, lengths = tf.io.parse_sequence_example(
            tensor, context_features=context_spec, sequence_features=sequence_spec
        )
    else:
        parsed_context, parsed_lists = tf.io.parse_single_sequence_example(
            tensor, context_features=context_spec, sequence_features=sequence_spec
        )
    out = {
        name: post_process(c.info(), parsed_context, batched=batched) for name, c in context.items()
    }
    out.update(
        {
            name: post_process(c.info(), parsed_lists, batched=batched, lengths=lengths)
            for name, c in sequence.items()
        }
    )
    return out
