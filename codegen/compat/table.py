"""The compatibility table: one :class:`Rule` per kind of change, with its classification and why.

This is the documentation of :mod:`codegen.compat.compare` (``markdown_table()`` renders it for
docs/versioning.md); the tests prove every row with generated readers and writers.
"""

from __future__ import annotations

from dataclasses import dataclass

from codegen.compat.changes import ChangeKind

K = ChangeKind


@dataclass(frozen=True, slots=True)
class Rule:
    """One row of the table: a change (``id`` names the row), its kind, classification and why."""

    id: str
    kind: ChangeKind
    change: str
    classification: str
    why: str


RULES: tuple[Rule, ...] = (
    Rule("version_changed", K.VERSION_CHANGED, "`version` changed", "full",
         "The version is not stored in records. `tfr-gen diff` still requires it to increase with"
         " every change other than docs, and never to decrease."),
    Rule("doc_changed", K.DOC_CHANGED, "a `doc` changed (schema, record or feature)", "full",
         "Docs are not on the wire."),
    Rule("record_added", K.RECORD_ADDED, "record added", "backward",
         "No old data holds it; old code has no class to read its new data."),
    Rule("record_removed", K.RECORD_REMOVED, "record removed", "forward",
         "New code has no class to read its old data; no new data of it is written."),
    Rule("record_renamed", K.RECORD_RENAMED, "record renamed (same features, other name)", "full",
         "A record's name is not on the wire: the same bytes decode under either name. Code naming"
         " the class, and dataset prefixes derived from it, must change."),
    Rule("record_kind_changed", K.RECORD_KIND_CHANGED, "Example <-> SequenceExample", "full",
         "Example `features` and SequenceExample `context` are the same protobuf field, and an"
         " Example reader skips feature lists: the features decide (`sequence` features count as"
         " added or removed)."),
    Rule("schema_removed", K.SCHEMA_REMOVED, "schema file deleted (`diff --against`)", "breaking",
         "The generated module is gone: nothing reads the data it described."),
    Rule("feature_added_required", K.FEATURE_ADDED,
         "feature added, required (fixed shape, no default, not optional)", "forward",
         "Old readers ignore unknown keys; new readers fail on old data (a required feature is"
         " missing)."),
    Rule("feature_added_default", K.FEATURE_ADDED, "feature added with a default", "full",
         "New readers read old data's missing key as the default."),
    Rule("feature_added_optional", K.FEATURE_ADDED, "feature added, optional", "full",
         "New readers read the missing key as `None`."),
    Rule("feature_added_variable", K.FEATURE_ADDED, "feature added with a leading `null`", "full",
         "New readers read the missing key as no rows."),
    Rule("feature_removed_required", K.FEATURE_REMOVED, "feature removed, required", "backward",
         "New readers ignore the key in old data; old readers fail on new data without it."),
    Rule("feature_removed_default", K.FEATURE_REMOVED, "feature removed, had a default", "full",
         "Old readers read its absence as the default."),
    Rule("feature_removed_optional", K.FEATURE_REMOVED, "feature removed, optional", "full",
         "Old readers read its absence as `None`."),
    Rule("feature_removed_variable", K.FEATURE_REMOVED, "feature removed, leading `null`", "full",
         "Old readers read its absence as no rows."),
    Rule("feature_renamed", K.FEATURE_RENAMED, "attribute renamed, same `key`", "full",
         "Only the key is on the wire; code using the attribute must change."),
    Rule("feature_moved", K.FEATURE_MOVED, "feature moved between `context` and `sequence`",
         "breaking", "Feature lists and context features are different fields: each side's readers"
         " miss the other's values."),
    Rule("key_changed", K.KEY_CHANGED, "`key` changed", "breaking",
         "The attribute reads another key: values under the old key are never seen (a required"
         " feature fails; otherwise the default, `None` or no rows silently replace them)."),
    Rule("key_reused", K.KEY_REUSED, "new feature under a key an old feature used", "breaking",
         "Each side reads the other attribute's values."),
    Rule("dtype_widened", K.DTYPE_WIDENED,
         "dtype widened on the same list: `int32`->`int64`, `uint8`->`int16`, `bool`->any int,"
         " `string`->`bytes`", "backward",
         "Readers range-check every decoded int (and check UTF-8 for `string`): old values always"
         " fit the new dtype, new values may not fit the old one."),
    Rule("dtype_narrowed", K.DTYPE_NARROWED, "dtype narrowed (the reverse)", "forward",
         "The range check of new readers fails on old values outside the new range."),
    Rule("dtype_changed", K.DTYPE_CHANGED,
         "dtype changed on the same list, neither holding the other (`int8`<->`uint8`); any"
         " dtype change of a raw feature", "breaking",
         "Each side has values the other's range check rejects; raw bytes are reinterpreted."),
    Rule("dtype_kind_changed", K.DTYPE_KIND_CHANGED,
         "dtype moved to another list (`int64`<->`float32`<->`string`)", "breaking",
         "A feature in the wrong list kind fails to decode."),
    Rule("shape_same_count", K.SHAPE_CHANGED, "fixed shape changed, same size (`[6]`->`[2, 3]`)",
         "full", "Values travel flat in C order and the count matches: both decode (the values are"
         " regrouped; check the meaning)."),
    Rule("shape_other_count", K.SHAPE_CHANGED, "fixed shape changed, other size", "breaking",
         "A wrong value count fails to decode."),
    Rule("shape_row_divides", K.SHAPE_CHANGED,
         "row size of a leading-`null` shape changed to a divisor (`[null, 6]`->`[null, 3]`)",
         "backward", "Readers need a multiple of their row size: every old count is a multiple of"
         " the new row size, not the reverse."),
    Rule("shape_row_multiple", K.SHAPE_CHANGED,
         "row size changed to a multiple (`[null, 3]`->`[null, 6]`)", "forward",
         "Every new count is a multiple of the old row size, not the reverse."),
    Rule("shape_row_other", K.SHAPE_CHANGED,
         "row size changed otherwise (`[null, 2]`->`[null, 3]`)", "breaking",
         "Counts of either side can be wrong for the other."),
    Rule("made_variable", K.MADE_VARIABLE,
         "fixed -> leading `null` (`[3]`->`[null]`, `[]`->`[null]`)", "backward",
         "The old size is a multiple of the new row size; old readers fail on other lengths."),
    Rule("made_variable_misfit", K.MADE_VARIABLE, "fixed -> leading `null`, size not a multiple"
         " of the row (`[3]`->`[null, 2]`)", "breaking", "Neither side's counts fit the other."),
    Rule("made_fixed", K.MADE_FIXED, "leading `null` -> fixed (`[null]`->`[3]`)", "forward",
         "New readers fail on old lengths other than the new size; the new size is a multiple of"
         " the old row size."),
    Rule("made_fixed_misfit", K.MADE_FIXED, "leading `null` -> fixed, size not a multiple of the"
         " row (`[null, 2]`->`[3]`)", "breaking", "Neither side's counts fit the other."),
    Rule("step_shape", K.MADE_VARIABLE, "step shape of a `sequence` feature (`[3]`->`[null]`)",
         "backward", "The list rules above apply to every step."),
    Rule("ragged_same_row", K.SHAPE_CHANGED,
         "ragged shape changed, same depth and row size (`[null, null, 6]`->`[null, null, 2, 3]`)",
         "full", "The row lengths and the value count fit; the rows are regrouped."),
    Rule("ragged_to_rows", K.SHAPE_CHANGED,
         "ragged -> one leading `null` (`[null, null]`->`[null]`)", "backward",
         "A reader with one `null` reads the values flat and ignores the row lengths"
         " (the nesting is dropped); a ragged reader finds no row lengths in new data."),
    Rule("ragged_depth", K.SHAPE_CHANGED,
         "ragged depth or row size changed (`[null, null]`->`[null, null, null]`)", "breaking",
         "Each side's row-length companions do not fit the other's."),
    Rule("raw_same_size", K.SHAPE_CHANGED, "raw fixed shape changed, same size (`[2, 2]`->`[4]`)",
         "full", "The byte count matches; the values are regrouped."),
    Rule("raw_relaxed", K.SHAPE_CHANGED,
         "raw shape relaxed to `null` (`[null, 3]`->`[null, null]`)", "backward",
         "Readers check the stored `<key>/shape` against their shape: every old shape fits the new"
         " one, not the reverse."),
    Rule("raw_fixed_variable", K.MADE_VARIABLE,
         "raw shape fixed <-> with a `null` (`[4]`->`[null]`)", "breaking",
         "A fixed shape stores no `<key>/shape`, which a reader with a `null` needs; a"
         " fixed reader checks the byte count, which varies."),
    Rule("default_added", K.DEFAULT_ADDED, "default added", "full",
         "Writers always write a non-optional feature; the default only applies to records"
         " without the key (written before the feature existed, or by other tools)."),
    Rule("default_removed", K.DEFAULT_REMOVED, "default removed", "full", "As above."),
    Rule("default_changed", K.DEFAULT_CHANGED, "default changed", "full", "As above."),
    Rule("made_optional", K.MADE_OPTIONAL, "made optional (fixed shape)", "backward",
         "New writers may leave it out; old readers fail on that unless the old feature had a"
         " default (then `full`)."),
    Rule("made_optional_default", K.MADE_OPTIONAL, "made optional, old feature had a default",
         "full", "Old readers read the missing key as their default."),
    Rule("made_optional_variable", K.MADE_OPTIONAL, "made optional (leading `null`)", "full",
         "Old readers read a missing variable-length feature as no rows, new readers as"
         " `None`."),
    Rule("made_required", K.MADE_REQUIRED, "made required (fixed shape)", "forward",
         "Old records may lack it; new readers fail on them unless the new feature has a default"
         " (then `full`)."),
    Rule("made_required_default", K.MADE_REQUIRED, "made required with a new default", "full",
         "New readers read old records without it as the default."),
    Rule("made_required_variable", K.MADE_REQUIRED, "made required (leading `null`)", "full",
         "A missing variable-length feature reads as no rows."),
    Rule("encoding_changed", K.ENCODING_CHANGED, "`encoding` changed (`list` <-> `raw`)",
         "breaking", "Raw values travel as one bytes value: a list reader rejects them and back."),
    Rule("layout_changed", K.LAYOUT_CHANGED,
         "`shape_from` or `row_lengths_from` changed (a stored shape or row lengths)", "breaking",
         "Readers look for the shape or the row lengths under other keys or in another form: records"
         " of the other side fail (the companion is missing)."),
    Rule("quality_changed", K.QUALITY_CHANGED, "JPEG `quality` changed", "full",
         "Only how writers compress changes: every reader decodes a JPEG of any quality."),
    Rule("field_changed", K.FIELD_CHANGED, "a canonical field with no rule changed", "breaking",
         "Treated as failing until a rule exists (a newer canonical form)."),
)  # fmt: skip
"""Every row of the compatibility table, in documentation order."""


def markdown_table() -> str:
    """The table as Markdown: change, kind, classification, why."""
    lines = ["| change | kind | class | why |", "|---|---|---|---|"]
    lines += [f"| {r.change} | `{r.kind.value}` | {r.classification} | {r.why} |" for r in RULES]
    return "\n".join(lines) + "\n"
