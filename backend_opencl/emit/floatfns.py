"""Single-precision elementary functions as inline C that PoCL's loop vectoriser widens.

PoCL's scalar builtins ``sin cos log log1p expm1 tanh erf pow hypot`` are calls the loop
vectoriser cannot widen: 2-33 ms per 128k f32 elements on the 2-core VM, against
0.1-0.8 ms for the helpers here (its ``exp`` on float and double is already vectorised).
On CPU devices with fp64, ``math.<fn>`` on f32 (and f16/bf16, which compute in float)
calls these helpers instead.  Each one works in double precision, whose range and 53
bits make short branch-free formulas accurate, and rounds once to float: results are
within about 0.5 ulp (correctly rounded for all but rare inputs).  Every choice is a
select, never a branch or a call the vectoriser cannot widen:

* ``sin``, ``cos``: ``|x| < 2`` is reduced modulo pi/2 in double (two-part pi/2);
  larger ``|x|`` by the exact integer Payne-Hanek reduction of ARM's optimized-routines
  (``reduce_large``: a 32x96-bit product with a window of 2/pi's bits); then Taylor
  polynomials of degree 11 and 12 on ``[-pi/4, pi/4]`` (error < 1e-11).
* ``log``, ``log1p``: ``u = 2^e m`` with ``m`` in ``[sqrt(1/2), sqrt(2))`` (fdlibm's
  reduction on the high word) and ``log m = 2 atanh(s)``, ``s = (m - 1) / (m + 1)``, to
  ``s^15``; ``log1p`` forms ``1 + x`` exactly in double (``|x| >= 1e-4``) or uses its
  Taylor series.
* ``expm1``, ``tanh``: from ``exp`` in double, Taylor series near 0 where subtracting 1
  would cancel.  ``exp`` in double is ``2^k e^r`` with a polynomial (the builtin's full
  double accuracy is not needed and costs 1.4x).
* ``erf``: Taylor series for ``|x| < 1``; beyond, ``1 - exp(-x^2) erfcx(|x|)`` with
  ``erfcx`` a degree-16 Chebyshev fit on ``[1, 4.5]`` (relative error 5e-11, fitted to
  mpmath's values); ``|x|`` is clamped to 4.5, where erf already rounds to +-1.
* ``pow``: ``exp(y log|x|)`` in double with the special cases of C99 Annex F by selects.
* ``hypot`` (complex ``abs``): ``sqrt(x^2 + y^2)`` in double (neither overflows).
"""

from __future__ import annotations

import math

from backend_opencl.emit.unit import Unit

FLOAT_FNS = ("sin", "cos", "log", "log1p", "expm1", "tanh", "erf", "pow", "hypot")
"""The ``math.<fn>`` names with a helper here."""

_INLINE = "__attribute__((always_inline)) "
"""Helpers are always inlined: a call left in a loop (PoCL's inliner gives up on the
longer ones) keeps the loop scalar."""


_INV_PIO4 = "a2f9836e4e441529fc2757d1f534ddc0db6295993c439041"
"""The first 192 bits of 2/pi (4/pi's bits after its leading 1), as hex."""

_ERFCX = (1.1700964778682196e-06, -3.0153073808156528e-06, 2.9497007261681337e-06,
          -7.63536879852362e-06, 2.6996280571273344e-05, -6.522958929266673e-05,
          0.0001479358314377979, -0.00034447479273270874, 0.0007866800734298066,
          -0.0017445817202869389, 0.003767868588935274, -0.007914236070422964,
          0.0161278025365156, -0.0318043474653308, 0.06051069082510566,
          -0.110665865619685, 0.19366209628030392)
"""``erfcx(x) = exp(x^2) erfc(x)`` on ``[1, 4.5]`` in ``u = (x - 2.75) / 1.75``, highest
power first: ``numpy.polynomial.chebyshev.chebfit`` of degree 16 to mpmath's values at
400 Chebyshev nodes, converted by ``cheb2poly`` (tests/lowering/test_mathfns_inline.py
checks erf to 1 ulp)."""


def _table() -> str:
    words = [int(_INV_PIO4[max(0, 2 * i - 6):2 * i + 2], 16) for i in range(24)]
    body = ", ".join(f"0x{w:x}u" for w in words)
    return f"constant uint @NAME@[24] = {{{body}}};\n"


def _horner(var: str, coeffs: tuple[float, ...] | list[float]) -> str:
    text = repr(float(coeffs[0]))
    for c in coeffs[1:]:
        text = f"{float(c)!r} + {var} * ({text})"
    return f"({text})"


def _taylor(terms: list[float], var: str) -> str:
    return _horner(var, terms[::-1])


_SIN = [(-1) ** k / math.factorial(2 * k + 1) for k in range(6)]
_COS = [(-1) ** k / math.factorial(2 * k) for k in range(7)]


def _sincos(unit: Unit) -> str:
    """The shared core: ``|x|`` reduced modulo pi/2 to ``r``; returns ``sin r`` or
    ``cos r`` by the quadrant (plus ``shift``: 0 for sin, 1 for cos) and stores the
    quadrant's sign bit in ``*sign``.  (This shape vectorises; returning both values
    and the quadrant does not, by LLVM's cost model.)"""
    table = unit.helper("inv_pio4", _table())
    head = "double @NAME@(float x, uint shift, ulong* sign) {"
    return unit.helper("sincos_core", _INLINE + head + f"""
    const uint xi = as_uint(x) & 0x7fffffffu;
    const double ax = (double)as_float(xi);
    const double t0 = ax * 0.6366197723675814 + 0x1.8p52;
    const double n0 = t0 - 0x1.8p52;
    const double r0 = (ax - n0 * 1.5707963267948966) - n0 * 6.123233995736766e-17;
    const uint idx = (xi >> 26) & 15u;
    const uint m = ((xi & 0xffffffu) | 0x800000u) << ((xi >> 23) & 7u);
    ulong res0 = (ulong)(m * {table}[idx]);
    const ulong res1 = (ulong)m * (ulong){table}[idx + 4];
    const ulong res2 = (ulong)m * (ulong){table}[idx + 8];
    res0 = ((res2 >> 32) | (res0 << 32)) + res1;
    const ulong n1 = (res0 + (1UL << 61)) >> 62;
    res0 -= n1 << 62;
    const double lo = as_double(0x4330000000000000UL | (res0 & 0xffffffffUL)) - 0x1p52;
    const double r1 = ((double)(int)(res0 >> 32) * 0x1p32 + lo) * 0x1.921FB54442D18p-62;
    const int small = xi < 0x40000000u;
    const ulong q = (small ? as_ulong(t0) : n1) + shift;
    const double r = small ? r0 : r1;
    const double s = r * r;
    const double sn = r * {_taylor(_SIN, "s")};
    const double cs = {_taylor(_COS, "s")};
    *sign = (q & 2) << 62;
    return (q & 1) ? cs : sn;
}}
""")


_SIN_OF = """    ulong sign;
    const double v = CORE(x, 0, &sign);
    const ulong sign_x = sign ^ ((ulong)(as_uint(x) >> 31) << 63);
    const float sin_x = (float)as_double(as_ulong(v) ^ sign_x);
"""
_COS_OF = """    ulong sign_c;
    const double w = CORE(x, 1, &sign_c);
    const float cos_x = (float)as_double(as_ulong(w) ^ sign_c);
"""


def _sin_cos(unit: Unit, result: str, parts: str, value: str) -> str:
    parts = parts.replace("CORE", _sincos(unit))
    return f"{result} @NAME@(float x) {{\n{parts}    return isfinite(x) ? {value} : x - x;\n}}\n"


def _sin(unit: Unit) -> str:
    return _sin_cos(unit, "float", _SIN_OF, "sin_x")


def _cos(unit: Unit) -> str:
    return _sin_cos(unit, "float", _COS_OF, "cos_x")


def _sincos_pair(unit: Unit) -> str:
    """``(sin x, cos x)`` from the two helpers (LLVM may still share their reduction).
    One body computing both measured 3x slower in a loop also loading complex numbers
    (complex exp, 64k c64: 0.84 -> 0.25 ms): the vectoriser keeps that loop scalar."""
    return (f"float2 @NAME@(float x) {{\n    return (float2)({float_fn(unit, 'sin')}(x), "
            f"{float_fn(unit, 'cos')}(x));\n}}\n")


_ATANH = [1 / (2 * k + 1) for k in range(1, 8)]
_EXP = [1 / math.factorial(k) for k in range(11)]


def _exp_double(unit: Unit) -> str:
    """``exp`` in double for the float helpers: ``2^k e^r`` with ``|r| <= ln(2)/2`` and a
    Taylor polynomial of degree 10 (relative error < 3e-13), ``x`` clamped to
    ``[-110, 90]`` (beyond, every float result is 0 or inf).  Cheaper than the builtin,
    whose full double accuracy the float results do not need."""
    return unit.helper("exp_d", _INLINE + f"""double @NAME@(double x) {{
    const double c = x < -110.0 ? -110.0 : (x > 90.0 ? 90.0 : x);
    const double t = c * 1.4426950408889634 + 0x1.8p52;
    const double k = t - 0x1.8p52;
    const double r = (c - k * 0.6931471805599453) - k * 2.3190468138462996e-17;
    return {_taylor(_EXP, "r")} * as_double((as_ulong(t) + 1023UL) << 52);
}}
""")



def _log_pos(unit: Unit) -> str:
    """``log u`` in double for a positive finite normal ``u``."""
    series = _horner("z", _ATANH[::-1])
    return unit.helper("log_pos", _INLINE + f"""double @NAME@(double u) {{
    const ulong bits = as_ulong(u);
    const uint h = (uint)(bits >> 32) + (0x3ff00000u - 0x3fe6a09eu);
    const int e = (int)(h >> 20) - 1023;
    const uint mh = (h & 0x000fffffu) + 0x3fe6a09eu;
    const double f = as_double(((ulong)mh << 32) | (bits & 0xffffffffUL)) - 1.0;
    const double s = f / (2.0 + f);
    const double z = s * s;
    const double p = z * {series};
    return (double)e * 0.6931471805599453 + (f - s * (f - 2.0 * p));
}}
""")


def _log(unit: Unit) -> str:
    core = _log_pos(unit)
    return f"""float @NAME@(float x) {{
    const float r = (float){core}((double)x);
    const float edge = x == 0 ? -INFINITY : (x < 0 ? NAN : x);
    return ((x > 0) & (x < INFINITY)) ? r : edge;
}}
"""


def _log1p(unit: Unit) -> str:
    core = _log_pos(unit)
    taylor = _taylor([(-1) ** k / (k + 1) for k in range(5)], "d")
    return f"""float @NAME@(float x) {{
    const double d = (double)x;
    const float big = (float){core}(1.0 + d);
    const float small = (float)(d * {taylor});
    const float r = fabs(x) < 1e-4f ? small : big;
    const float edge = x == -1 ? -INFINITY : (x < -1 ? NAN : x);
    return ((x > -1) & (x < INFINITY)) ? r : edge;
}}
"""


def _expm1(unit: Unit) -> str:
    taylor = _taylor([1 / f for f in (1, 2, 6, 24, 120)], "d")
    return f"""float @NAME@(float x) {{
    const double d = (double)x;
    const double big = {_exp_double(unit)}(d) - 1.0;
    const double small = d * {taylor};
    return (float)(fabs(x) < 1e-3f ? small : big);
}}
"""


def _tanh(unit: Unit) -> str:
    taylor = _taylor([1.0, -1 / 3, 2 / 15, -17 / 315], "s")
    return f"""float @NAME@(float x) {{
    const float ax = fabs(x);
    const double a = (double)(ax > 10.0f ? 10.0f : ax);
    const double e = {_exp_double(unit)}(2.0 * a);
    const double big = (e - 1.0) / (e + 1.0);
    const double s = a * a;
    const double small = a * {taylor};
    const float t = (float)(ax < 0.01f ? small : big);
    return as_float(as_uint(t) | (as_uint(x) & 0x80000000u));
}}
"""


def _erf(unit: Unit) -> str:
    taylor = _taylor([2 / math.sqrt(math.pi) * (-1) ** n / (math.factorial(n) * (2 * n + 1))
                      for n in range(13)], "z")
    return f"""float @NAME@(float x) {{
    const float ax = fabs(x);
    const double a = (double)(ax > 4.5f ? 4.5f : ax);
    const double z = a * a;
    const double small = a * {taylor};
    const double u = (a - 2.75) * (1.0 / 1.75);
    const double big = 1.0 - {_exp_double(unit)}(-z) * {_horner("u", _ERFCX)};
    const float r = (float)(ax < 1.0f ? small : big);
    return x != x ? x : as_float(as_uint(r) | (as_uint(x) & 0x80000000u));
}}
"""


def _pow(unit: Unit) -> str:
    core = _log_pos(unit)
    return f"""float @NAME@(float x, float y) {{
    const float ax = fabs(x);
    const double l = ax == 0 ? -INFINITY : (ax == INFINITY ? INFINITY : {core}((double)ax));
    float r = (float){_exp_double(unit)}((double)y * l);
    const int integral = y == rint(y);
    const int odd = integral & (fabs(y) < 0x1p24f) & ((int)y & 1);
    r = (odd & (as_int(x) < 0)) ? -r : r;
    r = ((x < 0) & (x > -INFINITY) & !integral & (fabs(y) < INFINITY)) ? NAN : r;
    r = ((ax == 1) & (fabs(y) == INFINITY)) ? 1.0f : r;
    r = ((x != x) | (y != y)) ? x + y : r;
    return ((y == 0) | (x == 1)) ? 1.0f : r;
}}
"""


def _hypot(unit: Unit) -> str:
    return """float @NAME@(float x, float y) {
    const double a = (double)x, b = (double)y;
    const float r = (float)sqrt(a * a + b * b);
    return ((fabs(x) == INFINITY) | (fabs(y) == INFINITY)) ? INFINITY : r;
}
"""


_BUILDERS = {"sin": _sin, "cos": _cos, "sincos": _sincos_pair, "log": _log, "log1p": _log1p,
             "expm1": _expm1, "tanh": _tanh, "erf": _erf, "pow": _pow, "hypot": _hypot}


def float_fn(unit: Unit, fn: str) -> str:
    """The name of the helper computing single-precision ``fn`` (needs fp64)."""
    unit.need("fp64")
    return unit.helper(f"{fn}_f", _INLINE + _BUILDERS[fn](unit))
