"""The naming rules of the schema language: record, feature and module names.

Each ``*_name_problem`` function returns ``None`` for a valid name, or a message saying what is
wrong and how to fix it.
"""

from __future__ import annotations

import keyword
import re
import sys

SCHEMA_SUFFIXES = (".yaml", ".yml")
"""The file name suffixes of schema files (a directory is searched for them)."""

RECORD_NAME = re.compile(r"[A-Z][A-Za-z0-9]*")
"""Record names are CamelCase: they become class names."""

FEATURE_NAME = re.compile(r"[a-z][a-z0-9_]*")
"""Feature names are snake_case: they become attribute and keyword-argument names."""

SOFT_KEYWORDS = frozenset({"_", "case", "match", "type"})
"""Python's soft keywords, fixed here so that validity does not depend on the running Python."""

RESERVED_NAMES = frozenset(
    {
        "encode",
        "decode",
        "to_proto",
        "from_proto",
        "feature_spec",
        "tf_feature_spec",
        "tf_context_spec",
        "tf_sequence_spec",
        "tf_parse",
        "write_tfrecord",
        "read_tfrecord",
        "write_dataset",
        "read_dataset",
        "decode_batch",
        "dataset",
        "beam_coder",
        "dataset_manifest",
        "indexed",
        "records",
        "to_dict",
        "from_records",
        "replace",
        "self",
        "cls",
    }
)
"""Members a generated record class has or will have; names starting with ``_`` are reserved too."""

CLASS_SCOPE_BUILTINS = frozenset(
    {
        "bool",
        "bytes",
        "classmethod",
        "dict",
        "float",
        "int",
        "list",
        "object",
        "property",
        "staticmethod",
        "str",
        "tuple",
    }
)
"""Builtins that a generated class body names in annotations and decorators; an attribute of the
same name would shadow them there."""

IMPORTED_PACKAGES = frozenset(
    {
        "codegen",
        "numpy",
        "crc32c",
        "isal",
        "deflate",
        "fsspec",
        "google",
        "tensorflow",
        "torch",
        "apache_beam",
        "typing_extensions",
        "simplejpeg",
        "PIL",
    }
)
"""The packages beyond the standard library that generated modules and the runtime import (some lazily): a
generated module of the same name would be imported in their place."""

FORBIDDEN_MODULE_NAMES = IMPORTED_PACKAGES | frozenset(sys.stdlib_module_names)
"""Module names that would shadow this package, a package it imports or a standard-library module when imported."""


def record_name_problem(name: str) -> str | None:
    """What is wrong with ``name`` as a record (class) name, or ``None``."""
    if not RECORD_NAME.fullmatch(name):
        return (
            f"record name {name!r} must be CamelCase (a capital letter, then letters and digits),"
            " because it becomes a class name"
        )
    if keyword.iskeyword(name):
        return f"record name {name!r} is a Python keyword"
    return None


def feature_name_problem(name: str) -> str | None:
    """What is wrong with ``name`` as a feature (attribute) name, or ``None``."""
    keep_key = f"; rename it and set 'key: {name}' to keep the key"
    if name.startswith("_"):
        return (
            f"feature name {name!r} starts with '_', which is reserved for the generated code"
            + keep_key
        )
    if not FEATURE_NAME.fullmatch(name):
        return (
            f"feature name {name!r} is not snake_case (a lowercase letter, then lowercase letters,"
            f" digits and '_'){keep_key}"
        )
    if keyword.iskeyword(name):
        return f"feature name {name!r} is a Python keyword{keep_key}"
    if name in SOFT_KEYWORDS:
        return f"feature name {name!r} is a Python soft keyword{keep_key}"
    if name in RESERVED_NAMES:
        return f"feature name {name!r} is reserved for a member of the generated class{keep_key}"
    if name in CLASS_SCOPE_BUILTINS:
        return (
            f"feature name {name!r} would shadow the builtin {name!r} in the generated class"
            + keep_key
        )
    return None


def _shadowing(stem: str) -> str | None:
    """Why ``stem`` cannot name a generated module or package, or ``None``."""
    if not stem.isidentifier():
        return "is not a Python identifier"
    if keyword.iskeyword(stem):
        return "is a Python keyword"
    if stem == "codegen":
        return "would shadow the tfr-gen package"
    if stem in IMPORTED_PACKAGES:
        return f"would shadow the {stem!r} package, which generated modules import"
    if stem in FORBIDDEN_MODULE_NAMES:
        return "would shadow a standard-library module"
    return None


def module_name_problem(stem: str, suffix: str) -> str | None:
    """What is wrong with the file stem ``stem`` as a module name, or ``None``.

    ``suffix`` is the file's extension, used in the suggested new file name. The generator applies this rule (a
    schema that is only read, as ``tfr-gen validate`` reads it, may have any file name).
    """
    reason = _shadowing(stem)
    if reason is None:
        return None
    return (
        f"the module name {stem!r} (the schema file's name) {reason};"
        f" rename the file, e.g. to {suggest_module_name(stem) + suffix!r}"
    )


def package_name_problem(name: str) -> str | None:
    """What is wrong with the directory name ``name`` as the name of a package of generated modules, or ``None``."""
    reason = _shadowing(name)
    if reason is None:
        return None
    return (
        f"the package name {name!r} (a directory of schemas) {reason};"
        f" rename the directory, e.g. to {suggest_module_name(name)!r}"
    )


def suggest_module_name(stem: str) -> str:
    """A valid module name close to ``stem``: its words joined by ``_``, made distinct if needed."""
    words = re.findall(r"[^\W_]+", stem)
    name = "_".join(words) or "schema"
    if name[0].isdigit():
        name = "schema_" + name
    if keyword.iskeyword(name) or name in FORBIDDEN_MODULE_NAMES:
        name += "_schema"
    return name
