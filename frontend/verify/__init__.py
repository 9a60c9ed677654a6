"""Verifier: checks every op against its table entry and the spec's (Cn) constraints.

Messages read ``'stablehlo.dot_general' (C12): ...`` at the op's location.  The
families live in sibling modules named as the lowering's (:mod:`frontend.lower.families`:
``verify/window.py`` checks the ops ``lower/families/window`` lowers, as far as both have
them) and register themselves in :data:`VERIFIERS` (:func:`common.verifies`).
"""

from __future__ import annotations

import re

from frontend.ir import attrs as A
from frontend.ir.core import Func, Module, Op, Region
from frontend.ir.ops import ATTR_KINDS, OPS, VARIADIC, required_attrs
from frontend.ir.types import format_results
from frontend.verify import (  # noqa: F401 - modules register their verifiers
    batchnorm,
    checks,
    collective,
    control,
    conv,
    dot,
    dynamic,
    elementwise,
    fft,
    interpreter_ops,
    linalg,
    quant,
    reduce,
    rng,
    scatter_gather,
    shape,
    sort,
    window,
)
from frontend.verify.common import VERIFIERS, fail
from tensorlang.diagnostics import CompileError


def verify_module(module: Module) -> None:
    """Raise :class:`CompileError` at the first op that breaks a rule."""
    seen: dict[str, Func] = {}
    for f in module.funcs:
        if f.name in seen:
            raise CompileError.at(f.loc, f"redefinition of function @{f.name}")
        seen[f.name] = f
    for f in module.funcs:
        if f.body is not None:
            _verify_func(f, module)


def _verify_func(f: Func, module: Module) -> None:
    if f.body is None:
        return
    block = f.body.block
    _verify_region(f.body, module)
    if not block.ops or block.ops[-1].name != "func.return":
        raise CompileError.at(f.loc, f"function @{f.name} must end with func.return")
    ret = block.ops[-1]
    got = [v.type for v in ret.operands]
    if got != f.result_types:
        fail(ret, "", f"returns {format_results(got)} but @{f.name} is declared to return "
                      f"{format_results(f.result_types)}")


def _verify_region(region: Region, module: Module) -> None:
    for block in region.blocks:
        for op in block.ops[:-1]:
            if op.name in ("func.return", "stablehlo.return"):
                fail(op, "", "must be the last operation in its block")
        for op in block.ops:
            for r in op.regions:
                _verify_region(r, module)
            verify_op(op, module)


def verify_op(op: Op, module: Module) -> None:
    """Structural checks from the op table, then the op's own constraints."""
    opdef = OPS[op.name]
    n_var = sum(n.endswith("*") for n in opdef.operands)
    fixed = len(opdef.operands) - n_var
    if (n_var == 0 and len(op.operands) != fixed) or len(op.operands) < fixed or \
            (n_var > 1 and (len(op.operands) - fixed) % n_var):
        fail(op, "", f"expects {len(opdef.operands)} operand groups "
                     f"({', '.join(opdef.operands)}), got {len(op.operands)} operands")
    if opdef.results != VARIADIC and len(op.results) != opdef.results:
        fail(op, "", f"expects {opdef.results} results, got {len(op.results)}")
    n_regions = len(opdef.regions)
    variadic_regions = any(r.endswith("*") for r in opdef.regions)
    if not variadic_regions and len(op.regions) != n_regions:
        fail(op, "", f"expects {n_regions} regions, got {len(op.regions)}")
    for name in required_attrs(opdef):
        if name not in op.attrs:
            fail(op, "", f"requires attribute '{name}'")
    _verify_attr_kinds(op)
    if op.name == "func.call":
        _verify_call(op, module)
    if op.name == "stablehlo.composite":
        _verify_composite(op, module)
    check = VERIFIERS.get(op.name)
    if check is not None:
        check(op)


_KIND_CLASSES: dict[str, tuple[type, ...]] = {
    "i64s": (A.DenseArrayAttr,), "i1s": (A.DenseArrayAttr,), "i64": (A.IntAttr,),
    "i32": (A.IntAttr,), "enum": (A.EnumAttr,), "bool": (A.BoolAttr,),
    "precision": (A.ListAttr,),
}
_KIND_WORDS = {"i64s": "an array<i64: ...>", "i1s": "an array<i1: ...>",
               "i64": "an integer", "i32": "an integer", "enum": "an enum attribute",
               "bool": "true or false", "precision": "a list of precisions"}


def _verify_attr_kinds(op: Op) -> None:
    """Attributes named in the table have the kind the table gives them."""
    opdef = OPS[op.name]
    for name, a in op.attrs.items():
        kind = ATTR_KINDS.get(name)
        if kind is None or name not in opdef.attrs or name == "padding":
            continue
        if not isinstance(a, _KIND_CLASSES[kind]):
            fail(op, "", f"attribute '{name}' must be {_KIND_WORDS[kind]}, got {a}")
    for a in op.attrs.values():
        if isinstance(a, A.StructAttr) and a.name in ("stablehlo.dot", "stablehlo.gather",
                                                       "stablehlo.scatter"):
            for key, v in a.fields:
                ok = isinstance(v, A.IntAttr) if key == "index_vector_dim" else (
                    isinstance(v, A.ListAttr) and all(isinstance(x, A.IntAttr)
                                                      for x in v.items))
                if not ok:
                    fail(op, "", f"#{a.name} field '{key}' has a malformed value {v}")


_NAMESPACED = re.compile(r"[A-Za-z_][\w$]*(\.[A-Za-z_][\w$]*)+")


def _verify_composite(op: Op, module: Module) -> None:
    """(C1) a namespaced name, (C2) the decomposition exists, (C3)-(C4) its signature."""
    op_name = str(op.attr("name"))
    if not _NAMESPACED.fullmatch(op_name):
        fail(op, "C1", f"name must be namespaced like 'dialect.op', got '{op_name}'")
    name = str(op.attr("decomposition"))
    f = module.func(name)
    if f is None:
        fail(op, "C2", f"decomposition @{name} is not defined")
    if [v.type for v in op.operands] != f.arg_types:
        fail(op, "C3", f"decomposition @{name} does not take the composite's input types")
    if op.result_types != f.result_types:
        fail(op, "C4", f"decomposition @{name} does not return the composite's result types")


def _verify_call(op: Op, module: Module) -> None:
    callee = str(op.attr("callee"))
    f = module.func(callee)
    if f is None:
        fail(op, "", f"calls undefined function @{callee}")
    ins = [v.type for v in op.operands]
    if ins != f.arg_types or op.result_types != f.result_types:
        sig = f"({', '.join(map(str, f.arg_types))}) -> {format_results(f.result_types)}"
        fail(op, "", f"call does not match the signature of @{callee}: {sig}")
