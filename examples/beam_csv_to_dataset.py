"""Convert a CSV of movie customers into a sharded, gzip, schema-typed dataset with Apache Beam.

Run from the repository root, with the ``beam`` extra installed (``pip install -e '.[beam]'``)::

    python examples/beam_csv_to_dataset.py \\
        --input examples/data/customers.csv --output /tmp/customers --shards 4

Each CSV row (columns ``age,movie,movie_ratings,suggestion,suggestion_purchased,purchase_price``;
lists separated by ``|``; an empty ``purchase_price`` takes the schema's default) becomes a
``Customer`` of ``generated/customer.py``. The dataset (``customer-0000N-of-00004.tfrecord.gz``
plus ``customer.manifest.json``) reads back with ``Customer.read_dataset(output)`` or with
TensorFlow. Rows that do not make a valid ``Customer`` are never dropped: each goes, with the
reason, to ``<output>/rejected-*.jsonl`` (the sample CSV has three).

Every other flag is a Beam pipeline option: the DirectRunner runs the pipeline here, and
``--runner=DataflowRunner``, ``FlinkRunner`` or ``SparkRunner`` with their options run it on a
cluster (docs/loading.md, "Scaling out with Apache Beam", lists them).
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from collections.abc import Iterator
from pathlib import Path

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions

from codegen.beam import DeadLetter, WriteDataset

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "generated"))

from customer import Customer  # noqa: E402  (generated)

COLUMNS = ("age", "movie", "movie_ratings", "suggestion", "suggestion_purchased", "purchase_price")
BAD_ROW = "bad_row"


def _number(text: str, kind: type[int] | type[float]) -> int | float | str:
    """``text`` as a number, or as it is, for ``Customer`` to reject with a message that names
    the field."""
    try:
        return kind(text)
    except ValueError:
        return text


def parse_row(line: str) -> Iterator[object]:
    """The ``Customer`` fields of one CSV line, or a :class:`DeadLetter` tagged ``bad_row``."""
    cells = next(csv.reader([line]))
    if len(cells) != len(COLUMNS):
        yield beam.pvalue.TaggedOutput(
            BAD_ROW,
            DeadLetter(
                line, f"expected {len(COLUMNS)} columns ({','.join(COLUMNS)}), got {len(cells)}"
            ),
        )
        return
    row = dict(zip(COLUMNS, cells, strict=True))
    fields: dict[str, object] = {
        "age": _number(row["age"], int),
        "movie": row["movie"].split("|") if row["movie"] else [],
        "movie_ratings": [_number(r, float) for r in row["movie_ratings"].split("|") if r],
        "suggestion": row["suggestion"],
        "suggestion_purchased": _number(row["suggestion_purchased"], float),
    }
    if row["purchase_price"]:
        fields["purchase_price"] = _number(row["purchase_price"], float)
    yield fields


def rejected_line(letter: DeadLetter) -> str:
    """One line of ``rejected-*.jsonl``: the element and the reason it was rejected."""
    return json.dumps({"element": letter.element, "error": letter.error}, default=repr)


def main(argv: list[str] | None = None) -> None:
    """Parses the flags (the unknown ones are Beam's pipeline options) and runs the pipeline."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--input", required=True, help="CSV file (or glob) with a header line")
    parser.add_argument("--output", required=True, help="dataset directory (local, gs://, s3://)")
    parser.add_argument("--shards", type=int, default=None, help="default: the runner chooses")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing dataset")
    args, beam_args = parser.parse_known_args(argv)

    with beam.Pipeline(options=PipelineOptions(beam_args)) as pipeline:
        rows = (
            pipeline
            | "ReadCsv" >> beam.io.ReadFromText(args.input, skip_header_lines=1)
            | "ParseRows" >> beam.FlatMap(parse_row).with_outputs(BAD_ROW, main="fields")
        )
        result = rows.fields | "WriteDataset" >> WriteDataset(
            Customer, args.output, shards=args.shards, overwrite=args.overwrite
        )
        _ = (
            (rows.bad_row, result.dead_letter)
            | "Rejected" >> beam.Flatten()
            | "ToJson" >> beam.Map(rejected_line)
            | "WriteRejected"
            >> beam.io.WriteToText(
                FileSystems.join(args.output, "rejected"), file_name_suffix=".jsonl"
            )
        )
        _ = result.manifest | "Summary" >> beam.Map(
            lambda manifest: print(
                f"wrote {manifest.record_count} customers in {len(manifest.shards)} shard(s):"
                f" {manifest.path}"
            )
        )


if __name__ == "__main__":
    main()
