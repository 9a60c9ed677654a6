"""Special real ``math.<fn>``: ``erf erfc erfinv lgamma digamma bessel_i1e``.

:func:`special_fn` picks the helper.  f64, and f32 (f16/bf16 through float) on CPU
devices with fp64, use the vectorisable double helpers of :mod:`erffns` (``erfc``,
f64 ``erf``, ``erfinv``) and :mod:`gammafns` (``lgamma``, ``digamma``): PoCL's builtins
for them are scalar calls that keep a kernel's loop scalar.  Elsewhere (GPUs, CPUs
without fp64) single precision keeps the builtins ``erf erfc lgamma`` and the float
helpers here, the well-known formulas XLA uses:

* ``erfinv``: M. Giles, "Approximating the erfinv function" (GPU Computing Gems, 2011):
  with ``w = -log((1 - x)(1 + x))`` (Giles' form: XLA's ``-log1p(-x^2)`` loses digits
  near ``|x| = 1`` where ``x^2`` rounds), a polynomial in ``w - c`` or ``sqrt(w) - c``
  times ``x``; ``erfinv(+-1) = +-inf``, NaN outside ``[-1, 1]``.
* ``digamma``: the derivative of Lanczos' approximation (g = 7, 9 terms) of ``lgamma``,
  ``digamma(z + 1) = log(t) + A'(z) / A(z) - g / t`` with ``t = z + g + 1/2``; for
  ``x < 1/2`` the reflection ``digamma(1 - x) - pi cot(pi x)`` (the argument of the
  cotangent reduced to ``[-1/2, 1/2]``); NaN at the poles (zero and negative integers).
* ``bessel_i1e`` (every type): ``exp(-|x|) I1(x)`` by the Cephes Chebyshev expansions
  (``|x| <= 8``: ``|x| T_A(|x|/2 - 2)``, beyond: ``T_B(32/|x| - 2) / sqrt(|x|)``), both
  evaluated and one selected (a branch would keep the loop scalar), odd in ``x``.
"""

from __future__ import annotations

import math

from backend_opencl.emit.erffns import (
    ERFINV_F32,
    ERFINV_F64,
    erf_double,
    erfc_double,
    erfc_single,
    erfinv_double,
)
from backend_opencl.emit.gammafns import INLINE, digamma_double, lgamma_double
from backend_opencl.emit.unit import Unit
from tensorlang.ir.types import ScalarType

_LANCZOS = (676.520368121885098567009190444019, -1259.13921672240287047156078755283,
            771.3234287776530788486528258894, -176.61502916214059906584551354,
            12.507343278686904814458936853, -0.13857109526572011689554707,
            9.984369578019570859563e-6, 1.50563273514931155834e-7)
_LANCZOS_BASE = 0.99999999999980993227684700473478
_I1E_A = (2.77791411276104639959E-18, -2.11142121435816608115E-17,
          1.55363195773620046921E-16, -1.10559694773538630805E-15,
          7.60068429473540693410E-15, -5.04218550472791168711E-14,
          3.22379336594557470981E-13, -1.98397439776494371520E-12,
          1.17361862988909016308E-11, -6.66348972350202774223E-11,
          3.62559028155211703701E-10, -1.88724975172282928790E-9,
          9.38153738649577178388E-9, -4.44505912879632808065E-8,
          2.00329475355213526229E-7, -8.56872026469545474066E-7,
          3.47025130813767847674E-6, -1.32731636560394358279E-5,
          4.78156510755005422638E-5, -1.61760815825896745588E-4,
          5.12285956168575772895E-4, -1.51357245063125314899E-3,
          4.15642294431288815669E-3, -1.05640848946261981558E-2,
          2.47264490306265168283E-2, -5.29459812080949914269E-2,
          1.02643658689847095384E-1, -1.76416518357834055153E-1,
          2.52587186443633654823E-1)
_I1E_B = (7.51729631084210481353E-18, 4.41434832307170791151E-18,
          -4.65030536848935832153E-17, -3.20952592199342395980E-17,
          2.96262899764595013876E-16, 3.30820231092092828324E-16,
          -1.88035477551078244854E-15, -3.81440307243700780478E-15,
          1.04202769841288027642E-14, 4.27244001671195135429E-14,
          -2.10154184277266431302E-14, -4.08355111109219731823E-13,
          -7.19855177624590851209E-13, 2.03562854414708950722E-12,
          1.41258074366137813316E-11, 3.25260358301548823856E-11,
          -1.89749581235054123450E-11, -5.58974346219658380687E-10,
          -3.83538038596423702205E-9, -2.63146884688951950684E-8,
          -2.51223623787020892529E-7, -3.88256480887769039346E-6,
          -1.10588938762623716291E-4, -9.76109749136146840777E-3,
          7.78576235018280120474E-1)
_I1E_TERMS_F32 = (17, 7)
"""Single precision uses the last 17 (A) and 7 (B) Cephes coefficients (``i1ef``)."""


def _lit(value: float, single: bool) -> str:
    text = repr(float(value))
    return f"{text}f" if single else text


def _array(name: str, values: tuple[float, ...], r: str, single: bool) -> str:
    body = ", ".join(_lit(v, single) for v in values)
    return f"    const {r} {name}[{len(values)}] = {{{body}}};\n"


def _horner(p: str, coeffs: str, count: int, w: str) -> str:
    return (f"        {p} = {coeffs}[0];\n"
            f"        for (int i = 1; i < {count}; ++i) {p} = {coeffs}[i] + {p} * {w};\n")


def _erfinv(single: bool) -> str:
    r = "float" if single else "double"
    tables = ERFINV_F32 if single else ERFINV_F64
    arrays = "".join(_array(f"c{i}", c, r, single) for i, c in enumerate(tables))
    # (threshold on w, shift of w or sqrt(w)) per branch; the last branch has no threshold
    cuts = ((5.0, 2.5, False), (None, 3.0, True)) if single else (
        (6.25, 3.125, False), (16.0, 3.25, True), (None, 5.0, True))
    body = ""
    for i, (limit, shift, root) in enumerate(cuts):
        arg = "sqrt(w)" if root else "w"
        step = (f"        const {r} v = {arg} - {_lit(shift, single)};\n"
                + _horner("p", f"c{i}", len(tables[i]), "v"))
        head = "    } else {\n" if limit is None else (
            ("    if" if i == 0 else "    } else if") + f" (w < {_lit(limit, single)}) {{\n")
        body += head + step
    return (f"{r} @NAME@({r} x) {{\n{arrays}"
            f"    const {r} w = -log((1 - x) * (1 + x));\n    {r} p;\n{body}    }}\n"
            f"    return fabs(x) == 1 ? x * INFINITY : p * x;\n}}\n")


def _digamma(single: bool) -> str:
    r = "float" if single else "double"
    g = 7.0

    def lit(v: float) -> str:
        return _lit(v, single)

    return (f"{r} @NAME@({r} x) {{\n"
            + _array("c", _LANCZOS, r, single)
            + f"    const int reflect = x < {lit(0.5)};\n"
            f"    const {r} z = reflect ? -x : x - 1;\n"
            f"    {r} num = 0, den = {lit(_LANCZOS_BASE)};\n"
            f"    for (int i = 0; i < {len(_LANCZOS)}; ++i) {{\n"
            f"        const {r} d = z + ({r})(i + 1);\n"
            "        num -= c[i] / (d * d);\n        den += c[i] / d;\n    }\n"
            f"    const {r} t = {lit(g + 0.5)} + z;\n"
            f"    const {r} log_t = {lit(math.log(g + 0.5))} + log1p(z / {lit(g + 0.5)});\n"
            f"    {r} y = log_t + num / den - {lit(g)} / t;\n"
            "    if (reflect) {\n"
            f"        const {r} pr = {lit(math.pi)} * (x + fabs(floor(x + {lit(0.5)})));\n"
            f"        y -= {lit(math.pi)} * cos(pr) / sin(pr);\n    }}\n"
            "    return (x <= 0 && x == floor(x)) ? NAN : y;\n}\n")


def _clenshaw(name: str, coeffs: tuple[float, ...], arg: str, r: str, single: bool) -> str:
    """Cephes' ``chbevl``: ``b0 - b2`` (half of it is the series) unrolled, with literal
    coefficients (a loop over a local array kept PoCL's loop vectoriser away)."""
    lines = [f"    const {r} v{name} = {arg};\n",
             f"    {r} {name}0 = {_lit(coeffs[0], single)}, {name}1 = 0, {name}2 = 0;\n"]
    for c in coeffs[1:]:
        lines.append(f"    {name}2 = {name}1; {name}1 = {name}0; "
                     f"{name}0 = v{name} * {name}1 - {name}2 + {_lit(c, single)};\n")
    return "".join(lines)


def _bessel_i1e(single: bool) -> str:
    """Both Chebyshev expansions, then a select (no branch: vectorisable)."""
    r = "float" if single else "double"
    a, b = (_I1E_A[-_I1E_TERMS_F32[0]:], _I1E_B[-_I1E_TERMS_F32[1]:]) if single else (
        _I1E_A, _I1E_B)
    half, two = _lit(0.5, single), _lit(2.0, single)
    return (f"{INLINE}{r} @NAME@({r} x) {{\n    const {r} z = fabs(x);\n"
            + _clenshaw("p", a, f"{half} * z - {two}", r, single)
            + _clenshaw("q", b, f"{_lit(32.0, single)} / z - {two}", r, single)
            + f"    const {r} y = z <= {_lit(8.0, single)} ? z * ({half} * (p0 - p2))"
            f" : ({half} * (q0 - q2)) / sqrt(z);\n"
            "    return x < 0 ? -y : (x > 0 ? y : x);\n}\n")


_BUILDERS = {"erfinv": _erfinv, "digamma": _digamma, "bessel_i1e": _bessel_i1e}
_DOUBLE_BUILDERS = {
    "erfc": lambda unit, single: (erfc_single if single else erfc_double)(unit),
    "erf": lambda unit, single: erf_double(unit),
    "erfinv": erfinv_double,
    "lgamma": lambda unit, single: lgamma_double(unit),
    "digamma": lambda unit, single: digamma_double(unit),
}
"""The double-precision helpers (:mod:`erffns`, :mod:`gammafns`), which f32 uses too on
devices where ``in_double`` holds."""


def special_fn(unit: Unit, fn: str, t: ScalarType, arg: str, in_double: bool) -> str | None:
    """The C of the special function ``fn`` of ``arg`` on real ``t`` (f16/bf16 as float),
    or None where a builtin or :mod:`floatfns` computes it.  f64, and single precision where
    ``in_double`` (CPU devices with fp64), use the vectorisable double helpers (f32's
    ``erf`` excepted: it has a float helper); single precision elsewhere keeps the
    builtins (``erf``, ``erfc``, ``lgamma``: native on GPUs) and the float helpers here."""
    single = t.name != "f64"
    builder = _DOUBLE_BUILDERS.get(fn)
    if builder is not None and (not single or in_double) and not (single and fn == "erf"):
        unit.need("fp64")
        name = builder(unit, single)
        return f"{name}({arg})" if not single else f"(float){name}((double){arg})"
    if fn not in _BUILDERS:
        return None
    name = unit.helper(f"{fn}_{'f32' if single else 'f64'}", _BUILDERS[fn](single))
    return f"{name}({arg})"
