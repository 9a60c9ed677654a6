"""32-bit index arithmetic (``backend_opencl/emit/ranges.py``): the interval analysis,
and lowered StableHLO programs run with ``int`` indices (CPU- and GPU-style plans on the
CPU device) against numpy, on poisoned buffers.  The > 2^31 case is checked as text in
``golden/index_width.tl``."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest

import frontend
import tensorlang
from backend_opencl.api import compiler
from backend_opencl.emit import Target
from backend_opencl.emit.ranges import NARROW, fits, index_ranges
from backend_opencl.exec import executable
from frontend.lower import lower_function

RANGES = """
func @k(%x: memref<f32x100>, %v: memref<indexx8>, %d: memref<f32x?>, %s: i32, %u: u8) {
  %g = group_id
  %c7 = constant 7 -> index
  %c100 = constant 100 -> index
  %r = arith.rem %g, %c7 : index
  %end = arith.add %r, %c100 : index
  %lt = cmp.lt %end, %c100 : index
  %min = select %lt, %end, %c100 : index
  %gt = cmp.gt %r, %c7 : index
  %max = select %gt, %r, %c7 : index
  %q = arith.div %end, %c7 : index
  %wide = arith.mul %g, %c100 : index
  %si = cast %s : i32 -> index
  %ui = cast %u : u8 -> index
  %n = size %d[0] : memref<f32x?>
  %zero = constant 0 -> index
  %loaded = load %v[%zero] : memref<indexx8>
  foreach %i = %r, %min {
    %y = load %x[%i] : memref<f32x100>
    store %y, %x[%i] : memref<f32x100>
  }
}
"""


def test_interval_rules() -> None:
    """Constants, rem/div by constants, the min/max idiom, casts, sizes, loop variables;
    loads, dynamic sizes and group_id times a constant are not narrow."""
    func = tensorlang.parse(RANGES).functions[0]
    values = {v.name: v for inst in func.walk() for v in inst.results}
    ranges = index_ranges(func)
    got = {name: ranges.get(v) for name, v in values.items()}
    assert got["r"] == (0, 6)
    assert got["end"] == (100, 106)
    assert got["min"] == (100, 100)
    assert got["max"] == (7, 7)
    assert got["q"] == (14, 15)
    assert got["wide"] == (0, 100 * (2**32 - 1)) and not fits(got["wide"])
    assert got["si"] == (-2**31, 2**31 - 1) and not fits(got["si"], NARROW)
    assert got["ui"] == (0, 255)
    assert got["n"] is None and got["loaded"] is None
    (loop,) = [inst for inst in func.walk() if inst.name == "foreach"]
    assert ranges[loop.regions[0].args[0]] == (0, 99)


def _module(signature: str, body: str) -> str:
    return f"func.func public @main{signature} {{\n{body}\n}}\n"


BCAST = _module("(%x: tensor<37x129xf32>, %b: tensor<129xf32>, %c: tensor<37xf32>) -> "
                "(tensor<37x129xf32>, tensor<129x37xf32>)", """
  %0 = stablehlo.broadcast_in_dim %b, dims = [1] : (tensor<129xf32>) -> tensor<37x129xf32>
  %1 = stablehlo.broadcast_in_dim %c, dims = [0] : (tensor<37xf32>) -> tensor<37x129xf32>
  %2 = stablehlo.subtract %x, %0 : tensor<37x129xf32>
  %3 = stablehlo.multiply %2, %1 : tensor<37x129xf32>
  %4 = stablehlo.exponential %3 : tensor<37x129xf32>
  %5 = stablehlo.transpose %x, dims = [1, 0] : (tensor<37x129xf32>) -> tensor<129x37xf32>
  return %4, %5 : tensor<37x129xf32>, tensor<129x37xf32>""")

GATHER = _module("(%t: tensor<50x33xf32>, %i: tensor<70x1xi32>) -> tensor<70x33xf32>", """
  %0 = "stablehlo.gather"(%t, %i) <{dimension_numbers = #stablehlo.gather<offset_dims = [1],
      collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>,
      indices_are_sorted = false, slice_sizes = array<i64: 1, 33>}>
      : (tensor<50x33xf32>, tensor<70x1xi32>) -> tensor<70x33xf32>
  return %0 : tensor<70x33xf32>""")

RESHAPE = _module("(%x: tensor<30x70xf32>) -> tensor<21x100xf32>", """
  %0 = stablehlo.transpose %x, dims = [1, 0] : (tensor<30x70xf32>) -> tensor<70x30xf32>
  %1 = stablehlo.reshape %0 : (tensor<70x30xf32>) -> tensor<21x100xf32>
  return %1 : tensor<21x100xf32>""")

CONV = _module("(%x: tensor<2x9x11x5xf32>, %w: tensor<3x3x5x6xf32>) -> tensor<2x9x11x6xf32>", """
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f],
      window = {pad = [[1, 1], [1, 1]]}
      {batch_group_count = 1 : i64, feature_group_count = 1 : i64}
      : (tensor<2x9x11x5xf32>, tensor<3x3x5x6xf32>) -> tensor<2x9x11x6xf32>
  return %0 : tensor<2x9x11x6xf32>""")


def _conv_ref(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    xp = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    out = np.zeros((*x.shape[:3], w.shape[3]), np.float64)
    for i, j in itertools.product(range(x.shape[1]), range(x.shape[2])):
        out[:, i, j, :] = np.einsum("bhwc,hwco->bo", xp[:, i:i + 3, j:j + 3, :], w)
    return out


@pytest.fixture(params=["cpu", "gpu"])
def narrow_run(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch):
    """Compile and run a StableHLO module with ``int`` indices, CPU- or GPU-style."""
    monkeypatch.setattr(executable, "POISON", True)
    original = compiler.target_from_device

    def target(device: object) -> Target:
        return dataclasses.replace(original(device), kind=request.param, narrow_index=True)

    monkeypatch.setattr(compiler, "target_from_device", target)

    def run(text: str, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        return compiler.compile_lowered(lower_function(frontend.parse(text)))(*arrays)

    return run


def test_broadcasts_and_transpose(narrow_run) -> None:
    rng = np.random.default_rng(1)
    x, b, c = (rng.standard_normal(s).astype(np.float32) for s in ((37, 129), (129,), (37,)))
    r0, r1 = narrow_run(BCAST, x, b, c)
    np.testing.assert_allclose(r0, np.exp((x - b) * c[:, None]), rtol=1e-5)
    np.testing.assert_array_equal(r1, x.T)


def test_gather_clamps_out_of_range_indices(narrow_run) -> None:
    """Indices from data (i32, possibly negative or too large) are clamped in 64 bits."""
    rng = np.random.default_rng(2)
    t = rng.standard_normal((50, 33)).astype(np.float32)
    i = rng.integers(-2**31, 2**31 - 1, (70, 1), dtype=np.int64).astype(np.int32)
    i[:40, 0] = rng.integers(0, 50, 40)
    (out,) = narrow_run(GATHER, t, i)
    np.testing.assert_array_equal(out, t[np.clip(i[:, 0], 0, 49)])


def test_reshape_of_transpose_divides(narrow_run) -> None:
    x = np.random.default_rng(3).standard_normal((30, 70)).astype(np.float32)
    (out,) = narrow_run(RESHAPE, x)
    np.testing.assert_array_equal(out, x.T.reshape(21, 100))


def test_im2col_convolution(narrow_run) -> None:
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 9, 11, 5)).astype(np.float32)
    w = rng.standard_normal((3, 3, 5, 6)).astype(np.float32)
    (out,) = narrow_run(CONV, x, w)
    np.testing.assert_allclose(out, _conv_ref(x, w), rtol=1e-4, atol=1e-4)
