"""Vectorisable double-precision ``lgamma`` and ``digamma``, and the parts they share.

PoCL's ``lgamma`` and its double ``log`` are scalar calls that keep a kernel's loop
scalar (``lgamma`` on 128k floats: 16 ms on the 2-core VM).  These helpers are
branch-free (every choice a select), call only ``sqrt``-like vectorised builtins, and
compute in double: f64 directly, f32 (and f16/bf16, through float) on CPU devices with
fp64, rounding once.  Both functions use the same argument shapes:

* ``x < 0`` reflects: ``lgamma(x) = log(pi / |sin(pi x)|) - lgamma(1 - x)`` and
  ``digamma(x) = digamma(1 - x) - pi cot(pi x)``, with ``sin(pi r)`` of the exact
  reduced ``r = x - round(x)`` (``|r| <= 1/2``) by its Taylor series (error < 2^-60)
  and ``cos(pi r) = sin(pi (1/2 - |r|))``;
* ``z < 8`` shifts: ``lgamma(z) = lgamma(z + 8) - log(z (z + 1) ... (z + 7))`` and
  ``digamma(z) = digamma(z + 8) - P'(z) / P(z)`` for that product ``P`` (one division);
* ``y >= 8`` is Stirling's series, to the ``y^-17`` term (truncation < 2^-60 at 8).

So each element takes two logarithms (one for ``lgamma``'s Stirling term, one for the
product and reflection folded into one) and no exponential.  Accuracy: a few ulp
relative to ``max(1, |result|)``; close to the zeros of ``lgamma`` (1, 2 and the
negative ones) and of ``digamma`` the absolute error is ~5e-15, as XLA's Lanczos
formulas; as f32 results (computed in double) within 1-2 ulp there too.  Poles:
``lgamma`` is ``+inf`` at zero and the negative integers and at ``+-inf``;
``digamma`` is NaN at zero and the negative integers (XLA's choice) and at ``-inf``.
"""

from __future__ import annotations

import math
from fractions import Fraction

from backend_opencl.emit.unit import Unit

INLINE = "__attribute__((always_inline)) "
"""Helpers are always inlined (a call PoCL leaves in a loop keeps it scalar)."""

SHIFT = 8
"""Arguments below this are shifted up by it before Stirling's series."""

_BERNOULLI = (Fraction(1, 6), Fraction(-1, 30), Fraction(1, 42), Fraction(-1, 30),
              Fraction(5, 66), Fraction(-691, 2730), Fraction(7, 6), Fraction(-3617, 510),
              Fraction(43867, 798))
"""B_2 ... B_18."""

_LGAMMA_SERIES = tuple(float(b / ((2 * k + 2) * (2 * k + 1))) for k, b in enumerate(_BERNOULLI))
"""``lgamma(y) - ((y - 1/2) log y - y + log(2 pi) / 2)`` = ``sum c_k y^-(2k+1)``."""
_DIGAMMA_SERIES = tuple(float(b / (2 * k + 2)) for k, b in enumerate(_BERNOULLI))
"""``log y - 1/(2y) - digamma(y)`` = ``sum c_k y^-(2k+2)``."""
_SINPI = tuple((-1) ** k * math.pi ** (2 * k + 1) / math.factorial(2 * k + 1) for k in range(11))
"""``sin(pi r) / r`` in ``r^2`` (Taylor, lowest power first; error < 2^-60 on |r| <= 1/2)."""

_LOG = (0.6666666666666735, 0.3999999999940942, 0.2857142874366239, 0.22222198432149784,
        0.1818357216161805, 0.15313837699209373, 0.14798198605116586)
"""fdlibm's ``(2 atanh(s) / s - 2) / s^2`` in ``s^2`` on ``|s| <= 0.1716`` (error < 2^-58)."""
_LN2_HI, _LN2_LO = 6.93147180369123816490e-01, 1.90821492927058770002e-10
"""``log 2`` split so that ``k * _LN2_HI`` is exact for every exponent ``k``."""


def lit(value: float) -> str:
    """A double literal that round-trips."""
    return repr(float(value))


def poly(var: str, coeffs: tuple[float, ...] | list[float]) -> str:
    """``sum coeffs[i] var^i`` (lowest power first) by Horner; from six coefficients on as
    ``E(var^2) + var O(var^2)``, two independent chains of half the length (a vector loop
    of these helpers is bound by the FMAs' latency)."""
    if len(coeffs) >= 6:
        square = f"({var} * {var})"
        return f"({poly(square, coeffs[0::2])} + {var} * {poly(square, coeffs[1::2])})"
    text = lit(coeffs[-1])
    for c in coeffs[-2::-1]:
        text = f"{lit(c)} + {var} * ({text})"
    return f"({text})"


def poly_select(var: str, conds: tuple[str, ...],
                tables: tuple[tuple[float, ...], ...]) -> str:
    """The polynomial with coefficients ``tables[i]`` (lowest power first; the shorter padded
    with zeros) where ``conds[i]`` is the first condition that holds (the last table where
    none does): one Horner chain with selects per coefficient, where selecting between
    evaluated polynomials would compute each of them in a vector loop."""
    n = max(len(t) for t in tables)
    padded = [tuple(t) + (0.0,) * (n - len(t)) for t in tables]
    text = ""
    for power in range(n - 1, -1, -1):
        coeff = lit(padded[-1][power])
        if len({table[power] for table in padded}) > 1:
            for cond, table in zip(conds[::-1], padded[-2::-1], strict=True):
                coeff = f"({cond} ? {lit(table[power])} : {coeff})"
        text = coeff if not text else f"{coeff} + {var} * ({text})"
    return f"({text})"


def log_double(unit: Unit) -> str:
    """``log u`` in double to < 1 ulp (fdlibm's ``e_log.c`` method without its branches):
    ``u = 2^k (1 + f)`` with ``1 + f`` in ``[sqrt(1/2), sqrt(2))`` split on the high word,
    ``log(1 + f) = f - (f^2/2 - s (f^2/2 + R(s^2)))``, ``s = f / (2 + f)``.  Subnormals
    are scaled by 2^54; 0 gives -inf, +inf itself, negatives and NaN give NaN.  PoCL's
    double ``log`` is a scalar call (1.9 ms per 128k elements against 0.3 for ``exp``)."""
    return unit.helper("log_d", INLINE + f"""double @NAME@(double u) {{
    const int sub = u < 0x1p-1022;
    const ulong bits = as_ulong(sub ? u * 0x1p54 : u);
    const uint h = (uint)(bits >> 32) + (0x3ff00000u - 0x3fe6a09eu);
    const double k = (double)((int)(h >> 20) - 1023 - (sub ? 54 : 0));
    const uint mh = (h & 0x000fffffu) + 0x3fe6a09eu;
    const double f = as_double(((ulong)mh << 32) | (bits & 0xffffffffUL)) - 1.0;
    const double s = f / (2.0 + f);
    const double z = s * s;
    const double r = z * {poly("z", _LOG)};
    const double hfsq = 0.5 * f * f;
    const double y = k * {lit(_LN2_HI)} - ((hfsq - (s * (hfsq + r) + k * {lit(_LN2_LO)})) - f);
    const double edge = u == 0 ? -INFINITY : (u == INFINITY ? u : NAN);
    return ((u > 0) & (u < INFINITY)) ? y : edge;
}}
""")


def sinpi_double(unit: Unit) -> str:
    """``sin(pi r)`` for ``|r| <= 1/2`` (relative error ~2^-52)."""
    return unit.helper("sinpi_d", INLINE + f"""double @NAME@(double r) {{
    return r * {poly("(r * r)", _SINPI)};
}}
""")


def _reduce(x: str) -> str:
    """``x - round(x)`` (exact; 0 for ``|x| >= 2^52``, all integers, and infinities): adding
    and subtracting ``2^52`` of ``x``'s sign rounds to an integer (no ``rint``: PoCL's is
    a software sequence)."""
    big = f"({x} < 0 ? -0x1p52 : 0x1p52)"
    return f"(fabs({x}) < 0x1p52 ? {x} - (({x} + {big}) - {big}) : 0.0)"


def _product(z: str) -> str:
    return " * ".join([z] + [f"({z} + {k}.0)" for k in range(1, SHIFT)])


def lgamma_double(unit: Unit) -> str:
    """``log |Gamma(x)|`` in double (see the module's docstring)."""
    log, sinpi = log_double(unit), sinpi_double(unit)
    half_log_2pi = 0.5 * math.log(2 * math.pi)
    return unit.helper("lgamma_d", INLINE + f"""double @NAME@(double x) {{
    const int neg = x < 0;
    const double z = neg ? 1.0 - x : x;
    const int small = z < {SHIFT}.0;
    const double p = small ? {_product("z")} : 1.0;
    const double y = small ? z + {SHIFT}.0 : z;
    const double iy = 1.0 / y;
    const double st = (y - 0.5) * ({log}(y) - 1.0) + {lit(half_log_2pi - 0.5)}
                      + iy * {poly("(iy * iy)", _LGAMMA_SERIES)};
    const double s = fabs({sinpi}({_reduce("x")}));
    const double l = {log}(neg ? {lit(math.pi)} * p / s : p);
    const double v = neg ? l - st : st - l;
    return x == -INFINITY ? INFINITY : v;
}}
""")


def digamma_double(unit: Unit) -> str:
    """``digamma(x)`` in double (see the module's docstring)."""
    log, sinpi = log_double(unit), sinpi_double(unit)
    steps = "".join(f"    d = d * (z + {k}.0) + p;\n    p = p * (z + {k}.0);\n"
                    for k in range(1, SHIFT))
    return unit.helper("digamma_d", INLINE + f"""double @NAME@(double x) {{
    const int neg = x < 0;
    const double z = neg ? 1.0 - x : x;
    double p = z, d = 1.0;
{steps}    const int small = z < {SHIFT}.0;
    const double y = small ? z + {SHIFT}.0 : z;
    const double iy = 1.0 / y;
    const double iy2 = iy * iy;
    const double v = {log}(y) - 0.5 * iy - iy2 * {poly("iy2", _DIGAMMA_SERIES)}
                     - (small ? d / p : 0.0);
    const double r = {_reduce("x")};
    const double cot = {sinpi}(0.5 - fabs(r)) / {sinpi}(r);
    const double w = neg ? v - {lit(math.pi)} * cot : v;
    return ((x <= 0) & (r == 0)) ? NAN : w;
}}
""")
