"""chlo.ragged_dot in its three modes against a numpy reference (random data, group
sizes that leave rows over, per-batch sizes, f16), JAX's ``jax.lax.ragged_dot`` export
(a ``stablehlo.composite "chlo.ragged_dot"``) against JAX itself, and the suite file."""

from __future__ import annotations

import numpy as np
import pytest

import frontend
from tests.lowering.conftest import run
from tests.lowering.interpret_files import interpret_failures

RNG = np.random.default_rng(11)


def _dims(lb: list[int], rb: list[int], lc: list[int], rc: list[int], ragged: int,
          group: list[int]) -> str:
    return (f"#chlo.ragged_dot<lhs_batching_dimensions = {lb}, rhs_batching_dimensions = "
            f"{rb}, lhs_contracting_dimensions = {lc}, rhs_contracting_dimensions = {rc}, "
            f"lhs_ragged_dimensions = [{ragged}], rhs_group_dimensions = {group}>")


def _program(shapes: list[tuple[int, ...]], types: list[str], out: tuple[int, ...],
             dims: str) -> str:
    ts = [f"tensor<{'x'.join(map(str, s))}x{t}>" for s, t in zip(shapes, types, strict=True)]
    to = f"tensor<{'x'.join(map(str, out))}x{types[0]}>"
    return f"""func.func public @main(%l: {ts[0]}, %r: {ts[1]}, %g: {ts[2]}) -> {to} {{
  %0 = "chlo.ragged_dot"(%l, %r, %g) {{ragged_dot_dimension_numbers = {dims}}}
      : ({ts[0]}, {ts[1]}, {ts[2]}) -> {to}
  return %0 : {to}
}}
"""


def _starts(sizes: np.ndarray) -> np.ndarray:
    return np.concatenate([[0], np.cumsum(sizes)])


def test_non_contracting_grouped_gemm() -> None:
    """lhs [m, k], rhs [g, k, n]: rows in consecutive groups; rows past the sizes are 0."""
    m, k, n, g = 37, 19, 23, 5
    lhs = RNG.standard_normal((m, k)).astype(np.float32)
    rhs = RNG.standard_normal((g, k, n)).astype(np.float32)
    sizes = np.array([9, 0, 14, 3, 6], np.int32)  # 32 of 37 rows; an empty group
    text = _program([(m, k), (g, k, n), (g,)], ["f32", "f32", "i32"], (m, n),
                    _dims([], [], [1], [1], 0, [0]))
    (got,) = run(text, lhs, rhs, sizes)
    want = np.zeros((m, n), np.float32)
    s = _starts(sizes)
    for j in range(g):
        want[s[j]:s[j + 1]] = lhs[s[j]:s[j + 1]] @ rhs[j]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode", ["non_contracting", "contracting"])
def test_integer_grouped_gemm_wraps(mode: str) -> None:
    m, k, n, g = 12, 9, 5, 3
    lhs = RNG.integers(-2**20, 2**20, (m, k)).astype(np.int32)
    sizes = np.array([4, 0, 5], np.int32)
    s = _starts(sizes)
    if mode == "non_contracting":
        rhs = RNG.integers(-2**20, 2**20, (g, k, n)).astype(np.int32)
        text = _program([(m, k), (g, k, n), (g,)], ["i32", "i32", "i32"], (m, n),
                        _dims([], [], [1], [1], 0, [0]))
        want = np.zeros((m, n), np.int64)
        for j in range(g):
            want[s[j]:s[j + 1]] = lhs[s[j]:s[j + 1]].astype(np.int64) @ rhs[j]
    else:
        rhs = RNG.integers(-2**20, 2**20, (k, n)).astype(np.int32)
        text = _program([(m, k), (k, n), (g,)], ["i32", "i32", "i32"], (g, m, n),
                        _dims([], [], [1], [0], 1, []))
        want = np.stack([lhs[:, s[j]:s[j + 1]].astype(np.int64) @ rhs[s[j]:s[j + 1]]
                         for j in range(g)])
    (got,) = run(text, lhs, rhs, sizes)
    np.testing.assert_array_equal(got, want.astype(np.int32))  # modulo 2^32


def test_sizes_beyond_the_rows_are_clamped() -> None:
    m, k, n = 37, 8, 5
    lhs = RNG.standard_normal((m, k)).astype(np.float32)
    rhs = RNG.standard_normal((2, k, n)).astype(np.float32)
    sizes = np.array([20, 30], np.int32)
    text = _program([(m, k), (2, k, n), (2,)], ["f32", "f32", "i32"], (m, n),
                    _dims([], [], [1], [1], 0, [0]))
    (got,) = run(text, lhs, rhs, sizes)
    want = np.concatenate([lhs[:20] @ rhs[0], lhs[20:] @ rhs[1]])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", ["f32", "i32"])
def test_general_kernel_other_free_dimensions_and_integers(dtype: str) -> None:
    """lhs [3, m, k] ragged along m with dimension 0 free too (the per-element kernel,
    as for integers): every lhs row block of dimension 0 uses the same groups."""
    m, k, n, g = 10, 6, 4, 3
    np_t = np.float32 if dtype == "f32" else np.int32
    lhs = (RNG.standard_normal((3, m, k)) * 4).astype(np_t)
    rhs = (RNG.standard_normal((g, k, n)) * 4).astype(np_t)
    sizes = np.array([3, 5, 1], np.int32)
    text = _program([(3, m, k), (g, k, n), (g,)], [dtype, dtype, "i32"], (3, m, n),
                    _dims([], [], [2], [1], 1, [0]))
    (got,) = run(text, lhs, rhs, sizes)
    want = np.zeros((3, m, n), np_t)
    s = _starts(sizes)
    for j in range(g):
        want[:, s[j]:s[j + 1]] = lhs[:, s[j]:s[j + 1]] @ rhs[j]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_non_contracting_with_batch_and_per_batch_sizes() -> None:
    """lhs [b, m, k], rhs [k, b, g, n] (group dimension 2), sizes [b, g]."""
    b, m, k, n, g = 2, 13, 7, 6, 3
    lhs = RNG.standard_normal((b, m, k)).astype(np.float32)
    rhs = RNG.standard_normal((k, b, g, n)).astype(np.float32)
    sizes = np.array([[4, 4, 5], [0, 10, 2]], np.int64)
    text = _program([(b, m, k), (k, b, g, n), (b, g)], ["f32", "f32", "i64"], (b, m, n),
                    _dims([0], [1], [2], [0], 1, [2]))
    (got,) = run(text, lhs, rhs, sizes)
    want = np.zeros((b, m, n), np.float32)
    for i in range(b):
        s = _starts(sizes[i])
        for j in range(g):
            want[i, s[j]:s[j + 1]] = lhs[i, s[j]:s[j + 1]] @ rhs[:, i, j, :]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_contracting_mode_gives_a_product_per_group() -> None:
    """lhs [m, k], rhs [k, n], ragged k: result [g, m, n], group j summing its k range."""
    m, k, n, g = 9, 20, 11, 4
    lhs = RNG.standard_normal((m, k)).astype(np.float32)
    rhs = RNG.standard_normal((k, n)).astype(np.float32)
    sizes = np.array([6, 0, 9, 3], np.int32)  # 18 of 20
    text = _program([(m, k), (k, n), (g,)], ["f32", "f32", "i32"], (g, m, n),
                    _dims([], [], [1], [0], 1, []))
    (got,) = run(text, lhs, rhs, sizes)
    s = _starts(sizes)
    want = np.stack([lhs[:, s[j]:s[j + 1]] @ rhs[s[j]:s[j + 1]] for j in range(g)])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_contracting_mode_with_batch_and_two_contracting_dimensions() -> None:
    """lhs [b, m, k1, k2] ragged along k2 (the second contracting dimension), rhs
    [b, k1, k2, n], sizes per batch element: result [g, b, m, n]."""
    b, m, k1, k2, n, g = 2, 5, 3, 8, 4, 3
    lhs = RNG.standard_normal((b, m, k1, k2)).astype(np.float32)
    rhs = RNG.standard_normal((b, k1, k2, n)).astype(np.float32)
    sizes = np.array([[2, 2, 4], [5, 0, 1]], np.int32)
    text = _program([(b, m, k1, k2), (b, k1, k2, n), (b, g)], ["f32", "f32", "i32"],
                    (g, b, m, n), _dims([0], [0], [2, 3], [1, 2], 3, []))
    (got,) = run(text, lhs, rhs, sizes)
    want = np.zeros((g, b, m, n), np.float32)
    for i in range(b):
        s = _starts(sizes[i])
        for j in range(g):
            want[j, i] = np.einsum("mab,abn->mn", lhs[i, :, :, s[j]:s[j + 1]],
                                   rhs[i, :, s[j]:s[j + 1]])
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_contracting_mode_bf16() -> None:
    import ml_dtypes

    m, k, n, g = 6, 24, 5, 3
    bf16 = ml_dtypes.bfloat16
    lhs = RNG.standard_normal((m, k)).astype(bf16)
    rhs = RNG.standard_normal((k, n)).astype(bf16)
    sizes = np.array([10, 6, 8], np.int32)
    text = _program([(m, k), (k, n), (g,)], ["bf16", "bf16", "i32"], (g, m, n),
                    _dims([], [], [1], [0], 1, []))
    (got,) = run(text, lhs, rhs, sizes)
    s = _starts(sizes)
    l32, r32 = lhs.astype(np.float32), rhs.astype(np.float32)
    want = np.stack([l32[:, s[j]:s[j + 1]] @ r32[s[j]:s[j + 1]] for j in range(g)])
    np.testing.assert_allclose(got.astype(np.float32), want.astype(bf16).astype(np.float32),
                               rtol=1e-2, atol=1e-2)


def test_batch_mode_is_a_batched_product() -> None:
    b, m, k, n, g = 4, 5, 6, 7, 2
    lhs = RNG.standard_normal((b, m, k)).astype(np.float32)
    rhs = RNG.standard_normal((b, k, n)).astype(np.float32)
    sizes = np.array([1, 3], np.int32)
    text = _program([(b, m, k), (b, k, n), (g,)], ["f32", "f32", "i32"], (b, m, n),
                    _dims([0], [0], [2], [1], 0, []))
    (got,) = run(text, lhs, rhs, sizes)
    np.testing.assert_allclose(got, lhs @ rhs, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("free", [1, 2])
def test_f16_accumulates_in_f32(free: int) -> None:
    """One free lhs dimension (the grouped gemm in f32, rounded once) or two (the
    per-element kernel)."""
    m, k, n, g = 8, 64, 4, 2
    lhs = RNG.standard_normal((free, m, k)).astype(np.float16)
    rhs = RNG.standard_normal((g, k, n)).astype(np.float16)
    sizes = np.array([3, 5], np.int32)
    text = _program([(free, m, k), (g, k, n), (g,)], ["f16", "f16", "i32"], (free, m, n),
                    _dims([], [], [2], [1], 1, [0]))
    if free == 1:
        text = _program([(m, k), (g, k, n), (g,)], ["f16", "f16", "i32"], (m, n),
                        _dims([], [], [1], [1], 0, [0]))
        lhs = lhs[0]
    (got,) = run(text, lhs, rhs, sizes)
    l32, r32 = lhs.astype(np.float32), rhs.astype(np.float32)
    want = np.concatenate([l32[..., :3, :] @ r32[0], l32[..., 3:, :] @ r32[1]],
                          axis=-2).astype(np.float16)
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=2e-3,
                               atol=2e-3)


def test_wrong_group_sizes_shape_is_a_diagnostic() -> None:
    text = _program([(8, 4), (3, 4, 5), (2,)], ["f32", "f32", "i32"], (8, 5),
                    _dims([], [], [1], [1], 0, [0]))
    with pytest.raises(frontend.CompileError, match="group_sizes must have shape 3"):
        frontend.parse(text)


def test_jax_ragged_dot_export_runs_and_matches_jax() -> None:
    """JAX's GPU export is a composite with a per-group decomposition; tlc lowers the
    composite as chlo.ragged_dot (one grouped kernel) and matches JAX on the CPU."""
    jax = pytest.importorskip("jax")
    import jax.numpy as jnp
    from jax import export, lax

    m, k, n, g = 24, 16, 8, 3
    lhs = RNG.standard_normal((m, k)).astype(np.float32)
    rhs = RNG.standard_normal((g, k, n)).astype(np.float32)
    sizes = np.array([10, 4, 7], np.int32)
    f = jax.jit(lambda a, b, s: lax.ragged_dot(a, b, s))
    specs = [jax.ShapeDtypeStruct(x.shape, x.dtype) for x in (lhs, rhs, sizes)]
    text = export.export(f, platforms=["cuda"])(*specs).mlir_module()
    assert 'stablehlo.composite "chlo.ragged_dot"' in text
    from frontend.lower import lower_function

    kernels = lower_function(frontend.parse(text), "main").kernels
    assert "_ragged_gemm(" in kernels and "_dot(" not in kernels  # not the decomposition
    (got,) = run(text, lhs, rhs, sizes)
    want = np.asarray(f(jnp.asarray(lhs), jnp.asarray(rhs), jnp.asarray(sizes)))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_interpret_file() -> None:
    assert interpret_failures("chlo/ragged_dot") == {}
