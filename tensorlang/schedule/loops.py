"""A language-neutral loop tree: what isl's AST generator produces, as plain data.

Expressions are C-syntax strings over integer ``long`` values (``min``/``max`` are
OpenCL's integer builtins); loop bounds are inclusive upper bounds, as isl gives them.
The OpenCL emitter prints these trees (:mod:`backend_opencl.emit.loops`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class For:
    """``for (var = lower; var <= upper; var += step) body``."""

    var: str
    lower: str
    upper: str
    step: int
    body: Node

    @property
    def trip_count(self) -> int | None:
        """The number of iterations when both bounds are literals, else None."""
        if _is_int(self.lower) and _is_int(self.upper):
            return max(0, (int(self.upper) - int(self.lower)) // self.step + 1)
        return None


@dataclass(frozen=True)
class If:
    """``if (cond) then else orelse``."""

    cond: str
    then: Node
    orelse: Node | None = None


@dataclass(frozen=True)
class Block:
    """A sequence of nodes."""

    items: tuple[Node, ...]


@dataclass(frozen=True)
class Call:
    """One execution of statement ``name`` with its domain coordinates ``args``."""

    name: str
    args: tuple[str, ...]


Node = For | If | Block | Call


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def substitute(node: Node, names: Mapping[str, str]) -> Node:
    """``node`` with every identifier in ``names`` (loop variables, parameters) replaced
    by its value, all at once (a value is never replaced again)."""
    def text(expr: str) -> str:
        return _IDENTIFIER.sub(lambda m: names.get(m.group(), m.group()), expr)

    if isinstance(node, For):
        return For(names.get(node.var, node.var), text(node.lower), text(node.upper),
                   node.step, substitute(node.body, names))
    if isinstance(node, If):
        orelse = None if node.orelse is None else substitute(node.orelse, names)
        return If(text(node.cond), substitute(node.then, names), orelse)
    if isinstance(node, Block):
        return Block(tuple(substitute(item, names) for item in node.items))
    return Call(node.name, tuple(text(arg) for arg in node.args))


def _is_int(text: str) -> bool:
    return text.lstrip("-").isdigit()


def render(node: Node | None, indent: int = 0) -> str:
    """A readable text form (used by ``--emit schedule`` and tests)."""
    pad = "  " * indent
    if node is None:
        return ""
    if isinstance(node, For):
        step = "" if node.step == 1 else f" step {node.step}"
        return (f"{pad}for {node.var} in [{node.lower}, {node.upper}]{step}\n"
                + render(node.body, indent + 1))
    if isinstance(node, If):
        text = f"{pad}if {node.cond}\n" + render(node.then, indent + 1)
        if node.orelse is not None:
            text += f"{pad}else\n" + render(node.orelse, indent + 1)
        return text
    if isinstance(node, Block):
        return "".join(render(item, indent) for item in node.items)
    return f"{pad}{node.name}({', '.join(node.args)})\n"
