"""OpenCL C spellings of tensor-language types and constants."""

from __future__ import annotations

import math
import re

from tensorlang.ir.types import AddressSpace, MemRefType, Number, ScalarType

_CTYPES = {
    "i1": "bool", "i8": "char", "i16": "short", "i32": "int", "i64": "long", "index": "long",
    "f32": "float", "f64": "double", "c32": "float2", "c64": "double2",
    "u8": "uchar", "u16": "ushort", "u32": "uint", "u64": "ulong",
    "f16": "float", "bf16": "float",  # computed in float, rounded to the type (numeric.py)
    **{name: "float" for name in (
        "f8e4m3fn f8e5m2 f8e4m3fnuz f8e5m2fnuz f8e4m3b11fnuz f8e4m3 f8e3m4 f8e8m0fnu "
        "f6e2m3fn f6e3m2fn f4e2m1fn").split()},
}
# bool cannot live in memory or be a kernel argument; f16/bf16 are stored as bit patterns
_STORAGE = {"i1": "char", "f16": "ushort", "bf16": "ushort"}  # narrow floats: uchar
_UNSIGNED = {"i8": "uchar", "i16": "ushort", "i32": "uint", "i64": "ulong", "index": "ulong"}
_REAL = {"c32": "f32", "c64": "f64"}

C_KEYWORDS = frozenset("""
auto break case char const continue default do double else enum extern float for goto if
inline int long register restrict return short signed sizeof static struct switch typedef
union unsigned void volatile while bool half kernel global local private constant read_only
write_only uchar ushort uint ulong float2 double2 true false half2 event_t sampler_t
image2d_t size_t ptrdiff_t barrier fmod mem_fence NAN INFINITY
""".split())


OPENCL_BUILTINS = frozenset("""
select min max clamp mad fma abs sqrt rsqrt exp exp2 log log2 sin cos tan pow pown dot
cross length normalize any all sign step smoothstep mix floor ceil round trunc printf
fabs fmin fmax hypot isnan isinf nan shuffle upsample rotate popcount work_group_barrier
main abs_diff acos acosh acospi add_sat asin asinh asinpi atan atan2 atan2pi atanh atanpi
bitselect cbrt clz copysign cospi cosh ctz degrees distance erf erfc exp10 expm1
fast_distance fast_length fast_normalize fdim fract frexp hadd ilogb isequal isfinite
isgreater isgreaterequal isless islessequal islessgreater isnormal isnotequal isordered
isunordered ldexp lgamma lgamma_r log10 log1p logb mad24 mad_hi mad_sat maxmag minmag modf
mul24 mul_hi nextafter powr radians read_mem_fence remainder remquo rhadd rint rootn
shuffle2 signbit sincos sinh sinpi sub_sat tanh tanpi tgamma to_global to_local to_private
vec_step write_mem_fence prefetch wait_group_events intptr_t uintptr_t bit_reverse
bitfield_extract_signed bitfield_extract_unsigned bitfield_insert
""".split())
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_VECTOR = re.compile(r"(bool|char|uchar|short|ushort|int|uint|long|ulong|half|float|double)"
                     r"(2|3|4|8|16)?\Z")
_PREFIXES = ("get_", "tlc_", "as_", "convert_", "atomic_", "atom_", "vload", "vstore",
             "native_", "half_", "work_group_", "sub_group_", "read_image", "write_image",
             "async_", "__")


def kernel_c_name(name: str) -> str:
    """The C name of the kernel of function ``@name``: the IR name when it is a plain
    OpenCL C identifier; ``tlc_kernel_<name>`` when it would clash with a C keyword, an
    OpenCL builtin or type, ``main`` or a tlc helper; ``tlc_k_<escaped>`` when it is no
    identifier at all (``@0``: each character outside [A-Za-z0-9] becomes ``_<hex>_``).

    The mapping is one-to-one, so distinct functions keep distinct kernels; the host
    API still calls a kernel by its IR name (``module.main``, ``getattr(module, "0")``).
    """
    if not _IDENT.match(name):
        return "tlc_k_" + "".join(c if c.isascii() and c.isalnum() else f"_{ord(c):x}_"
                                  for c in name)
    if (name in C_KEYWORDS or name in OPENCL_BUILTINS or _VECTOR.match(name)
            or name.startswith(_PREFIXES)):
        return f"tlc_kernel_{name}"
    return name


def ctype(t: ScalarType) -> str:
    """The C type of a scalar held in a variable."""
    return _CTYPES[t.name]


def storage_type(t: ScalarType) -> str:
    """The C type of a scalar held in memory or passed as a kernel argument."""
    return "uchar" if t.is_narrow else _STORAGE.get(t.name, _CTYPES[t.name])


def unsigned_ctype(t: ScalarType) -> str:
    """The unsigned C type of an integer type's width (wrapping arithmetic, bit tricks)."""
    return _UNSIGNED.get(t.name, _CTYPES[t.name])


def real_type(t: ScalarType) -> str:
    """The C type of a complex type's parts (the type itself for real types)."""
    return _CTYPES[_REAL.get(t.name, t.name)]


def address_space(t: MemRefType) -> str:
    """``global`` or ``local``."""
    return "local" if t.addrspace is AddressSpace.LOCAL else "global"


def pointer_type(t: MemRefType, const: bool = False) -> str:
    """``global float*`` for a memref's base pointer."""
    qual = "const " if const else ""
    return f"{address_space(t)} {qual}{storage_type(t.element)}*"


def float_literal(value: float, t: str) -> str:
    """A C literal of real type ``t`` ('float' or 'double')."""
    if math.isnan(value):
        text = "NAN"
    elif math.isinf(value):
        text = "INFINITY" if value > 0 else "(-INFINITY)"
    else:
        text = repr(float(value))
        if "e" not in text and "." not in text:
            text += ".0"
        text += "f" if t == "float" else ""
        return text if value >= 0 else f"({text})"
    return text if t == "float" else f"((double){text})"


def literal(value: Number, t: ScalarType) -> str:
    """A C literal for ``value`` of scalar type ``t`` (complex only when ``t`` is)."""
    if t.is_complex:
        z = complex(value)
        part = real_type(t)
        return f"(({ctype(t)})({float_literal(z.real, part)}, {float_literal(z.imag, part)}))"
    assert not isinstance(value, complex), f"complex value {value} for {t}"
    if t.is_float:
        return float_literal(_in_type(float(value), t), ctype(t))
    if t.is_bool:
        return "true" if value else "false"
    number = int(value)
    if t.is_unsigned:
        return f"{number % 2**t.bits}{'UL' if t.bits == 64 else 'U'}"
    if t.bits == 64:
        return f"({number}L)" if number < 0 else f"{number}L"
    return f"({number})" if number < 0 else str(number)


def _in_type(value: float, t: ScalarType) -> float:
    """``value`` rounded to a storage float (as ml_dtypes rounds); other types unchanged."""
    if not t.is_half:
        return value
    import numpy as np

    from tensorlang.ir.dtypes import storage_float_dtype

    dtype = storage_float_dtype(t.name)
    with np.errstate(over="ignore", invalid="ignore"):
        return float(np.float64(value).astype(dtype))


def zero(t: ScalarType) -> str:
    """The C literal 0 of type ``t``."""
    return literal(0, t)
