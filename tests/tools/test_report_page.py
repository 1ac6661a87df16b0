"""The HTML report in a real headless Chromium: it draws without a console error, its screenshot is
not blank, it has one section per feature with the document's numbers, the search box filters the
sections and the summary table, and it stays usable with 1 and with 1,000 features."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from codegen.tools.report_page import report_html
from codegen.tools.values import Json
from support.cli import run_cli
from support.tutorial import tf_write


def write_data(tf: Any, path: Path, shift: float, features: int, count: int = 50) -> None:
    rng = np.random.default_rng(0)
    records = []
    for i in range(count):
        built = {
            f"f{k:04d}": tf.train.Feature(
                float_list=tf.train.FloatList(value=[rng.normal(shift + k)])
            )
            for k in range(features)
        }
        built["city"] = tf.train.Feature(
            bytes_list=tf.train.BytesList(value=[[b"oslo", b"rome", b"bern"][i % 3]])
        )
        records.append(tf.train.Example(features=tf.train.Features(feature=built)))
    tf_write(tf, path, records)


def open_page(browser: Any, page: Path) -> None:
    browser.get(page.as_uri())
    browser.get_log("browser")  # drop what an earlier page left


def console_problems(browser: Any) -> list[Any]:
    return [
        entry for entry in browser.get_log("browser") if entry["level"] in ("SEVERE", "WARNING")
    ]


def visible(browser: Any, selector: str) -> list[Any]:
    return [e for e in browser.find_elements("css selector", selector) if e.is_displayed()]


def test_the_page_in_a_browser(tf: Any, browser: Any, tmp_path: Path) -> None:
    write_data(tf, tmp_path / "train.tfrecord", 0.0, 12)
    write_data(tf, tmp_path / "eval.tfrecord", 2.0, 12)
    code, out, _ = run_cli(
        "report",
        "train.tfrecord",
        "--compare",
        "eval.tfrecord",
        "--html",
        "page.html",
        "--format",
        "json",
        cwd=tmp_path,
    )
    assert code == 0
    document = json.loads(out)
    browser.get((tmp_path / "page.html").as_uri())
    assert console_problems(browser) == []

    shot = browser.get_screenshot_as_png()
    (tmp_path / "page.png").write_bytes(shot)
    pixels = tf.io.decode_png(shot, channels=3).numpy()
    assert pixels.shape[0] > 400 and pixels.shape[1] > 400
    assert pixels.std() > 20  # not one colour
    assert len(np.unique(pixels.reshape(-1, 3), axis=0)) > 50  # text, charts, colours

    sections = browser.find_elements("css selector", "section.feature")
    keys = [f["key"] for f in document["features"]]
    assert [s.get_attribute("data-key") for s in sections] == keys
    assert len(keys) == 13
    rows = browser.find_elements("css selector", "#summary tbody tr")
    assert len(rows) == 13
    # The numbers of one feature, as the document has them (13 sections: collapsed).
    f3 = sections[keys.index("f0003")]
    f3.find_element("css selector", "summary").click()
    records = [c.text for c in f3.find_elements("css selector", 'td[data-stat="records"]')]
    assert records == ["50", "50"]
    stats = document["features"][keys.index("f0003")]["stats"]
    histograms = f3.find_elements("css selector", "svg.histogram rect")
    assert len(histograms) == 2 * len(stats[0]["numbers"]["histogram"]["counts"])
    drift = document["features"][keys.index("f0003")]["drift"]["value"]
    (shown,) = f3.find_elements("css selector", 'div[data-stat="drift"]')
    assert shown.text.startswith(f"Jensen-Shannon divergence {float(f'{drift:.6g}')}")
    city = sections[keys.index("city")]
    city.find_element("css selector", "summary").click()
    tops = [row.text for row in city.find_elements("css selector", "table.top tr")]
    assert tops[:3] == ["oslo 17", "rome 17", "bern 16"]

    search = browser.find_element("id", "search")
    search.send_keys("CIT")
    assert [s.get_attribute("data-key") for s in visible(browser, "section.feature")] == ["city"]
    assert len(visible(browser, "#summary tbody tr")) == 1
    search.clear()
    search.send_keys("f000")
    assert len(visible(browser, "section.feature")) == 10
    search.clear()
    search.send_keys(" ")  # an input event with no words: everything again
    assert len(visible(browser, "section.feature")) == 13
    assert console_problems(browser) == []


@pytest.mark.parametrize("features", [1, 1000])
def test_one_and_a_thousand_features(tf: Any, browser: Any, tmp_path: Path, features: int) -> None:
    write_data(tf, tmp_path / "d.tfrecord", 0.0, features - 1, count=5)
    code, _, _ = run_cli("report", "d.tfrecord", "--html", "page.html", cwd=tmp_path)
    assert code == 0
    open_page(browser, tmp_path / "page.html")
    assert console_problems(browser) == []
    assert len(browser.find_elements("css selector", "section.feature")) == features
    summary = browser.find_element("css selector", "section.feature > details")
    assert (summary.get_attribute("open") is not None) == (features == 1)  # many: collapsed
    if features == 1000:
        browser.find_element("id", "search").send_keys("f0998")
        shown = visible(browser, "section.feature")
        assert [s.get_attribute("data-key") for s in shown] == ["f0998"]
        shown[0].find_element("css selector", "summary").click()  # opens
        assert shown[0].find_element("css selector", "svg.histogram").is_displayed()


def test_thumbnails_show(browser: Any, tmp_path: Path) -> None:
    red = np.zeros((8, 8, 3), np.uint8)
    red[..., 0] = 255
    from codegen.tools.thumbnails import thumbnail

    url = thumbnail(red)
    assert url is not None
    document: dict[str, Json] = {
        "format": "tfr-gen-report",
        "version": 1,
        "schema": None,
        "drift_threshold": None,
        "datasets": [
            {
                "name": "data",
                "files": [],
                "records": 1,
                "records_read": 1,
                "sample": None,
                "malformed_records": [],
                "skipped_spans": 2,
                "skipped_bytes": 40,
                "interrupted": True,
                "validation": None,
            }
        ],
        "features": [
            {
                "section": "features",
                "key": "image",
                "schema": None,
                "drift": None,
                "stats": [
                    {
                        "records": 1,
                        "presence": 1.0,
                        "kinds": {"bytes_list": 1},
                        "values": {"min": 1, "max": 1, "total": 1},
                        "value_counts": [],
                        "thumbnails": [url],
                    }
                ],
            }
        ],
    }
    (tmp_path / "page.html").write_text(report_html(document), "utf-8")
    open_page(browser, tmp_path / "page.html")
    assert console_problems(browser) == []
    header = browser.find_element("css selector", "header").text
    assert "2 unreadable stretches (40 bytes) skipped" in header
    assert "interrupted: the records read before Ctrl-C" in header
    (image,) = browser.find_elements("css selector", ".thumbs img")
    assert browser.execute_script("return arguments[0].naturalWidth", image) == 8
    assert image.get_attribute("src") == url
    assert base64.b64decode(url.split(",", 1)[1]).startswith(b"\x89PNG")


def test_thumbnails_of_encoded_images_show(browser: Any, tmp_path: Path) -> None:
    from support.modules import generated_module

    jpeg_image = generated_module("jpeg_image")
    rows, columns = np.mgrid[0:256, 0:256]
    pixels = np.stack([rows, columns, rows // 2], axis=-1).astype(np.uint8)
    jpeg_image.JpegImage.write_tfrecord(
        tmp_path / "photos.tfrecord",
        [jpeg_image.JpegImage(label=i, image=pixels) for i in range(5)],
    )
    code, _, _ = run_cli("report", "photos.tfrecord", "--html", "page.html", cwd=tmp_path)
    assert code == 0
    open_page(browser, tmp_path / "page.html")
    assert console_problems(browser) == []
    (section,) = [
        s
        for s in browser.find_elements("css selector", "section.feature")
        if s.get_attribute("data-key") == "image/encoded"
    ]
    assert section.find_element("css selector", "details").get_attribute("open") is not None
    shown = section.find_elements("css selector", ".thumbs img")
    assert len(shown) == 4
    for image in shown:
        assert image.is_displayed()
        size = "return [arguments[0].naturalWidth, arguments[0].naturalHeight]"
        assert browser.execute_script(size, image) == [86, 86]  # every 3rd pixel of 256
