"""Device loops: body results computed straight into their carried buffers (no temporary
and copy) only in an order where no later phase of the iteration reads the old value
(frontend/lower/families/control/device_loop.py, ``_direct``);
checked against numpy on carried values that
read each other in chains, cycles and swaps."""

from __future__ import annotations

import numpy as np
import pytest

from frontend.lower.families.control import device_loop
from tests.lowering.conftest import module, rand, run

V = "tensor<4xf32>"


def loop(body: str, results: str) -> str:
    """Five iterations over carried vectors %x, %y, %z: ``body`` defines the values,
    ``results`` names the three new ones."""
    return module(f"(%a: {V}, %b: {V}, %c: {V}) -> ({V}, {V}, {V})", f"""
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %0:4 = stablehlo.while(%i = %c0, %x = %a, %y = %b, %z = %c) : tensor<i32>, {V}, {V}, {V}
   cond {{
    %n = stablehlo.constant dense<5> : tensor<i32>
    %p = stablehlo.compare LT, %i, %n, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  }} do {{
    %one = stablehlo.constant dense<1> : tensor<i32>
    %j = stablehlo.add %i, %one : tensor<i32>
    %half = stablehlo.constant dense<0.5> : {V}
    {body}
    stablehlo.return %j, {results} : tensor<i32>, {V}, {V}, {V}
  }}
  return %0#1, %0#2, %0#3 : {V}, {V}, {V}""")


CASES = {
    "chain": ("%u = stablehlo.multiply %y, %half : " + V + "\n"
              "    %v = stablehlo.add %z, %half : " + V + "\n"
              "    %w = stablehlo.add %half, %half : " + V, "%u, %v, %w",
              lambda x, y, z: (y * 0.5, z + 0.5, np.ones_like(z))),
    "cycle": ("%u = stablehlo.multiply %y, %half : " + V + "\n"
              "    %v = stablehlo.add %z, %half : " + V + "\n"
              "    %w = stablehlo.subtract %x, %half : " + V, "%u, %v, %w",
              lambda x, y, z: (y * 0.5, z + 0.5, x - 0.5)),
    "swap": ("", "%y, %x, %z", lambda x, y, z: (y, x, z)),
    "shared": ("%u = stablehlo.add %x, %y : " + V + "\n"
               "    %v = stablehlo.tanh %u : " + V, "%v, %v, %u",
               lambda x, y, z: (np.tanh(x + y), np.tanh(x + y), x + y)),
    "self_and_other": ("%u = stablehlo.add %x, %y : " + V + "\n"
                       "    %v = stablehlo.multiply %x, %half : " + V, "%u, %v, %x",
                       lambda x, y, z: (x + y, x * 0.5, x)),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_carried_values_reading_each_other(case: str) -> None:
    assert device_loop.MAX_ELEMENTS > 0  # the loop runs as one kernel
    body, results, step = CASES[case]
    a, b, c = rand((4,)), rand((4,)), rand((4,))
    x, y, z = (v.astype(np.float64) for v in (a, b, c))
    for _ in range(5):
        x, y, z = step(x, y, z)
    got = run(loop(body, results), a, b, c)
    for g, want in zip(got, (x, y, z), strict=True):
        np.testing.assert_allclose(g, want, rtol=1e-5, atol=1e-5)
