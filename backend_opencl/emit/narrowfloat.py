"""C helpers for the 8-, 6- and 4-bit storage floats (prelude features ``half:<t>``).

Like f16/bf16 (halfprec.py), values live in ``float`` variables holding exactly
representable values; memory and kernel arguments hold one byte per element (``uchar``,
the low bits). Conversions follow ml_dtypes bit for bit: round to nearest even, and per
format family (``STYLE``):

* ``ieee`` (f8e5m2, f8e4m3, f8e3m4): infinities and NaNs as in IEEE 754; overflow gives
  infinity, NaN becomes the quiet NaN of its sign;
* ``fn`` (f8e4m3fn): no infinities; the all-ones codes are NaN; overflow and infinity
  give NaN (of the sign);
* ``fnuz`` (f8e4m3fnuz, f8e5m2fnuz, f8e4m3b11fnuz): no infinities, no negative zero; the
  code 0x80 is the only NaN; overflow, infinity and NaN give it, -0 becomes +0;
* ``none`` (f4e2m1fn, f6e2m3fn, f6e3m2fn): no infinities or NaN; overflow and infinity
  saturate to the largest value, NaN becomes a zero of the opposite sign (as ml_dtypes);
* f8e8m0fnu: an unsigned power of two ``2^(code - 127)``; 0xFF is NaN, as are negative
  numbers, zeros, NaN and values beyond 2^127; rounding in the exponent ties away.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Format:
    """A narrow float: exponent and mantissa bits, exponent bias, special-value style."""

    exponent: int
    mantissa: int
    bias: int
    style: str

    @property
    def sign_shift(self) -> int:
        """The position of the sign bit."""
        return self.exponent + self.mantissa

    @property
    def max_code(self) -> int:
        """The code of the largest finite value (sign clear)."""
        ones = (1 << self.sign_shift) - 1
        if self.style == "ieee":
            return (((1 << self.exponent) - 2) << self.mantissa) | ((1 << self.mantissa) - 1)
        return ones - 1 if self.style == "fn" else ones


FORMATS = {
    "f8e4m3fn": Format(4, 3, 7, "fn"), "f8e5m2": Format(5, 2, 15, "ieee"),
    "f8e4m3fnuz": Format(4, 3, 8, "fnuz"), "f8e5m2fnuz": Format(5, 2, 16, "fnuz"),
    "f8e4m3b11fnuz": Format(4, 3, 11, "fnuz"), "f8e4m3": Format(4, 3, 7, "ieee"),
    "f8e3m4": Format(3, 4, 3, "ieee"), "f4e2m1fn": Format(2, 1, 1, "none"),
    "f6e2m3fn": Format(2, 3, 1, "none"), "f6e3m2fn": Format(3, 2, 3, "none"),
}
NARROW_FLOATS = (*FORMATS, "f8e8m0fnu")
"""The tensor-language names of the narrow storage floats."""


def _specials(f: Format) -> tuple[str, str, str]:
    """C expressions (of ``sign``) for NaN, infinity and overflow results."""
    s, m, e = f.sign_shift, f.mantissa, f.exponent
    inf_code = ((1 << e) - 1) << m
    if f.style == "ieee":
        nan = f"(sign << {s}) | {inf_code | (1 << (m - 1))}u"
        inf = f"(sign << {s}) | {inf_code}u"
        return nan, inf, inf
    if f.style == "fn":
        nan = f"(sign << {s}) | {(1 << s) - 1}u"
        return nan, nan, nan
    if f.style == "fnuz":
        return "0x80u", "0x80u", "0x80u"
    top = f"(sign << {s}) | {f.max_code}u"
    return f"((sign ^ 1u) << {s})", top, top


def _scale(f: Format) -> float:
    """2^(bias - 1 + mantissa): the smallest subnormal's reciprocal (subnormal codes)."""
    return float(2 ** (f.bias - 1 + f.mantissa))


def _encode(name: str, f: Format) -> str:
    nan, inf, over = _specials(f)
    shift = 23 - f.mantissa
    zero = "    if (code == 0) return 0;\n" if f.style == "fnuz" else ""
    return (f"uchar tlc_f32_to_{name}(float v) {{\n"
            "    const uint x = as_uint(v), sign = x >> 31, ax = x & 0x7fffffffu;\n"
            f"    if (ax > 0x7f800000u) return (uchar)({nan});\n"
            f"    if (ax == 0x7f800000u) return (uchar)({inf});\n"
            "    uint code;\n"
            f"    if ((ax >> 23) >= {128 - f.bias}u) {{\n"
            f"        const uint t = ax - {(127 - f.bias) << 23}u;\n"
            f"        code = (t + {(1 << (shift - 1)) - 1}u + ((t >> {shift}) & 1u))"
            f" >> {shift};\n"
            "    } else {\n"
            f"        code = (uint)rint(as_float(ax) * {_scale(f)!r}f);\n"
            "    }\n"
            f"    if (code > {f.max_code}u) return (uchar)({over});\n{zero}"
            f"    return (uchar)((sign << {f.sign_shift}) | code);\n}}\n")


def _decode(name: str, f: Format) -> str:
    s, m, e = f.sign_shift, f.mantissa, f.exponent
    special = {
        "ieee": f"    if (ex == {(1 << e) - 1}u) return as_float(sign | 0x7f800000u"
                f" | (mant << {23 - m}));\n",
        "fn": f"    if ((c & {(1 << s) - 1}u) == {(1 << s) - 1}u)"
              " return as_float(sign | 0x7fc00000u);\n",
        "fnuz": "    if (c == 0x80u) return NAN;\n",
        "none": "",
    }[f.style]
    tiny = float(2.0 ** (1 - f.bias - m))
    return (f"float tlc_{name}_to_f32(uchar b) {{\n"
            f"    const uint c = (uint)b, sign = ((c >> {s}) & 1u) << 31;\n"
            f"    const uint ex = (c >> {m}) & {(1 << e) - 1}u, mant = c & {(1 << m) - 1}u;\n"
            + special
            + f"    if (ex == 0) return as_float(sign | as_uint((float)mant * {tiny!r}f));\n"
            f"    return as_float(sign | ((ex + {127 - f.bias}u) << 23)"
            f" | (mant << {23 - m}));\n}}\n")


_E8M0 = """uchar tlc_f32_to_f8e8m0fnu(float v) {
    const uint x = as_uint(v);
    if ((x >> 31) != 0 || x == 0 || x >= 0x7f800000u) return (uchar)0xffu;
    const uint e = x >> 23, mant = x & 0x7fffffu;
    if (e == 0) return (uchar)(mant > 0x400000u ? 1u : 0u);
    const uint code = e + (mant >= 0x400000u ? 1u : 0u);
    return (uchar)(code >= 255u ? 255u : code);
}

float tlc_f8e8m0fnu_to_f32(uchar b) {
    if (b == 0xffu) return NAN;
    return as_float(b == 0 ? 0x400000u : (uint)b << 23);
}
"""


def negative_min_code(name: str) -> int:
    """The code of the negative value nearest zero (f8e8m0fnu has none: 1, unused)."""
    return 1 if name == "f8e8m0fnu" else (1 << FORMATS[name].sign_shift) | 1


def helper_text(name: str) -> str:
    """The conversion and rounding helpers of the narrow float ``name``."""
    body = _E8M0 if name == "f8e8m0fnu" else _encode(name, FORMATS[name]) + "\n" + _decode(
        name, FORMATS[name])
    return (body + f"\nfloat tlc_round_{name}(float f) "
            f"{{ return tlc_{name}_to_f32(tlc_f32_to_{name}(f)); }}\n")
