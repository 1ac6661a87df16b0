"""The pydantic models of a schema document: its structure and the types of its fields.

Validation here is strict (``version: 1.0`` is not an integer, ``optional: "yes"`` is not a
boolean) and rejects unknown fields; the rules that need more than one field or the position of a
value (names, dtypes, shapes, defaults) are checked by :mod:`codegen.generator.lower`.
``SchemaDoc.model_json_schema()`` is a JSON Schema for editors.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.config import JsonDict

from codegen.dtypes import DTYPES, Kind
from codegen.generator.naming import FEATURE_NAME, RECORD_NAME

LIST_DTYPES = tuple(name for name, dtype in DTYPES.items() if dtype.list_ok)
"""The dtypes that travel in an Int64List, FloatList or BytesList (the ``list`` encoding)."""

SHAPE_DTYPES = tuple(name for name, dtype in DTYPES.items() if dtype.kind is Kind.INT)
"""The dtypes a stored shape (``shape_from``) may have."""

RAW_DTYPES = tuple(name for name, dtype in DTYPES.items() if dtype.kind in (Kind.INT, Kind.FLOAT))
"""The dtypes ``encoding: raw`` stores: every integer and float dtype (not bool, string, bytes)."""

SECTIONS = ("features", "context", "sequence")
"""The fields of a record that hold features."""


_FEATURE_NAMES: JsonDict = {"propertyNames": {"pattern": f"^{FEATURE_NAME.pattern}$"}}
_RECORD_NAMES: JsonDict = {"propertyNames": {"pattern": f"^{RECORD_NAME.pattern}$"}}


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


class ShapeFromDoc(_Strict):
    """One feature that holds a raw tensor's whole shape."""

    key: str = Field(min_length=1, description="The key of the feature holding the shape.")
    dtype: str = Field(
        default="int64",
        description="The integer dtype of the stored dims.",
        json_schema_extra={"enum": list(SHAPE_DTYPES)},
    )
    encoding: Literal["list", "raw"] = Field(
        default="list",
        description=(
            "'list': the dims in an Int64List; 'raw': the little-endian bytes of the dims as one"
            " bytes value (np.array(image.shape, np.int32).tobytes() with dtype int32)."
        ),
    )


class FeatureDoc(_Strict):
    """One feature of a record: how one attribute of the generated class is stored."""

    key: str | None = Field(
        default=None,
        min_length=1,
        description=(
            "The feature key in the tf.train.Example (any text); defaults to the feature's name."
        ),
    )
    dtype: str = Field(
        description=(
            "The value type. float64, float16 and uint64 do not fit the list encoding: use"
            " float32 or int64, or 'encoding: raw'. bool, string and bytes only use the list"
            " encoding."
        ),
        json_schema_extra={"enum": list(DTYPES)},
    )
    shape: list[int | None] = Field(
        default_factory=list,
        description=(
            "Dimensions: [] for a scalar, positive integers for fixed sizes, null for a dimension"
            " of any length. With the list encoding only leading dimensions may be null; two or"
            " more leading nulls make a ragged tensor (its row lengths are stored in"
            " '<key>/row_lengths_<d>' features). With 'encoding: raw' the rank is at least 1 and"
            " any dimension may be null (the shape is then stored in a '<key>/shape' feature). In"
            " 'sequence' the shape is that of one step and only its first dimension may be null."
        ),
        json_schema_extra={
            "items": {"anyOf": [{"type": "integer", "minimum": 1}, {"type": "null"}]}
        },
    )
    default: Any = Field(
        default=None,
        description=(
            "The value used when the feature is absent from an Example; only for fully known"
            " shapes with the list encoding, and not for 'sequence' features (TensorFlow rejects"
            " them). A scalar for shape [], otherwise a nested list matching the shape or a flat"
            " list of all values."
        ),
    )
    optional: bool = Field(
        default=False,
        description=(
            "Whether the feature may be absent (the attribute is then None; a 'sequence' feature"
            " reads as zero steps); not with 'default'."
        ),
    )
    doc: str | None = Field(default=None, description="Documentation of the attribute.")
    encoding: Literal["list", "raw", "jpeg", "png", "image"] = Field(
        default="list",
        description=(
            "How values travel: 'list' in an Int64List/FloatList/BytesList; 'raw' as one bytes"
            " value holding the little-endian, row-major tensor (integer and float dtypes, scalars"
            " included; no default; not in 'sequence'); 'jpeg', 'png' or 'image' (reads either,"
            " writes PNG) as one encoded image of dtype uint8 and shape [height, width, channels]"
            " (1 to 4 channels, any dimension may be null; not in 'sequence')."
        ),
    )
    quality: int | None = Field(
        default=None,
        ge=1,
        le=100,
        description="With 'encoding: jpeg': the JPEG quality images are written at (default 95).",
    )

    shape_from: Any = Field(
        default=None,
        description=(
            "With 'encoding: raw' and a null dimension: where the shape is stored instead of an"
            " int64 list under '<key>/shape'. A mapping names one feature holding the whole shape"
            " ({key: shape, dtype: int32, encoding: raw}: the raw bytes of an int32 array); a list"
            " names one int64 scalar feature per null dimension, in order ([image/height,"
            " image/width]). These keys may not be features of the record too."
        ),
        json_schema_extra={
            "anyOf": [
                ShapeFromDoc.model_json_schema(),
                {"type": "array", "items": {"type": "string", "minLength": 1}},
            ]
        },
    )
    row_lengths_from: list[str] | None = Field(
        default=None,
        description=(
            "For a ragged feature (two or more leading nulls): the keys of its row lengths, one"
            " per null dimension after the first, instead of '<key>/row_lengths_<d>'"
            " (TensorFlow Datasets writes '<name>/ragged_row_lengths_<i>')."
        ),
    )


class RecordDoc(_Strict):
    """One record: a tf.train.Example (``features``) or a tf.train.SequenceExample.

    A SequenceExample record has ``sequence`` features (its feature lists) and optionally
    ``context`` features.
    """

    doc: str | None = Field(default=None, description="Documentation of the record class.")
    features: dict[str, FeatureDoc] | None = Field(
        default=None,
        min_length=1,
        json_schema_extra=_FEATURE_NAMES,
        description=(
            "The features of a tf.train.Example record, by attribute name (snake_case), in order."
        ),
    )
    context: dict[str, FeatureDoc] | None = Field(
        default=None,
        min_length=1,
        json_schema_extra=_FEATURE_NAMES,
        description=(
            "The context features of a tf.train.SequenceExample record (one value per record,"
            " same feature syntax as 'features'); needs 'sequence'."
        ),
    )
    sequence: dict[str, FeatureDoc] | None = Field(
        default=None,
        min_length=1,
        json_schema_extra=_FEATURE_NAMES,
        description=(
            "The feature lists of a tf.train.SequenceExample record: one Feature per step, each"
            " of the feature's shape (the list encoding, no default)."
        ),
    )


class SchemaDoc(_Strict):
    """A tfr-gen schema: the records of one generated Python module."""

    model_config = ConfigDict(title="tfr-gen schema")

    version: int = Field(
        ge=1, description="The schema's version; bump it on every semantic change."
    )
    doc: str | None = Field(default=None, description="Documentation of the generated module.")
    records: dict[str, RecordDoc] = Field(
        min_length=1,
        description="The records, by class name (CamelCase), in order.",
        json_schema_extra=_RECORD_NAMES,
    )
