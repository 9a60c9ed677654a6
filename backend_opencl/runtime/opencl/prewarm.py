"""PoCL's kernel compiles of a first call, shared with a helper process.

PoCL generates a kernel's work-group function (LLVM's optimisation and code generation of
that kernel) at the kernel's first launch, one kernel at a time per process, and keeps
the result in its disk cache (``$POCL_CACHE_DIR``).  A cold first call of a model with
40-odd kernels spends 3-4 s there on the 2-core VM while the second core idles; threads
do not help, since PoCL compiles under one lock per process (docs/performance.md).

When a program was just built (not found in a cache) and its first call launches
``MIN_KERNELS`` kernels or more, :func:`start` spawns this module as a helper process.
The helper loads the same drivers, builds the same source (a hit in PoCL's program cache:
the caller built it already) and launches the kernels in *reverse* plan order, one
work-group each on zero-filled buffers of the plan's sizes, so PoCL compiles their
work-group functions into the shared disk cache.  The caller, launching in plan order,
finds the later kernels there; the two meet in the middle.  PoCL writes each cache entry
to a temporary file and renames it, so either side sees a whole entry or none, and a
kernel compiled by both is compiled twice, not wrongly.

The helper's results are thrown away and it touches nothing of the caller's: it runs the
kernels on its own buffers, sized as the caller's (every access in bounds), with stdout
and stderr closed.  It stops when the first call returns (:meth:`Helper.stop`), when its
parent dies (``PR_SET_PDEATHSIG`` on Linux), and after ``DEADLINE_S`` in any case (zero
data could keep a loop kernel spinning).  ``TLC_PREWARM=0`` turns it off, ``1`` starts it
for every first call on PoCL regardless of the thresholds (tests).
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from backend_opencl.runtime.opencl.devices import Device

ENV = "TLC_PREWARM"
"""0: never start a helper; 1: start one for every first call on PoCL; unset: automatic."""

MIN_KERNELS = 6
"""The fewest distinct kernels a first call must launch for a helper to pay off (it takes
~0.2 s of the other core to start; PoCL compiles a kernel in 20-300 ms)."""

FRESH_BUILD_S = 0.15
"""A build that took longer compiled the program (a hit in PoCL's program cache takes
~0.04 s for a 44-kernel model): its kernels' work-group functions are not cached either."""

DEADLINE_S = 120
"""The longest a helper runs."""

KERNEL_CACHE_ENV = "POCL_KERNEL_CACHE"
"""PoCL's disk cache switch: with it off (0) there is nothing to share."""


class KernelLaunch(NamedTuple):
    """One kernel as the helper launches it: its name, work-group size and the size in
    bytes of each (buffer) argument."""

    name: str
    work_group_size: tuple[int, int]
    arg_bytes: tuple[int, ...]


class Helper:
    """A running helper process and the file of its work."""

    def __init__(self, process: subprocess.Popen[bytes], spec: Path) -> None:
        self.process = process
        self.spec = spec

    def stop(self) -> None:
        """End the helper (what it compiled so far stays in PoCL's cache)."""
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        self.spec.unlink(missing_ok=True)  # when it ended before reading it


_STARTED: set[str] = set()
_LOCK = threading.Lock()


def start(device: Device, source: str, fresh: bool, kernels: Sequence[KernelLaunch]
          ) -> Helper | None:
    """A helper compiling ``kernels`` (in the order given: the caller's last first) of
    ``source`` on ``device``; None where it would not pay off or cannot run.  ``fresh``:
    whether ``source`` was just compiled.  A source gets at most one helper per
    process."""
    mode = os.environ.get(ENV, "")
    if mode == "0" or not device.is_pocl or os.environ.get(KERNEL_CACHE_ENV) == "0":
        return None
    if mode != "1" and (not fresh or len(kernels) < MIN_KERNELS):
        return None
    key = hashlib.sha256(source.encode()).hexdigest()
    with _LOCK:
        if key in _STARTED:
            return None
        _STARTED.add(key)
    try:
        return _spawn(_spec(device, source, kernels))
    except (OSError, ValueError, subprocess.SubprocessError):
        return None  # an optimisation: the caller compiles everything itself


def _spec(device: Device, source: str, kernels: Sequence[KernelLaunch]) -> dict[str, Any]:
    from backend_opencl.runtime import icd

    cl_device: Any = device.cl_device
    return {
        "platform": [cl_device.platform.name, cl_device.platform.version],
        "device": cl_device.name,
        # unpinned: pinned as the caller's are, the helper's compiling worker would share
        # the caller's core and each would compile at half speed
        "loader_env": {**icd.LOADER_ENV, icd.AFFINITY_ENV: "0"},
        "source": source,
        "kernels": [list(k) for k in kernels],
    }


def _spawn(spec: dict[str, Any]) -> Helper:
    fd, name = tempfile.mkstemp(prefix="tlc-prewarm-", suffix=".json")
    path = Path(name)
    with os.fdopen(fd, "w") as f:
        json.dump(spec, f)
    root = str(Path(__file__).resolve().parents[3])  # where backend_opencl is imported from
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", __name__, str(path)], stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, close_fds=True)
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    return Helper(process, path)


def main(path: str) -> None:
    """The helper: compile the kernels of the spec at ``path`` (deleted once read)."""
    _die_with_parent()
    spec = json.loads(Path(path).read_text())
    Path(path).unlink()
    import pyopencl as cl  # sets PYOPENCL_HOME: the loader's variables go on top

    from backend_opencl.runtime import icd

    icd.set_env(spec["loader_env"])
    cl_device = next(d for p in cl.get_platforms()
                     if [p.name, p.version] == spec["platform"]
                     for d in p.get_devices() if d.name == spec["device"])
    _compile(cl, cl_device, spec["source"], [KernelLaunch(n, tuple(wg), tuple(sizes))
                                             for n, wg, sizes in spec["kernels"]])


def _die_with_parent() -> None:
    if hasattr(signal, "alarm"):
        signal.alarm(DEADLINE_S)  # SIGALRM's default action ends the process
    if sys.platform.startswith("linux"):
        import ctypes

        pr_set_pdeathsig = 1
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)


def _compile(cl: Any, cl_device: Any, source: str, kernels: list[KernelLaunch]) -> None:
    """Build ``source`` as the caller did and launch one work-group of each kernel."""
    import numpy as np

    from backend_opencl.runtime.opencl.memory import NO_CACHE

    context = cl.Context([cl_device])
    queue = cl.CommandQueue(context)
    program = cl.Program(context, source).build(options=[], devices=[cl_device], **NO_CACHE)
    zero = np.zeros(1, np.uint8)
    for name, (wgx, wgy), arg_bytes in kernels:
        kernel = cl.Kernel(program, name)
        buffers = [cl.Buffer(context, cl.mem_flags.READ_WRITE, max(n, 1)) for n in arg_bytes]
        for index, buf in enumerate(buffers):  # kept alive until the launch is done
            cl.enqueue_fill_buffer(queue, buf, zero, 0, buf.size)
            kernel.set_arg(index, buf)
        cl.enqueue_nd_range_kernel(queue, kernel, (wgx, wgy), (wgx, wgy)).wait()


if __name__ == "__main__":
    main(sys.argv[1])
