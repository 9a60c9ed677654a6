"""gemv, ger, sum, axpby and hadamard_product against numpy over f32/f64/c32/c64,
transposes, static/dynamic shapes, subviews (dynamic strides), beta = 0 with a NaN
output, and work-group sizes that do not divide the sizes."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

import backend_opencl


@dataclass(frozen=True)
class Case:
    op: str          # gemv, ger, sum, axpby, hadamard_product
    t: str
    shapes: tuple[tuple[int, ...], ...]  # operand shapes (inputs..., output)
    trans: str = ""  # "n"/"t" for gemv, sum, axpby
    dynamic: bool = False
    strided: bool = False
    wg: tuple[int, int] | None = None

    @property
    def name(self) -> str:
        dims = "_".join("x".join(map(str, s)) or "s" for s in self.shapes)
        wg = "auto" if self.wg is None else f"{self.wg[0]}x{self.wg[1]}"
        kind = ("dyn" if self.dynamic else "st") + ("_str" if self.strided else "")
        return f"{self.op}{self.trans}_{self.t}_{dims}_{kind}_{wg}"


def _memref(c: Case, shape: tuple[int, ...]) -> str:
    dims = "".join("x" + ("?" if c.dynamic else str(s)) for s in shape)
    layout = ""
    if c.strided and len(shape) >= 1:
        layout = ",strided<" + ",".join(["1"] + ["?"] * (len(shape) - 1)) + ">"
        if len(shape) == 1:
            layout = ",strided<?>"
    return f"memref<{c.t}{dims}{layout}>"


def source(c: Case) -> str:
    """One function applying ``c.op`` once."""
    types = [_memref(c, s) for s in c.shapes]
    names = ["%A", "%B", "%C"][: len(types) - 1] + ["%OUT"]
    params = ", ".join(f"{n}: {t}" for n, t in zip(names, types, strict=True))
    attrs = f" work_group_size({c.wg[0]}, {c.wg[1]})" if c.wg else ""
    mods = f".{c.trans}" if c.trans else ""
    ins = ", ".join(names[:-1])
    intypes = ", ".join(types[:-1])
    return f"""
func @{c.name}(%alpha: {c.t}, {params}, %beta: {c.t}){attrs} {{
  {c.op}{mods} %alpha, {ins}, %beta, %OUT : {c.t}, {intypes}, {c.t}, {types[-1]}
}}
"""


def _op(x: np.ndarray, trans: str) -> np.ndarray:
    return x.T if trans == "t" and x.ndim == 2 else x


def reference(c: Case, alpha, ins: list[np.ndarray], out: np.ndarray, beta) -> np.ndarray:
    ins = [x.astype(np.complex128) for x in ins]
    if c.op == "gemv":
        value = _op(ins[0], c.trans) @ ins[1]
    elif c.op == "ger":
        value = np.outer(ins[0], ins[1])
    elif c.op == "sum":
        value = _op(ins[0], c.trans).sum(axis=-1) if ins[0].ndim == 2 else ins[0].sum()
    elif c.op == "axpby":
        value = _op(ins[0], c.trans)
    else:
        value = ins[0] * ins[1]
    want = alpha * value + (beta * out if beta != 0 else 0)
    return want if c.t.startswith("c") else want.real


def _cases() -> list[Case]:
    cases = []
    wgs = [None, (4, 2), (3, 1), (8, 1)]
    for i, t in enumerate(("f32", "f64", "c32", "c64")):
        wg, dyn, st = wgs[i], i % 2 == 1, i >= 2
        for tr in ("n", "t"):
            a = (11, 6) if tr == "n" else (6, 11)
            cases.append(Case("gemv", t, (a, (6,), (11,)), tr, dyn, st, wg))
            cases.append(Case("sum", t, (a, (11,)), tr, dyn, st, wg))
            cases.append(Case("axpby", t, (a, (11, 6)), tr, dyn, st, wg))
        cases.append(Case("ger", t, ((9,), (5,), (9, 5)), "", dyn, st, wg))
        cases.append(Case("sum", t, ((23,), ()), "n", dyn, False, wg))
        cases.append(Case("axpby", t, ((17,), (17,)), "n", dyn, st, wg))
        cases.append(Case("hadamard_product", t, ((17,), (17,), (17,)), "", dyn, st, wg))
    return cases


CASES = _cases()


@pytest.fixture(scope="module")
def module() -> object:
    return backend_opencl.compile("\n".join(source(c) for c in CASES))


def _array(h, rng, shape, c: Case):
    if c.strided and shape:
        return h.strided_view(rng, shape, c.t)[0]
    if not shape:
        return np.asarray(h.rand(rng, (1,), c.t)[0])
    return h.rand(rng, shape, c.t)


def run_case(module, h, rng, case: Case, beta_zero: bool = False) -> np.ndarray:
    """Run ``case``'s kernel of ``module`` on random operands and check it against numpy
    (beta zero: the output is poisoned with NaN first); returns the output."""
    ins = [_array(h, rng, s, case) for s in case.shapes[:-1]]
    out = _array(h, rng, case.shapes[-1], case)
    alpha = h.scalar(rng, case.t)
    beta = h.DTYPES[case.t](0) if beta_zero else h.scalar(rng, case.t)
    if beta_zero:
        out[...] = np.nan
    want = reference(case, alpha, ins, out.copy(), beta)
    getattr(module, case.name)(alpha, *ins, out, beta)
    h.close(out, want, case.t)
    return out


@pytest.mark.parametrize("beta_zero", [False, True], ids=["beta", "beta0"])
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_blas(module, h, rng, case: Case, beta_zero: bool) -> None:
    run_case(module, h, rng, case, beta_zero)
