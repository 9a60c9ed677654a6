"""Register-block sizes of a contraction from a cost model of the device.

A work-item holding an ``RM x RN`` block of C keeps ``RM / w * RN`` vector accumulators
(``w``: the register's lanes, halved until they divide RM, as ``emit/tiling.py`` writes
them); with the ``RM / w`` vectors of A and one broadcast of B they must fit
in the register budget.  Per k step a block costs the larger of its FMA issue time (two
vector FMAs per cycle), the FMA latency its independent chains cannot hide (4 cycles) and
its loads; edge blocks (rows or columns past the last full block) run scalar loops.
The cheapest candidate over the whole ``M x N`` output wins; ties go to the smaller
block (shorter build times).  Interleaved (GPU) plans use 4 x 4 blocks.  Targets with 32
registers (AVX-512) add a cycle of loop overhead per k step (:func:`step_overhead`) and
also try blocks of half-width vectors and, below one vector of rows, exactly those rows.
``tlc tune`` measures instead of modelling.

Staging (:func:`staged_operand`, :func:`stage_depth`): which transposed operand goes
through local memory, and how deep in K a staged panel chunk is; :func:`panel_depth`:
the K chunks of a long contraction read in place.
"""

from __future__ import annotations

from backend_opencl.emit.target import KernelPlan
from backend_opencl.emit.view import is_literal
from tensorlang.ir.types import ScalarType

FMA_PER_CYCLE = 2
FMA_LATENCY = 4
LOADS_PER_CYCLE = 2
DYNAMIC_EXTENT = 64
"""The size assumed for a dynamic mode."""
WIDE_REGISTERS = 32
WIDE_STEP_CYCLES = 1
"""Cycles of a k step beside its FMAs and loads (the loop's count and pointer updates),
modelled on targets with :data:`WIDE_REGISTERS` vector registers (AVX-512): there it
makes the larger of equally busy blocks win (32 x 8 f32, measured 1.3-1.5x faster than
32 x 4 and 1.1-1.2x faster than 64 x 4 or 16 x 16 on the Zen 5 VM).  The 16-register
(AVX2) model was tuned without it and keeps its choices."""


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def pow2_at_least(n: int) -> int:
    p = 1
    while p < n:
        p *= 2
    return p


def lanes(plan: KernelPlan, elem: ScalarType) -> int:
    """Elements of ``elem`` per vector register (1 for interleaved GPU plans)."""
    size = max(1, elem.bits // 8) * (2 if elem.is_complex else 1)
    return max(1, plan.vector_bytes // size) if plan.blocked else 1


def vectors(plan: KernelPlan, elem: ScalarType, rm: int) -> int:
    """Vector registers of ``rm`` rows: the register's lanes, halved until they divide
    ``rm`` (as the explicit vectors of ``emit/tiling.py``)."""
    v = lanes(plan, elem)
    while v > 1 and rm % v:
        v //= 2
    return _ceil_div(rm, v)


def candidates(plan: KernelPlan, elem: ScalarType, m: str, n: str) -> list[tuple[int, int]]:
    """Every register block that fits the register budget."""
    if not plan.blocked:
        return [(rm, rn) for rm in (1, 2, 4) for rn in (1, 2, 4)]
    v = lanes(plan, elem)
    m_max = _ceil_div(int(m), plan.work_group_size[0]) if is_literal(m) else None
    n_max = _ceil_div(int(n), plan.work_group_size[1]) if is_literal(n) else None
    rms = {v * i for i in range(1, 9)} | ({pow2_at_least(m_max)} if m_max else set())
    if plan.registers >= WIDE_REGISTERS:  # blocks of half-width vectors too (56 x 3 f32)
        rms |= {v // 2 * i for i in range(1, 17)} if v >= 4 else set()
        if m_max and m_max < v:
            rms.add(m_max)  # all the rows in one block of narrower vectors (10 x 4 f32)
    out = []
    for rm in sorted(rms):
        if m_max is not None and rm > max(v, _ceil_div(m_max, v) * v):
            continue
        for rn in range(1, 9):
            if n_max is not None and rn > n_max:
                continue
            vr = vectors(plan, elem, rm)
            if vr * rn + vr + 1 <= plan.registers:
                out.append((rm, rn))
    return out or [(1, 1)]


def cost(plan: KernelPlan, elem: ScalarType, m: str, n: str, block: tuple[int, int]) -> float:
    """Modelled cycles per k step for the whole ``m x n`` output of one work-group."""
    rm, rn = block
    wgx, wgy = plan.work_group_size
    em = int(m) if is_literal(m) else DYNAMIC_EXTENT
    en = int(n) if is_literal(n) else DYNAMIC_EXTENT
    per_item_m, per_item_n = _ceil_div(em, wgx), _ceil_div(en, wgy)
    full_m, full_n = per_item_m // rm, per_item_n // rn
    vr = vectors(plan, elem, rm)
    full = max(vr * rn / FMA_PER_CYCLE, FMA_LATENCY, (vr + rn) / LOADS_PER_CYCLE) + \
        step_overhead(plan)
    edge_rows, edge_cols = per_item_m - full_m * rm, per_item_n - full_n * rn
    edge_blocks = (full_n if edge_rows else 0) + (full_m if edge_cols else 0) + \
        (1 if edge_rows and edge_cols else 0)
    edge = edge_rows * per_item_n + edge_cols * (per_item_m - edge_rows)
    return full_m * full_n * full + edge + FMA_LATENCY * edge_blocks


def step_overhead(plan: KernelPlan) -> float:
    """Cycles of a k step beside its FMAs and loads (:data:`WIDE_STEP_CYCLES`)."""
    return WIDE_STEP_CYCLES if plan.registers >= WIDE_REGISTERS else 0


def register_block(plan: KernelPlan, elem: ScalarType, m: str, n: str) -> tuple[int, int]:
    """RM x RN: the tuned block of the kernel, else the cheapest modelled candidate."""
    if plan.register_block is not None:
        return plan.register_block
    if not plan.blocked:  # GPUs: 4 x 4 per work-item (registers are plentiful there)
        wgx, wgy = plan.work_group_size
        rm = min(4, pow2_at_least(_ceil_div(int(m), wgx))) if is_literal(m) else 4
        rn = min(4, _ceil_div(int(n), wgy)) if is_literal(n) else 4
        return max(rm, 1), max(rn, 1)
    options = candidates(plan, elem, m, n)
    return min(options, key=lambda b: (cost(plan, elem, m, n, b), b[0] * b[1], b))


STAGE_BYTES = 16 * 1024
"""Local memory one staged panel chunk may take (fits a CPU core's L1 and any GPU's
local memory next to the kernel's own allocas)."""
MAX_STAGE_DEPTH = 256
STAGE_A_BYTES = 16 * 1024
STAGE_A_COLUMNS = 64
"""On CPUs an A that is not transposed is staged too when it is larger than
:data:`STAGE_A_BYTES` and the work-group's tile has at least :data:`STAGE_A_COLUMNS`
columns (each staged chunk then serves 8 or more column blocks).  In place, a register
block's panel rows lie a whole column apart: with a leading dimension of 512 or 1024
f32 a chunk's lines fall into a few of L1's sets and come from L2 for every column
block, and where A starts off a cache line (numpy's arrays, often) every vector load
straddles two lines.  A staged chunk is contiguous and aligned.  Xeon VM (PoCL 3.1,
interleaved with XLA, us a call, median): 512^3 1315 -> 1303 aligned, 1659 -> 1347
16 bytes off a line (XLA 1257-1317); 1024^3 12259 -> 10475; batch 64 by 784 x 512
400 -> 373 and 417 -> 330; a strip of 32 rows of a 512 x 256 weight at batch 64 157 ->
142, 64 x 256 by 256 x 512 140 -> 124, an encoder layer (``transformer_linen``) 2123 ->
1928 a call; products of 64^3 and 128^3 no slower.  A tile of 32 columns (batch 32 by
784 x 256) was 4% slower staged.  (On the Zen 4 VM, before the tiles of 64 columns,
1024^3 had been slower staged.)"""


def staged_operand(plan: KernelPlan, elem: ScalarType, transposed: str,
                   n: str = "", a_bytes: int = 0) -> str | None:
    """The operand (``"a"`` or ``"b"``) a contraction stages through local memory, or None.

    A transposed operand is read along its non-contiguous mode: staging copies a panel
    of it cooperatively along its contiguous mode, the register blocks then read the
    panel contiguously.  A tuned or forced choice (``plan.stage``) wins.  By default GPUs
    stage it (coalesced global reads, real local memory); CPUs stage a transposed A of a
    gemm (``n`` columns, not a gemv's one): its rows are the vector direction of the
    register blocks, so in place they are gathered element by element, while a staged
    panel is copied once and read contiguously by every column block (measured 1.6-2x
    faster on PoCL, 32^3 and 56x9x9).  A transposed B is broadcast per column either way,
    and a gemv would read its panel only once.  CPUs also stage an A that is not
    transposed when its size (``a_bytes``, 0: unknown) is over :data:`STAGE_A_BYTES` and
    ``n`` is at least :data:`STAGE_A_COLUMNS`.
    """
    if elem.is_bool or plan.stage is False:
        return None
    if not transposed:
        wide = is_literal(n) and int(n) >= STAGE_A_COLUMNS
        return "a" if plan.blocked and wide and a_bytes > STAGE_A_BYTES else None
    if plan.stage or not plan.blocked:
        return transposed[0]
    return "a" if "a" in transposed and n != "1" else None


PANEL_BYTES = 32 * 1024
"""A K chunk of one register block's rows of A read in place (32 rows x 256 f32): the
column blocks of the work-group's tile reuse it from L1 before the next chunk."""
MIN_PANEL_DEPTH = 64


def panel_depth(plan: KernelPlan, elem: ScalarType, width: int, k: str, n: str) -> int | None:
    """K depth of the chunks in which a CPU gemm walks A in place, or None for one pass.

    A work-group's blocks of ``width`` rows otherwise read the whole K of their rows of A
    once per column block: beyond the caches for a long K (f32 2048^3 in 256 x 256
    tiles: 113 -> ~190 GFLOP/s on Zen 4 with chunks of 256, measured by hand-written
    kernels).  In chunks, each chunk of a panel serves every column block of the tile,
    and C is updated once per chunk.  GPU plans, gemvs (``n`` 1) and a static K of one
    chunk take one pass.
    """
    if not plan.blocked or n == "1" or elem.is_bool:
        return None
    size = max(1, elem.bits // 8)
    depth = MIN_PANEL_DEPTH
    while width * depth * 2 * size <= PANEL_BYTES:
        depth *= 2
    if is_literal(k) and int(k) <= depth:
        return None
    return depth


def stage_depth(elem: ScalarType, width: int, k: str) -> int:
    """K depth of a staged chunk of ``width`` rows or columns: all of a static K that
    fits :data:`STAGE_BYTES`, else the largest power of two that does."""
    size = max(1, elem.bits // 8)
    fits = max(1, STAGE_BYTES // (size * width))
    if is_literal(k) and int(k) <= min(fits, MAX_STAGE_DEPTH):
        return max(1, int(k))
    depth = 1
    while depth * 2 <= min(fits, MAX_STAGE_DEPTH):
        depth *= 2
    return depth
