"""Remaining op families: clamp, case, fft, rng, linear algebra, batch norm, tuples,
reduce_precision, map, chlo and the interpreter's check ops."""

from __future__ import annotations

from frontend.ir.attrs import DenseElementsAttr
from frontend.ir.core import Op
from frontend.ir.ops import _CHLO_UNARY
from frontend.ir.types import ComplexType, FloatType, IntegerType, TensorType, TupleType
from frontend.verify.common import (
    baseline_element,
    dims,
    fail,
    in_range,
    shapes_ok,
    size,
    tensor,
    types_ok,
    verifies,
)
from frontend.verify.control import region_results


@verifies("clamp")
def verify_clamp(op: Op) -> None:
    """(C1)-(C4) of clamp."""
    lo, x, hi = (tensor(op, v, n) for v, n in zip(op.operands, ("min", "operand", "max"),
                                                   strict=True))
    r = tensor(op, op.result_types[0], "result")
    for t, rule, name in ((lo, "C1", "min"), (hi, "C2", "max")):
        if t.rank != 0 and not shapes_ok(t.shape, x.shape):
            fail(op, rule, f"{name} must be a scalar or have the operand's shape "
                           f"{dims(x.shape)}, got {dims(t.shape)}")
    if not baseline_element(lo) == baseline_element(x) == baseline_element(hi):
        fail(op, "C3", f"min, operand and max element types differ: {lo.element}, "
                       f"{x.element}, {hi.element}")
    if x.element != r.element or not shapes_ok(x.shape, r.shape):
        fail(op, "C4", f"result type {r} must equal the operand type {x}")


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


@verifies("fft")
def verify_fft(op: Op) -> None:
    """(C1)/(C3) fft_length size, (C2) element types, (C4) fft_length, (C5) shapes."""
    t = tensor(op, op.operands[0], "operand")
    r = tensor(op, op.result_types[0], "result")
    length = list(op.attr("fft_length", []))
    kind = op.attr("fft_type")
    if not 1 <= len(length) <= 3 or len(length) > t.rank:
        fail(op, "C3", f"fft_length must have 1 to 3 entries, at most rank {t.rank}")
    complex_in = isinstance(t.element, ComplexType)
    complex_out = isinstance(r.element, ComplexType)
    want = {"FFT": (True, True), "IFFT": (True, True), "RFFT": (False, True),
            "IRFFT": (True, False)}.get(str(kind))
    if want is not None and (complex_in, complex_out) != want:
        fail(op, "C2", f"{kind} maps {'complex' if want[0] else 'real'} to "
                       f"{'complex' if want[1] else 'real'}, got {t.element} -> {r.element}")
    if _component(t.element) != _component(r.element):
        fail(op, "C2", f"operand {t.element} and result {r.element} must have the same "
                       f"floating-point semantics")
    for real in (x for x in (t, r) if isinstance(x.element, FloatType)):
        if not shapes_ok(real.shape[-len(length):], tuple(length)):
            fail(op, "C4", f"the trailing dimensions of {real} must be fft_length {length}")
    if t.rank != r.rank:
        fail(op, "C5", f"result rank {r.rank} must equal operand rank {t.rank}")
    _check_fft_shape(op, t, r, str(kind))


def _component(e: object) -> object:
    return e.element if isinstance(e, ComplexType) else e


def _check_fft_shape(op: Op, t: TensorType, r: TensorType, kind: str) -> None:
    """(C5): shapes agree except the last dimension of RFFT/IRFFT's real side."""
    want = t.shape
    if kind in ("RFFT", "IRFFT") and t.rank:
        full, half = (t, r) if kind == "RFFT" else (r, t)
        last = full.shape[-1]
        size = None if last is None else (0 if last == 0 else last // 2 + 1)
        if not shapes_ok(half.shape[-1:], (size,)):
            fail(op, "C5", f"{kind} needs last dimension {dims([size])} on the complex "
                           f"side, got {dims(half.shape[-1:])}")
        want = t.shape[:-1] + r.shape[-1:]
    if not shapes_ok(want, r.shape):
        fail(op, "C5", f"result shape must be {dims(want)}, got {dims(r.shape)}")


@verifies("rng_bit_generator")
def verify_rng_bit_generator(op: Op) -> None:
    """(C1) type(initial_state) = type(output_state), (C2) the state's size."""
    if op.result_types[0] != op.operands[0].type:
        fail(op, "C1", f"output_state type {op.result_types[0]} must equal initial_state "
                       f"type {op.operands[0].type}")
    n = size(tensor(op, op.operands[0], "initial_state").shape)
    allowed = {"THREE_FRY": (2,), "PHILOX": (2, 3)}.get(str(op.attr("rng_algorithm")))
    if n is not None and allowed is not None and n not in allowed:
        fail(op, "C2", f"{op.attr('rng_algorithm')} needs an initial_state of "
                       f"{' or '.join(map(str, allowed))} elements, got {n}")


@verifies("cholesky")
def verify_cholesky(op: Op) -> None:
    """(C1) result type, (C2) rank >= 2, (C3) square trailing matrices."""
    a = tensor(op, op.operands[0], "a")
    if not types_ok(a, op.result_types[0]):
        fail(op, "C1", f"result type must equal {a}")
    if a.rank < 2:
        fail(op, "C2", f"a must have rank >= 2, got {a.rank}")
    if None not in a.shape[-2:] and a.shape[-2] != a.shape[-1]:
        fail(op, "C3", f"a must be square in its last two dimensions, got {dims(a.shape)}")


@verifies("triangular_solve")
def verify_triangular_solve(op: Op) -> None:
    """(C1) element types, (C2) ranks, (C3) shapes, (C4) result type."""
    a, b = tensor(op, op.operands[0], "a"), tensor(op, op.operands[1], "b")
    if baseline_element(a) != baseline_element(b):
        fail(op, "C1", f"a and b element types differ: {a.element} vs {b.element}")
    if not 2 <= a.rank == b.rank:
        fail(op, "C2", f"a and b must have the same rank >= 2, got {a.rank} and {b.rank}")
    k = b.shape[-2] if op.attr("left_side", False) else b.shape[-1]
    if not shapes_ok(a.shape[:-2], b.shape[:-2]) or not shapes_ok(a.shape[-2:], (k, k)):
        fail(op, "C3", f"a must have shape [..., {k}, {k}] matching b, got {dims(a.shape)}")
    if not types_ok(b, op.result_types[0]):
        fail(op, "C4", f"result type must equal b's type {b}")


# Per op: (name, rule) of each per-feature operand, then of each per-feature result.
_FEATURE_RULES = {
    "stablehlo.batch_norm_inference": ((("scale", "C3"), ("offset", "C4"), ("mean", "C5"),
                                        ("variance", "C6")), ()),
    "stablehlo.batch_norm_training": ((("scale", "C3"), ("offset", "C4")),
                                      (("batch_mean", "C5"), ("batch_var", "C6"))),
    "stablehlo.batch_norm_grad": ((("scale", "C5"), ("mean", "C4"), ("variance", "C4")),
                                  (("grad_scale", "C4"), ("grad_offset", "C4"))),
}


def _feature_checks(op: Op) -> TensorType:
    """(C1) feature_index in range; per-feature operands and results have its size."""
    t = tensor(op, op.operands[0], "operand")
    fi = op.attr("feature_index", 0)
    in_range(op, "C1", "feature_index", [fi], t.rank)
    ins, outs = _FEATURE_RULES[op.name]
    pairs = [(v.type, v, n, rule) for v, (n, rule) in zip(op.operands[1:], ins, strict=False)]
    pairs += [(ty, None, n, rule) for ty, (n, rule) in zip(op.result_types[1:], outs,
                                                           strict=False)]
    for ty, v, name, rule in pairs:
        s = tensor(op, ty, name)
        if s.rank != 1 or not shapes_ok(s.shape, (t.shape[fi],)):
            fail(op, rule, f"{name} must be a 1-D tensor of size {dims([t.shape[fi]])}, "
                           f"got {s}", v)
    return t


@verifies("batch_norm_inference", "batch_norm_training", "batch_norm_grad")
def verify_batch_norm(op: Op) -> None:
    """(C1) feature_index, (C2) one baseline element type, per-feature sizes, and the
    output (and grad_output) types equal to the operand's."""
    t = _feature_checks(op)
    for ty in [v.type for v in op.operands] + list(op.result_types):
        e = baseline_element(tensor(op, ty, "operand or result"))
        if e != baseline_element(t):
            fail(op, "C2", f"operands and results must share the element type {t.element}, "
                           f"got {ty}")
    grad = op.name.endswith("grad")
    same = [op.result_types[0]] + ([op.operands[4].type] if grad else [])
    for ty in same:
        if not types_ok(ty, t):
            fail(op, "C3" if grad else "C7", f"{ty} must have the operand type {t}")


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


@verifies("reduce_precision")
def verify_reduce_precision(op: Op) -> None:
    """(C1) result type, (C2) exponent_bits >= 1, (C3) mantissa_bits >= 0."""
    if not types_ok(op.operands[0].type, op.result_types[0]):
        fail(op, "C1", "result type must equal the operand type")
    if op.attr("exponent_bits", 1) < 1:
        fail(op, "C2", f"exponent_bits must be >= 1, got {op.attr('exponent_bits')}")
    if op.attr("mantissa_bits", 0) < 0:
        fail(op, "C3", f"mantissa_bits must be >= 0, got {op.attr('mantissa_bits')}")


@verifies("map")
def verify_map(op: Op) -> None:
    """(C1) shapes, (C2) inputs, (C3) dimensions, (C4) computation type."""
    ins = [tensor(op, v, "input") for v in op.operands]
    r = tensor(op, op.result_types[0], "result")
    if not ins:
        fail(op, "C2", "needs at least one input")
    for t in ins:
        if not shapes_ok(t.shape, r.shape):
            fail(op, "C1", f"input shape {dims(t.shape)} differs from result shape "
                           f"{dims(r.shape)}")
    if list(op.attr("dimensions", [])) != list(range(ins[0].rank)):
        fail(op, "C3", f"dimensions must be {list(range(ins[0].rank))}")
    args = [a.type for a in op.regions[0].block.args]
    if args != [TensorType((), t.element) for t in ins]:
        fail(op, "C4", "computation arguments must be scalars of the input element types")
    got = region_results(op, op.regions[0], "computation")
    if got != [TensorType((), r.element)]:
        fail(op, "C4", f"computation must return tensor<{r.element}>")


@verifies(*(f"chlo.{n}" for n in _CHLO_UNARY))
def verify_chlo_unary(op: Op) -> None:
    """Shape is kept; predicates give i1, others keep the element type (complex aside)."""
    t = tensor(op, op.operands[0], "operand")
    r = tensor(op, op.result_types[0], "result")
    if not shapes_ok(t.shape, r.shape):
        fail(op, "", f"result shape {dims(r.shape)} differs from operand shape "
                     f"{dims(t.shape)}")
    if op.name.startswith("chlo.is_"):
        if r.element != IntegerType(1):
            fail(op, "", f"result element type must be i1, got {r.element}")
    elif r.element != t.element and not isinstance(t.element, ComplexType):
        fail(op, "", f"result element type {r.element} differs from operand's {t.element}")
    if not op.name.startswith("chlo.is_") and not isinstance(
            t.element, (FloatType, ComplexType)) and op.name != "chlo.conj":
        fail(op, "", f"operand element type must be float or complex, got {t.element}")


@verifies("chlo.top_k")
def verify_top_k(op: Op) -> None:
    """k <= last dimension; values and indices have shape [..., k]."""
    t = tensor(op, op.operands[0], "operand")
    k = op.attr("k", 0)
    if t.rank == 0 or (t.shape[-1] is not None and not 0 <= k <= t.shape[-1]):
        fail(op, "", f"k = {k} must be between 0 and the last dimension of {t}")
    want = t.shape[:-1] + (k,)
    for r in op.result_types:
        if not shapes_ok(want, tensor(op, r, "result").shape):
            fail(op, "", f"results must have shape {dims(want)}, got {r}")


@verifies("check.expect_eq_const", "check.expect_almost_eq_const")
def verify_check_const(op: Op) -> None:
    """The expected constant has the checked value's type."""
    expected = op.attrs.get("expected")
    if isinstance(expected, DenseElementsAttr) and expected.type != op.operands[0].type:
        fail(op, "", f"expected value of type {expected.type} does not match "
                     f"{op.operands[0].type}", op.operands[0])
