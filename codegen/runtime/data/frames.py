"""A lazy polars source over TFRecord files (``Record.scan_polars``): projection pushdown and row limits.

polars asks the source for some columns, a filter and at most some rows; the source decodes only the features of
those columns (a :class:`~codegen.runtime.codec.batch.BatchCodec` over their codecs: the other keys are never
decoded), a batch of records at a time, hands each batch to polars through Arrow (numbers not copied), and stops
reading once it has produced the rows asked for. Filters are applied by polars to each batch.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from codegen.errors import TfrGenError
from codegen.runtime.codec.arrow import arrow_schema, to_arrow
from codegen.runtime.codec.batch import BatchCodec
from codegen.runtime.codec.plan import example_decoder
from codegen.runtime.data.dataset import Dataset, Files
from codegen.runtime.extras import optional_module

if TYPE_CHECKING:
    from codegen.runtime.record import RecordMeta

__all__ = ["scan_polars"]


def scan_polars(meta: RecordMeta, files: Files, *, batch_size: int = 65536) -> Any:
    """A ``polars.LazyFrame`` of the records of ``files`` (paths or globs, read in sorted order), one column per
    attribute as ``Batch.to_polars`` gives them."""
    polars = optional_module("polars", f"{meta.name}.scan_polars")
    plugins = optional_module("polars.io.plugins", f"{meta.name}.scan_polars")
    if type(batch_size) is not int or batch_size < 1:
        raise TfrGenError(
            f"{meta.name}.scan_polars: batch_size must be an int >= 1, got {batch_size!r}"
        )
    full = arrow_schema(meta.arrow)
    schema = polars.from_arrow(full.empty_table()).schema

    def source(
        with_columns: list[str] | None, predicate: Any, n_rows: int | None, hint: int | None
    ) -> Iterator[Any]:
        del hint  # batches follow batch_size, which sizes the reads too
        names = list(meta.names) if with_columns is None else list(with_columns)
        unknown = [name for name in names if name not in meta.names]
        if unknown:
            raise TfrGenError(
                f"{meta.name}.scan_polars: no attribute {', '.join(map(repr, unknown))}"
            )
        features = [c for c in meta.features if c.name in names]
        sequence = None if meta.sequence is None else [c for c in meta.sequence if c.name in names]
        codec = BatchCodec(meta.name, features, sequence)
        one = example_decoder(meta.name, features, sequence)
        order = [c.name for c in (*features, *(sequence or ()))]
        forms = {form.name: form for form in meta.arrow.forms}
        projected = replace(meta.arrow, forms=tuple(forms[name] for name in order))
        left = n_rows
        if left == 0:
            return
        dataset: Dataset[tuple[Any, ...]] = Dataset(files, one, codec.decode, batch_size=batch_size)
        for columns in dataset:
            frame = polars.from_arrow(to_arrow(projected, columns))
            if not isinstance(frame, polars.DataFrame):
                frame = frame.to_frame()
            frame = frame.select(names)
            if predicate is not None:
                frame = frame.filter(predicate)
            if left is not None:
                frame = frame.head(left)
                left -= frame.height
            yield frame
            if left is not None and left <= 0:
                return

    return plugins.register_io_source(
        source, schema=schema, explain_name="tfr-gen", explain_detail=meta.name
    )
