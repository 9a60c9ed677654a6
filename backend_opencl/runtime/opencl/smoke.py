"""A one-kernel check that a device builds and runs OpenCL C correctly."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from backend_opencl.runtime.opencl.devices import Device

_SOURCE = """
__kernel void tlc_smoke_add(__global const float *a, __global const float *b,
                            __global float *c) {
    size_t i = get_global_id(0);
    c[i] = a[i] + b[i];
}
"""


def smoke_test(device: str | int | Device | None = None, n: int = 1000) -> bool:
    """Build and run an add kernel on ``device`` (a spec or :class:`Device`); True if right."""
    import numpy as np
    import pyopencl as cl

    from backend_opencl.runtime.opencl.devices import get_device

    dev = get_device(device)
    a = np.arange(n, dtype=np.float32)
    b = np.full(n, 0.5, dtype=np.float32)
    mf = cl.mem_flags
    ctx, queue = dev.context, dev.queue
    bufs = [cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=x) for x in (a, b)]
    out = cl.Buffer(ctx, mf.WRITE_ONLY, a.nbytes)
    program = cl.Program(ctx, _SOURCE).build()
    program.tlc_smoke_add(queue, (n,), None, *bufs, out)
    c = np.empty_like(a)
    cl.enqueue_copy(queue, c, out)
    queue.finish()
    return bool(np.array_equal(c, a + b))
