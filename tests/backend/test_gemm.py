"""gemm against numpy: f32/f64/c32/c64, both transposes, static and dynamic shapes,
subviews of larger arrays, alpha/beta (beta = 0 must not read C), several work-group
sizes including ones that do not divide the matrix sizes."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

import backend_opencl


@dataclass(frozen=True)
class Case:
    t: str
    ta: str
    tb: str
    m: int
    n: int
    k: int
    dynamic: bool = False
    strided: bool = False
    wg: tuple[int, int] | None = None
    beta: str = "arg"  # "arg" (a run-time value), "zero" or "one" (constants)

    @property
    def name(self) -> str:
        wg = "auto" if self.wg is None else f"{self.wg[0]}x{self.wg[1]}"
        kind = ("dyn" if self.dynamic else "static") + ("_strided" if self.strided else "")
        dims = f"{self.m}x{self.n}x{self.k}"
        return f"gemm_{self.t}_{self.ta}{self.tb}_{dims}_{kind}_{wg}_{self.beta}"


def _memref(c: Case, shape: tuple[int, int]) -> str:
    dims = "x".join("?" if c.dynamic else str(s) for s in shape)
    layout = ",strided<1,?>" if c.strided else ""
    return f"memref<{c.t}x{dims}{layout}>"


def _shapes(c: Case) -> tuple[tuple[int, int], tuple[int, int], tuple[int, int]]:
    a = (c.m, c.k) if c.ta == "n" else (c.k, c.m)
    b = (c.k, c.n) if c.tb == "n" else (c.n, c.k)
    return a, b, (c.m, c.n)


def source(c: Case) -> str:
    """The tensor-language function of one case."""
    a, b, cc = (_memref(c, s) for s in _shapes(c))
    attrs = f" work_group_size({c.wg[0]}, {c.wg[1]})" if c.wg else ""
    zero = "[0.0, 0.0]" if c.t.startswith("c") else "0.0"
    one = "[1.0, 0.0]" if c.t.startswith("c") else "1.0"
    beta = {"arg": "%beta", "zero": "%zero", "one": "%one"}[c.beta]
    return f"""
func @{c.name}(%alpha: {c.t}, %A: {a}, %B: {b}, %beta: {c.t}, %C: {cc}){attrs} {{
  %zero = constant {zero} : {c.t}
  %one = constant {one} : {c.t}
  gemm.{c.ta}.{c.tb} %alpha, %A, %B, {beta}, %C : {c.t}, {a}, {b}, {c.t}, {cc}
}}
"""


CASES = [
    Case(t, ta, tb, 13, 7, 5, dynamic=(i % 2 == 1), strided=(i % 3 == 0), wg=wg)
    for i, (t, (ta, tb), wg) in enumerate(
        (t, tr, wg)
        for t in ("f32", "f64", "c32", "c64")
        for tr, wg in zip((("n", "n"), ("n", "t"), ("t", "n"), ("t", "t")),
                          (None, (4, 3), (8, 2), (2, 5)), strict=True))
] + [
    Case("f32", "n", "n", 32, 16, 9, wg=(16, 1)),
    Case("f32", "n", "t", 33, 17, 19, dynamic=True, strided=True, wg=(8, 4)),
    Case("f64", "t", "n", 16, 16, 8),
    Case("f32", "n", "n", 13, 7, 5, beta="zero", wg=(4, 2)),
    Case("f64", "t", "t", 13, 7, 5, dynamic=True, beta="zero"),
    Case("c32", "n", "t", 9, 6, 4, beta="one", wg=(2, 2)),
    Case("f32", "n", "n", 1, 1, 1),
    Case("f32", "t", "n", 5, 3, 40, dynamic=True, wg=(1, 4)),
]


@pytest.fixture(scope="module")
def module() -> object:
    return backend_opencl.compile("\n".join(source(c) for c in CASES))


def _operand(h, rng, shape, c: Case):
    if c.strided:
        view, base = h.strided_view(rng, shape, c.t)
        return view, base
    return h.rand(rng, shape, c.t), None


def _run(module, h, rng, c: Case, alpha, beta) -> None:
    a_shape, b_shape, c_shape = _shapes(c)
    A, _ = _operand(h, rng, a_shape, c)
    B, _ = _operand(h, rng, b_shape, c)
    C, base = _operand(h, rng, c_shape, c)
    beta_used = {"arg": beta, "zero": 0, "one": 1}[c.beta]
    if beta_used == 0:
        C[...] = np.nan
    before = None if base is None else base.copy()
    C0 = C.copy()
    getattr(module, c.name)(alpha, A, B, beta, C)
    opa = A if c.ta == "n" else A.T
    opb = B if c.tb == "n" else B.T
    want = alpha * (opa.astype(np.complex128) @ opb.astype(np.complex128))
    if beta_used != 0:
        want = want + beta_used * C0
    if not c.t.startswith("c"):
        want = want.real
    h.close(C, want, c.t)
    if base is not None:  # nothing outside the subview changed
        mask = np.ones(base.shape, bool)
        mask[1:1 + c.m, 1:1 + c.n] = False
        np.testing.assert_array_equal(base[mask], before[mask])


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_gemm(module, h, rng, case: Case) -> None:
    _run(module, h, rng, case, h.scalar(rng, case.t), h.scalar(rng, case.t))


@pytest.mark.parametrize("case", CASES[:4] + CASES[8:12], ids=lambda c: c.name)
def test_gemm_beta_zero_does_not_read_c(module, h, rng, case: Case) -> None:
    _run(module, h, rng, case, h.scalar(rng, case.t), h.DTYPES[case.t](0))


@pytest.mark.parametrize("case", CASES[:2], ids=lambda c: c.name)
def test_gemm_alpha_zero_beta_one(module, h, rng, case: Case) -> None:
    _run(module, h, rng, case, h.DTYPES[case.t](0), h.DTYPES[case.t](1))
