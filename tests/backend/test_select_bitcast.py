"""select, bitcast and complex against numpy: every operand type select takes, bit
patterns reinterpreted between same-width types (f16/bf16 through their 16-bit patterns,
c32 <-> 64-bit integers), complex numbers built from parts."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import backend_opencl

DT = {"f16": np.float16, "bf16": ml_dtypes.bfloat16, "f32": np.float32, "f64": np.float64,
      "i8": np.int8, "u8": np.uint8, "i16": np.int16, "u16": np.uint16, "i32": np.int32,
      "u32": np.uint32, "i64": np.int64, "u64": np.uint64, "c32": np.complex64,
      "c64": np.complex128, "index": np.int64}
SELECT_TYPES = ["f16", "bf16", "f32", "f64", "i8", "u16", "u32", "i64", "c32", "c64"]
BITCASTS = [("f32", "i32"), ("i32", "f32"), ("f32", "u32"), ("f64", "i64"), ("u64", "f64"),
            ("f16", "i16"), ("u16", "f16"), ("bf16", "u16"), ("i16", "bf16"), ("f16", "bf16"),
            ("i8", "u8"), ("c32", "i64"), ("u64", "c32"), ("c32", "f64")]


def select_source(t: str) -> str:
    return f"""
func @select_{t}(%c: memref<i1x?>, %a: memref<{t}x?>, %b: memref<{t}x?>, %out: memref<{t}x?>)
    work_group_size(4, 1) {{
  %zero = constant 0 : index
  %n = size %a[0] : memref<{t}x?>
  foreach %i = %zero, %n {{
    %p = load %c[%i] : memref<i1x?>
    %x = load %a[%i] : memref<{t}x?>
    %y = load %b[%i] : memref<{t}x?>
    %r = select %p, %x, %y : {t}
    store %r, %out[%i] : memref<{t}x?>
  }}
}}
"""


def bitcast_source(src: str, dst: str) -> str:
    return f"""
func @bitcast_{src}_{dst}(%a: memref<{src}x?>, %out: memref<{dst}x?>) work_group_size(4, 1) {{
  %zero = constant 0 : index
  %n = size %a[0] : memref<{src}x?>
  foreach %i = %zero, %n {{
    %x = load %a[%i] : memref<{src}x?>
    %y = bitcast %x : {src} -> {dst}
    store %y, %out[%i] : memref<{dst}x?>
  }}
}}
"""


COMPLEX = """
func @make_complex(%re: memref<f64x?>, %im: memref<f64x?>, %out: memref<c64x?>,
                   %s: f32, %sout: memref<c32>) work_group_size(2, 1) {
  %zero = constant 0 : index
  %n = size %re[0] : memref<f64x?>
  foreach %i = %zero, %n {
    %x = load %re[%i] : memref<f64x?>
    %y = load %im[%i] : memref<f64x?>
    %z = complex %x, %y : c64
    store %z, %out[%i] : memref<c64x?>
  }
  %w = complex %s, -2.5 : c32
  parallel {
    store %w, %sout[] : memref<c32>
  }
}
"""


@pytest.fixture(scope="module")
def module() -> object:
    parts = [select_source(t) for t in SELECT_TYPES]
    parts += [bitcast_source(s, d) for s, d in BITCASTS] + [COMPLEX]
    return backend_opencl.compile("\n".join(parts))


# NaNs of f16 and bf16, signalling and quiet, with payloads: f16 values are held in
# float registers, and every pattern must still survive a load and a store
_NANS_16 = np.array([0x7C01, 0xFD55, 0x7E00, 0x7F81, 0xFF81, 0x7FC0], np.uint16)


def _random(rng: np.random.Generator, t: str, n: int) -> np.ndarray:
    """Random bit patterns of type ``t`` (every pattern, NaNs included, for floats);
    16-bit types start with the NaN patterns above."""
    size = np.dtype(DT[t]).itemsize
    raw = rng.integers(0, 256, size=n * size, dtype=np.uint8)
    if size == 2:
        raw[:_NANS_16.nbytes] = _NANS_16.view(np.uint8)
    return raw.view(DT[t]).copy()


@pytest.mark.parametrize("t", SELECT_TYPES)
def test_select(module, rng, t: str) -> None:
    n = 37
    c = rng.integers(0, 2, n).astype(bool)
    a, b = _random(rng, t, n), _random(rng, t, n)
    out = _random(rng, t, n)
    getattr(module, f"select_{t}")(c, a, b, out)
    want = np.where(c, a, b)
    np.testing.assert_array_equal(out.view(np.uint8), want.view(np.uint8))


@pytest.mark.parametrize(("src", "dst"), BITCASTS, ids=[f"{s}-{d}" for s, d in BITCASTS])
def test_bitcast(module, rng, src: str, dst: str) -> None:
    n = 41
    a = _random(rng, src, n)
    out = np.zeros(n, DT[dst])
    getattr(module, f"bitcast_{src}_{dst}")(a, out)
    np.testing.assert_array_equal(out.view(np.uint8), a.view(np.uint8))


def test_complex(module, rng) -> None:
    n = 29
    re, im = rng.standard_normal(n), rng.standard_normal(n)
    re[0], im[1] = np.inf, np.nan
    out = np.full(n, np.nan, np.complex128)
    sout = np.array(np.nan, np.complex64)
    module.make_complex(re, im, out, np.float32(0.75), sout)
    np.testing.assert_array_equal(out.real, re)
    np.testing.assert_array_equal(out.imag, im)
    assert sout[()] == np.complex64(0.75 - 2.5j)
