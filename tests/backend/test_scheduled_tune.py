"""Autotuning: candidates timed on the device, the winner cached per device and kernel and
applied by later compiles; the cost model picks exact-fitting register blocks."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

import backend_opencl
from backend_opencl.emit.costmodel import register_block
from backend_opencl.emit.target import KernelPlan
from backend_opencl.tools.tune import cache_path, tune
from tensorlang.ir.types import F32, F64
from tests.kernels import TINY_GEMM


def test_tune_caches_and_compile_applies(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         h, rng) -> None:
    monkeypatch.setenv("TLC_TUNE_CACHE", str(tmp_path / "tune.json"))
    lines: list[str] = []
    winners = tune(TINY_GEMM, groups=4, top=2, repeat=1, progress=lines.append)
    rm, rn = winners["tiny"]
    assert any("[2/2]" in line for line in lines) and "best register block" in lines[-1]
    assert list(json.loads(cache_path().read_text()).values()) == [[rm, rn]]
    module = backend_opencl.compile(TINY_GEMM)
    found = re.search(r"float(\d*) acc\[(\d+)\]\[(\d+)\]", module.source)
    assert found is not None  # scalar rows, or vectors of ``width`` rows
    width = int(found[1] or 1)
    assert (int(found[2]), int(found[3]) * width) == (rn, rm)
    A, B, C = (h.rand(rng, s, "f32") for s in ((12, 3, 4), (3, 5, 4), (12, 5, 4)))
    want = np.einsum("ikb,kjb->ijb", A, B) + C
    module.tiny(A, B, C, num_groups=4)
    h.close(C, want, "f32")


@pytest.mark.parametrize("t, m, n, block", [
    (F32, "56", "9", (56, 1)),   # seven vectors of rows fill the registers, no edges
    (F32, "32", "32", (16, 4)),  # eight accumulators hide the FMA latency
    (F64, "64", "64", (8, 4)),
])
def test_cost_model(t, m: str, n: str, block: tuple[int, int]) -> None:
    assert register_block(KernelPlan((1, 1), 1, False, True), t, m, n) == block


FIXED_GROUPS = """
func @fixed(%A: memref<f32x8x6>, %B: memref<f32x6x5>, %C: memref<f32x8x5x2>) {
  %g = group_id
  %c = subview %C[:, :, %g] : memref<f32x8x5x2>
  %one = constant 1.0 : f32
  %zero = constant 0.0 : f32
  gemm.n.n %one, %A, %B, %zero, %c
    : f32, memref<f32x8x6>, memref<f32x6x5>, f32, memref<f32x8x5>
}
"""


def test_tune_launches_only_what_the_launch_checks_accept(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Timed launches skip the launch checks, so tune first makes one checked call: 2000
    work-groups would write past %C's two slices, one work-group does not."""
    from backend_opencl.tools import tune as tuning

    monkeypatch.setenv("TLC_TUNE_CACHE", str(tmp_path / "tune.json"))
    timed: list[int] = []
    time_launches = tuning._time

    def spy(module, name, args, groups, repeat):  # noqa: ANN001, ANN202
        timed.append(groups)
        return time_launches(module, name, args, groups, repeat)

    monkeypatch.setattr(tuning, "_time", spy)
    winners = tune(FIXED_GROUPS, groups=2000, top=2, repeat=1, progress=lambda _: None)
    assert "fixed" in winners and timed and set(timed) == {1}
