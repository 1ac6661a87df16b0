"""The Beam pipelines of tests/beam/test_beam.py, run with the Beam environment's Python.

``python tests/support/beam_pipelines.py SCENARIO WORKDIR [BEAM OPTION ...]`` runs one scenario in
WORKDIR and prints its report as one line of JSON; tests/beam/test_beam.py checks the report
and the files the pipeline wrote (in its own environment, with protobuf 7 and TensorFlow).
``generated/`` and the repository root must be on ``PYTHONPATH`` (the pipeline's workers import
``customer`` and ``codegen``). Beam is imported inside the scenarios: test_beam.py imports
:func:`customer_for` from here without Beam.
"""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

Customer: Any = importlib.import_module("customer").Customer  # generated/customer.py

RECORDS_PER_CHUNK = 2_000
"""Records the write pipeline builds per element (the elements spread over the workers)."""


def customer_for(index: int) -> Any:
    """The customer record with id ``index`` (its ``age``; every other field derives from it)."""
    return Customer(
        age=index,
        movie=[f"movie {index}", f"sequel {index % 7}"][: 1 + index % 2],
        movie_ratings=[float(index % 10)] * (index % 3),
        suggestion=f"suggestion {index}",
        suggestion_purchased=float(index % 2),
        purchase_price=float(index % 50) / 4,
    )


def _customers_from(start: int, stop: int) -> Iterator[Any]:
    return (customer_for(index) for index in range(start, stop))


def _write_json(value: object, path: str) -> None:
    Path(path).write_text(json.dumps(value), encoding="utf-8")


def write(workdir: Path, options: list[str], count: int, shards: int) -> dict[str, Any]:
    """Writes customers 0 .. count-1 as a gzip dataset of ``shards`` shards."""
    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions

    from codegen.beam import WriteDataset

    starts = list(range(0, count, RECORDS_PER_CHUNK))
    with beam.Pipeline(options=PipelineOptions(options)) as pipeline:
        result = (
            pipeline
            | "Chunks" >> beam.Create(starts)
            | "Spread" >> beam.Reshuffle()
            | "Customers"
            >> beam.FlatMap(
                lambda start: _customers_from(start, min(start + RECORDS_PER_CHUNK, count))
            )
            | "Write" >> WriteDataset(Customer, str(workdir / "dataset"), shards=shards)
        )
        dead = result.dead_letter | "CountDead" >> beam.combiners.Count.Globally()
        _ = result.manifest | "Report" >> beam.Map(
            lambda manifest, dead_count: _write_json(
                {"record_count": manifest.record_count, "dead_letters": dead_count},
                str(workdir / "report.json"),
            ),
            beam.pvalue.AsSingleton(dead),
        )
    report: dict[str, Any] = json.loads((workdir / "report.json").read_text(encoding="utf-8"))
    return report


def dead_letter(workdir: Path, options: list[str]) -> dict[str, Any]:
    """Writes good and bad elements: records and field mappings; the bad ones come back."""
    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions

    from codegen.beam import DeadLetter, WriteDataset

    broken = customer_for(3)
    broken.age = "three"  # set after construction: only encoding finds it
    good = customer_for(2)
    elements: list[object] = [
        customer_for(0),
        {
            "age": 1,
            "movie": ["Alien"],
            "movie_ratings": [8.5],
            "suggestion": "Aliens",
            "suggestion_purchased": 1.0,
        },
        good,
        broken,
        {
            "age": "forty",
            "movie": [],
            "movie_ratings": [],
            "suggestion": "x",
            "suggestion_purchased": 0.0,
        },
        {"age": 5, "movie": [], "movie_ratings": [], "suggestion": "x"},
        {
            "age": 6,
            "movie": [],
            "movie_ratings": [],
            "suggestion": "x",
            "suggestion_purchased": 0.0,
            "rating": 1,
        },
        7,
    ]

    def describe(letter: DeadLetter) -> str:
        element = letter.element
        shown = element.age if isinstance(element, Customer) else element
        return json.dumps({"element": repr(shown), "error": letter.error})

    with beam.Pipeline(options=PipelineOptions(options)) as pipeline:
        result = (
            pipeline
            | "Elements" >> beam.Create(elements)
            | "Write" >> WriteDataset(Customer, str(workdir / "dataset"), shards=2)
        )
        _ = (
            result.dead_letter
            | "Describe" >> beam.Map(describe)
            | "Collect" >> beam.combiners.ToList()
            | "Save" >> beam.Map(_write_json, str(workdir / "dead_letter.json"))
        )
    letters = json.loads((workdir / "dead_letter.json").read_text(encoding="utf-8"))
    return {"dead_letter": sorted((json.loads(letter) for letter in letters), key=str)}


def read(workdir: Path, options: list[str], source: str) -> dict[str, Any]:
    """Reads ``source`` (a directory or a glob of manifests) with ``ReadDataset(Customer)``."""
    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions

    from codegen.beam import ReadDataset, RecordCoder

    coder = RecordCoder(Customer)
    sample = customer_for(11)
    with beam.Pipeline(options=PipelineOptions(options)) as pipeline:
        records = pipeline | "Read" >> ReadDataset(Customer, source)
        output_coder = repr(beam.coders.registry.get_coder(records.element_type))
        _ = (
            records
            | "Check" >> beam.Map(lambda record: [record.age, record == customer_for(record.age)])
            | "Collect" >> beam.combiners.ToList()
            | "Save" >> beam.Map(_write_json, str(workdir / "read.json"))
        )
    rows = json.loads((workdir / "read.json").read_text(encoding="utf-8"))
    return {
        "ages": sorted(age for age, _ in rows),
        "mismatched": [age for age, equal in rows if not equal],
        "output_coder": output_coder,
        "coder_round_trip": coder.decode(coder.encode(sample)) == sample,
        "coder_bytes_are_encode": coder.encode(sample) == sample.encode(),
        "coder_deterministic": coder.is_deterministic(),
    }


def read_as(workdir: Path, options: list[str], source: str, module_dir: str) -> dict[str, Any]:
    """Reads ``source`` as the ``Customer`` of ``module_dir/customer_next.py`` (which has a
    ``visits`` feature); a schema it cannot read is refused while the pipeline is built."""
    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions

    from codegen.beam import ReadDataset
    from codegen.errors import TfrGenError

    sys.path.insert(0, module_dir)
    reader = importlib.import_module("customer_next").Customer
    try:
        with beam.Pipeline(options=PipelineOptions(options)) as pipeline:
            _ = (
                pipeline
                | "Read" >> ReadDataset(reader, source)
                | "Fields" >> beam.Map(lambda record: [record.age, record.visits])
                | "Collect" >> beam.combiners.ToList()
                | "Save" >> beam.Map(_write_json, str(workdir / "read_as.json"))
            )
    except TfrGenError as exc:
        return {"error": type(exc).__name__, "message": str(exc), "records": []}
    records = json.loads((workdir / "read_as.json").read_text(encoding="utf-8"))
    return {"error": None, "message": "", "records": sorted(records)}


def overwrite(workdir: Path, options: list[str], count: int) -> dict[str, Any]:
    """Writes over the dataset in ``workdir/dataset``: refused first, then with ``overwrite``."""
    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions

    from codegen.beam import WriteDataset
    from codegen.errors import TfrGenError

    directory = str(workdir / "dataset")
    refused = ""
    try:
        with beam.Pipeline(options=PipelineOptions(options)) as pipeline:
            _ = pipeline | beam.Create([customer_for(0)]) | WriteDataset(Customer, directory)
    except TfrGenError as exc:
        refused = str(exc)
    with beam.Pipeline(options=PipelineOptions(options)) as pipeline:
        _ = (
            pipeline
            | "Customers" >> beam.Create([customer_for(1000 + index) for index in range(count)])
            | "Write" >> WriteDataset(Customer, directory, shards=2, overwrite=True)
        )
    return {"refused": refused}


def refusals(workdir: Path, options: list[str]) -> dict[str, str]:
    """The errors of transforms given bad arguments or bad datasets (in ``workdir``: ``empty/``,
    ``other/notes.txt``, ``resized/`` with a shard grown after writing, ``replaced/`` with a shard
    replaced by another of the same size, and ``miscounted/`` whose manifest lists one record more
    than its shard holds)."""
    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions

    from codegen.beam import ReadDataset, WriteDataset

    empty, other = str(workdir / "empty"), str(workdir / "other")
    builds: dict[str, Callable[[Any], object]] = {
        "not_a_record": lambda p: p | beam.Create([{}]) | WriteDataset(dict, empty),  # type: ignore[type-var]
        "no_shards": lambda p: p | beam.Create([]) | WriteDataset(Customer, empty, shards=0),
        "compression": lambda p: WriteDataset(Customer, empty, compression="bz2"),  # type: ignore[arg-type]
        "prefix": lambda p: WriteDataset(Customer, empty, prefix="a/b"),
        "no_manifest": lambda p: p | ReadDataset(Customer, empty),
        "glob_no_match": lambda p: p | ReadDataset(Customer, f"{empty}/*.manifest.json"),
        "glob_other_file": lambda p: p | ReadDataset(Customer, f"{other}/*"),
        "glob_and_prefix": lambda p: ReadDataset(Customer, f"{other}/*", prefix="customer"),
        "resized": lambda p: p | ReadDataset(Customer, str(workdir / "resized")),
        "replaced": lambda p: p | ReadDataset(Customer, str(workdir / "replaced")),
        "miscounted": lambda p: p | ReadDataset(Customer, str(workdir / "miscounted")),
    }
    errors: dict[str, str] = {}
    for name, build in builds.items():
        try:
            with beam.Pipeline(options=PipelineOptions(options)) as pipeline:
                build(pipeline)
        except Exception as exc:  # a TfrGenError, or the runner's error around one
            errors[name] = f"{type(exc).__name__}: {exc}"
        else:
            errors[name] = "no error"
    return errors


SCENARIOS: dict[str, Callable[..., dict[str, Any]]] = {
    "write": lambda workdir, options, count, shards: write(
        workdir, options, int(count), int(shards)
    ),
    "dead-letter": dead_letter,
    "read": read,
    "read-as": read_as,
    "overwrite": lambda workdir, options, count: overwrite(workdir, options, int(count)),
    "refusals": refusals,
}


def main(argv: list[str]) -> None:
    """``SCENARIO WORKDIR [ARGUMENT ...] [-- BEAM OPTION ...]``: runs it, prints its JSON report."""
    at = argv.index("--") if "--" in argv else len(argv)
    scenario, workdir, *arguments = argv[:at]
    report = SCENARIOS[scenario](Path(workdir), argv[at + 1 :], *arguments)
    print(json.dumps(report))


if __name__ == "__main__":
    main(sys.argv[1:])
