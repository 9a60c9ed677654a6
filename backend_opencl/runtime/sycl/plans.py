"""Host plans on a SYCL queue through dpctl: the
:class:`~backend_opencl.exec.runtime.PlanRuntime` of
:class:`~backend_opencl.exec.executable.Executable` for
``backend_opencl.compile_stablehlo(text, device=queue)``.

Buffers are USM memory of the queue (shared memory on CPU devices, else device memory),
pooled across calls by size in bytes.  Arguments are numpy arrays (copied in),
C-contiguous USM arrays of the queue's context or plain USM memory holding the argument's
row-major bytes (USM is used in place when the plan never writes it).  Results come back
as numpy arrays after one wait.  On an in-order queue launches and copies are submitted
without waiting; on an out-of-order queue each waits for its predecessor.  A call does
not run as prepared frames, and ``dispatch`` is a plain call (its results are numpy
arrays).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from backend_opencl.exec.runtime import Executable, Kernel, Module, Run
from backend_opencl.runtime.sycl import queue
from backend_opencl.runtime.sycl.queue import SyclDevice, UsmArray
from tensorlang.diagnostics import LaunchError
from tensorlang.plan import Launch

if TYPE_CHECKING:
    from backend_opencl.runtime.sycl.queue import Memory


def _nbytes(exe: Executable, bid: int) -> int:
    """The bytes of buffer ``bid`` (at least one element's)."""
    return max(exe.plan.buffers[bid].size, 1) * exe.storage[bid].itemsize


class SyclPlans:
    """The SYCL :class:`~backend_opencl.exec.runtime.PlanRuntime` of one queue."""

    def __init__(self, device: SyclDevice) -> None:
        self.device = device

    def max_bytes(self) -> int:
        """The largest USM allocation."""
        return self.device.max_bytes

    def frames(self, exe: Executable, direct: Callable[[Launch], bool]) -> None:
        """None: plans run step by step."""
        return None

    def prewarm(self, exe: Executable, launches: Sequence[Launch]) -> None:
        """None: SYCL builds compile every kernel (nothing is left for first launches)."""
        return None

    def dispatch(self, exe: Executable, args: list[object], frames: None
                 ) -> tuple[np.ndarray | None, ...]:
        """A plain call (it waits)."""
        return exe(*args)

    def quick_dispatch(self, exe: Executable, frames: None) -> None:
        """None: every call waits."""
        return None

    def check_argument(self, exe: Executable, i: int, value: object, bid: int
                       ) -> UsmArray | None:
        """USM argument ``i`` as a C-contiguous :class:`UsmArray` of parameter buffer
        ``bid``'s layout (plain USM memory: when it holds the array's bytes); None when
        ``value`` is not USM."""
        if not queue.is_usm(value):
            return None
        dtype, shape = exe.storage[bid], exe.plan.buffer(bid).shape
        if queue.is_memory(value):
            need = exe.plan.buffer(bid).size * dtype.itemsize
            if value.nbytes < need:
                raise LaunchError(f"@{exe.name}: argument {i} is USM memory of "
                                  f"{value.nbytes} bytes; the {'x'.join(map(str, shape))} "
                                  f"{dtype.name} array it stands for needs {need}")
            strides = queue.row_major_strides(shape, dtype.itemsize)
            arg_dtype = exe.arg_dtypes[i]
            assert arg_dtype is not None  # tokens are not checked here
            arr = UsmArray(value, shape, strides, arg_dtype, False, True)
        else:
            arr = queue.usm_array(value)
        if not queue.same_context(self.device, arr.memory):
            raise LaunchError(f"@{exe.name}: argument {i} is USM memory of another SYCL "
                              "context than the queue's")
        if arr.dtype.itemsize != dtype.itemsize:  # the plan stores it in another type
            raise LaunchError(f"@{exe.name}: argument {i} must be a numpy array (its "
                              f"{arr.dtype.name} elements are stored as {dtype.name})")
        step = arr.dtype.itemsize
        for n, stride in zip(reversed(arr.shape), reversed(arr.strides), strict=True):
            if n > 1 and stride != step:
                raise LaunchError(f"@{exe.name}: argument {i} must be a C-contiguous USM "
                                  "array")
            step *= n
        return arr

    def bind(self, exe: Executable, run: Run, bid: int, arg: Any, profiling: bool,
             snapshot: bool) -> None:
        """USM in place when the plan never writes it (else copied on the device), numpy
        copied into the buffer."""
        if isinstance(arg, UsmArray):
            if bid not in exe.written and arg.size:
                run.borrow(bid, arg.memory)
            else:
                queue.copy(self.device, run.get(bid), arg.memory, arg.size * arg.dtype.itemsize)
            return
        queue.write(run.get(bid), arg.astype(exe.storage[bid], copy=False))

    def pool_key(self, exe: Executable, bid: int) -> int:
        """Pooled by size in bytes."""
        return _nbytes(exe, bid)

    def new_buffer(self, exe: Executable, bid: int) -> Memory:
        """New USM memory for buffer ``bid``."""
        mem = queue.alloc(self.device, _nbytes(exe, bid))
        if exe.poison:
            queue.write(mem, np.full(_nbytes(exe, bid), 0xFF, np.uint8))
        return mem

    def upload(self, host: np.ndarray) -> Memory:
        """New USM memory holding ``host``."""
        return queue.to_device(self.device, host)

    def result_hosts(self, exe: Executable) -> tuple[bool, ...]:
        """None: results are read back from USM."""
        return (False,) * len(exe.plan.results)

    def result_host(self, exe: Executable, run: Run, bid: int) -> np.ndarray:
        """Never asked for (:meth:`result_hosts`)."""
        raise AssertionError("SYCL results are not bound in place")

    def copy(self, exe: Executable, run: Run, dst: int, src: int) -> None:
        """Enqueue a USM copy."""
        queue.copy(self.device, run.get(dst), run.get(src), _nbytes(exe, src))

    def direct_launch(self, module: Module, kernel: Kernel, num_groups: int
                      ) -> Callable[[Run, Sequence[object]], None]:
        """A submission with the buffers' USM memory as the arguments."""
        device, handle = self.device, kernel.handle
        wgs = kernel.info.plan.work_group_size

        def run_launch(run: Run, mems: Sequence[object]) -> None:
            queue.launch(device, handle, mems, num_groups, wgs)
        return run_launch

    def checked_view(self, exe: Executable, run: Run, bid: int) -> UsmArray:
        """Buffer ``bid`` as a flat USM array (for a kernel's checked call)."""
        dtype = exe.storage[bid]
        n = max(exe.plan.buffer(bid).size, 1)
        return UsmArray(run.get(bid), (n,), (dtype.itemsize,), dtype, False, False)

    def read(self, exe: Executable, run: Run, bid: int, n: int) -> np.ndarray:
        """Waits for the queue, then copies."""
        queue.wait(self.device)
        host = np.empty(n, exe.storage[bid])
        queue.read(run.get(bid), host)
        return host

    def write(self, exe: Executable, run: Run, bid: int, flat: np.ndarray) -> None:
        """Waits for the queue (no queued command may use the memory written)."""
        queue.wait(self.device)
        queue.write(run.get(bid), flat)

    def collect(self, exe: Executable, run: Run, hosts: Sequence[np.ndarray | None],
                profiling: bool) -> tuple[np.ndarray | None, ...]:
        """The results as numpy arrays, None for a token (after one wait for the queue)."""
        queue.wait(self.device)
        out: list[np.ndarray | None] = []
        for bid, dtype in zip(exe.plan.results, exe.result_dtypes, strict=True):
            if dtype is None:
                out.append(None)
                continue
            b = exe.plan.buffer(bid)
            host = np.empty(b.size, exe.storage[bid])
            queue.read(run.get(bid), host)
            out.append(host.reshape(b.shape).astype(dtype, copy=False))
        return tuple(out)

    def abort(self) -> None:
        """Wait for the queue."""
        queue.wait(self.device)
