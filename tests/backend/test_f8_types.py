"""The narrow storage floats (f8/f6/f4 and f8e8m0fnu): conversions to and from f32 are
bit-exact against ml_dtypes (all 256 codes; f32 halfway cases, subnormals, overflow,
infinities and NaN), arithmetic rounds to the type, and f64 converts without double
rounding."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import backend_opencl
from tensorlang.ir.dtypes import NARROW_DTYPES

NAMES = sorted(NARROW_DTYPES)


def _source(t: str) -> str:
    return f"""
func @decode_{t}(%a: memref<{t}x?>, %out: memref<f32x?>) work_group_size(4, 1) {{
  %zero = constant 0 : index
  %n = size %a[0] : memref<{t}x?>
  foreach %i = %zero, %n {{
    %x = load %a[%i] : memref<{t}x?>
    %y = cast %x : {t} -> f32
    store %y, %out[%i] : memref<f32x?>
  }}
}}

func @encode_{t}(%a: memref<f32x?>, %d: memref<f64x?>, %out: memref<{t}x?>,
                 %outd: memref<{t}x?>) work_group_size(4, 1) {{
  %zero = constant 0 : index
  %n = size %a[0] : memref<f32x?>
  foreach %i = %zero, %n {{
    %x = load %a[%i] : memref<f32x?>
    %y = cast %x : f32 -> {t}
    store %y, %out[%i] : memref<{t}x?>
    %w = load %d[%i] : memref<f64x?>
    %z = cast %w : f64 -> {t}
    store %z, %outd[%i] : memref<{t}x?>
  }}
}}

func @mul_add_{t}(%a: memref<{t}x?>, %b: memref<{t}x?>, %out: memref<{t}x?>)
    work_group_size(4, 1) {{
  %zero = constant 0 : index
  %n = size %a[0] : memref<{t}x?>
  foreach %i = %zero, %n {{
    %x = load %a[%i] : memref<{t}x?>
    %y = load %b[%i] : memref<{t}x?>
    %p = arith.mul %x, %y : {t}
    %s = arith.add %p, %x : {t}
    store %s, %out[%i] : memref<{t}x?>
  }}
}}
"""


@pytest.fixture(scope="module")
def module() -> object:
    return backend_opencl.compile("\n".join(_source(t) for t in NAMES))


def _bits(a: np.ndarray) -> np.ndarray:
    return a.view(np.uint8)


def _f32_samples(t: str) -> np.ndarray:
    """Every code's value and the midpoints between neighbours (ties), nudged by one f32
    ulp either way, plus random bit patterns, infinities, NaNs and signed zeros."""
    dtype = NARROW_DTYPES[t]
    values = np.arange(256, dtype=np.uint8).view(dtype).astype(np.float32)
    finite = np.unique(values[np.isfinite(values)])
    mids = ((finite[:-1].astype(np.float64) + finite[1:]) / 2).astype(np.float32)
    rng = np.random.default_rng(7)
    noise = rng.integers(0, 2**32, 20000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    big = np.float32(float(ml_dtypes.finfo(dtype).max))
    specials = np.array([0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1e-45, -1e-45, 1e-39,
                         big * 1.0625, big * 1.2, -big * 1.2, 3e38], np.float32)
    base = np.concatenate([finite, mids, specials])
    nudged = [np.nextafter(base, np.float32(np.inf)), np.nextafter(base, np.float32(-np.inf))]
    return np.concatenate([base, -base, *nudged, noise]).astype(np.float32)


@pytest.mark.parametrize("t", NAMES)
def test_decode_all_codes(module, t: str) -> None:
    codes = np.arange(256, dtype=np.uint8)
    if t.startswith(("f4", "f6")):
        codes = codes[codes < (16 if t.startswith("f4") else 64)]
    a = codes.view(NARROW_DTYPES[t])
    out = np.zeros(codes.size, np.float32)
    getattr(module, f"decode_{t}")(a, out)
    want = a.astype(np.float32)
    np.testing.assert_array_equal(np.isnan(out), np.isnan(want))
    ok = ~np.isnan(want)
    np.testing.assert_array_equal(out[ok].view(np.uint32), want[ok].view(np.uint32))


@pytest.mark.parametrize("t", NAMES)
def test_encode_matches_ml_dtypes(module, t: str) -> None:
    x = _f32_samples(t)
    out, outd = np.zeros(x.size, NARROW_DTYPES[t]), np.zeros(x.size, NARROW_DTYPES[t])
    with np.errstate(invalid="ignore", over="ignore"):
        getattr(module, f"encode_{t}")(x, x.astype(np.float64), out, outd)
        want = x.astype(NARROW_DTYPES[t])
    bad = np.nonzero(_bits(out) != _bits(want))[0]
    assert bad.size == 0, [(float(x[i]), hex(_bits(out)[i]), hex(_bits(want)[i]))
                           for i in bad[:5]]
    np.testing.assert_array_equal(_bits(outd), _bits(want))


@pytest.mark.parametrize("t", NAMES)
def test_f64_converts_without_double_rounding(module, t: str) -> None:
    """Just above a tie in f64 but exactly the tie once rounded to f32: must round up
    (ml_dtypes itself converts f64 through f32 and rounds these down)."""
    dtype = NARROW_DTYPES[t]
    values = np.arange(256, dtype=np.uint8).view(dtype).astype(np.float64)
    finite = np.unique(values[np.isfinite(values) & (values > 0)])
    mids = (finite[:-1] + finite[1:]) / 2
    d = mids * (1 + 2.0**-40)
    x = d.astype(np.float32)
    out, outd = np.zeros(d.size, dtype), np.zeros(d.size, dtype)
    getattr(module, f"encode_{t}")(x, d, out, outd)
    want = finite[1:].astype(dtype)  # the upper neighbour
    np.testing.assert_array_equal(_bits(outd), _bits(want))


@pytest.mark.parametrize("t", NAMES)
def test_arithmetic_rounds_to_the_type(module, t: str) -> None:
    dtype = NARROW_DTYPES[t]
    rng = np.random.default_rng(3)
    codes = rng.integers(0, 256 if t.startswith("f8") else (16 if t.startswith("f4") else 64),
                         500).astype(np.uint8)
    a, b = codes.view(dtype), rng.permutation(codes).view(dtype)
    out = np.zeros(a.size, dtype)
    getattr(module, f"mul_add_{t}")(a, b, out)
    with np.errstate(all="ignore"):
        p = (a.astype(np.float32) * b.astype(np.float32)).astype(dtype)
        want = (p.astype(np.float32) + a.astype(np.float32)).astype(dtype)
    got64, want64 = out.astype(np.float64), want.astype(np.float64)
    np.testing.assert_array_equal(np.isnan(got64), np.isnan(want64))
    np.testing.assert_array_equal(_bits(out)[~np.isnan(want64)], _bits(want)[~np.isnan(want64)])


def test_nextafter_steps_one_code() -> None:
    source = """
func @step(%a: memref<f8e4m3fnx4>, %b: memref<f8e4m3fnx4>, %out: memref<f8e4m3fnx4>)
    work_group_size(4, 1) {
  %zero = constant 0 : index
  %n = constant 4 : index
  foreach %i = %zero, %n {
    %x = load %a[%i] : memref<f8e4m3fnx4>
    %y = load %b[%i] : memref<f8e4m3fnx4>
    %r = math.nextafter %x, %y : f8e4m3fn
    store %r, %out[%i] : memref<f8e4m3fnx4>
  }
}
"""
    dtype = NARROW_DTYPES["f8e4m3fn"]
    a = np.array([1.0, 1.0, 0.0, 0.0], dtype)
    b = np.array([2.0, -1.0, 1.0, -1.0], dtype)
    out = np.zeros(4, dtype)
    backend_opencl.compile(source).step(a, b, out)
    np.testing.assert_array_equal(_bits(out), [0x39, 0x37, 0x01, 0x81])
