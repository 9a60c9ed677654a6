"""Quantization rules of individual ops (add, dot_general, convolution, shape ops, ...).

The family verifiers call these; each checks the rules that apply only when the op
uses quantized tensors, plus the matching non-quantized element-type rule.  The quant
family's own ops, uniform_quantize and uniform_dequantize, are verified here too.
"""

from __future__ import annotations

import dataclasses
import math

from frontend.ir.core import Op
from frontend.ir.quant import is_per_axis, is_per_tensor, is_quantized
from frontend.ir.types import QuantizedType, TensorType, is_float
from frontend.verify.common import dims, fail, shapes_ok, tensor, verifies


def uses_quantized(*types: TensorType) -> bool:
    """True when any of ``types`` is quantized (the spec's "uses quantized tensors")."""
    return any(is_quantized(t) for t in types)


def _q(t: TensorType) -> QuantizedType:
    assert isinstance(t.element, QuantizedType)
    return t.element


def _axis(t: TensorType) -> int:
    """The quantization dimension of per-axis quantized ``t``."""
    axis = _q(t).axis
    assert axis is not None, "per-axis quantized types have a quantization dimension"
    return axis


def check_add(op: Op) -> None:
    """add (C2)-(C7)."""
    lhs, rhs = tensor(op, op.operands[0], "lhs"), tensor(op, op.operands[1], "rhs")
    r = tensor(op, op.result_types[0], "result")
    if not all(is_quantized(t) for t in (lhs, rhs, r)):
        fail(op, "C2", f"lhs, rhs and result must all be quantized, got {lhs.element}, "
                       f"{rhs.element} and {r.element}")
    if not _q(lhs).storage == _q(rhs).storage == _q(r).storage:
        fail(op, "C3", f"storage types differ: {_q(lhs).storage}, {_q(rhs).storage}, "
                       f"{_q(r).storage}")
    if not _q(lhs).expressed == _q(rhs).expressed == _q(r).expressed:
        fail(op, "C4", f"expressed types differ: {_q(lhs).expressed}, {_q(rhs).expressed}, "
                       f"{_q(r).expressed}")
    if (is_per_axis(lhs) or is_per_axis(rhs)) != is_per_axis(r):
        fail(op, "C5", "the result must be per-axis quantized exactly when lhs or rhs is")
    for rule, t, name in (("C6", lhs, "lhs"), ("C7", rhs, "rhs")):
        if is_per_axis(t) and _q(t).axis != _q(r).axis:
            fail(op, rule, f"{name} quantization_dimension {_q(t).axis} differs from the "
                           f"result's {_q(r).axis}")


def check_dot_like(op: Op, lhs: TensorType, rhs: TensorType, r: TensorType,
                   rules: dict[str, str]) -> None:
    """Element-type rules shared by dot_general (C13-C20) and convolution (C27-C34).

    ``rules`` maps the roles ``plain``, ``all``, ``storage``, ``expressed``,
    ``per_tensor`` and ``float_lhs`` to the op's rule numbers.
    """
    if not uses_quantized(lhs, rhs, r):
        if not lhs.element == rhs.element:
            fail(op, rules["plain"], f"lhs and rhs element types differ: {lhs.element} vs "
                                     f"{rhs.element}")
        return
    if is_quantized(lhs) and not (is_quantized(r) and is_quantized(rhs)):
        fail(op, rules["all"], "lhs is quantized, so rhs and result must be quantized too")
    if not is_quantized(lhs) and is_quantized(r) and is_quantized(rhs):
        fail(op, rules["all"], "lhs is not quantized, so rhs and result cannot both be")
    if not is_quantized(rhs):
        fail(op, rules["all"], f"rhs must be quantized, got {rhs.element}")
    if is_quantized(lhs):
        if _q(lhs).storage != _q(rhs).storage:
            fail(op, rules["storage"], f"lhs and rhs storage types differ: {_q(lhs).storage} "
                                       f"vs {_q(rhs).storage}")
        if not _q(lhs).expressed == _q(rhs).expressed == _q(r).expressed:
            fail(op, rules["expressed"], f"expressed types differ: {_q(lhs).expressed}, "
                                         f"{_q(rhs).expressed}, {_q(r).expressed}")
        if is_per_tensor(rhs) and not is_per_tensor(r):
            fail(op, rules["per_tensor"], "per-tensor quantized rhs needs a per-tensor "
                                          "quantized result")
    elif not lhs.element == _q(rhs).expressed == r.element:
        fail(op, rules["float_lhs"], f"lhs element type {lhs.element}, rhs expressed type "
                                     f"{_q(rhs).expressed} and result element type "
                                     f"{r.element} must agree")


DOT_RULES = {"plain": "C13", "all": "C14", "storage": "C17", "expressed": "C18",
             "per_tensor": "C19", "float_lhs": "C20"}
CONV_RULES = {"plain": "C27", "all": "C28", "storage": "C31", "expressed": "C32",
              "per_tensor": "C33", "float_lhs": "C34"}


def check_dot_general(op: Op, lhs: TensorType, rhs: TensorType, r: TensorType,
                      rhs_contracting: list[int]) -> None:
    """dot_general (C13)-(C20)."""
    check_dot_like(op, lhs, rhs, r, DOT_RULES)
    if not is_quantized(rhs):
        return
    if any(z != 0 for z in _q(rhs).zero_points):
        fail(op, "C15", f"rhs zero points must be 0, got {list(_q(rhs).zero_points)}")
    if is_per_axis(rhs) and _q(rhs).axis in rhs_contracting:
        fail(op, "C16", f"rhs quantization_dimension {_q(rhs).axis} must not be a "
                        f"contracting dimension")


def check_convolution(op: Op, lhs: TensorType, rhs: TensorType, r: TensorType,
                      kernel_out: int, out_feature: int) -> None:
    """convolution (C27)-(C34)."""
    check_dot_like(op, lhs, rhs, r, CONV_RULES)
    if is_per_axis(rhs) and _q(rhs).axis != kernel_out:
        fail(op, "C29", f"rhs quantization_dimension must be the kernel output feature "
                        f"dimension {kernel_out}, got {_q(rhs).axis}")
    if is_per_axis(r) and _q(r).axis != out_feature:
        fail(op, "C30", f"result quantization_dimension must be the output feature "
                        f"dimension {out_feature}, got {_q(r).axis}")


def _same_except(a: object, b: object, fields: tuple[str, ...]) -> bool:
    if not (isinstance(a, QuantizedType) and isinstance(b, QuantizedType)):
        return a == b
    blank = {f: getattr(a, f) for f in fields}
    return dataclasses.replace(b, **blank) == a


def check_element_kept(op: Op, t: TensorType, r: TensorType, fields: tuple[str, ...]) -> None:
    """(C1) of broadcast/reshape/transpose: the element type is kept, except that a
    per-axis quantized operand's ``fields`` may change."""
    ok = _same_except(t.element, r.element, fields) if is_per_axis(t) else \
        t.element == r.element
    if not ok:
        fail(op, "C1", f"result element type {r.element} differs from operand's {t.element}")


BROADCAST_FIELDS = ("axis", "scales", "zero_points")


def check_broadcast_axis(op: Op, t: TensorType, r: TensorType, bd: list[int]) -> None:
    """broadcast_in_dim (C6): the result's quantization dimension follows the operand's."""
    if not (is_per_axis(r) and is_per_axis(t)):
        return
    qt, qr = _q(t), _q(r)
    at, ar = _axis(t), _axis(r)
    if at < len(bd) and ar != bd[at]:
        fail(op, "C6", f"result quantization_dimension must be {bd[at]}, got {ar}")
    if t.shape[at] == 1 and (set(qr.scales) != {qt.scales[0]} or
                                  set(qr.zero_points) != {qt.zero_points[0]}):
        fail(op, "C6", "a broadcast size-1 quantized dimension must repeat the operand's "
                       "scale and zero point")


def _product(dims: tuple[int | None, ...]) -> int | None:
    return None if None in dims else math.prod(d for d in dims if d is not None)


def check_reshape_axis(op: Op, t: TensorType, r: TensorType, rule: str) -> None:
    """reshape (C3): the quantized dimension and the sizes before/after it are kept."""
    if not (is_per_axis(t) and is_per_axis(r)):
        return
    a, b = _axis(t), _axis(r)
    pairs = [(t.shape[:a], r.shape[:b]), (t.shape[a:a + 1], r.shape[b:b + 1]),
             (t.shape[a + 1:], r.shape[b + 1:])]
    for x, y in pairs:
        px, py = _product(x), _product(y)
        if px is not None and py is not None and px != py:
            fail(op, rule, f"reshape must keep quantization dimension {a} (and the sizes "
                           f"before and after it) as result dimension {b}")


def check_transpose_axis(op: Op, t: TensorType, r: TensorType, perm: list[int]) -> None:
    """transpose (C4): quantization_dimension(operand) = permutation[qd(result)]."""
    if not (is_per_axis(r) and is_per_axis(t)) or _axis(r) >= len(perm):
        return
    if _axis(t) != perm[_axis(r)]:
        fail(op, "C4", f"operand quantization_dimension {_axis(t)} must equal "
                       f"permutation[{_axis(r)}] = {perm[_axis(r)]}")


def check_uniform_quantize(op: Op, t: TensorType, r: TensorType) -> None:
    """uniform_quantize (C2) and the operand/result kinds."""
    if not (is_float(t.element) or is_quantized(t)):
        fail(op, "", f"operand element type must be float or quantized, got {t.element}")
    if not is_quantized(r):
        fail(op, "C2", f"result element type must be quantized, got {r.element}")
    want = t.element if is_float(t.element) else _q(t).expressed
    if _q(r).expressed != want:
        fail(op, "C2", f"result expressed type must be {want}, got {_q(r).expressed}")


@verifies("uniform_quantize")
def verify_uniform_quantize(op: Op) -> None:
    """(C1) shape kept, (C2) the result's expressed type."""
    t, r = tensor(op, op.operands[0], "operand"), tensor(op, op.result_types[0], "result")
    if not shapes_ok(t.shape, r.shape):
        fail(op, "C1", f"result shape {dims(r.shape)} differs from operand shape "
                       f"{dims(t.shape)}")
    check_uniform_quantize(op, t, r)


@verifies("uniform_dequantize")
def verify_uniform_dequantize(op: Op) -> None:
    """(C1) shape kept, (C2) result element = the operand's expressed type."""
    t, r = tensor(op, op.operands[0], "operand"), tensor(op, op.result_types[0], "result")
    if not shapes_ok(t.shape, r.shape):
        fail(op, "C1", f"result shape {dims(r.shape)} differs from operand shape "
                       f"{dims(t.shape)}")
    if not isinstance(t.element, QuantizedType):
        fail(op, "", f"operand element type must be quantized, got {t.element}")
    if r.element != t.element.expressed:
        fail(op, "C2", f"result element type must be {t.element.expressed}, got {r.element}")
