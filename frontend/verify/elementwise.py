"""Elementwise ops: same shapes, the element types each op allows, compare and select,
clamp, map, reduce_precision, bitcast_convert and chlo's unary ops and mulhi."""

from __future__ import annotations

from frontend.ir.core import Op
from frontend.ir.ops import _BINARY, _CHLO_UNARY, _UNARY
from frontend.ir.types import (
    ComplexType,
    FloatType,
    IntegerType,
    QuantizedType,
    TensorType,
    is_bool,
    is_complex,
    is_float,
    is_int,
)
from frontend.verify.common import (
    baseline_element,
    dims,
    fail,
    region_results,
    shapes_ok,
    tensor,
    types_ok,
    verifies,
)
from frontend.verify.quant import check_add, uses_quantized

_FLOAT_OR_COMPLEX = {"cbrt", "cosine", "exponential", "exponential_minus_one", "log",
                     "log_plus_one", "logistic", "rsqrt", "sine", "sqrt", "tan", "tanh",
                     "atan2", "divide", "power"}
_FLOAT_ONLY = {"ceil", "floor", "round_nearest_afz", "round_nearest_even", "is_finite"}
_INT_ONLY = {"popcnt", "count_leading_zeros", "shift_left", "shift_right_arithmetic",
             "shift_right_logical"}
_INT_OR_BOOL = {"not", "and", "or", "xor"}
_NOT_BOOL = {"abs", "negate", "sign", "divide", "remainder",
             "power"}
_SPECIAL_RESULT = {"convert", "complex", "real", "imag", "abs", "is_finite"}


def _element_ok(name: str, e: object) -> bool:
    if isinstance(e, QuantizedType):
        return True
    if name in _FLOAT_OR_COMPLEX:
        return is_float(e) or is_complex(e) or (name in ("divide", "power") and is_int(e))
    if name in _FLOAT_ONLY:
        return is_float(e)
    if name in _INT_ONLY:
        return is_int(e)
    if name in _INT_OR_BOOL:
        return is_int(e) or is_bool(e)
    if name in _NOT_BOOL:
        return not is_bool(e)
    return True


@verifies(*_UNARY, *_BINARY)
def verify_elementwise(op: Op) -> None:
    """(C1) operands and result agree in shape; element types per op."""
    short = op.name.split(".", 1)[1]
    result = tensor(op, op.result_types[0], "result")
    for v in op.operands:
        t = tensor(op, v, "operand")
        if short == "clamp" and t.rank == 0:
            continue
        if not shapes_ok(t.shape, result.shape):
            fail(op, "C2" if short == "complex" else "C1",
                 f"operand shape {dims(t.shape)} does not match result shape "
                 f"{dims(result.shape)}", v)
    if short == "add" and uses_quantized(*(tensor(op, v, "operand") for v in op.operands),
                                         result):
        check_add(op)
        return
    first = tensor(op, op.operands[1 if short == "clamp" else 0], "operand")
    if not _element_ok(short, first.element):
        fail(op, "C1", f"element type {first.element} is not allowed for {short}")
    for v in op.operands:
        if short not in ("convert",) and baseline_element(tensor(op, v, "operand")) != \
                baseline_element(first):
            fail(op, "C1", f"operand element types differ: {first.element} vs "
                           f"{tensor(op, v, 'operand').element}", v)
    _check_result_element(op, short, first, result)


def _check_result_element(op: Op, short: str, operand: TensorType, result: TensorType) -> None:
    e = operand.element
    if short == "convert" or isinstance(e, QuantizedType) or \
            isinstance(result.element, QuantizedType):
        return
    if short == "complex":
        want: object = ComplexType(e) if isinstance(e, FloatType) else None
    elif short in ("real", "imag", "abs") and isinstance(e, ComplexType):
        want = e.element
    elif short == "is_finite":
        want = IntegerType(1)
    else:
        want = e
    if result.element != want:
        rule = {"complex": "C3", "is_finite": "C1"}.get(
            short, "C2" if short in _SPECIAL_RESULT else "C1")
        fail(op, rule, f"result element type must be {want}, got {result.element}")


@verifies("compare")
def verify_compare(op: Op) -> None:
    """(C1) same operand element types, (C2) same shapes, i1 result, (C3) compare type."""
    lhs, rhs = tensor(op, op.operands[0], "lhs"), tensor(op, op.operands[1], "rhs")
    result = tensor(op, op.result_types[0], "result")
    if baseline_element(lhs) != baseline_element(rhs):
        fail(op, "C1", f"lhs element type {lhs.element} differs from rhs {rhs.element}")
    if not (shapes_ok(lhs.shape, rhs.shape) and shapes_ok(lhs.shape, result.shape)):
        fail(op, "C2", f"shapes differ: lhs {dims(lhs.shape)}, rhs {dims(rhs.shape)}, "
                       f"result {dims(result.shape)}")
    if not is_bool(result.element):
        fail(op, "C2", f"result element type must be i1, got {result.element}")
    ctype = op.attr("compare_type")
    if ctype is not None:
        allowed = _compare_types(lhs.element)
        if ctype not in allowed:
            fail(op, "C3", f"compare type {ctype} is not valid for {lhs.element} "
                           f"(expected {' or '.join(allowed)})")


def _compare_types(e: object) -> tuple[str, ...]:
    if isinstance(e, QuantizedType):
        e = e.storage
    if is_bool(e) or (isinstance(e, IntegerType) and e.unsigned):
        return ("UNSIGNED",)
    if is_int(e):
        return ("SIGNED",)
    return ("FLOAT", "TOTALORDER")


@verifies("select")
def verify_select(op: Op) -> None:
    """(C1) pred is a scalar or matches on_true's shape; (C2) branch/result types agree."""
    pred, on_true, on_false = (tensor(op, v, n) for v, n in
                               zip(op.operands, ("pred", "on_true", "on_false"), strict=False))
    result = tensor(op, op.result_types[0], "result")
    if not is_bool(pred.element):
        fail(op, "C1", f"pred must have element type i1, got {pred.element}", op.operands[0])
    if pred.rank != 0 and not shapes_ok(pred.shape, on_true.shape):
        fail(op, "C1", f"pred shape {dims(pred.shape)} must be scalar or equal on_true's "
                       f"{dims(on_true.shape)}", op.operands[0])
    for t in (on_false, result):
        if t.element != on_true.element or not shapes_ok(t.shape, on_true.shape):
            fail(op, "C2", f"on_true, on_false and result must have the same type, got "
                           f"{on_true}, {on_false}, {result}")


@verifies("bitcast_convert")
def verify_bitcast(op: Op) -> None:
    """(C1) equal bit widths keep the shape; otherwise a trailing dimension absorbs them;
    (C2) complex only to complex."""
    t = tensor(op, op.operands[0], "operand")
    r = tensor(op, op.result_types[0], "result")
    if is_complex(t.element) != is_complex(r.element):
        fail(op, "C2", f"complex types convert only to complex types, got {t.element} -> "
                       f"{r.element}")
    a, b = _bits(_storage(t.element)), _bits(_storage(r.element))
    if a is None or b is None:
        return
    if a == b and not shapes_ok(t.shape, r.shape):
        fail(op, "C1", f"shape must be preserved when bit widths match, got "
                       f"{dims(t.shape)} -> {dims(r.shape)}")
    if a != b:
        small, big = (t, r) if a < b else (r, t)
        ratio = max(a, b) // min(a, b)
        if small.rank != big.rank + 1 or small.shape[-1] not in (ratio, None) or \
                not shapes_ok(small.shape[:-1], big.shape):
            fail(op, "C1", f"bitcast from {t} to {r} needs the same leading dimensions and "
                           f"a trailing dimension of {ratio}")


def _storage(e: object) -> object:
    return e.storage if isinstance(e, QuantizedType) else e


def _bits(e: object) -> int | None:
    b = getattr(e, "bits", None)
    return b if isinstance(b, int) else None


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


@verifies("reduce_precision")
def verify_reduce_precision(op: Op) -> None:
    """(C1) result type, (C2) exponent_bits >= 1, (C3) mantissa_bits >= 0."""
    if not types_ok(op.operands[0].type, op.result_types[0]):
        fail(op, "C1", "result type must equal the operand type")
    if op.int_attr("exponent_bits", 1) < 1:
        fail(op, "C2", f"exponent_bits must be >= 1, got {op.attr('exponent_bits')}")
    if op.int_attr("mantissa_bits", 0) < 0:
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
    if op.ints_attr("dimensions", []) != list(range(ins[0].rank)):
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
