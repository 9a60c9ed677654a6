"""Autotuning of register blocks on the actual device: ``tlc tune FILE.tl``.

For every kernel with a contraction, the cost model's best candidates
(:mod:`backend_opencl.emit.costmodel`) are compiled and timed on synthetic arguments;
when the contraction reads a transposed operand, each block is timed with the operand
read in place and staged through local memory (the cache entry is then
``[RM, RN, staged]``).  Synthetic arguments are random arrays (dynamic modes get
``size``, the last mode of a memref of order three or more gets one entry per
work-group); the fastest candidate is cached per device and kernel
text in ``$TLC_TUNE_CACHE`` (default ``tune.json`` in tlc's cache folder,
:mod:`backend_opencl.diskcache`).  ``compile`` applies cached winners automatically;
kernels never tuned use the cost model.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import replace

import numpy as np
from numpy.typing import DTypeLike

from backend_opencl import diskcache
from backend_opencl.api.tuned import Choice, cache_path, is_choice, kernel_key
from backend_opencl.emit.costmodel import candidates, cost
from backend_opencl.emit.target import choose_plan
from backend_opencl.exec.module import Module
from tensorlang.diagnostics import BoundsError, LaunchError
from tensorlang.ir.clone import clone_function
from tensorlang.ir.core import Function, Program
from tensorlang.ir.ops import Transpose
from tensorlang.ir.types import GroupType, MemRefType, ScalarType

_CONTRACTIONS = ("gemm", "gemv", "ger")
Progress = Callable[[str], None]


def _first_contraction(func: Function) -> tuple[ScalarType, str, str, bool] | None:
    """(type, M, N, reads a transposed operand) of the kernel's first contraction."""
    for inst in func.walk():
        if inst.name in _CONTRACTIONS:
            out: MemRefType = inst.operand(inst.op.output).type
            shape = [str(s) if s is not None else "M" for s in out.shape] + ["1"]
            transposed = any(inst.attrs.get(a) is Transpose.T for a in ("trans_a", "trans_b"))
            return out.element, shape[0], shape[1], transposed
    return None


def _arguments(func: Function, groups: int, size: int, rng: np.random.Generator) -> list:
    from backend_opencl.exec.arguments import NUMPY_DTYPES

    args: list = []
    for arg in func.args:
        t = arg.type
        if isinstance(t, ScalarType):
            args.append(np.dtype(NUMPY_DTYPES[t.name]).type(1 if t.name != "index" else 0))
            continue
        mem = t.memref if isinstance(t, GroupType) else t
        assert isinstance(mem, MemRefType), t  # a kernel argument is a scalar, memref or group
        shape = tuple(s if s is not None else (groups if m == mem.order - 1 and mem.order >= 3
                                                else size) for m, s in enumerate(mem.shape))
        dtype = NUMPY_DTYPES[mem.element.name]

        def make(shape: tuple[int, ...] = shape, dtype: DTypeLike = dtype) -> np.ndarray:
            return np.asfortranarray(rng.standard_normal(shape).astype(dtype))

        args.append([make() for _ in range(groups)] if isinstance(t, GroupType) else make())
    return args


def _launchable(module: Module, func: Function, groups: int, size: int
                ) -> tuple[int, list] | None:
    """A work-group count and arguments for timing ``func`` that its launch checks
    accept and whose accesses stay in bounds (the timed launches skip the checks):
    ``groups``, else one work-group (StableHLO's kernels index their operands by the
    work-group, for a grid of their own); None when neither passes.  The checked call
    runs it once."""
    for count in dict.fromkeys((groups, 1)):
        args = _arguments(func, count, size, np.random.default_rng(0))
        try:
            getattr(module, func.name)(*args, num_groups=count)
        except (LaunchError, BoundsError):
            continue
        return count, args
    return None


def _time(module: Module, name: str, args: list, groups: int, repeat: int) -> float:
    kernel = getattr(module, name)
    runtime = kernel.runtime
    bound = [kernel.bind(i, a, v, groups)[1]()
             for i, (a, v) in enumerate(zip(kernel.info.abi, args, strict=True))]
    flat = [v for values, _ in bound for v in values]
    if kernel.info.guards:  # accesses the launch checks cannot cover record violations
        flat.append(runtime.record_arg(kernel.bounds_record()))
    times = []
    for _ in range(repeat + 1):
        start = time.perf_counter()
        runtime.finish(runtime.launch(kernel.handle, flat, groups,
                                      kernel.info.plan.work_group_size))
        times.append(time.perf_counter() - start)
    return statistics.median(times[1:])


def _describe(choice: Choice) -> str:
    staged = "" if len(choice) < 3 else (", staged" if choice[2] else ", in place")
    return f"{choice[0]}x{choice[1]}{staged}"


def tune(program: object, device: object = None, groups: int = 2000, size: int = 64,
         top: int = 5, repeat: int = 5, progress: Progress = print) -> dict[str, Choice]:
    """Measure the best ``top`` modelled register blocks of each kernel (each staged and
    not when an operand is transposed); cache the winners."""
    from backend_opencl.api.compiler import as_program, compile_program, device_of, facts_of
    from backend_opencl.emit.target import target_from_device

    prog, dev = as_program(program), facts_of(device_of(device))  # measured through pyopencl
    base = target_from_device(dev)
    tuned: dict[str, list[int]] = {}
    winners: dict[str, Choice] = {}
    for func in prog.functions:
        found = _first_contraction(func)
        if found is None:
            continue
        elem, m, n, transposed = found
        plan = choose_plan(func, base)
        ranked = sorted(candidates(plan, elem, m, n), key=lambda b: cost(plan, elem, m, n, b))
        choices: list[Choice] = [(rm, rn, s) for rm, rn in ranked[:top] for s in (0, 1)] \
            if transposed else list(ranked[:top])
        launch: tuple[int, list] | None = None
        results = []
        for k, choice in enumerate(choices):
            target = replace(base, register_blocks=((func.name, choice[0], choice[1]),),
                             stage_transposed=bool(choice[2]) if transposed else None)
            one = Program([clone_function(func)])
            module = compile_program(one, device=dev, target=target)
            launch = launch or _launchable(module, func, groups, size)
            if launch is None:
                progress(f"@{func.name}: skipped: its launch checks refuse tune's arguments "
                         f"with {groups} work-groups and with one")
                break
            seconds = _time(module, func.name, launch[1], launch[0], repeat)
            results.append((seconds, choice))
            progress(f"@{func.name}: [{k + 1}/{len(choices)}] {_describe(choice)}: "
                     f"{seconds * 1e3:.3f} ms")
        if not results:
            continue
        best = min(results)[1]
        tuned[kernel_key(dev, func)] = list(best)
        winners[func.name] = best
        progress(f"@{func.name}: best register block {_describe(best)} (cached)")
    path = cache_path()
    if path is not None:
        diskcache.update_json(path, tuned, keep=is_choice)
    return winners
