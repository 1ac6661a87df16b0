"""Apache Beam transforms for schema-typed datasets (the ``tfr-gen[beam]`` extra).

The transforms write and read the same datasets as ``Record.write_dataset`` and
``Record.read_dataset`` -- shards ``<prefix>-00000-of-00008.tfrecord.gz`` plus the manifest that
names the writer's schema -- from a pipeline on any Beam runner::

    from codegen.beam import ReadDataset, WriteDataset

    result = customers | WriteDataset(Customer, "gs://bucket/customers", shards=8)
    result.dead_letter | ...  # DeadLetter(element, error) for every element that did not encode
    customers = pipeline | ReadDataset(Customer, "gs://bucket/customers")

* :class:`RecordCoder` / :func:`register_coder`: the Beam coder of a generated record class (its
  ``tf.train.Example`` bytes).
* :class:`EncodeRecords`: records or mappings of their fields -> ``.records`` (Example bytes) and
  ``.dead_letter`` (:class:`DeadLetter`).
* :class:`WriteDataset`: encodes, writes the shards with ``WriteToTFRecord``, counts each finished
  shard's records and writes the manifest last; its result has ``.manifest`` and ``.dead_letter``.
* :class:`ReadDataset`: checks the manifest and the schema when the pipeline is built, then reads
  and decodes every shard, checking its size and record count.

Importing this package without Beam installed raises :class:`~codegen.errors.MissingExtraError`.
"""

from __future__ import annotations

from codegen.errors import MissingExtraError

try:
    import apache_beam  # noqa: F401
except ImportError as exc:
    raise MissingExtraError(
        f"codegen.beam needs Apache Beam, which cannot be imported ({exc}); install the extra:"
        " pip install 'tfr-gen[beam]'"
    ) from exc

from codegen.beam.coder import RecordCoder, register_coder
from codegen.beam.encode import DEAD_LETTER, RECORDS, DeadLetter, EncodeRecords
from codegen.beam.read import ReadDataset
from codegen.beam.record import Record, schema_info
from codegen.beam.write import WriteDataset, WriteDatasetResult

__all__ = [
    "DEAD_LETTER",
    "RECORDS",
    "DeadLetter",
    "EncodeRecords",
    "ReadDataset",
    "Record",
    "RecordCoder",
    "WriteDataset",
    "WriteDatasetResult",
    "register_coder",
    "schema_info",
]
