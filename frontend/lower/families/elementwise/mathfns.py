"""Elementary functions: StableHLO unary/binary math ops as ``math.<fn>`` (elemental)."""

from __future__ import annotations

from frontend.ir.core import Op
from frontend.lower.core import types
from frontend.lower.core.builder import IndexExpr
from frontend.lower.core.fused import Fused
from frontend.lower.core.registry import elemental
from tensorlang.diagnostics import CompileError
from tensorlang.ir.ops import MATH_FNS

_UNARY = {
    "exponential": "exp", "log": "log", "sqrt": "sqrt", "rsqrt": "rsqrt", "sine": "sin",
    "cosine": "cos", "tan": "tan", "tanh": "tanh", "log_plus_one": "log1p",
    "exponential_minus_one": "expm1", "floor": "floor", "ceil": "ceil",
    "round_nearest_afz": "round", "round_nearest_even": "roundeven", "cbrt": "cbrt",
    "logistic": "logistic", "popcnt": "popcount", "count_leading_zeros": "clz",
    "real": "real", "imag": "imag", "is_finite": "isfinite", "abs": "abs", "sign": "sign",
}
_CHLO_UNARY = {
    **{name: name for name in
       "acos acosh asin asinh atan atanh cosh erf erfc lgamma sinh tan conj digamma".split()},
    "erf_inv": "erfinv", "bessel_i1e": "bessel_i1e",
}
_BINARY = {"power": "pow", "atan2": "atan2"}


def _fn(op: Op, fn: str, t: str) -> str:
    """``fn`` when the language defines it on ``t``, else a CompileError at ``op``."""
    spec = MATH_FNS[fn]
    if t == "i1":
        kind = "i1"
    else:
        kind = "complex" if t.startswith("c") else ("float" if t[0] in "fb" else "int")
    if kind not in spec.kinds or t in getattr(spec, "exclude", ()):
        raise CompileError.at(op.loc, f"'{op.name}' on {t} is not supported yet")
    return fn


@elemental(*(f"stablehlo.{name}" for name in _UNARY),
           *(f"chlo.{name}" for name in _CHLO_UNARY))
def unary(f: Fused, op: Op, idx: list[IndexExpr]) -> str:
    """One-operand elementary functions."""
    (a,) = f.operands(op, idx)
    t = types.elem(op.operand("operand"))
    if t == "i1" and op.name in ("stablehlo.abs", "stablehlo.sign"):
        return a
    name = op.name.split(".")[1]
    fn = _fn(op, _UNARY.get(name) or _CHLO_UNARY[name], t)
    if fn in ("sinh", "cosh") and t == "f32":
        return _xla_sinh_cosh(f, fn, a)
    in_double = fn in _IN_DOUBLE or (t == "c32" and fn in _IN_DOUBLE_COMPLEX)
    wide = _WIDER.get(t) if in_double else None
    if wide is None:
        return f.k.math(fn, a, None, t)
    result = f.k.math(fn, f.k.cast(a, t, wide), None, wide)
    return f.k.cast(result, wide, t)


_IN_DOUBLE = {"sinh", "cosh"}
"""Functions whose single-precision versions are computed in double for accuracy (the
backend computes f32 ``log1p`` in double itself, vectorisably on CPUs)."""
_IN_DOUBLE_COMPLEX = {"asin", "acos", "atan", "asinh", "acosh", "atanh", "log1p"}
"""Complex functions computed in double on c32 (their formulas lose a few ulp)."""
_WIDER = {"f32": "f64", "c32": "c64"}
_LOG_HALF = -0.6931471805599453


def _xla_sinh_cosh(f: Fused, fn: str, x: str) -> str:
    """f32 sinh/cosh as XLA computes them (the suite's expected values): ``e^(x + log 1/2)
    -+ e^(-x + log 1/2)`` with the sums in f32 (no overflow where e^x does but e^x / 2
    does not); sinh of ``|x| < 1`` is ``(e + e / (e + 1)) / 2`` with ``e = expm1(x)``.
    The exponentials are computed in f64 and rounded (correctly rounded in practice)."""
    k = f.k

    def exp(fn_name: str, v: str) -> str:
        return k.cast(k.math(fn_name, k.cast(v, "f32", "f64"), None, "f64"), "f64", "f32")

    half = k.const(_LOG_HALF, "f32")
    up = exp("exp", k.arith("add", x, half, "f32"))
    down = exp("exp", k.arith("sub", half, x, "f32"))
    if fn == "cosh":
        return k.arith("add", up, down, "f32")
    large = k.arith("sub", up, down, "f32")
    e = exp("expm1", x)
    ratio = k.arith("div", e, k.arith("add", e, k.const(1.0, "f32"), "f32"), "f32")
    small = k.arith("mul", k.arith("add", e, ratio, "f32"), k.const(0.5, "f32"), "f32")
    is_small = k.cmp("lt", k.math("abs", x, None, "f32"), k.const(1.0, "f32"), "f32")
    return k.select(is_small, small, large, "f32")


@elemental("chlo.square")
def square(f: Fused, op: Op, idx: list[IndexExpr]) -> str:
    """x * x."""
    (a,) = f.operands(op, idx)
    return f.k.arith("mul", a, a, types.elem(op.result))


@elemental("chlo.is_inf", "chlo.is_pos_inf", "chlo.is_neg_inf")
def is_inf(f: Fused, op: Op, idx: list[IndexExpr]) -> str:
    """x == +inf and/or x == -inf."""
    (a,) = f.operands(op, idx)
    t = types.elem(op.operand("operand"))
    k = f.k
    pos = k.cmp("eq", a, k.const(float("inf"), t), t)
    neg = k.cmp("eq", a, k.const(float("-inf"), t), t)
    if op.name.endswith("pos_inf"):
        return pos
    return neg if op.name.endswith("neg_inf") else k.arith("or", pos, neg, "i1")


@elemental("chlo.next_after")
def next_after(f: Fused, op: Op, idx: list[IndexExpr]) -> str:
    """The next representable value after lhs towards rhs."""
    a, b = f.operands(op, idx)
    t = types.elem(op.result)
    return f.k.math(_fn(op, "nextafter", t), a, b, t)


@elemental(*(f"stablehlo.{name}" for name in _BINARY))
def binary(f: Fused, op: Op, idx: list[IndexExpr]) -> str:
    """Two-operand elementary functions."""
    a, b = f.operands(op, idx)
    t = types.elem(op.result)
    return f.k.math(_fn(op, _BINARY[op.name.split(".")[1]], t), a, b, t)


@elemental("stablehlo.complex")
def make_complex(f: Fused, op: Op, idx: list[IndexExpr]) -> str:
    """complex(re, im)."""
    re, im = f.operands(op, idx)
    return f.k.emit(f"complex {re}, {im} : {types.elem(op.result)}")


_FLOAT_BITS = {"f16": (5, 10, "u16"), "bf16": (8, 7, "u16"), "f32": (8, 23, "u32"),
               "f64": (11, 52, "u64")}


@elemental("stablehlo.reduce_precision")
def reduce_precision(f: Fused, op: Op, idx: list[IndexExpr]) -> str:
    """Round to ``mantissa_bits`` (to nearest even) and clamp to ``exponent_bits`` on the
    type's own bits, as the reference interpreter does (narrow floats go through f32).

    NaN stays NaN, except with no mantissa bits left, where it becomes +inf (the
    reference's rule; the bit arithmetic alone could carry a NaN into the sign bit)."""
    (x,) = f.operands(op, idx)
    t = types.elem(op.result)
    k = f.k
    wide = t if t in _FLOAT_BITS else "f32"
    x = k.cast(x, t, wide)
    e = op.int_attr("exponent_bits")
    m = op.int_attr("mantissa_bits")
    result = _reduce_bits(f, x, wide, e, m)
    nan_result = x if m > 0 else k.const(float("inf"), wide)
    result = k.select(k.cmp("ne", x, x, wide), nan_result, result, wide)
    return k.cast(result, wide, t)


def _reduce_bits(f: Fused, x: str, t: str, e: int, m: int) -> str:
    k = f.k
    src_e, src_m, u = _FLOAT_BITS[t]
    bits = k.bitcast(x, t, u)

    def c(v: int) -> str:
        return k.const(v, u)

    if m < src_m:
        last = 1 << (src_m - m)
        last_bit = k.arith("shr", k.arith("and", bits, c(last), u), c(src_m - m), u)
        bias = k.arith("add", last_bit, c((last >> 1) - 1), u)
        mask = c(((1 << (1 + src_e + src_m)) - 1) & ~(last - 1))
        bits = k.arith("and", k.arith("add", bits, bias, u), mask, u)
    if e < src_e:
        exp_mask = ((1 << src_e) - 1) << src_m
        exp_bias = (1 << (src_e - 1)) - 1
        reduced_bias = (1 << (e - 1)) - 1
        x_exp = k.arith("and", bits, c(exp_mask), u)
        over = k.cmp("gt", x_exp, c((exp_bias + reduced_bias) << src_m), u)
        under = k.cmp("le", x_exp, c((exp_bias - reduced_bias) << src_m), u)
        signed_zero = k.arith("and", bits, c(1 << (src_e + src_m)), u)
        signed_inf = k.arith("or", signed_zero, c(exp_mask), u)
        bits = k.select(over, signed_inf, k.select(under, signed_zero, bits, u), u)
    return k.bitcast(bits, u, t)
