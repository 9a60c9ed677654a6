"""Scalar instructions inside SPMD regions: arith (every op), cmp, cast, if, for with
loop-carried values, foreach, load/store, over integer, float and complex types."""

from __future__ import annotations

import numpy as np
import pytest

import backend_opencl

OPS = {
    "int": ["add", "sub", "mul", "div", "rem", "shl", "shr", "and", "or", "xor", "neg", "not"],
    "float": ["add", "sub", "mul", "div", "rem", "neg"],
    "complex": ["add", "sub", "mul", "div", "neg"],
}
TYPES = {"i8": "int", "i16": "int", "i32": "int", "i64": "int", "index": "int",
         "f32": "float", "f64": "float", "c32": "complex", "c64": "complex"}


def arith_source(t: str) -> str:
    ops = OPS[TYPES[t]]
    lines = []
    for k, op in enumerate(ops):
        args = "%x" if op in ("neg", "not") else ("%x, %s" if op in ("shl", "shr") else "%x, %y")
        lines.append(f"    %r{k} = arith.{op} {args} : {t}\n"
                     f"    %k{k} = constant {k} : index\n"
                     f"    store %r{k}, %out[%i, %k{k}] : memref<{t}x?x{len(ops)}>")
    shift = (f"    %seven = constant 7 : {t}\n    %s = arith.and %y, %seven : {t}\n"
             if TYPES[t] == "int" else "")
    body = "\n".join(lines)
    return f"""
func @arith_{t}(%a: memref<{t}x?>, %b: memref<{t}x?>, %out: memref<{t}x?x{len(ops)}>)
    work_group_size(4, 1) {{
  %zero = constant 0 : index
  %n = size %a[0] : memref<{t}x?>
  foreach %i = %zero, %n {{
    %x = load %a[%i] : memref<{t}x?>
    %y = load %b[%i] : memref<{t}x?>
{shift}{body}
  }}
}}
"""


def _c_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (np.sign(a) * np.sign(b) * (np.abs(a) // np.abs(b))).astype(a.dtype)


def arith_reference(t: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    kind = TYPES[t]
    s = (b & 7) if kind == "int" else None
    table = {
        "add": lambda: a + b, "sub": lambda: a - b, "mul": lambda: a * b,
        "div": lambda: _c_div(a, b) if kind == "int" else a / b,
        "rem": lambda: np.fmod(a, b), "shl": lambda: a << s, "shr": lambda: a >> s,
        "and": lambda: a & b, "or": lambda: a | b, "xor": lambda: a ^ b,
        "neg": lambda: -a, "not": lambda: ~a,
    }
    with np.errstate(over="ignore"):
        return np.stack([table[op]().astype(a.dtype) for op in OPS[kind]], axis=1)


CONTROL = """
func @control(%a: memref<f32x?>, %b: memref<f32x?>, %out: memref<f32x?x4>,
              %iout: memref<i32x?x2>, %n: index) work_group_size(3, 2) {
  %zero = constant 0 : index
  %one = constant 1 : index
  %two = constant 2 : index
  %c3 = constant 3 : index
  %f0 = constant 0.0 : f32
  %f1 = constant 1.0 : f32
  %m = size %a[0] : memref<f32x?>
  foreach %i = %zero, %m {
    %x = load %a[%i] : memref<f32x?>
    %y = load %b[%i] : memref<f32x?>
    %lt = cmp.lt %x, %y : f32
    %mn = if %lt -> (f32) {
      yield %x : f32
    } else {
      yield %y : f32
    }
    store %mn, %out[%i, %zero] : memref<f32x?x4>
    %s, %p = for %j = %zero, %n, %two init(%acc = %f0, %prod = %f1) -> (f32, f32) {
      %jf = cast %j : index -> f32
      %t = arith.mul %jf, %x : f32
      %acc2 = arith.add %acc, %t : f32
      %prod2 = arith.mul %prod, %y : f32
      yield %acc2, %prod2 : f32, f32
    }
    store %s, %out[%i, %one] : memref<f32x?x4>
    store %p, %out[%i, %two] : memref<f32x?x4>
    %ge = cmp.ge %x, %f0 : f32
    if %ge {
      store %x, %out[%i, %c3] : memref<f32x?x4>
    } else {
      %nx = arith.neg %x : f32
      store %nx, %out[%i, %c3] : memref<f32x?x4>
    }
    %xi = cast %x : f32 -> i32
    store %xi, %iout[%i, %zero] : memref<i32x?x2>
    %yc = cast %y : f32 -> c64
    %yr = cast %yc : c64 -> c32
    %eq = cmp.eq %yr, %yr : c32
    %e = cast %eq : i1 -> i32
    store %e, %iout[%i, %one] : memref<i32x?x2>
  }
}
"""

SELECT = """
func @select(%c: i1, %a: f64, %b: c32, %out: memref<f64>, %zout: memref<c32x2>) {
  %r = if %c -> (f64) {
    yield %a : f64
  } else {
    %n = arith.neg %a : f64
    yield %n : f64
  }
  %i0 = constant 0 : index
  %i1 = constant 1 : index
  %z = arith.mul %b, %b : c32
  %q = arith.div %z, %b : c32
  parallel {
    store %r, %out[] : memref<f64>
    store %z, %zout[%i0] : memref<c32x2>
    store %q, %zout[%i1] : memref<c32x2>
  }
}
"""

ARITH_TYPES = list(TYPES)


@pytest.fixture(scope="module")
def module() -> object:
    parts = [arith_source(t) for t in ARITH_TYPES] + [CONTROL, SELECT]
    return backend_opencl.compile("\n".join(parts))


@pytest.mark.parametrize("t", ARITH_TYPES)
def test_arith(module, h, rng, t: str) -> None:
    n = 19
    a = h.rand(rng, (n,), t)
    b = h.rand(rng, (n,), t)
    if TYPES[t] == "int":
        b[b == 0] = 3
    out = h.poison((n, len(OPS[TYPES[t]])), t)
    getattr(module, f"arith_{t}")(a, b, out)
    h.close(out, arith_reference(t, a, b), t)


def test_control(module, h, rng) -> None:
    m, n = 23, 7
    a, b = h.rand(rng, (m,), "f32"), h.rand(rng, (m,), "f32")
    out = h.poison((m, 4), "f32")
    iout = h.poison((m, 2), "i32")
    module.control(a, b, out, iout, n)
    js = np.arange(0, n, 2, dtype=np.float32)
    want = np.stack([np.minimum(a, b), js.sum() * a, b ** len(js), np.abs(a)], axis=1)
    h.close(out, want, "f32")
    np.testing.assert_array_equal(iout[:, 0], a.astype(np.int32))
    np.testing.assert_array_equal(iout[:, 1], 1)


@pytest.mark.parametrize("cond", [True, False])
def test_bool_and_complex_scalar_arguments(module, h, cond: bool) -> None:
    out = np.array(np.nan)
    zout = h.poison((2,), "c32")
    b = np.complex64(1.5 - 2j)
    module.select(cond, 2.5, b, out, zout)
    assert out[()] == (2.5 if cond else -2.5)
    h.close(zout, np.array([b * b, b], np.complex64), "c32")
