"""chlo.top_k: the streamed form (k <= MAX_K, a sorted k-buffer per row) and the sorted
form against numpy's stable descending order (total order: NaN above inf, -0.0 below
0.0; ties: lower index first), with poisoned buffers."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from frontend.lower.families.sort.top_k import MAX_K
from tests.lowering.conftest import RNG, module, run

ELEM = {np.float32: "f32", np.float64: "f64", np.float16: "f16",
        ml_dtypes.bfloat16: "bf16", np.int32: "i32", np.uint8: "ui8", np.int64: "i64",
        np.bool_: "i1"}


def _tensor(shape: tuple[int, ...], elem: str) -> str:
    return f"tensor<{'x'.join(map(str, shape))}x{elem}>"


def top_k_program(shape: tuple[int, ...], k: int, elem: str, scale: str = "") -> str:
    """@main returning top_k(x, k) (of x * x when ``scale``: a fused producer)."""
    out = (_tensor((*shape[:-1], k), elem), _tensor((*shape[:-1], k), "i32"))
    x = _tensor(shape, elem)
    body = f"  %v, %i = chlo.top_k(%x, k = {k}) : {x} -> ({out[0]}, {out[1]})"
    if scale:
        body = (f"  %y = stablehlo.multiply %x, %x : {x}\n"
                + body.replace("top_k(%x", "top_k(%y"))
    return module(f"(%x: {x}) -> ({out[0]}, {out[1]})",
                  f"{body}\n  return %v, %i : {out[0]}, {out[1]}")


def _order_key(x: np.ndarray) -> np.ndarray:
    """Integers ordered like the IEEE total order of float ``x`` (other types as they
    are)."""
    if x.dtype == np.bool_ or not np.issubdtype(x.dtype, np.floating) \
            and x.dtype != ml_dtypes.bfloat16:
        return x.astype(np.int64)
    bits = {2: np.int16, 4: np.int32, 8: np.int64}[x.dtype.itemsize]
    i = x.view(bits).astype(np.int64)
    return np.where(i < 0, i ^ ((1 << (8 * x.dtype.itemsize - 1)) - 1), i)


def expected(x: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """numpy's top k: stable sort descending by the total order."""
    order = np.argsort(~_order_key(x), axis=-1, kind="stable")[..., :k]  # ~: no overflow
    return np.take_along_axis(x, order, -1), order.astype(np.int32)


def check(x: np.ndarray, k: int, scale: bool = False) -> None:
    """Run top_k on ``x`` and compare values (bitwise) and indices with numpy."""
    values, indices = run(top_k_program(x.shape, k, ELEM[x.dtype.type], "sq" * scale), x)
    want_v, want_i = expected(x * x if scale else x, k)
    np.testing.assert_array_equal(indices, want_i)
    np.testing.assert_array_equal(values.view(np.uint8), want_v.view(np.uint8))


def _specials(shape: tuple[int, ...], dtype: type) -> np.ndarray:
    """Random values with NaNs of both signs, infinities, +-0.0 and many ties."""
    x = RNG.integers(-6, 6, size=shape).astype(dtype)
    flat = x.reshape(-1)
    picks = RNG.integers(0, flat.size, size=(6, max(1, flat.size // 20)))
    flat[picks[0]] = dtype(np.nan)
    flat[picks[1]] = -dtype(np.nan)
    flat[picks[2]] = dtype(np.inf)
    flat[picks[3]] = -dtype(np.inf)
    flat[picks[4]] = dtype(0.0)
    flat[picks[5]] = -dtype(0.0)
    return x


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, ml_dtypes.bfloat16])
def test_streamed_total_order(dtype: type) -> None:
    check(_specials((5, 300), dtype), 8)


@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.int64])
def test_streamed_integers(dtype: type) -> None:
    info = np.iinfo(dtype)
    x = RNG.integers(info.min, info.max, size=(4, 200), dtype=dtype)
    x[:, ::7] = info.max  # ties at the top
    x[:, 3::11] = info.min
    check(x, 6)


def test_streamed_bool() -> None:
    check(RNG.integers(0, 2, size=(3, 50)).astype(np.bool_), 5)


@pytest.mark.parametrize("n,k", [(1, 1), (5, 5), (9, 8), (16, 3), (48, 20), (1024, 8), (700, MAX_K),
                                 (200, MAX_K + 1), (64, 64)])
def test_sizes(n: int, k: int) -> None:
    """Streamed (k <= MAX_K, k = n included) and sorted (k > MAX_K) forms."""
    check(RNG.standard_normal((3, n)).astype(np.float32), k)


@pytest.mark.parametrize("order", ["ascending", "descending", "constant"])
def test_streamed_monotone_rows(order: str) -> None:
    """Every element enters the buffer (ascending), none after the first k
    (descending), all tie (constant)."""
    x = np.arange(500, dtype=np.float32)[None, :].repeat(2, 0)
    x = {"ascending": x, "descending": -x, "constant": x * 0 + 3}[order]
    check(x, 16)


def test_streamed_batch_dims_and_fused_producer() -> None:
    check(RNG.standard_normal((2, 3, 129)).astype(np.float32), 4, scale=True)


def test_streamed_one_dimensional() -> None:
    check(RNG.standard_normal((1000,)).astype(np.float32), 7)


def test_streamed_many_rows() -> None:
    """More rows than one work-group takes (rows dealt over work-groups)."""
    check(RNG.standard_normal((300, 40)).astype(np.float32), 3)


def test_k_zero() -> None:
    values, indices = run(top_k_program((3, 10), 0, "f32"),
                          RNG.standard_normal((3, 10)).astype(np.float32))
    assert values.shape == indices.shape == (3, 0)
