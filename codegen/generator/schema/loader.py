"""Safe YAML loading of schema files into plain data, with the position of every value and key.

The text is composed into nodes by a :class:`yaml.SafeLoader` subclass and converted to plain
Python data here, so that duplicate keys, tags and alias expansion are checked with their positions:

* plain scalars are resolved with the YAML 1.2 core schema: ``true``/``false`` are the only
  booleans (``on``, ``no`` are strings), ``1e-3`` is a float and ``010`` is ten; explicitly tagged
  scalars must fit their tag;
* only the standard ``!!str``, ``!!int``, ``!!float``, ``!!bool``, ``!!null``, ``!!seq``,
  ``!!map`` tags and ``!!binary`` are accepted; merge keys (``<<``) are not;
* anchors and aliases are allowed, but aliases may add at most :data:`MAX_ALIAS_NODES` nodes,
  recursive aliases are errors and nesting is limited to :data:`MAX_DEPTH` levels;
* the text is at most :data:`MAX_BYTES` bytes of UTF-8.

Problems that stop loading (syntax errors, size, alias bombs) raise
:class:`~codegen.errors.SchemaError` at once; the others are returned as
:attr:`YamlDocument.diagnostics`, the offending value replaced by ``None`` and its path listed in
:attr:`YamlDocument.invalid` so that later stages do not report it again.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from codegen.errors import Diagnostic, SchemaError

Path = tuple[str | int, ...]
"""Where a value is in the loaded data: mapping keys and sequence indices from the root."""

MAX_BYTES = 1 << 20
"""The largest schema file accepted, in bytes of UTF-8."""

MAX_ALIAS_NODES = 10_000
"""How many nodes aliases may add to the document when they are expanded."""

MAX_DEPTH = 100
"""How deeply collections may nest."""

_YAML = "tag:yaml.org,2002:"
_STR, _NULL, _BOOL, _INT, _FLOAT, _BINARY = (
    _YAML + name for name in ("str", "null", "bool", "int", "float", "binary")
)
_SEQ, _MAP = _YAML + "seq", _YAML + "map"
_SCALAR_TAGS = frozenset({_STR, _NULL, _BOOL, _INT, _FLOAT, _BINARY})

_NULL_TEXT = re.compile(r"~|null|Null|NULL|")
_BOOL_TEXT = {
    "true": True,
    "True": True,
    "TRUE": True,
    "false": False,
    "False": False,
    "FALSE": False,
}
_DEC_TEXT = re.compile(r"[-+]?[0-9]+")
_OCT_TEXT = re.compile(r"0o[0-7]+")
_HEX_TEXT = re.compile(r"0x[0-9a-fA-F]+")
_FLOAT_TEXT = re.compile(r"[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?")
_INF_TEXT = re.compile(r"[-+]?\.(?:inf|Inf|INF)")
_NAN_TEXT = re.compile(r"\.(?:nan|NaN|NAN)")


@dataclass(frozen=True, slots=True)
class Mark:
    """A 1-based line and column in the schema text."""

    line: int
    col: int


@dataclass
class Positions:
    """Where each value of the loaded data is written, and where each mapping key is."""

    values: dict[Path, Mark] = field(default_factory=dict)
    keys: dict[Path, Mark] = field(default_factory=dict)

    def value(self, path: Path) -> Mark:
        """The position of the value at ``path``, or of its nearest container that has one."""
        for end in range(len(path), -1, -1):
            mark = self.values.get(path[:end])
            if mark is not None:
                return mark
        return Mark(1, 1)

    def key(self, path: Path) -> Mark:
        """The position of the mapping key that ``path`` ends with (else of the value)."""
        return self.keys.get(path) or self.value(path)


@dataclass(frozen=True)
class YamlDocument:
    """A loaded schema file: plain data, positions and the problems that did not stop loading."""

    data: object
    positions: Positions
    diagnostics: tuple[Diagnostic, ...]
    invalid: frozenset[Path]


class _AliasNode(yaml.Node):  # type: ignore[misc]
    """An alias occurrence: the anchored node plus where the alias is written."""

    id = "alias"

    def __init__(self, target: Any, anchor: str, start_mark: Any, end_mark: Any) -> None:
        super().__init__(None, target, start_mark, end_mark)
        self.anchor = anchor


class _Loader(yaml.SafeLoader):  # type: ignore[misc]
    """SafeLoader with YAML 1.2 core-schema resolution, a nesting limit and alias positions kept."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self._depth = 0

    def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
        if kind is yaml.ScalarNode and implicit[0]:
            return _core_tag(value)
        return super().resolve(kind, value, implicit)

    def get_single_node(self) -> Any:
        self.get_event()
        root = None if self.check_event(yaml.StreamEndEvent) else self.compose_document()
        if not self.check_event(yaml.StreamEndEvent):
            raise yaml.composer.ComposerError(
                None,
                None,
                "a schema file holds one YAML document, but a second one starts here",
                self.peek_event().start_mark,
            )
        return root

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent):
            target = super().compose_node(parent, index)
            return _AliasNode(target, event.anchor, event.start_mark, event.end_mark)
        if event.anchor is not None and event.anchor in self.anchors:
            first = _mark(self.anchors[event.anchor].start_mark)
            raise yaml.composer.ComposerError(
                None,
                None,
                f"duplicate anchor &{event.anchor} (first defined at {first.line}:{first.col})",
                event.start_mark,
            )
        if self._depth >= MAX_DEPTH:
            raise yaml.composer.ComposerError(
                None, None, f"nesting deeper than {MAX_DEPTH} levels", event.start_mark
            )
        self._depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def _core_tag(text: str) -> str:
    """The tag of a plain scalar under the YAML 1.2 core schema."""
    if _NULL_TEXT.fullmatch(text):
        return _NULL
    if text in _BOOL_TEXT:
        return _BOOL
    if _DEC_TEXT.fullmatch(text) or _OCT_TEXT.fullmatch(text) or _HEX_TEXT.fullmatch(text):
        return _INT
    if _FLOAT_TEXT.fullmatch(text) or _INF_TEXT.fullmatch(text) or _NAN_TEXT.fullmatch(text):
        return _FLOAT
    return _STR


def _tag_name(tag: str) -> str:
    return "!!" + tag.removeprefix(_YAML) if tag.startswith(_YAML) else tag


def _mark(yaml_mark: Any) -> Mark:
    return Mark(yaml_mark.line + 1, yaml_mark.column + 1)


def _offset_mark(text: str, offset: int) -> Mark:
    """The line and column of the character at ``offset``."""
    line_start = text.rfind("\n", 0, offset) + 1
    return Mark(text.count("\n", 0, offset) + 1, offset - line_start + 1)


class _Invalid(Exception):
    """A scalar does not fit its tag; the message says why."""


class _Fatal(Exception):
    """A problem that stops loading."""

    def __init__(self, mark: Mark, message: str) -> None:
        super().__init__(message)
        self.mark = mark
        self.message = message


class _Converter:
    """Converts composed nodes to plain data, recording positions and collecting problems."""

    def __init__(self) -> None:
        self.positions = Positions()
        self.problems: list[tuple[Mark, str]] = []
        self.invalid: set[Path] = set()
        self._alias_nodes = 0
        self._alias_start: Mark | None = None
        self._open: set[int] = set()

    def convert(self, node: Any, path: Path, depth: int = 0) -> object:
        mark = _mark(node.start_mark)
        self.positions.values[path] = mark
        if isinstance(node, _AliasNode):
            return self._alias(node, path, depth, mark)
        if self._alias_start is not None:
            self._alias_nodes += 1
            if self._alias_nodes > MAX_ALIAS_NODES:
                raise _Fatal(
                    self._alias_start,
                    f"too many nodes (alias expansion): aliases expand to more than"
                    f" {MAX_ALIAS_NODES} nodes",
                )
        if depth > MAX_DEPTH:
            where = self._alias_start or mark
            raise _Fatal(where, f"nesting deeper than {MAX_DEPTH} levels (alias expansion)")
        if isinstance(node, yaml.ScalarNode):
            try:
                return _scalar(node.tag, node.value)
            except _Invalid as exc:
                self._reject(path, mark, str(exc))
                return None
        expected = _SEQ if isinstance(node, yaml.SequenceNode) else _MAP
        if node.tag != expected:
            self._reject(path, mark, _unsupported_tag(node.tag))
            return None
        self._open.add(id(node))
        try:
            if isinstance(node, yaml.SequenceNode):
                return [
                    self.convert(item, (*path, i), depth + 1) for i, item in enumerate(node.value)
                ]
            return self._mapping(node, path, depth)
        finally:
            self._open.discard(id(node))

    def _alias(self, node: _AliasNode, path: Path, depth: int, mark: Mark) -> object:
        if id(node.value) in self._open:
            message = f"alias *{node.anchor} refers to a node that contains it (recursive alias)"
            self._reject(path, mark, message)
            return None
        outermost = self._alias_start is None
        if outermost:
            self._alias_start = mark
        try:
            value = self.convert(node.value, path, depth)
        finally:
            if outermost:
                self._alias_start = None
        self.positions.values[path] = mark
        return value

    def _mapping(self, node: Any, path: Path, depth: int) -> dict[str, object]:
        result: dict[str, object] = {}
        for key_node, value_node in node.value:
            key = self._key(key_node)
            if key is None:
                continue
            key_mark = _mark(key_node.start_mark)
            key_path = (*path, key)
            if key in result:
                first = self.positions.keys[key_path]
                self.problems.append(
                    (key_mark, f"duplicate key {key!r} (first defined at {first.line}:{first.col})")
                )
                continue
            self.positions.keys[key_path] = key_mark
            result[key] = self.convert(value_node, key_path, depth + 1)
        return result

    def _key(self, node: Any) -> str | None:
        """The text of a mapping key, or ``None`` (reported) if it cannot be one."""
        mark = _mark(node.start_mark)
        target = node.value if isinstance(node, _AliasNode) else node
        if not isinstance(target, yaml.ScalarNode):
            self.problems.append((mark, "mapping keys must be scalars, not collections"))
            return None
        if target.tag not in _SCALAR_TAGS:
            self.problems.append((mark, _unsupported_tag(target.tag)))
            return None
        if target.value == "<<" and target.style is None:
            self.problems.append(
                (
                    mark,
                    "merge keys ('<<') are not supported; write the fields out, or alias the"
                    " whole value",
                )
            )
            return None
        try:
            text: str = _checked_text(target.value)
        except _Invalid as exc:
            self.problems.append((mark, str(exc)))
            return None
        return text

    def _reject(self, path: Path, mark: Mark, message: str) -> None:
        self.problems.append((mark, message))
        self.invalid.add(path)


def _unsupported_tag(tag: str) -> str:
    return (
        f"unsupported tag {_tag_name(tag)}; only !!str, !!int, !!float, !!bool, !!null, !!binary,"
        " !!seq and !!map are allowed"
    )


def _checked_text(text: str) -> str:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise _Invalid(
            f"string contains the surrogate code point U+{ord(text[exc.start]):04X}, which is not"
            " valid Unicode; write characters beyond U+FFFF as \\UXXXXXXXX or literally"
        ) from None
    return text


def _scalar(tag: str, text: str) -> object:
    """The value of a scalar with its (resolved or explicit) tag."""
    if tag == _STR:
        return _checked_text(text)
    if tag == _NULL and _NULL_TEXT.fullmatch(text):
        return None
    if tag == _BOOL and text in _BOOL_TEXT:
        return _BOOL_TEXT[text]
    if tag == _INT:
        if _OCT_TEXT.fullmatch(text):
            return int(text[2:], 8)
        if _HEX_TEXT.fullmatch(text):
            return int(text[2:], 16)
        if _DEC_TEXT.fullmatch(text):
            try:
                return int(text)
            except ValueError:
                raise _Invalid(f"integer {text[:20]}... has too many digits") from None
    if tag == _FLOAT:
        return _float(text)
    if tag == _BINARY:
        try:
            return base64.b64decode("".join(text.split()).encode("ascii"), validate=True)
        except (UnicodeEncodeError, binascii.Error):
            raise _Invalid("the !!binary value is not valid base64") from None
    if tag in _SCALAR_TAGS:
        raise _Invalid(f"{text!r} is not a valid {_tag_name(tag)} value")
    raise _Invalid(_unsupported_tag(tag))


def _float(text: str) -> float:
    if _NAN_TEXT.fullmatch(text):
        return math.nan
    if _INF_TEXT.fullmatch(text):
        return -math.inf if text.startswith("-") else math.inf
    if not _FLOAT_TEXT.fullmatch(text):
        raise _Invalid(f"{text!r} is not a valid !!float value")
    value = float(text)
    if math.isinf(value):
        raise _Invalid(f"float {text} is out of range; write .inf or -.inf for infinity")
    return value


def decode_text(data: bytes, path: str) -> str:
    """The text of a schema file's bytes: UTF-8 (a BOM is allowed), at most :data:`MAX_BYTES`."""
    _check_size(len(data), path)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line_start = data.rfind(b"\n", 0, exc.start) + 1
        col = len(data[line_start : exc.start].decode("utf-8", "replace")) + 1
        line = data.count(b"\n", 0, exc.start) + 1
        raise SchemaError(
            [
                Diagnostic(
                    path,
                    line,
                    col,
                    f"the file is not valid UTF-8 (byte 0x{data[exc.start]:02x});"
                    " schema files must be UTF-8 text",
                )
            ]
        ) from None


def _check_size(size: int, path: str) -> None:
    if size > MAX_BYTES:
        message = f"the schema is too large: it has more than the limit of {MAX_BYTES} bytes"
        raise SchemaError([Diagnostic(path, 1, 1, message)])


def load_yaml(text: str, path: str) -> YamlDocument:
    """Load schema text; ``path`` is what diagnostics show.

    Raises :class:`SchemaError` if the text cannot be loaded at all.
    """

    def fatal(mark: Mark, message: str) -> SchemaError:
        return SchemaError([Diagnostic(path, mark.line, mark.col, message)])

    try:
        _check_size(len(_checked_text(text).encode("utf-8")), path)
    except _Invalid as exc:
        bad = next(i for i, ch in enumerate(text) if "\ud800" <= ch <= "\udfff")
        raise fatal(_offset_mark(text, bad), str(exc)) from None
    try:
        root = _Loader(text).get_single_node()
    except yaml.MarkedYAMLError as exc:
        raise fatal(*_syntax_problem(exc)) from None
    except yaml.reader.ReaderError as exc:
        raise fatal(
            _offset_mark(text, exc.position),
            f"invalid character U+{exc.character:04X}; YAML text may only contain printable"
            " characters, tab, line feed and carriage return",
        ) from None
    if root is None or (isinstance(root, yaml.ScalarNode) and root.tag == _NULL):
        raise fatal(
            Mark(1, 1), "the schema is empty; expected a mapping with 'version' and 'records'"
        )
    converter = _Converter()
    try:
        data = converter.convert(root, ())
    except _Fatal as exc:
        raise SchemaError(
            [Diagnostic(path, m.line, m.col, msg) for m, msg in converter.problems]
            + [Diagnostic(path, exc.mark.line, exc.mark.col, exc.message)]
        ) from None
    return YamlDocument(
        data=data,
        positions=converter.positions,
        diagnostics=tuple(Diagnostic(path, m.line, m.col, msg) for m, msg in converter.problems),
        invalid=frozenset(converter.invalid),
    )


def _syntax_problem(exc: Any) -> tuple[Mark, str]:
    """Where a PyYAML parse error is and what it says."""
    problem_mark = exc.problem_mark or exc.context_mark
    mark = _mark(problem_mark) if problem_mark is not None else Mark(1, 1)
    message = f"invalid YAML: {exc.problem or exc.context}"
    if exc.problem and exc.context:
        where = (
            f" at {_mark(exc.context_mark).line}:{_mark(exc.context_mark).col}"
            if exc.context_mark
            else ""
        )
        message += f" ({exc.context}{where})"
    return mark, message
