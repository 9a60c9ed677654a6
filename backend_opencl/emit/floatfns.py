"""Single-precision elementary functions as inline C that PoCL's loop vectoriser widens.

PoCL's scalar builtins ``sin cos log log1p expm1 tanh erf pow hypot`` are calls the loop
vectoriser cannot widen: 2-33 ms per 128k f32 elements on the 2-core VM, against
0.1-0.8 ms for the helpers here.  Its ``exp`` is vectorised, but the float helper here
is cheaper still and more accurate.
On CPU devices with fp64, ``math.<fn>`` on f32 (and f16/bf16, which compute in float)
calls these helpers instead.  Each one works in double precision, whose range and 53
bits make short branch-free formulas accurate, and rounds once to float: results are
within about 0.5 ulp (correctly rounded for all but rare inputs).  Every choice is a
select, never a branch or a call the vectoriser cannot widen:

* ``sin``, ``cos``: ``|x| = m 2^(e-150)`` times 2/pi modulo 4 as ``m`` times a
  two-double ``2^(e-150) 2/pi mod 4`` from a 256-entry table indexed by the exponent
  (exact products by FMA; one path for every ``x``, no select between a short and a
  long reduction, both of which a vector loop would compute); then polynomials of
  degree 9 and 10 fitted on ``[-pi/4, pi/4]`` (relative error < 2^-37).
* ``log``, ``log1p``: ``u = 2^e m`` with ``m`` in ``[sqrt(1/2), sqrt(2))`` (fdlibm's
  reduction on the high word) and ``log m = 2 atanh(s)``, ``s = (m - 1) / (m + 1)``, a
  fitted polynomial to ``s^9``; ``log1p`` adds ``1 + x``'s rounding error in double
  (non-zero for ``|x| < 2^-29`` only) to ``log(1 + x)``.
* ``expm1``: in double as ``2^k (e^r - 1) + (2^k - 1)``, with ``e^r - 1 = r (1 + r Q(r))``
  fitted (no cancellation near 0, so no Taylor series to select there).
* ``tanh``: ``x P(x^2) / Q(x^2)``, a degree-(5, 5) rational fitted on ``[0, 10]``.
* ``erf``: ``x P(x^2) / Q(x^2)``, a degree-(7, 7) rational fitted on ``[0, 4]``
  (``|x|`` clamped to 4, where erf already rounds to +-1): one path, no exponential.
* ``pow``: ``exp(y log|x|)`` in double with the special cases of C99 Annex F by float
  selects (no ``rint``: PoCL's is a scalar-style software sequence); ``exp`` in double
  is ``2^k e^r`` with a degree-7 fit (the builtin's full double accuracy is not needed
  and costs 1.4x).
* ``hypot`` (complex ``abs``): ``sqrt(x^2 + y^2)`` in double (neither overflows).
* ``logistic``: ``1 / (1 + e^-x)``, or ``e^x / (1 + e^x)`` for negative ``x`` (so
  subnormal results stay): within 2.5 ulp, as the builtin formula was where its
  exponential did not overflow.
* ``exp``: in float only, ``2^k e^r`` with ``r = x - k ln 2`` split into an exact leading
  part and a small rest, ``e^r = 1 + r + r^2 P(r)`` and the sum ``1 + r`` carried with
  its rounding error (Fast2Sum) so the mantissa is rounded once: within 0.78 ulp over
  every float (0.69 where the result is normal), against 0.95 for PoCL's builtin, at
  ~80% of its time (512k elements: 67 against 85 us over a copy).
"""

from __future__ import annotations

import functools
from fractions import Fraction

from backend_opencl.emit.unit import Unit

FLOAT_FNS = ("sin", "cos", "log", "log1p", "expm1", "tanh", "erf", "pow", "hypot", "exp",
             "logistic")
"""The ``math.<fn>`` names with a helper here."""

_INLINE = "__attribute__((always_inline)) "
"""Helpers are always inlined: a call left in a loop (PoCL's inliner gives up on the
longer ones) keeps the loop scalar."""


_TWO_OVER_PI = int("a2f9836e4e441529fc2757d1f534ddc0db6295993c439041"
                   "fe5163abdebbc561b7246e3a424dd2e006492eea09d1921cfe1d", 16)
"""The first 400 bits of 2/pi after the binary point."""


def _two_over_pi_times(s: int) -> Fraction:
    """``2^s * 2/pi`` modulo 4 to about ``400 - s`` bits (only its value modulo 4 matters
    to the quadrant of an integer multiple)."""
    if s >= 0:
        return Fraction((_TWO_OVER_PI << s) % (4 << 400), 1 << 400)
    return Fraction(_TWO_OVER_PI, 1 << (400 - s))


@functools.cache
def _tables() -> str:
    """``T0[e] + T1[e]`` = ``2^(e-150) 2/pi`` modulo 4 (two doubles, 106 bits) for each
    biased float exponent ``e``; ``e = 0`` (subnormals) uses ``e = 1``'s scale."""
    hi, lo = [], []
    for e in range(256):
        value = _two_over_pi_times(max(e, 1) - 150)
        hi.append(float(value))
        lo.append(float(value - Fraction(hi[-1])))
    rows = [", ".join(repr(v) for v in part) for part in (hi, lo)]
    return "".join(f"constant double @NAME@{i}[256] = {{{row}}};\n" for i, row in enumerate(rows))


_ERF_P = (1.1283791670928285, 0.19935121444344836, 0.05795822286313238, 0.004914476527450861,
          0.0005097362866460722, 2.1444749447312003e-05, 7.484506105783014e-07,
          3.018973656228559e-09)
_ERF_Q = (1.0, 0.5100037469530938, 0.12136538908925262, 0.017619611143396104,
          0.0017017407868209521, 0.00011037046936692323, 4.460935826440858e-06,
          7.331617375099446e-08)
"""``erf(x) = x P(x^2) / Q(x^2)`` on ``[0, 4]`` (coefficients lowest power first): a
degree-(7, 7) rational fitted to mpmath's values at 4000 Chebyshev nodes by iteratively
reweighted linear least squares (relative error 2^-36.6; Q's coefficients are positive,
so no pole for any ``x``).  The polynomial fits below are
``numpy.polynomial.chebyshev.chebfit`` to mpmath's values at 3000 Chebyshev nodes
weighted for relative error (error given; a float needs 2^-25 for a result within 0.55
ulp)."""

_TANH_P = (0.9999999999552004, 0.14064641870082717, 0.004379948914074834, 4.1094595533653204e-05,
           1.0449372405768228e-07, 3.267274500205273e-11)
_TANH_Q = (1.0, 0.47397975115536256, 0.029039867685960327, 0.0004920029207778062,
           2.494881497635607e-06, 2.706054589595288e-09)
"""``tanh(x) = x P(x^2) / Q(x^2)`` on ``[0, 10]``, fitted as ``erf``'s (relative error
2^-32.7; Q's coefficients are positive)."""

_SIN = (0.9999999999954007, -0.1666666663013152, 0.008333328660303754,
        -0.00019839169489623045, 2.7170718603043413e-06)
"""``sin(r) / r`` on ``|r| <= pi/4`` in ``s = r^2``, lowest power first (2^-37.7)."""

_COS = (0.999999999999933, -0.4999999999925813, 0.04166666653178452,
        -0.0013888879841598867, 2.4798826123735262e-05, -2.7166748748981786e-07)
"""``cos(r)`` on ``|r| <= pi/4`` in ``s = r^2``, lowest power first (2^-43.8)."""

_ATANH = (0.3333333327502205, 0.2000006276331276, 0.14275200177140138, 0.11670964093391409)
"""``(atanh(s) / s - 1) / s^2`` on ``|s| <= 0.1716`` (``log``'s reduced range) in
``z = s^2``, lowest power first (error in ``log`` 2^-34)."""

_EXPM1 = (0.500000000002552, 0.16666666719009116, 0.041666666336521226, 0.00833329844493853,
          0.0013888938831532545, 0.00019899323073124532, 2.4812617842130466e-05)
"""``(e^r - 1 - r) / r^2`` on ``|r| <= ln(2)/2``, lowest power first (2^-34.1)."""

_EXP_SHORT = (0.9999999999616426, 1.000000000260134, 0.5000000104759805, 0.1666666501435735,
              0.0416662245601703, 0.008333579261430012, 0.0013948251914420394,
              0.0001976677428168743)
"""``e^r`` on ``|r| <= ln(2)/2``, lowest power first (2^-34.5): ``pow`` and ``erf``."""

_EXP_FLOAT = (0.5, 0.1666666716337204, 0.04166646674275398, 0.0083332983776927,
              0.0013933643931522965, 0.00019899275503121316)
"""``(e^r - 1 - r) / r^2`` on ``|r| <= ln(2)/2`` in float coefficients, lowest power
first (``e^r`` within 2^-30.5)."""


def _horner(var: str, coeffs: tuple[float, ...] | list[float]) -> str:
    """The polynomial with ``coeffs`` (highest power first) in ``var``; from six
    coefficients on, as ``E(var^2) + var O(var^2)``: two independent Horner chains of
    half the length (a vector loop of these helpers is bound by the FMAs' latency)."""
    if len(coeffs) >= 6:
        odd, even = coeffs[-2::-2][::-1], coeffs[-1::-2][::-1]
        square = f"({var} * {var})"
        return f"({_horner(square, even)} + {var} * {_horner(square, odd)})"
    text = repr(float(coeffs[0]))
    for c in coeffs[1:]:
        text = f"{float(c)!r} + {var} * ({text})"
    return f"({text})"


def _taylor(terms: list[float], var: str) -> str:
    return _horner(var, terms[::-1])




def _sincos(unit: Unit) -> str:
    """The shared core: ``|x| = m 2^(e-150)`` (``m`` the 24-bit significand) times 2/pi
    modulo 4 is ``m (T0[e] + T1[e])`` in exact double-double steps (no branch on the
    size of ``x``: a select between a short and a long reduction computes both in a
    vector loop); returns ``sin r`` or ``cos r`` by the quadrant (plus ``shift``: 0 for
    sin, 1 for cos) and stores the quadrant's sign bit in ``*sign``.  (This shape
    vectorises; returning both values and the quadrant does not, by LLVM's cost model.)"""
    table = unit.helper("two_over_pi", _tables())
    head = "double @NAME@(float x, uint shift, ulong* sign) {"
    return unit.helper("sincos_core", _INLINE + head + f"""
    const uint xi = as_uint(x) & 0x7fffffffu;
    const uint e = xi >> 23;
    const double m = (double)(int)((xi & 0x7fffffu) | (e != 0 ? 0x800000u : 0u));
    const double t0 = {table}0[e], t1 = {table}1[e];
    const double hi = m * t0;
    const double lo = fma(m, t0, -hi);
    const double k0 = (hi + 0x1.8p52) - 0x1.8p52;
    const double f0 = (hi - k0) + fma(m, t1, lo);
    const double k1 = (f0 + 0x1.8p52) - 0x1.8p52;
    const double r = (f0 - k1) * 1.5707963267948966;
    const ulong q = (ulong)(long)(k0 + k1) + shift;
    const double s = r * r;
    const double sn = r * {_taylor(list(_SIN), "s")};
    const double cs = {_taylor(list(_COS), "s")};
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




def _exp_double(unit: Unit) -> str:
    """``exp`` in double for the float helpers: ``2^k e^r`` with ``|r| <= ln(2)/2`` and a
    degree-7 fit (relative error 2^-34.5), ``x`` clamped to ``[-110, 90]`` (beyond, every
    float result is 0 or inf).  Cheaper than the builtin, whose full double accuracy the
    float results do not need."""
    return unit.helper("exp_d", _INLINE + f"""double @NAME@(double x) {{
    const double c = x < -110.0 ? -110.0 : (x > 90.0 ? 90.0 : x);
    const double t = c * 1.4426950408889634 + 0x1.8p52;
    const double k = t - 0x1.8p52;
    const double r = (c - k * 0.6931471805599453) - k * 2.3190468138462996e-17;
    return {_taylor(list(_EXP_SHORT), "r")} * as_double((as_ulong(t) + 1023UL) << 52);
}}
""")


def _expm1_double(unit: Unit) -> str:
    """``expm1`` in double without cancellation near 0: ``2^k (e^r - 1) + (2^k - 1)`` with
    ``e^r - 1 = r (1 + r Q(r))`` (one path for every ``x``: no Taylor series selected near
    0), ``x`` clamped to ``[-110, 90]``.  The sign of a zero result is the caller's."""
    return unit.helper("expm1_d", _INLINE + f"""double @NAME@(double x) {{
    const double c = x < -110.0 ? -110.0 : (x > 90.0 ? 90.0 : x);
    const double t = c * 1.4426950408889634 + 0x1.8p52;
    const double k = t - 0x1.8p52;
    const double r = (c - k * 0.6931471805599453) - k * 2.3190468138462996e-17;
    const double p = r * (1.0 + r * {_taylor(list(_EXPM1), "r")});
    const double scale = as_double((as_ulong(t) + 1023UL) << 52);
    return fma(scale, p, scale - 1.0);
}}
""")


_LOG_TAIL = """    const double s = f / (2.0 + f);
    const double z = s * s;
    const double p = z * SERIES;
    return (double)e * 0.6931471805599453 + (f - s * (f - 2.0 * p));
}
"""
"""``log(2^e (1 + f))`` from ``e`` and ``f`` (``1 + f`` in ``[sqrt(1/2), sqrt(2))``)."""


def _log_pos(unit: Unit) -> str:
    """``log u`` in double for a positive finite normal double ``u`` (``log1p``'s
    ``1 + x``)."""
    tail = _LOG_TAIL.replace("SERIES", _taylor(list(_ATANH), "z"))
    return unit.helper("log_pos", _INLINE + """double @NAME@(double u) {
    const ulong bits = as_ulong(u);
    const uint h = (uint)(bits >> 32) + (0x3ff00000u - 0x3fe6a09eu);
    const int e = (int)(h >> 20) - 1023;
    const uint mh = (h & 0x000fffffu) + 0x3fe6a09eu;
    const double f = as_double(((ulong)mh << 32) | (bits & 0xffffffffUL)) - 1.0;
""" + tail)


def _log_float(unit: Unit) -> str:
    """``log x`` in double for a positive finite float ``x`` (subnormals scaled by 2^23):
    the exponent and significand split on the float's 32-bit pattern (vector lanes twice
    as wide as the double's; ``log`` 10% faster)."""
    tail = _LOG_TAIL.replace("SERIES", _taylor(list(_ATANH), "z"))
    return unit.helper("log_float", _INLINE + """double @NAME@(float x) {
    const int sub = x < 0x1p-126f;
    const uint xi = as_uint(sub ? x * 0x1p23f : x) - 0x3f3504f3u;
    const int e = ((int)xi >> 23) - (sub ? 23 : 0);
    const double f = (double)as_float((xi & 0x7fffffu) + 0x3f3504f3u) - 1.0;
""" + tail)


def _log(unit: Unit) -> str:
    return f"""float @NAME@(float x) {{
    const float r = (float){_log_float(unit)}(x);
    const float edge = x == 0 ? -INFINITY : (x < 0 ? NAN : x);
    return ((x > 0) & (x < INFINITY)) ? r : edge;
}}
"""


def _log1p(unit: Unit) -> str:
    """``log(u) + (x - (u - 1))`` for ``u = 1 + x`` rounded in double: the second term is
    ``1 + x``'s rounding error (non-zero only for ``|x| < 2^-29``, where dividing it by
    ``u ~ 1`` changes nothing), so no Taylor series is selected near 0."""
    return f"""float @NAME@(float x) {{
    const double d = (double)x;
    const double u = 1.0 + d;
    const float r = (float)({_log_pos(unit)}(u) + (d - (u - 1.0)));
    const float edge = x == -1 ? -INFINITY : (x < -1 ? NAN : x);
    return ((x > -1) & (x < INFINITY)) ? as_float(as_uint(r) | (as_uint(x) & 0x80000000u)) : edge;
}}
"""


def _expm1(unit: Unit) -> str:
    return f"""float @NAME@(float x) {{
    const float r = (float){_expm1_double(unit)}((double)x);
    return as_float(as_uint(r) | (as_uint(x) & 0x80000000u));
}}
"""


def _tanh(unit: Unit) -> str:
    """``x P(x^2) / Q(x^2)`` in double, ``|x|`` clamped to 10 (tanh rounds to 1 from 9.01
    on)."""
    return f"""float @NAME@(float x) {{
    const float ax = fabs(x);
    const double a = (double)(ax > 10.0f ? 10.0f : ax);
    const double z = a * a;
    const float t = (float)(a * {_taylor(list(_TANH_P), "z")} / {_taylor(list(_TANH_Q), "z")});
    return as_float(as_uint(t) | (as_uint(x) & 0x80000000u));
}}
"""


def _erf(unit: Unit) -> str:
    """``x P(x^2) / Q(x^2)`` in double, ``|x|`` clamped to 4 (where erf rounds to 1)."""
    return f"""float @NAME@(float x) {{
    const float ax = fabs(x);
    const double a = (double)(ax > 4.0f ? 4.0f : ax);
    const double z = a * a;
    const float r = (float)(a * {_taylor(list(_ERF_P), "z")} / {_taylor(list(_ERF_Q), "z")});
    return as_float(as_uint(r) | (as_uint(x) & 0x80000000u));
}}
"""


def _pow(unit: Unit) -> str:
    """``exp(y log|x|)`` in double; zero and infinite ``|x|`` (whose ``log`` the helper does
    not compute) and the other special cases of C99 Annex F by float selects."""
    return f"""float @NAME@(float x, float y) {{
    const float ax = fabs(x), ay = fabs(y);
    float r = (float){_exp_double(unit)}((double)y * {_log_float(unit)}(ax));
    const int integral = (ay >= 0x1p23f) | (ay == (float)(int)(ay < 0x1p23f ? ay : 0.0f));
    const int odd = integral & (ay < 0x1p24f) & ((int)y & 1);
    r = ((ax == 0) | (ax == INFINITY)) ? (((ax == 0) == (y > 0)) ? 0.0f : INFINITY) : r;
    r = (odd & (as_int(x) < 0)) ? -r : r;
    r = ((x < 0) & (x > -INFINITY) & !integral) ? NAN : r;
    r = ((x != x) | (y != y)) ? x + y : r;
    return ((y == 0) | (x == 1) | ((x == -1) & (ay == INFINITY))) ? 1.0f : r;
}}
"""


def _exp(unit: Unit) -> str:
    """``2^k (1 + r + r^2 P(r))`` in float.  ``hi = x - k C1`` is exact (``C1``, ln 2's
    leading 9 bits, times ``|k| <= 150`` has 17 bits) and ``|hi| <= 0.35``, so
    ``s = 1 + hi`` and its rounding error ``(1 - s) + hi`` are exact (Fast2Sum); the small
    rest ``-k C2 + r^2 P(r)`` joins that error before the one rounding of the mantissa.
    ``2^k`` is two factors (``k`` reaches -150, below the normal exponents) from the bits
    of ``t`` (no float-to-int conversion, undefined for NaN).  ``x`` is clamped to
    ``[-104, 89]``, beyond which every result is 0 or infinity; NaN passes through."""
    return f"""float @NAME@(float x) {{
    const float c = x < -104.0f ? -104.0f : (x > 89.0f ? 89.0f : x);
    const float t = fma(c, 1.44269504f, 0x1.8p23f);
    const float k = t - 0x1.8p23f;
    const float hi = fma(k, -0x1.63p-1f, c);
    const float r = fma(k, 2.12194440e-4f, hi);
    const float lo = fma(k, 2.12194440e-4f, (r * r) * {_float_horner("r", _EXP_FLOAT)});
    const float s = 1.0f + hi;
    const float m = s + (((1.0f - s) + hi) + lo);
    const int e = as_int(t) - 0x4b400000;
    return m * as_float((e / 2 + 127) << 23) * as_float((e - e / 2 + 127) << 23);
}}
"""


def _logistic(unit: Unit) -> str:
    """``1 / (1 + e^-x)`` for ``x >= 0``, ``e^x / (1 + e^x)`` below: the exponential never
    overflows, so results down to the subnormals stay (``1 / (1 + e^-x)`` gives 0 from
    ``x < -88.7``).  One division either way."""
    return f"""float @NAME@(float x) {{
    const float e = {float_fn(unit, "exp")}(-fabs(x));
    return (x >= 0.0f ? 1.0f : e) / (1.0f + e);
}}
"""


def _float_horner(var: str, terms: tuple[float, ...]) -> str:
    """``sum terms[i] var^i`` (lowest power first) as nested float ``fma`` s: one chain,
    not :func:`_horner`'s two in ``var^2`` (``exp`` through those: 0.80 instead of 0.78
    ulp over every float, 0.73 instead of 0.69 where the result is normal)."""
    expr = f"{terms[-1]!r}f"
    for term in reversed(terms[:-1]):
        expr = f"fma({expr}, {var}, {term!r}f)"
    return expr


def _hypot(unit: Unit) -> str:
    return """float @NAME@(float x, float y) {
    const double a = (double)x, b = (double)y;
    const float r = (float)sqrt(a * a + b * b);
    return ((fabs(x) == INFINITY) | (fabs(y) == INFINITY)) ? INFINITY : r;
}
"""


_BUILDERS = {"sin": _sin, "cos": _cos, "sincos": _sincos_pair, "log": _log, "log1p": _log1p,
             "expm1": _expm1, "tanh": _tanh, "erf": _erf, "pow": _pow, "hypot": _hypot,
             "exp": _exp, "logistic": _logistic}


def float_fn(unit: Unit, fn: str) -> str:
    """The name of the helper computing single-precision ``fn`` (needs fp64)."""
    unit.need("fp64")
    return unit.helper(f"{fn}_f", _INLINE + _BUILDERS[fn](unit))
