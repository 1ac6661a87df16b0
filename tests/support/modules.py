"""Generated modules for the tests: the committed ones of ``generated/``, and modules generated
from schema text into a directory or executed from source."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from codegen.generator.load import parse_schema
from codegen.generator.render import render
from support.paths import GENERATED


def generated_module(name: str) -> ModuleType:
    """The committed generated module ``name``, imported with ``generated/`` on ``sys.path``."""
    if str(GENERATED) not in sys.path:
        sys.path.append(str(GENERATED))
    module = importlib.import_module(name)
    origin = Path(module.__file__ or "").resolve()
    assert origin == GENERATED / f"{name}.py", f"{name} was imported from {origin}"
    return module


def load_module(path: Path, name: str) -> ModuleType:
    """Import the Python file at ``path`` as module ``name`` (registered in ``sys.modules``, unless
    its import fails)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def generate_module(text: str, name: str, directory: Path) -> ModuleType:
    """Generate the module of schema ``text`` as ``directory/<name>.py`` and import it as ``name``."""
    source = render(parse_schema(text, f"{name}.yaml"), command=f"tfr-gen {name}.yaml")
    path = directory / f"{name}.py"
    path.write_text(source, encoding="utf-8")
    return load_module(path, name)


def module_from_source(source: str, name: str) -> ModuleType:
    """Execute ``source`` as module ``name`` (registered in ``sys.modules``), without a file."""
    spec = importlib.util.spec_from_loader(name, loader=None)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    exec(compile(source, f"<{name}>", "exec"), module.__dict__)
    return module
