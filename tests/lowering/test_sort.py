"""stablehlo.sort (merge sort: chunks in registers, tile merges, merge passes) and
chlo.top_k against numpy's stable sort, with poisoned buffers."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from tests.lowering.conftest import RNG, module, rand, run

LT = """    %c = stablehlo.compare LT, %a0, %b0 : ({t}, {t}) -> tensor<i1>
    stablehlo.return %c : tensor<i1>"""
GT = LT.replace("LT", "GT")
TOTAL_LT = LT.replace("%b0 :", "%b0, TOTALORDER :")
LEXICOGRAPHIC = """    %lt0 = stablehlo.compare LT, %a0, %b0 : ({t}, {t}) -> tensor<i1>
    %eq0 = stablehlo.compare EQ, %a0, %b0 : ({t}, {t}) -> tensor<i1>
    %lt1 = stablehlo.compare LT, %a2, %b2 : ({t2}, {t2}) -> tensor<i1>
    %tie = stablehlo.and %eq0, %lt1 : tensor<i1>
    %c = stablehlo.or %lt0, %tie : tensor<i1>
    stablehlo.return %c : tensor<i1>"""


def _tensor(shape: tuple[int, ...], elem: str) -> str:
    return f"tensor<{'x'.join(map(str, shape))}x{elem}>"


def sort_program(shape: tuple[int, ...], dim: int, elems: list[str], comparator: str,
                 iota: bool = False, stable: bool = True) -> str:
    """@main sorting its arguments (of ``elems``) along ``dim``; with ``iota`` an i32
    index along ``dim`` (computed in the program, so it fuses) is sorted along as the
    last operand."""
    ts = [_tensor(shape, e) for e in elems]
    params = ", ".join(f"%x{i}: {t}" for i, t in enumerate(ts))
    operands = [f"%x{i}" for i in range(len(ts))]
    body = ""
    if iota:
        ts.append(_tensor(shape, "i32"))
        elems = [*elems, "i32"]
        operands.append("%idx")
        body = f"  %idx = stablehlo.iota dim = {dim} : {ts[-1]}\n"
    block = ", ".join(f"%a{i}: tensor<{e}>, %b{i}: tensor<{e}>" for i, e in enumerate(elems))
    types = ", ".join(ts)
    results = ", ".join(f"%0#{i}" for i in range(len(ts))) if len(ts) > 1 else "%0"
    count = f":{len(ts)}" if len(ts) > 1 else ""
    region = comparator.format(t=f"tensor<{elems[0]}>",
                               **{f"t{i}": f"tensor<{e}>" for i, e in enumerate(elems)})
    return module(f"({params}) -> ({types})", f"""{body}
  %0{count} = "stablehlo.sort"({", ".join(operands)}) <{{dimension = {dim} : i64,
      is_stable = {str(stable).lower()}}}> ({{
  ^bb0({block}):
{region}
  }}) : ({types}) -> ({types})
  return {results} : {types}""")


def check_sorted(got: tuple[np.ndarray, ...], arrays: list[np.ndarray], order: np.ndarray,
                 dim: int) -> None:
    """Every result is its operand permuted by ``order`` (indices along ``dim``)."""
    for g, a in zip(got, arrays, strict=True):
        np.testing.assert_array_equal(g, np.take_along_axis(a, order, dim))


def index_along(shape: tuple[int, ...], dim: int) -> np.ndarray:
    """The iota along ``dim`` (what the program's index operand holds)."""
    view = [1] * len(shape)
    view[dim] = shape[dim]
    return np.broadcast_to(np.arange(shape[dim], dtype=np.int32).reshape(view), shape)


@pytest.mark.parametrize("n", [1, 2, 7, 8, 9, 64, 1000, 1024, 1025, 4097])
def test_row_lengths(n: int) -> None:
    shape = (3, n)
    keys = rand(shape)
    got = run(sort_program(shape, 1, ["f32"], LT, iota=True), keys)
    order = np.argsort(keys, axis=1, kind="stable")
    check_sorted(got, [keys, index_along(shape, 1)], order, 1)


def test_one_long_row() -> None:
    shape = (1, 100_000)
    keys = rand(shape)
    got = run(sort_program(shape, 1, ["f32"], LT, iota=True), keys)
    check_sorted(got, [keys, index_along(shape, 1)],
                 np.argsort(keys, axis=1, kind="stable"), 1)


def test_many_short_rows() -> None:
    shape = (10_000, 8)
    keys = RNG.integers(-3, 3, size=shape).astype(np.int32)
    got = run(sort_program(shape, 1, ["i32"], LT, iota=True), keys)
    check_sorted(got, [keys, index_along(shape, 1)],
                 np.argsort(keys, axis=1, kind="stable"), 1)


@pytest.mark.parametrize("stable", [True, False])
@pytest.mark.parametrize("n", [60, 3000])
def test_duplicates_keep_their_order(n: int, stable: bool) -> None:
    # a stable sort is a valid unstable one, so is_stable = false gets the same answer
    shape = (4, n)
    keys = RNG.integers(0, 4, size=shape).astype(np.int32)
    got = run(sort_program(shape, 1, ["i32"], LT, iota=True, stable=stable), keys)
    check_sorted(got, [keys, index_along(shape, 1)],
                 np.argsort(keys, axis=1, kind="stable"), 1)


def test_descending() -> None:
    shape = (3, 2500)
    keys = RNG.integers(-20, 20, size=shape).astype(np.int32)
    got = run(sort_program(shape, 1, ["i32"], GT, iota=True), keys)
    check_sorted(got, [keys, index_along(shape, 1)],
                 np.argsort(-keys, axis=1, kind="stable"), 1)


@pytest.mark.parametrize("n", [13, 3000])
def test_two_keys_lexicographic(n: int) -> None:
    shape = (2, n)
    major = RNG.integers(0, 5, size=shape).astype(np.int32)
    minor = RNG.integers(-3, 3, size=shape).astype(np.float32)
    payload = rand(shape, np.float64)
    got = run(sort_program(shape, 1, ["i32", "f64", "f32"], LEXICOGRAPHIC, iota=True),
              major, payload, minor)
    order = np.stack([np.lexsort((minor[r], major[r])) for r in range(shape[0])])
    check_sorted(got, [major, payload, minor, index_along(shape, 1)], order, 1)


def _total_order_key(x: np.ndarray) -> np.ndarray:
    bits = x.view(np.int32)
    return bits ^ ((bits >> 31) & 0x7FFFFFFF)


@pytest.mark.parametrize("n", [40, 2100])
def test_total_order_with_nans(n: int) -> None:
    shape = (2, n)
    specials = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0], np.float32)
    keys = np.where(RNG.random(shape) < 0.3, RNG.choice(specials, size=shape),
                    RNG.integers(-3, 3, size=shape)).astype(np.float32)
    got = run(sort_program(shape, 1, ["f32"], TOTAL_LT, iota=True), keys)
    order = np.argsort(_total_order_key(keys), axis=1, kind="stable")
    np.testing.assert_array_equal(got[0].view(np.int32),
                                  np.take_along_axis(keys, order, 1).view(np.int32))
    np.testing.assert_array_equal(got[1], np.take_along_axis(index_along(shape, 1), order, 1))


@pytest.mark.parametrize("shape,dim", [((3000, 3), 0), ((5, 4), 0), ((2, 1500, 3), 1),
                                       ((1100, 2, 2), 0)])
def test_other_dimensions(shape: tuple[int, ...], dim: int) -> None:
    keys = rand(shape)
    got = run(sort_program(shape, dim, ["f32"], LT, iota=True), keys)
    check_sorted(got, [keys, index_along(shape, dim)],
                 np.argsort(keys, axis=dim, kind="stable"), dim)


@pytest.mark.parametrize("dtype,elem", [(np.int32, "i32"), (np.float32, "f32"),
                                        (np.float64, "f64"), (ml_dtypes.bfloat16, "bf16")])
def test_element_types(dtype: type, elem: str) -> None:
    shape = (3, 2000)
    keys = (RNG.integers(-100, 100, size=shape) if dtype is np.int32
            else RNG.standard_normal(shape) * 4).astype(dtype)
    (got,) = run(sort_program(shape, 1, [elem], LT), keys)
    want = np.take_along_axis(keys, np.argsort(keys.astype(np.float64), axis=1,
                                               kind="stable"), 1)
    assert got.dtype == keys.dtype
    np.testing.assert_array_equal(got, want)


def test_sort_rows_with_payload() -> None:
    text = module("(%k: tensor<3x6xi32>, %v: tensor<3x6xf32>) -> "
                  "(tensor<3x6xi32>, tensor<3x6xf32>)", """
  %0:2 = "stablehlo.sort"(%k, %v) <{dimension = 1 : i64, is_stable = true}> ({
  ^bb0(%a: tensor<i32>, %b: tensor<i32>, %c: tensor<f32>, %d: tensor<f32>):
    %lt = stablehlo.compare LT, %a, %b : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %lt : tensor<i1>
  }) : (tensor<3x6xi32>, tensor<3x6xf32>) -> (tensor<3x6xi32>, tensor<3x6xf32>)
  return %0#0, %0#1 : tensor<3x6xi32>, tensor<3x6xf32>""")
    keys = RNG.integers(0, 4, size=(3, 6)).astype(np.int32)
    vals = rand((3, 6))
    order = np.argsort(keys, axis=1, kind="stable")
    check_sorted(run(text, keys, vals), [keys, vals], order, 1)


def test_empty_rows() -> None:
    shape = (0, 5)
    (got,) = run(sort_program(shape, 1, ["f32"], LT), np.zeros(shape, np.float32))
    assert got.shape == shape


@pytest.mark.parametrize("n,k", [(7, 3), (3000, 5)])
def test_top_k(n: int, k: int) -> None:
    shape = (3, n)
    x = RNG.integers(-30, 30, size=shape).astype(np.float32)  # ties: lower index first
    out = (_tensor((3, k), "f32"), _tensor((3, k), "i32"))
    text = module(f"(%x: {_tensor(shape, 'f32')}) -> ({out[0]}, {out[1]})", f"""
  %v, %i = chlo.top_k(%x, k = {k}) : {_tensor(shape, 'f32')} -> ({out[0]}, {out[1]})
  return %v, %i : {out[0]}, {out[1]}""")
    values, indices = run(text, x)
    order = np.argsort(-x, axis=1, kind="stable")[:, :k]
    np.testing.assert_array_equal(indices, order)
    np.testing.assert_array_equal(values, np.take_along_axis(x, order, 1))
