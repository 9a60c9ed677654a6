"""Running a scheduler loop tree in Python (to check which points it visits).

Expressions are the C integer expressions of :mod:`tensorlang.schedule.astgen`: ``+ - * / %``
(C's truncating division), comparisons, ``&& ||``, ``?:``, ``min``/``max`` and ``(long)``
casts, evaluated by a small recursive-descent parser.
"""

from __future__ import annotations

import re

from tensorlang.schedule.loops import Block, Call, For, If, Node

_TOKEN = re.compile(r"\s*(\(long\)|\d+|[A-Za-z_]\w*|<=|>=|==|!=|&&|\|\||[-+*/%<>?:(),])")
_BINARY = [("||",), ("&&",), ("==", "!="), ("<", "<=", ">", ">="), ("+", "-"), ("*", "/", "%")]


def _c_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


_APPLY = {
    "||": lambda a, b: int(bool(a) or bool(b)), "&&": lambda a, b: int(bool(a) and bool(b)),
    "==": lambda a, b: int(a == b), "!=": lambda a, b: int(a != b),
    "<": lambda a, b: int(a < b), "<=": lambda a, b: int(a <= b),
    ">": lambda a, b: int(a > b), ">=": lambda a, b: int(a >= b),
    "+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
    "/": _c_div, "%": lambda a, b: a - b * _c_div(a, b),
}


class _Parser:
    def __init__(self, text: str, env: dict[str, int]) -> None:
        self.tokens = _TOKEN.findall(text)
        assert "".join(self.tokens) == re.sub(r"\s", "", text), f"cannot read {text!r}"
        self.pos, self.env = 0, env

    def peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self, expected: str | None = None) -> str:
        token = self.tokens[self.pos]
        assert expected is None or token == expected, f"expected {expected}, got {token}"
        self.pos += 1
        return token

    def ternary(self) -> int:
        cond = self.binary(0)
        if self.peek() != "?":
            return cond
        self.take("?")
        then = self.ternary()
        self.take(":")
        other = self.ternary()
        return then if cond else other

    def binary(self, level: int) -> int:
        if level == len(_BINARY):
            return self.unary()
        left = self.binary(level + 1)
        while self.peek() in _BINARY[level]:
            op = self.take()
            left = _APPLY[op](left, self.binary(level + 1))
        return left

    def unary(self) -> int:
        token = self.take()
        if token == "-":
            return -self.unary()
        if token == "(long)":
            return self.unary()
        if token == "(":
            result = self.ternary()
            self.take(")")
            return result
        if token in ("min", "max"):
            self.take("(")
            args = [self.ternary()]
            while self.peek() == ",":
                self.take(",")
                args.append(self.ternary())
            self.take(")")
            return (min if token == "min" else max)(args)
        return int(token) if token.isdigit() else self.env[token]


def value(expr: str, env: dict[str, int]) -> int:
    """Evaluate a C integer expression of the tree."""
    parser = _Parser(expr, env)
    result = parser.ternary()
    assert parser.peek() is None, f"trailing text in {expr!r}"
    return result


def visit(node: Node | None, env: dict[str, int], out: list[tuple[str, tuple[int, ...]]]) -> None:
    """Append ``(statement, coordinates)`` for every statement instance, in order."""
    if node is None:
        return
    if isinstance(node, Block):
        for item in node.items:
            visit(item, env, out)
    elif isinstance(node, For):
        var = value(node.lower, env)
        while var <= value(node.upper, {**env, node.var: var}):
            visit(node.body, {**env, node.var: var}, out)
            var += node.step
    elif isinstance(node, If):
        visit(node.then if value(node.cond, env) else node.orelse, env, out)
    else:
        assert isinstance(node, Call)
        out.append((node.name, tuple(value(a, env) for a in node.args)))
