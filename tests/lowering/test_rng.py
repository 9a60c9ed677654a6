"""rng_bit_generator against a numpy model of XLA's Threefry and Philox generators
(checked against Random123 known-answer vectors and an XLA-generated value)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.lowering.conftest import module, run

M32 = 0xFFFFFFFF


def _rotl(v: int, r: int) -> int:
    return ((v << r) | (v >> (32 - r))) & M32


def threefry(x: list[int], key: list[int]) -> list[int]:
    """Threefry-2x32, 20 rounds."""
    ks = [key[0], key[1], 0x1BD11BDA ^ key[0] ^ key[1]]
    x = [(x[0] + ks[0]) & M32, (x[1] + ks[1]) & M32]
    rot = ((13, 15, 26, 6), (17, 29, 16, 24))
    for i in range(5):
        for r in rot[i % 2]:
            x[0] = (x[0] + x[1]) & M32
            x[1] = _rotl(x[1], r) ^ x[0]
        x = [(x[0] + ks[(i + 1) % 3]) & M32, (x[1] + ks[(i + 2) % 3] + i + 1) & M32]
    return x


def philox(x: list[int], key: list[int]) -> list[int]:
    """Philox-4x32, 10 rounds."""
    for _ in range(10):
        p0, p1 = x[0] * 0xD2511F53, x[2] * 0xCD9E8D57
        x = [(p1 >> 32) ^ x[1] ^ key[0], p1 & M32, (p0 >> 32) ^ x[3] ^ key[1], p0 & M32]
        key = [(key[0] + 0x9E3779B9) & M32, (key[1] + 0xBB67AE85) & M32]
    return x


def test_known_answers() -> None:
    """Random123's kat_vectors."""
    assert threefry([0, 0], [0, 0]) == [0x6B200159, 0x99BA4EFE]
    assert philox([0, 0, 0, 0], [0, 0]) == [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]
    assert philox([M32] * 4, [M32] * 2) == [0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD]


def _split(u: int) -> list[int]:
    return [u & M32, u >> 32]


def model(algorithm: str, state: list[int], n: int, bits: int) -> tuple[list[int], list[int]]:
    """XLA's results and next state for ``n`` values of ``bits`` bits."""
    key = _split(state[0])
    if algorithm == "THREE_FRY":
        if bits == 64:
            ys = [threefry(_split((state[1] + i) % 2**64), key) for i in range(n)]
            return [y[0] | y[1] << 32 for y in ys], [state[0], (state[1] + n) % 2**64]
        half = (n + 1) // 2
        ys = [threefry(_split((state[1] + i) % 2**64), key) for i in range(half)]
        values = [y[0] for y in ys] + [y[1] for y in ys]
        return values[:n], [state[0], (state[1] + half) % 2**64]
    counter = state[1] | state[2] << 64
    words = []
    blocks = (n * bits // 32 + 3) // 4
    for j in range(blocks):
        c = (counter + j) % 2**128
        words += philox([(c >> s) & M32 for s in (0, 32, 64, 96)], key)
    if bits == 64:
        words = [words[2 * i] | words[2 * i + 1] << 32 for i in range(len(words) // 2)]
    new = (counter + blocks) % 2**128
    return words[:n], [state[0], new & (2**64 - 1), new >> 64]


def _program(algorithm: str, words: int, shape: tuple[int, ...], t: str) -> str:
    st = f"tensor<{words}xui64>"
    out = f"tensor<{'x'.join(map(str, shape))}{'x' if shape else ''}{t}>"
    return module(f"(%s: {st}) -> ({st}, {out})", f"""
  %0, %1 = stablehlo.rng_bit_generator %s, algorithm = {algorithm} : ({st}) -> ({st}, {out})
  return %0, %1 : {st}, {out}""")


def test_threefry_matches_xla_value() -> None:
    """An XLA result: state [3, 3], one ui64."""
    state, value = run(_program("THREE_FRY", 2, (), "ui64"), np.array([3, 3], np.uint64))
    assert int(value) == 3349939604322698703
    assert state.tolist() == [3, 4]


@pytest.mark.parametrize("algorithm,words", [("THREE_FRY", 2), ("PHILOX", 3),
                                             ("DEFAULT", 2), ("DEFAULT", 3)])
@pytest.mark.parametrize("shape,t,bits", [((3, 5), "ui64", 64), ((7,), "ui32", 32),
                                          ((2, 4), "ui32", 32), ((5,), "i64", 64)])
def test_rng_bit_generator(algorithm: str, words: int, shape: tuple[int, ...], t: str,
                           bits: int) -> None:
    state = [0x0123456789ABCDEF, 2**64 - 3, 7][:words]
    got_state, got = run(_program(algorithm, words, shape, t), np.array(state, np.uint64))
    kind = algorithm if algorithm != "DEFAULT" else ("THREE_FRY" if words == 2 else "PHILOX")
    want, want_state = model(kind, state, int(np.prod(shape)), bits)
    unsigned = got.reshape(-1).view(np.uint64 if bits == 64 else np.uint32)
    assert unsigned.tolist() == want
    assert got_state.tolist() == want_state


def test_unsupported_state_is_a_compile_error() -> None:
    from tensorlang.diagnostics import CompileError

    with pytest.raises(CompileError, match="PHILOX on a state of 2"):
        run(_program("PHILOX", 2, (4,), "ui32"), np.zeros(2, np.uint64))


def _rng_program(dist: str, t: str, n: int) -> str:
    out = f"tensor<{n}x{t}>"
    return module(f"(%a: tensor<{t}>, %b: tensor<{t}>) -> {out}", f"""
  %s = stablehlo.constant dense<[{n}]> : tensor<1xi64>
  %0 = stablehlo.rng %a, %b, %s, distribution = {dist}
      : (tensor<{t}>, tensor<{t}>, tensor<1xi64>) -> {out}
  return %0 : {out}""")


@pytest.mark.parametrize("t,dtype", [("f32", np.float32), ("f64", np.float64)])
def test_rng_uniform_float(t: str, dtype: type) -> None:
    got = run(_rng_program("UNIFORM", t, 4096), dtype(-2.0), dtype(3.0))[0]
    assert got.dtype == dtype and got.min() >= -2.0 and got.max() < 3.0
    assert abs(got.mean() - 0.5) < 0.15 and abs(got.std() - 5 / 12**0.5) < 0.1
    assert len(np.unique(got)) > 4000


def test_rng_uniform_int() -> None:
    got = run(_rng_program("UNIFORM", "i32", 4096), np.int32(-3), np.int32(5))[0]
    assert got.min() == -3 and got.max() == 4
    assert abs(np.bincount(got + 3).astype(float) / 4096 - 1 / 8).max() < 0.03


def test_rng_normal() -> None:
    got = run(_rng_program("NORMAL", "f64", 8192), np.float64(1.5), np.float64(2.0))[0]
    assert abs(got.mean() - 1.5) < 0.1 and abs(got.std() - 2.0) < 0.1
    assert abs(np.mean(np.abs(got - 1.5) < 2.0) - 0.6827) < 0.03  # one sigma
    assert np.isfinite(got).all()
