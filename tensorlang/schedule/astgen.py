"""isl AST generation: a schedule map over a domain becomes a :mod:`.loops` tree.

Partial tiles come out exact: bounds are ``min``/``max`` expressions and conditions
that isl derives from the domain, so no point outside the domain is visited.
"""

from __future__ import annotations

from collections.abc import Sequence

import islpy as isl

from tensorlang.schedule.loops import Block, Call, For, If, Node

_BINARY = {
    isl.ast_expr_op_type.add: "+", isl.ast_expr_op_type.sub: "-",
    isl.ast_expr_op_type.mul: "*", isl.ast_expr_op_type.div: "/",
    isl.ast_expr_op_type.pdiv_q: "/", isl.ast_expr_op_type.pdiv_r: "%",
    # islpy's stubs lack the and_/or_ (and for_/if_ below) members of its enums: they are
    # looked up by name, which is typed as the enum all the same
    isl.ast_expr_op_type.zdiv_r: "%", isl.ast_expr_op_type["and_"]: "&&",
    isl.ast_expr_op_type.and_then: "&&", isl.ast_expr_op_type["or_"]: "||",
    isl.ast_expr_op_type.or_else: "||", isl.ast_expr_op_type.eq: "==",
    isl.ast_expr_op_type.le: "<=", isl.ast_expr_op_type.lt: "<",
    isl.ast_expr_op_type.ge: ">=", isl.ast_expr_op_type.gt: ">",
}
_CALLS = {isl.ast_expr_op_type.min: "min", isl.ast_expr_op_type.max: "max"}


def generate(schedule: isl.Map | isl.UnionMap, context: isl.Set,
             iterators: Sequence[str] = ()) -> Node:
    """The loop tree of ``schedule`` (already restricted to its domain) under ``context``.

    ``iterators`` name the loop variables of the schedule's output dimensions, outermost
    first (isl's ``c0, c1, ...`` otherwise).
    """
    if isinstance(schedule, isl.Map):
        schedule = isl.UnionMap.from_map(schedule)
    # isl's AST build matches parameters by position: give both the same parameter space.
    context = context.align_params(schedule.get_space())
    schedule = schedule.align_params(context.get_space())
    build = isl.AstBuild.from_context(context)
    if iterators:
        ids = isl.IdList.alloc(context.get_ctx(), len(iterators))
        for name in iterators:
            ids = ids.add(isl.Id(name, context=context.get_ctx()))
        build = build.set_iterators(ids)
    return convert(build.node_from_schedule_map(schedule))


def convert(node: isl.AstNode) -> Node:
    """An isl AST node as a loop tree."""
    kind = node.get_type()
    if kind == isl.ast_node_type["for_"]:
        return _for(node)
    if kind == isl.ast_node_type["if_"]:
        orelse = convert(node.if_get_else_node()) if node.if_has_else_node() else None
        return If(expr(node.if_get_cond()), convert(node.if_get_then_node()), orelse)
    if kind == isl.ast_node_type.block:
        children = node.block_get_children()
        return Block(tuple(convert(children.get_at(i)) for i in range(children.n_ast_node())))
    if kind == isl.ast_node_type.user:
        call = node.user_get_expr()
        args = [call.get_op_arg(i) for i in range(call.get_op_n_arg())]
        return Call(args[0].get_id().get_name(), tuple(expr(a) for a in args[1:]))
    if kind == isl.ast_node_type.mark:
        return convert(node.mark_get_node())
    raise NotImplementedError(f"isl AST node {kind}")


def _for(node: isl.AstNode) -> For:
    var = node.for_get_iterator().get_id().get_name()
    init = expr(node.for_get_init())
    step = int(node.for_get_inc().get_val().to_python())
    upper = _upper_bound(node.for_get_cond(), var)
    return For(var, init, upper, step, convert(node.for_get_body()))


def _upper_bound(cond: isl.AstExpr, var: str) -> str:
    """The inclusive upper bound from ``var <= e`` or ``var < e``."""
    op = cond.get_op_type()
    lhs, rhs = cond.get_op_arg(0), cond.get_op_arg(1)
    assert lhs.get_type() == isl.ast_expr_type.id and lhs.get_id().get_name() == var, \
        f"unexpected loop condition {cond.to_C_str()}"
    bound = expr(rhs)
    if op == isl.ast_expr_op_type.le:
        return bound
    assert op == isl.ast_expr_op_type.lt, f"unexpected loop condition {cond.to_C_str()}"
    return str(int(bound) - 1) if bound.lstrip("-").isdigit() else f"{_paren(bound)} - 1"


def expr(e: isl.AstExpr) -> str:
    """C text of an isl AST expression (integer arithmetic on ``long``; ``min``/``max``
    arguments are cast to ``long`` so OpenCL's overloads resolve)."""
    kind = e.get_type()
    if kind == isl.ast_expr_type.id:
        return e.get_id().get_name()
    if kind == isl.ast_expr_type.int:
        return str(e.get_val().to_python())
    op = isl.ast_expr_op_type(e.get_op_type())  # the stubs say int
    args = [expr(e.get_op_arg(i)) for i in range(e.get_op_n_arg())]
    if op in _BINARY:
        return f"{_paren(args[0])} {_BINARY[op]} {_paren(args[1])}"
    if op in _CALLS:
        text = args[0]
        for a in args[1:]:  # OpenCL's integer min/max need one argument type
            text = f"{_CALLS[op]}((long){_paren(text)}, (long){_paren(a)})"
        return text
    if op == isl.ast_expr_op_type.minus:
        return f"-{_paren(args[0])}"
    if op == isl.ast_expr_op_type.fdiv_q:
        a, b = _paren(args[0]), _paren(args[1])
        return f"({a} >= 0 ? {a} / {b} : ({a} - {b} + 1) / {b})"
    if op in (isl.ast_expr_op_type.cond, isl.ast_expr_op_type.select):
        return f"({args[0]} ? {args[1]} : {args[2]})"
    raise NotImplementedError(f"isl AST expression {e.to_C_str()}")


def _paren(text: str) -> str:
    simple = text.replace("_", "").isalnum() or text.lstrip("-").isdigit()
    return text if simple or _wrapped(text) else f"({text})"


def _wrapped(text: str) -> bool:
    if not (text.startswith("(") and text.endswith(")")):
        return False
    depth = 0
    for i, ch in enumerate(text):
        depth += ch == "("
        depth -= ch == ")"
        if depth == 0 and i < len(text) - 1:
            return False
    return True
