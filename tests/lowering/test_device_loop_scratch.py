"""Device loops keep what an iteration computes (dot and reduce results, temporaries of
the carried values) in the loop kernel's own local memory, up to
``builder.LOCAL_SCRATCH_BYTES``, instead of buffers passed to every launch
(frontend/lower/families/control/device_loop.py); checked against numpy with a product
(the register-blocked ``gemm`` on local operands), a reduction, a trip count known and
one decided on the device, and scratch beyond the budget."""

from __future__ import annotations

import re

import numpy as np
import pytest

import frontend
from frontend.lower import lower_function
from frontend.lower.core import builder
from tests.lowering.conftest import module, rand, run


def _loop(rows: int, width: int, trips: str) -> str:
    """``h = tanh(h @ w) * 0.5 + x / (1 + sum(h^2))`` per row, while ``i < trips`` (an
    i32 argument when ``trips`` is ``"%n"``, else a constant)."""
    h, w, r = f"tensor<{rows}x{width}xf32>", f"tensor<{width}x{width}xf32>", \
        f"tensor<{rows}xf32>"
    limit = ("" if trips == "%n" else
             f"%n = stablehlo.constant dense<{trips}> : tensor<i32>\n    ")
    arg = ", %n: tensor<i32>" if trips == "%n" else ""
    return module(f"(%x: {h}, %w: {w}{arg}) -> {h}", f"""
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %0:2 = stablehlo.while(%i = %c0, %h = %x) : tensor<i32>, {h}
   cond {{
    {limit}%p = stablehlo.compare LT, %i, %n, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  }} do {{
    %one = stablehlo.constant dense<1> : tensor<i32>
    %j = stablehlo.add %i, %one : tensor<i32>
    %d = stablehlo.dot_general %h, %w, contracting_dims = [1] x [0] : ({h}, {w}) -> {h}
    %t = stablehlo.tanh %d : {h}
    %half = stablehlo.constant dense<0.5> : {h}
    %a = stablehlo.multiply %t, %half : {h}
    %sq = stablehlo.multiply %h, %h : {h}
    %z = stablehlo.constant dense<0.0> : tensor<f32>
    %s = stablehlo.reduce(%sq init: %z) applies stablehlo.add across dimensions = [1]
        : ({h}, tensor<f32>) -> {r}
    %ones = stablehlo.constant dense<1.0> : {r}
    %s1 = stablehlo.add %s, %ones : {r}
    %b = stablehlo.broadcast_in_dim %s1, dims = [0] : ({r}) -> {h}
    %q = stablehlo.divide %x, %b : {h}
    %n2 = stablehlo.add %a, %q : {h}
    stablehlo.return %j, %n2 : tensor<i32>, {h}
  }}
  return %0#1 : {h}""")


def _want(x: np.ndarray, w: np.ndarray, trips: int) -> np.ndarray:
    h = x.astype(np.float64)
    for _ in range(trips):
        h = np.tanh(h @ w) * 0.5 + x / (1 + (h * h).sum(axis=1, keepdims=True))
    return h


def _loop_kernel(text: str) -> str:
    kernels = lower_function(frontend.parse(text)).kernels
    return next(k for k in kernels.split("func @")[1:] if "while" in k.split("(")[0])


@pytest.mark.parametrize("trips", ["6", "%n"])
def test_scratch_in_local_memory(trips: str) -> None:
    x, w = rand((8, 16)), rand((16, 16)) * 0.3
    args = (x, w) if trips != "%n" else (x, w, np.array(6, np.int32))
    got = run(_loop(8, 16, trips), *args)[0]
    np.testing.assert_allclose(got, _want(x, w, 6), rtol=1e-5, atol=1e-5)
    kernel = _loop_kernel(_loop(8, 16, trips))
    params = kernel.split(")")[0]
    local = re.findall(r"(%b\d+) = alloca -> memref<\w+x\d+,local>", kernel)
    assert local and not any(f"{b}:" in params for b in local)
    assert "gemm" in kernel and ",local>" in kernel.split("gemm")[1].split("\n")[0]


def test_scratch_beyond_the_budget_stays_in_buffers(monkeypatch: pytest.MonkeyPatch) -> None:
    """A budget smaller than the product's result: that one stays a buffer parameter."""
    monkeypatch.setattr(builder, "LOCAL_SCRATCH_BYTES", 8 * 16 * 4 - 4)
    x, w = rand((8, 16)), rand((16, 16)) * 0.3
    got = run(_loop(8, 16, "5"), x, w)[0]
    np.testing.assert_allclose(got, _want(x, w, 5), rtol=1e-5, atol=1e-5)
    kernel = _loop_kernel(_loop(8, 16, "5"))
    assert "alloca" in kernel and "memref<f32x128>" in kernel.split(")")[0]
