"""What a generated module says about its schema, and whether data of one record reads as another.

A generated record class passes ``SchemaInfo("customer", "Customer", SCHEMA_VERSION,
SCHEMA_FINGERPRINT, SCHEMA_CANONICAL)`` to the dataset functions; a dataset manifest stores the
same five values for the writer. :func:`check_readable` compares the two records with the
compatibility engine (:mod:`codegen.compat`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from codegen.errors import SchemaMismatchError, TfrGenError

if TYPE_CHECKING:
    from codegen.compat import Change

__all__ = ["SchemaInfo", "check_readable"]


@dataclass(frozen=True, slots=True)
class SchemaInfo:
    """One record of one schema: its module, record (class) name, ``version``, fingerprint and
    canonical form (the generated module's ``SCHEMA_*`` constants)."""

    module: str
    record: str
    version: int
    fingerprint: str
    canonical: str

    def record_schema(self) -> Mapping[str, Any]:
        """The record's canonical form, after checking the canonical text against the fingerprint.

        Raises :class:`~codegen.errors.TfrGenError` when they disagree or the record is missing.
        """
        where = f"schema {self.module!r} (version {self.version})"
        try:
            digest = hashlib.sha256(self.canonical.encode("ascii")).hexdigest()
        except UnicodeEncodeError:
            raise TfrGenError(f"{where}: the canonical form is not ASCII text") from None
        if digest != self.fingerprint:
            raise TfrGenError(
                f"{where}: the canonical form does not match fingerprint {self.fingerprint[:16]}"
            )
        try:
            schema = json.loads(self.canonical)
        except ValueError as exc:
            raise TfrGenError(f"{where}: the canonical form is not valid JSON: {exc}") from None
        records = schema.get("records") if isinstance(schema, dict) else None
        for record in records if isinstance(records, list) else []:
            if isinstance(record, dict) and record.get("name") == self.record:
                return record
        raise TfrGenError(f"{where} has no record {self.record!r}")

    def describe(self) -> str:
        """``customer.Customer (version 1, fingerprint dce8b7e54f6845e6)`` for messages."""
        return (
            f"{self.module}.{self.record} (version {self.version},"
            f" fingerprint {self.fingerprint[:16]})"
        )


def check_readable(writer: SchemaInfo, reader: SchemaInfo, *, source: str) -> list[Change]:
    """The changes from the writer's record to the reader's, if the reader reads all its data.

    Data is readable when every change is ``backward`` or ``full`` (readers generated from the
    newer schema read data written with the older one; here the reader plays the newer part).
    Otherwise raises :class:`~codegen.errors.SchemaMismatchError` naming every change; ``source``
    names the data in the message.
    """
    # Imported here: codegen.compat imports the runtime's dtypes, and this module is part of the
    # runtime package.
    from codegen.compat import compare_records

    if writer.fingerprint == reader.fingerprint and writer.record == reader.record:
        return []
    changes = compare_records(writer.record_schema(), reader.record_schema())
    blocking = [c for c in changes if not c.classification.backward]
    if blocking:
        lines = [
            f"  {c.classification.value}{' (blocks reading)' if c in blocking else ''}: {c.path}:"
            f" {c.message}"
            for c in changes
        ]
        raise SchemaMismatchError(
            f"{source} was written as {writer.describe()}, which {reader.describe()} cannot read"
            f" safely: {len(blocking)} of {len(changes)} change(s) from the writer's schema to the"
            " reader's are not backward compatible:\n" + "\n".join(lines),
            changes,
        )
    return changes
