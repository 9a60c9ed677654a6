"""C expressions with the language's defined numeric semantics (docs/language.md).

- Integers wrap modulo 2^n (signed arithmetic goes through the unsigned type: no C
  undefined behaviour); ``div`` by zero gives -1 (all ones), ``rem`` by zero the
  dividend, ``INT_MIN / -1 = INT_MIN`` and ``INT_MIN rem -1 = 0``; shifts by an amount
  outside ``[0, bits)`` give 0 (``shl``, unsigned ``shr``) or the sign fill (signed ``shr``).
- f16 and bf16 compute in float; every result is rounded to the type (halfprec.py).
- ``cast``: float -> integer truncates toward zero, saturates and maps NaN to 0; integer
  -> float rounds to nearest even; complex -> real takes the real part; to i1 is ``!= 0``.

Functions take the :class:`~backend_opencl.emit.kernel.KernelEmitter` only to record the
prelude features they use.
"""

from __future__ import annotations

from typing import Protocol

from backend_opencl.emit import halfprec
from backend_opencl.emit.cnames import ctype, unsigned_ctype
from tensorlang.diagnostics import CompileError
from tensorlang.ir.core import Function
from tensorlang.ir.ops import ArithOp
from tensorlang.ir.types import MemRefType, ScalarType, complex_part


class Needs(Protocol):
    """Anything that records prelude features and helpers (the emitter's unit)."""

    def need(self, feature: str) -> None:
        """Require ``feature``."""

    def helper(self, base: str, text: str) -> str:
        """Register a helper function named ``@NAME@`` in ``text``; return its name."""


def need_half(unit: Needs, t: ScalarType) -> None:
    """Record the conversion helpers of a 16-bit float type."""
    if t.is_half:
        unit.need(f"half:{t.name}")


def load_value(t: ScalarType, lvalue: str) -> str:
    """The value of type ``t`` stored at ``lvalue`` (f16/bf16 bits become a float)."""
    return halfprec.load(t.name, lvalue) if t.is_half else lvalue


def store_value(t: ScalarType, value: str) -> str:
    """What to store in memory for ``value`` of type ``t`` (f16/bf16: the bit pattern)."""
    return halfprec.store(t.name, value) if t.is_half else value


def rounded(t: ScalarType, expr: str) -> str:
    """``expr`` (computed in float) rounded to ``t`` when ``t`` is f16 or bf16."""
    return halfprec.round_to(t.name, expr) if t.is_half else expr


def int_binary(op: ArithOp, t: ScalarType, a: str, b: str) -> str | None:
    """The C of ``a op b`` on an integer type with defined semantics; None for the rest."""
    c, u = ctype(t), unsigned_ctype(t)
    if t.is_bool:
        return {ArithOp.DIV: f"({b} ? {a} : true)", ArithOp.REM: f"({b} ? false : {a})"}.get(op)
    signed = t.is_signed_int
    if op in (ArithOp.ADD, ArithOp.SUB, ArithOp.MUL) and signed:
        sym = {ArithOp.ADD: "+", ArithOp.SUB: "-", ArithOp.MUL: "*"}[op]
        return f"({c})(({u}){a} {sym} ({u}){b})"
    if op is ArithOp.DIV:
        special = f"{b} == ({c})-1 ? ({c})(0 - ({u}){a}) : " if signed else ""
        return f"({b} == 0 ? ({c})-1 : {special}({c})({a} / {b}))"
    if op is ArithOp.REM:
        special = f"{b} == ({c})-1 ? ({c})0 : " if signed else ""
        return f"({b} == 0 ? {a} : {special}({c})({a} % {b}))"
    if op is ArithOp.SHL:
        return f"(({u}){b} >= {t.bits} ? ({c})0 : ({c})(({u}){a} << {b}))"
    if op is ArithOp.SHR:
        fill = f"({c})({a} < 0 ? -1 : 0)" if signed else f"({c})0"
        return f"(({u}){b} >= {t.bits} ? {fill} : ({c})({a} >> {b}))"
    return None


def negate(t: ScalarType, a: str) -> str:
    """``-a`` (wrapping for integers, exact for floats)."""
    if t.is_bool:
        return a
    if t.is_int:
        return f"({ctype(t)})(0 - ({unsigned_ctype(t)}){a})"
    if t.is_complex:
        return by_parts(t, f"-({a}).x", f"-({a}).y")
    return f"-{a}"


def by_parts(t: ScalarType, re: str, im: str) -> str:
    """A complex value of type ``t`` built from C expressions of its two parts.

    Complex arithmetic is written part by part, never as OpenCL vector arithmetic on
    ``float2``: LLVM's loop vectoriser does not widen an instruction whose result is a
    vector, so one ``float2`` add kept a whole loop scalar (an inverse FFT reading a
    filtered spectrum, 64 lines of 1024: 128 -> 57 us on PoCL)."""
    return f"(({ctype(t)})({re}, {im}))"


def cast(unit: Needs, a: str, src: ScalarType, dst: ScalarType) -> str:
    """C converting ``a`` from ``src`` to ``dst`` (every pair of scalar types)."""
    if src == dst:
        return a
    if dst.is_bool:
        return f"({a}.x != 0 || {a}.y != 0)" if src.is_complex else f"({a} != 0)"
    if src.is_complex and not dst.is_complex:
        return cast(unit, f"{a}.x", complex_part(src), dst)
    if dst.is_complex:
        if src.is_complex:
            return f"convert_{ctype(dst)}({a})"
        part = complex_part(dst)
        return f"(({ctype(dst)})({cast(unit, a, src, part)}, 0))"
    if dst.is_half:
        return _to_half(unit, a, src, dst)
    if dst.is_float:
        return f"(({ctype(dst)}){a})"
    if src.is_float:
        return f"{_saturating_helper(unit, src, dst)}({a})"
    return f"(({ctype(dst)}){a})"


_SATURATE = """{dst} @NAME@({src} x) {{
    if (x != x) return 0;
    if (x >= {hi}) return {max};
    if (x <= {lo}) return {min};
    return ({dst})x;
}}
"""


def _saturating_helper(unit: Needs, src: ScalarType, dst: ScalarType) -> str:
    """Float to integer: truncate toward zero, saturate at the range, NaN to 0.

    Written out rather than ``convert_<int>_sat_rtz``: PyPI's PoCL 3.0 gets NaN and
    out-of-range inputs wrong with that builtin, and does not inline it.
    """
    real = "double" if src.name == "f64" else "float"  # f16/bf16 values compute as float
    suffix = "" if real == "double" else "f"
    bits, signed = dst.bits, not dst.is_unsigned
    top = bits - 1 if signed else bits
    long_suffix = ("L" if signed else "UL") if bits == 64 else ("" if signed else "U")
    biggest = f"{(1 << top) - 1}{long_suffix}"
    text = _SATURATE.format(
        dst=ctype(dst), src=real, hi=f"0x1p{top}{suffix}",
        lo=f"-0x1p{top}{suffix}" if signed else f"0.0{suffix}", max=biggest,
        min=f"(-{biggest} - 1)" if signed else "0")
    return unit.helper(f"sat_{real}_{ctype(dst)}", text)


def _to_half(unit: Needs, a: str, src: ScalarType, dst: ScalarType) -> str:
    need_half(unit, dst)
    c = ctype(src)
    if c in halfprec.ODD_SOURCES:  # wider than float's 24 bits: round to odd first
        unit.need(f"odd:{c}")
        return rounded(dst, f"tlc_odd_f32_{c}({a})")
    return rounded(dst, a if src.is_float else f"(float){a}")


def check_supported(func: Function) -> None:
    """Raise CompileError for what the OpenCL back end cannot lower: ``.atomic`` BLAS
    instructions on f16/bf16 memrefs (the others are rewritten into foreach loops by the
    ``lower-half-blas`` pass before code generation)."""
    for inst in func.walk():
        if not inst.op.blas:
            continue
        for value in inst.operand_values():
            t = value.type
            elem = t.element if isinstance(t, MemRefType) else t
            if isinstance(elem, ScalarType) and elem.is_half:
                raise CompileError.at(inst.loc, _unsupported(inst.name, elem,
                                                             inst.attrs.get("atomic", False)))


def _unsupported(name: str, elem: ScalarType, atomic: bool) -> str:
    if atomic:
        return f"{name}.atomic on {elem} is not supported (storage floats have no atomic updates)"
    return f"{name} on {elem} needs the lower-half-blas pass before code generation"
