"""The control family: while, if, case, tuple, get_tuple_element, optimization_barrier and
chlo.scan (CHLO has no numbered constraints: its rules are those of ChloOps.td/.cpp)."""

from __future__ import annotations

from frontend.ir.core import Op
from frontend.ir.types import IntegerType, TensorType, TupleType, format_results
from frontend.verify.common import (
    dims,
    fail,
    in_range,
    region_results,
    same_types,
    shapes_ok,
    tensor,
    types_ok,
    verifies,
)


@verifies("while")
def verify_while(op: Op) -> None:
    """(C1) cond returns tensor<i1>, (C2) body keeps the types, (C3) results."""
    types = [v.type for v in op.operands]
    cond, body = op.regions
    if [a.type for a in cond.block.args] != types:
        fail(op, "C1", "cond arguments must have the operand types")
    got = region_results(op, cond, "cond")
    if len(got) != 1 or got[0] != TensorType((), IntegerType(1)):
        fail(op, "C1", f"cond must return tensor<i1>, got {format_results(got)}")
    if [a.type for a in body.block.args] != types or \
            not same_types(region_results(op, body, "body"), types):
        fail(op, "C2", f"body must have type ({', '.join(map(str, types))}) -> "
                       f"{format_results(types)}")
    if not same_types(op.result_types, types):
        fail(op, "C3", f"result types must equal operand types {format_results(types)}")


@verifies("if")
def verify_if(op: Op) -> None:
    """(C1) branches take no arguments, (C2) return the same types, (C3) = results."""
    pred = tensor(op, op.operands[0], "pred")
    if pred.rank != 0 or pred.element != IntegerType(1):
        fail(op, "", f"pred must be tensor<i1>, got {pred}")
    for i, region in enumerate(op.regions):
        if region.block.args:
            fail(op, "C1", f"branch {i} must take no arguments")
    got = [region_results(op, r, f"branch {i}") for i, r in enumerate(op.regions)]
    if not same_types(got[0], got[1]):
        fail(op, "C2", f"branch 1 returns {format_results(got[1])} but branch 0 returns "
                       f"{format_results(got[0])}")
    if not same_types(got[0], op.result_types):
        fail(op, "C3", f"branches return {format_results(got[0])} but the op's results are "
                       f"{format_results(op.result_types)}")


@verifies("case")
def verify_case(op: Op) -> None:
    """(C1)-(C4) of case."""
    idx = tensor(op, op.operands[0], "index")
    if idx.rank != 0 or idx.element != IntegerType(32):
        fail(op, "", f"index must be tensor<i32>, got {idx}")
    if not op.regions:
        fail(op, "C1", "needs at least one branch")
    first = region_results(op, op.regions[0], "branch 0")
    for i, region in enumerate(op.regions):
        if region.block.args:
            fail(op, "C2", f"branch {i} must take no arguments")
        got = region_results(op, region, f"branch {i}")
        if len(got) != len(first) or not all(map(types_ok, got, first)):
            fail(op, "C3", f"branch {i} returns ({', '.join(map(str, got))}) but branch 0 "
                           f"returns ({', '.join(map(str, first))})")
    if len(first) != len(op.result_types) or not all(map(types_ok, op.result_types, first)):
        fail(op, "C4", "result types must equal the branches' output types")


@verifies("tuple")
def verify_tuple(op: Op) -> None:
    """(C1) the result is the tuple of the operands' types."""
    want = TupleType(tuple(v.type for v in op.operands))
    if op.result_types[0] != want:
        fail(op, "C1", f"result type must be {want}, got {op.result_types[0]}")


@verifies("optimization_barrier")
def verify_optimization_barrier(op: Op) -> None:
    """(C1) results have the operands' types."""
    if [v.type for v in op.operands] != op.result_types:
        fail(op, "C1", "result types must equal operand types")


@verifies("chlo.scan")
def verify_scan(op: Op) -> None:
    """Inputs of one length along ``dimension``; the body takes their slices (the dimension
    removed) and the carries, and returns the output slices and the new carries; results
    are the outputs (the slices stacked along ``dimension``) then the final carries."""
    inputs = [tensor(op, v, "input") for v in op.operand_group("inputs")]
    inits = [v.type for v in op.operand_group("inits")]
    dim = op.int_attr("dimension", 0)
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


@verifies("get_tuple_element")
def verify_get_tuple_element(op: Op) -> None:
    """(C1) index in range, (C2) result type is the element's type."""
    t = op.operands[0].type
    if not isinstance(t, TupleType):
        fail(op, "", f"operand must be a tuple, got {t}")
    i = op.int_attr("index", 0)
    if not 0 <= i < len(t.types):
        fail(op, "C1", f"index {i} is out of range for {t}")
    if op.result_types[0] != t.types[i]:
        fail(op, "C2", f"result type must be {t.types[i]}, got {op.result_types[0]}")
