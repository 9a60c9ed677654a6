"""Running a scheduler loop tree in Python (to check which points it visits)."""

from __future__ import annotations

import re

from tensorlang.schedule.loops import Block, Call, For, If, Node


def value(expr: str, env: dict[str, int]) -> int:
    """Evaluate a C integer expression of the tree (non-negative divisions only)."""
    text = expr.replace("(long)", "").replace("&&", " and ").replace("||", " or ")
    text = re.sub(r"(?<![<>=!])/", "//", text)
    return int(eval(text, {"min": min, "max": max}, dict(env)))  # noqa: S307


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
