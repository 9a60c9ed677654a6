"""Runs of one-work-group launches merged into one kernel
(:mod:`frontend.lower.core.merge_launches`): which launches merge, the merged kernel's
parameters and renamed values, frees moved after it, and programs against numpy with
poisoned buffers."""

from __future__ import annotations

import numpy as np

import backend_opencl
import frontend
from frontend.lower import lower_function, merged_launches
from frontend.lower.core.merge_launches import MAX_PARTS, REPEATED_LINES, merge_launches
from tensorlang.plan import Copy, Free, Launch, While, launches

from .conftest import RNG, module

ADD = """func @k{n}(%b{a}: memref<f32x4>, %b{o}: memref<f32x4>) {{
  %c1 = constant 0 -> index
  %c2 = constant 4 -> index
  foreach %i3 = %c1, %c2 : index {{
    %x4 = load %b{a}[%i3] : memref<f32x4>
    %t5 = arith.add %x4, %x4 : f32
    store %t5, %b{o}[%i3] : memref<f32x4>
  }}
}}"""


def test_a_run_becomes_one_kernel_over_its_buffers() -> None:
    texts = [ADD.format(n=0, a=0, o=1), ADD.format(n=1, a=1, o=2)]
    steps = (Launch("k0", (0, 1), 1), Free((0,)), Launch("k1", (1, 2), 1))
    kept, merged = merge_launches(texts, steps)
    assert merged == (Launch("k0_merged0", (0, 1, 2), 1), Free((0,)))
    (text,) = kept
    assert text.startswith("func @k0_merged0(%b0: memref<f32x4>, %b1: memref<f32x4>, "
                           "%b2: memref<f32x4>) {")
    assert "%t5_0 = arith.add %x4_0, %x4_0" in text and "store %t5_1, %b2[%i3_1]" in text


def test_what_ends_a_run() -> None:
    """Several work-groups, a long kernel launched again (dedup's shared kernel), control
    flow; runs inside a loop merge too, and a short kernel launched again joins."""
    texts = [ADD.format(n=i, a=i, o=i + 1) for i in range(4)] + [long_kernel(4)]
    steps = (Launch("k0", (0, 1), 1), Launch("k1", (1, 2), 2), Launch("k4", (2, 3), 1),
             Launch("k4", (3, 4), 1),
             While((), 4, (Launch("k3", (3, 4), 1), Launch("k0", (4, 5), 1))),
             Launch("k2", (5, 6), 1), Launch("k2", (6, 7), 1))
    _, merged = merge_launches(texts, steps)
    assert [s.kernel for s in launches(merged)] == ["k0", "k1", "k4", "k4", "k3_merged0",
                                                    "k2_merged1"]
    assert list(launches(merged))[-1].args == (5, 6, 7)


def long_kernel(n: int) -> str:
    """``ADD``'s kernel ``k{n}`` with as many adds as a run takes again no more."""
    head, _, tail = ADD.format(n=n, a=0, o=1).partition("    store")
    adds = "".join(f"    %u{j} = arith.add %x4, %x4 : f32\n" for j in range(REPEATED_LINES))
    return head + adds + "    store" + tail


def test_at_most_max_parts_kernels_merge() -> None:
    texts = [ADD.format(n=i, a=i, o=i + 1) for i in range(MAX_PARTS + 3)]
    steps = tuple(Launch(f"k{i}", (i, i + 1), 1) for i in range(MAX_PARTS + 3))
    _, merged = merge_launches(texts, steps)
    assert [len(s.args) - 1 for s in launches(merged)] == [MAX_PARTS, 3]


SCALARS = """
  %c1 = stablehlo.constant dense<1.5> : tensor<f32>
  %a = stablehlo.multiply %s, %c1 : tensor<f32>
  %b = stablehlo.add %a, %t : tensor<f32>
  %m = stablehlo.maximum %a, %b : tensor<f32>
  %cond = stablehlo.compare GT, %m, %t : (tensor<f32>, tensor<f32>) -> tensor<i1>
  %r = stablehlo.select %cond, %a, %b : tensor<i1>, tensor<f32>
  %v = stablehlo.broadcast_in_dim %r, dims = [] : (tensor<f32>) -> tensor<16xf32>
  %w = stablehlo.broadcast_in_dim %m, dims = [] : (tensor<f32>) -> tensor<16xf32>
  %x2 = stablehlo.multiply %x, %v : tensor<16xf32>
  %y = stablehlo.add %x2, %w : tensor<16xf32>
  return %y, %a, %m : tensor<16xf32>, tensor<f32>, tensor<f32>"""
PROGRAM = module("(%s: tensor<f32>, %t: tensor<f32>, %x: tensor<16xf32>) -> "
                 "(tensor<16xf32>, tensor<f32>, tensor<f32>)", SCALARS)


def test_scalar_chains_run_as_one_launch_against_numpy() -> None:
    lowered = lower_function(frontend.parse(PROGRAM))
    assert len(list(launches(lowered.plan.steps))) > 1
    assert len(list(launches(merged_launches(lowered).plan.steps))) == 1
    s, t = np.float32(RNG.standard_normal()), np.float32(RNG.standard_normal())
    x = RNG.standard_normal(16).astype(np.float32)
    y, a, m = backend_opencl.compile_stablehlo(PROGRAM)(np.array(s), np.array(t), x)
    a_ = s * np.float32(1.5)
    b_ = a_ + t
    m_ = max(a_, b_)
    r_ = a_ if m_ > t else b_
    np.testing.assert_allclose(a, a_, rtol=1e-6)
    np.testing.assert_allclose(m, m_, rtol=1e-6)
    np.testing.assert_allclose(y, x * r_ + m_, rtol=1e-6)


def test_a_one_group_launch_moves_up_to_the_run_before_it() -> None:
    """Past launches and frees it is independent of: the two make one kernel ahead of the
    four-group launch between them."""
    texts = [ADD.format(n=0, a=0, o=1), ADD.format(n=1, a=2, o=3), ADD.format(n=9, a=5, o=6)]
    steps = (Launch("k0", (0, 1), 1), Launch("k9", (5, 6), 4), Free((5,)),
             Launch("k1", (2, 3), 1))
    _, merged = merge_launches(texts, steps)
    assert merged == (Launch("k0_merged0", (0, 1, 2, 3), 1), Launch("k9", (5, 6), 4),
                      Free((5,)))


def test_what_keeps_a_one_group_launch_in_place() -> None:
    """It reads what a launch between writes, writes what one reads, or a copy lies
    between."""
    for args, between in (((6, 3), Launch("k9", (5, 6), 4)),
                          ((2, 5), Launch("k9", (5, 6), 4)),
                          ((2, 3), Copy(7, 8))):
        texts = [ADD.format(n=0, a=0, o=1), ADD.format(n=1, a=args[0], o=args[1]),
                 ADD.format(n=9, a=5, o=6)]
        steps = (Launch("k0", (0, 1), 1), between, Launch("k1", args, 1))
        assert merge_launches(texts, steps)[1] == steps


SCALE = """
  %eps{n} = stablehlo.constant dense<1.0e-3> : tensor<{c}xf32>
  %ve{n} = stablehlo.add %v{n}, %eps{n} : tensor<{c}xf32>
  %r{n} = stablehlo.rsqrt %ve{n} : tensor<{c}xf32>
  %s{n} = stablehlo.multiply %r{n}, %g{n} : tensor<{c}xf32>
  %ms{n} = stablehlo.multiply %m{n}, %s{n} : tensor<{c}xf32>
  %bias{n} = stablehlo.subtract %b{n}, %ms{n} : tensor<{c}xf32>
  %sb{n} = stablehlo.broadcast_in_dim %s{n}, dims = [1] : (tensor<{c}xf32>) -> tensor<128x{c}xf32>
  %bb{n} = stablehlo.broadcast_in_dim %bias{n}, dims = [1]
      : (tensor<{c}xf32>) -> tensor<128x{c}xf32>
  %p{n} = stablehlo.dot_general %{x}, %w{n}, contracting_dims = [1] x [0]
      : (tensor<128x{k}xf32>, tensor<{k}x{c}xf32>) -> tensor<128x{c}xf32>
  %q{n} = stablehlo.multiply %p{n}, %sb{n} : tensor<128x{c}xf32>
  %h{n} = stablehlo.add %q{n}, %bb{n} : tensor<128x{c}xf32>"""
BATCH_NORMED = module(
    "(%x: tensor<128x32xf32>, %w1: tensor<32x48xf32>, %g1: tensor<48xf32>, "
    "%v1: tensor<48xf32>, %m1: tensor<48xf32>, %b1: tensor<48xf32>, "
    "%w2: tensor<48x40xf32>, %g2: tensor<40xf32>, %v2: tensor<40xf32>, "
    "%m2: tensor<40xf32>, %b2: tensor<40xf32>) -> tensor<128x40xf32>",
    SCALE.format(n=1, c=48, k=32, x="x") + SCALE.format(n=2, c=40, k=48, x="h1")
    + "\n  return %h2 : tensor<128x40xf32>")


def test_batch_norm_scales_run_as_one_launch_against_numpy() -> None:
    """Each layer's scale ``g * rsqrt(v + eps)``, used twice, is a one-group launch of
    its own between the products; the second moves up to the first."""
    lowered = lower_function(frontend.parse(BATCH_NORMED))
    groups = [s.num_groups for s in launches(lowered.plan.steps)]
    assert groups == [1, 2, 1, 2]
    assert [s.num_groups for s in launches(merged_launches(lowered).plan.steps)] == [1, 2, 2]
    x = RNG.standard_normal((128, 32)).astype(np.float32)  # two row tiles
    layers = []
    for k, c in ((32, 48), (48, 40)):
        w = RNG.standard_normal((k, c)).astype(np.float32)
        g, m, b = (RNG.standard_normal(c).astype(np.float32) for _ in range(3))
        v = RNG.uniform(0.5, 2.0, c).astype(np.float32)
        layers.append((w, g, v, m, b))
    (out,) = backend_opencl.compile_stablehlo(BATCH_NORMED)(x, *layers[0], *layers[1])
    want = x
    for w, g, v, m, b in layers:
        scale = g / np.sqrt(v + np.float32(1e-3))
        want = (want @ w) * scale + (b - m * scale)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-4)
