"""The compatibility engine: two canonical schemas in, every :class:`Change` between them out.

Schemas are the parsed canonical JSON of :mod:`codegen.generator.canonical` (what generated modules
embed as ``SCHEMA_CANONICAL``). Records are matched by name, then an unmatched pair with the same
features is a rename; features are matched by name, then by key within the part of the record
they travel in (an Example's ``features`` and a SequenceExample's ``context`` are one). Which
fields of a record hold features is read from the data (every list of objects with a ``name``), so
Example ``features`` and SequenceExample ``context``/``sequence`` are compared alike.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import codegen.compat.rules as rules
from codegen.compat.changes import Change, ChangeKind, Classification, Position
from codegen.compat.rules import Feature, shape_text

Locations = Mapping[str, Position]
"""Where each element of a schema file is written, by path (``records.Customer.features.age``)."""

_FULL, _BREAKING = Classification.FULL, Classification.BREAKING
_SCHEMA_FIELDS = ("version", "doc", "records")
_RECORD_FIELDS = ("name", "doc")
_FEATURE_FIELDS = (
    "name",
    "key",
    "dtype",
    "shape",
    "optional",
    "encoding",
    "doc",
    "default",
    "shape_from",
    "row_lengths_from",
    "quality",
)
_BOTH_WAYS = "old and new readers"


def compare_schemas(
    old: Mapping[str, Any],
    new: Mapping[str, Any],
    *,
    old_locations: Locations | None = None,
    new_locations: Locations | None = None,
) -> list[Change]:
    """Every change from the canonical schema ``old`` to ``new``: removals first, then in NEW order.

    ``old_locations``/``new_locations`` give each change its position (removals in the OLD file,
    everything else in the NEW one).
    """
    engine = _Engine(old_locations or {}, new_locations or {})
    engine.schema(old, new)
    return engine.changes


def compare_records(
    old: Mapping[str, Any],
    new: Mapping[str, Any],
    *,
    old_locations: Locations | None = None,
    new_locations: Locations | None = None,
) -> list[Change]:
    """Every change from one canonical record to another (a rename if their names differ)."""
    engine = _Engine(old_locations or {}, new_locations or {})
    path = f"records.{new['name']}"
    if old["name"] != new["name"]:
        engine.renamed_record(old, new)
    engine.record(old, new, path)
    return engine.changes


def _sections(record: Mapping[str, Any]) -> list[str]:
    """The fields of a canonical record that hold features, in their order in the record."""
    return [
        field
        for field, value in record.items()
        if isinstance(value, list) and all(isinstance(f, dict) and "name" in f for f in value)
    ]


def _wire_signature(record: Mapping[str, Any]) -> object:
    """A record without its name and docs: what must be equal for a rename."""
    return {
        field: (
            [{k: v for k, v in f.items() if k != "doc"} for f in value]
            if field in _sections(record)
            else value
        )
        for field, value in record.items()
        if field not in _RECORD_FIELDS
    }


def _describe(feature: Feature) -> str:
    """``'age' (key 'Age', int64 [])`` for messages."""
    return (
        f"{feature['name']!r} (key {feature['key']!r}, {feature['dtype']}"
        f" {shape_text(feature['shape'])})"
    )


def _readers(backward: bool, forward: bool) -> str:
    """Which readers keep reading, for messages."""
    if backward and forward:
        return _BOTH_WAYS + " read both"
    if backward:
        return "new readers read old data; old readers can fail on new data"
    if forward:
        return "old readers read new data; new readers can fail on old data"
    return "neither old readers of new data nor new readers of old data are safe"


class _Engine:
    """One comparison: collects changes with their positions."""

    def __init__(self, old_locations: Locations, new_locations: Locations) -> None:
        self.old_locations = old_locations
        self.new_locations = new_locations
        self.changes: list[Change] = []

    def add(
        self,
        path: str,
        kind: ChangeKind,
        classification: Classification,
        message: str,
        *,
        removed: bool = False,
    ) -> None:
        locations = self.old_locations if removed else self.new_locations
        location = locations.get(path)
        if location is None and not removed:  # an element written in neither file, e.g. a default
            location = self._nearest(path)
        self.changes.append(Change(path, kind, classification, message, location))

    def _nearest(self, path: str) -> Position | None:
        parts = path.split(".")
        for end in range(len(parts) - 1, 0, -1):
            location = self.new_locations.get(".".join(parts[:end]))
            if location is not None:
                return location
        return None

    # -- schema and records -----------------------------------------------------------------------

    def schema(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        if old["version"] != new["version"]:
            self.add(
                "version",
                ChangeKind.VERSION_CHANGED,
                _FULL,
                f"version changed from {old['version']} to {new['version']}; the version is not"
                " stored in the data",
            )
        if old["doc"] != new["doc"]:
            self.add("doc", ChangeKind.DOC_CHANGED, _FULL, "schema doc changed")
        self.other_fields(old, new, "", _SCHEMA_FIELDS)
        old_records = {r["name"]: r for r in old["records"]}
        new_records = {r["name"]: r for r in new["records"]}
        renamed = self.pair_renames(
            [r for name, r in old_records.items() if name not in new_records],
            [r for name, r in new_records.items() if name not in old_records],
        )
        renamed_old = {o["name"] for o, _ in renamed.values()}
        for name in old_records:
            if name not in new_records and name not in renamed_old:
                self.add(
                    f"records.{name}",
                    ChangeKind.RECORD_REMOVED,
                    Classification.FORWARD,
                    f"record {name!r} removed: new code has no class to read its old data; no new"
                    " data of it is written",
                    removed=True,
                )
        for name, record in new_records.items():
            path = f"records.{name}"
            if name in old_records:
                self.record(old_records[name], record, path)
            elif name in renamed:
                old_record, _ = renamed[name]
                self.renamed_record(old_record, record)
                self.record(old_record, record, path)
            else:
                self.add(
                    path,
                    ChangeKind.RECORD_ADDED,
                    Classification.BACKWARD,
                    f"record {name!r} added: no old data holds it; old code has no class to read"
                    " its new data",
                )

    @staticmethod
    def pair_renames(
        removed: list[Mapping[str, Any]], added: list[Mapping[str, Any]]
    ) -> dict[str, tuple[Mapping[str, Any], Mapping[str, Any]]]:
        """Removed and added records with the same features, paired in order, by new name."""
        pairs: dict[str, tuple[Mapping[str, Any], Mapping[str, Any]]] = {}
        unpaired = list(removed)
        for record in added:
            signature = _wire_signature(record)
            match = next((o for o in unpaired if _wire_signature(o) == signature), None)
            if match is not None:
                unpaired.remove(match)
                pairs[record["name"]] = (match, record)
        return pairs

    def renamed_record(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        self.add(
            f"records.{new['name']}",
            ChangeKind.RECORD_RENAMED,
            _FULL,
            f"record {old['name']!r} renamed to {new['name']!r}: a record's name is not stored in"
            f" the data, so {_BOTH_WAYS} read both; code (and dataset prefixes) naming"
            f" {old['name']!r} must change",
        )

    def record(self, old: Mapping[str, Any], new: Mapping[str, Any], path: str) -> None:
        if old["doc"] != new["doc"]:
            self.add(f"{path}.doc", ChangeKind.DOC_CHANGED, _FULL, f"doc of {path} changed")
        old_sections, new_sections = _sections(old), _sections(new)
        if old.get("kind") != new.get("kind"):
            self.add(
                path,
                ChangeKind.RECORD_KIND_CHANGED,
                _FULL,
                f"record {new['name']!r} changed from {_kind_name(old)} to {_kind_name(new)}:"
                " Example features and SequenceExample context are the same protobuf field and an"
                " Example reader skips feature lists, so only the features decide (sequence"
                " features count as added or removed)",
            )
        skip = (*_RECORD_FIELDS, "kind", *old_sections, *new_sections)
        self.other_fields(old, new, path + ".", skip)
        _FeatureComparison(self, path, old, old_sections, new, new_sections).run()

    def other_fields(
        self, old: Mapping[str, Any], new: Mapping[str, Any], prefix: str, known: tuple[str, ...]
    ) -> None:
        """Report fields the engine has no rule for (from a newer canonical form) as breaking."""
        for field in sorted((set(old) | set(new)) - set(known)):
            if old.get(field) != new.get(field):
                self.add(
                    prefix + field,
                    ChangeKind.FIELD_CHANGED,
                    _BREAKING,
                    f"{prefix}{field} changed from {old.get(field)!r} to {new.get(field)!r}; this"
                    " version of tfr-gen has no compatibility rule for it",
                )


def _kind_name(record: Mapping[str, Any]) -> str:
    kind = record.get("kind")
    return "a tf.train.Example" if kind is None else f"a {kind} record (tf.train.SequenceExample)"


class _FeatureComparison:
    """The features of one pair of records: matching, then one comparison per pair."""

    def __init__(
        self,
        engine: _Engine,
        path: str,
        old: Mapping[str, Any],
        old_sections: list[str],
        new: Mapping[str, Any],
        new_sections: list[str],
    ) -> None:
        self.engine = engine
        self.path = path
        self.old = {f["name"]: (s, f) for s in old_sections for f in old[s]}
        self.new = {f["name"]: (s, f) for s in new_sections for f in new[s]}
        self.old_keys = {(rules.wire_part(s), f["key"]): f for s, f in self.old.values()}

    def run(self) -> None:
        pairs: dict[str, str] = {name: name for name in self.new if name in self.old}
        lost = {name: self.old[name] for name in self.old if name not in self.new}
        by_key = {(rules.wire_part(s), f["key"]): name for name, (s, f) in lost.items()}
        for name, (section, feature) in self.new.items():
            if name not in pairs:
                old_name = by_key.pop((rules.wire_part(section), feature["key"]), None)
                if old_name is not None:
                    pairs[name] = old_name
        matched_old = set(pairs.values())
        for name, (section, feature) in self.old.items():
            if name not in matched_old:
                self.removed(section, feature)
        for name, (section, feature) in self.new.items():
            old_name = pairs.get(name)
            if old_name is None:
                self.added(section, feature)
            else:
                self.pair(self.old[old_name], (section, feature))

    def feature_path(self, section: str, name: str) -> str:
        return f"{self.path}.{section}.{name}"

    def removed(self, section: str, feature: Feature) -> None:
        forward = rules.reads_absent(feature, section)
        self.engine.add(
            self.feature_path(section, feature["name"]),
            ChangeKind.FEATURE_REMOVED,
            Classification.of(True, forward),
            f"feature {_describe(feature)} removed: new readers ignore it in old data; "
            + (
                "old readers read its absence as " + rules.absent_value(feature, section)
                if forward
                else "old readers fail on new data (a required feature is missing)"
            ),
            removed=True,
        )

    def added(self, section: str, feature: Feature) -> None:
        path = self.feature_path(section, feature["name"])
        previous = self.old_keys.get((rules.wire_part(section), feature["key"]))
        if previous is not None:
            self.engine.add(
                path,
                ChangeKind.KEY_REUSED,
                _BREAKING,
                f"feature {_describe(feature)} added under the key of old feature"
                f" {previous['name']!r}: new readers read {previous['name']!r}'s old values as"
                f" {feature['name']!r}, old readers read its new values as {previous['name']!r}",
            )
            return
        backward = rules.reads_absent(feature, section)
        self.engine.add(
            path,
            ChangeKind.FEATURE_ADDED,
            Classification.of(backward, True),
            f"feature {_describe(feature)} added: old readers ignore it; "
            + (
                "new readers read it as " + rules.absent_value(feature, section) + " in old data"
                if backward
                else "new readers fail on old data (a required feature is missing)"
            ),
        )

    def pair(self, old_item: tuple[str, Feature], new_item: tuple[str, Feature]) -> None:
        (old_section, old), (section, new) = old_item, new_item
        path = self.feature_path(section, new["name"])
        add = self.engine.add
        if rules.wire_part(old_section) != rules.wire_part(section):
            add(
                path,
                ChangeKind.FEATURE_MOVED,
                _BREAKING,
                f"feature {new['name']!r} moved from {old_section!r} to {section!r}: it travels in"
                f" the {rules.wire_part(section)} instead of the {rules.wire_part(old_section)},"
                " where readers of the other side never look",
            )
            return
        if old["name"] != new["name"]:
            add(
                path,
                ChangeKind.FEATURE_RENAMED,
                _FULL,
                f"attribute {old['name']!r} renamed to {new['name']!r} with the same key"
                f" {new['key']!r}: the data is unchanged; code using {old['name']!r} must change",
            )
        if old["key"] != new["key"]:
            self.key_changed(path, section, old, new)
        _FeatureDiff(self.engine, path, section, old, new).run()

    def key_changed(self, path: str, section: str, old: Feature, new: Feature) -> None:
        holder = self.old_keys.get((rules.wire_part(section), new["key"]))
        reads = (
            f"new readers read old feature {holder['name']!r}'s values as {new['name']!r}"
            if holder is not None
            else f"new readers never see the values old data holds under {old['key']!r}"
        )
        self.engine.add(
            f"{path}.key",
            ChangeKind.KEY_CHANGED,
            _BREAKING,
            f"key of {new['name']!r} changed from {old['key']!r} to {new['key']!r}: {reads}, and"
            f" old readers never see the values new data holds under {new['key']!r}",
        )


def _count_check(feature: Feature) -> str:
    """How readers of ``feature`` check the amount of data, for messages."""
    if feature.get("encoding", "list") != "list":
        return "readers check a raw value's byte count, or its stored shape against theirs"
    return "values travel flat; readers check their count and regroup them"


class _FeatureDiff:
    """The attribute changes of one matched pair of features (same section)."""

    def __init__(
        self, engine: _Engine, path: str, section: str, old: Feature, new: Feature
    ) -> None:
        self.add = engine.add
        self.path = path
        self.section = section
        self.old = old
        self.new = new

    def run(self) -> None:
        old, new = self.old, self.new
        if old.get("encoding") != new.get("encoding"):
            self.add(
                f"{self.path}.encoding",
                ChangeKind.ENCODING_CHANGED,
                _BREAKING,
                f"encoding of {new['name']!r} changed from {old.get('encoding')!r} to"
                f" {new.get('encoding')!r}: values travel in {rules.a_list_kind(new)} instead of"
                f" {rules.a_list_kind(old)}, which readers of the other kind reject",
            )
        if old["dtype"] != new["dtype"]:
            self.dtype()
        if old["shape"] != new["shape"]:
            self.shape()
        if old.get("shape_from") != new.get("shape_from") or old.get("row_lengths_from") != new.get(
            "row_lengths_from"
        ):
            self.layout()
        if old.get("quality") != new.get("quality"):
            self.add(
                f"{self.path}.quality",
                ChangeKind.QUALITY_CHANGED,
                _FULL,
                f"JPEG quality of {new['name']!r} changed from {old.get('quality')!r} to"
                f" {new.get('quality')!r}: readers decode either",
            )
        if old["optional"] != new["optional"]:
            self.optional()
        if old["default"] != new["default"]:
            self.default()
        if old["doc"] != new["doc"]:
            self.add(
                f"{self.path}.doc", ChangeKind.DOC_CHANGED, _FULL, f"doc of {self.path} changed"
            )
        for field in sorted((set(old) | set(new)) - set(_FEATURE_FIELDS)):
            if old.get(field) != new.get(field):
                self.add(
                    f"{self.path}.{field}",
                    ChangeKind.FIELD_CHANGED,
                    _BREAKING,
                    f"{field} of {new['name']!r} changed from {old.get(field)!r} to"
                    f" {new.get(field)!r}; this version of tfr-gen has no compatibility rule for"
                    " it",
                )

    def dtype(self) -> None:
        old, new, name = self.old, self.new, self.new["name"]
        change = f"dtype of {name!r} changed from {old['dtype']} to {new['dtype']}"
        if rules.list_kind(old) != rules.list_kind(new):
            self.add(
                f"{self.path}.dtype",
                ChangeKind.DTYPE_KIND_CHANGED,
                _BREAKING,
                f"{change}: values travel in {rules.a_list_kind(new)} instead of"
                f" {rules.a_list_kind(old)}, which readers of the other kind reject",
            )
            return
        backward, forward = rules.values_fit(old, new), rules.values_fit(new, old)
        if backward:
            kind, why = ChangeKind.DTYPE_WIDENED, f"{new['dtype']} holds every {old['dtype']} value"
        elif forward:
            kind, why = (
                ChangeKind.DTYPE_NARROWED,
                f"{old['dtype']} holds every {new['dtype']} value",
            )
        else:
            kind, why = ChangeKind.DTYPE_CHANGED, "neither dtype holds every value of the other"
        self.add(
            f"{self.path}.dtype",
            kind,
            Classification.of(backward, forward),
            f"{change} ({why}; readers check each value on decode): {_readers(backward, forward)}",
        )

    def shape(self) -> None:
        old, new = self.old, self.new
        backward = rules.counts_fit(old, new)
        forward = rules.counts_fit(new, old)
        if rules.is_fixed(old) and not rules.is_fixed(new):
            kind = ChangeKind.MADE_VARIABLE
        elif rules.is_fixed(new) and not rules.is_fixed(old):
            kind = ChangeKind.MADE_FIXED
        else:
            kind = ChangeKind.SHAPE_CHANGED
        self.add(
            f"{self.path}.shape",
            kind,
            Classification.of(backward, forward),
            f"shape of {new['name']!r} changed from {shape_text(old['shape'])} to"
            f" {shape_text(new['shape'])} ({_count_check(new)}): {_readers(backward, forward)}",
        )

    def layout(self) -> None:
        old, new, name = self.old, self.new, self.new["name"]
        backward, forward = rules.layouts_fit(old, new), rules.layouts_fit(new, old)
        field = "shape_from" if "shape_from" in old or "shape_from" in new else "row_lengths_from"
        self.add(
            f"{self.path}.{field}",
            ChangeKind.LAYOUT_CHANGED,
            Classification.of(backward, forward),
            f"{field} of {name!r} changed from {old.get(field)!r} to {new.get(field)!r} (where the"
            f" {'shape' if field == 'shape_from' else 'row lengths'} of each value is stored):"
            f" {_readers(backward, forward)}",
        )

    def optional(self) -> None:
        old, new, section = self.old, self.new, self.section
        backward = rules.absence_fits(old, new, section)
        forward = rules.absence_fits(new, old, section)
        made = new["optional"]
        if made:
            what = f"{new['name']!r} made optional: new writers may leave it out"
            effect = (
                f"old readers read that as {rules.absent_value(old, section)}"
                if forward
                else ("old readers fail on such records (a required feature is missing)")
            )
        else:
            what = f"{new['name']!r} made required: new writers always write it"
            effect = (
                f"new readers read old records without it as {rules.absent_value(new, section)}"
                if backward
                else "new readers fail on old records that left it out"
            )
        self.add(
            f"{self.path}.optional",
            ChangeKind.MADE_OPTIONAL if made else ChangeKind.MADE_REQUIRED,
            Classification.of(backward, forward),
            f"{what}; {effect}",
        )

    def default(self) -> None:
        old, new = self.old["default"], self.new["default"]
        if old is None:
            kind, what = ChangeKind.DEFAULT_ADDED, f"default {new!r} added"
        elif new is None:
            kind, what = ChangeKind.DEFAULT_REMOVED, f"default {old!r} removed"
        else:
            kind, what = ChangeKind.DEFAULT_CHANGED, f"default changed from {old!r} to {new!r}"
        self.add(
            f"{self.path}.default",
            kind,
            _FULL,
            f"{what} for {self.new['name']!r}: writers always write a feature that is not"
            " optional, so only data without the key (written before it existed, or by other"
            " tools) reads differently",
        )
