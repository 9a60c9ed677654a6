"""gemm register blocks for the vector width of the device: a CPU whose driver prefers 16
float lanes (PoCL on AVX-512) gets 64-byte vectors and 32 registers (``float16`` /
``double8`` blocks, 32 x 8 f32), others keep the AVX2 model (32 bytes, 16 registers);
both are checked against numpy on sizes with edge rows and columns, transposes (staged
and in place), strided operands and beta = 0 with C poisoned."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

import tensorlang
from backend_opencl.api.compiler import compile_program, lower
from backend_opencl.emit import Target
from backend_opencl.emit.costmodel import register_block
from backend_opencl.emit.target import (
    WIDE_VECTORS_LLVM,
    KernelPlan,
    llvm_major,
    target_from_device,
)
from backend_opencl.runtime import get_device
from tensorlang.ir.types import F32, F64
from tests.backend import test_gemm as GEMM

Case = GEMM.Case
AVX2 = Target()
AVX512 = Target(vector_bytes=64, registers=32)

CASES = [
    Case("f32", "n", "n", 70, 19, 33),
    Case("f32", "n", "n", 64, 16, 8, beta="zero"),
    Case("f64", "n", "n", 37, 21, 17),
    Case("f32", "t", "n", 45, 10, 6, dynamic=True),
    Case("f64", "n", "t", 33, 9, 5, strided=True),
    Case("f32", "t", "t", 96, 8, 12, strided=True, beta="zero"),
    Case("f64", "t", "n", 16, 24, 3, dynamic=True, beta="zero"),
    Case("f32", "n", "n", 10, 37, 40),               # fewer rows than one vector: 10 x 4
    Case("f32", "n", "t", 9, 11, 7, beta="zero"),
    Case("f64", "n", "n", 3, 9, 5),
    Case("f32", "n", "n", 56, 9, 9, beta="zero"),    # half-width vectors: 56 x 3
    Case("f64", "n", "t", 24, 10, 6, strided=True),
]


def _source() -> str:
    return "\n".join(GEMM.source(c) for c in CASES)


def _skip_unless_wide_vectors_build() -> None:
    """Skip where the device's LLVM cannot compile 512-bit vector code (PyPI's PoCL 3.0:
    ``emit.target.WIDE_VECTORS_LLVM``)."""
    llvm = llvm_major(get_device().platform_version)
    if llvm is not None and llvm < WIDE_VECTORS_LLVM:
        pytest.skip(f"the device's LLVM {llvm} cannot compile 512-bit vector code")


@pytest.fixture(scope="module", params=["avx2", "avx512"])
def module(request) -> object:
    if request.param == "avx512":
        _skip_unless_wide_vectors_build()
    return compile_program(_source(), target=AVX2 if request.param == "avx2" else AVX512)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_gemm_for_the_register_width(module, h, rng, case: Case) -> None:
    GEMM._run(module, h, rng, case, h.scalar(rng, case.t), h.scalar(rng, case.t))


@pytest.mark.parametrize("stage", [True, False])
def test_wide_target_stages_and_reads_in_place(h, rng, stage: bool) -> None:
    _skip_unless_wide_vectors_build()
    case = Case("f32", "t", "n", 70, 19, 33)
    module = compile_program(GEMM.source(case), target=Target(vector_bytes=64, registers=32,
                                                               stage_transposed=stage))
    GEMM._run(module, h, rng, case, h.scalar(rng, "f32"), h.scalar(rng, "f32"))


def test_wide_target_writes_512_bit_vectors() -> None:
    """A 256 x 32 f32 gemm gets 32 x 8 blocks of two ``float16`` (AVX2: 16 x 4 of two
    ``float8``); f64 gets ``double8``."""
    a, b, c = "memref<{t}x256x64>", "memref<{t}x64x32>", "memref<{t}x256x32>"
    text = f"""
func @g(%A: {a}, %B: {b}, %C: {c}) {{{{
  %one = constant 1.0 : {{t}}
  %zero = constant 0.0 : {{t}}
  gemm.n.n %one, %A, %B, %zero, %C : {{t}}, {a}, {b}, {{t}}, {c}
}}}}
"""
    def source(t: str, target: Target) -> str:
        return lower(tensorlang.parse(text.format(t=t)), target).source

    assert "float16 acc[8][2]" in source("f32", AVX512)
    assert "float8 acc[4][2]" in source("f32", AVX2)
    assert "double8 acc[8][2]" in source("f64", AVX512)


def _plan(target: Target) -> KernelPlan:
    return KernelPlan((1, 1), 1, False, True, vector_bytes=target.vector_bytes,
                      registers=target.registers)


@pytest.mark.parametrize(("m", "n", "avx2", "avx512"), [
    ("256", "32", (16, 4), (32, 8)),
    ("64", "32", (16, 4), (32, 8)),
    ("16", "16", (16, 4), (16, 8)),
    ("56", "9", (56, 1), (56, 3)),
    ("10", "32", (8, 8), (10, 4)),
])
def test_cost_model_blocks_per_register_width(m: str, n: str, avx2: tuple[int, int],
                                              avx512: tuple[int, int]) -> None:
    assert register_block(_plan(AVX2), F32, m, n) == avx2
    assert register_block(_plan(AVX512), F32, m, n) == avx512
    assert register_block(_plan(AVX512), F64, "256", "32") == (16, 8)


@pytest.mark.parametrize(("kind", "lanes", "wide"), [
    ("cpu", 16, True), ("cpu", 8, False), ("cpu", 1, False), ("gpu", 16, False)])
def test_target_from_device_reads_the_preferred_vector_width(kind: str, lanes: int,
                                                             wide: bool) -> None:
    device = SimpleNamespace(kind=kind, preferred_vector_width={"float": lanes})
    target = target_from_device(device)
    assert (target.vector_bytes, target.registers) == ((64, 32) if wide else (32, 16))


@pytest.mark.parametrize(("platform", "wide"), [
    ("OpenCL 3.0 PoCL 3.0-rc2  Linux, Release, RELOC, LLVM 14.0.6, SLEEF, DISTRO", False),
    ("OpenCL 3.0 PoCL 3.1+debian  Linux, None+Asserts, RELOC, SPIR, LLVM 15.0.6, SLEEF", True),
    ("OpenCL 3.0 (Build 0)", True)])
def test_an_old_llvm_keeps_256_bit_vectors(platform: str, wide: bool) -> None:
    """PyPI's PoCL 3.0 (LLVM 14) on an AVX-512 CPU gets the AVX2 model: its LLVM stops on,
    or miscompiles, tlc's 512-bit vector code."""
    device = SimpleNamespace(kind="cpu", preferred_vector_width={"float": 16},
                             platform_version=platform)
    assert target_from_device(device).vector_bytes == (64 if wide else 32)
