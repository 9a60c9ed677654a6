"""Extension instructions: math.<fn>, select, bitcast and complex.

Real functions use OpenCL builtins where those are accurate (full profile: a few ulp);
min/max are NaN-propagating conditionals (no fmin/fmax), sign keeps -0.0 and NaN,
f16/bf16 compute in float and round every result to the type.
"""

from __future__ import annotations

from backend_opencl.emit import numeric
from backend_opencl.emit.cnames import ctype, literal, storage_type, unsigned_ctype
from backend_opencl.emit.complexfns import complex_exp_with, complex_fn, complex_pow
from backend_opencl.emit.floatfns import FLOAT_FNS, float_fn
from backend_opencl.emit.kernel import KernelEmitter, handler
from backend_opencl.emit.specialfns import special_fn
from tensorlang.ir.core import Instruction
from tensorlang.ir.types import F32, ScalarType, complex_part

_BUILTIN = {
    "abs": "fabs", "roundeven": "rint", **{n: n for n in (
        "sqrt rsqrt cbrt exp exp2 expm1 log log1p log2 log10 sin cos tan tanh asin acos atan "
        "sinh cosh asinh acosh atanh erf erfc lgamma floor ceil round trunc pow atan2 "
        "nextafter copysign hypot").split()},
}


@handler("math")
def emit_math(em: KernelEmitter, inst: Instruction) -> None:
    """``math.<fn>``: one C expression (complex and integer pow through helpers)."""
    t: ScalarType = inst.attr("type")
    fn: str = inst.attr_of("fn", str)
    args = [em.scalar(v) for v in (inst.single("a"), inst.operand("b")) if v is not None]
    if t.is_complex:
        expr = _complex(em, fn, t, args)
    elif t.is_int:
        expr = _integer(em, fn, t, args)
    elif (special := special_fn(em.unit, fn, t, args[0], inline_float(em, t))) is not None:
        expr = numeric.rounded(t, special)
    elif fn in FLOAT_FNS and inline_float(em, t):
        expr = numeric.rounded(t, f"{float_fn(em.unit, fn)}({', '.join(args)})")
    elif fn == "log1p" and t.name == "f32" and em.target.has_fp64:
        em.unit.need("fp64")
        expr = f"(float)log1p((double){args[0]})"  # float log1p builtins lose a few ulp
    else:
        expr = _real(fn, t, args)
        expr = expr if fn == "isfinite" else numeric.rounded(t, expr)
    em.define(inst.result, expr)


def inline_float(em: KernelEmitter, t: ScalarType) -> bool:
    """True when single-precision ``t`` uses the vectorisable helpers of
    :mod:`backend_opencl.emit.floatfns` (CPU devices with fp64: PoCL's builtins are
    scalar calls; GPUs keep their fast native builtins)."""
    return (t.name == "f32" or t.is_half) and em.target.kind == "cpu" and em.target.has_fp64


def _lit(value: float, t: ScalarType) -> str:
    return literal(value, F32 if t.is_half else t)


def _real(fn: str, t: ScalarType, args: list[str]) -> str:
    a = args[0]
    b = args[1] if len(args) > 1 else ""
    special = {
        "sign": lambda: f"({a} > 0 ? {_lit(1.0, t)} : ({a} < 0 ? {_lit(-1.0, t)} : {a}))",
        "logistic": lambda: _logistic(t, a),
        "isfinite": lambda: f"(isfinite({a}) != 0)",
        "real": lambda: a,
        "imag": lambda: _lit(0.0, t),
        "max": lambda: f"(({a} > {b} || {a} != {a}) ? {a} : {b})",
        "min": lambda: f"(({a} < {b} || {a} != {a}) ? {a} : {b})",
    }
    if fn in special:
        return special[fn]()
    if fn == "nextafter" and t.is_half:
        return f"tlc_nextafter_{t.name}({a}, {b})"
    return f"{_BUILTIN[fn]}({', '.join(args)})"


def _logistic(t: ScalarType, a: str) -> str:
    """``1 / (1 + e^-x)``, or ``e^x / (1 + e^x)`` for negative ``x``: the exponential never
    overflows (``1 / (1 + e^-x)`` is 0 where the result is still subnormal)."""
    one, e = _lit(1.0, t), f"exp(-fabs({a}))"
    return f"(({a} >= 0 ? {one} : {e}) / ({one} + {e}))"


def _integer(em: KernelEmitter, fn: str, t: ScalarType, args: list[str]) -> str:
    c, u = ctype(t), unsigned_ctype(t)
    a = args[0]
    b = args[1] if len(args) > 1 else ""
    if fn == "abs":
        return a if t.is_unsigned else f"({a} < 0 ? ({c})(0 - ({u}){a}) : {a})"
    if fn == "sign":
        return f"({c})({a} != 0)" if t.is_unsigned else f"({c})(({a} > 0) - ({a} < 0))"
    if fn in ("popcount", "clz"):
        return f"({c}){fn}({a})"
    if fn in ("min", "max"):
        return f"({a} {'<' if fn == 'min' else '>'} {b} ? {a} : {b})"
    assert fn == "pow", fn
    return f"{_int_pow(em, t)}({a}, {b})"


def _int_pow(em: KernelEmitter, t: ScalarType) -> str:
    c = ctype(t)
    wide = "ulong" if t.bits == 64 else "uint"
    negative = "" if t.is_unsigned else (
        f"    if (b < 0) return a == 1 ? ({c})1 : (a == ({c})-1 ? ((b & 1) ? ({c})-1 : ({c})1)"
        f" : ({c})0);\n")
    text = (f"{c} @NAME@({c} a, {c} b) {{\n{negative}"
            f"    {wide} r = 1, x = ({wide})({unsigned_ctype(t)})a, e = ({wide})b;\n"
            "    while (e != 0) {\n        if (e & 1) r *= x;\n        x *= x;\n        e >>= 1;\n"
            f"    }}\n    return ({c})r;\n}}\n")
    return em.unit.helper(f"ipow_{t.name}", text)


def _complex(em: KernelEmitter, fn: str, t: ScalarType, args: list[str]) -> str:
    a = args[0]
    simple = {"abs": f"hypot({a}.x, {a}.y)", "real": f"{a}.x", "imag": f"{a}.y",
              "conj": f"(({ctype(t)})({a}.x, -{a}.y))"}
    if t.name == "c32" and fn in ("abs", "exp") and inline_float(em, F32):
        return _complex_inline(em, fn, t, a)
    if fn in simple:
        return simple[fn]
    if fn == "pow":
        return f"{complex_pow(em.unit, t)}({a}, {args[1]})"
    return f"{complex_fn(em.unit, fn, t)}({', '.join(args)})"


def _complex_inline(em: KernelEmitter, fn: str, t: ScalarType, a: str) -> str:
    """c32 ``abs`` and ``exp`` through the vectorisable float helpers."""
    if fn == "abs":
        return f"{float_fn(em.unit, 'hypot')}({a}.x, {a}.y)"
    helpers = float_fn(em.unit, "sincos"), float_fn(em.unit, "exp")
    return f"{complex_exp_with(em.unit, t, *helpers)}({a})"


@handler("select")
def emit_select(em: KernelEmitter, inst: Instruction) -> None:
    """``select %c, %a, %b``: ``c ? a : b`` (complex values part by part, see
    :func:`numeric.by_parts`)."""
    cond, a, b = (em.scalar(inst.operand(k)) for k in ("cond", "a", "b"))
    t = inst.result.type
    if isinstance(t, ScalarType) and t.is_complex:
        em.define(inst.result, numeric.by_parts(t, f"({cond} ? ({a}).x : ({b}).x)",
                                                f"({cond} ? ({a}).y : ({b}).y)"))
        return
    em.define(inst.result, f"({cond} ? {a} : {b})")


@handler("bitcast")
def emit_bitcast(em: KernelEmitter, inst: Instruction) -> None:
    """``bitcast``: ``as_<type>``; f16/bf16 go through their 16-bit patterns."""
    src: ScalarType = inst.attr_of("from_type", ScalarType)
    dst: ScalarType = inst.attr_of("to_type", ScalarType)
    em.use_type(src)
    a = numeric.store_value(src, em.scalar(inst.single("a")))
    bits = storage_type(dst) if dst.is_half else ctype(dst)
    expr = a if ctype(src) == bits and not src.is_half else f"as_{bits}({a})"
    em.define(inst.result, numeric.load_value(dst, expr))


@handler("complex")
def emit_complex(em: KernelEmitter, inst: Instruction) -> None:
    """``complex %re, %im``."""
    t: ScalarType = inst.attr("type")
    assert complex_part(t).is_float
    re, im = em.scalar(inst.single("re")), em.scalar(inst.single("im"))
    em.define(inst.result, f"(({ctype(t)})({re}, {im}))")
