"""chlo.mulhi, chlo.ragged_dot and chlo.scan (CHLO has no numbered constraints: the
rules are those of the ops' definitions in ChloOps.td / ChloOps.cpp)."""

from __future__ import annotations

from frontend.ir.core import Op
from frontend.ir.types import IntegerType, TensorType
from frontend.verify.common import dims, fail, in_range, shapes_ok, tensor, types_ok, verifies
from frontend.verify.control import region_results


@verifies("chlo.mulhi")
def verify_mulhi(op: Op) -> None:
    """Integer operands and result of one type."""
    lhs, rhs = (tensor(op, v, name) for v, name in zip(op.operands, ("lhs", "rhs"),
                                                         strict=True))
    res = tensor(op, op.result_types[0], "result")
    if not isinstance(lhs.element, IntegerType) or lhs.element.width == 1:
        fail(op, "", f"operands must be integers of at least 8 bits, got {lhs.element}")
    if not types_ok(lhs, rhs) or not types_ok(lhs, res):
        fail(op, "", f"operands and result must have one type, got {lhs}, {rhs} -> {res}")


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


@verifies("chlo.scan")
def verify_scan(op: Op) -> None:
    """Inputs of one length along ``dimension``; the body takes their slices (the dimension
    removed) and the carries, and returns the output slices and the new carries; results
    are the outputs (the slices stacked along ``dimension``) then the final carries."""
    inputs = [tensor(op, v, "input") for v in op.operand_group("inputs")]
    inits = [v.type for v in op.operand_group("inits")]
    dim = int(op.attr("dimension", 0))
    for t in inputs:
        in_range(op, "", "dimension", [dim], t.rank)
    lengths = {t.shape[dim] for t in inputs}
    if len(lengths) > 1:
        fail(op, "", f"inputs must have one length along dimension {dim}, got "
                     f"{sorted(map(str, lengths))}")
    n = lengths.pop() if lengths else None
    args = [a.type for a in op.regions[0].block.args]
    want = [TensorType(t.shape[:dim] + t.shape[dim + 1:], t.element) for t in inputs] + inits
    if len(args) != len(want) or not all(types_ok(a, w) for a, w in zip(args, want,
                                                                         strict=True)):
        fail(op, "", "body arguments must be the input slices then the carries: "
                     f"({', '.join(map(str, want))}), got ({', '.join(map(str, args))})")
    got = region_results(op, op.regions[0], "body")
    n_out = len(op.result_types) - len(inits)
    if n_out < 0 or len(got) != len(op.result_types):
        fail(op, "", f"body must return {len(op.result_types)} values (outputs then "
                     f"carries), got {len(got)}")
    for i, (slice_t, r) in enumerate(zip(got[:n_out], op.result_types[:n_out], strict=True)):
        st, rt = tensor(op, slice_t, "body output"), tensor(op, r, "result")
        stacked = st.shape[:dim] + (n,) + st.shape[dim:]
        if rt.element != st.element or not shapes_ok(stacked, rt.shape):
            fail(op, "", f"result {i} must be tensor<{dims(stacked)}x{st.element}> (the body's "
                         f"output slices stacked), got {rt}")
    for c, init, r in zip(got[n_out:], inits, op.result_types[n_out:], strict=True):
        if not types_ok(c, init) or not types_ok(r, init):
            fail(op, "", f"carries must keep the type of their init {init}, got {c} -> {r}")
