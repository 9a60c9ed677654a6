"""Collectives inside ``while`` / ``if`` regions: the host runs the loop, the device the
segments of each iteration, MPI the all_reduce."""

from __future__ import annotations

import numpy as np

from backend_opencl import distributed
from tests.distributed.mpi_env import needs_mpi

LOOP = """
module @loop {
  func.func @f(%x: tensor<4xf32>, %k: tensor<i32>) -> (tensor<4xf32>, tensor<i32>) {
    %c0 = stablehlo.constant dense<0> : tensor<i32>
    %half = stablehlo.constant dense<0.5> : tensor<4xf32>
    %r:2 = stablehlo.while(%i = %c0, %v = %x) : tensor<i32>, tensor<4xf32>
     cond {
      %p = stablehlo.compare LT, %i, %k, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %p : tensor<i1>
    } do {
      %sq = stablehlo.multiply %v, %v : tensor<4xf32>
      %m = stablehlo.multiply %sq, %half : tensor<4xf32>
      %s = "stablehlo.all_reduce"(%m) ({
        ^bb0(%a: tensor<f32>, %b: tensor<f32>):
          %t = stablehlo.add %a, %b : tensor<f32>
          stablehlo.return %t : tensor<f32>
      }) {replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<4xf32>) -> tensor<4xf32>
      %one = stablehlo.constant dense<1> : tensor<i32>
      %j = stablehlo.add %i, %one : tensor<i32>
      stablehlo.return %j, %s : tensor<i32>, tensor<4xf32>
    }
    %id = stablehlo.replica_id : tensor<ui32>
    %zero = stablehlo.constant dense<0> : tensor<ui32>
    %first = stablehlo.compare EQ, %id, %zero, UNSIGNED : (tensor<ui32>, tensor<ui32>) -> tensor<i1>
    %out = "stablehlo.if"(%first) ({
      stablehlo.return %r#1 : tensor<4xf32>
    }, {
      %g = "stablehlo.all_gather"(%x) {all_gather_dim = 0 : i64,
          replica_groups = dense<[[0], [1]]> : tensor<2x1xi64>} : (tensor<4xf32>) -> tensor<4xf32>
      %d = stablehlo.subtract %r#1, %g : tensor<4xf32>
      stablehlo.return %d : tensor<4xf32>
    }) : (tensor<i1>) -> tensor<4xf32>
    return %out, %r#0 : tensor<4xf32>, tensor<i32>
  }
}
"""


@needs_mpi
def test_a_while_loop_all_reduces_every_iteration() -> None:
    """v <- sum over ranks of v*v/2, three times; rank 1 then subtracts its input in an
    ``if`` branch that holds a (one-process) all_gather."""
    rng = np.random.default_rng(11)
    xs = [rng.uniform(0.5, 1.5, 4).astype(np.float32) for _ in range(2)]
    k = np.array(3, dtype=np.int32)
    flat = distributed.run_parallel(LOOP, [["f"], ["f"]], [xs[0], k, xs[1], k])
    vs = list(xs)
    for _ in range(3):
        total = sum(v * v * np.float32(0.5) for v in vs)
        vs = [total, total]
    np.testing.assert_allclose(flat[0], vs[0], rtol=1e-5)
    np.testing.assert_allclose(flat[2], vs[1] - xs[1], rtol=1e-5, atol=1e-6)
    assert int(flat[1]) == 3 and int(flat[3]) == 3
