"""reduce_window prefix scans (cumsum, cumprod, cummax, cummin, cumulative and/or) against
numpy, forward and reversed, along every axis (rows: the scanned dimension innermost;
columns: a block of later dimensions per work-group), with poisoned buffers; windows
that look like scans but are not (an init that is not the identity) keep the window
semantics."""

from __future__ import annotations

import numpy as np
import pytest

import frontend
from frontend.ir.core import Op, walk
from frontend.lower import lower_function
from frontend.lower.families.window import prefix_scan
from frontend.lower.families.window.reduce_window import window_attrs
from tests.lowering.conftest import RNG, run
from tests.lowering.reduce_window_ref import ELEM, Window, program, reference

SHAPE = (5, 7, 6)


def scan_window(shape: tuple[int, ...], axis: int, reverse: bool, extra: int = 0) -> Window:
    """The window JAX uses for a cumulative op along ``axis`` (``extra`` wider)."""
    w = shape[axis] + extra
    dims = [1] * len(shape)
    dims[axis] = w
    pad = [(0, 0)] * len(shape)
    pad[axis] = (0, w - 1) if reverse else (w - 1, 0)
    return Window(dims, pad=pad)


def cumulative(x: np.ndarray, body: str, axis: int, reverse: bool) -> np.ndarray:
    """numpy's running fold along ``axis``."""
    ufunc = {"add": np.add, "multiply": np.multiply, "maximum": np.maximum,
             "minimum": np.minimum, "and": np.bitwise_and, "or": np.bitwise_or}[body]
    if reverse:
        return np.flip(ufunc.accumulate(np.flip(x, axis), axis=axis, dtype=x.dtype), axis)
    return ufunc.accumulate(x, axis=axis, dtype=x.dtype)


def check(x: np.ndarray, body: str, init: str, axis: int, reverse: bool,
          tol: float = 0.0, extra: int = 0) -> str:
    """Run the scan; compare with numpy; return the kernels."""
    text = program(x.shape, x.shape, ELEM[x.dtype], body, init,
                   scan_window(x.shape, axis, reverse, extra))
    got = run(text, x)[0]
    want = cumulative(x, body, axis, reverse)
    if tol:
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
    else:
        np.testing.assert_array_equal(got, want)
    return lower_function(frontend.parse(text)).kernels


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_cumsum_every_axis(axis: int, reverse: bool) -> None:
    x = RNG.standard_normal(SHAPE).astype(np.float32)
    kernels = check(x, "add", "0.0", axis, reverse, tol=1e-5)
    assert "func @k0_scan" in kernels and "func @k1" not in kernels


@pytest.mark.parametrize("reverse", [False, True])
def test_cumsum_f64_long_rows(reverse: bool) -> None:
    x = RNG.standard_normal((3, 2000))
    check(x, "add", "0.0", 1, reverse, tol=1e-10)


@pytest.mark.parametrize("reverse", [False, True])
def test_cumsum_i32_wide_columns(reverse: bool) -> None:
    """More columns than one work-group's block: several blocks, the last one partial."""
    x = RNG.integers(-100, 100, size=(2, 9, 700)).astype(np.int32)
    check(x, "add", "0", 1, reverse)


@pytest.mark.parametrize("reverse", [False, True])
def test_long_rows_in_segments(reverse: bool) -> None:
    """Few long rows: segments folded, then walked from the fold of those before."""
    assert 3 < prefix_scan.FEW_ROWS and 2 * prefix_scan.SEGMENT <= 9000
    kernels = check(RNG.standard_normal((3, 9000)), "add", "0.0", 1, reverse, tol=1e-9)
    assert "func @k0_scan_partial" in kernels and "func @k1_scan" in kernels
    x = RNG.integers(-10**6, 10**6, size=(1, 2, 9001)).astype(np.int32)
    check(x, "add", "0", 2, reverse)
    check(x, "maximum", str(-2**31), 2, not reverse)


def test_cumprod_f64() -> None:
    x = RNG.uniform(0.5, 1.5, size=SHAPE)
    check(x, "multiply", "1.0", 1, False, tol=1e-12)


@pytest.mark.parametrize("body,init", [("maximum", str(-2**31)), ("minimum", str(2**31 - 1))])
@pytest.mark.parametrize("axis", [0, 2])
def test_cummax_cummin_i32(body: str, init: str, axis: int) -> None:
    x = RNG.integers(-1000, 1000, size=SHAPE).astype(np.int32)
    check(x, body, init, axis, axis == 0)


def test_cummax_init_not_identity() -> None:
    """maximum is idempotent: any init folds like the window's (init 0: max(0, ...))."""
    x = RNG.integers(-1000, 1000, size=(4, 9)).astype(np.int32)
    text = program(x.shape, x.shape, "i32", "maximum", "0", scan_window(x.shape, 1, False))
    np.testing.assert_array_equal(run(text, x)[0], np.maximum.accumulate(np.maximum(x, 0), 1))


@pytest.mark.parametrize("body,init", [("and", "-1"), ("or", "0")])
def test_and_or_i32(body: str, init: str) -> None:
    x = RNG.integers(0, 2**31 - 1, size=(6, 5)).astype(np.int32) | 1
    check(x, body, init, 0, False)
    check(x, body, init, 1, True)


def test_bool_or_reverse() -> None:
    x = RNG.random((4, 11)) < 0.15
    check(x, "or", "false", 1, True)


def test_window_wider_than_dimension() -> None:
    x = RNG.standard_normal((4, 6)).astype(np.float32)
    check(x, "add", "0.0", 1, False, tol=1e-5, extra=3)
    check(x, "add", "0.0", 0, True, tol=1e-5, extra=2)


def test_add_init_not_identity_is_not_a_scan() -> None:
    """init 1: each window adds it once per padded tap, as the spec says."""
    x = RNG.standard_normal((3, 5)).astype(np.float32)
    win = scan_window(x.shape, 1, False)
    text = program(x.shape, x.shape, "f32", "add", "1.0", win)
    np.testing.assert_allclose(run(text, x)[0], reference(x, np.float32(1), "add", win),
                               rtol=1e-5, atol=1e-5)
    assert "scan" not in lower_function(frontend.parse(text)).kernels


def test_plan() -> None:
    """The recognised form: one axis, stride 1, the window covering the dimension."""
    def plan(win: Window, body: str = "add") -> prefix_scan.Scan | None:
        text = program((4, 6), (4, 6), "f32", body, "0.0", win)
        func = frontend.parse(text).func("main")
        assert func is not None
        op = next(o for o in walk(func.body) if o.name.endswith("reduce_window"))
        assert isinstance(op, Op)
        a = window_attrs(op)
        return prefix_scan.plan(op, a.window, a.strides, a.base, a.wdil, a.pad)

    assert plan(scan_window((4, 6), 1, False)) == prefix_scan.Scan(1, False, 4, 6, 1)
    assert plan(scan_window((4, 6), 0, True)) == prefix_scan.Scan(0, True, 1, 4, 6)
    assert plan(Window((1, 5), pad=((0, 0), (4, 0)))) is None  # narrower than the dimension
    assert plan(Window((1, 6), pad=((0, 0), (4, 1)))) is None  # not a prefix
    assert plan(scan_window((4, 6), 1, False), "subtract") is None
