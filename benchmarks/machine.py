"""The device's own limits, measured: FMA peak and copy bandwidth (OpenCL kernels).

Limits are the best of several runs (the least disturbed one on a shared machine).

Used by ``batched_gemm.py`` to express results as a percentage of what the device can do.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import numpy as np
import pyopencl as cl

from backend_opencl.runtime.build import build_program

_PEAK = """
{pragma}
kernel void peak_{t}(global {t}* out, int iters) {{
    {t}{w} a = ({t}{w})(({t})get_global_id(0) * ({t})1e-9);
    {t}{w} b = ({t}{w})(({t})0.999);
    {decls}
    for (int i = 0; i < iters; ++i) {{
        {body}
    }}
    out[get_global_id(0)] = dot_all({sum});
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
"""
CHUNK = 2048
"""float8 elements one work-item copies in the chunked kernel (64 KiB)."""
CHAINS = 10
"""Independent FMA chains: enough to cover latency x pipes, few enough for 16 registers."""


def _peak_source(t: str, width: int) -> str:
    decls = "\n    ".join(f"{t}{width} x{i} = a + ({t}){i};" for i in range(CHAINS))
    body = "\n        ".join(f"x{i} = x{i} * b + a;" for i in range(CHAINS))
    total = " + ".join(f"x{i}" for i in range(CHAINS))
    pragma = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable" if t == "double" else ""
    reduce = "#define dot_all(v) ((v).s0)\n"
    return reduce + _PEAK.format(t=t, w=width, decls=decls, body=body, sum=total,
                                 pragma=pragma)


def median_time(run: Callable[[], None], repeat: int, warmup: int = 1) -> float:
    """Median wall time of ``run`` (seconds) after ``warmup`` calls."""
    for _ in range(warmup):
        run()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def best_time(run: Callable[[], None], repeat: int) -> float:
    """Shortest wall time of ``run`` after one warm-up (a machine limit: least disturbed)."""
    run()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def peak_gflops(device: object, t: str, repeat: int = 5) -> float:
    """GFLOP/s of independent ``a*b+c`` chains on 256-bit vectors (AVX2; PoCL's target)."""
    width = 8 if t == "float" else 4
    program = build_program(device, _peak_source(t, width))
    kernel = cl.Kernel(program, f"peak_{t}")
    queue = device.queue  # type: ignore[attr-defined]
    units = device.cl_device.max_compute_units  # type: ignore[attr-defined]
    items, iters = 4 * max(2, units), 10_000
    out = cl.Buffer(device.context, cl.mem_flags.WRITE_ONLY, items * 8)  # type: ignore
    kernel.set_args(out, np.int32(iters))

    def run() -> None:
        cl.enqueue_nd_range_kernel(queue, kernel, (items,), (1,))
        queue.finish()

    seconds = best_time(run, repeat)
    return items * iters * CHAINS * width * 2 / seconds / 1e9


def copy_gbps(device: object, megabytes: int = 512, repeat: int = 7) -> float:
    """GB/s of the better of two copy kernels (bytes read plus bytes written)."""
    program = build_program(device, f"#define CHUNK {CHUNK}\n" + _COPY)
    ctx, queue = device.context, device.queue  # type: ignore[attr-defined]
    nbytes = megabytes * (1 << 20)
    src = cl.Buffer(ctx, cl.mem_flags.READ_ONLY, nbytes)
    dst = cl.Buffer(ctx, cl.mem_flags.WRITE_ONLY, nbytes)
    cl.enqueue_fill_buffer(queue, src, np.float32(1), 0, nbytes)
    best = 0.0
    for name, items, local in (("copy4", nbytes // 16, None),
                               ("copy_chunk", nbytes // 32 // CHUNK, (1,))):
        kernel = cl.Kernel(program, name)
        kernel.set_args(src, dst)

        def run(kernel: object = kernel, items: int = items, local: object = local) -> None:
            cl.enqueue_nd_range_kernel(queue, kernel, (items,), local)
            queue.finish()

        best = max(best, 2 * nbytes / best_time(run, repeat) / 1e9)
    return best
