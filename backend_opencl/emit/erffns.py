"""Vectorisable double-precision ``erfc``, ``erf`` (f64) and ``erfinv``.

PoCL's ``erfc`` (and double ``erf``) are scalar calls that keep a kernel's loop scalar
(exact GELU, through ``chlo.erfc``, took 12-15 ms per 128k floats on the 2-core VM).
These helpers compute in double, branch-free (selects only, the builtin ``exp`` and
``sqrt`` being vectorised), for f64 and, rounding once, for f32 (and f16/bf16 through
float) on CPU devices with fp64:

* ``erfc(x) = e^(-x^2) erfcx(|x|)`` and ``2 - erfc(-x)`` for ``x < 0``: one path for every
  argument.  ``erfcx(a) = t G(t)`` in ``t = 3 / (3 + a)``, ``G`` a polynomial fitted to
  mpmath's values by Chebyshev interpolation (in ``(t - mid) / half``): f32 one piece of
  degree 11 on ``a <= 12`` (relative error 2^-32), f64 two of degree 16 on ``a <= 27.3``
  (2^-51.7 evaluated in double) whose coefficients are selected per lane.  f64 splits
  ``a = h + l`` with ``h`` of 26 bits so that ``h^2`` is exact:
  ``e^(-a^2) = e^(-h^2) e^(-(a - h)(a + h))``, the second factor by its cubic Taylor
  polynomial (``|(a - h)(a + h)| < 2^-15``).  Within 2-3 ulp (f64) and 0.5 ulp + 2^-32
  (f32), to the underflow of the result.
* ``erf`` (f64; f32 has its float helper): ``x E(x^2)`` for ``|x| < 1`` (``E`` of
  degree 12 fitted the same way, 2^-52), else ``+-(1 - erfc(|x|))`` (``erfc(1)`` is
  0.16: the subtraction keeps erfc's error small).
* ``erfinv``: M. Giles, "Approximating the erfinv function" (GPU Computing Gems, 2011), as
  XLA: ``w = -log((1 - x)(1 + x))``, then ``x`` times a polynomial in ``w - c`` or
  ``sqrt(w) - c``, two pieces (f32's coefficients) or three (f64's) whose coefficients
  are selected per lane, with the accurate double ``log`` of :mod:`gammafns`.
"""

from __future__ import annotations

from backend_opencl.emit.floatfns import _exp_double  # the float helpers' double exp
from backend_opencl.emit.gammafns import INLINE, lit, log_double, poly, poly_select
from backend_opencl.emit.unit import Unit

ERFINV_F32 = (
    (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087,
     -0.00125372503, -0.00417768164, 0.246640727, 1.50140941),
    (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
     -0.0076224613, 0.00943887047, 1.00167406, 2.83297682),
)
"""Giles' single-precision pieces (highest power first): ``w < 5`` in ``w - 2.5``, else
in ``sqrt(w) - 3``."""
ERFINV_F64 = (
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
"""Giles' double-precision pieces (highest power first): ``w < 6.25`` in ``w - 3.125``,
``w < 16`` in ``sqrt(w) - 3.25``, else in ``sqrt(w) - 5``."""

_ERFCX_F32 = (0.6, 0.4, (
    0.4256594605230976, 0.3095407032347055, 0.17222212764793438, 0.07107384403844876,
    0.019760344736087197, 0.0024730119443779246, -0.000511851772452833,
    -0.0002395458464059619, 5.168297079363196e-06, 1.757741541640592e-05,
    3.031133734403611e-07, -1.143370204220038e-06))
"""``G(t) = erfcx(3/t - 3) / t`` on ``t`` in ``[0.2, 1]`` (``a <= 12``) as (mid, half,
coefficients in ``(t - mid) / half``, lowest power first): Chebyshev interpolation at 12
nodes of mpmath's values (relative error 2^-32)."""
_ERFCX_F64_EDGE = 0.5495049504950495
"""f64's two pieces meet at this ``t`` (``a = 2.459``)."""
_ERFCX_F64_LO = (0.32425742574257427, 0.22524752475247528, (
    0.2748744214498525, 0.08481876892915738, 0.022989375028992134, 0.00533905509699766,
    0.0010162131488494082, 0.00014358975644066432, 1.0400477890727806e-05,
    -1.1203764090796158e-06, -4.266600929031082e-07, -3.161929131560063e-08,
    8.451558874147471e-09, 1.952419979863264e-09, -1.0175625238927868e-10,
    -7.948775400319092e-11, -1.4515113822975404e-12, 2.7135771266688565e-12,
    1.5845338878835792e-13))
"""``G`` on ``t`` in ``[3/30.3, edge]`` (``2.459 <= a <= 27.3``), degree 16 (2^-51.7)."""
_ERFCX_F64_HI = (0.7747524752475248, 0.22524752475247523, (
    0.6004446470138424, 0.28589521295642956, 0.09186761482803855, 0.019496133570969663,
    0.002317330856073661, 1.5492270657774483e-05, -3.506309238777516e-05,
    -2.0047013159113637e-06, 6.115541166523852e-07, 3.846518811455892e-08,
    -1.3756643855636212e-08, -2.7370558492392617e-10, 3.318214851231248e-10,
    -1.7452133556685995e-11, -6.65320072489572e-12, 9.572675984834837e-13,
    6.342332283745179e-14))
"""``G`` on ``t`` in ``[edge, 1]`` (``a <= 2.459``), degree 16 (2^-51.7)."""
_ERF_F64 = (0.9654687386698673, -0.1405360890227171, 0.019852496688983708,
            -0.0022854855611441132, 0.00021751715604159932, -1.7537169441124866e-05,
            1.223382738359897e-06, -7.511569286591727e-08, 4.115800583208149e-09,
            -2.035228405815769e-10, 9.167619596865806e-12, -3.8078824063194953e-13,
            1.4543887079465116e-14)
"""``erf(x) / x`` in ``2 x^2 - 1`` for ``|x| <= 1`` (degree 12, 2^-52)."""


def erfc_single(unit: Unit) -> str:
    """``erfc`` of a float, in double with the float helpers' ``exp`` (2^-34.5; the
    builtin's full accuracy is not needed): within 0.5 ulp + 2^-32 as a float."""
    mid, half, coeffs = _ERFCX_F32
    exp = _exp_double(unit)
    return unit.helper("erfc_fd", INLINE + f"""double @NAME@(double x) {{
    const double a0 = fabs(x);
    const double a = a0 > 12.0 ? 12.0 : a0;
    const double t = 3.0 / (3.0 + a);
    const double s = (t - {lit(mid)}) * {lit(1 / half)};
    const double e = {exp}(-a * a) * t * {poly("s", coeffs)};
    return x < 0 ? 2.0 - e : e;
}}
""")


def erfc_double(unit: Unit) -> str:
    """``erfc`` of a double (within a few ulp down to the result's underflow)."""
    (mid_lo, half, lo), (mid_hi, _, hi) = _ERFCX_F64_LO, _ERFCX_F64_HI
    return unit.helper("erfc_d", INLINE + f"""double @NAME@(double x) {{
    const double a0 = fabs(x);
    const double a = a0 > 27.3 ? 27.3 : a0;
    const double t = 3.0 / (3.0 + a);
    const int up = t >= {lit(_ERFCX_F64_EDGE)};
    const double s = (t - (up ? {lit(mid_hi)} : {lit(mid_lo)})) * {lit(1 / half)};
    const double g = t * {poly_select("s", ("up",), (hi, lo))};
    const double h = as_double(as_ulong(a) & 0xfffffffff8000000UL);
    const double d = (a - h) * (a + h);
    const double e = exp(-h * h) * (g - g * d * (1.0 - d * (0.5 - d * {lit(1 / 6)})));
    const double r = a0 > 27.3 ? 0.0 : e;
    return x < 0 ? 2.0 - r : r;
}}
""")


def erf_double(unit: Unit) -> str:
    """``erf`` of a double: the series near 0, ``1 - erfc`` beyond."""
    erfc = erfc_double(unit)
    return unit.helper("erf_d", INLINE + f"""double @NAME@(double x) {{
    const double a = fabs(x);
    const double tail = 1.0 - {erfc}(a);
    const double big = as_double(as_ulong(tail) | (as_ulong(x) & 0x8000000000000000UL));
    return a < 1.0 ? x * {poly("(2.0 * (x * x) - 1.0)", _ERF_F64)} : big;
}}
""")


def _erfinv_pieces(single: bool) -> tuple[str, str]:
    """The C of the argument ``v`` of the selected piece and of its polynomial in ``v``."""
    tables = tuple(tuple(c[::-1]) for c in (ERFINV_F32 if single else ERFINV_F64))
    if single:
        return ("(w < 5.0 ? w - 2.5 : sqrt(w) - 3.0)",
                poly_select("v", ("(w < 5.0)",), tables))
    return ("(w < 6.25 ? w - 3.125 : sqrt(w) - (w < 16.0 ? 3.25 : 5.0))",
            poly_select("v", ("(w < 6.25)", "(w < 16.0)"), tables))


def erfinv_double(unit: Unit, single: bool) -> str:
    """``erfinv`` in double with Giles' single (``single``) or double coefficients."""
    log = log_double(unit)
    arg, p = _erfinv_pieces(single)
    name = "erfinv_fd" if single else "erfinv_d"
    return unit.helper(name, INLINE + f"""double @NAME@(double x) {{
    const double w = -{log}((1.0 - x) * (1.0 + x));
    const double v = {arg};
    return fabs(x) == 1.0 ? x * INFINITY : {p} * x;
}}
""")
