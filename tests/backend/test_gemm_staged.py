"""gemm / gemv with the transposed operand staged through local memory, forced on, against
numpy: both transposes, sizes that divide neither the tiles nor the K chunks (static K in
several chunks, dynamic K), strided operands, f32/f64/c32/c64, beta = 0 with C poisoned,
on the CPU plan (one work-item) and on the GPU plan (interleaved rows, work-groups of
several work-items with barriers between the copies and the reads); on the CPU plan a
transposed A is staged by register-transposed 8 x 8 blocks."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import backend_opencl
import tensorlang
from backend_opencl.api.compiler import compile_program, lower
from backend_opencl.emit import Target
from backend_opencl.emit.costmodel import (
    STAGE_A_BYTES,
    STAGE_A_COLUMNS,
    stage_depth,
    staged_operand,
)
from backend_opencl.emit.target import KernelPlan
from backend_opencl.tools.tune import cache_path, tune
from tensorlang.ir.types import F32, F64
from tests.backend import test_blas as BLAS
from tests.backend import test_gemm as GEMM

Case = GEMM.Case
STAGED_CPU = Target(stage_transposed=True)
STAGED_GPU = Target(kind="gpu", max_work_group_size=1024, local_mem_size=65536,
                    stage_transposed=True)

CASES = [
    Case("f32", "t", "n", 13, 7, 5),
    Case("f64", "t", "n", 19, 5, 300),                 # static K in several chunks
    Case("f32", "t", "n", 37, 6, 530, dynamic=True),   # dynamic K, several chunks
    Case("f32", "n", "t", 33, 17, 19, dynamic=True, strided=True, wg=(8, 4)),
    Case("f64", "t", "t", 7, 9, 11, dynamic=True, strided=True, wg=(2, 3)),
    Case("c32", "t", "n", 10, 5, 4, dynamic=True, wg=(4, 2)),
    Case("c64", "n", "t", 9, 6, 4, strided=True),
    Case("f32", "t", "n", 56, 9, 9, beta="zero"),
    Case("f64", "n", "t", 17, 13, 200, dynamic=True, beta="zero", wg=(4, 1)),
    Case("f32", "t", "n", 1, 1, 1),
    Case("f32", "t", "n", 40, 3, 17, strided=True, wg=(16, 1)),
]
GEMV = [c for c in BLAS.CASES if c.op == "gemv" and c.trans == "t"]


def _source() -> str:
    return "\n".join(GEMM.source(c) for c in CASES) + "\n".join(BLAS.source(c) for c in GEMV)


@pytest.fixture(scope="module", params=["cpu", "gpu"])
def module(request) -> object:
    target = STAGED_CPU if request.param == "cpu" else STAGED_GPU
    return compile_program(_source(), target=target)


@pytest.mark.parametrize("target", [STAGED_CPU, STAGED_GPU], ids=["cpu", "gpu"])
def test_every_kernel_is_staged(target: Target) -> None:
    """Each helper reads its transposed operand from a local panel (so the tests below
    exercise the staged code, not the plain one)."""
    source = lower(tensorlang.parse(_source()), target).source
    helpers = [h for h in source.split("\nvoid ")[1:] if h.startswith(("tlc_gemm", "tlc_gemv"))]
    copies = re.compile(r"\bL\[[^\]]*\] = [AB]\[")
    assert helpers and all(copies.search(h) and ("= L[" in h or "(0, L + " in h)
                           for h in helpers)
    if target is STAGED_GPU:
        assert all("barrier(CLK_LOCAL_MEM_FENCE)" in h for h in helpers)


def test_cpu_stages_a_transposed_a_by_register_blocks() -> None:
    """On the CPU plan a transposed A (K contiguous) is staged by 8 x 8 blocks (4 x 4
    where a register holds four elements) transposed in registers (vector loads along
    K, vector stores along the panel), its remainders element by element; the cases
    above cover rows and K chunks that are not multiples of 8 (13 rows, K of 5 and 17,
    a 530-deep dynamic K)."""
    source = lower(tensorlang.parse(_source()), STAGED_CPU).source
    helpers = [h for h in source.split("\nvoid ")[1:] if h.startswith("tlc_gemm")]
    blocked = [h for h in helpers if "const long s_rows" in h]
    assert any(h.startswith("tlc_gemm_f32") for h in blocked)
    assert any(h.startswith("tlc_gemm_f64") for h in blocked)
    for h in blocked:  # 8 x 8 blocks, or 4 x 4 where a register holds 4 elements
        b = int(re.findall(r"vload(\d+)\(0, A \+ ", h)[0])
        assert b in (4, 8) and f"s_r{b - 1} = vload{b}(0, A + " in h
        assert re.search(rf"vstore{b}\(\((float|double){b}\)\(s_r0\.s0, ", h)
        assert re.search(r"\bL\[[^\]]*\] = A\[", h)  # the remainders
    gpu = lower(tensorlang.parse(_source()), STAGED_GPU).source
    assert "s_rows" not in gpu  # work-groups of several items copy element by element


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_staged_gemm(module, h, rng, case: Case) -> None:
    GEMM._run(module, h, rng, case, h.scalar(rng, case.t), h.scalar(rng, case.t))


@pytest.mark.parametrize("case", [c for c in CASES if c.beta == "arg"][:6], ids=lambda c: c.name)
def test_staged_gemm_beta_zero_does_not_read_c(module, h, rng, case: Case) -> None:
    GEMM._run(module, h, rng, case, h.scalar(rng, case.t), h.DTYPES[case.t](0))


@pytest.mark.parametrize("case", GEMV, ids=lambda c: c.name)
def test_staged_gemv(module, h, rng, case) -> None:
    BLAS.run_case(module, h, rng, case, beta_zero=True)


TRANSPOSED_KERNEL = """
func @tn(%A: memref<f32x3x12x?>, %B: memref<f32x3x5x?>, %C: memref<f32x12x5x?>) {
  %g = group_id
  %one = constant 1.0 : f32
  %a = subview %A[:, :, %g] : memref<f32x3x12x?>
  %b = subview %B[:, :, %g] : memref<f32x3x5x?>
  %c = subview %C[:, :, %g] : memref<f32x12x5x?>
  gemm.t.n %one, %a, %b, %one, %c : f32, memref<f32x3x12>, memref<f32x3x5>, f32, memref<f32x12x5>
}
"""


def test_tune_tries_staging_and_compile_applies_it(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch,
                                                   h, rng) -> None:
    monkeypatch.setenv("TLC_TUNE_CACHE", str(tmp_path / "tune.json"))
    lines: list[str] = []
    winners = tune(TRANSPOSED_KERNEL, groups=4, top=1, repeat=1, progress=lines.append)
    rm, rn, staged = winners["tn"]
    assert any("staged" in line for line in lines) and any("in place" in line for line in lines)
    assert list(json.loads(cache_path().read_text()).values()) == [[rm, rn, staged]]
    module = backend_opencl.compile(TRANSPOSED_KERNEL)
    assert ("local float* L)" in module.source) == bool(staged)
    A, B, C = (h.rand(rng, s, "f32") for s in ((3, 12, 4), (3, 5, 4), (12, 5, 4)))
    want = np.einsum("kib,kjb->ijb", A, B) + C
    module.tn(A, B, C, num_groups=4)
    h.close(C, want, "f32")


def test_cost_model_stages_a_transposed_a_on_cpus_and_any_on_gpus() -> None:
    cpu, gpu = KernelPlan((1, 1), 1, False, True), KernelPlan((32, 4), 32, False, False)
    assert staged_operand(cpu, F32, "a") == "a" and staged_operand(cpu, F32, "ab") == "a"
    assert staged_operand(cpu, F32, "b") is None and staged_operand(cpu, F32, "") is None
    assert staged_operand(cpu, F32, "a", "1") is None  # a gemv reads its panel once
    assert staged_operand(gpu, F32, "b") == "b"
    assert staged_operand(replace(gpu, stage=False), F32, "a") is None
    assert staged_operand(replace(cpu, stage=True), F32, "b") == "b"



def test_cpus_stage_an_untransposed_a_for_tiles_of_many_columns() -> None:
    cpu = KernelPlan((1, 1), 1, False, True)
    big, wide = STAGE_A_BYTES + 4, str(STAGE_A_COLUMNS)
    assert staged_operand(cpu, F32, "", wide, big) == "a"
    assert staged_operand(cpu, F32, "", "256", big) == "a"
    assert staged_operand(cpu, F32, "", wide, STAGE_A_BYTES) is None
    assert staged_operand(cpu, F32, "", "32", big) is None  # 4 column blocks reuse a chunk
    assert staged_operand(cpu, F32, "", "N", big) is None  # columns unknown
    assert staged_operand(cpu, F32, "", "1", big) is None  # a gemv
    assert staged_operand(replace(cpu, stage=False), F32, "", wide, big) is None


LARGE_A = """
func @large_a(%A: memref<f32x4100x520>, %B: memref<f32x520x70>, %C: memref<f32x4100x70>) {
  %one = constant 1.0 : f32
  %zero = constant 0.0 : f32
  gemm.n.n %one, %A, %B, %zero, %C
    : f32, memref<f32x4100x520>, memref<f32x520x70>, f32, memref<f32x4100x70>
}
"""


def test_a_large_untransposed_a_staged_against_numpy(h, rng) -> None:
    """A gemm whose A is 8.5 MB (one work-group: ``compile_stablehlo`` would give each
    work-group a strip of it): staged in K chunks (520 = 4 x 128 + 8), rows and columns
    that fill no tile (4100, 70), the copy running down the panel's rows; C poisoned."""
    module = compile_program(LARGE_A, target=Target())
    assert "local float* L)" in module.source
    A, B = h.rand(rng, (4100, 520), "f32"), h.rand(rng, (520, 70), "f32")
    C = h.rand(rng, (4100, 70), "f32")
    C[...] = np.nan
    module.large_a(A, B, C)
    h.close(C, A.astype(np.float64) @ B, "f32")


ROW_STRIDED = """
func @rows2_{t}(%alpha: {t}, %A: memref<{t}x9x16>, %B: memref<{t}x9x5>, %beta: {t},
                %C: memref<{t}x16x5,strided<2,40>>) {{
  gemm.t.n %alpha, %A, %B, %beta, %C
    : {t}, memref<{t}x9x16>, memref<{t}x9x5>, {t}, memref<{t}x16x5,strided<2,40>>
}}
"""


@pytest.mark.parametrize("stage", [False, True], ids=["in_place", "staged"])
@pytest.mark.parametrize("t", ["f32", "f64"])
def test_vector_blocks_with_strided_rows(h, rng, t: str, stage: bool) -> None:
    """Full blocks in explicit vectors whose A rows are gathered (in place) or loaded from
    the panel (staged), and whose C rows have stride 2 (updated element by element)."""
    module = compile_program(ROW_STRIDED.format(t=t), target=Target(stage_transposed=stage))
    assert {"f32": "float8 acc", "f64": "double4 acc"}[t] in module.source
    A, B = h.rand(rng, (9, 16), t), h.rand(rng, (9, 5), t)
    base = h.rand(rng, (40, 5), t)
    before, C = base.copy(), base[:32:2]
    alpha, beta = h.scalar(rng, t), h.scalar(rng, t)
    want = alpha * (A.T @ B) + beta * C
    getattr(module, f"rows2_{t}")(alpha, A, B, beta, C)
    h.close(C, want, t)
    np.testing.assert_array_equal(base[1::2], before[1::2])


def test_stage_depth_takes_all_of_a_fitting_static_k_else_a_power_of_two() -> None:
    assert stage_depth(F32, 16, "64") == 64          # 4 KiB: one chunk
    assert stage_depth(F64, 16, "300") == 128        # 16 KiB / (8 B x 16 rows)
    assert stage_depth(F32, 32, "K") == 128
    assert stage_depth(F32, 4096, "K") == 1          # never less than one row of K
