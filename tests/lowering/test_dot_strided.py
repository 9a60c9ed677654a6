"""dot_general operands that are lazy slices, reshapes and transposes of a buffer (the
heads of attention cut out of a fused QKV projection) are read in place by the gemm as
strided views, without a layout kernel: kernel counts and numbers against numpy on
poisoned buffers, and views the gemm cannot read in place still computed right."""

from __future__ import annotations

import numpy as np
import pytest

from tests.lowering.conftest import module, rand, run
from tests.lowering.test_fusion import kernels

B, S, H, D = 2, 40, 4, 8  # 40 rows: a full and a partial row tile


def _heads(name: str, lo: int) -> str:
    """Head-major [B, H, S, D] view ``name`` of columns [lo, lo + H*D) of %qkv."""
    return f"""
  %{name}s = stablehlo.slice %qkv [0:{B}, 0:{S}, {lo}:{lo + H * D}]
      : (tensor<{B}x{S}x{3 * H * D}xf32>) -> tensor<{B}x{S}x{H * D}xf32>
  %{name}r = stablehlo.reshape %{name}s
      : (tensor<{B}x{S}x{H * D}xf32>) -> tensor<{B}x{S}x{H}x{D}xf32>
  %{name} = stablehlo.transpose %{name}r, dims = [0, 2, 1, 3]
      : (tensor<{B}x{S}x{H}x{D}xf32>) -> tensor<{B}x{H}x{S}x{D}xf32>"""


ATTENTION = module(
    f"(%qkv: tensor<{B}x{S}x{3 * H * D}xf32>) -> (tensor<{B}x{H}x{S}x{S}xf32>, "
    f"tensor<{B}x{H}x{S}x{D}xf32>)",
    _heads("q", 0) + _heads("k", H * D) + _heads("v", 2 * H * D) + f"""
  %s = stablehlo.dot_general %q, %k, batching_dims = [0, 1] x [0, 1],
      contracting_dims = [3] x [3]
      : (tensor<{B}x{H}x{S}x{D}xf32>, tensor<{B}x{H}x{S}x{D}xf32>) -> tensor<{B}x{H}x{S}x{S}xf32>
  %o = stablehlo.dot_general %s, %v, batching_dims = [0, 1] x [0, 1],
      contracting_dims = [3] x [2]
      : (tensor<{B}x{H}x{S}x{S}xf32>, tensor<{B}x{H}x{S}x{D}xf32>) -> tensor<{B}x{H}x{S}x{D}xf32>
  return %s, %o : tensor<{B}x{H}x{S}x{S}xf32>, tensor<{B}x{H}x{S}x{D}xf32>""")


def test_attention_heads_are_read_in_place() -> None:
    assert len(kernels(ATTENTION)) == 2  # the two gemms, no layout kernels
    qkv = rand((B, S, 3 * H * D))
    heads = qkv.astype(np.float64).reshape(B, S, 3, H, D).transpose(2, 0, 3, 1, 4)
    q, k, v = heads
    s = q @ k.transpose(0, 1, 3, 2)
    got_s, got_o = run(ATTENTION, qkv)
    np.testing.assert_allclose(got_s, s, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(got_o, s @ v, rtol=1e-5, atol=1e-3)


def _single(view: str, shape: tuple[int, ...], ref: object) -> tuple[str, object]:
    """x[%in] viewed by ``view`` (defining %x of [6, 16]) times w [16, 5]."""
    sig = "x".join(map(str, shape))
    return module(f"(%in: tensor<{sig}xf32>, %w: tensor<16x5xf32>) -> tensor<6x5xf32>",
                  view + """
  %d = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0]
      : (tensor<6x16xf32>, tensor<16x5xf32>) -> tensor<6x5xf32>
  return %d : tensor<6x5xf32>"""), ref


VIEWS = [
    # rows of a wider matrix: in place (leading dimension 40)
    ("""%x = stablehlo.slice %in [1:7, 20:36] : (tensor<9x40xf32>) -> tensor<6x16xf32>""",
     (9, 40), lambda a: a[1:7, 20:36], 1),
    # every other column: not contiguous, copied by a layout kernel
    ("""%x = stablehlo.slice %in [0:6, 0:32:2] : (tensor<6x32xf32>) -> tensor<6x16xf32>""",
     (6, 32), lambda a: a[:, 0:32:2], 2),
    # a transpose merged by a reshape: not a strided view, copied
    ("""%t = stablehlo.transpose %in, dims = [1, 0, 2] : (tensor<2x6x8xf32>) -> tensor<6x2x8xf32>
  %x = stablehlo.reshape %t : (tensor<6x2x8xf32>) -> tensor<6x16xf32>""",
     (2, 6, 8), lambda a: a.transpose(1, 0, 2).reshape(6, 16), 2),
    # a reshape splitting and merging contiguous dimensions: in place
    ("""%r = stablehlo.reshape %in : (tensor<3x2x16xf32>) -> tensor<6x16xf32>
  %x = stablehlo.slice %r [0:6, 0:16] : (tensor<6x16xf32>) -> tensor<6x16xf32>""",
     (3, 2, 16), lambda a: a.reshape(6, 16), 1),
]


@pytest.mark.parametrize(("view", "shape", "ref", "count"), VIEWS)
def test_views_of_a_buffer(view: str, shape: tuple[int, ...], ref: object,
                           count: int) -> None:
    text, _ = _single(view, shape, ref)
    assert len(kernels(text)) == count
    a, w = rand(shape), rand((16, 5))
    want = ref(a.astype(np.float64)) @ w.astype(np.float64)  # type: ignore[operator]
    np.testing.assert_allclose(run(text, a, w)[0], want, rtol=1e-5, atol=1e-5)


MERGE = module(
    f"(%qkv: tensor<{B}x{S}x{3 * H * D}xf32>, %w: tensor<{H * D}x6xf32>) -> "
    f"tensor<{B}x{S}x6xf32>",
    _heads("q", 0) + _heads("k", H * D) + _heads("v", 2 * H * D) + f"""
  %s = stablehlo.dot_general %q, %k, batching_dims = [0, 1] x [0, 1],
      contracting_dims = [3] x [2]
      : (tensor<{B}x{H}x{S}x{D}xf32>, tensor<{B}x{H}x{D}x{S}xf32>) -> tensor<{B}x{H}x{S}x{S}xf32>
  %o = stablehlo.dot_general %s, %v, batching_dims = [0, 1] x [0, 1],
      contracting_dims = [3] x [2]
      : (tensor<{B}x{H}x{S}x{S}xf32>, tensor<{B}x{H}x{S}x{D}xf32>) -> tensor<{B}x{H}x{S}x{D}xf32>
  %t = stablehlo.transpose %o, dims = [0, 2, 1, 3]
      : (tensor<{B}x{H}x{S}x{D}xf32>) -> tensor<{B}x{S}x{H}x{D}xf32>
  %m = stablehlo.reshape %t : (tensor<{B}x{S}x{H}x{D}xf32>) -> tensor<{B}x{S}x{H * D}xf32>
  %y = stablehlo.dot_general %m, %w, contracting_dims = [2] x [0]
      : (tensor<{B}x{S}x{H * D}xf32>, tensor<{H * D}x6xf32>) -> tensor<{B}x{S}x6xf32>
  return %y : tensor<{B}x{S}x6xf32>""").replace(
    f"%k = stablehlo.transpose %kr, dims = [0, 2, 1, 3]\n      : (tensor<{B}x{S}x{H}x{D}xf32>) "
    f"-> tensor<{B}x{H}x{S}x{D}xf32>",
    f"%k = stablehlo.transpose %kr, dims = [0, 2, 3, 1]\n      : (tensor<{B}x{S}x{H}x{D}xf32>) "
    f"-> tensor<{B}x{H}x{D}x{S}xf32>")


def test_heads_written_back_in_place_by_the_gemm() -> None:
    assert "dims = [0, 2, 3, 1]" in MERGE
    assert len(kernels(MERGE)) == 3  # three gemms: no layout kernel before the last
    qkv, w = rand((B, S, 3 * H * D)), rand((H * D, 6))
    q, k, v = qkv.astype(np.float64).reshape(B, S, 3, H, D).transpose(2, 0, 3, 1, 4)
    o = (q @ k.transpose(0, 1, 3, 2)) @ v
    want = o.transpose(0, 2, 1, 3).reshape(B, S, H * D) @ w.astype(np.float64)
    (got,) = run(MERGE, qkv, w)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-3)
