"""Row fusion (softmax, log-softmax, layernorm, RMS norm, logsumexp as one kernel) against
numpy: random data on poisoned buffers, short rows (a work-item per row, row counts that
do not fill the last work-group) and long rows (a work-group per row), -inf and NaN rows,
and the kernel counts that pin the fusion down."""

from __future__ import annotations

import numpy as np
import pytest

import frontend
from backend_opencl.api.compiler import compile_lowered
from frontend.lower import lower_function
from frontend.lower.families.reduce import rows as reduce_rows
from tests.lowering.conftest import module, rand, run
from tests.lowering.test_fusion import kernels


def _ty(shape: tuple[int, ...]) -> str:
    return "tensor<" + "".join(f"{d}x" for d in shape) + "f32>"


def _rows(shape: tuple[int, ...], rank: int) -> tuple[str, str, str, str]:
    """Types of x, the row result, the row padded with ones, and the dims text."""
    row = shape[:rank]
    ones = row + (1,) * (len(shape) - rank)
    dims = list(range(rank, len(shape)))
    return _ty(shape), _ty(row), _ty(ones), str(dims)


def _reduce(name: str, x: str, body: str, init: str, types: tuple[str, str, str]) -> str:
    t, r, dims = types
    return (f"  %i{name} = stablehlo.constant dense<{init}> : tensor<f32>\n"
            f"  %{name} = stablehlo.reduce({x} init: %i{name}) applies stablehlo.{body} "
            f"across dimensions = {dims} : ({t}, tensor<f32>) -> {r}\n")


def _back(name: str, v: str, rank: int, types: tuple[str, str, str]) -> str:
    """%name = v (row shape) broadcast back to x's shape, through the padded row shape."""
    t, r, ones = types
    keep = str(list(range(rank)))
    return (f"  %{name}_1 = stablehlo.broadcast_in_dim {v}, dims = {keep} : ({r}) -> {ones}\n"
            f"  %{name} = stablehlo.broadcast_in_dim %{name}_1, dims = "
            f"{list(range(len(t.split('x')) - 1))} : ({ones}) -> {t}\n")


def softmax(shape: tuple[int, ...], rank: int, log: bool = False) -> str:
    """jax.nn.softmax / log_softmax over the trailing dims, as JAX prints it."""
    t, r, ones, dims = _rows(shape, rank)
    body = _reduce("m", "%x", "maximum", "0xFF800000", (t, r, dims))
    body += _back("mb", "%m", rank, (t, r, ones))
    body += f"  %s = stablehlo.subtract %x, %mb : {t}\n  %e = stablehlo.exponential %s : {t}\n"
    body += _reduce("z", "%e", "add", "0.0", (t, r, dims))
    if log:
        body += f"  %lz = stablehlo.log %z : {r}\n" + _back("zb", "%lz", rank, (t, r, ones))
        body += f"  %o = stablehlo.subtract %s, %zb : {t}\n"
    else:
        body += _back("zb", "%z", rank, (t, r, ones))
        body += f"  %o = stablehlo.divide %e, %zb : {t}\n"
    return module(f"(%x: {t}) -> {t}", body + f"  return %o : {t}")


def layernorm(shape: tuple[int, ...], rms: bool = False) -> str:
    """Layernorm (or RMS norm) over the last dim with a scale vector."""
    t, r, ones, dims = _rows(shape, len(shape) - 1)
    n, g = shape[-1], _ty(shape[-1:])
    last = len(shape) - 1
    body = f"  %n = stablehlo.constant dense<{float(n)}> : {r}\n"
    if rms:
        body += f"  %c = stablehlo.multiply %x, %x : {t}\n"
    else:
        body += _reduce("s", "%x", "add", "0.0", (t, r, dims))
        body += f"  %mean = stablehlo.divide %s, %n : {r}\n"
        body += _back("mb", "%mean", last, (t, r, ones))
        body += f"  %d = stablehlo.subtract %x, %mb : {t}\n"
        body += f"  %c = stablehlo.multiply %d, %d : {t}\n"
    body += _reduce("v", "%c", "add", "0.0", (t, r, dims))
    body += f"  %eps = stablehlo.constant dense<1.0e-5> : {r}\n"
    body += f"  %var = stablehlo.divide %v, %n : {r}\n  %ve = stablehlo.add %var, %eps : {r}\n"
    body += f"  %rs = stablehlo.rsqrt %ve : {r}\n" + _back("rb", "%rs", last, (t, r, ones))
    body += f"  %y = stablehlo.multiply {'%x' if rms else '%d'}, %rb : {t}\n"
    body += f"  %gb = stablehlo.broadcast_in_dim %g, dims = [{last}] : ({g}) -> {t}\n"
    body += f"  %o = stablehlo.multiply %y, %gb : {t}\n"
    return module(f"(%x: {t}, %g: {g}) -> {t}", body + f"  return %o : {t}")


def np_softmax(x: np.ndarray, rank: int, log: bool = False) -> np.ndarray:
    """numpy's softmax / log-softmax over the trailing dims (in f64)."""
    axes = tuple(range(rank, x.ndim))
    x = x.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        s = x - x.max(axis=axes, keepdims=True)
        z = np.exp(s).sum(axis=axes, keepdims=True)
        return s - np.log(z) if log else np.exp(s) / z


def np_layernorm(x: np.ndarray, g: np.ndarray, rms: bool = False) -> np.ndarray:
    """numpy's layernorm / RMS norm over the last dim (in f64)."""
    x = x.astype(np.float64)
    d = x if rms else x - x.mean(-1, keepdims=True)
    return d / np.sqrt((d * d).mean(-1, keepdims=True) + 1e-5) * g


SHAPES = [((37, 10), 1), ((3, 5, 40), 2), ((6, 333), 1), ((5, 1024), 1), ((3, 700), 1),
          ((2, 3, 4, 64), 2), ((1, 2048), 1), ((300,), 0), ((2048,), 0), ((70, 600), 1)]
"""(shape, row rank): short rows (37 rows: the last work-group partly filled; two
trailing dims), few long rows (a work-group per row, 700 not a multiple of its size),
whole vectors (rank 0: one row), many long rows (a work-item per row)."""


@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize(("shape", "rank"), SHAPES)
def test_softmax_is_one_kernel(shape: tuple[int, ...], rank: int, log: bool) -> None:
    text = softmax(shape, rank, log)
    assert len(kernels(text)) == 1
    x = rand(shape) * 4
    np.testing.assert_allclose(run(text, x)[0], np_softmax(x, rank, log), rtol=2e-6,
                               atol=2e-6)


@pytest.mark.parametrize("rms", [False, True])
@pytest.mark.parametrize("shape", [(37, 10), (6, 333), (4, 1024), (2, 3, 777)])
def test_layernorm_is_one_kernel(shape: tuple[int, ...], rms: bool) -> None:
    text = layernorm(shape, rms)
    assert len(kernels(text)) == 1
    x, g = rand(shape) + 3, rand(shape[-1:])
    np.testing.assert_allclose(run(text, x, g)[0], np_layernorm(x, g, rms), rtol=2e-5,
                               atol=2e-5)


@pytest.mark.parametrize("length", [10, 1024])
def test_infinite_and_nan_rows(length: int) -> None:
    x = rand((6, length))
    x[1] = -np.inf
    x[2, 3] = np.nan
    x[3, 0] = np.inf
    x[4, :5] = -np.inf
    got = run(softmax((6, length), 1), x)[0]
    np.testing.assert_allclose(got, np_softmax(x, 1), rtol=2e-6, atol=2e-6, equal_nan=True)


@pytest.mark.parametrize("length", [10, 1024])
def test_logsumexp_stores_one_value_per_row(length: int) -> None:
    t, r = _ty((9, length)), _ty((9,))
    body = _reduce("m", "%x", "maximum", "0xFF800000", (t, r, "[1]"))
    body += _back("mb", "%m", 1, (t, r, _ty((9, 1))))
    body += f"  %e0 = stablehlo.subtract %x, %mb : {t}\n  %e = stablehlo.exponential %e0 : {t}\n"
    body += _reduce("z", "%e", "add", "0.0", (t, r, "[1]"))
    body += f"  %l = stablehlo.log %z : {r}\n  %o = stablehlo.add %l, %m : {r}\n"
    text = module(f"(%x: {t}) -> {r}", body + f"  return %o : {r}")
    assert len(kernels(text)) == 1
    x = rand((9, length)) * 3
    want = np.log(np.exp(x - x.max(1, keepdims=True)).sum(1)) + x.max(1)
    np.testing.assert_allclose(run(text, x)[0], want, rtol=2e-6, atol=2e-6)


def test_refused_when_the_reduce_result_is_also_returned() -> None:
    t, r = _ty((8, 50)), _ty((8,))
    body = _reduce("s", "%x", "add", "0.0", (t, r, "[1]"))
    body += _back("sb", "%s", 1, (t, r, _ty((8, 1))))
    body += f"  %o = stablehlo.divide %x, %sb : {t}\n"
    text = module(f"(%x: {t}) -> ({t}, {r})", body + f"  return %o, %s : {t}, {r}")
    assert len(kernels(text)) == 2
    x = rand((8, 50)) + 5
    got, s = run(text, x)
    np.testing.assert_allclose(s, x.sum(1), rtol=1e-5)
    np.testing.assert_allclose(got, x / x.sum(1, keepdims=True), rtol=1e-5)


def test_refused_for_a_reduce_over_leading_dims() -> None:
    t, r = _ty((50, 8)), _ty((8,))
    body = (f"  %z = stablehlo.constant dense<0.0> : tensor<f32>\n"
            f"  %s = stablehlo.reduce(%x init: %z) applies stablehlo.add across dimensions "
            f"= [0] : ({t}, tensor<f32>) -> {r}\n"
            f"  %sb = stablehlo.broadcast_in_dim %s, dims = [1] : ({r}) -> {t}\n"
            f"  %o = stablehlo.divide %x, %sb : {t}\n")
    text = module(f"(%x: {t}) -> {t}", body + f"  return %o : {t}")
    assert len(kernels(text)) == 2
    x = rand((50, 8)) + 5
    np.testing.assert_allclose(run(text, x)[0], x / x.sum(0), rtol=1e-5)


def test_switched_off_gives_the_same_numbers(monkeypatch: pytest.MonkeyPatch) -> None:
    text = softmax((4, 600), 1)
    x = rand((4, 600))
    fused = run(text, x)[0]
    monkeypatch.setattr(reduce_rows, "ENABLED", False)
    assert len(kernels(text)) == 4
    unfused = compile_lowered(lower_function(frontend.parse(text)))(x)[0]
    np.testing.assert_allclose(fused, unfused, rtol=2e-6, atol=1e-7)


@pytest.mark.parametrize("coop", [512, 10**9])
def test_both_strategies_on_one_shape(monkeypatch: pytest.MonkeyPatch, coop: int) -> None:
    monkeypatch.setattr(reduce_rows, "COOP_MIN", coop)
    text = layernorm((7, 640))
    exe = compile_lowered(lower_function(frontend.parse(text)))  # not the cached build
    x, g = rand((7, 640)), rand((640,))
    np.testing.assert_allclose(exe(x, g)[0], np_layernorm(x, g), rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize(("shape", "body", "init"), [((1000, 7), "add", "0.0"),
                                                     ((333, 3, 5), "maximum", "0xFF800000"),
                                                     ((5, 100), "minimum", "0x7F800000")])
def test_plain_row_reduce_spreads_rows_over_work_groups(shape: tuple[int, ...], body: str,
                                                        init: str) -> None:
    rank = 1
    t, r, _, dims = _rows(shape, rank)
    text = module(f"(%x: {t}) -> {r}",
                  _reduce("s", "%x", body, init, (t, r, dims)) + f"  return %s : {r}")
    x = rand(shape)
    x[0] = np.nan
    fn = {"add": np.sum, "maximum": np.max, "minimum": np.min}[body]
    want = fn(x.astype(np.float64), axis=tuple(range(rank, len(shape))))
    np.testing.assert_allclose(run(text, x)[0], want, rtol=1e-5, atol=1e-5, equal_nan=True)


def test_consumer_operand_computed_by_a_later_kernel() -> None:
    """The group is lowered at its root, after the dot that its divide also reads."""
    t, r = _ty((8, 40)), _ty((8,))
    body = _reduce("s", "%x", "add", "0.0", (t, r, "[1]"))
    body += _back("sb", "%s", 1, (t, r, _ty((8, 1))))
    body += (f"  %d = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : "
             f"({t}, tensor<40x40xf32>) -> {t}\n")
    body += f"  %o = stablehlo.divide %d, %sb : {t}\n"
    text = module(f"(%x: {t}, %w: tensor<40x40xf32>) -> {t}", body + f"  return %o : {t}")
    assert len(kernels(text)) == 2
    x, w = rand((8, 40)) + 3, rand((40, 40))
    np.testing.assert_allclose(run(text, x, w)[0], (x @ w) / x.sum(1, keepdims=True),
                               rtol=1e-5, atol=1e-5)


def test_softmax_inside_a_loop_body() -> None:
    t = _ty((6, 20))
    inner = softmax((6, 20), 1).split("{\n", 1)[1].rsplit("return", 1)[0]
    inner = inner.replace("%x", "%h")
    text = module(f"(%x: {t}) -> {t}", f"""
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %0:2 = stablehlo.while(%i = %c0, %h = %x) : tensor<i32>, {t}
   cond {{
    %n = stablehlo.constant dense<3> : tensor<i32>
    %p = stablehlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  }} do {{
    %one = stablehlo.constant dense<1> : tensor<i32>
    %j = stablehlo.add %i, %one : tensor<i32>
{inner}
    stablehlo.return %j, %o : tensor<i32>, {t}
  }}
  return %0#1 : {t}""")
    x = rand((6, 20)) * 3
    want = x.astype(np.float64)
    for _ in range(3):
        want = np_softmax(want, 1)
    np.testing.assert_allclose(run(text, x)[0], want, rtol=2e-6, atol=2e-6)
