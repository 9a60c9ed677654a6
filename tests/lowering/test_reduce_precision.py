"""reduce_precision against the reference interpreter's bit algorithm, on the type's own
bits: rounding to nearest even (into the exponent at the overflow boundary), exponent
overflow to inf and underflow to zero, NaN kept (and +inf when no mantissa bits are left)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from tests.lowering.conftest import RNG, module, run

FORMATS = [(5, 10), (5, 0), (8, 7), (4, 3), (2, 1), (1, 0), (11, 52), (8, 0)]
TYPES = {  # name: (dtype, unsigned view, exponent bits, mantissa bits)
    "f16": (np.float16, np.uint16, 5, 10), "bf16": (ml_dtypes.bfloat16, np.uint16, 8, 7),
    "f32": (np.float32, np.uint32, 8, 23), "f64": (np.float64, np.uint64, 11, 52),
}


def reference(bits: int, width: int, src_e: int, src_m: int, e: int, m: int) -> int:
    """The reference interpreter's ``reducePrecision`` on one element's bits."""
    full = (1 << width) - 1
    exp_mask = ((1 << src_e) - 1) << src_m
    is_nan = (bits & exp_mask) == exp_mask and bits & ((1 << src_m) - 1)
    out = bits
    if m < src_m:
        last = 1 << (src_m - m)
        bias = ((out & last) >> (src_m - m)) + (last >> 1) - 1
        out = (out + bias) & ~(last - 1) & full
    if e < src_e:
        bias, reduced = (1 << (src_e - 1)) - 1, (1 << (e - 1)) - 1
        sign = out & (1 << (width - 1))
        if (out & exp_mask) > (bias + reduced) << src_m:
            out = sign | exp_mask
        if (out & exp_mask) <= (bias - reduced) << src_m:
            out = sign
    if is_nan:
        out = bits if m > 0 else exp_mask  # +inf
    return out


def _inputs(name: str) -> np.ndarray:
    dtype, view, src_e, src_m = TYPES[name]
    width = np.dtype(view).itemsize * 8
    top = 1 << (src_e + src_m)
    exp_mask = ((1 << src_e) - 1) << src_m
    special = [0, top, exp_mask, exp_mask | top, exp_mask | 1, exp_mask | (1 << (src_m - 1)),
               (1 << width) - 1, top - 1, 1, (1 << src_m) - 1, 1 << src_m]
    with np.errstate(over="ignore"):  # 3e38 is inf in f16
        floats = np.array([65504, 65505, 65519, 65520, 65536, 6.1e-5, 5.9e-5, 1.5, 2.5, 0.1,
                           -3.75, 1e-30, 3e38], np.float64).astype(dtype)
    rand = RNG.integers(0, 1 << min(width, 63), 300, dtype=np.uint64).astype(view)
    return np.concatenate([np.array(special, np.uint64).astype(view),
                           floats.view(view), rand]).view(dtype)


def _is_nan(bits: np.ndarray, src_e: int, src_m: int) -> np.ndarray:
    b = bits.astype(np.uint64)
    exp_mask = np.uint64(((1 << src_e) - 1) << src_m)
    return ((b & exp_mask) == exp_mask) & ((b & np.uint64((1 << src_m) - 1)) != 0)


@pytest.mark.parametrize("name", list(TYPES))
def test_reduce_precision_matches_reference(name: str) -> None:
    dtype, view, src_e, src_m = TYPES[name]
    x = _inputs(name)
    t = f"tensor<{x.size}x{name}>"
    body = "\n".join(f"  %r{i} = stablehlo.reduce_precision %x, format = e{e}m{m} : {t}"
                     for i, (e, m) in enumerate(FORMATS))
    names = ", ".join(f"%r{i}" for i in range(len(FORMATS)))
    results = ", ".join([t] * len(FORMATS))
    text = module(f"(%x: {t}) -> ({results})", f"{body}\n  return {names} : {results}")
    width = np.dtype(view).itemsize * 8
    for (e, m), got in zip(FORMATS, run(text, x), strict=True):
        want = np.array([reference(int(b), width, src_e, src_m, e, m) for b in x.view(view)],
                        np.uint64).astype(view)
        nan = _is_nan(got.view(view), src_e, src_m) & _is_nan(want, src_e, src_m)
        bad = (got.view(view) != want) & ~nan
        assert not bad.any(), (e, m, x[bad][:5], got[bad][:5], want.view(dtype)[bad][:5])
