"""Device loops whose iterations never mix rows, run on several work-groups
(frontend/lower/families/control/row_split.py, ``device_loop._split_kernel``): which
loops split, and their results against numpy (buffers poisoned, inputs random, so rows a
work-group forgets to write fail), split and not."""

from __future__ import annotations

import numpy as np
import pytest

import frontend
from frontend.ir.core import Op
from frontend.lower import lower_function, merged_launches
from frontend.lower.families.control import device_loop, pointwise_loop, row_split
from tensorlang.plan import Launch, launches

from .conftest import module, rand, run

T, B, D, H = 6, 16, 8, 32


def _t(*dims: int) -> str:
    return "tensor<" + "".join(f"{n}x" for n in dims) + "f32>"


I32 = "tensor<i32>"
BH, HB, HH, BD, DH = _t(B, H), _t(H, B), _t(H, H), _t(B, D), _t(D, H)
TBD, TBH = _t(T, B, D), _t(T, B, H)


def dot(result: str, lhs: tuple[str, str], rhs: tuple[str, str], out: str) -> str:
    """``result = lhs @ rhs`` (each operand with its type)."""
    return (f"{result} = stablehlo.dot_general {lhs[0]}, {rhs[0]}, contracting_dims = [1] x "
            f"[0] : ({lhs[1]}, {rhs[1]}) -> {out}")


def counted(carried: list[tuple[str, str, str]], body: str, results: list[str]) -> str:
    """``%r``: a loop of ``T`` steps carrying the counter ``%i`` (result 0) and
    ``carried`` (name, initial value, type); ``body`` gives their new ``results``."""
    inits = ", ".join(f"{name} = {value}" for name, value, _ in carried)
    kinds = ", ".join(t for _, _, t in carried)
    return f"""  %c0 = stablehlo.constant dense<0> : {I32}
  %r:{len(carried) + 1} = stablehlo.while(%i = %c0, {inits}) : {I32}, {kinds}
   cond {{
    %n = stablehlo.constant dense<{T}> : {I32}
    %p = stablehlo.compare LT, %i, %n, SIGNED : ({I32}, {I32}) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  }} do {{
    {body}
    %one = stablehlo.constant dense<1> : {I32}
    %j = stablehlo.add %i, %one : {I32}
    stablehlo.return %j, {", ".join(results)} : {I32}, {kinds}
  }}"""


def rnn(cell: str = "", mixed: str = "") -> str:
    """An RNN scan over ``T`` steps: ``h = tanh(x_t @ W + h @ U + b)`` (``cell`` may
    rewrite ``%hn`` from ``%h1``), the states stacked in ``ys``; returns the last state,
    the stack and the counter.  ``mixed`` is extra body text (its ``%m`` replaces
    ``%hn`` in the carry)."""
    carry = "%m" if mixed else "%hn"
    body = f"""%z = stablehlo.constant dense<0> : {I32}
    %xt = stablehlo.dynamic_slice %xs, %i, %z, %z, sizes = [1, {B}, {D}]
        : ({TBD}, {I32}, {I32}, {I32}) -> {_t(1, B, D)}
    %x2 = stablehlo.reshape %xt : ({_t(1, B, D)}) -> {BD}
    {dot("%px", ("%x2", BD), ("%w", DH), BH)}
    {dot("%ph", ("%h", BH), ("%u", HH), BH)}
    %s = stablehlo.add %px, %ph : {BH}
    %bb = stablehlo.broadcast_in_dim %b, dims = [1] : ({_t(H)}) -> {BH}
    %s2 = stablehlo.add %s, %bb : {BH}
    %h1 = stablehlo.tanh %s2 : {BH}
    {cell or "%hn = stablehlo.negate %h1 : " + BH}
    {mixed}
    %h3 = stablehlo.reshape {carry} : ({BH}) -> {_t(1, B, H)}
    %ys2 = stablehlo.dynamic_update_slice %ys, %h3, %i, %z, %z
        : ({TBH}, {_t(1, B, H)}, {I32}, {I32}, {I32}) -> {TBH}"""
    loop = counted([("%h", "%h0", BH), ("%ys", "%zs", TBH)], body, [carry, "%ys2"])
    return module(f"(%xs: {TBD}, %w: {DH}, %u: {HH}, %b: {_t(H)}, %h0: {BH}) -> "
                  f"({BH}, {TBH}, {I32})", f"""
  %zs = stablehlo.constant dense<0.0> : {TBH}
{loop}
  return %r#1, %r#2, %r#0 : {BH}, {TBH}, {I32}""")


def rnn_numpy(xs: np.ndarray, w: np.ndarray, u: np.ndarray, b: np.ndarray, h: np.ndarray,
              mix: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """The scan of :func:`rnn` in float64 (``mix``: each state less its batch mean)."""
    ys = []
    h = h.astype(np.float64)
    for x in xs.astype(np.float64):
        h = -np.tanh(x @ w + h @ u + b)
        if mix:
            h = h - h.mean(axis=0)
        ys.append(h)
    return h, np.stack(ys)


MEAN = f"""%zero = stablehlo.constant dense<0.0> : tensor<f32>
    %sum = stablehlo.reduce(%hn init: %zero) applies stablehlo.add across dimensions = [0]
        : ({BH}, tensor<f32>) -> {_t(H)}
    %k = stablehlo.constant dense<{1.0 / B}> : {_t(H)}
    %mean = stablehlo.multiply %sum, %k : {_t(H)}
    %mb = stablehlo.broadcast_in_dim %mean, dims = [1] : ({_t(H)}) -> {_t(B, H)}
    %m = stablehlo.subtract %hn, %mb : {_t(B, H)}"""


def _while(text: str) -> Op:
    body = frontend.parse(text).funcs[0].body
    assert body is not None
    return next(o for o in body.block.ops if o.name == "stablehlo.while")


def _loop_groups(text: str) -> list[int]:
    """The work-groups of each launch of the lowered program's loop kernel."""
    plan = merged_launches(lower_function(frontend.parse(text))).plan
    return [s.num_groups for s in launches(plan.steps) if isinstance(s, Launch)
            and "while" in s.kernel and not s.kernel.endswith(("init", "slots"))]


def _inputs() -> tuple[np.ndarray, ...]:
    return (rand((T, B, D)), rand((D, H)) * 0.3, rand((H, H)) * 0.2, rand((H,)), rand((B, H)))


def test_the_rows_of_a_scan_are_split() -> None:
    op = _while(rnn())
    split = row_split.find(op, [])
    assert split is not None and split.extent == B and split.rows_per_group == B // 2
    body = op.regions[1].block
    assert [split.dim(a) for a in body.args] == [None, 0, 1]  # counter, state, stack
    assert [split.dim(r) for r in op.results] == [None, 0, 1]


def test_a_split_scan_against_numpy(uncached: None) -> None:
    assert _loop_groups(rnn()) == [row_split.GROUPS]
    xs, w, u, b, h0 = _inputs()
    h, ys, i = run(rnn(), xs, w, u, b, h0)
    want_h, want_ys = rnn_numpy(xs, w, u, b, h0)
    np.testing.assert_allclose(h, want_h, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ys, want_ys, rtol=1e-5, atol=1e-5)
    assert int(i) == T


def test_split_and_one_work_group_agree(monkeypatch: pytest.MonkeyPatch,
                                        uncached: None) -> None:
    args = _inputs()
    split = run(rnn(), *args)
    monkeypatch.setattr(device_loop, "SPLIT", False)
    assert _loop_groups(rnn()) == [1]
    one = run(rnn(), *args)
    for a, b in zip(split, one, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


def test_a_reduction_over_the_rows_keeps_one_work_group(uncached: None) -> None:
    text = rnn(mixed=MEAN)
    assert row_split.find(_while(text), []) is None
    assert _loop_groups(text) == [1]
    xs, w, u, b, h0 = _inputs()
    h, ys, _ = run(text, xs, w, u, b, h0)
    want_h, want_ys = rnn_numpy(xs, w, u, b, h0, mix=True)
    np.testing.assert_allclose(ys, want_ys, rtol=1e-5, atol=1e-5)


def test_rows_moved_between_rows_keep_one_work_group() -> None:
    reverse = (f"%hn = stablehlo.reverse %h1, dims = [0] : {_t(B, H)}")
    assert row_split.find(_while(rnn(cell=reverse)), []) is None
    shifted = (f"%top = stablehlo.slice %h1 [1:{B}, 0:{H}] : ({_t(B, H)}) -> {_t(B - 1, H)}\n"
               f"    %last = stablehlo.slice %h1 [0:1, 0:{H}] : ({_t(B, H)}) -> {_t(1, H)}\n"
               f"    %hn = stablehlo.concatenate %top, %last, dim = 0 : ({_t(B - 1, H)}, "
               f"{_t(1, H)}) -> {_t(B, H)}")
    assert row_split.find(_while(rnn(cell=shifted)), []) is None


def test_rows_along_the_second_dimension(uncached: None) -> None:
    """The state stored [H, B]: the product splits the gemm's other operand."""
    body = f"""{dot("%ph", ("%u", HH), ("%h", HB), HB)}
    %hn = stablehlo.tanh %ph : {HB}"""
    text = module(f"(%u: {HH}, %h0: {HB}) -> {HB}",
                  f"{counted([('%h', '%h0', HB)], body, ['%hn'])}\n  return %r#1 : {HB}")
    assert _loop_groups(text) == [row_split.GROUPS]
    u, h0 = rand((H, H)) * 0.3, rand((H, B))
    want = h0.astype(np.float64)
    for _ in range(T):
        want = np.tanh(u @ want)
    np.testing.assert_allclose(run(text, u, h0)[0], want, rtol=1e-5, atol=1e-5)


def test_a_uniform_carry_past_local_memory_keeps_one_work_group(uncached: None) -> None:
    """A uniform value of 32 KiB carried beside the rows: every work-group would write
    it into one buffer, so the loop stays on one work-group."""
    big = _t(64, 128)
    body = f"""{dot("%ph", ("%h", BH), ("%u", HH), BH)}
    %hn = stablehlo.tanh %ph : {BH}
    %half = stablehlo.constant dense<0.5> : {big}
    %sn = stablehlo.multiply %s, %half : {big}
    %sm = stablehlo.add %sn, %half : {big}"""
    loop = counted([("%h", "%h0", BH), ("%s", "%s0", big)], body, ["%hn", "%sm"])
    text = module(f"(%u: {HH}, %h0: {BH}, %s0: {big}) -> ({BH}, {big})",
                  f"{loop}\n  return %r#1, %r#2 : {BH}, {big}")
    assert row_split.find(_while(text), []) is not None
    assert _loop_groups(text) == [1]
    u, h0, s0 = rand((H, H)) * 0.3, rand((B, H)), rand((64, 128))
    want_h, want_s = h0.astype(np.float64), s0.astype(np.float64)
    for _ in range(T):
        want_h, want_s = np.tanh(want_h @ u), want_s * 0.5 + 0.5
    h, s = run(text, u, h0, s0)
    np.testing.assert_allclose(h, want_h, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(s, want_s, rtol=1e-6)


def chunked() -> str:
    """A loop with no trip count known when compiling (``t`` in f32 against a limit
    given at run time): relaunched in chunks while its flag says so; a uniform counter,
    clock and sum of the clock carried beside the rows."""
    return module(f"(%u: {_t(H, H)}, %h0: {_t(B, H)}, %end: tensor<f32>) -> "
                  f"({_t(B, H)}, tensor<f32>, tensor<i32>, tensor<f32>)", f"""
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %f0 = stablehlo.constant dense<0.0> : tensor<f32>
  %r:4 = stablehlo.while(%t = %f0, %h = %h0, %n = %c0, %acc = %f0)
      : tensor<f32>, {BH}, {I32}, tensor<f32>
   cond {{
    %p = stablehlo.compare LT, %t, %end, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  }} do {{
    {dot("%ph", ("%h", BH), ("%u", HH), BH)}
    %th = stablehlo.tanh %ph : {_t(B, H)}
    %tb = stablehlo.broadcast_in_dim %t, dims = [] : (tensor<f32>) -> {_t(B, H)}
    %hn = stablehlo.add %th, %tb : {_t(B, H)}
    %one = stablehlo.constant dense<1.0> : tensor<f32>
    %tn = stablehlo.add %t, %one : tensor<f32>
    %i1 = stablehlo.constant dense<1> : tensor<i32>
    %nn = stablehlo.add %n, %i1 : tensor<i32>
    %an = stablehlo.add %acc, %t : tensor<f32>
    stablehlo.return %tn, %hn, %nn, %an : tensor<f32>, {_t(B, H)}, tensor<i32>, tensor<f32>
  }}
  return %r#1, %r#0, %r#2, %r#3 : {_t(B, H)}, tensor<f32>, tensor<i32>, tensor<f32>""")


@pytest.mark.parametrize("chunk", [3, 1024])
def test_a_relaunched_split_loop_against_numpy(monkeypatch: pytest.MonkeyPatch,
                                               uncached: None, chunk: int) -> None:
    """In chunks of 3 trips each work-group's uniform values must survive between
    launches (their slots) and the carried buffers hold the last chunk's."""
    monkeypatch.setattr(device_loop, "CHUNK_TRIPS", chunk)
    assert _loop_groups(chunked()) == [row_split.GROUPS]
    u, h0 = rand((H, H)) * 0.3, rand((B, H))
    for trips in (7, 1, 0):
        want = h0.astype(np.float64)
        for t in range(trips):
            want = np.tanh(want @ u) + t
        h, t_end, n, acc = run(chunked(), u, h0, np.float32(trips - 0.5))
        np.testing.assert_allclose(h, want, rtol=1e-5, atol=1e-5)
        assert (float(t_end), int(n), float(acc)) == (max(trips, 0), trips,
                                                        sum(range(trips)))


def nested() -> str:
    """Steps of a solver whose stages are a nested loop (equinox's bounded loops): the
    stages carry the weight through unchanged, and the state's rows."""
    return module(f"(%u: {_t(H, H)}, %h0: {_t(B, H)}) -> {_t(B, H)}", f"""
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %r:3 = stablehlo.while(%i = %c0, %h = %h0, %w = %u) : tensor<i32>, {_t(B, H)}, {_t(H, H)}
   cond {{
    %n = stablehlo.constant dense<{T}> : tensor<i32>
    %p = stablehlo.compare LT, %i, %n, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  }} do {{
    %z = stablehlo.constant dense<0.0> : {_t(B, H)}
    %s:4 = stablehlo.while(%j = %c0, %g = %h, %acc = %z, %v = %w)
        : {I32}, {BH}, {BH}, {HH}
     cond {{
      %three = stablehlo.constant dense<3> : tensor<i32>
      %q = stablehlo.compare LT, %j, %three, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %q : tensor<i1>
    }} do {{
      {dot("%pg", ("%g", BH), ("%v", HH), BH)}
      %gn = stablehlo.tanh %pg : {_t(B, H)}
      %an = stablehlo.add %acc, %gn : {_t(B, H)}
      %k1 = stablehlo.constant dense<1> : tensor<i32>
      %jn = stablehlo.add %j, %k1 : tensor<i32>
      stablehlo.return %jn, %gn, %an, %v : tensor<i32>, {_t(B, H)}, {_t(B, H)}, {_t(H, H)}
    }}
    %third = stablehlo.constant dense<0.3> : {_t(B, H)}
    %step = stablehlo.multiply %s#2, %third : {_t(B, H)}
    %hn = stablehlo.add %h, %step : {_t(B, H)}
    %one = stablehlo.constant dense<1> : tensor<i32>
    %ii = stablehlo.add %i, %one : tensor<i32>
    stablehlo.return %ii, %hn, %w : tensor<i32>, {_t(B, H)}, {_t(H, H)}
  }}
  return %r#1 : {_t(B, H)}""")


def test_a_nested_loop_splits_with_its_rows(uncached: None) -> None:
    op = _while(nested())
    split = row_split.find(op, [])
    assert split is not None
    inner = next(o for o in op.regions[1].block.ops if o.name == "stablehlo.while")
    assert [split.dim(a) for a in inner.regions[1].block.args] == [None, 0, 0, None]
    assert _loop_groups(nested()) == [row_split.GROUPS]
    u, h0 = rand((H, H)) * 0.3, rand((B, H))
    want = h0.astype(np.float64)
    for _ in range(T):
        g, acc = want, np.zeros_like(want)
        for _ in range(3):
            g = np.tanh(g @ u)
            acc = acc + g
        want = want + 0.3 * acc
    np.testing.assert_allclose(run(nested(), u, h0)[0], want, rtol=1e-5, atol=1e-5)


@pytest.fixture(autouse=True)
def _device_loops(monkeypatch: pytest.MonkeyPatch) -> None:
    """The loops here run as device loop kernels (not element-wise ones)."""
    monkeypatch.setattr(pointwise_loop, "ENABLED", False)
