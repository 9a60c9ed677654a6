"""Fusion across calls and epilogue fusion into gemm kernels: kernel counts and numbers.

Kernel counts pin the fused patterns down (so fusion cannot silently regress); every
case also runs against numpy with random data on poisoned buffers, including the cases
where fusion must be refused.
"""

from __future__ import annotations

import numpy as np
import pytest

import frontend
from frontend.lower import lower_function
from frontend.lower.families.control import device_loop
from tensorlang.diagnostics import CompileError
from tensorlang.plan import Launch, Step, While
from tests.lowering.conftest import module, rand, run

RELU = """
func.func private @relu(%x: tensor<8x16xf32>) -> tensor<8x16xf32> {
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %zb = stablehlo.broadcast_in_dim %z, dims = [] : (tensor<f32>) -> tensor<8x16xf32>
  %0 = stablehlo.maximum %x, %zb : tensor<8x16xf32>
  return %0 : tensor<8x16xf32>
}
"""


def kernels(text: str) -> list[str]:
    """The names of the kernels ``text``'s @main lowers to: each launched once, unless
    equal kernels were merged (frontend/lower/core/dedup.py; :func:`launched` then names it
    once per launch)."""
    lowered = lower_function(frontend.parse(text))
    names = [line.split("(")[0][len("func @"):] for line in lowered.kernels.splitlines()
             if line.startswith("func @")]
    assert sorted(set(launched(lowered.plan.steps))) == sorted(names)
    return names


def launched(steps: tuple[Step, ...]) -> list[str]:
    """The kernel of each launch among ``steps`` and the steps nested in them."""
    names: list[str] = []
    for step in steps:
        if isinstance(step, Launch):
            names.append(step.kernel)
        elif isinstance(step, While):
            names += launched(step.cond) + launched(step.body)
    return names


def launches(steps: tuple[Step, ...]) -> int:
    """The launches among ``steps`` and the steps nested in them."""
    return len(launched(steps))


def relu(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, 0)


def test_dense_layer_with_bias_and_called_relu_is_one_kernel() -> None:
    text = RELU + module(
        "(%x: tensor<8x4xf32>, %w: tensor<4x16xf32>, %b: tensor<16xf32>) -> tensor<8x16xf32>",
        """
  %0 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0]
      : (tensor<8x4xf32>, tensor<4x16xf32>) -> tensor<8x16xf32>
  %1 = stablehlo.broadcast_in_dim %b, dims = [1] : (tensor<16xf32>) -> tensor<8x16xf32>
  %2 = stablehlo.add %0, %1 : tensor<8x16xf32>
  %3 = func.call @relu(%2) : (tensor<8x16xf32>) -> tensor<8x16xf32>
  return %3 : tensor<8x16xf32>""")
    assert kernels(text) == ["k0_dot_maximum"]
    x, w, b = rand((8, 4)), rand((4, 16)), rand((16,))
    (got,) = run(text, x, w, b)
    np.testing.assert_allclose(got, relu(x @ w + b), rtol=1e-5, atol=1e-5)


def test_function_called_twice_with_different_arguments() -> None:
    text = """
func.func private @axpx(%a: tensor<6x5xf32>, %x: tensor<6x5xf32>) -> tensor<6x5xf32> {
  %0 = stablehlo.multiply %a, %x : tensor<6x5xf32>
  %1 = stablehlo.add %0, %x : tensor<6x5xf32>
  return %1 : tensor<6x5xf32>
}
""" + module("(%p: tensor<6x5xf32>, %q: tensor<6x5xf32>, %r: tensor<6x5xf32>) "
             "-> tensor<6x5xf32>", """
  %0 = func.call @axpx(%p, %q) : (tensor<6x5xf32>, tensor<6x5xf32>) -> tensor<6x5xf32>
  %1 = func.call @axpx(%q, %r) : (tensor<6x5xf32>, tensor<6x5xf32>) -> tensor<6x5xf32>
  %2 = stablehlo.subtract %0, %1 : tensor<6x5xf32>
  return %2 : tensor<6x5xf32>""")
    assert kernels(text) == ["k0_subtract"]
    p, q, r = rand((6, 5)), rand((6, 5)), rand((6, 5))
    (got,) = run(text, p, q, r)
    np.testing.assert_allclose(got, (p * q + q) - (q * r + r), rtol=1e-5, atol=1e-6)


def test_layer_function_called_twice_gives_two_fused_gemms() -> None:
    text = """
func.func private @layer(%x: tensor<8x8xf32>, %w: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0]
      : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %1 = stablehlo.tanh %0 : tensor<8x8xf32>
  return %1 : tensor<8x8xf32>
}
""" + module("(%x: tensor<8x8xf32>, %w1: tensor<8x8xf32>, %w2: tensor<8x8xf32>) "
             "-> (tensor<8x8xf32>, tensor<8x8xf32>)", """
  %0 = func.call @layer(%x, %w1) : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %1 = func.call @layer(%0, %w2) : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  %2 = stablehlo.add %0, %1 : tensor<8x8xf32>
  return %1, %2 : tensor<8x8xf32>, tensor<8x8xf32>""")
    assert kernels(text) == ["k0_dot_tanh", "k2_add"]  # the two gemms are equal kernels
    assert launched(lower_function(frontend.parse(text)).plan.steps) == \
        ["k0_dot_tanh", "k0_dot_tanh", "k2_add"]
    x, w1, w2 = rand((8, 8)), rand((8, 8)), rand((8, 8))
    h = np.tanh(x @ w1)
    out = np.tanh(h @ w2)
    got1, got2 = run(text, x, w1, w2)
    np.testing.assert_allclose(got1, out, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got2, h + out, rtol=1e-5, atol=1e-5)


def test_recursive_call_is_an_error() -> None:
    text = """
func.func private @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  %0 = func.call @f(%x) : (tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
func.func public @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  %0 = func.call @f(%x) : (tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
"""
    with pytest.raises(CompileError, match="recursive call of @f"):
        lower_function(frontend.parse(text))


def test_batched_epilogue_with_partial_last_tile() -> None:
    """70 rows: the last tile of each batch element has 6 rows; the bias is per batch."""
    text = module("(%x: tensor<2x70x9xf32>, %w: tensor<2x9x5xf32>, %b: tensor<2x5xf32>) "
                  "-> tensor<2x70x5xf32>", """
  %0 = stablehlo.dot_general %x, %w, batching_dims = [0] x [0], contracting_dims = [2] x [1]
      : (tensor<2x70x9xf32>, tensor<2x9x5xf32>) -> tensor<2x70x5xf32>
  %1 = stablehlo.broadcast_in_dim %b, dims = [0, 2] : (tensor<2x5xf32>) -> tensor<2x70x5xf32>
  %2 = stablehlo.multiply %0, %1 : tensor<2x70x5xf32>
  %3 = stablehlo.exponential %2 : tensor<2x70x5xf32>
  return %3 : tensor<2x70x5xf32>""")
    assert kernels(text) == ["k0_dot_exponential"]
    x, w, b = rand((2, 70, 9)), rand((2, 9, 5)), rand((2, 5))
    (got,) = run(text, x, w, b)
    want = np.exp(np.einsum("bmk,bkn->bmn", x, w) * b[:, None, :])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_gelu_epilogue_reads_the_gemm_result_several_times() -> None:
    text = module("(%x: tensor<4x8xf32>, %w: tensor<8x6xf32>) -> tensor<4x6xf32>", """
  %0 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0]
      : (tensor<4x8xf32>, tensor<8x6xf32>) -> tensor<4x6xf32>
  %1 = stablehlo.multiply %0, %0 : tensor<4x6xf32>
  %2 = stablehlo.multiply %1, %0 : tensor<4x6xf32>
  %c = stablehlo.constant dense<0.044715> : tensor<4x6xf32>
  %3 = stablehlo.multiply %c, %2 : tensor<4x6xf32>
  %4 = stablehlo.add %0, %3 : tensor<4x6xf32>
  %5 = stablehlo.tanh %4 : tensor<4x6xf32>
  %6 = stablehlo.multiply %0, %5 : tensor<4x6xf32>
  return %6 : tensor<4x6xf32>""")
    assert kernels(text) == ["k0_dot_multiply"]
    x, w = rand((4, 8)), rand((8, 6))
    (got,) = run(text, x, w)
    d = x @ w
    np.testing.assert_allclose(got, d * np.tanh(d + 0.044715 * d ** 3), rtol=1e-5, atol=1e-5)


def test_epilogue_stops_where_a_chain_value_is_also_used_elsewhere() -> None:
    """exp(d) is returned as well as consumed: the gemm kernel writes exp(d); the add
    runs in a kernel of its own."""
    text = module("(%x: tensor<3x4xf32>, %w: tensor<4x5xf32>) "
                  "-> (tensor<3x5xf32>, tensor<3x5xf32>)", """
  %0 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0]
      : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
  %1 = stablehlo.exponential %0 : tensor<3x5xf32>
  %2 = stablehlo.add %1, %1 : tensor<3x5xf32>
  return %1, %2 : tensor<3x5xf32>, tensor<3x5xf32>""")
    assert kernels(text) == ["k0_dot_exponential", "k1_add"]
    x, w = rand((3, 4)), rand((4, 5))
    e, s = run(text, x, w)
    np.testing.assert_allclose(e, np.exp(x @ w), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(s, 2 * np.exp(x @ w), rtol=1e-5, atol=1e-6)


def test_fusion_refused_when_the_gemm_result_is_also_read_transposed() -> None:
    text = module("(%x: tensor<6x4xf32>, %w: tensor<4x6xf32>, %b: tensor<6xf32>) "
                  "-> tensor<6x6xf32>", """
  %0 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0]
      : (tensor<6x4xf32>, tensor<4x6xf32>) -> tensor<6x6xf32>
  %1 = stablehlo.broadcast_in_dim %b, dims = [1] : (tensor<6xf32>) -> tensor<6x6xf32>
  %2 = stablehlo.add %0, %1 : tensor<6x6xf32>
  %3 = stablehlo.transpose %0, dims = [1, 0] : (tensor<6x6xf32>) -> tensor<6x6xf32>
  %4 = stablehlo.multiply %2, %3 : tensor<6x6xf32>
  return %4 : tensor<6x6xf32>""")
    assert kernels(text) == ["k0_dot", "k1_multiply"]
    x, w, b = rand((6, 4)), rand((4, 6)), rand((6,))
    (got,) = run(text, x, w, b)
    d = x @ w
    np.testing.assert_allclose(got, (d + b) * d.T, rtol=1e-5, atol=1e-5)


def test_fusion_refused_when_the_only_consumer_broadcasts() -> None:
    """A 0-d gemm result as the scalar bound of a clamp is read at index [], not at the
    clamp's element: no epilogue."""
    text = module("(%x: tensor<5xf32>, %y: tensor<5xf32>, %v: tensor<7xf32>) "
                  "-> tensor<7xf32>", """
  %0 = stablehlo.dot_general %x, %y, contracting_dims = [0] x [0]
      : (tensor<5xf32>, tensor<5xf32>) -> tensor<f32>
  %lo = stablehlo.constant dense<-0.5> : tensor<f32>
  %1 = stablehlo.clamp %lo, %v, %0 : (tensor<f32>, tensor<7xf32>, tensor<f32>) -> tensor<7xf32>
  return %1 : tensor<7xf32>""")
    assert kernels(text) == ["k0_dot", "k1_clamp"]
    x, y, v = rand((5,)), rand((5,)), rand((7,))
    (got,) = run(text, x, y, v)
    hi = np.float32(x @ y)
    np.testing.assert_allclose(got, np.minimum(np.maximum(v, -0.5), hi), rtol=1e-5, atol=1e-6)


def test_two_gemms_feeding_one_add_fuse_into_the_first() -> None:
    text = module("(%x: tensor<5x3xf32>, %w1: tensor<3x4xf32>, %w2: tensor<3x4xf32>) "
                  "-> tensor<5x4xf32>", """
  %0 = stablehlo.dot_general %x, %w1, contracting_dims = [1] x [0]
      : (tensor<5x3xf32>, tensor<3x4xf32>) -> tensor<5x4xf32>
  %1 = stablehlo.dot_general %x, %w2, contracting_dims = [1] x [0]
      : (tensor<5x3xf32>, tensor<3x4xf32>) -> tensor<5x4xf32>
  %2 = stablehlo.add %0, %1 : tensor<5x4xf32>
  %3 = stablehlo.negate %2 : tensor<5x4xf32>
  return %3 : tensor<5x4xf32>""")
    assert kernels(text) == ["k0_dot", "k1_dot_negate"]
    x, w1, w2 = rand((5, 3)), rand((3, 4)), rand((3, 4))
    (got,) = run(text, x, w1, w2)
    np.testing.assert_allclose(got, -(x @ w1 + x @ w2), rtol=1e-5, atol=1e-5)


def test_epilogue_operand_computed_by_a_later_kernel() -> None:
    """The bias is a reduction lowered after the dot: the fused kernel runs after it."""
    text = module("(%x: tensor<4x3xf32>, %w: tensor<3x6xf32>, %y: tensor<5x6xf32>) "
                  "-> tensor<4x6xf32>", """
  %0 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0]
      : (tensor<4x3xf32>, tensor<3x6xf32>) -> tensor<4x6xf32>
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %1 = stablehlo.reduce(%y init: %z) applies stablehlo.add across dimensions = [0]
      : (tensor<5x6xf32>, tensor<f32>) -> tensor<6xf32>
  %2 = stablehlo.broadcast_in_dim %1, dims = [1] : (tensor<6xf32>) -> tensor<4x6xf32>
  %3 = stablehlo.subtract %0, %2 : tensor<4x6xf32>
  return %3 : tensor<4x6xf32>""")
    assert kernels(text) == ["k0_reduce", "k1_dot_subtract"]
    x, w, y = rand((4, 3)), rand((3, 6)), rand((5, 6))
    (got,) = run(text, x, w, y)
    np.testing.assert_allclose(got, x @ w - y.sum(axis=0), rtol=1e-5, atol=1e-5)


def test_half_precision_gemm_converts_in_its_own_kernel() -> None:
    text = module("(%x: tensor<6x8xf16>, %w: tensor<8x3xf16>) -> tensor<6x3xf32>", """
  %0 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0]
      : (tensor<6x8xf16>, tensor<8x3xf16>) -> tensor<6x3xf16>
  %1 = stablehlo.convert %0 : (tensor<6x3xf16>) -> tensor<6x3xf32>
  %2 = stablehlo.abs %1 : tensor<6x3xf32>
  return %2 : tensor<6x3xf32>""")
    names = kernels(text)
    assert names[-1] == "k1_dot_abs" and len(names) == 2  # both conversions to f32, the gemm
    x, w = rand((6, 8), np.float16), rand((8, 3), np.float16)
    (got,) = run(text, x, w)
    want = np.abs((x.astype(np.float32) @ w.astype(np.float32)).astype(np.float16))
    np.testing.assert_allclose(got, want.astype(np.float32), rtol=2e-3, atol=2e-3)


def test_epilogue_inside_a_loop_body(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(device_loop, "MAX_ELEMENTS", 0)  # the host loop's kernels
    text = module("(%x: tensor<4x4xf32>, %w: tensor<4x4xf32>) -> tensor<4x4xf32>", """
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %0:2 = stablehlo.while(%i = %c0, %h = %x) : tensor<i32>, tensor<4x4xf32>
   cond {
    %n = stablehlo.constant dense<3> : tensor<i32>
    %p = stablehlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  } do {
    %one = stablehlo.constant dense<1> : tensor<i32>
    %j = stablehlo.add %i, %one : tensor<i32>
    %d = stablehlo.dot_general %h, %w, contracting_dims = [1] x [0]
        : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
    %t = stablehlo.tanh %d : tensor<4x4xf32>
    %y = stablehlo.add %t, %h : tensor<4x4xf32>
    stablehlo.return %j, %y : tensor<i32>, tensor<4x4xf32>
  }
  return %0#1 : tensor<4x4xf32>""")
    assert kernels(text) == ["k0_constant", "k1_compare", "k2_dot_add", "k3_add"]
    x, w = rand((4, 4)), rand((4, 4))
    want = x
    for _ in range(3):
        want = np.tanh(want @ w) + want
    (got,) = run(text, x, w)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_convolution_with_bias_and_relu_fuses_into_the_gemm() -> None:
    text = module("(%x: tensor<2x6x6x3xf32>, %k: tensor<3x3x3x4xf32>, %b: tensor<4xf32>) "
                  "-> tensor<2x6x6x4xf32>", """
  %0 = stablehlo.convolution(%x, %k) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f],
      window = {stride = [1, 1], pad = [[1, 1], [1, 1]]}
      {batch_group_count = 1 : i64, feature_group_count = 1 : i64}
      : (tensor<2x6x6x3xf32>, tensor<3x3x3x4xf32>) -> tensor<2x6x6x4xf32>
  %1 = stablehlo.broadcast_in_dim %b, dims = [3] : (tensor<4xf32>) -> tensor<2x6x6x4xf32>
  %2 = stablehlo.add %0, %1 : tensor<2x6x6x4xf32>
  %z = stablehlo.constant dense<0.0> : tensor<2x6x6x4xf32>
  %3 = stablehlo.maximum %2, %z : tensor<2x6x6x4xf32>
  return %3 : tensor<2x6x6x4xf32>""")
    assert kernels(text) == ["k0_conv_maximum"]  # im2col tile, gemm and epilogue
    x, k, b = rand((2, 6, 6, 3)), rand((3, 3, 3, 4)), rand((4,))
    (got,) = run(text, x, k, b)
    padded = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    conv = np.zeros((2, 6, 6, 4), np.float32)
    for dy in range(3):
        for dx in range(3):
            conv += padded[:, dy:dy + 6, dx:dx + 6, :] @ k[dy, dx]
    np.testing.assert_allclose(got, relu(conv + b), rtol=1e-4, atol=1e-4)
