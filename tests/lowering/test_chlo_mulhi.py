"""chlo.mulhi: the high half of the double-width product, against exact integer
arithmetic on random operands of every integer type (extremes included)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.lowering.conftest import module, run
from tests.lowering.interpret_files import interpret_failures

TYPES = {"i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
         "ui8": np.uint8, "ui16": np.uint16, "ui32": np.uint32, "ui64": np.uint64}


def _operands(dtype: type, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    info = np.iinfo(dtype)
    rng = np.random.default_rng(seed)
    a, b = (rng.integers(info.min, info.max, size=n, dtype=dtype, endpoint=True)
            for _ in range(2))
    extremes = np.array([info.min, info.max, 0, 1, info.max, info.min], dtype=dtype)
    a[:6], b[:6] = extremes, extremes[::-1]
    return a, b


def _mulhi(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``(a * b) >> bits`` in Python integers (a floor shift), wrapped to the type."""
    bits = a.dtype.itemsize * 8
    high = [((int(x) * int(y)) >> bits) % 2**bits for x, y in zip(a, b, strict=True)]
    return np.array(high, dtype=f"uint{bits}").view(a.dtype)


@pytest.mark.parametrize("name", list(TYPES))
def test_mulhi_matches_exact_products(name: str) -> None:
    dtype = TYPES[name]
    a, b = _operands(dtype, 300, seed=len(name) * 7 + dtype().itemsize)
    t = f"tensor<300x{name}>"
    text = module(f"(%a: {t}, %b: {t}) -> {t}", f"""
  %0 = "chlo.mulhi"(%a, %b) : ({t}, {t}) -> {t}
  return %0 : {t}""")
    (got,) = run(text, a, b)
    np.testing.assert_array_equal(got, _mulhi(a, b))


def test_mulhi_fuses_with_its_consumer() -> None:
    a, b = _operands(np.int32, 64, seed=3)
    t = "tensor<8x8xi32>"
    text = module(f"(%a: {t}, %b: {t}) -> {t}", f"""
  %0 = "chlo.mulhi"(%a, %b) : ({t}, {t}) -> {t}
  %1 = stablehlo.add %0, %a : {t}
  return %1 : {t}""")
    (got,) = run(text, a.reshape(8, 8), b.reshape(8, 8))
    want = (_mulhi(a, b).astype(np.int64) + a).astype(np.int32).reshape(8, 8)
    np.testing.assert_array_equal(got, want)


def test_mulhi_rejects_floats() -> None:
    import frontend

    t = "tensor<4xf32>"
    text = module(f"(%a: {t}) -> {t}", f"""
  %0 = "chlo.mulhi"(%a, %a) : ({t}, {t}) -> {t}
  return %0 : {t}""")
    with pytest.raises(frontend.CompileError, match="'chlo.mulhi': operands must be integers"):
        frontend.parse(text)


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.uint32])
def test_jax_mulhi_runs_and_matches_jax(dtype: type) -> None:
    """``jax.lax.mulhi`` lowers to chlo.mulhi (pretty form) on the CPU."""
    jax = pytest.importorskip("jax")
    from jax import lax

    a, b = _operands(dtype, 100, seed=9)
    f = jax.jit(lax.mulhi)
    text = f.lower(a, b).as_text()
    assert "chlo.mulhi" in text
    (got,) = run(text, a, b)
    np.testing.assert_array_equal(got, np.asarray(f(a, b)))


def test_interpret_file() -> None:
    assert interpret_failures("chlo/mulhi") == {}
