"""Exact numpy references for the extension tests: 16-bit floats, integer semantics."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np

DTYPES = {"f16": np.float16, "bf16": ml_dtypes.bfloat16, "u8": np.uint8, "u16": np.uint16,
          "u32": np.uint32, "u64": np.uint64, "i8": np.int8, "i16": np.int16, "i32": np.int32,
          "i64": np.int64, "index": np.int64, "f32": np.float32, "f64": np.float64,
          "c32": np.complex64, "c64": np.complex128, "i1": np.bool_}
_FORMAT = {"f16": (11, -14, 15), "bf16": (8, -126, 127), "f32": (24, -126, 127)}
"""precision p (with the implicit bit), min normal exponent, max exponent."""


def round_exact(x: float | int, t: str) -> float:
    """``x`` (a double or an integer, exactly) rounded to nearest even in float type ``t``."""
    if isinstance(x, float) and (math.isnan(x) or math.isinf(x)):
        return x
    p, emin, emax = _FORMAT[t]
    num, den = (x, 1) if isinstance(x, int) else float(x).as_integer_ratio()
    sign = -1.0 if num < 0 else 1.0
    num = abs(num)
    if num == 0:
        return math.copysign(0.0, x) if isinstance(x, float) else 0.0
    e = num.bit_length() - den.bit_length()  # 2^e <= num/den < 2^(e+2)
    if num < den << e if e >= 0 else num << -e < den:
        e -= 1
    e = max(e, emin)
    shift = p - 1 - e  # scale so that the unit in the last place is 1
    scaled_num, scaled_den = (num << shift, den) if shift >= 0 else (num, den << -shift)
    q, r = divmod(scaled_num, scaled_den)
    if 2 * r > scaled_den or (2 * r == scaled_den and q % 2 == 1):
        q += 1
    try:
        value = math.ldexp(q, -shift)
    except OverflowError:  # rounds beyond the largest double: certainly beyond the type
        value = math.inf
    limit = (2 - 2.0 ** (1 - p)) * 2.0 ** emax
    return sign * (math.inf if value > limit else value)


def to_float(values: np.ndarray, t: str) -> np.ndarray:
    """Each element (int or double) rounded exactly to float type ``t``."""
    flat = [round_exact(v.item() if hasattr(v, "item") else v, t)
            for v in np.asarray(values).ravel()]
    return np.array(flat, dtype=np.float64).astype(DTYPES[t]).reshape(np.shape(values))


def float_to_int(x: np.ndarray, t: str) -> np.ndarray:
    """Truncate toward zero, saturate, NaN -> 0."""
    info = np.iinfo(DTYPES[t])
    x = np.asarray(x, dtype=np.float64)
    out = []
    for v in x.ravel():
        if math.isnan(v):
            out.append(0)
        elif v >= info.max:
            out.append(info.max)
        elif v <= info.min:
            out.append(info.min)
        else:
            out.append(int(v))
    return np.array(out, dtype=DTYPES[t]).reshape(x.shape)


def wrap(values: list[int], t: str) -> np.ndarray:
    """Python integers reduced modulo 2^bits into integer type ``t``."""
    dtype = np.dtype(DTYPES[t])
    bits = dtype.itemsize * 8
    out = [v % 2**bits for v in values]
    if dtype.kind == "i":
        out = [v - 2**bits if v >= 2 ** (bits - 1) else v for v in out]
    return np.array(out, dtype=dtype)


def int_div(a: int, b: int, t: str) -> int:
    """StableHLO division: truncating, x/0 = -1, INT_MIN/-1 = INT_MIN (after wrapping)."""
    if b == 0:
        return -1
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def int_rem(a: int, b: int) -> int:
    """StableHLO remainder: sign of the dividend, x rem 0 = x."""
    if b == 0:
        return a
    r = abs(a) % abs(b)
    return r if a >= 0 else -r


def shift(op: str, a: int, s: int, bits: int, signed: bool) -> int:
    """shl / shr with out-of-range amounts giving 0 or the sign fill."""
    if not 0 <= s < bits:
        return -1 if (op == "shr" and signed and a < 0) else 0
    if op == "shl":
        return a << s
    if signed:
        return a >> s
    return (a % 2**bits) >> s
