"""Line layout of generated code: every statement the templates write on one line, split to fit :data:`WIDTH`.

The templates write each statement on one physical line. :func:`reflow` splits the ones longer than the width the
way ruff's formatter (and black) do, so the generated text is already formatted (``ruff format --check`` accepts it,
whatever ruff the user has, or none): a bracketed group that does not fit goes on indented lines, all its items on
one line if they fit there, else one item per line with a trailing comma, each item split the same way. Atoms
(names, attributes, literals) keep their source text. Only the statement forms generated modules use are split
(assignments, ``return``, expression statements, ``def`` and ``class`` headers); tests run ruff over generated
modules to hold this module to its promise.
"""

from __future__ import annotations

import ast
import io
import tokenize
import unicodedata
from dataclasses import dataclass

__all__ = ["INDENT", "WIDTH", "reflow", "text_width", "wrap"]

WIDTH = 88
"""The line width of generated modules: the default of ruff's formatter and of black."""

INDENT = 4


def text_width(text: str) -> int:
    """The width of ``text`` in columns as formatters count it: East Asian wide and full-width characters take
    two, combining marks none."""
    width = 0
    for ch in text:
        if unicodedata.combining(ch):
            continue
        width += 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
    return width


@dataclass(frozen=True, slots=True)
class _Group:
    """A bracketed list of items: a call's arguments, a tuple, a list, a ``def``'s parameters."""

    head: str
    """What comes before the items, ending with the opening bracket."""
    items: tuple[_Node, ...]
    close: str
    single_tuple: bool = False
    """A one-element tuple, whose comma stays when it is flat."""
    collection: bool = False
    """A tuple or list display: split one item per line, never with all items on one indented line."""
    separator: str = ", "
    """``" "`` for the parts of an implicit string concatenation (no commas between them)."""
    subscript: _Group | None = None
    """For a call of a subscript (``X[T](...)``, whose ``head`` is ``X[T](``): the subscript ``X[T]``."""


@dataclass(frozen=True, slots=True)
class _Atom:
    text: str


@dataclass(frozen=True, slots=True)
class _Prefixed:
    """An item with text before it: a keyword argument (``name=``) or a ``**``/``*`` unpacking."""

    prefix: str
    node: _Node


@dataclass(frozen=True, slots=True)
class _Union:
    """A parameter annotated with a union (``name: A | None = None``): split, as the formatter splits it, before
    each ``|`` at the parameter's indentation, the first member split like any expression."""

    prefix: str
    """``name: ``."""
    members: tuple[_Node, ...]
    tail: str
    """`` = default``, or nothing."""


_Node = _Group | _Atom | _Prefixed | _Union


def wrap(text: str, width: int) -> list[str]:
    """``text`` in lines of at most ``width`` columns (:func:`text_width`), broken at spaces; a word longer than a
    line stands alone on its line. Leading spaces of the text are kept on every line."""
    lead = text[: len(text) - len(text.lstrip(" "))]
    lines: list[str] = []
    line = ""
    for word in text.split():
        candidate = f"{line} {word}" if line else lead + word
        if line and text_width(candidate) > width:
            lines.append(line)
            candidate = lead + word
        line = candidate
    return [*lines, line] if line else [""]


def _flat(node: _Node) -> str:
    if isinstance(node, _Atom):
        return node.text
    if isinstance(node, _Prefixed):
        return node.prefix + _flat(node.node)
    if isinstance(node, _Union):
        return node.prefix + " | ".join(_flat(member) for member in node.members) + node.tail
    body = node.separator.join(_flat(item) for item in node.items)
    if node.single_tuple:
        body += ","
    return node.head + body + node.close


def _fits(indent: int, text: str) -> bool:
    return indent + text_width(text) <= WIDTH


def _layout(node: _Node, indent: int, prefix: str, suffix: str) -> list[str]:
    """The lines of ``prefix + node + suffix`` starting at column ``indent`` (each line without the indent of the
    first; inner lines carry their own extra indentation as spaces)."""
    flat = _flat(node)
    if _fits(indent, prefix + flat + suffix):
        return [prefix + flat + suffix]
    if isinstance(node, _Atom):
        return [prefix + flat + suffix]
    if isinstance(node, _Prefixed):
        return _layout(node.node, indent, prefix + node.prefix, suffix)
    if isinstance(node, _Union):
        first, *rest = node.members
        lines = _layout(first, indent, prefix + node.prefix, "")
        for number, member in enumerate(rest, 1):
            end = node.tail + suffix if number == len(rest) else ""
            lines.extend(_layout(member, indent, "| ", end))
        return lines
    return _split(node, indent, prefix, suffix)


def _split(node: _Group, indent: int, prefix: str, suffix: str) -> list[str]:
    """The lines of ``prefix + node + suffix`` with ``node``'s items on lines of their own."""
    inner = " " * INDENT
    concat = node.separator == " "
    if concat:
        return [
            prefix + node.head,
            *(inner + _flat(item) for item in node.items),
            node.close + suffix,
        ]
    hugged = node.separator.join(_flat(item) for item in node.items)
    if node.single_tuple:
        hugged += ","
    if not node.collection and _fits(indent + INDENT, hugged):
        return [prefix + node.head, inner + hugged, node.close + suffix]
    lines = [prefix + node.head]
    if len(node.items) == 1 and not node.single_tuple:
        body = _layout(node.items[0], indent + INDENT, "", "")
        lines.extend(inner + line for line in body)
    else:
        for item in node.items:
            body = _layout(item, indent + INDENT, "", ",")
            lines.extend(inner + line for line in body)
    lines.append(node.close + suffix)
    return lines


class _Unsupported(Exception):
    """A statement or expression this module does not split (it is left as written)."""


def _node(expr: ast.expr, source: str) -> _Node:
    segment = ast.get_source_segment(source, expr)
    if segment is None:  # pragma: no cover - every node of a parsed line has a segment
        raise _Unsupported
    if isinstance(expr, ast.Call):
        func = ast.get_source_segment(source, expr.func)
        items: list[_Node] = [_node(arg, source) for arg in expr.args]
        for keyword in expr.keywords:
            name = f"{keyword.arg}=" if keyword.arg is not None else "**"
            items.append(_Prefixed(name, _node(keyword.value, source)))
        called = _node(expr.func, source) if isinstance(expr.func, ast.Subscript) else None
        return _Group(
            f"{func}(", tuple(items), ")", subscript=called if isinstance(called, _Group) else None
        )
    if isinstance(expr, ast.Subscript):
        value = ast.get_source_segment(source, expr.value)
        inner = expr.slice
        parts = inner.elts if isinstance(inner, ast.Tuple) else [inner]
        return _Group(f"{value}[", tuple(_node(part, source) for part in parts), "]")
    if isinstance(expr, ast.Starred):
        return _Prefixed("*", _node(expr.value, source))
    if isinstance(expr, ast.Tuple) and segment.startswith("("):
        items = [_node(item, source) for item in expr.elts]
        return _Group("(", tuple(items), ")", single_tuple=len(items) == 1, collection=True)
    if isinstance(expr, ast.List):
        items = [_node(item, source) for item in expr.elts]
        return _Group("[", tuple(items), "]", collection=True)
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        literals = _literal_spans(segment)
        if len(literals) > 1:  # an implicit concatenation, written in parentheses
            return _Group("(", tuple(_Atom(part) for part in literals), ")", separator=" ")
    return _Atom(segment)


def _literal_spans(text: str) -> list[str]:
    """The string literals of an implicit concatenation ``'a' "b"`` (one literal for a plain string)."""
    tokens = tokenize.generate_tokens(io.StringIO(text).readline)
    return [token.string for token in tokens if token.type == tokenize.STRING]


def _value_lines(value: _Node, indent: int, prefix: str) -> list[str]:
    """``prefix + value`` split, as the formatter splits the right-hand side of an assignment or a ``return``: in
    its own brackets when their first line fits; else, for a call of a subscript (``X[T](...)``), at the
    subscript's brackets when that first line fits; else wrapped in parentheses of its own when ``prefix (``
    fits; else at the subscript's brackets, or in its own brackets."""
    lines = _layout(value, indent, prefix, "")
    if len(lines) == 1 or _fits(indent, lines[0]) or not isinstance(value, _Group):
        return lines
    subscript = _subscript_lines(value, indent, prefix)
    if subscript is not None and _fits(indent, subscript[0]):
        return subscript
    if _fits(indent, prefix + "("):
        inner = _layout(value, indent + INDENT, "", "")
        return [prefix + "(", *(" " * INDENT + line for line in inner), ")"]
    return lines if subscript is None else subscript


def _subscript_lines(call: _Group, indent: int, prefix: str) -> list[str] | None:
    """``prefix + call`` split at the brackets of the subscript it calls (``X[`` / items / ``](...)``, the
    arguments split in their own brackets), or ``None`` when ``call`` does not call a subscript."""
    if call.subscript is None:
        return None
    head = _split(call.subscript, indent, prefix, "")
    arguments = _layout(_Group(f"{call.subscript.close}(", call.items, ")"), indent, "", "")
    return head[:-1] + arguments


def _statement_lines(line: str, indent: int) -> list[str] | None:
    """The split lines of one statement written on ``line`` (without its ``indent`` columns of indentation), or
    ``None`` when the statement is not of a form split here."""
    header = line.endswith(":")
    try:
        module = ast.parse(line + "\n    pass" if header else line)
    except SyntaxError:
        return None
    if len(module.body) != 1:
        return None
    stmt = module.body[0]
    source = line
    try:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target = stmt.targets[0]
            value = ast.get_source_segment(source, stmt.value) or ""
            if isinstance(target, ast.Tuple) and line.startswith("("):
                names = [ast.get_source_segment(source, elt) or "" for elt in target.elts]
                return ["(", *(" " * INDENT + name + "," for name in names), f") = {value}"]
            prefix = line[: line.index(value)] if value else line
            return _value_lines(_node(stmt.value, source), indent, prefix)
        if isinstance(stmt, ast.AnnAssign) and stmt.value is None:
            name = ast.get_source_segment(source, stmt.target)
            return _layout(_node(stmt.annotation, source), indent, f"{name}: ", "")
        if isinstance(stmt, ast.Return) and stmt.value is not None:
            return _value_lines(_node(stmt.value, source), indent, "return ")
        if isinstance(stmt, ast.Expr):
            return _layout(_node(stmt.value, source), indent, "", "")
        if isinstance(stmt, ast.FunctionDef):
            close_at = line.rindex(")")
            group = _Group(f"def {stmt.name}(", _parameters(stmt.args, source), line[close_at:])
            return _layout(group, indent, "", "")
        if isinstance(stmt, ast.ClassDef) and stmt.bases:
            bases = tuple(_node(base, source) for base in stmt.bases)
            return _layout(_Group(f"class {stmt.name}(", bases, "):"), indent, "", "")
    except _Unsupported:
        return None
    return None


def _parameters(args: ast.arguments, source: str) -> tuple[_Node, ...]:
    """The parameters of a ``def`` (positional, then ``*`` and keyword-only ones), each with its annotation and
    default; a default is split like any expression."""

    def parameter(arg: ast.arg, default: ast.expr | None) -> _Node:
        text = arg.arg
        annotation = arg.annotation
        if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
            tail = "" if default is None else f" = {ast.get_source_segment(source, default)}"
            return _Union(f"{text}: ", tuple(_node(m, source) for m in _members(annotation)), tail)
        if arg.annotation is not None:
            text += f": {ast.get_source_segment(source, arg.annotation)}"
        if default is None:
            return _Atom(text)
        return _Prefixed(
            text + (" = " if arg.annotation is not None else "="), _node(default, source)
        )

    if args.posonlyargs or args.kwarg is not None:
        raise _Unsupported
    positional = args.args
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults))
    defaults += args.defaults
    items = [parameter(arg, d) for arg, d in zip(positional, defaults, strict=True)]
    if args.vararg is not None:
        items.append(_Prefixed("*", _Atom(args.vararg.arg)))
    elif args.kwonlyargs:
        items.append(_Atom("*"))
    items.extend(parameter(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True))
    return tuple(items)


def _members(union: ast.expr) -> list[ast.expr]:
    """The members of ``A | B | C``, left to right."""
    if isinstance(union, ast.BinOp) and isinstance(union.op, ast.BitOr):
        return [*_members(union.left), *_members(union.right)]
    return [union]


def _string_lines(source: str) -> set[int]:
    """The 0-based numbers of the lines that a string literal spanning several lines covers (docstrings)."""
    covered: set[int] = set()
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    for token in tokens:
        if token.type == tokenize.STRING and token.end[0] > token.start[0]:
            covered.update(range(token.start[0] - 1, token.end[0]))
    return covered


def reflow(source: str) -> str:
    """``source`` with every statement line longer than :data:`WIDTH` split as the formatter splits it.

    Comment lines and the lines of strings that span several lines (docstrings) are left as they are.
    """
    out: list[str] = []
    strings = _string_lines(source)
    for number, line in enumerate(source.split("\n")):
        stripped = line.lstrip(" ")
        if number in strings or stripped.startswith("#") or _fits(0, line):
            out.append(line)
            continue
        indent = len(line) - len(stripped)
        lines = _statement_lines(stripped, indent)
        out.extend([line] if lines is None else (" " * indent + part for part in lines))
    return "\n".join(out)
