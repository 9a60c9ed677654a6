"""The dot family: dot_general, dot and chlo.ragged_dot (CHLO has no numbered
constraints: its rules are those of ChloOps.td/.cpp)."""

from __future__ import annotations

from collections.abc import Sequence

from frontend.ir import attrs as A
from frontend.ir.core import Op
from frontend.ir.types import IntegerType
from frontend.verify.common import (
    dim_ok,
    dims,
    fail,
    in_range,
    list_attr,
    shapes_ok,
    tensor,
    unique,
    verifies,
)
from frontend.verify.quant import check_dot_general


@verifies("dot_general")
def verify_dot_general(op: Op) -> None:
    """(C1)-(C12) of dot_general."""
    lhs, rhs = tensor(op, op.operands[0], "lhs"), tensor(op, op.operands[1], "rhs")
    r = tensor(op, op.result_types[0], "result")
    dn = op.attrs.get("dot_dimension_numbers")
    if not isinstance(dn, A.StructAttr):
        fail(op, "", "needs dot_dimension_numbers = #stablehlo.dot<...>")
    lb = A.as_ints(dn.get("lhs_batching_dimensions"))
    rb = A.as_ints(dn.get("rhs_batching_dimensions"))
    lc = A.as_ints(dn.get("lhs_contracting_dimensions"))
    rc = A.as_ints(dn.get("rhs_contracting_dimensions"))
    if len(lb) != len(rb):
        fail(op, "C1", f"lhs and rhs batching dimensions differ in number: {lb} vs {rb}")
    if len(lc) != len(rc):
        fail(op, "C2", f"lhs and rhs contracting dimensions differ in number: {lc} vs {rc}")
    unique(op, "C3", "lhs batching and contracting dimensions", lb + lc)
    unique(op, "C4", "rhs batching and contracting dimensions", rb + rc)
    in_range(op, "C5", "lhs_batching_dimensions", lb, lhs.rank)
    in_range(op, "C6", "lhs_contracting_dimensions", lc, lhs.rank)
    in_range(op, "C7", "rhs_batching_dimensions", rb, rhs.rank)
    in_range(op, "C8", "rhs_contracting_dimensions", rc, rhs.rank)
    for a, b in zip(lb, rb, strict=True):
        if not dim_ok(lhs.shape[a], rhs.shape[b]):
            fail(op, "C9", f"batching dimension sizes differ: lhs[{a}] = {lhs.shape[a]}, "
                           f"rhs[{b}] = {rhs.shape[b]}")
    for a, b in zip(lc, rc, strict=True):
        if not dim_ok(lhs.shape[a], rhs.shape[b]):
            fail(op, "C10", f"contracting dimension sizes differ: lhs[{a}] = {lhs.shape[a]}, "
                            f"rhs[{b}] = {rhs.shape[b]}")
    prec = list_attr(op, "precision_config")
    if prec is not None and len(prec) not in (0, 2):
        fail(op, "C11", f"precision_config must have 2 entries, got {len(prec)}")
    free_l = [d for i, d in enumerate(lhs.shape) if i not in lb + lc]
    free_r = [d for i, d in enumerate(rhs.shape) if i not in rb + rc]
    want = tuple([lhs.shape[i] for i in lb] + free_l + free_r)
    if not shapes_ok(want, r.shape):
        fail(op, "C12", f"result shape must be {dims(want)}, got {dims(r.shape)}")
    check_dot_general(op, lhs, rhs, r, rc)
    _check_algorithm(op, prec)


def _check_algorithm(op: Op, prec: Sequence[object] | None) -> None:
    """(C21)-(C24): an algorithm needs DEFAULT precisions and positive counts."""
    alg = op.attrs.get("algorithm")
    if not isinstance(alg, A.StructAttr) or not alg.fields:
        return
    if any(p != "DEFAULT" for p in prec or []):
        fail(op, "C21", f"precision_config must be DEFAULT when an algorithm is given, got "
                        f"{prec}")
    for rule, key in (("C22", "lhs_component_count"), ("C23", "rhs_component_count"),
                      ("C24", "num_primitive_operations")):
        count = alg.get(key, 1)
        if isinstance(count, int) and count <= 0:
            fail(op, rule, f"{key} must be positive, got {count}")


@verifies("dot")
def verify_dot(op: Op) -> None:
    """Ranks 1-2, a matching contracting dimension and the implied result shape."""
    lhs, rhs = tensor(op, op.operands[0], "lhs"), tensor(op, op.operands[1], "rhs")
    r = tensor(op, op.result_types[0], "result")
    if lhs.rank not in (1, 2) or rhs.rank not in (1, 2):
        fail(op, "", f"operands must have rank 1 or 2, got {lhs.rank} and {rhs.rank}")
    if not dim_ok(lhs.shape[-1], rhs.shape[0]):
        fail(op, "", f"contracting dimensions differ: {lhs.shape[-1]} vs {rhs.shape[0]}")
    want = lhs.shape[:-1] + rhs.shape[1:]
    if not shapes_ok(want, r.shape):
        fail(op, "", f"result shape must be {dims(want)}, got {dims(r.shape)}")


def ragged_dims(op: Op) -> dict[str, list[int]]:
    """The six dimension lists of ``ragged_dot_dimension_numbers`` (absent ones empty)."""
    dn = op.attrs.get("ragged_dot_dimension_numbers")
    if dn is None:
        fail(op, "", "needs a ragged_dot_dimension_numbers attribute")
    get = getattr(dn, "get", None)
    if get is None:
        fail(op, "", f"ragged_dot_dimension_numbers must be #chlo.ragged_dot<...>, got {dn}")
    names = ("lhs_batching_dimensions", "rhs_batching_dimensions",
             "lhs_contracting_dimensions", "rhs_contracting_dimensions",
             "lhs_ragged_dimensions", "rhs_group_dimensions")
    return {n: [int(d) for d in get(n, []) or []] for n in names}


def ragged_mode(op: Op, d: dict[str, list[int]]) -> str:
    """``non_contracting``, ``contracting`` or ``batch``: where the ragged dimension is."""
    (ragged,) = d["lhs_ragged_dimensions"]
    if ragged in d["lhs_contracting_dimensions"]:
        return "contracting"
    if ragged in d["lhs_batching_dimensions"]:
        return "batch"
    return "non_contracting"


@verifies("chlo.ragged_dot")
def verify_ragged_dot(op: Op) -> None:
    """Dimension numbers as dot_general's plus one lhs ragged dimension; a group dimension
    of rhs exactly in the non-contracting mode; group_sizes of shape [g] or the lhs batch
    dimensions then [g]; the result shape of the mode."""
    lhs, rhs, gs = (tensor(op, v, n) for v, n in zip(
        op.operands, ("lhs", "rhs", "group_sizes"), strict=True))
    res = tensor(op, op.result_types[0], "result")
    d = ragged_dims(op)
    lb, rb = d["lhs_batching_dimensions"], d["rhs_batching_dimensions"]
    lc, rc = d["lhs_contracting_dimensions"], d["rhs_contracting_dimensions"]
    groups = d["rhs_group_dimensions"]
    in_range(op, "", "lhs dimension", lb + lc + d["lhs_ragged_dimensions"], lhs.rank)
    in_range(op, "", "rhs dimension", rb + rc + groups, rhs.rank)
    if len(d["lhs_ragged_dimensions"]) != 1:
        fail(op, "", "there must be exactly one lhs_ragged_dimension")
    if len(set(lb + lc)) != len(lb + lc) or len(set(rb + rc + groups)) != len(rb + rc + groups):
        fail(op, "", "a dimension appears twice in ragged_dot_dimension_numbers")
    if len(lb) != len(rb) or len(lc) != len(rc):
        fail(op, "", "lhs and rhs must have as many batching and contracting dimensions")
    for a, b in zip(lb + lc, rb + rc, strict=True):
        if not shapes_ok([lhs.shape[a]], [rhs.shape[b]]):
            fail(op, "", f"lhs dimension {a} ({lhs.shape[a]}) and rhs dimension {b} "
                         f"({rhs.shape[b]}) must have the same size")
    if not isinstance(gs.element, IntegerType) or gs.element.width == 1:
        fail(op, "", f"group_sizes must be integers, got {gs.element}")
    mode = ragged_mode(op, d)
    if (mode == "non_contracting") != (len(groups) == 1) or len(groups) > 1:
        fail(op, "", "rhs_group_dimensions must hold one dimension when the ragged dimension "
                     "is a non-contracting one, and none otherwise")
    g = rhs.shape[groups[0]] if groups else gs.shape[-1] if gs.rank else None
    batch_gs = tuple(lhs.shape[i] for i in lb) + (g,)
    if not (shapes_ok(gs.shape, (g,)) or shapes_ok(gs.shape, batch_gs)):
        fail(op, "", f"group_sizes must have shape {dims((g,))} or {dims(batch_gs)}, got "
                     f"{dims(gs.shape)}")
    lf = [i for i in range(lhs.rank) if i not in lb + lc]
    rf = [i for i in range(rhs.rank) if i not in rb + rc + groups]
    shape = tuple(lhs.shape[i] for i in lb + lf) + tuple(rhs.shape[i] for i in rf)
    if mode == "contracting":
        shape = (g,) + shape
    if not shapes_ok(shape, res.shape):
        fail(op, "", f"result shape must be {dims(shape)}, got {dims(res.shape)}")
