"""stablehlo.bitcast_convert between element types of different widths (little-endian).

A wider operand element becomes ``r`` result elements along a new trailing dimension; a
narrower one is joined from ``r`` operand elements along its trailing dimension.  Each
element is a little-endian bit string of parts (complex: real then imaginary; i1: one
bit); both sides are cut into words of ``g`` bits, ``g`` the narrowest part width, and
the result's parts are joined from those words.  Same-width casts keep the lowering of
``frontend.lower.families.elementwise.arith``.
"""

from __future__ import annotations

from collections.abc import Callable

from frontend.ir.core import Op
from frontend.lower.core import types
from frontend.lower.core.builder import IndexExpr
from frontend.lower.core.fused import Fused
from frontend.lower.core.registry import elemental
from frontend.lower.families.elementwise import arith as elementwise
from tensorlang.diagnostics import CompileError

_BITS = {"i1": 1, "i8": 8, "u8": 8, "i16": 16, "u16": 16, "f16": 16, "bf16": 16,
         "i32": 32, "u32": 32, "f32": 32, "i64": 64, "u64": 64, "f64": 64,
         "c32": 64, "c64": 128}
_UINT = {1: "u8", 8: "u8", 16: "u16", 32: "u32", 64: "u64"}

_same_width = elementwise.bitcast_convert


@elemental("stablehlo.bitcast_convert")
def bitcast_convert(f: Fused, op: Op, idx: list[IndexExpr]) -> str:
    """Reinterpret bits; between widths, split or join elements."""
    src_v = op.operand("operand")
    if types.shape(src_v) == types.shape(op.result):
        return _same_width(f, op, idx)
    src, dst = types.elem(src_v), types.elem(op.result)
    if src not in _BITS or dst not in _BITS or types.narrow_bits(src_v) is not None \
            or types.narrow_bits(op.result) is not None:
        raise CompileError.at(op.loc, f"'{op.name}' from {src} to {dst} is not supported "
                              "yet")
    sbits, dbits = _BITS[src], _BITS[dst]
    g = min(_part_bits(src), _part_bits(dst))
    per_src = sbits // g
    if sbits > dbits:
        words = _words(f, f.value(src_v, idx[:-1]), src, g)
        j = f.k.imul(idx[-1], dbits // g)

        def word(m: int) -> str:
            return _pick(f, words, f.k.iadd(j, m), g)
    else:
        def word(m: int) -> str:
            element = f.value(src_v, [*idx, m // per_src])
            return _words(f, element, src, g)[m % per_src]
    return _join(f, word, dst, g)


def _part_bits(t: str) -> int:
    return _BITS[t] // 2 if t in types.COMPLEX_PARTS else _BITS[t]


def _parts(f: Fused, x: str, t: str) -> list[tuple[str, int]]:
    """The element's parts as unsigned integers, low bits first, with their widths."""
    k = f.k
    if t in types.COMPLEX_PARTS:
        p = types.COMPLEX_PARTS[t]
        return [part for fn in ("real", "imag")
                for part in _parts(f, k.math(fn, x, None, t), p)]
    if t == "i1":
        return [(k.cast(x, "i1", "u8"), 1)]
    bits = _BITS[t]
    return [(k.bitcast(x, t, _UINT[bits]), bits)]


def _words(f: Fused, x: str, t: str, g: int) -> list[str]:
    """The element's ``g``-bit words, low first (as unsigned integers of width >= g)."""
    k = f.k
    out = []
    for part, bits in _parts(f, x, t):
        ut = _UINT[bits]
        for j in range(bits // g):
            w = k.arith("shr", part, k.const(j * g, ut), ut) if j else part
            if g < bits:
                w = k.cast(k.arith("and", w, k.const(2**g - 1, ut), ut), ut, _UINT[g])
            out.append(w)
    return out


def _pick(f: Fused, words: list[str], m: IndexExpr, g: int) -> str:
    """``words[m]`` for a run-time ``m``."""
    k = f.k
    if isinstance(m, int):
        return words[m]
    result = words[0]
    for j in range(1, len(words)):
        hit = k.cmp("eq", k.idx(m), k.const(j, "index"), "index")
        result = k.select(hit, words[j], result, _UINT[g])
    return result


def _join(f: Fused, word: Callable[[int], str], t: str, g: int) -> str:
    """The element of type ``t`` whose ``g``-bit words are ``word(0), word(1), ...``."""
    k = f.k
    part_t = types.COMPLEX_PARTS.get(t, t)
    bits = _part_bits(t)
    ut = _UINT[bits]
    values = []
    for p in range(_BITS[t] // bits):
        acc = None
        for j in range(bits // g):
            w = k.cast(word(p * (bits // g) + j), _UINT[g], ut)
            w = k.arith("shl", w, k.const(j * g, ut), ut) if j else w
            acc = w if acc is None else k.arith("or", acc, w, ut)
        assert acc is not None
        if part_t == "i1":
            values.append(k.cmp("ne", acc, k.const(0, ut), ut))
        else:
            values.append(k.bitcast(acc, ut, part_t))
    if t in types.COMPLEX_PARTS:
        return k.emit(f"complex {values[0]}, {values[1]} : {t}")
    return values[0]
