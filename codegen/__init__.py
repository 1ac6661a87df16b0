"""tfr-gen: typed Python modules for TFRecord data from one YAML schema."""

from __future__ import annotations

__version__ = "0.2.0"

ABI_VERSION = 2
"""The version of the runtime names generated modules use (:mod:`codegen.runtime._abi`): modules are generated for
it and run only on a runtime of the same ABI. It changes whenever one of those names changes in a way an existing
generated module would notice; modules generated before it existed (tfr-gen 0.1) count as ABI 1."""
