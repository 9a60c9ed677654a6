"""What ``tlc run`` shows besides results: the parameter listing of a program run
without ``--inputs``, and the pipeline's phases with their times (``-v``)."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from tensorlang.diagnostics import TlcError


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
    rows = [_parameter_row(i, func) for i in range(len(func.arg_types))]
    widths = [max(len(r[k]) for r in rows) for k in range(2)]
    lines = [f"{path}: error: {problem}; @{entry} takes {len(rows)} "
             f"argument{'s' if len(rows) != 1 else ''}:"]
    lines += [f"  {r[0]:<{widths[0]}}  {r[1]:<{widths[1]}}  {r[2]}".rstrip() for r in rows]
    lines += ["pass them in order with --inputs, as one .npz (np.savez('in.npz', a, b, ...)) or "
              "comma-separated .npy files:",
              f"  tlc run {path} --inputs in.npz",
              f"  tlc run {path} --inputs {','.join(f'a{i}.npy' for i in range(min(len(rows), 3)))}"
              f"{',...' if len(rows) > 3 else ''}"]
    return "\n".join(lines)


def _parameter_row(i: int, func: Any) -> tuple[str, str, str]:
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

    def compile(self, text: str, args: argparse.Namespace) -> Any:
        """The executable of ``args.file``: through the compile caches, or with ``-v``
        phase by phase (parse and verify, lower, generate and build; no cache)."""
        from backend_opencl import driver

        if not self.enabled or args.check_bounds:
            with self("compile", "cached in memory and on disk"):
                return driver.compile_stablehlo_program(text, device=args.device,
                                                        filename=args.file, entry=args.entry,
                                                        check_bounds=args.check_bounds)
        return self._compile_phases(text, args)

    def _compile_phases(self, text: str, args: argparse.Namespace) -> Any:
        import frontend
        from backend_opencl import driver
        from backend_opencl.runtime import device_reason, get_device
        from backend_opencl.runtime.build import STATS
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
            exe = driver.compile_lowered(lowered, dev)
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
