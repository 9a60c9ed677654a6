"""What code generation needs to know about a device, and the per-kernel launch plan."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TypedDict

from tensorlang.diagnostics import CompileError
from tensorlang.ir.core import Function

EMULATED_SUBGROUP_SIZES = (1, 2, 4, 8, 16, 32, 64)
"""Subgroup sizes offered on devices without subgroups (emulated from local ids)."""


@dataclass(frozen=True)
class Target:
    """Device facts used by code generation (see :func:`target_from_device`)."""

    kind: str = "cpu"  # "cpu" or "gpu"
    max_work_group_size: int = 4096
    local_mem_size: int = 1 << 20
    subgroup_sizes: tuple[int, ...] = ()
    intel_subgroups: bool = False
    has_fp64: bool = True
    has_int64_atomics: bool = True
    has_svm: bool = True
    vector_bytes: int = 32
    """Bytes of one SIMD register a work-item's register block is vectorised with."""
    registers: int = 16
    """Vector registers per core (the register-block budget)."""
    register_blocks: tuple[tuple[str, int, int], ...] = ()
    """Tuned register blocks: (kernel name, RM, RN), overriding the cost model."""
    stage_transposed: bool | None = None
    """Stage transposed gemm/gemv operands through local memory: True / False for every
    kernel (tests), None: a tuned choice (``staged_kernels``) or the cost model's."""
    staged_kernels: tuple[tuple[str, bool], ...] = ()
    restrict_kernels: frozenset[str] = frozenset()
    """Kernels whose buffer arguments are declared ``restrict``: no two of them share
    memory that one writes (:func:`tensorlang.plan.distinct_argument_kernels` finds them in
    a StableHLO program's plan; a user's kernel may be passed one array twice).  Without
    it LLVM must assume every store may change what the other pointers read, and its
    vectoriser gives up on loops over more buffers than its run-time alias checks cover."""
    """Tuned staging choices: (kernel name, staged)."""
    narrow_index: bool | None = None
    """Hold ``index`` values proven to fit 32 bits in ``int`` (``emit/ranges.py``): True /
    False for every kernel, None: on GPUs (64-bit integer arithmetic is emulated there);
    on PoCL CPUs it measured no faster (im2col 1.5x slower), so CPUs keep ``long``."""
    simd_across_work_items: bool = False
    """The driver's compiler vectorises across work-items, not inside one (Intel's OpenCL
    CPU runtime: 16 work-items of dimension 0 share a SIMD register): kernels without
    collectives get ``SIMD_WORK_ITEMS``-item groups, consecutive points on consecutive
    work-items, as on GPUs (:func:`across_work_items`; docs/devices.md)."""

    @property
    def narrows_index(self) -> bool:
        """Whether kernels for this target use 32-bit index arithmetic where it fits."""
        return self.kind == "gpu" if self.narrow_index is None else self.narrow_index

    @property
    def native_subgroups(self) -> bool:
        """True when subgroup builtins exist and a size can be required (cl_intel_subgroups)."""
        return self.intel_subgroups and bool(self.subgroup_sizes)

    @property
    def offered_subgroup_sizes(self) -> tuple[int, ...]:
        """Native sizes, or the emulated ones when the device has none."""
        return self.subgroup_sizes if self.native_subgroups else EMULATED_SUBGROUP_SIZES


DEFAULT_TARGET = Target()


def target_from_device(device: object) -> Target:
    """A :class:`Target` from a ``backend_opencl.runtime.Device``."""
    extensions = set(getattr(device, "extensions", ()) or ())
    kind = "gpu" if "gpu" in str(getattr(device, "kind", "cpu")).lower() else "cpu"
    return Target(
        kind=kind,
        max_work_group_size=int(getattr(device, "max_work_group_size", 256)),
        local_mem_size=int(getattr(device, "local_mem_size", 32768)),
        subgroup_sizes=tuple(getattr(device, "subgroup_sizes", ()) or ()),
        intel_subgroups="cl_intel_subgroups" in extensions,
        has_fp64=bool(getattr(device, "has_fp64", True)),
        has_int64_atomics="cl_khr_int64_base_atomics" in extensions,
        has_svm=bool(getattr(device, "has_svm", True)),
        simd_across_work_items=kind == "cpu" and str(
            getattr(device, "platform_name", "")).lower().startswith("intel(r) opencl"),
        **_vector_registers(kind, getattr(device, "preferred_vector_width", None) or {},
                            llvm_major(str(getattr(device, "platform_version", "")))),
    )


WIDE_VECTORS_LLVM = 15
"""The oldest LLVM behind a PoCL that compiles tlc's 512-bit vector code: PyPI's PoCL 3.0
(LLVM 14) on an AVX-512 CPU (AMD Zen 4) stops with "Do not know how to scalarize this
operator's operand!" or crashes in the kernels; with 256-bit vectors it runs them right."""


def llvm_major(platform_version: str) -> int | None:
    """The major version of the LLVM a PoCL platform names (``... LLVM 14.0.6, ...``)."""
    found = re.search(r"\bLLVM (\d+)\.", platform_version)
    return int(found.group(1)) if found else None


class _Registers(TypedDict, total=False):
    """The fields of :class:`Target` that :func:`_vector_registers` overrides."""

    vector_bytes: int
    registers: int


def _vector_registers(kind: str, preferred: dict[str, int],
                      llvm: int | None = None) -> _Registers:
    """``vector_bytes`` and ``registers`` of a CPU: 64 bytes and 32 registers where the
    driver prefers 16 float lanes (PoCL on AVX-512) and its LLVM handles them (see
    :data:`WIDE_VECTORS_LLVM`), else the defaults (AVX2: 32 x 16)."""
    wide = int(preferred.get("float", 0)) >= 16 and (llvm is None or llvm >= WIDE_VECTORS_LLVM)
    if kind == "cpu" and wide:
        return {"vector_bytes": 64, "registers": 32}
    return {}


@dataclass(frozen=True)
class KernelPlan:
    """How one kernel runs: work-group size, subgroup size and the collectives' tiling style.

    ``blocked``: each work-item owns a contiguous block of rows (CPU: vectorisable inside a
    work-item); otherwise rows are interleaved across work-items (GPU: coalesced).
    """

    work_group_size: tuple[int, int]
    subgroup_size: int
    native_subgroups: bool
    blocked: bool
    vector_bytes: int = 32
    registers: int = 16
    register_block: tuple[int, int] | None = None
    """A tuned RM x RN for the kernel's contractions (None: the cost model decides)."""
    stage: bool | None = None
    """Stage transposed operands through local memory (None: the cost model decides)."""

    @property
    def num_work_items(self) -> int:
        """Work-items per work-group."""
        return self.work_group_size[0] * self.work_group_size[1]


def choose_plan(func: Function, target: Target) -> KernelPlan:
    """The plan for ``func`` on ``target``, following the reference's work-group rules."""
    offered = target.offered_subgroup_sizes
    sg = func.subgroup_size
    if sg is not None and sg not in offered:
        raise CompileError.at(func.loc, f"subgroup_size({sg}) is not supported by the device "
                              f"(supported: {', '.join(map(str, offered))})")
    simd = across_work_items(func, target)
    wg = func.work_group_size or ((SIMD_WORK_ITEMS, 1) if simd else _default_wg(target, sg))
    if wg[0] < 1 or wg[1] < 1 or wg[0] * wg[1] > target.max_work_group_size:
        raise CompileError.at(func.loc, f"work_group_size({wg[0]}, {wg[1]}) exceeds the "
                              f"device's maximum of {target.max_work_group_size} work-items")
    native = target.native_subgroups
    if sg is None:
        sg, native = _implicit_subgroup_size(target, wg)
    elif wg[0] % sg:
        raise CompileError.at(func.loc, f"work_group_size({wg[0]}, {wg[1]}): the first mode "
                              f"must be a multiple of subgroup_size({sg})")
    tuned = next(((rm, rn) for name, rm, rn in target.register_blocks if name == func.name),
                 None)
    stage = target.stage_transposed
    if stage is None:
        stage = next((s for name, s in target.staged_kernels if name == func.name), None)
    return KernelPlan(wg, sg, native, blocked=target.kind == "cpu" and not simd,
                      vector_bytes=target.vector_bytes, registers=target.registers,
                      register_block=tuned, stage=stage)


def single_item_groups(target: Target) -> bool:
    """Whether ``target`` runs a function that chooses neither its work-group size nor its
    subgroup size with one work-item per group (:func:`choose_plan`: a CPU plan, where the
    compiler does not vectorise across work-items)."""
    return target.kind == "cpu" and not target.simd_across_work_items


SIMD_WORK_ITEMS = 16
"""Work-items per group where the compiler vectorises across them (Intel's CPU runtime,
AVX-512): elementwise_chain's kernel 2.7 ms (1 work-item) -> 0.4-0.5 (16), 0.6 (32),
2.7 (64); the kernels get a native 16-lane subgroup."""


def across_work_items(func: Function, target: Target) -> bool:
    """Whether ``func`` gets the plan of a compiler that vectorises across work-items:
    on such a target, a kernel without collectives.  Kernels with a gemm/BLAS collective
    keep the CPU plan: Intel's compiler (2026.2) miscompiled a later kernel of the same
    program (a softmax's row loop left 30,720 of 32,768 outputs unwritten) after a gemm
    helper interleaved across 16 work-items; built alone, or first, both were right."""
    return target.simd_across_work_items and not any(i.op.blas for i in func.walk())


def _implicit_subgroup_size(target: Target, wg: tuple[int, int]) -> tuple[int, bool]:
    """The largest subgroup size dividing ``wg[0]`` and whether it is native.

    A device's own sizes come first; when none divides the first mode (a CPU's default
    (1, 1) work-group on Intel's runtime, whose sizes are 4-64), the subgroup queries are
    emulated from the local id (size 1 always fits), which is correct on any device.
    """
    native = [s for s in target.subgroup_sizes if wg[0] % s == 0]
    if target.native_subgroups and native:
        return max(native), True
    return max(s for s in EMULATED_SUBGROUP_SIZES if wg[0] % s == 0), False


def _default_wg(target: Target, sg: int | None) -> tuple[int, int]:
    if target.kind == "cpu":
        return (sg or 1, 1)
    sizes = target.offered_subgroup_sizes
    first = sg or (32 if 32 in sizes else max(s for s in sizes if s <= 64))
    rows = max(1, min(4, target.max_work_group_size // first))
    return (first, rows)
