"""A CPU gemm with a long K walks it in chunks, A read in place (the staged variant's
panels and chunks without the copy): the chunk depth, the helper's loops, and numbers
against numpy for K that the chunk divides and does not, dynamic K, strided operands,
f32/f64/c32, beta = 0 with C poisoned and several work-items."""

from __future__ import annotations

import re

import pytest

import tensorlang
from backend_opencl.api.compiler import compile_program, lower
from backend_opencl.emit import Target
from backend_opencl.emit.costmodel import panel_depth
from backend_opencl.emit.target import KernelPlan
from tensorlang.ir.types import C32, F32, F64
from tests.backend import test_gemm as GEMM

Case = GEMM.Case
CPU = Target()
CASES = [
    Case("f32", "n", "n", 70, 20, 1100),                     # chunks leave a remainder
    Case("f32", "n", "n", 33, 17, 1024, beta="zero"),        # chunks divide K
    Case("f64", "n", "t", 40, 9, 1030, dynamic=True, strided=True),
    Case("c32", "n", "n", 9, 6, 1100, beta="one"),
    Case("f32", "n", "n", 50, 11, 1100, dynamic=True, wg=(2, 2)),
]


def _source() -> str:
    return "\n".join(GEMM.source(c) for c in CASES)


@pytest.fixture(scope="module")
def module() -> object:
    return compile_program(_source(), target=CPU)


def test_panel_depth() -> None:
    cpu, gpu = KernelPlan((1, 1), 1, False, True), KernelPlan((8, 8), 64, False, False)
    assert panel_depth(cpu, F32, 32, "1024", "512") == 256    # 32 KiB of A a chunk
    assert panel_depth(cpu, F64, 16, "K", "N") == 256
    assert panel_depth(cpu, C32, 8, "4096", "8") == 512
    assert panel_depth(cpu, F32, 32, "256", "512") is None    # one chunk
    assert panel_depth(cpu, F32, 32, "1024", "1") is None     # a gemv
    assert panel_depth(gpu, F32, 32, "1024", "512") is None


def test_every_helper_walks_k_in_chunks_in_place() -> None:
    source = lower(tensorlang.parse(_source()), CPU).source
    helpers = [h for h in source.split("\nvoid ")[1:] if h.startswith("tlc_gemm")]
    assert len(helpers) == len(CASES)
    assert all("for (long k0 = 0;" in h and "local " not in h.replace("get_local_id", "")
               for h in helpers)
    assert re.search(r"const long kb = \d+;", helpers[1])               # K = 1024
    assert re.search(r"const long kb = min\(\(long\)\d+, 1100 - k0\);", helpers[0])


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_k_chunks_against_numpy(module, h, rng, case: Case) -> None:
    GEMM._run(module, h, rng, case, h.scalar(rng, case.t), h.scalar(rng, case.t))
