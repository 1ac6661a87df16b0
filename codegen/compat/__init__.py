"""Schema compatibility: which changes between two versions of a schema keep data readable.

:func:`compare_schemas` lists every :class:`Change` between two canonical schemas, each with its
:class:`Classification` (``backward``, ``forward``, ``full`` or ``breaking``) derived from the
decode rules of the generated readers; :data:`RULES` is the table of change kinds. Only the
standard library and :mod:`codegen.dtypes` are needed, so generated modules and datasets
can check compatibility at run time.
"""

from codegen.compat.changes import Change, ChangeKind, Classification, Mode, Position, overall
from codegen.compat.compare import Locations, compare_records, compare_schemas
from codegen.compat.table import RULES, Rule, markdown_table

__all__ = [
    "RULES",
    "Change",
    "ChangeKind",
    "Classification",
    "Locations",
    "Mode",
    "Position",
    "Rule",
    "compare_records",
    "compare_schemas",
    "markdown_table",
    "overall",
]
