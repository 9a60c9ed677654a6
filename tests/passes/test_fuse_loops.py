"""fuse-loops: FileCheck on the printed IR (fuse-loops.tl), the verifier after the pass,
and numeric results with and without the pass against numpy (poisoned outputs)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import backend_opencl
import tensorlang
import tensorlang.passes
from tensorlang.passes import run_pipeline
from tensorlang.passes.fuse_loops import fuse_region
from tests.filecheck import check_opt

HERE = Path(__file__).parent
def test_lit() -> None:
    check_opt(HERE / "fuse-loops.tl", "fuse-loops,insert-barrier")


def test_verified_and_idempotent() -> None:
    program = tensorlang.parse((HERE / "fuse-loops.tl").read_text())
    run_pipeline(program, "fuse-loops", verify_each=True)
    once = str(program)
    tensorlang.parse(once)  # the printed result parses and verifies again
    assert sum(fuse_region(f.body) for f in program.functions) == 0
    assert str(program) == once


def test_fusion_count() -> None:
    program = tensorlang.parse((HERE / "fuse-loops.tl").read_text())
    counts = {f.name: fuse_region(f.body) for f in program.functions}
    assert counts == {"same_point": 1, "neighbour": 0, "sizes_differ": 0, "dynamic": 1,
                      "collectives": 1, "transposed": 0, "loop_types": 0}


CHAIN = """
func @chain(%a: memref<f32x37>, %b: memref<f32x37>, %c: memref<f32x37>, %d: memref<f32x37>,
            %alpha: f32, %beta: f32) work_group_size({wg}) {{
  %n = size %a[0] : memref<f32x37>
  foreach %i = 0, %n {{
    %x = load %a[%i] : memref<f32x37>
    %y = math.exp %x : f32
    store %y, %b[%i] : memref<f32x37>
  }}
  %one = constant 1.0 : f32
  %zero = constant 0.0 : f32
  hadamard_product %alpha, %a, %b, %zero, %c
      : f32, memref<f32x37>, memref<f32x37>, f32, memref<f32x37>
  axpby.n %alpha, %c, %beta, %d : f32, memref<f32x37>, f32, memref<f32x37>
  axpby.n %beta, %b, %one, %a : f32, memref<f32x37>, f32, memref<f32x37>
}}

func @matrix(%A: memref<f64x13x7>, %B: memref<f64x13x7>, %C: memref<i32x8x8>,
             %D: memref<i32x8x8>, %E: memref<i32x8x8>, %k: i32) work_group_size({wg}) {{
  foreach (%i, %j) = (0, 0), (13, 7) {{
    %x = load %A[%i, %j] : memref<f64x13x7>
    %y = arith.mul %x, %x : f64
    store %y, %B[%i, %j] : memref<f64x13x7>
  }}
  axpby.t %k, %C, %k, %D : i32, memref<i32x8x8>, i32, memref<i32x8x8>
  foreach (%i, %j) = (0, 0), (8, 8) {{
    %z = load %D[%i, %j] : memref<i32x8x8>
    %w = arith.add %z, 1 : i32
    store %w, %E[%i, %j] : memref<i32x8x8>
  }}
}}
"""
"""Fusable: the foreach with the hadamard product and both axpbys (one chain); the
8x8 axpby.t with the foreach after it (it reads C^T, but the loop reads only D, at the
point where axpby wrote it); not the 13x7 loop (another box)."""


def _compile(text: str, fuse: bool, monkeypatch: pytest.MonkeyPatch) -> object:
    pipeline = tensorlang.passes.DEFAULT_PIPELINE.replace("fuse-loops,", "")
    if fuse:
        pipeline = pipeline.replace("insert-barrier", "fuse-loops,insert-barrier")
    with monkeypatch.context() as patch:
        patch.setattr(tensorlang.passes, "DEFAULT_PIPELINE", pipeline)
        return backend_opencl.compile(text)


@pytest.mark.parametrize("wg", ["1, 1", "16, 1", "4, 3"])
@pytest.mark.parametrize("beta", [0.0, 1.0, -0.5])
def test_numeric_same_with_and_without(monkeypatch: pytest.MonkeyPatch, wg: str,
                                       beta: float) -> None:
    text = CHAIN.format(wg=wg)
    program = tensorlang.parse(text)
    assert sum(fuse_region(f.body) for f in program.functions) == 4
    fused, plain = (_compile(text, fuse, monkeypatch) for fuse in (True, False))
    rng = np.random.default_rng(7)
    n, alpha = 37, np.float32(1.5)
    a0 = rng.standard_normal(n).astype(np.float32)
    d0 = rng.standard_normal(n).astype(np.float32)
    b = np.exp(a0)
    c = alpha * a0 * b
    d = alpha * c + (beta * d0 if beta else 0)
    want = [a0 * 1 + np.float32(beta) * b, b, c, d]
    for module in (fused, plain):
        a = a0.copy()
        outs = [np.full(n, np.nan, np.float32) for _ in range(2)]
        dd = d0.copy() if beta else np.full(n, np.nan, np.float32)  # beta = 0: never read
        module.chain(a, *outs, dd, alpha, np.float32(beta))
        for got, expected in zip([a, *outs, dd], want, strict=True):
            np.testing.assert_allclose(got, expected, rtol=2e-6, atol=1e-6)

    A = np.asfortranarray(rng.standard_normal((13, 7)))
    C = np.asfortranarray(rng.integers(-50, 50, (8, 8), dtype=np.int32))
    D0 = np.asfortranarray(rng.integers(-50, 50, (8, 8), dtype=np.int32))
    for module in (fused, plain):
        B = np.full((13, 7), np.nan, order="F")
        D, E = D0.copy(order="F"), np.full((8, 8), -7, np.int32, order="F")
        module.matrix(A, B, C, D, E, np.int32(3))
        np.testing.assert_array_equal(B, A * A)
        np.testing.assert_array_equal(D, 3 * C.T + 3 * D0)
        np.testing.assert_array_equal(E, D + 1)
