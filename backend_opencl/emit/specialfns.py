"""Helper functions for the special real ``math.<fn>``: ``erfinv``, ``digamma``, ``bessel_i1e``.

The formulas are the well-known ones XLA uses for ``chlo.erf_inv``, ``chlo.digamma`` and
``chlo.bessel_i1e``, so results agree with it to a few ulp:

* ``erfinv``: M. Giles, "Approximating the erfinv function" (GPU Computing Gems, 2011):
  with ``w = -log((1 - x)(1 + x))`` (Giles' form: XLA's ``-log1p(-x^2)`` loses digits
  near ``|x| = 1`` where ``x^2`` rounds), a polynomial in ``w - c`` or ``sqrt(w) - c`` times ``x``
  (two branches in single precision, three in double); ``erfinv(+-1) = +-inf``, NaN
  outside ``[-1, 1]``.
* ``digamma``: the derivative of Lanczos' approximation (g = 7, 9 terms) of ``lgamma``,
  ``digamma(z + 1) = log(t) + A'(z) / A(z) - g / t`` with ``t = z + g + 1/2``; for
  ``x < 1/2`` the reflection ``digamma(1 - x) - pi cot(pi x)`` (the argument of the
  cotangent reduced to ``[-1/2, 1/2]``); NaN at the poles (zero and negative integers).
* ``bessel_i1e``: ``exp(-|x|) I1(x)`` by the Cephes Chebyshev expansions (``|x| <= 8``:
  ``|x| T_A(|x|/2 - 2)``, beyond: ``T_B(32/|x| - 2) / sqrt(|x|)``), odd in ``x``.

Single-precision types (f16, bf16, f32) use the ``float`` helpers, f64 the ``double`` ones.
"""

from __future__ import annotations

import math

from backend_opencl.emit.unit import Unit
from tensorlang.ir.types import ScalarType

SPECIAL_FNS = ("erfinv", "digamma", "bessel_i1e")
"""The ``math.<fn>`` names implemented here."""

_ERFINV_F32 = (
    (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
     -0.00125372503, -0.00417768164, 0.246640727, 1.50140941),
    (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
     -0.0076224613, 0.00943887047, 1.00167406, 2.83297682),
)
_ERFINV_F64 = (
    (-3.6444120640178196996e-21, -1.685059138182016589e-19, 1.2858480715256400167e-18,
     1.115787767802518096e-17, -1.333171662854620906e-16, 2.0972767875968561637e-17,
     6.6376381343583238325e-15, -4.0545662729752068639e-14, -8.1519341976054721522e-14,
     2.6335093153082322977e-12, -1.2975133253453532498e-11, -5.4154120542946279317e-11,
     1.051212273321532285e-09, -4.1126339803469836976e-09, -2.9070369957882005086e-08,
     4.2347877827932403518e-07, -1.3654692000834678645e-06, -1.3882523362786468719e-05,
     0.0001867342080340571352, -0.00074070253416626697512, -0.0060336708714301490533,
     0.24015818242558961693, 1.6536545626831027356),
    (2.2137376921775787049e-09, 9.0756561938885390979e-08, -2.7517406297064545428e-07,
     1.8239629214389227755e-08, 1.5027403968909827627e-06, -4.013867526981545969e-06,
     2.9234449089955446044e-06, 1.2475304481671778723e-05, -4.7318229009055733981e-05,
     6.8284851459573175448e-05, 2.4031110387097893999e-05, -0.0003550375203628474796,
     0.00095328937973738049703, -0.0016882755560235047313, 0.0024914420961078508066,
     -0.0037512085075692412107, 0.005370914553590063617, 1.0052589676941592334,
     3.0838856104922207635),
    (-2.7109920616438573243e-11, -2.5556418169965252055e-10, 1.5076572693500548083e-09,
     -3.7894654401267369937e-09, 7.6157012080783393804e-09, -1.4960026627149240478e-08,
     2.9147953450901080826e-08, -6.7711997758452339498e-08, 2.2900482228026654717e-07,
     -9.9298272942317002539e-07, 4.5260625972231537039e-06, -1.9681778105531670567e-05,
     7.5995277030017761139e-05, -0.00021503011930044477347, -0.00013871931833623122026,
     1.0103004648645343977, 4.8499064014085844221),
)
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
    tables = _ERFINV_F32 if single else _ERFINV_F64
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


def _bessel_i1e(single: bool) -> str:
    r = "float" if single else "double"
    a, b = (_I1E_A[-_I1E_TERMS_F32[0]:], _I1E_B[-_I1E_TERMS_F32[1]:]) if single else (
        _I1E_A, _I1E_B)

    def cheb(coeffs: str, n: int, arg: str) -> str:
        return (f"        const {r} v = {arg};\n        {r} b0 = 0, b1 = 0, b2 = 0;\n"
                f"        for (int i = 0; i < {n}; ++i) {{\n"
                f"            b2 = b1; b1 = b0; b0 = v * b1 - b2 + {coeffs}[i];\n        }}\n")

    half, two = _lit(0.5, single), _lit(2.0, single)
    return (f"{r} @NAME@({r} x) {{\n" + _array("a", a, r, single) + _array("b", b, r, single)
            + f"    const {r} z = fabs(x);\n    {r} y;\n"
            f"    if (z <= {_lit(8.0, single)}) {{\n"
            + cheb("a", len(a), f"{half} * z - {two}")
            + f"        y = z * ({half} * (b0 - b2));\n    }} else {{\n"
            + cheb("b", len(b), f"{_lit(32.0, single)} / z - {two}")
            + f"        y = ({half} * (b0 - b2)) / sqrt(z);\n    }}\n"
            "    return x < 0 ? -y : (x > 0 ? y : x);\n}\n")


_BUILDERS = {"erfinv": _erfinv, "digamma": _digamma, "bessel_i1e": _bessel_i1e}


def special_fn(unit: Unit, fn: str, t: ScalarType) -> str:
    """The name of the helper computing ``fn`` on ``t`` (f16/bf16 through ``float``)."""
    single = t.name != "f64"
    return unit.helper(f"{fn}_{'f32' if single else 'f64'}", _BUILDERS[fn](single))
