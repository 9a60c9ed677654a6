"""C helpers for the 16-bit storage floats f16 and bf16 (prelude features ``half:<t>``).

Values of f16 and bf16 live in ``float`` variables holding exactly representable
values; memory and kernel arguments hold the 16-bit patterns (``ushort``).  The helpers
convert bits <-> float and round a float to the type (round to nearest even, overflow
to infinity), by bit manipulation: no cl_khr_fp16 is needed.  A NaN keeps its sign and
the top bits of its payload, signalling or quiet, so that every 16-bit pattern survives
a load and a store bit for bit (bitcasts, copies, selects); a payload that would
truncate to zero becomes the quiet NaN.
``tlc_nextafter_<t>`` steps to the neighbouring 16-bit value.
``tlc_odd_f32_<ctype>`` rounds a wider value (double, 32/64-bit integers) to float with
round-to-odd, so that rounding it again to f16/bf16 is correct (no double rounding).
"""

from __future__ import annotations

from backend_opencl.emit import narrowfloat

_F16 = """float tlc_f16_to_f32(ushort h) {
    const uint sign = ((uint)h & 0x8000u) << 16;
    const uint e = ((uint)h >> 10) & 0x1fu;
    const uint m = (uint)h & 0x3ffu;
    if (e == 0x1fu) return as_float(sign | 0x7f800000u | (m << 13));
    if (e == 0) return as_float(sign | as_uint((float)m * 5.9604644775390625e-8f));
    return as_float(sign | ((e + 112u) << 23) | (m << 13));
}

ushort tlc_f32_to_f16(float f) {
    const uint x = as_uint(f);
    const uint sign = (x >> 16) & 0x8000u;
    const uint ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) {
        const uint payload = (ax >> 13) & 0x3ffu;
        return (ushort)(sign | 0x7c00u | (payload ? payload : 0x200u));
    }
    if (ax >= 0x477ff000u) return (ushort)(sign | 0x7c00u);
    if (ax < 0x38800000u) return (ushort)(sign | (as_uint(as_float(ax) + 0.5f) - 0x3f000000u));
    return (ushort)(sign | ((ax - 0x38000000u + 0xfffu + ((ax >> 13) & 1u)) >> 13));
}

float tlc_round_f16(float f) { return tlc_f16_to_f32(tlc_f32_to_f16(f)); }
"""

_BF16 = """float tlc_bf16_to_f32(ushort h) { return as_float((uint)h << 16); }

ushort tlc_f32_to_bf16(float f) {
    const uint x = as_uint(f);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (ushort)((x >> 16) | ((x & 0x7f0000u) ? 0u : 0x40u));
    return (ushort)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

float tlc_round_bf16(float f) { return tlc_bf16_to_f32(tlc_f32_to_bf16(f)); }
"""

_NEXTAFTER = """float tlc_nextafter_{t}(float x, float y) {{
    if (x != x || y != y) return x + y;
    if (x == y) return y;
    {s} bits = tlc_f32_to_{t}(x);
    if (x == 0) bits = y > 0 ? ({s})1 : ({s}){neg};
    else if ((x < y) == (x > 0)) bits += 1;
    else bits -= 1;
    return tlc_{t}_to_f32(bits);
}}
"""

_ODD = """float tlc_odd_f32_{c}({c} x) {{
    float t = convert_float_rtz(x);
    if (({c})t != x && t == t) t = as_float(as_uint(t) | 1u);
    return t;
}}
"""

ODD_SOURCES = ("double", "int", "uint", "long", "ulong")
"""C types that need round-to-odd before rounding to a 16-bit float."""


def helpers(features: set[str]) -> list[str]:
    """The helper texts for the ``half:<t>`` (f16, bf16, narrow floats: narrowfloat.py)
    and ``odd:<ctype>`` features."""
    texts = []
    if "half:f16" in features:
        texts += [_F16, _NEXTAFTER.format(t="f16", s="ushort", neg="0x8001")]
    if "half:bf16" in features:
        texts += [_BF16, _NEXTAFTER.format(t="bf16", s="ushort", neg="0x8001")]
    for t in narrowfloat.NARROW_FLOATS:
        if f"half:{t}" in features:
            neg = hex(narrowfloat.negative_min_code(t))
            texts += [narrowfloat.helper_text(t), _NEXTAFTER.format(t=t, s="uchar", neg=neg)]
    texts += [_ODD.format(c=c) for c in ODD_SOURCES if f"odd:{c}" in features]
    return texts


def load(type_name: str, bits: str) -> str:
    """The float value of the 16-bit pattern ``bits`` of ``type_name`` (f16 or bf16)."""
    return f"tlc_{type_name}_to_f32({bits})"


def store(type_name: str, value: str) -> str:
    """The 16-bit pattern of the float ``value`` rounded to ``type_name``."""
    return f"tlc_f32_to_{type_name}({value})"


def round_to(type_name: str, value: str) -> str:
    """The float ``value`` rounded to ``type_name`` (still a float)."""
    return f"tlc_round_{type_name}({value})"
