"""``tfr-gen report``: exact statistics of small known data, the JSON document the HTML page
embeds, drift between two datasets and its exit code, the schema's descriptions, anomalies and
thumbnails, sequence features, sampling, and the command's errors."""

from __future__ import annotations

import base64
import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from support.cli import run_cli
from support.modules import generated_module
from support.paths import SCHEMAS
from support.tutorial import tf_sentences, tf_write

EMBEDDED = re.compile(r'<script type="application/json" id="report-data">(.*?)</script>', re.S)


def embedded(page: str) -> Any:
    """The JSON document an HTML report embeds."""
    found = EMBEDDED.search(page)
    assert found is not None
    return json.loads(found.group(1))


def example(tf: Any, **features: Any) -> Any:
    built = {}
    for key, values in features.items():
        if all(isinstance(v, bytes) for v in values):
            built[key] = tf.train.Feature(bytes_list=tf.train.BytesList(value=values))
        elif all(isinstance(v, int) for v in values):
            built[key] = tf.train.Feature(int64_list=tf.train.Int64List(value=values))
        else:
            built[key] = tf.train.Feature(float_list=tf.train.FloatList(value=values))
    return tf.train.Example(features=tf.train.Features(feature=built))


def known(tf: Any) -> list[Any]:
    """Ten records: ``n`` 1..10, ``x`` with a NaN and an infinity, ``city`` with known counts,
    ``tags`` of 0 to 3 values, ``rare`` in two records."""
    cities = [b"oslo"] * 5 + [b"rome"] * 3 + [b"bern"] * 2
    records = []
    for i in range(10):
        features: dict[str, Any] = {
            "n": [i + 1],
            "x": [float("nan") if i == 3 else float("inf") if i == 4 else i * 0.5],
            "city": [cities[i]],
            "tags": [b"t%d" % j for j in range(i % 4)],
        }
        if i in (2, 7):
            features["rare"] = [i, i]
        records.append(example(tf, **features))
    return records


def feature(document: Any, key: str) -> Any:
    (found,) = [f for f in document["features"] if f["key"] == key]
    return found


def test_statistics_of_known_data(tf: Any, tmp_path: Path) -> None:
    tf_write(tf, tmp_path / "known.tfrecord", known(tf))
    code, out, err = run_cli("report", "known.tfrecord", "--format", "json", cwd=tmp_path)
    assert (code, err) == (0, "")
    document = json.loads(out)
    assert (document["format"], document["version"]) == ("tfr-gen-report", 1)
    (dataset,) = document["datasets"]
    assert (dataset["records"], dataset["records_read"], dataset["sample"]) == (10, 10, None)
    assert [f["key"] for f in document["features"]] == ["city", "n", "rare", "tags", "x"]

    (n,) = feature(document, "n")["stats"]
    assert (n["records"], n["presence"], n["min"], n["max"], n["mean"]) == (10, 1.0, 1, 10, 5.5)
    numbers = n["numbers"]
    assert (numbers["count"], numbers["inf"], numbers["rank_error"]) == (10, 0, 0)
    quantiles = {q["fraction"]: q["value"] for q in numbers["quantiles"]}
    assert (quantiles[0.0], quantiles[0.25], quantiles[0.5], quantiles[0.9], quantiles[1.0]) == (
        1.0,
        3.0,
        5.0,
        9.0,
        10.0,
    )
    histogram = numbers["histogram"]
    assert len(histogram["counts"]) == 20 and sum(histogram["counts"]) == 10
    assert histogram["edges"][0] == 1.0 and histogram["edges"][-1] == 10.0
    exact, _ = np.histogram(np.arange(1, 11), bins=np.array(histogram["edges"]))
    assert histogram["counts"] == exact.tolist()
    assert n["value_counts"] == [{"values": 1, "features": 10}]

    (x,) = feature(document, "x")["stats"]
    assert (x["nan"], x["numbers"]["inf"], x["numbers"]["count"]) == (1, 1, 8)
    assert (x["min"], x["max"]) == (0.0, "Infinity")  # as `stats` gives them: NaN aside

    (city,) = feature(document, "city")["stats"]
    assert city["top_values"] == [
        {"value": "oslo", "count": 5},
        {"value": "rome", "count": 3},
        {"value": "bern", "count": 2},
    ]
    assert (city["distinct"], city["count_error"], city["utf8"]) == (3, 0, True)

    (tags,) = feature(document, "tags")["stats"]
    assert tags["value_counts"] == [
        {"values": 0, "features": 3},
        {"values": 1, "features": 3},
        {"values": 2, "features": 2},
        {"values": 3, "features": 2},
    ]
    (rare,) = feature(document, "rare")["stats"]
    assert (rare["records"], rare["presence"]) == (2, 0.2)
    assert rare["value_counts"] == [{"values": 2, "features": 2}]
    assert [feature(document, k)["drift"] for k in ("n", "city")] == [None, None]


def test_the_page_embeds_the_json_document(tf: Any, tmp_path: Path) -> None:
    tf_write(tf, tmp_path / "known.tfrecord", known(tf))
    tf_write(tf, tmp_path / "other.tfrecord", known(tf)[:6])
    args = ("report", "known.tfrecord", "--compare", "other.tfrecord")
    code, out, err = run_cli(*args, "--html", "page.html", "--format", "json", cwd=tmp_path)
    assert (code, err) == (0, "")
    page = (tmp_path / "page.html").read_text("utf-8")
    assert embedded(page) == json.loads(out)
    # Self-contained: no external resource of any kind.
    assert not re.search(r"""(src|href)=["']?(https?:|//)""", page)
    assert "<link" not in page and "@import" not in page
    code, out, err = run_cli(*args, "--html", "page.html", cwd=tmp_path)
    assert code == 0
    assert "wrote page.html" in err
    assert out.splitlines()[:3] == [
        "data: 10 records in 1 file",
        "compare: 6 records in 1 file",
        "features: 5",
    ]


def test_text_in_values_cannot_end_the_embedded_script(tf: Any, tmp_path: Path) -> None:
    tricky = b"</script><script>alert(1)</script>"
    tf_write(tf, tmp_path / "t.tfrecord", [example(tf, note=[tricky])])
    code, _, _ = run_cli("report", "t.tfrecord", "--html", "page.html", cwd=tmp_path)
    assert code == 0
    page = (tmp_path / "page.html").read_text("utf-8")
    assert page.count("</script>") == 2
    (stats,) = feature(embedded(page), "note")["stats"]
    assert stats["top_values"] == [{"value": tricky.decode(), "count": 1}]


def numeric_and_categorical(tf: Any, shift: float, cities: list[bytes]) -> list[Any]:
    rng = np.random.default_rng(5)
    return [
        example(tf, score=[float(v)], city=[cities[i % len(cities)]])
        for i, v in enumerate(rng.normal(shift, 1.0, size=400))
    ]


def test_identical_datasets_do_not_drift(tf: Any, tmp_path: Path) -> None:
    records = numeric_and_categorical(tf, 0.0, [b"a", b"b"])
    tf_write(tf, tmp_path / "train.tfrecord", records)
    tf_write(tf, tmp_path / "eval.tfrecord", records)
    code, out, err = run_cli(
        "report",
        "train.tfrecord",
        "--compare",
        "eval.tfrecord",
        "--max-drift",
        "0.01",
        "--format",
        "json",
        cwd=tmp_path,
    )
    assert (code, err) == (0, "")
    document = json.loads(out)
    drifts = {f["key"]: f["drift"] for f in document["features"]}
    assert drifts == {
        "city": {"measure": "l_infinity", "value": 0.0, "value_at": "a", "exceeded": False},
        "score": {"measure": "jensen_shannon", "value": 0.0, "value_at": None, "exceeded": False},
    }


def test_shifted_and_changed_distributions_drift(tf: Any, tmp_path: Path) -> None:
    tf_write(tf, tmp_path / "train.tfrecord", numeric_and_categorical(tf, 0.0, [b"a", b"b"]))
    tf_write(
        tf, tmp_path / "eval.tfrecord", numeric_and_categorical(tf, 3.0, [b"a", b"b", b"c", b"c"])
    )
    args = ("report", "train.tfrecord", "--compare", "eval.tfrecord")
    code, out, err = run_cli(*args, "--max-drift", "0.1", "--format", "json", cwd=tmp_path)
    assert code == 1
    assert err == "tfr-gen report: drift above 0.1 in 2 features: city, score\n"
    drifts = {f["key"]: f["drift"] for f in json.loads(out)["features"]}
    # a: 1/2 -> 1/4, b: 1/2 -> 1/4, c: 0 -> 1/2; the largest difference is c's.
    assert drifts["city"] == {
        "measure": "l_infinity",
        "value": 0.5,
        "value_at": "c",
        "exceeded": True,
    }
    assert drifts["score"]["measure"] == "jensen_shannon"
    assert 0.5 < drifts["score"]["value"] <= 1.0 and drifts["score"]["exceeded"]
    # Below the threshold: exit 0; without one: exit 0 and the drift in the text.
    code, out, _ = run_cli(*args, "--max-drift", "0.99", cwd=tmp_path)
    assert code == 0
    code, out, err = run_cli(*args, cwd=tmp_path)
    assert (code, err) == (0, "")
    assert "  city: L-infinity 0.5000" in out.splitlines()


def test_schema_descriptions_anomalies_and_thumbnails(tmp_path: Path) -> None:
    raw_image = generated_module("raw_image")
    rng = np.random.default_rng(2)
    images = [rng.integers(0, 256, size=(8 + i, 6, 3), dtype=np.uint8) for i in range(6)]
    raw_image.RawImage.write_tfrecord(
        tmp_path / "images.tfrecord",
        [raw_image.RawImage(label=i % 2, image=image) for i, image in enumerate(images)],
    )
    code, out, err = run_cli(
        "report",
        "images.tfrecord",
        "--schema",
        str(SCHEMAS / "raw_image.yaml"),
        "--format",
        "json",
        cwd=tmp_path,
    )
    assert (code, err) == (0, "")
    document = json.loads(out)
    assert document["schema"] == {"path": str(SCHEMAS / "raw_image.yaml"), "record": "RawImage"}
    image = feature(document, "image")
    assert image["schema"] == {
        "name": "image",
        "dtype": "uint8",
        "shape": [None, None, 3],
        "kind": "raw_tensor",
        "doc": "Pixels; the shape travels in 'image/shape'.",
    }
    (stats,) = image["stats"]
    assert len(stats["thumbnails"]) == 4
    assert all(url.startswith("data:image/png;base64,") for url in stats["thumbnails"])
    assert feature(document, "image/shape")["schema"]["name"] == "image"
    validation = document["datasets"][0]["validation"]
    assert validation["summary"]["records"] == 6
    assert (validation["problems"], validation["anomalies"]) == ([], [])


def picture(url: str) -> bytes:
    """The PNG file of a thumbnail's ``data:`` URL."""
    head, data = url.split(",", 1)
    assert head == "data:image/png;base64"
    return base64.b64decode(data)


def gradient(height: int, width: int, shift: int) -> np.ndarray:
    """A smooth RGB picture (JPEG keeps it close)."""
    rows, columns = np.mgrid[0:height, 0:width]
    return np.stack([rows + shift, columns, rows + columns], axis=-1).astype(np.uint8)


def test_thumbnails_of_encoded_images_with_a_schema(tf: Any, tmp_path: Path) -> None:
    jpeg_image = generated_module("jpeg_image")
    records = [jpeg_image.JpegImage(label=i, image=gradient(256, 256, 10 * i)) for i in range(6)]
    jpeg_image.JpegImage.write_tfrecord(tmp_path / "photos.tfrecord", records)
    code, out, err = run_cli(
        "report",
        "photos.tfrecord",
        "--schema",
        str(SCHEMAS / "jpeg_image.yaml"),
        "--format",
        "json",
        cwd=tmp_path,
    )
    assert (code, err) == (0, "")
    (stats,) = feature(json.loads(out), "image/encoded")["stats"]
    assert len(stats["thumbnails"]) == 4
    parsed = tf.data.TFRecordDataset(str(tmp_path / "photos.tfrecord")).take(4)
    for url, record in zip(stats["thumbnails"], parsed, strict=True):
        example = tf.train.Example.FromString(record.numpy())
        encoded = example.features.feature["image/encoded"].bytes_list.value[0]
        pixels = tf.io.decode_jpeg(encoded).numpy()
        # TensorFlow's decode of the JPEG, every 3rd pixel (256 / 96 rounded up).
        assert np.array_equal(tf.io.decode_png(picture(url)).numpy(), pixels[::3, ::3])


def test_thumbnails_without_a_schema(tf: Any, tmp_path: Path) -> None:
    """Encoded images are known by their signature (PNG with alpha and grey, JPEG) and the
    tutorials' raw images by their shape key, as ``tfr-gen infer`` knows them."""
    rgba = np.dstack([gradient(20, 30, 0), np.full((20, 30), 128, np.uint8)])
    grey = gradient(40, 10, 5)[..., :1]
    raw = gradient(12, 9, 7)
    messages = []
    for i in range(5):
        png = tf.io.encode_png(rgba if i % 2 else grey).numpy()
        jpeg = tf.io.encode_jpeg(gradient(16, 16, i)).numpy()
        shape = np.array(raw.shape, np.int32).tobytes()
        messages.append(
            example(tf, png=[png], jpeg=[jpeg], raw=[raw.tobytes()], raw_shape=[shape], n=[i])
        )
    tf_write(tf, tmp_path / "d.tfrecord", messages)
    code, out, err = run_cli("report", "d.tfrecord", "--format", "json", cwd=tmp_path)
    assert (code, err) == (0, "")
    document = json.loads(out)
    shown = {
        f["key"]: [tf.io.decode_png(picture(url)).numpy() for url in f["stats"][0]["thumbnails"]]
        for f in document["features"]
        if "thumbnails" in f["stats"][0]
    }
    assert sorted(shown) == ["jpeg", "png", "raw"]
    assert [p.shape for p in shown["png"]] == [(40, 10, 1), (20, 30, 3)] * 2
    assert np.array_equal(shown["png"][0], grey) and np.array_equal(shown["png"][1], rgba[..., :3])
    assert [p.shape for p in shown["jpeg"]] == [(16, 16, 3)] * 4
    assert all(np.array_equal(p, raw) for p in shown["raw"]) and len(shown["raw"]) == 4
    assert feature(document, "n")["stats"][0].get("thumbnails") is None


def test_thumbnails_decode_only_the_images_shown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from codegen.runtime.codec import images
    from codegen.tools.report import THUMBNAILS, collect_dataset

    jpeg_image = generated_module("jpeg_image")
    jpeg_image.JpegImage.write_tfrecord(
        tmp_path / "photos.tfrecord",
        [jpeg_image.JpegImage(label=i, image=gradient(256, 256, i)) for i in range(40)],
    )
    decoded = []
    decode = images.decode_image

    def counted(data: bytes, channels: int | None = None) -> np.ndarray:
        decoded.append(data)
        return decode(data, channels)

    monkeypatch.setattr(images, "decode_image", counted)
    dataset = collect_dataset("data", [str(tmp_path / "photos.tfrecord")])
    assert len(dataset.thumbnails["image/encoded"]) == THUMBNAILS
    assert len(decoded) == THUMBNAILS


def test_anomalies_and_problems_with_their_records(tf: Any, tmp_path: Path) -> None:
    schema = tmp_path / "s.yaml"
    schema.write_text(
        "version: 1\nrecords:\n  R:\n    doc: A record.\n    features:\n"
        "      n: {dtype: int64, doc: A number.}\n      tag: {dtype: string, optional: true}\n"
    )
    records = [example(tf, n=[i]) for i in range(4)] + [example(tf, n=[1.5], extra=[b"x"])]
    tf_write(tf, tmp_path / "d.tfrecord", records)
    code, out, err = run_cli(
        "report",
        "d.tfrecord",
        "--schema",
        "s.yaml",
        "--format",
        "json",
        "--html",
        "p.html",
        cwd=tmp_path,
    )
    assert (code, err) == (0, "")
    document = json.loads(out)
    assert [f["key"] for f in document["features"]] == ["n", "tag", "extra"]
    assert feature(document, "n")["schema"]["doc"] == "A number."
    assert feature(document, "tag")["stats"] == [None]
    validation = document["datasets"][0]["validation"]
    ((problem,),) = [validation["problems"]]
    assert (problem["record"], problem["key"], problem["kind"]) == (4, "n", "list_kind")
    assert problem["offset"] == sum(len(r.SerializeToString()) + 16 for r in records[:4])
    kinds = {(a["kind"], a["key"]): a["example"]["record"] for a in validation["anomalies"]}
    assert kinds == {("undeclared_key", "extra"): 4, ("never_present", "tag"): 0}
    page = (tmp_path / "p.html").read_text("utf-8")
    assert embedded(page) == document


def test_sequence_features_count_their_steps(tf: Any, tmp_path: Path) -> None:
    tf_write(tf, tmp_path / "s.tfrecord", tf_sentences(tf))
    code, out, _ = run_cli("report", "s.tfrecord", "--format", "json", cwd=tmp_path)
    assert code == 0
    document = json.loads(out)
    assert document["datasets"][0]["kind"] == "sequence_example"
    assert [(f["section"], f["key"]) for f in document["features"]] == [
        ("context", "length"),
        ("feature_lists", "labels"),
        ("feature_lists", "tokens"),
    ]
    (tokens,) = feature(document, "tokens")["stats"]
    assert tokens["step_counts"] == [{"steps": 2, "lists": 1}, {"steps": 3, "lists": 2}]
    assert tokens["value_counts"] == [{"values": 1, "features": 8}]
    assert tokens["numbers"]["quantiles"][-1] == {"fraction": 1.0, "value": 5.0}


def test_a_sample_is_deterministic(tf: Any, tmp_path: Path) -> None:
    tf_write(tf, tmp_path / "d.tfrecord", [example(tf, n=[i]) for i in range(200)])
    runs = [
        json.loads(
            run_cli(
                "report",
                "d.tfrecord",
                "--sample",
                size,
                "--seed",
                seed,
                "--format",
                "json",
                cwd=tmp_path,
            )[1]
        )
        for size, seed in (("20", "1"), ("20", "1"), ("20", "2"), ("0.5", "1"))
    ]
    (first, again, other, half) = [r["datasets"][0] for r in runs]
    assert (first["records"], first["records_read"], first["sample"]) == (
        20,
        200,
        {"size": 20, "seed": 1},
    )
    assert runs[0]["features"] == runs[1]["features"] != runs[2]["features"]
    assert 70 <= half["records"] <= 130 and half["sample"] == {"size": 0.5, "seed": 1}
    assert (again["records"], other["records"]) == (20, 20)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--record", "R"), "tfr-gen report: error: --record needs --schema"),
        (("--sample", "0"), "argument --sample: a number of records must be at least 1, got 0"),
        (("--sample", "1.5"), "argument --sample: a fraction must be in (0, 1], got 1.5"),
        (("--max-drift", "2"), "argument --max-drift: expected a number from 0 to 1, got '2'"),
        (("--html", "missing/dir/p.html"), "missing/dir/p.html"),
    ],
)
def test_errors(
    tf: Any,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    args: tuple[str, ...],
    message: str,
) -> None:
    tf_write(tf, tmp_path / "d.tfrecord", [example(tf, n=[1])])
    code, _, err = run_cli("report", "d.tfrecord", *args, cwd=tmp_path)
    err += capsys.readouterr().err
    assert code == 2
    assert message in err and "Traceback" not in err
    assert not (tmp_path / "missing").exists()


def test_nan_free_json(tf: Any, tmp_path: Path) -> None:
    tf_write(tf, tmp_path / "d.tfrecord", [example(tf, x=[math.nan, math.inf, -math.inf])])
    code, out, _ = run_cli("report", "d.tfrecord", "--format", "json", cwd=tmp_path)
    assert code == 0
    (x,) = feature(json.loads(out), "x")["stats"]
    assert (x["nan"], x["numbers"]["inf"], x["numbers"]["count"], x["min"]) == (
        1,
        2,
        0,
        "-Infinity",
    )
    assert "histogram" not in x["numbers"] and x["numbers"]["quantiles"] == []


def test_max_record_bytes_limits_the_records_read(tf: Any, tmp_path: Path) -> None:
    records = tf_write(
        tf, tmp_path / "d.tfrecord", [example(tf, n=list(range(k))) for k in (1, 50, 2)]
    )
    limit = max(len(records[0]), len(records[2]))
    args = ("report", "d.tfrecord", "--format", "json", "--max-record-bytes")
    code, out, err = run_cli(*args, str(limit), cwd=tmp_path)
    assert code == 0
    (dataset,) = json.loads(out)["datasets"]
    assert (dataset["records"], dataset["skipped_spans"]) == (2, 1)
    assert dataset["skipped_bytes"] == len(records[1]) + 16
    assert err == ""
    code, out, _ = run_cli(*args, str(len(records[1])), cwd=tmp_path)
    (dataset,) = json.loads(out)["datasets"]
    assert (code, dataset["records"], dataset["skipped_spans"]) == (0, 3, 0)
