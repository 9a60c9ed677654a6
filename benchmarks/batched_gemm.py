"""Benchmark: batched small GEMM, C_i = A_i B_i + C_i, written in the tensor language.

Run ``.venv/bin/python benchmarks/batched_gemm.py`` (``--quick`` for batch 10,000 only
and fewer repeats; ``--shapes 32x32x32`` to pick shapes).  For every shape (M x K x N),
type and batch size, as a strided batch (``memref<f32xMxKx?>`` indexed by ``group_id``)
and as a group (``group<memref<f32xMxK>>``), it prints GFLOP/s, the percentage of the
device's FMA peak and of its copy bandwidth (both measured here by OpenCL kernels), GB/s,
and the speed-up over ``numpy.matmul`` on the stacked arrays, over a hand-written
register-blocked OpenCL kernel (``xhand``, :mod:`hand_gemm`: the reference of what PoCL
can do, with 512-bit vectors where the device prefers 16 float lanes; above 1 we beat
it), over a naive OpenCL kernel (one work-item per element of C)
and over ``jax.jit(jnp.matmul)`` when jax is installed.  ``--trans t.n,n.t`` benchmarks
transposed operands too (``gemm.t.n``: A is stored K x M; the hand kernel has no
transposed variant, so ``xhand`` is ``-`` there).  ``--driver all`` (or ``pocl,intel,pypi``)
prints the table once per installed OpenCL driver, each measured in its own process, then
a row per driver (GFLOP/s, strided / group; a driver that cannot build here says why).
Every time is the median of repeated runs after a warm-up, all measured in the same run;
the data is on the device before timing (buffers created once), so transfers are not
timed.  ``np-io`` times the whole call with numpy arrays instead (``mod.strided(A, B, C,
num_groups=n)``, as a user writes it: binding, launch, results in ``C``); the arrays sit
16 bytes past a 128-byte boundary, as numpy's own allocations do (PoCL binds them in
place; a driver that needs aligned memory gets copies), and ``xnp-io`` is numpy.matmul's
time over that.  Results are checked
against numpy once per row.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyopencl as cl
import pyopencl.array as cl_array

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import drivers  # noqa: E402
import machine  # noqa: E402
from hand_gemm import hand_source  # noqa: E402

import backend_opencl  # noqa: E402
from backend_opencl.exec.module import aligned_empty  # noqa: E402
from backend_opencl.runtime import get_device  # noqa: E402
from backend_opencl.runtime.opencl.build import build_program  # noqa: E402
from backend_opencl.runtime.opencl.launch import launch  # noqa: E402

SHAPES = ((16, 8, 16), (32, 32, 32), (64, 64, 64), (56, 9, 9))
TYPES = {"f32": np.float32, "f64": np.float64}
CTYPES = {"f32": "float", "f64": "double"}

STRIDED = """
func @strided(%A: memref<{t}x{a}x?>, %B: memref<{t}x{b}x?>, %C: memref<{t}x{m}x{n}x?>) {{
  %g = group_id
  %one = constant 1.0 : {t}
  %a = subview %A[:, :, %g] : memref<{t}x{a}x?>
  %b = subview %B[:, :, %g] : memref<{t}x{b}x?>
  %c = subview %C[:, :, %g] : memref<{t}x{m}x{n}x?>
  gemm.{trans} %one, %a, %b, %one, %c
    : {t}, memref<{t}x{a}>, memref<{t}x{b}>, {t}, memref<{t}x{m}x{n}>
}}
"""
GROUP = """
func @group(%A: group<memref<{t}x{a}>>, %B: group<memref<{t}x{b}>>,
            %C: group<memref<{t}x{m}x{n}>>) {{
  %g = group_id
  %one = constant 1.0 : {t}
  %a = load %A[%g] : group<memref<{t}x{a}>>
  %b = load %B[%g] : group<memref<{t}x{b}>>
  %c = load %C[%g] : group<memref<{t}x{m}x{n}>>
  gemm.{trans} %one, %a, %b, %one, %c
    : {t}, memref<{t}x{a}>, memref<{t}x{b}>, {t}, memref<{t}x{m}x{n}>
}}
"""
NAIVE = """
{pragma}
kernel void naive(global const {c}* A, global const {c}* B, global {c}* C) {{
    const long g = get_global_id(1), i = get_global_id(0) % {m}, j = get_global_id(0) / {m};
    global const {c}* a = A + g * {mk};
    global const {c}* b = B + g * {kn};
    {c} acc = 0;
    for (int k = 0; k < {k}; ++k) acc = a[i + k * {m}] * b[k + j * {k}] + acc;
    C[g * {mn} + i + j * {m}] += acc;
}}
"""


@dataclass(frozen=True)
class Row:
    """One measured configuration."""

    shape: tuple[int, int, int]
    t: str
    batch: int
    layout: str
    seconds: float
    numpy_s: float
    naive_s: float
    hand_s: float | None
    jax_s: float | None
    error: float
    trans: str = "n.n"
    numpy_io_s: float = 0.0  #: the whole call with numpy arrays

    @property
    def flops(self) -> float:
        m, k, n = self.shape
        return 2.0 * m * k * n * self.batch

    @property
    def bytes(self) -> float:
        m, k, n = self.shape
        return (m * k + k * n + 2 * m * n) * np.dtype(TYPES[self.t]).itemsize * self.batch


class Bench:
    """Data, kernels and timings of one (shape, type, batch)."""

    def __init__(self, device: object, shape: tuple[int, int, int], t: str, batch: int,
                 repeat: int, trans: str = "n.n") -> None:
        self.device, self.shape, self.t, self.batch, self.repeat = device, shape, t, batch, repeat
        self.trans = trans
        m, k, n = shape
        rng = np.random.default_rng(1)
        dt = TYPES[t]
        ta, tb = (x == "t" for x in trans.split("."))
        # stored operands (column-major per matrix); self.A / self.B are op(A), op(B) views
        self.A_stored = _aligned(rng.standard_normal((k, m, batch) if ta else
                                                     (m, k, batch)).astype(dt))
        self.B_stored = _aligned(rng.standard_normal((n, k, batch) if tb else
                                                     (k, n, batch)).astype(dt))
        self.A = self.A_stored.transpose(1, 0, 2) if ta else self.A_stored
        self.B = self.B_stored.transpose(1, 0, 2) if tb else self.B_stored
        self.C = _aligned(rng.standard_normal((m, n, batch)).astype(dt))
        dims = {"t": t, "m": m, "n": n, "trans": trans,
                "a": f"{k}x{m}" if ta else f"{m}x{k}", "b": f"{n}x{k}" if tb else f"{k}x{n}"}
        text = STRIDED.format(**dims) + GROUP.format(**dims)
        self.module = backend_opencl.compile(text, device=device)

    def _buffers(self) -> list[object]:
        ctx = self.device.context  # type: ignore[attr-defined]
        flags = cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR
        return [cl.Buffer(ctx, flags, hostbuf=x.ravel(order="F"))
                for x in (self.A_stored, self.B_stored, self.C)]

    def _time_kernel(self, kernel: object, args: list[object], groups: int,
                     wg: tuple[int, int]) -> float:
        queue = self.device.queue  # type: ignore[attr-defined]

        def run() -> None:
            launch(queue, kernel, args, groups, wg)
            queue.finish()

        return machine.median_time(run, self.repeat)

    def ours(self, layout: str) -> tuple[float, float]:
        """(seconds, relative error) of the tensor-language kernel."""
        kern = getattr(self.module, layout)
        queue = self.device.queue  # type: ignore[attr-defined]
        c = _aligned(self.C)  # the group's C members are written in place or copied back
        stored = (self.A_stored, self.B_stored, c)
        if layout == "strided":
            values: list = [cl_array.to_device(queue, x) for x in stored]
        else:
            values = [[x[:, :, g] for g in range(self.batch)] for x in stored]
        binders = [kern._check(i, a, v, self.batch) for i, (a, v) in
                   enumerate(zip(kern.info.abi, values, strict=True))]
        bound = [b(self.device.context, queue) for b in binders]  # type: ignore
        args = [v for vals, _ in bound for v in vals]
        wg = kern.info.plan.work_group_size
        launch(queue, kern._kernel, args, self.batch, wg)  # one run, checked
        queue.finish()
        if layout == "group":
            bound[2][1]()  # the writeback (nothing to copy when bound in place)
        got = values[2].get() if layout == "strided" else c.copy(order="F")
        want = np.einsum("ikb,kjb->ijb", self.A.astype(np.float64), self.B) + self.C
        error = float(np.max(np.abs(got - want)) / np.max(np.abs(want)))
        return self._time_kernel(kern._kernel, args, self.batch, wg), error

    def ours_numpy(self, layout: str) -> float:
        """Seconds of a whole call with numpy arrays (checked once against numpy)."""
        kern = getattr(self.module, layout)
        a, b, c = (_plain(x) for x in (self.A_stored, self.B_stored, self.C))
        if layout == "strided":
            args: tuple = (a, b, c)
        else:
            args = tuple([x[:, :, g] for g in range(self.batch)] for x in (a, b, c))
        want = np.einsum("ikb,kjb->ijb", self.A.astype(np.float64), self.B) + c
        kern(*args, num_groups=self.batch)
        scale = np.max(np.abs(want))
        assert np.max(np.abs(c - want)) / scale < 1e-4, "numpy path gives wrong results"
        return machine.median_time(lambda: kern(*args, num_groups=self.batch), self.repeat)

    def numpy(self) -> float:
        """numpy.matmul on the stacked (batch-first) arrays, plus the addition."""
        at, bt, ct = (x.T for x in (self.A, self.B, self.C))  # C-order (batch, cols, rows)
        tmp = np.empty_like(ct)

        def run() -> None:
            np.matmul(bt, at, out=tmp)  # (A_i B_i)^T = B_i^T A_i^T, same memory layout
            np.add(ct, tmp, out=ct)

        return machine.median_time(run, max(1, self.repeat // 2))

    def hand(self) -> float | None:
        """The hand-written register-blocked kernel (:mod:`hand_gemm`; ``gemm.n.n`` only)."""
        if self.trans != "n.n":
            return None
        lanes = getattr(self.device, "preferred_vector_width", {}).get("float", 8)
        source = hand_source(self.t, *self.shape, wide=lanes >= 16)
        kernel = cl.Kernel(build_program(self.device, source), "hand")
        buffers = self._buffers()
        kernel.set_args(*buffers)
        queue = self.device.queue  # type: ignore[attr-defined]
        launch(queue, kernel, buffers, self.batch, (1, 1))
        got = np.empty(self.C.size, self.C.dtype)
        cl.enqueue_copy(queue, got, buffers[2])
        want = np.einsum("ikb,kjb->ijb", self.A.astype(np.float64), self.B) + self.C
        assert np.allclose(got.reshape(self.C.shape, order="F"), want, rtol=1e-4, atol=1e-4)
        return self._time_kernel(kernel, buffers, self.batch, (1, 1))

    def naive(self) -> float | None:
        """A straightforward OpenCL kernel: one work-item per element of C (``n.n`` only)."""
        if self.trans != "n.n":
            return None
        m, k, n = self.shape
        pragma = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable" if self.t == "f64" else ""
        src = NAIVE.format(c=CTYPES[self.t], m=m, k=k, mk=m * k, kn=k * n, mn=m * n,
                           pragma=pragma)
        kernel = cl.Kernel(build_program(self.device, src), "naive")
        buffers = self._buffers()  # kept alive while the kernel runs
        kernel.set_args(*buffers)
        queue = self.device.queue  # type: ignore[attr-defined]

        def run() -> None:
            cl.enqueue_nd_range_kernel(queue, kernel, (m * n, self.batch), (m * n, 1))
            queue.finish()

        return machine.median_time(run, max(1, self.repeat // 2))

    def jax(self) -> float | None:
        """``jax.jit(jnp.matmul)`` plus the addition, when jax is installed."""
        try:
            import jax
            import jax.numpy as jnp
        except ImportError:
            return None
        f = jax.jit(lambda a, b, c: jnp.matmul(b, a) + c)
        at, bt, ct = (jnp.asarray(x.T) for x in (self.A, self.B, self.C))
        return machine.median_time(lambda: f(at, bt, ct).block_until_ready(), self.repeat)


def _row(row: Row, peak: dict[str, float], copy: float) -> str:
    gf, gb = row.flops / row.seconds / 1e9, row.bytes / row.seconds / 1e9
    m, k, n = row.shape

    def ratio(other: float | None) -> str:
        return f"{other / row.seconds:7.2f}" if other else "      -"

    io = f"{row.flops / row.numpy_io_s / 1e9:7.1f} {row.numpy_s / row.numpy_io_s:7.2f}" \
        if row.numpy_io_s else "      -       -"
    return (f"{m:>3}x{k:<2}x{n:<3} {row.t} {row.trans} {row.batch:>7} {row.layout:<7} "
            f"{gf:8.1f} {100 * gf / peak[row.t]:5.0f}% {gb:7.1f} {100 * gb / copy:5.0f}% "
            f"{ratio(row.numpy_s)} {ratio(row.hand_s)} {ratio(row.naive_s)} "
            f"{ratio(row.jax_s)} {row.error:8.1e} {io}")


HEADER = ("shape(MxKxN) type trans   batch layout  GFLOP/s  %peak    GB/s  %copy  xnumpy   "
          "xhand  xnaive    xjax   relerr   np-io xnp-io")


def _plain(x: np.ndarray) -> np.ndarray:
    """A column-major copy of ``x`` 16 bytes past a 128-byte boundary: as numpy's own
    allocations sit, not aligned for a driver's buffers (PoCL binds it in place anyway)."""
    raw = np.empty(x.nbytes + 256, np.uint8)
    start = (16 - raw.ctypes.data) % 128
    out = raw[start:start + x.nbytes].view(x.dtype).reshape(x.shape, order="F")
    out[...] = x
    return out


def _aligned(x: np.ndarray) -> np.ndarray:
    """A 128-byte aligned column-major copy of ``x`` (binds in place on CPU devices)."""
    out = aligned_empty(x.shape, x.dtype, order="F")
    out[...] = x
    return out


def _limits(device: object) -> tuple[dict[str, float], float]:
    """(FMA peak per type, copy bandwidth), measured now."""
    return ({"f32": machine.peak_gflops(device, "float"),
             "f64": machine.peak_gflops(device, "double")}, machine.copy_gbps(device))


def _measure(device: object, shape: tuple[int, int, int], t: str, batch: int, trans: str,
             repeat: int, max_gb: float) -> list[Row | str]:
    """The rows (both layouts) of one configuration, or why it was skipped."""
    m, k, n = shape
    gb = (m * k + k * n + m * n) * np.dtype(TYPES[t]).itemsize * batch / 1e9
    if gb > max_gb:
        return [f"{m:>3}x{k:<2}x{n:<3} {t} {trans} {batch:>7} skipped: A, B, C take "
                f"{gb:.1f} GB (--max-gb {max_gb})"]
    bench = Bench(device, shape, t, batch, repeat, trans)
    numpy_s, hand_s, naive_s, jax_s = bench.numpy(), bench.hand(), bench.naive(), bench.jax()
    rows: list[Row | str] = []
    for layout in ("strided", "group"):
        seconds, error = bench.ours(layout)
        rows.append(Row(shape, t, batch, layout, seconds, numpy_s, naive_s, hand_s, jax_s,
                        error, trans, bench.ours_numpy(layout)))
        print(f"  measured {m}x{k}x{n} {t} {trans} {batch} {layout}", file=sys.stderr,
              flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    """Measure the machine, then every row; print the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="batch 10,000 only, fewer repeats")
    ap.add_argument("--shapes", default="", help="e.g. 32x32x32,56x9x9 (M x K x N)")
    ap.add_argument("--types", default="f32,f64")
    ap.add_argument("--batches", default="")
    ap.add_argument("--repeat", type=int, default=0)
    ap.add_argument("--max-gb", type=float, default=2.5,
                    help="skip rows whose A, B and C together exceed this many GB")
    ap.add_argument("--trans", default="n.n",
                    help="operand transposes to benchmark, e.g. n.n,t.n,n.t (gemm.t.n: A is "
                         "stored K x M)")
    ap.add_argument("--driver", default="", help=drivers.HELP)
    args = ap.parse_args(argv)
    if args.driver:
        return drivers.run_per_driver(__file__, args.driver,
                                      sys.argv[1:] if argv is None else argv,
                                      drivers.gemm_summary)
    shapes = [tuple(int(x) for x in s.split("x")) for s in args.shapes.split(",") if s] \
        or list(SHAPES)
    batches = [int(b) for b in args.batches.split(",") if b] or \
        ([10_000] if args.quick else [10_000, 100_000])
    repeat = args.repeat or (3 if args.quick else 7)
    device = get_device(None)
    limits = _limits(device)
    print(f"device: {device.label}", flush=True)
    rows: list[Row | str] = []
    for shape in shapes:
        for t in args.types.split(","):
            for batch in batches:
                for trans in args.trans.split(","):
                    rows += _measure(device, shape, t, batch, trans, repeat, args.max_gb)
    after = _limits(device)  # the limits before and after the rows: the better of each
    peak = {t: max(limits[0][t], after[0][t]) for t in TYPES}
    copy = max(limits[1], after[1])
    print(f"measured peak: {peak['f32']:.0f} GFLOP/s f32, {peak['f64']:.0f} GFLOP/s f64; "
          f"copy: {copy:.1f} GB/s (best of runs before and after); median of {repeat} runs "
          "after a warm-up")
    print(HEADER)
    for row in rows:
        print(row if isinstance(row, str) else _row(row, peak, copy))
    return 0


if __name__ == "__main__":
    sys.exit(main())
