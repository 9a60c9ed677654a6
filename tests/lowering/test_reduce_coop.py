"""Cooperative reductions (a work-group per output, local-memory tree) against numpy."""

from __future__ import annotations

import numpy as np
import pytest

from tests.lowering.conftest import module, rand, reduce_module, run


@pytest.mark.parametrize(("shape", "dims"), [((7, 333), [1]), ((100003,), [0]),
                                             ((3, 130, 5), [0, 1]), ((2, 9, 1000), [2]),
                                             ((4, 4096), [1])])
def test_float_sum(shape: tuple[int, ...], dims: list[int]) -> None:
    a = rand(shape)
    got = run(reduce_module(shape, dims, "f32", "add", "0.0"), a)[0]
    np.testing.assert_allclose(got, a.astype(np.float64).sum(axis=tuple(dims)), rtol=1e-4,
                               atol=1e-3)


@pytest.mark.parametrize(("body", "fn", "init"), [("add", np.sum, "0"),
                                                  ("maximum", np.max, "-2147483648"),
                                                  ("minimum", np.min, "2147483647"),
                                                  ("xor", np.bitwise_xor.reduce, "0")])
@pytest.mark.parametrize("length", [4099, 2048])  # 2048: full blocks, unrolled
def test_integer_exact(body: str, fn: object, init: str, length: int) -> None:
    a = rand((5, length), np.int32)
    got = run(reduce_module((5, length), [1], "i32", body, init), a)[0]
    np.testing.assert_array_equal(got, fn(a, axis=1))  # type: ignore[operator]


def test_init_value_is_folded_once() -> None:
    a = np.ones((3, 200), np.int64)
    got = run(reduce_module((3, 200), [1], "i64", "add", "7"), a)[0]
    np.testing.assert_array_equal(got, np.full(3, 207))


@pytest.mark.parametrize("n", [517, 1024])
def test_variadic_argmax(n: int) -> None:
    text = module(f"(%v: tensor<4x{n}xf32>, %i: tensor<4x{n}xi32>) -> "
                  "(tensor<4xf32>, tensor<4xi32>)", """
  %mv = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %mi = stablehlo.constant dense<0> : tensor<i32>
  %0:2 = stablehlo.reduce(%v init: %mv), (%i init: %mi) across dimensions = [1]
      : (tensor<4xNxf32>, tensor<4xNxi32>, tensor<f32>, tensor<i32>)
      -> (tensor<4xf32>, tensor<4xi32>)
    reducer(%a: tensor<f32>, %c: tensor<f32>) (%b: tensor<i32>, %d: tensor<i32>) {
      %gt = stablehlo.compare GT, %a, %c : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %eq = stablehlo.compare EQ, %a, %c : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %lt = stablehlo.compare LT, %b, %d : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %tie = stablehlo.and %eq, %lt : tensor<i1>
      %pick = stablehlo.or %gt, %tie : tensor<i1>
      %x = stablehlo.select %pick, %a, %c : tensor<i1>, tensor<f32>
      %y = stablehlo.select %pick, %b, %d : tensor<i1>, tensor<i32>
      stablehlo.return %x, %y : tensor<f32>, tensor<i32>
    }
  return %0#0, %0#1 : tensor<4xf32>, tensor<4xi32>""".replace("4xN", f"4x{n}"))
    v = rand((4, n))
    idx = np.broadcast_to(np.arange(n, dtype=np.int32), (4, n)).copy()
    got_v, got_i = run(text, v, idx)
    np.testing.assert_array_equal(got_v, v.max(axis=1))
    np.testing.assert_array_equal(got_i, v.argmax(axis=1))


@pytest.mark.parametrize(("shape", "dims", "t"), [((300, 96), [0], "i32"),
                                                  ((37, 5, 48), [0, 1], "f32"),
                                                  ((3, 40, 12), [0], "i32")])
def test_columns_keep_innermost(shape: tuple[int, ...], dims: list[int], t: str) -> None:
    a = rand(shape, np.int32 if t == "i32" else np.float32)
    got = run(reduce_module(shape, dims, t, "add", "0" if t == "i32" else "0.0"), a)[0]
    want = a.sum(axis=tuple(dims), dtype=a.dtype)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)
    got = run(reduce_module(shape, dims, t, "maximum", "-2147483648" if t == "i32" else "-1e30"),
              a)[0]
    np.testing.assert_array_equal(got, a.max(axis=tuple(dims)))


def _stacked_sum(pieces: list[tuple[int, ...]], dims: list[int]) -> str:
    """Sum over ``dims`` of the concatenation of ``pieces`` along dimension 0."""
    names = ", ".join(f"%p{i}" for i in range(len(pieces)))
    ty = [f"tensor<{'x'.join(map(str, s))}xf32>" for s in pieces]
    whole = (sum(s[0] for s in pieces), *pieces[0][1:])
    out = [n for d, n in enumerate(whole) if d not in dims]
    out_ty = f"tensor<{'x'.join(map(str, out))}xf32>"
    whole_ty = f"tensor<{'x'.join(map(str, whole))}xf32>"
    params = ", ".join(f"%p{i}: {t}" for i, t in enumerate(ty))
    return module(f"({params}) -> {out_ty}", f"""
  %c = stablehlo.concatenate {names}, dim = 0 : ({", ".join(ty)}) -> {whole_ty}
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %s = stablehlo.reduce(%c init: %z) applies stablehlo.add across dimensions = {dims}
      : ({whole_ty}, tensor<f32>) -> {out_ty}
  return %s : {out_ty}""")


@pytest.mark.parametrize(("pieces", "dims"), [
    ([(1, 4, 24)] * 20, [0]),                       # stacked steps: unrolled
    ([(2, 3, 16), (1, 3, 16), (5, 3, 16)], [0, 1]),  # uneven pieces, two dims: unrolled
    ([(1, 2, 32)] * 70, [0]),                       # too many positions: a loop
])
def test_columns_over_a_concatenation(pieces: list[tuple[int, ...]], dims: list[int]
                                      ) -> None:
    """A column reduction over a concatenation along a reduced dimension (the mean of a
    recurrent net's stacked outputs) reads each piece directly; unrolled, with no
    branches picking the piece."""
    import frontend
    from frontend.lower import lower_function

    text = _stacked_sum(pieces, dims)
    xs = [rand(s) for s in pieces]
    got = run(text, *xs)[0]
    want = np.concatenate(xs, axis=0).astype(np.float64).sum(axis=tuple(dims))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    kernels = lower_function(frontend.parse(text)).kernels
    unrolled = sum(s[0] for s in pieces) * np.prod([pieces[0][d] for d in dims[1:]]) <= 64
    assert "reduce_cols" in kernels and (" if " not in kernels) == unrolled
