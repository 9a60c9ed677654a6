"""Elementwise ops: arithmetic, bitwise, compare, select, convert, min/max, clamp, constants.

Every lowering here is elemental, so chains of these ops fuse into one kernel.
"""

from __future__ import annotations

from frontend.ir.core import Op, Value
from frontend.lower.core import types
from frontend.lower.core.builder import IndexExpr
from frontend.lower.core.fused import Fused
from frontend.lower.core.registry import elemental
from tensorlang.diagnostics import CompileError

_BINARY = {
    "stablehlo.add": "add", "stablehlo.subtract": "sub", "stablehlo.multiply": "mul",
    "stablehlo.divide": "div", "stablehlo.remainder": "rem", "stablehlo.and": "and",
    "stablehlo.or": "or", "stablehlo.xor": "xor", "stablehlo.shift_left": "shl",
}


_SIGNED = {"u8": "i8", "u16": "i16", "u32": "i32", "u64": "i64"}


def _shr_as(f: Fused, op: Op, idx: list[IndexExpr], as_type: dict[str, str]) -> str:
    """``shr`` computed in ``as_type[t]`` (same width), whose signedness picks the shift."""
    a, b = f.operands(op, idx)
    t = types.elem(op.result)
    s = as_type.get(t, t)
    k = f.k
    return k.bitcast(k.arith("shr", k.bitcast(a, t, s), k.bitcast(b, t, s), s), s, t)


@elemental("stablehlo.shift_right_arithmetic")
def shift_right_arithmetic(f: Fused, op: Op, idx: list[IndexExpr]) -> str:
    """Arithmetic right shift: shr on the signed type of the same width."""
    return _shr_as(f, op, idx, _SIGNED)


@elemental(*_BINARY)
def binary(f: Fused, op: Op, idx: list[IndexExpr]) -> str:
    """Two-operand arithmetic and bitwise ops (i1 add/mul are or/and)."""
    modulus = _complex_modulus(op)
    if modulus is not None:
        return _squared_magnitude(f, modulus, idx)
    a, b = f.operands(op, idx)
    t = types.elem(op.result)
    name = _BINARY[op.name]
    if t == "i1":
        name = {"add": "or", "mul": "and", "sub": "xor"}.get(name, name)
        if name not in ("and", "or", "xor"):
            raise CompileError.at(op.loc, f"'{op.name}' on i1 is not supported yet")
    return f.k.arith(name, a, b, t)


def _complex_modulus(op: Op) -> Value | None:
    """The complex operand ``z`` when ``op`` is ``abs(z) * abs(z)`` (``jnp.abs(z) ** 2``:
    a power spectrum), else None."""
    x, y = op.operands
    if op.name != "stablehlo.multiply" or x is not y or not isinstance(x.owner, Op) \
            or x.owner.name != "stablehlo.abs":
        return None
    z = x.owner.operand("operand")
    return z if types.elem(z) in types.COMPLEX_PARTS else None


def _squared_magnitude(f: Fused, z: Value, idx: list[IndexExpr]) -> str:
    """``re^2 + im^2`` of ``z`` at ``idx``, in double (no square root: ``|z|`` rounded and
    squared is less accurate and its ``hypot`` costs more than the whole rest); infinite
    where a part is, as ``|z|`` is even when the other part is NaN."""
    k, ct = f.k, types.elem(z)
    t = types.COMPLEX_PARTS[ct]
    value = f.value(z, idx)
    re, im = (k.math(part, value, None, ct) for part in ("real", "imag"))
    wide_re, wide_im = k.cast(re, t, "f64"), k.cast(im, t, "f64")
    total = k.arith("add", k.arith("mul", wide_re, wide_re, "f64"),
                    k.arith("mul", wide_im, wide_im, "f64"), "f64")
    result = k.cast(total, "f64", t)
    inf = k.const(float("inf"), t)
    infinite = k.arith("or", k.cmp("eq", k.math("abs", re, None, t), inf, t),
                       k.cmp("eq", k.math("abs", im, None, t), inf, t), "i1")
    return k.select(infinite, inf, result, t)


@elemental("stablehlo.negate")
def negate(f: Fused, op: Op, idx: list[IndexExpr]) -> str:
    """-x (i1: x)."""
    (a,) = f.operands(op, idx)
    t = types.elem(op.result)
    return a if t == "i1" else f.k.arith("neg", a, None, t)


@elemental("stablehlo.not")
def bitwise_not(f: Fused, op: Op, idx: list[IndexExpr]) -> str:
    """Bitwise not (logical not on i1)."""
    (a,) = f.operands(op, idx)
    t = types.elem(op.result)
    if t == "i1":
        return f.k.arith("xor", a, f.k.const(True, "i1"), "i1")
    return f.k.arith("not", a, None, t)


_COND = {"EQ": "eq", "NE": "ne", "GE": "ge", "GT": "gt", "LE": "le", "LT": "lt"}


@elemental("stablehlo.compare")
def compare(f: Fused, op: Op, idx: list[IndexExpr]) -> str:
    """compare: EQ/NE/GE/GT/LE/LT on any type."""
    a, b = f.operands(op, idx)
    t = types.elem(op.operand("lhs"))
    cond = _COND[str(op.attr("comparison_direction"))]
    if str(op.attr("compare_type", "")) == "TOTALORDER" and types.is_float(t):
        a, b = total_order_key(f, a, t), total_order_key(f, b, t)
        t = INT_OF.get(t, "i32")  # narrow floats compare as their f32 values
    if t == "i1" and cond not in ("eq", "ne"):
        a, b = f.k.cast(a, "i1", "i8"), f.k.cast(b, "i1", "i8")
        t = "i8"
    return f.k.cmp(cond, a, b, t)


INT_OF = {"f16": "i16", "bf16": "i16", "f32": "i32", "f64": "i64"}
"""The integer type of each float type's bits (its total-order keys)."""


def total_order_key(f: Fused, x: str, t: str) -> str:
    """A signed integer ordered like the IEEE total order of float ``x`` (narrow floats
    through their exact f32 values)."""
    if t not in INT_OF:
        x, t = f.k.cast(x, t, "f32"), "f32"
    it = INT_OF[t]
    bits = int(it[1:])
    k = f.k
    i = k.bitcast(x, t, it)
    sign = k.arith("shr", i, k.const(bits - 1, it), it)
    return k.arith("xor", i, k.arith("and", sign, k.const(2 ** (bits - 1) - 1, it), it), it)


@elemental("stablehlo.select")
def select(f: Fused, op: Op, idx: list[IndexExpr]) -> str:
    """pred ? on_true : on_false (a scalar pred selects whole tensors)."""
    pred = op.operand("pred")
    c = f.value(pred, idx if types.shape(pred) else [])
    a = f.value(op.operand("on_true"), idx)
    b = f.value(op.operand("on_false"), idx)
    return f.k.select(c, a, b, types.elem(op.result))


@elemental("stablehlo.convert")
def convert(f: Fused, op: Op, idx: list[IndexExpr]) -> str:
    """Element type conversion (to i1: x != 0)."""
    (a,) = f.operands(op, idx)
    src, dst = types.elem(op.operand("operand")), types.elem(op.result)
    if src == dst:
        return a
    if src.startswith("c") and not dst.startswith("c"):  # the real part
        a, src = f.k.math("real", a, None, src), ("f32" if src == "c32" else "f64")
    if dst == "i1":
        return f.k.cmp("ne", a, f.k.const(0.0 if types.is_float(src) else 0, src), src)
    return f.k.cast(a, src, dst)


def minmax(f: Fused, a: str, b: str, t: str, cond: str) -> str:
    """max (cond "gt") or min (cond "lt") propagating NaN like StableHLO."""
    k = f.k
    if t == "i1":
        return k.arith("or" if cond == "gt" else "and", a, b, t)
    if t.startswith("c"):
        return k.select(_complex_order(f, a, b, t, cond), a, b, t)
    pick = k.select(k.cmp(cond, a, b, t), a, b, t)
    if not types.is_float(t):
        return pick
    pick = k.select(k.cmp("ne", b, b, t), b, pick, t)
    return k.select(k.cmp("ne", a, a, t), a, pick, t)


def _complex_order(f: Fused, a: str, b: str, t: str, cond: str) -> str:
    """Lexicographic (real, imag) comparison of complex numbers."""
    k = f.k
    part = "f32" if t == "c32" else "f64"
    ar, ai, br, bi = (k.math(fn, x, None, t) for x in (a, b) for fn in ("real", "imag"))
    first = k.cmp(cond, ar, br, part)
    tie = k.arith("and", k.cmp("eq", ar, br, part), k.cmp(cond, ai, bi, part), "i1")
    return k.arith("or", first, tie, "i1")


@elemental("stablehlo.maximum", "stablehlo.minimum")
def maximum(f: Fused, op: Op, idx: list[IndexExpr]) -> str:
    """Elementwise max/min."""
    a, b = f.operands(op, idx)
    return minmax(f, a, b, types.elem(op.result), "gt" if op.name.endswith("maximum") else "lt")


@elemental("stablehlo.clamp")
def clamp(f: Fused, op: Op, idx: list[IndexExpr]) -> str:
    """min(max(operand, min), max); min and max may be scalars."""
    def at(name: str) -> str:
        v = op.operand(name)
        return f.value(v, idx if types.shape(v) else [])
    t = types.elem(op.result)
    return minmax(f, minmax(f, at("operand"), at("min"), t, "gt"), at("max"), t, "lt")


_UNSIGNED = {"i8": "u8", "i16": "u16", "i32": "u32", "i64": "u64"}


@elemental("stablehlo.shift_right_logical")
def shift_right_logical(f: Fused, op: Op, idx: list[IndexExpr]) -> str:
    """Logical right shift: shr on the unsigned type of the same width."""
    return _shr_as(f, op, idx, _UNSIGNED)


@elemental("stablehlo.bitcast_convert")
def bitcast_convert(f: Fused, op: Op, idx: list[IndexExpr]) -> str:
    """Reinterpret bits between element types of the same width."""
    src_v = op.operand("operand")
    src, dst = types.elem(src_v), types.elem(op.result)
    if types.shape(src_v) != types.shape(op.result):
        raise CompileError.at(op.loc, f"'{op.name}' between types of different widths is "
                              "not supported yet")
    (a,) = f.operands(op, idx)
    if src == dst:
        return a
    if "i1" in (src, dst):
        raise CompileError.at(op.loc, f"'{op.name}' on i1 is not supported yet")
    return f.k.bitcast(a, src, dst)


@elemental("stablehlo.map")
def map_(f: Fused, op: Op, idx: list[IndexExpr]) -> str:
    """The computation applied to the inputs' elements (scalar code)."""
    args = f.operands(op, idx)
    saved = dict(f.bound)
    with f.k.scope():
        (result,) = f.body(op.regions[0].block, args)
    f.bound = saved
    return result
