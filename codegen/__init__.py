"""tfr-gen: typed Python modules for TFRecord data from one YAML schema."""

from __future__ import annotations

__version__ = "0.1.0"
