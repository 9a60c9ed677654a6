"""reduce_window as pooling (unrolled windows of at most UNROLL taps, larger ones looped)
against numpy: strides, padding, base and window dilations, windows larger than the
input, empty dimensions, several bodies and types, a fused elementwise consumer, with
poisoned buffers."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import frontend
from frontend.lower import lower_function
from frontend.lower.families.window.reduce_window import UNROLL
from tests.lowering.conftest import RNG, run
from tests.lowering.reduce_window_ref import ELEM, Window, program, reference

NEG_INF = {np.float32: "0xFF800000", np.float64: "0xFFF0000000000000",
           ml_dtypes.bfloat16: "0xFF80"}


def data(shape: tuple[int, ...], dtype: type) -> np.ndarray:
    """Random non-zero-ish data of ``dtype`` (small integers: products stay exact)."""
    if np.issubdtype(dtype, np.integer):
        return RNG.integers(-3, 4, size=shape).astype(dtype)
    return RNG.standard_normal(shape).astype(dtype)


def check(x: np.ndarray, body: str, init: float, init_text: str, win: Window,
          tol: float = 0.0) -> None:
    """Run reduce_window on ``x`` and compare with :func:`reference`."""
    want = reference(x, x.dtype.type(init), body, win)
    text = program(x.shape, want.shape, ELEM[x.dtype], body, init_text, win)
    got = run(text, x)[0]
    assert got.shape == want.shape
    if tol:
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64),
                                   rtol=tol, atol=tol)
    else:
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, ml_dtypes.bfloat16])
def test_max_pool_nhwc(dtype: type) -> None:
    """3x3 stride 2 VALID max pooling over NHWC: no guarded tap."""
    x = data((2, 9, 11, 5), dtype)
    check(x, "maximum", -np.inf, NEG_INF[dtype], Window((1, 3, 3, 1), (1, 2, 2, 1)))


def test_max_pool_same_padding_i32() -> None:
    """Padded taps read the init value (the smallest i32)."""
    x = data((3, 7, 6, 4), np.int32) * 1000
    win = Window((1, 3, 3, 1), (1, 2, 2, 1), pad=((0, 0), (1, 1), (1, 1), (0, 0)))
    check(x, "maximum", -2**31, str(-2**31), win)


def test_sum_init_not_identity_padding() -> None:
    """A padded window folds the init value once per padded tap (init 1.5, not 0)."""
    x = data((5, 6), np.float64)
    check(x, "add", 1.5, "1.5", Window((3, 2), (2, 1), pad=((2, 1), (0, 3))), tol=1e-12)


def test_dilations_and_strides() -> None:
    """Base dilation (holes read init), window dilation, strides and padding together."""
    x = data((6, 5, 3), np.float32)
    win = Window((2, 3, 1), (3, 1, 1), base=(2, 1, 3), wdil=(1, 2, 1),
                 pad=((1, 2), (2, 0), (0, 1)))
    check(x, "add", 0.0, "0.0", win, tol=1e-5)


@pytest.mark.parametrize("body,init", [("minimum", 2**31 - 1), ("multiply", 1)])
def test_int_bodies(body: str, init: int) -> None:
    x = data((4, 8, 3), np.int32)
    check(x, body, init, str(init), Window((2, 2, 1), (1, 2, 1), pad=((1, 0), (0, 1), (0, 0))))


def test_window_larger_than_input() -> None:
    """A window wider than the (padded) input: only padding and the whole input."""
    x = data((3, 4), np.float32)
    check(x, "maximum", -np.inf, NEG_INF[np.float32], Window((5, 7), pad=((2, 2), (3, 3))))


def test_large_window_looped() -> None:
    """More than UNROLL taps: the window is a loop (with padding and a stride)."""
    side = 9
    assert side * side > UNROLL
    x = data((2, 13, 12), np.float32)
    check(x, "add", 0.0, "0.0", Window((1, side, side), (1, 2, 3), pad=((0, 0), (4, 4), (3, 5))),
          tol=1e-5)


def test_empty_input_padded() -> None:
    """An empty dimension padded to a non-empty result: every element is the init."""
    x = np.zeros((0, 3), np.float32)
    check(x, "add", 2.0, "2.0", Window((1, 2), pad=((1, 1), (0, 0))))


def test_empty_result() -> None:
    x = np.zeros((4, 0, 2), np.int32)
    check(x, "maximum", -2**31, str(-2**31), Window((2, 1, 1)))


def test_bool_or() -> None:
    x = RNG.random((6, 7)) < 0.2
    check(x, "or", False, "false", Window((2, 3), (2, 1), pad=((0, 0), (1, 1))))


def test_avg_pool_divide_fused() -> None:
    """avg_pool's divide runs in the pooling kernel (one kernel) and is exact."""
    x = data((2, 8, 6, 16), np.float32)
    win = Window((1, 2, 2, 1), (1, 2, 2, 1))
    want = reference(x, np.float32(0), "add", win)
    text = program(x.shape, want.shape, "f32", "add", "0.0", win, epilogue="multiply")
    np.testing.assert_array_equal(run(text, x)[0], want * want)
    kernels = lower_function(frontend.parse(text)).kernels
    names = [line.split("(")[0] for line in kernels.splitlines() if line.startswith("func @")]
    assert names == ["func @k0_reduce_window_multiply"]
    assert " div" not in kernels and " rem " not in kernels.split("foreach", 1)[1]


def test_variadic() -> None:
    """Two inputs folded together by one body (max of one, min of the other)."""
    x, y = data((5, 6), np.float32), data((5, 6), np.float32)
    s = "tensor<f32>"
    text = f"""func.func public @main(%x: tensor<5x6xf32>, %y: tensor<5x6xf32>)
    -> (tensor<4x3xf32>, tensor<4x3xf32>) {{
  %lo = stablehlo.constant dense<0xFF800000> : {s}
  %hi = stablehlo.constant dense<0x7F800000> : {s}
  %r:2 = "stablehlo.reduce_window"(%x, %y, %lo, %hi) <{{window_dimensions = array<i64: 2, 2>,
      window_strides = array<i64: 1, 2>}}> ({{
  ^bb0(%a: {s}, %b: {s}, %c: {s}, %d: {s}):
    %m = stablehlo.maximum %a, %c : {s}
    %n = stablehlo.minimum %b, %d : {s}
    stablehlo.return %m, %n : {s}, {s}
  }}) : (tensor<5x6xf32>, tensor<5x6xf32>, {s}, {s}) -> (tensor<4x3xf32>, tensor<4x3xf32>)
  return %r#0, %r#1 : tensor<4x3xf32>, tensor<4x3xf32>
}}
"""
    got = run(text, x, y)
    win = Window((2, 2), (1, 2))
    np.testing.assert_array_equal(got[0], reference(x, np.float32(-np.inf), "maximum", win))
    np.testing.assert_array_equal(got[1], reference(y, np.float32(np.inf), "minimum", win))


def test_looped_dilations_float_max() -> None:
    """A float max window over UNROLL_SELECTS taps: its leading windowed dimensions are a
    loop (base and window dilation, padding, strides checked at run time), the last one
    unrolled inside."""
    x = data((5, 6, 4), np.float32)
    win = Window((3, 5, 2), (2, 1, 1), base=(2, 1, 2), wdil=(1, 2, 1),
                 pad=((1, 2), (3, 1), (0, 1)))
    check(x, "maximum", -np.inf, NEG_INF[np.float32], win)


def test_one_long_window_dimension() -> None:
    """A window longer than UNROLL along one dimension: every tap in the loop."""
    x = data((3, 80), np.float64)
    check(x, "add", 0.5, "0.5", Window((1, UNROLL + 6), (1, 3), pad=((0, 0), (5, 9))),
          tol=1e-12)


def test_empty_input_looped() -> None:
    """An empty input under a looped window: padding only, no load."""
    x = np.zeros((2, 0), np.float32)
    check(x, "add", 1.0, "1.0", Window((1, UNROLL + 2), pad=((0, 0), (UNROLL, 3))))
