"""The reference's sample ``fused_kernel`` on 1,000 work-groups matches numpy (f32, 1e-5);
its two gemms get a barrier between them where a work-group has several work-items, none
on a CPU plan's one work-item."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import backend_opencl
import tensorlang
from backend_opencl.api import compiler
from backend_opencl.emit import Target

SAMPLE = Path(__file__).resolve().parents[2] / "examples" / "fused_kernel.tl"
GROUPS = 1000
GPU = Target(kind="gpu", max_work_group_size=1024, local_mem_size=65536)


def test_fused_kernel_1000_groups(h, rng) -> None:
    mod = backend_opencl.compile(SAMPLE.read_text())
    alpha = np.float32(rng.standard_normal())
    A = [h.rand(rng, (16, 8), "f32") for _ in range(GROUPS)]
    B, C = h.rand(rng, (8, 8), "f32"), h.rand(rng, (8, 16), "f32")
    D = h.rand(rng, (16, 16, GROUPS), "f32")
    a = np.stack(A, axis=2).astype(np.float64)
    want = D + alpha * np.einsum("ikg,kj->ijg", a, B.T.astype(np.float64) @ C)
    mod.fused_kernel(alpha, A, B, C, D, num_groups=GROUPS)
    error = np.max(np.abs(D - want)) / np.max(np.abs(want))
    assert error < 1e-5


def _body(target: Target) -> str:
    source = compiler.lower(tensorlang.parse(SAMPLE.read_text()), target).source
    return source.split("void fused_kernel(")[1]


def test_fused_kernel_has_one_barrier_between_the_gemms() -> None:
    body = _body(GPU)
    assert body.count("barrier(") == 1
    first, second = body.index("tlc_gemm_f32_0("), body.index("tlc_gemm_f32_1(")
    assert first < body.index("barrier(CLK_LOCAL_MEM_FENCE)") < second


def test_fused_kernel_on_one_work_item_has_no_barrier() -> None:
    body = _body(Target(kind="cpu"))
    assert "tlc_gemm_f32_1(" in body and "barrier(" not in body
