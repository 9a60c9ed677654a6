"""Kernel objects (``launch.get_kernel``): pyopencl's invokers are kept in memory and
made only when called (``launch._remember_invokers``), and kernels called through
pyopencl's own API, tlc's or a user's, still compute what they should."""

from __future__ import annotations

import numpy as np
import pyopencl as cl
import pyopencl.invoker as invoker
import pytest

from backend_opencl.runtime import get_device
from backend_opencl.runtime.opencl import launch

SCALE = """
kernel void scale(global float* out, global const float* x, float a) {
    size_t i = get_global_id(0);
    out[i] = a * x[i];
}
"""


@pytest.fixture
def program() -> cl.Program:
    return cl.Program(get_device(None).context, SCALE).build()


def test_invokers_are_made_once_a_key_and_only_when_called(
        program: cl.Program, monkeypatch: pytest.MonkeyPatch) -> None:
    """Kernel objects do not go to pyopencl's disk cache for their invokers: the first
    call of one does, once for every kernel object of its name."""
    made: list[str] = []
    remembered = invoker.generate_enqueue_and_set_args
    assert getattr(remembered, "tlc_remembered", False)
    generate = remembered.__wrapped__  # pyopencl's own

    def counting(*args: object, **kwargs: object) -> object:
        made.append(str(args[0]))
        return generate(*args, **kwargs)

    monkeypatch.setattr(invoker, "generate_enqueue_and_set_args", counting)
    launch._remember_invokers()  # over the counting one: a fresh memory
    first, second = (launch.get_kernel(program, "scale") for _ in range(2))
    assert first is not second
    assert made == []
    device = get_device(None)
    x = np.random.default_rng(5).standard_normal(16).astype(np.float32)
    x_buf = cl.Buffer(device.context, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR,
                      hostbuf=x)
    out_buf = cl.Buffer(device.context, cl.mem_flags.WRITE_ONLY, x.nbytes)
    first.set_args(out_buf, x_buf, np.float32(3.0))
    assert made == ["scale"]
    second(device.queue, (16,), None, out_buf, x_buf, np.float32(-2.0))
    assert made == ["scale"]
    out = np.full(16, np.nan, np.float32)
    cl.enqueue_copy(device.queue, out, out_buf)
    np.testing.assert_allclose(out, -2.0 * x, rtol=1e-6)


def test_pyopencl_calls_work_on_remembered_invokers(program: cl.Program) -> None:
    """Kernel objects sharing invokers each keep their own arguments; pyopencl's
    ``kernel(queue, ...)`` call and ``set_args`` still work."""
    device = get_device(None)
    rng = np.random.default_rng(3)
    x = rng.standard_normal(64).astype(np.float32)
    flags = cl.mem_flags
    x_buf = cl.Buffer(device.context, flags.READ_ONLY | flags.COPY_HOST_PTR, hostbuf=x)
    outs = [np.full(64, np.nan, np.float32) for _ in range(2)]
    out_bufs = [cl.Buffer(device.context, flags.WRITE_ONLY, 64 * 4) for _ in range(2)]
    kernels = [launch.get_kernel(program, "scale") for _ in range(2)]
    kernels[0](device.queue, (64,), None, out_bufs[0], x_buf, np.float32(2.5))
    kernels[1].set_args(out_bufs[1], x_buf, np.float32(-0.5))
    cl.enqueue_nd_range_kernel(device.queue, kernels[1], (64,), None)
    for out, buf in zip(outs, out_bufs, strict=True):
        cl.enqueue_copy(device.queue, out, buf)
    np.testing.assert_allclose(outs[0], 2.5 * x, rtol=1e-6)
    np.testing.assert_allclose(outs[1], -0.5 * x, rtol=1e-6)


def test_unhashable_argument_types_go_to_pyopencl_as_they_are() -> None:
    """Keys the memory cannot hold reach pyopencl's generator, which answers as it does
    without tlc (here: its disk cache refuses a list)."""
    device = get_device(None).cl_device
    args = ("scale", 3, 3, [None, None, np.dtype(np.float32)], False, False, [device])
    with pytest.raises(TypeError, match="persistent hash") as ours:
        invoker.generate_enqueue_and_set_args(*args)
    with pytest.raises(TypeError) as theirs:
        invoker.generate_enqueue_and_set_args.__wrapped__(*args)
    assert str(ours.value) == str(theirs.value)
