"""The directories of the repository the tests read."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent
"""``tests/``."""
ROOT = TESTS.parent
"""The repository root."""
SCHEMAS = ROOT / "schemas"
"""The schemas of ``generated/``."""
GENERATED = ROOT / "generated"
"""The committed generated modules."""
DATA = TESTS / "data"
"""The tests' schemas, the compatibility corpus and the script that made it."""
SNAPSHOTS = TESTS / "snapshots"
"""The expected outputs of the command line."""
CORPUS = DATA / "corpus"
"""The compatibility corpus: TFRecord files written by TensorFlow and the ``tfrecord`` package."""
