"""foreach / foreach_nd through isl: parametric domains, the work-group distribution
(every point exactly once, for boxes that do not divide the work-group), and the OpenCL
code printed from isl's AST against numpy with poisoned outputs."""

from __future__ import annotations

import itertools
from collections import Counter

import numpy as np
import pytest
from loopeval import visit

import tensorlang
from backend_opencl.api.compiler import compile_program
from backend_opencl.emit.target import Target
from tensorlang.schedule.affine import Symbols
from tensorlang.schedule.deps import footprint
from tensorlang.schedule.domains import Statement, statement
from tensorlang.schedule.foreach import LOCAL_ID, Distribution, depth, extent, foreach_loops

LOOPS = """
func @k(%a: memref<f32x?x?x?>, %lo0: index, %hi0: index, %lo1: index, %hi1: index) {
  foreach %i = %lo0, %hi0 {
    store 1.0, %a[%i, 0, 0] : memref<f32x?x?x?>
  }
  %n = size %a[1] : memref<f32x?x?x?>
  %e = arith.add %lo0, 5 : index
  foreach (%i, %j, %k) = (%lo0, 0, %lo1), (%e, %n, %hi1) {
    store 1.0, %a[%i, %j, %k] : memref<f32x?x?x?>
  }
}
"""


def _statements() -> tuple[Statement, Statement]:
    func = tensorlang.parse(LOOPS).functions[0]
    loops = [i for i in func.body.instructions if i.name.startswith("foreach")]
    syms = Symbols()
    one, three = (statement(inst, syms) for inst in loops)
    assert one is not None and three is not None
    return one, three


def test_domains_have_dynamic_bounds_as_parameters() -> None:
    one, three = _statements()
    assert one.dims == ("i",) and one.box == (("p_lo0", "p_hi0"),)
    assert str(one.domain()) == "[p_lo0, p_hi0] -> { S[i] : p_lo0 <= i < p_hi0 }"
    assert three.dims == ("i0", "i1", "i2")
    domain = str(three.domain())
    # size %a[1] is the size parameter of %a's mode 1; lo0 + 5 stays affine
    assert "p_lo0 <= i0 <= 4 + p_lo0" in domain and "0 <= i1 < p_a_n1" in domain
    assert "p_lo1 <= i2 < p_hi1" in domain
    assert [extent(lo, hi) for lo, hi in three.box] == [5, None, None]
    stores = {(a.root.name, a.write, a.index) for a in three.accesses}
    assert stores == {("a", True, ("i0", "i1", "i2"))}


def test_barrier_footprint_is_the_statement_image() -> None:
    """insert-barrier's footprint of a foreach is the image of the same statement."""
    func = tensorlang.parse(LOOPS).functions[0]
    loop = [i for i in func.body.instructions if i.name == "foreach_nd"][0]
    syms = Symbols()
    stmt = statement(loop, syms)
    assert stmt is not None
    (access,) = stmt.accesses
    written = footprint(loop, syms).writes[access.root]
    assert written.is_equal(stmt.access_map(access, "Mem").range())


def _visits(stmt: Statement, dist: Distribution, params: dict[str, int]) -> dict[int, list]:
    """Points visited by each work-item (in visiting order)."""
    iterators = [f"c{d}" for d in range(depth(stmt, dist))]
    tree = foreach_loops(stmt, dist, {}, iterators)
    seen = {}
    for lid in range(dist.work_items):
        out: list = []
        visit(tree, {**params, LOCAL_ID: lid}, out)
        seen[lid] = [point for _, point in out]
    return seen


DISTRIBUTIONS = [Distribution(1), Distribution(16), Distribution(6), Distribution(16, 8),
                 Distribution(3, 4)]


@pytest.mark.parametrize("dist", DISTRIBUTIONS)
@pytest.mark.parametrize(("lo", "hi"), [(0, 37), (3, 11), (5, 5), (7, 2), (-2, 9)])
def test_1d_every_point_exactly_once(dist: Distribution, lo: int, hi: int) -> None:
    one, _ = _statements()
    seen = _visits(one, dist, {"p_lo0": lo, "p_hi0": hi})
    points = Counter(p for pts in seen.values() for p in pts)
    assert points == Counter((i,) for i in range(lo, hi))


@pytest.mark.parametrize("dist", DISTRIBUTIONS)
@pytest.mark.parametrize(("lo0", "n", "lo1", "hi1"), [(0, 3, 0, 4), (2, 1, 1, 7), (1, 4, 3, 3)])
def test_3d_every_point_exactly_once(dist: Distribution, lo0: int, n: int, lo1: int,
                                     hi1: int) -> None:
    _, three = _statements()
    params = {"p_lo0": lo0, "p_a_n1": n, "p_lo1": lo1, "p_hi1": hi1}
    seen = _visits(three, dist, params)
    points = Counter(p for pts in seen.values() for p in pts)
    want = itertools.product(range(lo0, lo0 + 5), range(n), range(lo1, hi1))
    assert points == Counter(want)


def test_cyclic_linearises_through_the_first_dynamic_extent() -> None:
    """Mode 0 has the constant extent 5, mode 1 a dynamic one: work-item ``lid`` gets the
    points whose linear index over modes 0 and 1 is ``lid`` mod 16; mode 2 is sequential."""
    _, three = _statements()
    seen = _visits(three, Distribution(16), {"p_lo0": 2, "p_a_n1": 3, "p_lo1": 0, "p_hi1": 4})
    for lid, pts in seen.items():
        assert all(((i - 2) + 5 * j) % 16 == lid for i, j, _ in pts)
    assert sorted(len(pts) for pts in seen.values()) == [0] + [4] * 15


def test_blocked_runs_are_contiguous() -> None:
    one, _ = _statements()
    seen = _visits(one, Distribution(4, 8), {"p_lo0": 3, "p_hi0": 70})
    for lid, pts in seen.items():
        firsts = [i for (i,) in pts if (i - 3) % 8 == 0]
        assert all(((i - 3) // 8) % 4 == lid for (i,) in pts)
        assert [i for (i,) in pts] == sorted(i for (i,) in pts)
        assert len(pts) == sum(min(8, 70 - f) for f in firsts)


def test_loops_are_strided_without_division() -> None:
    """The cyclic distribution of a dynamic box is one strided loop per mode."""
    one, _ = _statements()
    tree = foreach_loops(one, Distribution(16), {"p_lo0": "lo", "p_hi0": "hi", LOCAL_ID: "l"},
                         ["c0"])
    assert (tree.lower, tree.upper, tree.step) == ("lo + l", "hi - 1", 16)


# -- generated OpenCL vs numpy -------------------------------------------------------------

KERNELS = """
func @scale_{wx}x{wy}(%a: memref<f32x?>, %b: memref<f32x?>, %lo: index, %hi: index)
    work_group_size({wx}, {wy}) {{
  foreach %i = %lo, %hi {{
    %x = load %a[%i] : memref<f32x?>
    %y = arith.mul %x, 3.0 : f32
    store %y, %b[%i] : memref<f32x?>
  }}
}}
func @box_{wx}x{wy}(%a: memref<f64x13x?>, %b: memref<f64x13x?>, %lo: index)
    work_group_size({wx}, {wy}) {{
  %n = size %a[1] : memref<f64x13x?>
  foreach (%i, %j) = (%lo, 0), (13, %n) {{
    %x = load %a[%i, %j] : memref<f64x13x?>
    %fi = cast %i : index -> f64
    %y = arith.add %x, %fi : f64
    store %y, %b[%i, %j] : memref<f64x13x?>
  }}
}}
"""
SHAPES = [(1, 1), (16, 1), (3, 2), (64, 1)]


@pytest.fixture(scope="module", params=["cpu", "gpu"])
def module(request: pytest.FixtureRequest) -> object:
    """The kernels with the CPU (blocked) and GPU (cyclic) distributions."""
    text = "\n".join(KERNELS.format(wx=wx, wy=wy) for wx, wy in SHAPES)
    return compile_program(text, target=Target(kind=request.param))


@pytest.mark.parametrize(("wx", "wy"), SHAPES)
@pytest.mark.parametrize(("lo", "hi"), [(0, 1000), (5, 99), (7, 7), (9, 3)])
def test_foreach_numeric(module, wx: int, wy: int, lo: int, hi: int) -> None:
    rng = np.random.default_rng(wx * 100 + lo)
    a = rng.standard_normal(1000).astype(np.float32)
    b = np.full(1000, np.nan, np.float32)
    getattr(module, f"scale_{wx}x{wy}")(a, b, lo, hi)
    want = np.full(1000, np.nan, np.float32)
    want[lo:hi] = 3 * a[lo:hi]
    np.testing.assert_array_equal(b, want)


@pytest.mark.parametrize(("wx", "wy"), SHAPES)
@pytest.mark.parametrize(("lo", "n"), [(0, 7), (4, 33), (15, 5)])
def test_foreach_nd_numeric(module, wx: int, wy: int, lo: int, n: int) -> None:
    rng = np.random.default_rng(n * 10 + wx)
    a = np.asfortranarray(rng.standard_normal((13, n)))
    b = np.full((13, n), np.nan, order="F")
    getattr(module, f"box_{wx}x{wy}")(a, b, lo)
    want = np.full((13, n), np.nan)
    want[lo:] = a[lo:] + np.arange(13)[lo:, None]
    np.testing.assert_array_equal(b, want)


@pytest.mark.parametrize("dist", DISTRIBUTIONS)
def test_memoised_loops_renamed_visit_the_same_points(dist: Distribution) -> None:
    """The loops of one box are generated once and renamed per caller: parameters swapped
    between two names, ``lid`` and the loop variables renamed, visit the same points."""
    from tensorlang.schedule import foreach

    _, three = _statements()
    params = {"p_lo0": 1, "p_a_n1": 3, "p_lo1": 2, "p_hi1": 6}
    plain = _visits(three, dist, params)
    names = {"p_lo1": "p_hi1", "p_hi1": "p_lo1", "p_lo0": "lo", LOCAL_ID: "item"}
    iterators = [f"x{d}" for d in range(depth(three, dist))]
    hits = foreach._loops.cache_info().hits
    tree = foreach_loops(three, dist, names, iterators)
    assert foreach._loops.cache_info().hits == hits + 1
    swapped = {"lo": 1, "p_a_n1": 3, "p_hi1": 2, "p_lo1": 6}
    for lid in range(dist.work_items):
        out: list = []
        visit(tree, {**swapped, "item": lid}, out)
        assert [point for _, point in out] == plain[lid]
