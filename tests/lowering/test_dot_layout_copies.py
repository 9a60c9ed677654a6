"""The layout copies of a dot_general's operands (bf16 converted to the f32 accumulator,
transposed operands brought to the canonical layout) are made by one kernel when they
take the same number of work-groups, else by one kernel each: kernel counts and numbers
against numpy on poisoned buffers."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from frontend.lower.core.builder import groups_nd
from tests.lowering.conftest import module, rand, run
from tests.lowering.test_fusion import kernels


def _ty(shape: tuple[int, ...], t: str) -> str:
    return "tensor<" + "".join(f"{d}x" for d in shape) + f"{t}>"


def _dot(a: tuple[int, ...], b: tuple[int, ...], out: tuple[int, ...], t: str,
         result: str) -> str:
    body = (f"  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : "
            f"({_ty(a, t)}, {_ty(b, t)}) -> {_ty(out, result)}\n")
    return module(f"(%a: {_ty(a, t)}, %b: {_ty(b, t)}) -> {_ty(out, result)}",
                  body + f"  return %0 : {_ty(out, result)}")


@pytest.mark.parametrize(("a", "b", "result", "shared"), [
    ((96, 80), (80, 96), "f32", True),      # same work-groups: one copy kernel
    ((96, 80), (80, 96), "bf16", True),
    ((37, 300), (300, 5), "f32", False),    # different work-groups: a kernel each
])
def test_bf16_operand_copies(a: tuple[int, int], b: tuple[int, int], result: str,
                             shared: bool) -> None:
    out = (a[0], b[1])
    text = _dot(a, b, out, "bf16", result)
    assert (groups_nd(list(a)) == groups_nd(list(b))) == shared
    names = kernels(text)
    assert sum(name.endswith("layout") for name in names) == (1 if shared else 2)
    x, y = (rand(s).astype(ml_dtypes.bfloat16) for s in (a, b))
    got = run(text, x, y)[0]
    want = x.astype(np.float64) @ y.astype(np.float64)
    tol = 1e-5 if result == "f32" else 2e-2
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=tol, atol=tol * 10)
