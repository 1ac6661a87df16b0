"""The report as one self-contained HTML page: the JSON document of :mod:`codegen.tools.report`
embedded as is, drawn by inline JavaScript (SVG charts, no network access, no external file).

The page has a summary table of every feature on top, a search box that filters the table and the
sections by key, feature name or dtype, one collapsible ``<section class="feature">`` per feature
(its schema, numbers, histogram and quantiles, top values, value counts, step counts, thumbnails
and drift, each dataset in its own colour), and the anomalies and problems a schema's check found,
each with its file, record index and byte offset and a link to its feature.
"""

from __future__ import annotations

import json

from codegen.tools.values import Json

__all__ = ["report_html"]

_STYLE = """
:root { --a: #2f6db5; --b: #d9762b; --line: #d8dde3; --muted: #5b6670; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0; color: #1d2329;
  background: #f6f7f9; }
header { background: #1d2d44; color: #fff; padding: 14px 24px; }
header h1 { margin: 0 0 4px; font-size: 20px; }
header .datasets span { margin-right: 18px; }
main { padding: 16px 24px 48px; max-width: 1200px; }
.swatch { display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin-right: 4px; }
#search { width: 100%; padding: 8px 10px; font-size: 15px; border: 1px solid var(--line);
  border-radius: 6px; margin: 8px 0 12px; }
table { border-collapse: collapse; background: #fff; }
th, td { border-bottom: 1px solid var(--line); padding: 3px 8px; text-align: left; vertical-align: top; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
#summary { width: 100%; margin-bottom: 18px; }
#summary tr.hidden, section.hidden { display: none; }
.drift-bad { color: #b3261e; font-weight: 600; }
section.feature { background: #fff; border: 1px solid var(--line); border-radius: 8px; margin: 10px 0; }
section.feature > details > summary { padding: 8px 12px; cursor: pointer; font-weight: 600; }
section.feature .body { padding: 4px 14px 14px; display: flex; flex-wrap: wrap; gap: 18px; }
.box { min-width: 260px; }
.box h3 { font-size: 13px; margin: 8px 0 4px; color: var(--muted); text-transform: uppercase;
  letter-spacing: .04em; }
.doc { color: var(--muted); font-weight: 400; margin-left: 8px; }
.tag { font-weight: 400; font-size: 12px; background: #eef1f5; border-radius: 4px; padding: 1px 6px;
  margin-left: 6px; }
.bar { height: 12px; border-radius: 2px; display: inline-block; vertical-align: middle; }
.thumbs img { image-rendering: pixelated; width: 96px; margin: 2px; border: 1px solid var(--line); }
.anomaly { background: #fff4e5; border-left: 4px solid #e6a23c; padding: 6px 10px; margin: 6px 0; }
.problem { font-family: ui-monospace, monospace; font-size: 12px; }
svg text { font-size: 10px; fill: var(--muted); }
"""

_SCRIPT = r"""
"use strict";
const data = JSON.parse(document.getElementById("report-data").textContent);
const COLORS = ["#2f6db5", "#d9762b"];
const SVG = "http://www.w3.org/2000/svg";

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) node.setAttribute(name, value);
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(typeof child === "string" ? document.createTextNode(child) : child);
  }
  return node;
}
function svg(tag, attrs) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs || {})) node.setAttribute(name, String(value));
  return node;
}
function fmt(x) {
  if (x === null || x === undefined) return "–";
  if (typeof x === "number") {
    if (Number.isInteger(x)) return x.toLocaleString("en-US");
    return String(Number(x.toPrecision(6)));
  }
  return String(x);
}
function pct(x) { return (100 * x).toFixed(1) + "%"; }
function where(example) {
  return example.file + ": record " + example.record + " at byte offset " + example.offset;
}
function swatch(i) { return el("span", {class: "swatch", style: "background:" + COLORS[i]}); }

function header() {
  const parts = data.datasets.map((d, i) => {
    const sample = d.sample ? " (sample of " + d.sample.size + ", seed " + d.sample.seed + ")" : "";
    const notes = [];
    if (d.skipped_spans) {
      notes.push(d.skipped_spans + " unreadable stretches (" + fmt(d.skipped_bytes) + " bytes) skipped");
    }
    if (d.malformed_records.length) notes.push(d.malformed_records.length + " malformed records");
    if (d.interrupted) notes.push("interrupted: the records read before Ctrl-C");
    return el("span", {}, swatch(i), d.name + ": " + fmt(d.records) + " records of " +
      fmt(d.records_read) + " in " + d.files.length + " file" + (d.files.length === 1 ? "" : "s") +
      sample + (notes.length ? " · " + notes.join(" · ") : ""));
  });
  const schema = data.schema ? el("div", {}, "schema " + data.schema.path + ", record " +
    data.schema.record) : null;
  return el("header", {}, el("h1", {}, "tfr-gen report"), el("div", {class: "datasets"}, ...parts),
    schema);
}

function typeOf(feature) {
  if (feature.schema) return feature.schema.dtype + " " + JSON.stringify(feature.schema.shape);
  const first = feature.stats.find(s => s !== null);
  return first ? Object.keys(first.kinds).join("+") || "no list" : "";
}

function driftCell(feature) {
  const drift = feature.drift;
  if (!drift) return el("td", {class: "num"}, "");
  const name = drift.measure === "l_infinity" ? "L∞ " : "JS ";
  return el("td", {class: "num" + (drift.exceeded ? " drift-bad" : ""), "data-stat": "drift"},
    name + fmt(drift.value));
}

function summaryTable() {
  const head = el("tr", {}, el("th", {}, "key"), el("th", {}, "section"), el("th", {}, "type"),
    ...data.datasets.map((d, i) => el("th", {class: "num"}, swatch(i), d.name + " presence")),
    data.datasets.length > 1 ? el("th", {class: "num"}, "drift") : null);
  const rows = data.features.map((feature, index) => el("tr", {"data-index": String(index)},
    el("td", {}, el("a", {href: "#feature-" + index}, feature.key)),
    el("td", {}, feature.section), el("td", {}, typeOf(feature)),
    ...feature.stats.map(s => el("td", {class: "num"}, s ? pct(s.presence) : "absent")),
    data.datasets.length > 1 ? driftCell(feature) : null));
  return el("table", {id: "summary"}, el("thead", {}, head), el("tbody", {}, ...rows));
}

function statsTable(feature) {
  const rows = [
    ["records", s => fmt(s.records)], ["presence", s => pct(s.presence)],
    ["values", s => fmt(s.values.total)], ["values per feature", s => s.values.min === s.values.max ?
      fmt(s.values.min) : fmt(s.values.min) + "–" + fmt(s.values.max)],
    ["min", s => "min" in s ? fmt(s.min) : undefined],
    ["max", s => "max" in s ? fmt(s.max) : undefined],
    ["mean", s => "mean" in s ? fmt(s.mean) : undefined],
    ["NaN", s => "nan" in s ? fmt(s.nan) : undefined], ["inf", s => s.numbers ? fmt(s.numbers.inf) : undefined],
    ["distinct", s => s.top_values ? (s.distinct === null ? "many" : fmt(s.distinct)) : undefined],
    ["steps per list", s => s.steps ? fmt(s.steps.min) + "–" + fmt(s.steps.max) : undefined],
  ];
  const head = el("tr", {}, el("th", {}, ""),
    ...data.datasets.map((d, i) => el("th", {class: "num"}, swatch(i), d.name)));
  const body = [];
  for (const [name, get] of rows) {
    const cells = feature.stats.map(s => s ? get(s) : "absent");
    if (cells.every(c => c === undefined)) continue;
    body.push(el("tr", {}, el("th", {}, name), ...cells.map(c =>
      el("td", {class: "num", "data-stat": name}, c === undefined ? "–" : c))));
  }
  return el("div", {class: "box"}, el("h3", {}, "numbers"), el("table", {}, head, ...body));
}

function histogram(feature) {
  const shown = feature.stats.map(s => s && s.numbers && s.numbers.histogram ? s.numbers.histogram : null);
  const first = shown.find(h => h !== null);
  if (!first) return null;
  const width = 360, height = 140, pad = 18;
  const buckets = first.counts.length;
  const fractions = shown.map(h => {
    if (!h) return null;
    const total = h.counts.reduce((a, b) => a + b, 0) || 1;
    return h.counts.map(c => c / total);
  });
  const top = Math.max(...fractions.filter(f => f).map(f => Math.max(...f)), 1e-9);
  const chart = svg("svg", {width: width, height: height + pad, class: "histogram",
    viewBox: "0 0 " + width + " " + (height + pad)});
  const step = width / buckets;
  fractions.forEach((f, d) => {
    if (!f) return;
    f.forEach((value, i) => {
      const h = value / top * height;
      const bar = svg("rect", {x: i * step + 1, y: height - h, width: Math.max(step - 2, 1), height: h,
        fill: COLORS[d], "fill-opacity": fractions.filter(x => x).length > 1 ? 0.5 : 0.85});
      const tip = svg("title", {});
      tip.textContent = data.datasets[d].name + ": [" + fmt(first.edges[i]) + ", " +
        fmt(first.edges[i + 1]) + "): " + fmt(shown[d].counts[i]);
      bar.append(tip);
      chart.append(bar);
    });
  });
  const low = svg("text", {x: 0, y: height + 13});
  low.textContent = fmt(first.edges[0]);
  const high = svg("text", {x: width, y: height + 13, "text-anchor": "end"});
  high.textContent = fmt(first.edges[first.edges.length - 1]);
  chart.append(low, high);
  return el("div", {class: "box"}, el("h3", {}, "histogram"), chart);
}

function quantiles(feature) {
  const lists = feature.stats.map(s => s && s.numbers ? s.numbers.quantiles : null);
  const first = lists.find(q => q && q.length);
  if (!first) return null;
  const head = el("tr", {}, el("th", {}, "quantile"),
    ...data.datasets.map((d, i) => el("th", {class: "num"}, swatch(i), d.name)));
  const rows = first.map((q, r) => el("tr", {}, el("th", {}, String(q.fraction)),
    ...lists.map(l => el("td", {class: "num"}, l && l[r] ? fmt(l[r].value) : "–"))));
  const errors = feature.stats.map(s => s && s.numbers ? s.numbers.rank_error : 0);
  const note = Math.max(...errors) > 0 ? el("div", {class: "doc"}, "ranks within " +
    errors.map(fmt).join(" / ") + " values") : null;
  return el("div", {class: "box"}, el("h3", {}, "quantiles"), el("table", {}, head, ...rows), note);
}

function topValues(feature) {
  const boxes = [];
  feature.stats.forEach((s, d) => {
    if (!s || !s.top_values) return;
    const total = s.values.total || 1;
    const rows = s.top_values.map(t => el("tr", {}, el("td", {}, t.value),
      el("td", {class: "num"}, fmt(t.count)),
      el("td", {}, el("span", {class: "bar", style: "width:" + Math.max(1, 120 * t.count / total) +
        "px;background:" + COLORS[d]}))));
    boxes.push(el("div", {class: "box"}, el("h3", {}, "top values · " + data.datasets[d].name),
      el("table", {class: "top"}, ...rows)));
  });
  return boxes;
}

function counts(feature, field, unit, title) {
  const tables = feature.stats.map(s => s && s[field] ? s[field] : null);
  if (!tables.some(t => t && t.length)) return null;
  const keys = [...new Set(tables.flatMap(t => t ? t.map(r => r[unit]) : []))].sort((a, b) => a - b);
  const head = el("tr", {}, el("th", {}, unit),
    ...data.datasets.map((d, i) => el("th", {class: "num"}, swatch(i), d.name)));
  const count = field === "step_counts" ? "lists" : "features";
  const rows = keys.slice(0, 30).map(k => el("tr", {}, el("th", {class: "num"}, fmt(k)),
    ...tables.map(t => {
      const row = t ? t.find(r => r[unit] === k) : null;
      return el("td", {class: "num"}, row ? fmt(row[count]) : "0");
    })));
  const more = keys.length > 30 ? el("div", {class: "doc"}, (keys.length - 30) + " more") : null;
  return el("div", {class: "box"}, el("h3", {}, title), el("table", {}, head, ...rows), more);
}

function thumbnails(feature) {
  const pictures = feature.stats.flatMap(s => s && s.thumbnails ? s.thumbnails : []);
  if (!pictures.length) return null;
  return el("div", {class: "box thumbs"}, el("h3", {}, "images"),
    ...pictures.map(src => el("img", {src: src, alt: feature.key})));
}

function driftBox(feature) {
  const drift = feature.drift;
  if (!drift) return null;
  const name = drift.measure === "l_infinity" ? "L-infinity distance" : "Jensen-Shannon divergence";
  const at = drift.value_at !== null ? " (largest at " + drift.value_at + ")" : "";
  const limit = data.drift_threshold !== null ? "; threshold " + fmt(data.drift_threshold) : "";
  return el("div", {class: "box"}, el("h3", {}, "drift"),
    el("div", {class: drift.exceeded ? "drift-bad" : "", "data-stat": "drift"},
      name + " " + fmt(drift.value) + at + limit));
}

function featureSection(feature, index, open) {
  const doc = feature.schema && feature.schema.doc ? el("span", {class: "doc"}, feature.schema.doc) : null;
  const name = feature.schema ? el("span", {class: "tag"}, feature.schema.name) : null;
  const title = el("summary", {}, feature.key, el("span", {class: "tag"}, feature.section),
    el("span", {class: "tag"}, typeOf(feature)), name, doc,
    feature.drift && feature.drift.exceeded ? el("span", {class: "tag drift-bad"}, "drift") : null);
  const body = el("div", {class: "body"}, statsTable(feature), histogram(feature), quantiles(feature),
    ...topValues(feature), counts(feature, "value_counts", "values", "values per feature"),
    counts(feature, "step_counts", "steps", "steps per list"), thumbnails(feature), driftBox(feature));
  const details = el("details", open ? {open: ""} : {}, title, body);
  return el("section", {class: "feature", id: "feature-" + index, "data-key": feature.key,
    "data-search": (feature.key + " " + (feature.schema ? feature.schema.name + " " : "") +
      typeOf(feature)).toLowerCase()}, details);
}

function findings() {
  const items = [];
  const index = new Map(data.features.map((f, i) => [f.section + "\u0000" + f.key, i]));
  data.datasets.forEach((d, i) => {
    const checked = d.validation;
    const broken = d.malformed_records.map(m => el("div", {class: "problem"}, swatch(i),
      "malformed: " + where(m) + ": " + m.message));
    items.push(...broken);
    if (!checked) return;
    for (const anomaly of checked.anomalies) {
      const target = index.get(anomaly.section + "\u0000" + anomaly.key);
      const link = target === undefined ? anomaly.key : el("a", {href: "#feature-" + target}, anomaly.key);
      items.push(el("div", {class: "anomaly"}, swatch(i), anomaly.kind.replace("_", " ") + ": ", link,
        " — " + anomaly.message + " (e.g. " + where(anomaly.example) + ")"));
    }
    for (const problem of checked.problems) {
      items.push(el("div", {class: "problem"}, swatch(i), where(problem) + ": " + problem.message));
    }
    const more = checked.summary.problems - checked.problems.length;
    if (more > 0) items.push(el("div", {class: "doc"}, more + " more problems"));
  });
  if (!items.length) return null;
  return el("div", {id: "findings"}, el("h2", {}, "anomalies and problems"), ...items);
}

function render() {
  const search = el("input", {id: "search", type: "search",
    placeholder: "search " + data.features.length + " features by key, name or type"});
  const table = summaryTable();
  const open = data.features.length <= 12;
  const sections = data.features.map((f, i) => featureSection(f, i, open));
  const main = el("main", {}, search, findings(), el("h2", {}, data.features.length + " features"),
    table, ...sections);
  document.body.append(header(), main);
  search.addEventListener("input", () => {
    const words = search.value.toLowerCase().split(/\s+/).filter(w => w);
    sections.forEach((section, i) => {
      const text = section.getAttribute("data-search");
      const hide = !words.every(w => text.includes(w));
      section.classList.toggle("hidden", hide);
      table.tBodies[0].rows[i].classList.toggle("hidden", hide);
    });
  });
}
render();
"""


def report_html(document: dict[str, Json]) -> str:
    """The page of a report document (:func:`codegen.tools.report.report_json`)."""
    embedded = json.dumps(document, ensure_ascii=False, separators=(",", ":"))
    # Inside <script>, "<" only occurs in strings, where \u003c reads back as the same character.
    embedded = embedded.replace("<", "\\u003c")
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "img-src data:; style-src 'unsafe-inline'; script-src 'unsafe-inline'\">\n"
        "<title>tfr-gen report</title>\n"
        f"<style>{_STYLE}</style>\n</head>\n<body>\n"
        f'<script type="application/json" id="report-data">{embedded}</script>\n'
        f"<script>{_SCRIPT}</script>\n"
        "</body>\n</html>\n"
    )
