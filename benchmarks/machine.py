"""The device's own limits, measured: FMA peak and copy bandwidth (OpenCL kernels).

Limits are the best of several runs (the least disturbed one on a shared machine) and of
several kernel shapes (vector width, number of independent FMA chains), so that the
percentages of ``batched_gemm.py`` are not inflated by a weak reference kernel.  The
peak kernel runs many work-items (several per core, balanced over the cores) long
enough (tens of ms) that the launch overhead of PoCL does not count.  On the 2-core
AMD EPYC VM (AVX2, Zen-1-class: one 256-bit FMA per cycle and core, latency 5) it
measures what a hand-written AVX2 loop in C does (~43 GFLOP/s f32 per core at 2.65 GHz).

Used by ``batched_gemm.py`` to express results as a percentage of what the device can do.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import numpy as np
import pyopencl as cl

from backend_opencl.runtime.opencl.build import build_program

_PEAK = """
{pragma}
kernel void peak_{t}(global {t}* out, int iters) {{
    {t}{w} a = ({t}{w})(({t})(get_global_id(0) + 1) * ({t})1e-9);
    {t}{w} b = ({t}{w})(({t})0.999);
    {decls}
    for (int i = 0; i < iters; ++i) {{
        {body}
    }}
    {t}{w} v = {sum};
    out[get_global_id(0)] = {lanes};
}}
"""
_COPY = """
kernel void copy4(global const float4* restrict src, global float4* restrict dst) {
    size_t i = get_global_id(0);
    dst[i] = src[i];
}
kernel void copy_chunk(global const float8* restrict src, global float8* restrict dst) {
    global const float8* s = src + get_global_id(0) * CHUNK;
    global float8* d = dst + get_global_id(0) * CHUNK;
    for (int i = 0; i < CHUNK; ++i) d[i] = s[i];
}
kernel void copy_chunk16(global const float16* restrict src, global float16* restrict dst) {
    global const float16* s = src + get_global_id(0) * (CHUNK / 2);
    global float16* d = dst + get_global_id(0) * (CHUNK / 2);
    for (int i = 0; i < CHUNK / 2; ++i) d[i] = s[i];
}
"""
CHUNK = 2048
"""float8 elements one work-item copies in the chunked kernel (64 KiB)."""
PEAK_SHAPES = {"float": ((8, 12), (16, 6), (8, 10), (16, 8), (16, 12)),
               "double": ((4, 12), (8, 6), (4, 10), (8, 8), (8, 12))}
"""(vector width, independent FMA chains) tried for the peak: chains cover FMA latency x
pipes (5 x 2 on Zen, 4 x 2 on Intel), within 16 AVX2 registers (256-bit) or 32 AVX-512
registers (512-bit: 6 chains could not keep a Xeon's two 512-bit FMA pipes busy)."""
PEAK_FLOP = 1.5e9
"""FLOPs of one peak run (tens of milliseconds: launch overhead does not count)."""


def _peak_source(t: str, width: int, chains: int) -> str:
    # ``a`` is never zero: the chains converge to 1000 a, where with a = 0 they would
    # decay into subnormals, which cost Intel cores a microcode assist per FMA (the peak
    # read 37 GFLOP/s on a Xeon that runs GEMMs at 240)
    decls = "\n    ".join(f"{t}{width} x{i} = a + ({t}){i};" for i in range(chains))
    body = "\n        ".join(f"x{i} = x{i} * b + a;" for i in range(chains))
    total = " + ".join(f"x{i}" for i in range(chains))
    # Every lane is stored, so the compiler cannot drop lanes whose FLOPs are counted.
    lanes = " + ".join(f"v.s{lane:x}" for lane in range(width))
    pragma = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable" if t == "double" else ""
    return _PEAK.format(t=t, w=width, decls=decls, body=body, sum=total, lanes=lanes,
                        pragma=pragma)


def median_time(run: Callable[[], None], repeat: int, warmup: int = 1) -> float:
    """Median wall time of ``run`` (seconds) after ``warmup`` calls."""
    return statistics.median(_times(run, repeat, warmup))


def best_time(run: Callable[[], None], repeat: int) -> float:
    """Shortest wall time of ``run`` after one warm-up (a machine limit: least disturbed)."""
    return min(_times(run, repeat, 1))


def _times(run: Callable[[], None], repeat: int, warmup: int) -> list[float]:
    for _ in range(warmup):
        run()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return times


def peak_gflops(device: object, t: str, repeat: int = 5) -> float:
    """GFLOP/s of independent ``a*b+c`` chains: the best over :data:`PEAK_SHAPES`."""
    return max(_peak_of_shape(device, t, width, chains, repeat)
               for width, chains in PEAK_SHAPES[t])


def _peak_of_shape(device: object, t: str, width: int, chains: int, repeat: int) -> float:
    program = build_program(device, _peak_source(t, width, chains))
    kernel = cl.Kernel(program, f"peak_{t}")
    queue = device.queue  # type: ignore[attr-defined]
    units = device.cl_device.max_compute_units  # type: ignore[attr-defined]
    items = 16 * max(2, units)
    iters = int(PEAK_FLOP / (items * chains * width * 2))
    out = cl.Buffer(device.context, cl.mem_flags.WRITE_ONLY, items * 8)  # type: ignore
    kernel.set_args(out, np.int32(iters))

    def run() -> None:
        cl.enqueue_nd_range_kernel(queue, kernel, (items,), (1,))
        queue.finish()

    seconds = best_time(run, repeat)
    return items * iters * chains * width * 2 / seconds / 1e9


def copy_gbps(device: object, megabytes: int = 512, repeat: int = 7) -> float:
    """GB/s of the best of three copy kernels (bytes read plus bytes written)."""
    program = build_program(device, f"#define CHUNK {CHUNK}\n" + _COPY)
    ctx, queue = device.context, device.queue  # type: ignore[attr-defined]
    nbytes = megabytes * (1 << 20)
    src = cl.Buffer(ctx, cl.mem_flags.READ_ONLY, nbytes)
    dst = cl.Buffer(ctx, cl.mem_flags.WRITE_ONLY, nbytes)
    cl.enqueue_fill_buffer(queue, src, np.float32(1), 0, nbytes)
    best = 0.0
    for name, items, local in (("copy4", nbytes // 16, None),
                               ("copy_chunk", nbytes // 32 // CHUNK, (1,)),
                               ("copy_chunk16", nbytes // 32 // CHUNK, (1,))):
        kernel = cl.Kernel(program, name)
        kernel.set_args(src, dst)

        def run(kernel: object = kernel, items: int = items, local: object = local) -> None:
            cl.enqueue_nd_range_kernel(queue, kernel, (items,), local)
            queue.finish()

        best = max(best, 2 * nbytes / best_time(run, repeat) / 1e9)
    return best
