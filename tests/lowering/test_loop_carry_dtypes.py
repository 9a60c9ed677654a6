"""A while with a data-dependent trip count whose carries have different dtypes (i32,
f32, i64, i1, f16), run as one kernel and on the host, against numpy."""

from __future__ import annotations

import numpy as np
import pytest

from backend_opencl.api import compiler
from frontend.lower.families.control import device_loop
from tests.lowering.conftest import module, rand, run

TEXT = module(
    "(%x: tensor<8xf32>, %lim: tensor<f32>) -> (tensor<i32>, tensor<8xf32>, tensor<i64>, "
    "tensor<i1>, tensor<4xf16>)", """
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %l0 = stablehlo.constant dense<7> : tensor<i64>
  %b0 = stablehlo.constant dense<false> : tensor<i1>
  %h0 = stablehlo.constant dense<[1.0, 0.5, -0.75, 0.9]> : tensor<4xf16>
  %0:5 = stablehlo.while(%i = %c0, %v = %x, %n = %l0, %b = %b0, %h = %h0)
      : tensor<i32>, tensor<8xf32>, tensor<i64>, tensor<i1>, tensor<4xf16>
   cond {
    %z = stablehlo.constant dense<0.0> : tensor<f32>
    %s = stablehlo.reduce(%v init: %z) applies stablehlo.add across dimensions = [0]
        : (tensor<8xf32>, tensor<f32>) -> tensor<f32>
    %p = stablehlo.compare LT, %s, %lim, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  } do {
    %a = stablehlo.abs %v : tensor<8xf32>
    %one = stablehlo.constant dense<0.25> : tensor<f32>
    %ob = stablehlo.broadcast_in_dim %one, dims = [] : (tensor<f32>) -> tensor<8xf32>
    %v2 = stablehlo.add %a, %ob : tensor<8xf32>
    %i1 = stablehlo.constant dense<1> : tensor<i32>
    %i2 = stablehlo.add %i, %i1 : tensor<i32>
    %three = stablehlo.constant dense<3> : tensor<i64>
    %n2 = stablehlo.multiply %n, %three : tensor<i64>
    %b2 = stablehlo.not %b : tensor<i1>
    %h2 = stablehlo.multiply %h, %h : tensor<4xf16>
    stablehlo.return %i2, %v2, %n2, %b2, %h2
        : tensor<i32>, tensor<8xf32>, tensor<i64>, tensor<i1>, tensor<4xf16>
  }
  return %0#0, %0#1, %0#2, %0#3, %0#4
      : tensor<i32>, tensor<8xf32>, tensor<i64>, tensor<i1>, tensor<4xf16>""")


def expected(x: np.ndarray, lim: float) -> tuple[object, ...]:
    """TEXT in numpy."""
    i, v, n, b = 0, x.copy(), np.int64(7), False
    h = np.array([1.0, 0.5, -0.75, 0.9], np.float16)
    while v.sum(dtype=np.float32) < lim:
        i, v, n, b, h = i + 1, np.abs(v) + np.float32(0.25), n * 3, not b, h * h
    return i, v, n, b, h


@pytest.mark.parametrize("where", ["device", "host"])
@pytest.mark.parametrize("lim", [-100.0, 9.0, 30.0])  # zero, a few and more trips
def test_carries_of_several_dtypes(where: str, lim: float,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compiler, "_EXECUTABLES", {})
    monkeypatch.setenv("TLC_CACHE_DIR", "off")
    if where == "host":
        monkeypatch.setattr(device_loop, "MAX_ELEMENTS", 0)
    x = rand((8,))
    got = run(TEXT, x, np.float32(lim))
    want = expected(x, lim)
    assert int(got[0]) == want[0]
    np.testing.assert_allclose(got[1], want[1], rtol=1e-5)
    assert int(got[2]) == want[2]
    assert bool(got[3]) == want[3]
    np.testing.assert_array_equal(got[4], want[4])
