"""Helper functions for complex ``math.<fn>`` (registered per program through the unit).

Each template is written once for ``C`` (float2/double2) and ``R`` (float/double); ``F``
is the literal suffix (``f`` for float).  Formulas are chosen for accuracy: ``log1p``
and ``expm1`` avoid cancellation near 0, ``tanh`` is Kahan's (no cosh overflow),
``sqrt`` the stable half-angle form, ``sinh``/``cosh`` by real and imaginary parts;
the inverse functions ``asin acos asinh acosh atan atanh`` are Kahan's (square roots of
``1 -+ z`` instead of ``sqrt(1 - z^2)``; ``atanh`` through ``log1p`` of a positive
argument, odd in the real part).
"""

from __future__ import annotations

import re

from backend_opencl.emit import prelude
from backend_opencl.emit.unit import Unit
from tensorlang.ir.types import ScalarType

_TEMPLATES = {
    "exp": """C @NAME@(C z) {
    const R e = exp(z.x);
    if (z.y == 0) return (C)(e, z.y);
    return (C)(e * cos(z.y), e * sin(z.y));
}
""",
    "log": """C @NAME@(C z) { return (C)(log(hypot(z.x, z.y)), atan2(z.y, z.x)); }
""",
    "sqrt": """C @NAME@(C z) {
    const R x = z.x, y = z.y;
    if (x == 0 && y == 0) return (C)(0.0F, y);
    const R t = sqrt((fabs(x) + hypot(x, y)) * 0.5F);
    if (x >= 0) return (C)(t, y / (2.0F * t));
    return (C)(fabs(y) / (2.0F * t), copysign(t, y));
}
""",
    "sin": """C @NAME@(C z) { return (C)(sin(z.x) * cosh(z.y), cos(z.x) * sinh(z.y)); }
""",
    "cos": """C @NAME@(C z) { return (C)(cos(z.x) * cosh(z.y), -(sin(z.x) * sinh(z.y))); }
""",
    "tanh": """C @NAME@(C z) {
    const R x = z.x, y = z.y;
    if (fabs(x) > BIG) return (C)(copysign(1.0F, x), copysign(0.0F, sin(2.0F * y)));
    const R t = tan(y);
    const R b = 1.0F + t * t;
    const R s = sinh(x);
    const R r = sqrt(1.0F + s * s);
    const R d = 1.0F + b * s * s;
    return (C)(b * r * s / d, t / d);
}
""",
    "log1p": """C @NAME@(C z) {
    const R x = z.x, y = z.y;
    const R re = fabs(x) + fabs(y) < 0.5F ? 0.5F * log1p(x * (2.0F + x) + y * y)
                                          : log(hypot(1.0F + x, y));
    return (C)(re, atan2(y, 1.0F + x));
}
""",
    "expm1": """C @NAME@(C z) {
    const R s = sin(0.5F * z.y);
    return (C)(expm1(z.x) * cos(z.y) - 2.0F * s * s, exp(z.x) * sin(z.y));
}
""",
    "sign": """C @NAME@(C z) {
    if (z.x == 0 && z.y == 0) return z;
    const R h = hypot(z.x, z.y);
    return (C)(z.x / h, z.y / h);
}
""",
    "sinh": """C @NAME@(C z) { return (C)(sinh(z.x) * cos(z.y), cosh(z.x) * sin(z.y)); }
""",
    "cosh": """C @NAME@(C z) { return (C)(cosh(z.x) * cos(z.y), sinh(z.x) * sin(z.y)); }
""",
}

_BINARY = {
    "max": """C @NAME@(C a, C b) {
    return (a.x > b.x || (a.x == b.x && a.y > b.y) || a.x != a.x || a.y != a.y) ? a : b;
}
""",
    "min": """C @NAME@(C a, C b) {
    return (a.x < b.x || (a.x == b.x && a.y < b.y) || a.x != a.x || a.y != a.y) ? a : b;
}
""",
}

_ASIN = """    const C s1 = SQRT((C)(1.0F - z.x, -z.y)), s2 = SQRT((C)(1.0F + z.x, z.y));
    const R re = atan2(z.x, s1.x * s2.x - s1.y * s2.y);
    const R im = asinh(s1.x * s2.y - s1.y * s2.x);
"""
_ATANH = """    const R x = z.x, y = z.y, ax = fabs(x), u = 1.0F - ax;
    const R re = copysign(0.25F * log1p(4.0F * ax / (u * u + y * y)), x);
    const R im = 0.5F * atan2(2.0F * y, u * (1.0F + ax) - y * y);
"""
_INVERSE = {  # Kahan's formulas ("Branch cuts for complex elementary functions", 1987)
    "asin": "C @NAME@(C z) {\n" + _ASIN + "    return (C)(re, im);\n}\n",
    "asinh": "C @NAME@(C w) {\n    const C z = (C)(-w.y, w.x);\n" + _ASIN
             + "    return (C)(im, -re);\n}\n",
    "acos": """C @NAME@(C z) {
    const C s1 = SQRT((C)(1.0F - z.x, -z.y)), s2 = SQRT((C)(1.0F + z.x, z.y));
    return (C)(2.0F * atan2(s1.x, s2.x), asinh(s2.x * s1.y - s2.y * s1.x));
}
""",
    "acosh": """C @NAME@(C z) {
    const C s1 = SQRT((C)(z.x - 1.0F, z.y)), s2 = SQRT((C)(z.x + 1.0F, z.y));
    return (C)(asinh(s1.x * s2.x + s1.y * s2.y), 2.0F * atan2(s1.y, s2.x));
}
""",
    "atanh": "C @NAME@(C z) {\n" + _ATANH + "    return (C)(re, im);\n}\n",
    "atan": "C @NAME@(C w) {\n    const C z = (C)(-w.y, w.x);\n" + _ATANH
            + "    return (C)(im, -re);\n}\n",
}

_COMPOSED = {
    **_INVERSE,
    "tan": "C @NAME@(C z) { const C t = TANH((C)(-z.y, z.x)); return (C)(t.y, -t.x); }\n",
    "rsqrt": "C @NAME@(C z) { return CDIV((C)(1.0F, 0.0F), SQRT(z)); }\n",
    "cbrt": "C @NAME@(C z) {\n"
            "    if (z.x == 0 && z.y == 0) return z;\n"
            "    const C l = LOG(z);\n    return EXP((C)(l.x / 3.0F, l.y / 3.0F));\n}\n",
    "logistic": "C @NAME@(C z) {\n    const C e = EXP((C)(-z.x, -z.y));\n"
                "    return CDIV((C)(1.0F, 0.0F), (C)(1.0F + e.x, e.y));\n}\n",
    "atan2": "C @NAME@(C y, C x) {\n"
             "    const C n = (C)(x.x - y.y, x.y + y.x);\n"
             "    const C d = SQRT(CMUL(x, x) + CMUL(y, y));\n"
             "    const C l = LOG(CDIV(n, d));\n    return (C)(l.y, -l.x);\n}\n",
}


def _fill(text: str, t: ScalarType) -> str:
    """Instantiate a template: ``C``, ``R``, ``BIG`` and the ``F`` literal suffix."""
    single = t.name == "c32"
    words = {"C": "float2" if single else "double2", "R": "float" if single else "double",
             "BIG": "10.0f" if single else "22.0"}  # beyond it, tanh(re z) rounds to +-1
    text = re.sub(r"\b(C|R|BIG)\b", lambda m: words[m.group(1)], text)
    return re.sub(r"(\d\.\d+)F\b", r"\1f" if single else r"\1", text)


def complex_fn(unit: Unit, fn: str, t: ScalarType) -> str:
    """The name of the helper computing complex ``fn`` on ``t`` (c32 or c64)."""
    unit.need(f"complex:{t.name}")
    text = _COMPOSED.get(fn)
    if text is None:
        return unit.helper(f"c{fn}_{t.name}", _fill({**_TEMPLATES, **_BINARY}[fn], t))
    for word in _INNER:
        if word in text:
            text = text.replace(word, complex_fn(unit, word.lower(), t))
    text = text.replace("CDIV", prelude.cdiv(t.name)).replace("CMUL", prelude.cmul(t.name))
    return unit.helper(f"c{fn}_{t.name}", _fill(text, t))


_INNER = ("TANH", "SQRT", "EXP", "LOG")
"""Helpers the composed templates call, by their placeholder."""


def complex_exp_with(unit: Unit, t: ScalarType, sincos: str, exp: str = "exp") -> str:
    """Complex ``exp`` taking ``(sin y, cos y)`` from the helper ``sincos`` and ``e^x``
    from ``exp``, with selects instead of an early return (a loop calling it stays
    vectorisable)."""
    unit.need(f"complex:{t.name}")
    text = ("__attribute__((always_inline)) C @NAME@(C z) {\n"
            f"    const R e = {exp}(z.x);\n    const {'float2' if t.name == 'c32' else 'double2'}"
            f" sc = {sincos}(z.y);\n"
            "    const R re = z.y == 0 ? e : e * sc.y;\n"
            "    const R im = z.y == 0 ? z.y : e * sc.x;\n"
            "    return (C)(re, im);\n}\n")
    return unit.helper(f"cexp_{t.name}", _fill(text, t))


def complex_pow(unit: Unit, t: ScalarType) -> str:
    """The helper for complex ``pow(a, b) = exp(b log a)`` (``0^0 = 1``, ``0^b = 0``)."""
    exp, log = complex_fn(unit, "exp", t), complex_fn(unit, "log", t)
    text = ("C @NAME@(C a, C b) {\n"
            "    if (a.x == 0 && a.y == 0)\n"
            "        return (b.x == 0 && b.y == 0) ? (C)(1.0F, 0.0F) : (C)(0.0F, 0.0F);\n"
            f"    return {exp}({prelude.cmul(t.name)}(b, {log}(a)));\n}}\n")
    return unit.helper(f"cpow_{t.name}", _fill(text, t))
