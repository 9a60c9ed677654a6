"""Counted loops with element-wise bodies as one element-wise kernel
(frontend/lower/families/control/pointwise_loop.py): jax.random's threefry against jax, hand-written
loops against numpy (0, 1, several and many trips; carries of several dtypes; a uniform
table and counter; loop-invariant arrays), and loops that must take another path."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import frontend
from frontend.lower.core.driver import lower_function
from frontend.lower.families.control import pointwise_loop
from tensorlang.plan import Launch, Step, While
from tests.lowering.conftest import module, rand, run

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")


def kernels(text: str) -> list[str]:
    """The kernel names of the launches of ``text``'s plan, nested steps included, with
    ``While`` for each loop left in the plan."""
    out: list[str] = []

    def walk(steps: tuple[Step, ...]) -> None:
        for s in steps:
            if isinstance(s, Launch):
                out.append(s.kernel.split("_", 1)[1])
            elif isinstance(s, While):
                out.append("While")
                walk(s.cond)
                walk(s.body)

    walk(lower_function(frontend.parse(text)).plan.steps)
    return out


def pointwise(text: str) -> bool:
    """Whether ``text``'s loop runs as a point-wise loop kernel (no other loop)."""
    names = kernels(text)
    return "while_pointwise" in names and "While" not in names and "while" not in names


# -- jax.random ------------------------------------------------------------------------


SAMPLERS = {
    "bits": lambda key, shape, dtype: jax.random.bits(key, shape, dtype or jnp.uint32),
    "uniform": lambda key, shape, dtype: jax.random.uniform(key, shape, dtype or float),
    "normal": lambda key, shape, dtype: jax.random.normal(key, shape, dtype or float),
    "bernoulli": lambda key, shape, dtype: jax.random.bernoulli(key, 0.3, shape),
}


def exported(name: str, shape: tuple[int, ...], dtype: Any = None) -> str:
    """The StableHLO of sampler ``name`` from a raw uint32 key."""
    def fn(key: Any) -> Any:
        return SAMPLERS[name](jax.random.wrap_key_data(key), shape, dtype)

    return jax.jit(fn).lower(np.zeros(2, np.uint32)).as_text()


def same_as_jax(name: str, shape: tuple[int, ...], dtype: Any = None) -> None:
    """The sampler through tlc (one point-wise loop kernel) gives jax's values."""
    key = np.array([7, 2026], np.uint32)
    text = exported(name, shape, dtype)
    assert pointwise(text)
    (got,) = run(text, key)
    want = np.asarray(jax.jit(lambda k: SAMPLERS[name](jax.random.wrap_key_data(k), shape,
                                                       dtype))(key))
    assert got.dtype == want.dtype and got.shape == want.shape
    if want.dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6 if name != "normal" else 3e-5)
    else:
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", sorted(SAMPLERS))
@pytest.mark.parametrize("shape", [(7,), (3, 5), (64, 129), (2, 3, 1031)])
def test_jax_random_matches_jax(name: str, shape: tuple[int, ...]) -> None:
    same_as_jax(name, shape)


@pytest.mark.parametrize("name,dtype", [("bits", "uint8"), ("bits", "uint16"),
                                        ("uniform", "float16"), ("uniform", "bfloat16")])
def test_jax_random_narrow_dtypes(name: str, dtype: str) -> None:
    same_as_jax(name, (33, 40), jnp.dtype(dtype))


@pytest.mark.parametrize("name,dtype", [("bits", "uint64"), ("uniform", "float64"),
                                        ("normal", "float64")])
def test_jax_random_x64(name: str, dtype: str) -> None:
    with jax.enable_x64(True):
        same_as_jax(name, (16, 100), jnp.dtype(dtype))


def test_split_keys_and_large_samples() -> None:
    """A key split (threefry on 2 elements, beside 4-element tables) and two samplers:
    three loop kernels, the split keys' concatenation and the kernel combining them."""
    def fn(key: Any, x: Any) -> Any:
        a, b = jax.random.split(jax.random.wrap_key_data(key))
        keep = jax.random.bernoulli(a, 0.8, x.shape)
        return jnp.where(keep, x / 0.8, 0.0) + 0.1 * jax.random.normal(b, x.shape)

    key, x = np.array([1, 99], np.uint32), rand((256, 1024))
    text = jax.jit(fn).lower(key, x).as_text()
    names = kernels(text)
    assert names.count("while_pointwise") == 3 and "While" not in names
    assert len(names) == 5, names  # the keys' words are read in place (fused.small_view)
    (got,) = run(text, key, x)
    np.testing.assert_allclose(got, np.asarray(jax.jit(fn)(key, x)), rtol=1e-5, atol=1e-5)


# -- hand-written loops ------------------------------------------------------------------


def counted(trips: int, carries: str, types_: str, body: str, results: str,
            signature: str, returns: str, limit: str | None = None) -> str:
    """A module whose @main runs a loop over (counter, ``carries``) ``trips`` times
    (or up to ``limit``, an SSA name), ``body`` computing ``results`` (the new carries)
    from the body arguments %i, %c0, %c1, ..."""
    names = [c.split("=")[0].strip() for c in carries.split(",")] if carries else []
    n = limit or "%n"
    define = "" if limit else f"%n = stablehlo.constant dense<{trips}> : tensor<i32>"
    return module(signature, f"""
  %zero = stablehlo.constant dense<0> : tensor<i32>
  %r:{len(names) + 1} = stablehlo.while(%i = %zero, {carries}) : tensor<i32>, {types_}
   cond {{
    {define}
    %p = stablehlo.compare LT, %i, {n}, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  }} do {{
    %one = stablehlo.constant dense<1> : tensor<i32>
    %j = stablehlo.add %i, %one : tensor<i32>
{body}
    stablehlo.return %j, {results} : tensor<i32>, {types_}
  }}
  {returns}""")


def affine(trips: int) -> str:
    """x <- x * a + b (a, b loop-invariant arrays) + s (a broadcast scalar), 16x130 f32;
    returns the counter and x."""
    t = "tensor<16x130xf32>"
    return counted(trips, "%x = %x0", t, f"""
    %s = stablehlo.constant dense<0.25> : tensor<f32>
    %sb = stablehlo.broadcast_in_dim %s, dims = [] : (tensor<f32>) -> {t}
    %m = stablehlo.multiply %x, %a : {t}
    %p1 = stablehlo.add %m, %b : {t}
    %y = stablehlo.add %p1, %sb : {t}""", "%y",
        f"(%x0: {t}, %a: {t}, %b: {t}) -> (tensor<i32>, {t})",
        f"return %r#0, %r#1 : tensor<i32>, {t}")


@pytest.mark.parametrize("trips", [0, 1, 3, 8, 9, 40])
def test_affine_loop_with_invariant_arrays(trips: int) -> None:
    """Unrolled (up to UNROLL_TRIPS) or a ``for``; the counter result is stored too."""
    text = affine(trips)
    assert pointwise(text)
    x0, a, b = rand((16, 130)), 0.5 * rand((16, 130)), rand((16, 130))
    want = x0.astype(np.float64)
    for _ in range(trips):
        want = want * a + b + 0.25
    i, x = run(text, x0, a, b)
    assert int(i) == trips
    np.testing.assert_allclose(x, want, rtol=1e-4, atol=1e-4)


def test_for_loop_when_unrolling_is_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pointwise_loop, "UNROLL_TRIPS", 0)
    text = affine(5)
    assert "for " in lower_function(frontend.parse(text)).kernels
    x0, a, b = rand((16, 130)), 0.5 * rand((16, 130)), rand((16, 130))
    want = x0.astype(np.float64)
    for _ in range(5):
        want = want * a + b + 0.25
    _, x = run(text, x0, a, b)
    np.testing.assert_allclose(x, want, rtol=1e-4, atol=1e-4)


MIXED = """
    %f = stablehlo.convert %u : (tensor<40x33xui8>) -> tensor<40x33xf64>
    %g = stablehlo.add %d, %f : tensor<40x33xf64>
    %three = stablehlo.constant dense<3> : tensor<ui8>
    %t3 = stablehlo.broadcast_in_dim %three, dims = [] : (tensor<ui8>) -> tensor<40x33xui8>
    %v = stablehlo.multiply %u, %t3 : tensor<40x33xui8>
    %nb = stablehlo.not %q : tensor<40x33xi1>
    %ic = stablehlo.convert %i : (tensor<i32>) -> tensor<i64>
    %ib = stablehlo.broadcast_in_dim %ic, dims = [] : (tensor<i64>) -> tensor<40x33xi64>
    %w0 = stablehlo.select %q, %ib, %w : tensor<40x33xi1>, tensor<40x33xi64>
    %w1 = stablehlo.add %w0, %w : tensor<40x33xi64>
    %t0 = stablehlo.slice %tab [0:1] : (tensor<2xf32>) -> tensor<1xf32>
    %t1 = stablehlo.slice %tab [1:2] : (tensor<2xf32>) -> tensor<1xf32>
    %swapped = stablehlo.concatenate %t1, %t0, dim = 0
        : (tensor<1xf32>, tensor<1xf32>) -> tensor<2xf32>
    %ts = stablehlo.reshape %t0 : (tensor<1xf32>) -> tensor<f32>
    %tb = stablehlo.broadcast_in_dim %ts, dims = [] : (tensor<f32>) -> tensor<40x33xf32>
    %z = stablehlo.multiply %h, %tb : tensor<40x33xf32>"""


def mixed(trips: int) -> str:
    """Carries of f64, ui8, i1, i64 and f32 per element, a 2-element f32 table swapped each
    iteration (uniform), the counter read by the body."""
    sig = ("(%d0: tensor<40x33xf64>, %u0: tensor<40x33xui8>, %q0: tensor<40x33xi1>, "
           "%w0_: tensor<40x33xi64>, %h0: tensor<40x33xf32>, %tab0: tensor<2xf32>)")
    types_ = ("tensor<40x33xf64>, tensor<40x33xui8>, tensor<40x33xi1>, tensor<40x33xi64>, "
              "tensor<2xf32>, tensor<40x33xf32>")
    return counted(trips, "%d = %d0, %u = %u0, %q = %q0, %w = %w0_, %tab = %tab0, %h = %h0",
                   types_, MIXED, "%g, %v, %nb, %w1, %swapped, %z",
                   f"{sig} -> ({types_})",
                   f"return %r#1, %r#2, %r#3, %r#4, %r#5, %r#6 : {types_}")


def mixed_numpy(trips: int, d: np.ndarray, u: np.ndarray, q: np.ndarray, w: np.ndarray,
                tab: np.ndarray, h: np.ndarray) -> tuple[np.ndarray, ...]:
    """:func:`mixed` in numpy."""
    for i in range(trips):
        d, u, q, w, tab, h = (d + u.astype(np.float64), (u * np.uint8(3)).astype(np.uint8),
                              ~q, np.where(q, np.int64(i), w) + w, tab[::-1].copy(),
                              h * tab[0])
    return d, u, q, w, tab, h


@pytest.mark.parametrize("trips", [0, 1, 4, 11])
def test_carries_of_several_dtypes_and_a_uniform_table(trips: int) -> None:
    text = mixed(trips)
    assert pointwise(text)
    rng = np.random.default_rng(trips)
    args = (rand((40, 33), np.float64), rng.integers(0, 255, (40, 33)).astype(np.uint8),
            rng.integers(0, 2, (40, 33)).astype(bool),
            rng.integers(-9, 9, (40, 33)).astype(np.int64), np.array([1.5, -0.5], np.float32),
            rand((40, 33)))
    got = run(text, *args[:4], args[5], args[4])
    want = mixed_numpy(trips, *args)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype
        np.testing.assert_allclose(g, w, rtol=1e-6)


# -- loops that take another path ----------------------------------------------------------


def with_op(op: str, trips: int = 4, limit: str | None = None) -> str:
    """x <- x + 0.5 * (``op`` of x), 8x16 f32, with a limit constant or parameter."""
    t = "tensor<8x16xf32>"
    ops = {
        "reduce": f"""
    %z = stablehlo.constant dense<0.0> : tensor<f32>
    %s = stablehlo.reduce(%x init: %z) applies stablehlo.add across dimensions = [1]
        : ({t}, tensor<f32>) -> tensor<8xf32>
    %o = stablehlo.broadcast_in_dim %s, dims = [0] : (tensor<8xf32>) -> {t}""",
        "dot": f"""
    %o = stablehlo.dot_general %x, %m, contracting_dims = [1] x [0]
        : ({t}, tensor<16x16xf32>) -> {t}""",
        "reverse": f"""
    %o = stablehlo.reverse %x, dims = [1] : {t}""",
        "tanh": f"""
    %o = stablehlo.tanh %x : {t}""",
    }
    return counted(trips, "%x = %x0", t, ops[op] + f"""
    %h = stablehlo.constant dense<0.5> : {t}
    %ho = stablehlo.multiply %o, %h : {t}
    %y = stablehlo.add %x, %ho : {t}""", "%y",
        f"(%x0: {t}, %m: tensor<16x16xf32>, %l: tensor<i32>) -> {t}",
        f"return %r#1 : {t}", limit)


def with_op_numpy(op: str, x: np.ndarray, m: np.ndarray, trips: int) -> np.ndarray:
    fns = {"reduce": lambda x: np.broadcast_to(x.sum(1, keepdims=True), x.shape),
           "dot": lambda x: x @ m, "reverse": lambda x: x[:, ::-1], "tanh": np.tanh}
    x = x.astype(np.float64)
    for _ in range(trips):
        x = x + 0.5 * fns[op](x)
    return x


@pytest.mark.parametrize("op,taken", [("reduce", False), ("dot", False),
                                      ("reverse", False), ("tanh", True)])
def test_bodies_reading_across_elements_take_another_path(op: str, taken: bool) -> None:
    text = with_op(op)
    assert pointwise(text) is taken
    x, m = rand((8, 16)), 0.1 * rand((16, 16))
    (got,) = run(text, x, m, np.int32(0))
    np.testing.assert_allclose(got, with_op_numpy(op, x, m, 4), rtol=1e-4, atol=1e-4)


def test_a_trip_count_from_a_parameter_takes_another_path() -> None:
    text = with_op("tanh", limit="%l")
    assert not pointwise(text)
    x, m = rand((8, 16)), rand((16, 16))
    (got,) = run(text, x, m, np.int32(6))
    np.testing.assert_allclose(got, with_op_numpy("tanh", x, m, 6), rtol=1e-5, atol=1e-5)


def test_disabled_takes_another_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pointwise_loop, "ENABLED", False)
    assert not pointwise(with_op("tanh"))


def chain(ops: int, trips: int) -> str:
    """A body of ``ops`` chained multiply-adds on x, shared by the next op twice."""
    t = "tensor<4x256xf32>"
    lines, x = [], "%x"
    for n in range(ops):
        lines.append(f"    %m{n} = stablehlo.multiply {x}, {x} : {t}")
        lines.append(f"    %a{n} = stablehlo.add %m{n}, {x} : {t}")
        x = f"%a{n}"
    return counted(trips, "%x = %x0", t, "\n".join(lines), x, f"(%x0: {t}) -> {t}",
                   f"return %r#1 : {t}")


def test_kernel_grows_linearly_with_body_and_trips() -> None:
    """Values used twice are computed once per iteration: the kernel's text grows with
    ops x trips, never exponentially (unrolled, then as a ``for``)."""
    def size(ops: int, trips: int) -> int:
        return len(lower_function(frontend.parse(chain(ops, trips))).kernels)

    base = size(50, 4)
    assert size(100, 4) < 2.3 * base
    assert size(50, 8) < 2.3 * base
    assert size(400, 8) < 2 * size(200, 8)  # over UNROLL_OPS: a for loop


@pytest.mark.parametrize("trips", [6, 12])
def test_a_scan_reading_its_inputs_at_the_counter(trips: int) -> None:
    """``h = 0.9 * h + xs[t]``: the counter (uniform) indexes a loop-invariant array."""
    def fn(xs: Any, h0: Any) -> Any:
        return jax.lax.fori_loop(0, trips, lambda t, h: 0.9 * h + xs[t], h0)

    xs, h0 = rand((trips, 32, 40)), rand((32, 40))
    text = jax.jit(fn).lower(xs, h0).as_text()
    assert pointwise(text)
    (got,) = run(text, xs, h0)
    np.testing.assert_allclose(got, np.asarray(jax.jit(fn)(xs, h0)), rtol=1e-5, atol=1e-5)
