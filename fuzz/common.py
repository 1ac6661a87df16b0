"""What the fuzz targets share: the record classes they decode and the TFRecord target's mode byte.

Import it inside ``atheris.instrument_imports()`` so that the ``codegen`` modules it imports are
instrumented for coverage.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from codegen.generator.load import load_schema
from codegen.generator.render import render_source
from codegen.runtime.io.compression import Compression
from codegen.runtime.record import Record

ROOT = Path(__file__).resolve().parent.parent
GENERATED = ROOT / "generated"
DATA = ROOT / "tests" / "data"
GENERATED_MODULES = tuple(sorted(path.stem for path in GENERATED.glob("*.py")))
"""Every generated module (the fuzz targets instrument them too)."""
RENDERED_SCHEMAS = (DATA / "kinds.yaml", DATA / "sequence.yaml")
"""Schemas rendered at start-up: every feature kind, and a SequenceExample."""

COMPRESSIONS: tuple[Compression, ...] = (None, "gzip", "zlib")


def _rendered(schema: Path) -> ModuleType:
    name = f"fuzz_{schema.stem}"
    source = render_source(load_schema(schema), command="tfr-gen")
    spec = importlib.util.spec_from_loader(name, loader=None)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    exec(compile(source, f"<{name}>", "exec"), module.__dict__)
    return module


def record_classes() -> list[type[Any]]:
    """Every record class of ``generated/`` and of the rendered schemas."""
    if str(GENERATED) not in sys.path:
        sys.path.append(str(GENERATED))
    modules = [importlib.import_module(name) for name in GENERATED_MODULES]
    modules += [_rendered(schema) for schema in RENDERED_SCHEMAS]
    objects = [getattr(m, n) for m in modules for n in m.__all__]
    return [c for c in objects if isinstance(c, type) and issubclass(c, Record)]


def mode_byte(compression: Compression, *, skip: bool, verify_crc: bool) -> int:
    """The first byte of a ``fuzz_tfrecord`` input: how the rest of the input is read."""
    return COMPRESSIONS.index(compression) | skip << 2 | (not verify_crc) << 3


def read_mode(byte: int) -> tuple[Compression, bool, bool]:
    """``(compression, skip, verify_crc)`` of a mode byte (any byte is a mode)."""
    return COMPRESSIONS[byte % 4 % 3], bool(byte & 4), not byte & 8
