"""What ``tlc run`` needs besides the compilers: the argument listing of a program run
without ``--inputs`` (a StableHLO function's parameters, a tensor-language kernel's
arguments), a kernel's arguments bound from ``--inputs`` and its results, and the
pipeline's phases with their times (``-v``)."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

import numpy as np

from tensorlang.diagnostics import TlcError

if TYPE_CHECKING:
    from backend_opencl.exec.executable import Executable
    from frontend.ir.core import Func
    from tensorlang.ir.core import Function, Program, Value
    from tensorlang.ir.types import MemRefType

Row = tuple[str, str, str]
"""An argument listing's row: name, type, what to pass."""


def parameters_usage(text: str, path: str, entry: str, problem: str) -> str:
    """The message listing ``@entry``'s parameters (SSA name, jax's name when recorded,
    type, numpy shape and dtype) and how to pass them; '' when it takes none."""
    import frontend

    module = frontend.parse(text, filename=path)
    func = next((f for part in (module.parts or [module])
                 if (f := part.func(entry)) is not None), None)
    if func is None:
        raise TlcError(f"{path}: error: no function @{entry} (--entry)")
    if not func.arg_types:
        return ""
    return _usage(path, entry, problem,
                  [_parameter_row(i, func) for i in range(len(func.arg_types))])


def _usage(path: str, entry: str, problem: str, rows: Sequence[Row],
           notes: Sequence[str] = ()) -> str:
    """The argument listing: the problem, a row per argument, how to pass them."""
    widths = [max(len(r[k]) for r in rows) for k in range(2)]
    lines = [f"{path}: error: {problem}; @{entry} takes {len(rows)} "
             f"argument{'s' if len(rows) != 1 else ''}:"]
    lines += [f"  {r[0]:<{widths[0]}}  {r[1]:<{widths[1]}}  {r[2]}".rstrip() for r in rows]
    lines += ["pass them in order with --inputs, as one .npz (np.savez('in.npz', a, b, ...)) or "
              "comma-separated .npy files:",
              f"  tlc run {path} --inputs in.npz",
              f"  tlc run {path} --inputs {','.join(f'a{i}.npy' for i in range(min(len(rows), 3)))}"
              f"{',...' if len(rows) > 3 else ''}", *notes]
    return "\n".join(lines)


def _parameter_row(i: int, func: Func) -> Row:
    """``%argI`` with jax's name (``loc("x")``) when recorded, the tensor type, and the
    numpy shape and dtype."""
    t = func.arg_types[i]
    loc = func.arg_locs[i] if i < len(func.arg_locs) else None
    name = str(loc)[5:-2] if loc is not None and str(loc).startswith('loc("') else ""
    shape, element = getattr(t, "shape", None), getattr(t, "element", None)
    dtype = getattr(element, "dtype", None)
    numpy = (f"shape {tuple(shape)} dtype {getattr(dtype, 'name', dtype)}"
             if shape is not None and dtype is not None else "")
    return f"%arg{i}" + (f" ({name})" if name else ""), str(t), numpy


def entry_kernel(program: Program, entry: str | None, path: str) -> Function:
    """The kernel ``tlc run`` runs: ``entry``, or without it the file's only function."""
    names = ", ".join(f"@{f.name}" for f in program.functions)
    if entry is not None:
        found = [f for f in program.functions if f.name == entry]
        if not found:
            raise TlcError(f"{path}: error: no function @{entry} (--entry; the file "
                           f"defines {names or 'none'})")
        return found[0]
    if len(program.functions) != 1:
        raise TlcError(f"{path}: error: " + (
            f"the file defines {len(program.functions)} functions ({names}); pick one with "
            "--entry NAME" if program.functions else "the file defines no function to run"))
    return program.functions[0]


def kernel_usage(func: Function, path: str, problem: str) -> str:
    """The message listing kernel ``func``'s arguments (name, type, the numpy array or
    number to pass) and how to pass them, the arguments it writes being its results."""
    from tensorlang.passes.effects import written_arguments

    written = written_arguments(func)
    results = ", ".join(f"%{func.args[i].name}" for i in sorted(written)) or "none"
    notes = ["a scalar takes a number (--inputs 0.5,a1.npy,...) or a 0-d array; a group, an "
             "array whose",
             "first mode indexes its members; arrays are copied into the memref's layout "
             "(column-major)",
             f"the results are the arguments the kernel writes ({results}), named after them "
             "(-o out.npz);",
             "--num-groups N sets the work-groups (default: the size of the modes group_id "
             "indexes)"]
    rows = [_argument_row(arg, i in written) for i, arg in enumerate(func.args)]
    return _usage(path, func.name, problem, rows, notes)


def _argument_row(arg: Value, written: bool) -> Row:
    """``%name``, the type, and the number or numpy shape and dtype to pass."""
    from backend_opencl.exec.arguments import NUMPY_DTYPES
    from tensorlang.ir.types import GroupType, MemRefType, ScalarType, dim_str

    t = arg.type
    if isinstance(t, ScalarType):
        return f"%{arg.name}", str(t), f"a number ({np.dtype(NUMPY_DTYPES[t.name]).name})"
    mem = t.memref if isinstance(t, GroupType) else t
    assert isinstance(mem, MemRefType), t  # a kernel argument is a scalar, memref or group
    shape = ["members"] * isinstance(t, GroupType) + [dim_str(s) for s in mem.shape]
    what = (f"shape ({', '.join(shape)}{',' * (len(shape) == 1)}) dtype "
            f"{np.dtype(NUMPY_DTYPES[mem.element.name]).name}")
    return f"%{arg.name}", str(t), what + (", written (a result)" if written else "")


def kernel_arguments(func: Function, values: Sequence[object]) -> list[object]:
    """``values`` (from ``--inputs``, one per argument of kernel ``func``) as its call's
    arguments: numbers for scalars (from 0-d arrays), fresh copies of arrays in the
    memref's layout, a group's members from its first mode."""
    from tensorlang.ir.types import GroupType, MemRefType, ScalarType

    bound: list[object] = []
    for arg, value in zip(func.args, values, strict=True):
        t = arg.type
        if isinstance(t, ScalarType):
            bound.append(value.item() if isinstance(value, np.ndarray) and value.ndim == 0
                         else value)
        elif isinstance(t, GroupType):
            if not isinstance(value, np.ndarray) or value.ndim != t.memref.order + 1:
                raise TlcError(f"error: --inputs: %{arg.name} ({t}) takes an array of "
                               f"{t.memref.order + 1} modes, the first indexing the group's "
                               f"members; got {_shape_text(value)}")
            bound.append([in_layout(member, t.memref) for member in value])
        else:
            assert isinstance(t, MemRefType), t
            bound.append(in_layout(value, t) if isinstance(value, np.ndarray) else value)
    return bound


def _shape_text(value: object) -> str:
    return f"shape {value.shape}" if isinstance(value, np.ndarray) else f"the number {value}"


def in_layout(arr: np.ndarray, t: MemRefType) -> np.ndarray:
    """A copy of ``arr`` in memref ``t``'s layout: its static strides, column-major
    where they are dynamic (``arr`` unchanged when its order is not ``t``'s: the kernel's
    argument check names that)."""
    if arr.ndim != t.order:
        return arr
    strides, expected = [], 1
    for size, declared in zip(arr.shape, t.strides, strict=True):
        strides.append(declared if declared is not None else expected)
        expected = max(expected, strides[-1] * size)
    if strides == [int(np.prod(arr.shape[:m])) for m in range(arr.ndim)] or arr.size == 0:
        return np.array(arr, order="F")
    span = 1 + sum((n - 1) * s for n, s in zip(arr.shape, strides, strict=True))
    out = np.lib.stride_tricks.as_strided(np.zeros(span, arr.dtype), arr.shape,
                                          [s * arr.itemsize for s in strides])
    out[...] = arr
    return out


def kernel_results(func: Function, bound: Sequence[object],
                   written: frozenset[int]) -> dict[str, np.ndarray]:
    """The arguments a kernel call wrote, by name (a group's members stacked on a first
    mode, as ``--inputs`` takes them)."""
    return {func.args[i].name: np.array(bound[i]) for i in sorted(written)}


class Phases:
    """Times named phases; prints them to stderr at the end when ``enabled`` (``-v``)."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.rows: list[tuple[str, float, str]] = []

    @contextmanager
    def __call__(self, name: str, detail: str = "") -> Iterator[None]:
        """Time the body as phase ``name``."""
        start = time.perf_counter()
        yield
        self.rows.append((name, time.perf_counter() - start, detail))

    def compile(self, text: str, args: argparse.Namespace) -> Executable:
        """The executable of ``args.file``: through the compile caches, or with ``-v``
        phase by phase (parse and verify, lower, generate and build; no cache)."""
        from backend_opencl.api import compiler

        if not self.enabled or args.check_bounds:
            with self("compile", "cached in memory and on disk"):
                return compiler.compile_stablehlo_program(text, device=args.device,
                                                        filename=args.file, entry=args.entry,
                                                        check_bounds=args.check_bounds)
        return self._compile_phases(text, args)

    def _compile_phases(self, text: str, args: argparse.Namespace) -> Executable:
        import frontend
        from backend_opencl.api import compiler
        from backend_opencl.runtime import device_reason, get_device
        from backend_opencl.runtime.opencl.build import STATS
        from frontend.lower import lower_function

        with self("device"):
            dev = get_device(args.device)
        self.rows[-1] = (*self.rows[-1][:2], f"{dev.label} ({device_reason(args.device)})")
        with self("parse", "StableHLO parsed and verified"):
            module = frontend.parse(text, filename=args.file)
        part = next((p for p in (module.parts or [module]) if p.func(args.entry)),
                    module)
        with self("lower", "to tensor-language kernels and a host plan"):
            lowered = lower_function(part, args.entry)
        built, seconds = STATS.builds, STATS.seconds
        with self("generate", "passes, schedule, OpenCL C, build"):
            exe = compiler.compile_lowered(lowered, dev)
        name, total, detail = self.rows[-1]
        build = STATS.seconds - seconds
        self.rows[-1] = (name, total - build, "passes, schedule, OpenCL C")
        self.rows.append(("build", build, f"{STATS.builds - built} OpenCL program(s) built "
                                          "(from pyopencl's cache when seen before)"))
        return exe

    def report(self) -> None:
        """The phases and their times, on stderr (nothing unless enabled)."""
        if not self.enabled:
            return
        for name, seconds, detail in self.rows:
            print(f"tlc: {name:<9} {seconds * 1e3:9.2f} ms  {detail}".rstrip(),
                  file=sys.stderr)
        total = sum(s for _, s, _ in self.rows)
        print(f"tlc: {'total':<9} {total * 1e3:9.2f} ms", file=sys.stderr)
