"""The benchmark suite: a quick run reports every contender, and its data agrees with protobuf."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from codegen.runtime import FeatureInfo, FeatureSpec, read_tfrecord
from codegen.runtime.codec import wire
from codegen.runtime.data.dataset import Dataset
from support.paths import ROOT
from support.processes import PYTHON


@pytest.fixture
def bench(monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    """The ``benchmarks`` package, importable from the repository root."""
    monkeypatch.syspath_prepend(str(ROOT))
    import benchmarks

    yield benchmarks


def _info(name: str, dtype: str, wire_list: str, shape: tuple[int | None, ...]) -> FeatureInfo:
    fixed = None not in shape
    return FeatureInfo(name, name, dtype, wire_list, shape, fixed, None, False)


def test_quick_run_reports_every_contender(tf: Any, bench: ModuleType, tmp_path: Path) -> None:
    from benchmarks.contenders import (
        NAMES,
        TF_IMAGE_PIPELINE,
        TFRGEN_DATALOADER,
        TFRGEN_DATASET,
        TFRGEN_DATASET_SHARDS,
        TFRGEN_DATASET_THREADS,
        TFRGEN_DECODE_BATCH,
        TFRGEN_RESUME,
        VAHIDK_READ,
    )
    from benchmarks.objectstore import S3_DATASET, S3_RAW
    from benchmarks.workloads import BY_NAME, Skip, load

    out_json, out_md = tmp_path / "bench.json", tmp_path / "bench.md"
    # ``python -m benchmarks`` with the repository root after the installed codegen on sys.path
    run_benchmarks = (
        "import runpy, sys; sys.path.append(sys.argv.pop(1)); "
        "runpy.run_module('benchmarks', run_name='__main__', alter_sys=True)"
    )
    command = [*PYTHON, "-c", run_benchmarks, str(ROOT)]
    command += ["--quick", "--workloads", "customer,sequence"]
    command += ["--json", str(out_json), "--markdown", str(out_md)]
    command += ["--data-dir", str(tmp_path / "data")]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    table = done.stdout
    for name in NAMES:
        assert f"    {name}  " in table, f"no row for {name!r} in:\n{table}"
    report = json.loads(out_json.read_text())
    assert [w["name"] for w in report["workloads"]] == ["customer", "sequence"]
    assert [w["records"] for w in report["workloads"]] == [300, 100]
    vahidk_installed = importlib.util.find_spec("tfrecord") is not None
    for workload in report["workloads"]:
        where = workload["name"]
        assert f"{where}: verified: same messages and values as protobuf" in done.stderr
        for line in (f"{where}: tfr-gen encode", f"{where}: tfr-gen decode"):
            assert f"PASS  {line}" in table or f"FAIL  {line}" in table
        assert workload["total_bytes"] > workload["records"] * 100
        cls = load(BY_NAME[where])
        assert not isinstance(cls, Skip), cls
        columnar = hasattr(cls, "decode_batch")
        rows = {row["contender"]: row for row in workload["rows"]}
        assert list(rows) == list(NAMES)
        for name, row in rows.items():
            if name == VAHIDK_READ and not vahidk_installed:
                assert "not installed" in row["skipped"]
                continue
            if name == TF_IMAGE_PIPELINE:  # these workloads hold no encoded images
                assert row["skipped"] == "no encoded images"
                continue
            if (
                name
                in (
                    TFRGEN_DECODE_BATCH,
                    TFRGEN_DATASET,
                    TFRGEN_DATASET_SHARDS,
                    TFRGEN_DATASET_THREADS,
                    TFRGEN_DATALOADER,
                    TFRGEN_RESUME,
                    S3_DATASET,
                    S3_RAW,
                )
                and not columnar
            ):
                assert "has no decode_batch" in row["skipped"]
                continue
            assert row["skipped"] is None, (where, row)
            assert len(row["seconds"]) == 2 and row["records_per_s"] > 0 and row["ratio"] > 0
        assert f"| {where} | tfr-gen decode |" in out_md.read_text()
    assert [bar["workload"] for bar in report["bars"]] == ["customer"] * 16 + ["sequence"] * 16
    for bar in report["bars"]:
        assert bar["verdict"] in ("PASS", "FAIL") or bar["baseline"] == VAHIDK_READ, bar


@pytest.mark.parametrize(
    "name", ["customer", "mnist", "mnist_uniform", "embedding", "image", "jpeg", "sequence"]
)
def test_decode_of_benchmark_data_equals_protobuf_values(
    bench: ModuleType, tmp_path: Path, name: str
) -> None:
    from benchmarks.prepare import prepare, record_values, same_value, verify
    from benchmarks.workloads import BY_NAME, Skip, load

    workload = BY_NAME[name]
    cls = load(workload)
    assert not isinstance(cls, Skip), cls
    prepared = prepare(workload, cls, 40, tmp_path, seed=3)
    pb = prepared.protobuf
    for values, data in zip(prepared.values, prepared.serialized, strict=True):
        ours = record_values(cls.decode(data), prepared.spec)
        theirs = pb.access(pb.parse(data))
        assert ours.keys() == theirs.keys() == values.keys()
        for key in ours:
            assert same_value(ours[key], theirs[key]), (key, ours[key], theirs[key])
    assert verify(prepared).problems == []


def test_verify_reports_records_whose_bytes_do_not_match(bench: ModuleType, tmp_path: Path) -> None:
    from benchmarks.prepare import prepare, verify
    from benchmarks.workloads import BY_NAME, Skip, load

    workload = BY_NAME["customer"]
    cls = load(workload)
    assert not isinstance(cls, Skip), cls
    prepared = prepare(workload, cls, 3, tmp_path, seed=0)
    swapped = [prepared.serialized[1], prepared.serialized[0], prepared.serialized[2]]
    problems = verify(dataclasses.replace(prepared, serialized=swapped)).problems
    assert [p.split(":")[0] for p in problems] == ["customer record 0"] * 2 + [
        "customer record 1"
    ] * 2
    assert "another message than protobuf builds" in problems[0]


def test_same_value_tells_dtype_shape_and_type_apart(bench: ModuleType) -> None:
    from benchmarks.prepare import same_value

    a = np.arange(4, dtype=np.int64)
    assert same_value(a, a.copy())
    assert not same_value(a, a.astype(np.int32))
    assert not same_value(a, a.reshape(2, 2))
    assert not same_value(a, a.tolist())
    assert not same_value(1, 1.0)
    assert same_value(["a", "b"], ["a", "b"]) and not same_value(["a"], ["a", "b"])


def test_missing_or_mismatched_modules_are_skipped(bench: ModuleType) -> None:
    from benchmarks.workloads import BY_NAME, Skip, load, mnist_values

    customer = BY_NAME["customer"]
    missing = load(dataclasses.replace(customer, module="no_such_generated_module"))
    assert missing == Skip("generated/no_such_generated_module.py does not exist yet")
    no_class = load(dataclasses.replace(customer, record="Nope"))
    assert no_class == Skip("generated/customer.py has no record class Nope")
    mismatched = load(dataclasses.replace(customer, make_values=mnist_values))
    assert (
        isinstance(mismatched, Skip)
        and "the workload builds ['image', 'label']" in mismatched.reason
    )


def test_protobuf_sequence_example_matches_the_wire_codec(bench: ModuleType) -> None:
    from benchmarks.protobuf_path import ProtobufPath

    spec = FeatureSpec(
        "Tagged",
        (
            _info("length", "int64", "int64_list", ()),
            _info("tokens", "int64", "int64_list", ()),
            _info("words", "string", "bytes_list", ()),
        ),
    )
    pb = ProtobufPath(spec, sequence=("tokens", "words"))
    words = ["a", "bb", "é"]
    values = {"length": 3, "tokens": np.array([5, 300, 7], np.int64), "words": words}
    expected = wire.sequence_example(
        [wire.map_entry(wire.key_field("length"), wire.int64_scalar_feature(3))],
        [
            wire.feature_list_entry(
                wire.key_field("tokens"), [wire.int64_scalar_feature(t) for t in (5, 300, 7)]
            ),
            wire.feature_list_entry(
                wire.key_field("words"),
                [wire.bytes_scalar_feature(w.encode()) for w in words],
            ),
        ],
    )
    data = pb.build(values).SerializeToString(deterministic=True)
    assert data == expected
    back = pb.access(pb.parse(data))
    assert back["length"] == 3 and back["words"] == ["a", "bb", "é"]
    assert back["tokens"].dtype == np.int64 and back["tokens"].tolist() == [5, 300, 7]


def test_protobuf_raw_tensors_round_trip_with_their_shape(bench: ModuleType) -> None:
    from benchmarks.protobuf_path import ProtobufPath

    fixed = _info("pixels", "uint8", "bytes_list", (2, 3))
    ragged = _info("heights", "float16", "bytes_list", (None, 2))
    pb = ProtobufPath(FeatureSpec("Raw", (fixed, ragged)))
    values: dict[str, np.ndarray[Any, Any]] = {
        "pixels": np.arange(6, dtype=np.uint8).reshape(2, 3),
        "heights": np.array([[1.5, -2.0], [0.25, 8.0], [3.0, 4.0]], np.float16),
    }
    message = pb.build(values)
    assert message.features.feature["pixels"].bytes_list.value == [bytes(range(6))]
    assert list(message.features.feature["heights/shape"].int64_list.value) == [3, 2]
    back = pb.access(pb.parse(message.SerializeToString()))
    for key, array in values.items():
        assert back[key].dtype == array.dtype and np.array_equal(back[key], array)


def test_contenders_select_rows_with_their_baselines_and_bars(bench: ModuleType) -> None:
    from benchmarks.contenders import (
        PROTOBUF_BUILD,
        TFRGEN_CONSTRUCT_ENCODE,
        TFRGEN_DECODE_BATCH,
        TFRGEN_ENCODE,
        TFRGEN_ENCODE_BATCH,
        TFRGEN_TO_ARROW,
        Contender,
        Group,
    )
    from benchmarks.objectstore import S3_DATASET, S3_RAW
    from benchmarks.suite import _chosen
    from benchmarks.workloads import BY_NAME

    groups: dict[str, Group] = {
        TFRGEN_ENCODE: "encode",
        TFRGEN_CONSTRUCT_ENCODE: "encode",
        TFRGEN_ENCODE_BATCH: "encode",
        PROTOBUF_BUILD: "encode",
        TFRGEN_DECODE_BATCH: "decode",
        TFRGEN_TO_ARROW: "decode",
        "protobuf parse+access": "decode",
    }
    entries = [Contender(name, group, None) for name, group in groups.items()]
    chosen = [c.name for c in _chosen(entries, ["encode_batch"], BY_NAME["mnist"])]
    assert chosen == [TFRGEN_ENCODE, TFRGEN_CONSTRUCT_ENCODE, TFRGEN_ENCODE_BATCH, PROTOBUF_BUILD]
    chosen = [c.name for c in _chosen(entries, ["to_arrow"], BY_NAME["mnist"])]
    assert chosen == [TFRGEN_DECODE_BATCH, TFRGEN_TO_ARROW, "protobuf parse+access"]
    s3_rows = [Contender(S3_DATASET, "s3 read", None), Contender(S3_RAW, "s3 read", None)]
    assert [c.name for c in _chosen(entries + s3_rows, ["S3"], BY_NAME["mnist"])] == [
        S3_DATASET,
        S3_RAW,
    ]


def test_ratios_and_bars_come_from_the_median_or_fastest_runs(bench: ModuleType) -> None:
    from benchmarks.bars import evaluate
    from benchmarks.contenders import (
        CLI_CONVERT,
        GZIP_READ,
        GZIP_WRITE,
        PROTOBUF_BUILD,
        PROTOBUF_PARSE,
        STDLIB_GZIP_READ,
        STDLIB_GZIP_WRITE,
        TF_BEST_PIPELINE,
        TF_PIPELINE,
        TF_PYARROW_PARQUET,
        TF_WRITE,
        TFRGEN_CONSTRUCT_ENCODE,
        TFRGEN_DATALOADER,
        TFRGEN_DATASET,
        TFRGEN_DATASET_SHARDS,
        TFRGEN_DATASET_THREADS,
        TFRGEN_DECODE,
        TFRGEN_DECODE_BATCH,
        TFRGEN_ENCODE,
        TFRGEN_ENCODE_BATCH,
        TFRGEN_TO_ARROW,
        TFRGEN_WRITE,
        VAHIDK_READ,
    )
    from benchmarks.objectstore import S3_DATASET, S3_RAW
    from benchmarks.report import RunReport, format_markdown, format_text
    from benchmarks.results import Row, WorkloadResult

    rows: tuple[Row, ...] = (
        Row("encode", TFRGEN_ENCODE, (1.0, 9.0, 2.0)),
        Row("encode", PROTOBUF_BUILD, (4.0, 4.0, 5.0)),
        Row("decode", TFRGEN_DECODE, (2.0, 2.0, 2.0)),
        Row("decode", PROTOBUF_PARSE, (3.0, 3.0, 3.0)),
        Row("read", "vahidk tfrecord_loader", skipped="not installed here"),
    )
    result = WorkloadResult("customer", "mixed", "Customer", 1000, 2_000_000, rows, 1000)
    assert result.ratio(rows[0]) == 2.0 and result.records_per_s(rows[0]) == 500.0
    assert result.mb_per_s(rows[1]) == 0.5 and result.ratio(rows[4]) is None
    bars = evaluate([result])
    assert [(b.contender, b.baseline, b.ratio, b.verdict) for b in bars] == [
        (TFRGEN_ENCODE, PROTOBUF_BUILD, 2.0, "PASS"),
        (TFRGEN_DECODE, PROTOBUF_PARSE, 1.5, "PASS"),
        (TFRGEN_DECODE_BATCH, TF_PIPELINE, None, "SKIP"),
        (TFRGEN_DATASET, TF_PIPELINE, None, "SKIP"),
        (TFRGEN_DATASET, VAHIDK_READ, None, "SKIP"),
        (TFRGEN_DATASET_THREADS, TF_BEST_PIPELINE, None, "SKIP"),
        (TFRGEN_DATASET_THREADS, TFRGEN_DATASET_SHARDS, None, "SKIP"),
        (TFRGEN_DATALOADER, TFRGEN_DATASET_SHARDS, None, "SKIP"),
        (TFRGEN_WRITE, TF_WRITE, None, "SKIP"),
        (GZIP_WRITE, STDLIB_GZIP_WRITE, None, "SKIP"),
        (GZIP_READ, STDLIB_GZIP_READ, None, "SKIP"),
        (S3_DATASET, S3_RAW, None, "SKIP"),
        (TFRGEN_TO_ARROW, TFRGEN_DECODE_BATCH, None, "SKIP"),
        (TFRGEN_ENCODE_BATCH, TFRGEN_CONSTRUCT_ENCODE, None, "SKIP"),
        (TFRGEN_ENCODE_BATCH, TFRGEN_ENCODE, None, "SKIP"),
        (CLI_CONVERT, TF_PYARROW_PARQUET, None, "SKIP"),
    ]
    rows += (
        Row("read", TF_PIPELINE, (4.0, 4.0, 4.0)),
        Row("read", TFRGEN_DATASET, (5.0, 5.0, 5.0)),
        Row("decode", TFRGEN_DECODE_BATCH, (8.0, 8.0, 8.0)),
    )
    result = WorkloadResult("customer", "mixed", "Customer", 1000, 2_000_000, rows, 1000)
    verdicts = {(b.contender, b.baseline): (b.ratio, b.verdict) for b in evaluate([result])}
    assert verdicts[TFRGEN_DECODE_BATCH, TF_PIPELINE] == (0.5, "PASS")  # customer: bar 0.5x
    assert verdicts[TFRGEN_DATASET, TF_PIPELINE] == (0.8, "PASS")
    assert verdicts[TFRGEN_DATASET, VAHIDK_READ] == (None, "SKIP")
    rows += (
        Row("decode", TFRGEN_TO_ARROW, (8.5, 12.0, 12.0)),
        Row("encode", TFRGEN_ENCODE_BATCH, (0.5, 0.5, 0.5)),
        Row("encode", TFRGEN_CONSTRUCT_ENCODE, (2.0, 2.0, 2.0)),
        Row("convert", CLI_CONVERT, (1.0, 1.0, 1.0)),
        Row("convert", TF_PYARROW_PARQUET, (3.0, 3.0, 3.0)),
    )
    result = WorkloadResult("customer", "mixed", "Customer", 1000, 2_000_000, rows, 1000)
    verdicts = {(b.contender, b.baseline): (b.ratio, b.verdict) for b in evaluate([result])}
    # within 10%, by the fastest runs: the medians (8 and 12) would say 50%
    assert verdicts[TFRGEN_TO_ARROW, TFRGEN_DECODE_BATCH] == (8.0 / 8.5, "PASS")
    assert "(fastest runs)" in next(
        str(b) for b in evaluate([result]) if b.contender == TFRGEN_TO_ARROW
    )
    assert verdicts[TFRGEN_ENCODE_BATCH, TFRGEN_CONSTRUCT_ENCODE] == (4.0, "FAIL")  # bar 5x
    assert verdicts[TFRGEN_ENCODE_BATCH, TFRGEN_ENCODE] == (4.0, "PASS")  # bar 2x
    assert verdicts[CLI_CONVERT, TF_PYARROW_PARQUET] == (3.0, "PASS")
    mnist = WorkloadResult("mnist", "pixels", "Digit", 1000, 2_000_000, rows, 1000)
    verdicts = {(b.contender, b.baseline): (b.ratio, b.verdict) for b in evaluate([mnist])}
    assert verdicts[TFRGEN_DECODE_BATCH, TF_PIPELINE] == (0.5, "FAIL")  # mnist: bar 1.0x
    skipped = WorkloadResult("sequence", "steps", "Sequence", 0, 0, (), skipped="no module")
    report = RunReport({"cpu": "test"}, {"mode": "test"}, (result, skipped), tuple(bars))
    text = format_text(report)
    assert "2.00x" in text and "skipped: not installed here" in text
    assert "skipped: sequence: no module" in text
    assert "PASS  customer: tfr-gen encode 2.00x protobuf build+serialize (bar >= 1.5x)" in text
    markdown = format_markdown(report)
    assert "| customer | protobuf build+serialize | 250 | 0.5 | baseline |" in markdown


def test_the_plot_draws_a_row_of_every_group(matplotlib: Any, tmp_path: Path) -> None:
    from benchmarks.contenders import GROUPS
    from benchmarks.report import RunReport, write_plot
    from benchmarks.results import Row, WorkloadResult

    rows = tuple(
        Row(group, f"contender of {group}", (1.0 + i, 2.0, 3.0)) for i, group in enumerate(GROUPS)
    )
    result = WorkloadResult("customer", "mixed", "Customer", 1000, 2_000_000, rows, 1000)
    path = tmp_path / "plot.png"
    write_plot(RunReport({"cpu": "test"}, {"mode": "test"}, (result,), ()), path)
    assert path.read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


def test_vahidk_descriptions_name_companions_and_feature_lists(
    bench: ModuleType, tmp_path: Path
) -> None:
    from benchmarks.contenders import vahidk_descriptions
    from benchmarks.prepare import prepare
    from benchmarks.workloads import BY_NAME, Skip, load

    def described(name: str) -> tuple[dict[str, str], dict[str, str] | None]:
        workload = BY_NAME[name]
        cls = load(workload)
        assert not isinstance(cls, Skip), cls
        return vahidk_descriptions(prepare(workload, cls, 2, tmp_path, seed=0))

    assert described("image") == ({"label": "int", "image": "byte", "image/shape": "int"}, None)
    assert described("sequence") == ({"length": "int"}, {"tokens": "int", "labels": "int"})


def test_tf_pipeline_decodes_raw_images_to_their_arrays(
    tf: Any, bench: ModuleType, tmp_path: Path
) -> None:
    from benchmarks.contenders import TF_PIPELINE, Environment, contenders
    from benchmarks.prepare import prepare
    from benchmarks.workloads import BY_NAME, Skip, load

    workload = BY_NAME["image"]
    cls = load(workload)
    assert not isinstance(cls, Skip), cls
    prepared = prepare(workload, cls, 5, tmp_path, seed=1)
    env = Environment(tf=tf, tf_missing="", vahidk_missing="not needed", scratch=tmp_path)
    (pipeline,) = [c for c in contenders(prepared, env) if c.name == TF_PIPELINE]
    assert pipeline.run is not None and pipeline.run().records == 5
    batch = next(iter(tf.data.TFRecordDataset(str(prepared.path)).batch(5)))
    images = cls.tf_parse(batch)["image"]
    for image, values in zip(images, prepared.values, strict=True):
        assert image.dtype == tf.uint8
        assert np.array_equal(image.numpy(), values["image"])


def test_report_scan_measures_speed_and_peak_memory(bench: ModuleType, tmp_path: Path) -> None:
    """``python -m benchmarks --report-scan GB``: one run over a file of customer records (tiny
    here), its MB/s and the peak memory of that run and of one over a 16 times smaller file."""
    from benchmarks.bars import report_scan_bars
    from benchmarks.report_scan import measure

    scan = measure(tmp_path, 0.016)
    assert scan.big_bytes >= 16_000_000 and scan.small_bytes >= 1_000_000
    assert scan.big_seconds > 0 and scan.mb_per_s > 0
    assert 10_000_000 < scan.small_peak and 10_000_000 < scan.big_peak
    assert list(tmp_path.glob("report*")) == []  # its files are removed
    speed, memory = report_scan_bars(scan)
    assert speed.split()[0] in ("PASS", "FAIL") and "report-scan" in speed
    assert memory.split()[0] in ("PASS", "FAIL") and "peak memory" in memory


def test_sharded_rows_read_epochs_of_at_least_the_epoch_bytes(
    bench: ModuleType, tmp_path: Path
) -> None:
    """An epoch of the sharded rows is the shards and then links to them under other names (every
    file is read, none deduplicated), and a run reports one pass: the records and a pass's time."""
    from benchmarks import contenders

    records = [bytes([i]) * 100 for i in range(10)]
    prepared: Any = dataclasses.make_dataclass(
        "P", ["workload", "serialized", "count", "total_bytes"]
    )(dataclasses.make_dataclass("W", ["name"])("w"), records, 10, 1000)
    env = contenders.Environment(None, "", None, tmp_path, epoch_bytes=2500)
    files, passes = contenders._epoch(prepared, env)
    assert passes == 3 and len(files) == len(set(files)) == 3 * contenders.SHARDS
    read = [r for f in files for r in read_tfrecord(f)]
    assert sorted(read) == sorted(records * 3)
    dataset: Dataset[bytes] = Dataset(files, bytes, None, batch_size=None)
    assert sum(1 for _ in dataset) == 30  # the loader reads each link as a file of its own
    run = contenders._passes(10, passes, lambda: 30)
    assert run().records == 10 and contenders._passes(10, passes, lambda: 29)().records == 29
    env = dataclasses.replace(env, epoch_bytes=0)
    assert contenders._epoch(prepared, env) == (files[: contenders.SHARDS], 1)
