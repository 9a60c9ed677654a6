"""chlo.mulhi: the high half of the double-width product of two integers (elemental).

8- to 32-bit types multiply in the 64-bit type of their signedness and shift; 64-bit
types combine the four 32x32-bit partial products in u64 (signed ones then subtract
``b`` when ``a < 0`` and ``a`` when ``b < 0``, the two's complement correction).
"""

from __future__ import annotations

from frontend.ir.core import Op
from frontend.lower.core import types
from frontend.lower.core.builder import IndexExpr, KernelBuilder
from frontend.lower.core.fused import Fused
from frontend.lower.core.registry import elemental
from tensorlang.diagnostics import CompileError

_BITS = {"i8": 8, "i16": 16, "i32": 32, "i64": 64, "u8": 8, "u16": 16, "u32": 32, "u64": 64}


@elemental("chlo.mulhi")
def mulhi(f: Fused, op: Op, idx: list[IndexExpr]) -> str:
    """``(a * b) >> bits`` in double width."""
    a, b = f.operands(op, idx)
    t = types.elem(op.result)
    bits = _BITS.get(t)
    if bits is None or types.narrow_bits(op.result) is not None:
        raise CompileError.at(op.loc, f"'chlo.mulhi' on {t} is not supported yet")
    k = f.k
    if bits == 64:
        return _mulhi64(k, a, b, t)
    wide = "u64" if t[0] == "u" else "i64"
    product = k.arith("mul", k.cast(a, t, wide), k.cast(b, t, wide), wide)
    return k.cast(k.arith("shr", product, k.const(bits, wide), wide), wide, t)


def _mulhi64(k: KernelBuilder, a: str, b: str, t: str) -> str:
    """The high 64 bits of a 64x64-bit product."""
    u = "u64"
    ua, ub = k.bitcast(a, t, u), k.bitcast(b, t, u)
    mask, half = k.const(0xFFFFFFFF, u), k.const(32, u)
    a_lo, a_hi = k.arith("and", ua, mask, u), k.arith("shr", ua, half, u)
    b_lo, b_hi = k.arith("and", ub, mask, u), k.arith("shr", ub, half, u)
    p0, p1 = k.arith("mul", a_lo, b_lo, u), k.arith("mul", a_lo, b_hi, u)
    p2, p3 = k.arith("mul", a_hi, b_lo, u), k.arith("mul", a_hi, b_hi, u)
    mid = k.arith("add", k.arith("shr", p0, half, u),
                  k.arith("add", k.arith("and", p1, mask, u), k.arith("and", p2, mask, u), u),
                  u)
    hi = k.arith("add", p3, k.arith("add", k.arith("shr", p1, half, u),
                                    k.arith("shr", p2, half, u), u), u)
    hi = k.arith("add", hi, k.arith("shr", mid, half, u), u)
    if t == "u64":
        return hi
    zero = k.const(0, u)
    a_neg, b_neg = k.cmp("lt", a, k.const(0, t), t), k.cmp("lt", b, k.const(0, t), t)
    hi = k.arith("sub", hi, k.select(a_neg, ub, zero, u), u)
    hi = k.arith("sub", hi, k.select(b_neg, ua, zero, u), u)
    return k.bitcast(hi, u, t)
