"""Source locations of parse-tree nodes and SSA name resolution with region scoping.

A region sees the values of its enclosing regions; the enclosing region does not see
values defined inside the region.  A name may not be redefined while it is visible.
"""

from __future__ import annotations

from lark import Token, Tree

from tensorlang.diagnostics import CompileError, Loc, Source, note
from tensorlang.ir.core import Value

Node = Tree | Token
"""A child of a parse tree: a subtree or a token."""


def as_token(node: Node) -> Token:
    """``node``, which the grammar makes a token there (a subtree is a compiler bug)."""
    assert isinstance(node, Token), node
    return node


def as_tokens(nodes: list[Node]) -> list[Token]:
    """``nodes``, each a token (see :func:`as_token`)."""
    return [as_token(n) for n in nodes]


def as_tree(node: Node) -> Tree:
    """``node``, which the grammar makes a subtree there (a token is a compiler bug)."""
    assert isinstance(node, Tree), node
    return node


def loc_of(node: Node, source: Source) -> Loc:
    """The source range of a parse-tree node or token."""
    if isinstance(node, Token):
        return Loc(source.name, node.line or 0, node.column or 0, node.end_line or 0,
                   node.end_column or 0, source)
    meta = node.meta
    if meta.empty:
        return Loc(source.name, 0, 0, source=source)
    return Loc(source.name, meta.line, meta.column, meta.end_line, meta.end_column, source)


class Scope:
    """The values visible at a point of a function, one frame per open region."""

    def __init__(self) -> None:
        self._frames: list[dict[str, Value]] = [{}]
        self._everywhere: dict[str, Value] = {}

    def push(self) -> None:
        """Enter a region."""
        self._frames.append({})

    def pop(self) -> None:
        """Leave a region: its values are no longer visible."""
        self._frames.pop()

    def visible(self, name: str) -> Value | None:
        """The value called ``name`` (without ``%``) if it is visible here."""
        for frame in reversed(self._frames):
            if name in frame:
                return frame[name]
        return None

    def define(self, value: Value) -> None:
        """Make ``value`` visible under its name; a visible name cannot be redefined."""
        previous = self.visible(value.name)
        if previous is not None:
            raise CompileError.at(value.loc, f"redefinition of '%{value.name}'",
                                  note(previous.loc, "previous definition is here"))
        self._frames[-1][value.name] = value
        self._everywhere[value.name] = value

    def lookup(self, name: str, loc: Loc) -> Value:
        """The value called ``name`` (without ``%``) used at ``loc``."""
        value = self.visible(name)
        if value is not None:
            return value
        hidden = self._everywhere.get(name)
        if hidden is not None:
            raise CompileError.at(loc, f"'%{name}' is defined inside a region that does "
                                  "not enclose this use", note(hidden.loc, "value defined here"))
        raise CompileError.at(loc, f"use of undefined value '%{name}'")
