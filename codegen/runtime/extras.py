"""Optional dependencies: importing one, or saying which extra of ``tfr-gen`` installs it."""

from __future__ import annotations

import importlib
from types import ModuleType

from codegen.errors import MissingExtraError

__all__ = ["EXTRAS", "optional_module"]

EXTRAS: dict[str, str] = {
    "pyarrow": "arrow",
    "pyarrow.compute": "arrow",
    "pyarrow.parquet": "arrow",
    "pandas": "pandas",
    "polars": "polars",
    "duckdb": "duckdb",
}
"""The extra of ``tfr-gen`` that installs each optional module."""


def optional_module(name: str, needed_for: str) -> ModuleType:
    """The module ``name``; :class:`MissingExtraError` naming its extra (``pip install 'tfr-gen[arrow]'``)
    when it is not installed."""
    try:
        return importlib.import_module(name)
    except ImportError:
        extra = EXTRAS[name]
        raise MissingExtraError(
            f"{needed_for} needs {name.split('.')[0]}, which is not installed: "
            f"pip install 'tfr-gen[{extra}]'"
        ) from None
