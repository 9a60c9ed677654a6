"""A compiled module: its kernels are attributes you call with arrays.

``mod.fused_kernel(alpha, A_list, B, C, D, num_groups=n)`` checks every argument against
the kernel's signature first (count, dtype, shape, strides, group sizes:
:mod:`backend_opencl.exec.arguments`) and raises
:class:`~tensorlang.diagnostics.LaunchError` before anything runs.  The runtime binds
what passed (:class:`~backend_opencl.exec.runtime.KernelRuntime`): on OpenCL
(:mod:`backend_opencl.runtime.opencl.kernels`) numpy arrays bind to memrefs by shape and
strides (no silent copies into another layout), on a CPU device aligned numpy arrays are
used in place (``CL_MEM_USE_HOST_PTR``: the kernel writes into them), elsewhere, or when
misaligned, they are copied and results copied back into the arrays the kernel writes;
pyopencl arrays are used in place and a group of pyopencl arrays is bound on the device
(see ``docs/abi.md``, "Groups of pyopencl arrays" and "numpy arrays in place").  On a
SYCL queue (:mod:`backend_opencl.runtime.sycl.kernels`) USM memory binds in place and
numpy arrays are copied.  A kernel may be called from several threads at once.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

import numpy as np
from numpy.typing import DTypeLike

from backend_opencl.abi import ArgAbi
from backend_opencl.exec.arguments import (
    check_call,
    check_contract,
    check_scalar,
    raise_recorded_violation,
)
from backend_opencl.exec.runtime import Binder, Built, KernelRuntime
from backend_opencl.runtime import host, profile
from tensorlang.ir.core import Value
from tensorlang.ir.types import GroupType, MemRefType, ScalarType

if TYPE_CHECKING:  # the code generator is not imported when a module comes from a cache
    from backend_opencl.emit import EmittedProgram, KernelInfo
    from backend_opencl.emit.guards import GuardSite
    from tensorlang.ir.core import Program
    from tensorlang.schedule.contracts import GroupCount, LaunchCheck


def aligned_empty(shape: tuple[int, ...], dtype: DTypeLike, order: Literal["C", "F"] = "F",
                  align: int = 128) -> np.ndarray:
    """An uninitialized numpy array whose data is ``align``-byte aligned: on CPU devices
    such arrays bind to kernels in place (no copy; 128 bytes is PoCL's
    ``CL_DEVICE_MEM_BASE_ADDR_ALIGN``)."""
    dtype = np.dtype(dtype)
    count = int(np.prod(shape, dtype=np.int64))
    flat = host.aligned_empty(count * dtype.itemsize, align).view(dtype)
    return flat.reshape(shape, order=order)


@dataclass(frozen=True)
class StoredPlan:
    """The part of a kernel's plan that launches need."""

    work_group_size: tuple[int, int]


@dataclass(frozen=True)
class StoredKernel:
    """A kernel's launch facts without the code generator's objects (picklable, and
    loaded without importing the code generator)."""

    name: str
    c_name: str
    plan: StoredPlan
    abi: tuple[ArgAbi, ...]
    guards: tuple[GuardSite, ...] = field(default=())
    checks: tuple[LaunchCheck, ...] = field(default=())
    groups: GroupCount | None = None
    """``tensorlang.schedule.contracts.GroupCount``: the default ``num_groups``."""

    @staticmethod
    def of(info: KernelInfo | StoredKernel, checks: tuple[LaunchCheck, ...] = ()
           ) -> StoredKernel:
        """The stored form of a ``KernelInfo`` (argument values detached from the IR) and
        its launch checks."""
        abi = tuple(ArgAbi(Value(a.value.type, a.value.name), a.name, a.params)
                    for a in info.abi)
        return StoredKernel(info.name, info.c_name, StoredPlan(info.plan.work_group_size), abi,
                            checks=checks, groups=info.groups)


@dataclass(frozen=True)
class StoredProgram:
    """OpenCL C source and its kernels' launch facts, as a disk cache keeps them."""

    source: str
    kernels: dict[str, StoredKernel]


class KernelTable:
    """Kernels by name, callable as attributes (``module.name(...)``)."""

    source: str
    kernels: dict[str, Kernel]

    def stored(self) -> tuple[StoredProgram, dict[str, frozenset[int]]] | None:
        """What a disk cache keeps of this module (None with bounds guards, whose
        diagnostics need the kernels' IR): source, launch facts and written arguments."""
        if any(k.info.guards for k in self.kernels.values()):
            return None
        kernels = {name: StoredKernel.of(k.info, k.checks) for name, k in self.kernels.items()}
        return StoredProgram(self.source, kernels), {n: k.written
                                                      for n, k in self.kernels.items()}

    def __getattr__(self, name: str) -> Kernel:
        kernels = self.__dict__.get("kernels", {})
        if name in kernels:
            return kernels[name]
        raise AttributeError(f"module has no kernel {name!r} (kernels: {', '.join(kernels)})")

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | set(self.kernels))


def written_by_kernel(emitted: EmittedProgram | StoredProgram, program: Program | None,
                      written: dict[str, frozenset[int]] | None
                      ) -> dict[str, frozenset[int]]:
    """The arguments each kernel writes: ``written`` when a disk cache kept them, else
    from the kernels' IR in ``program``."""
    if written is not None:
        return written
    from tensorlang.passes.effects import written_arguments

    assert program is not None
    return {name: frozenset(written_arguments(program.function(name)))
            for name in emitted.kernels}


class Module(KernelTable):
    """The kernels of one compiled program, callable by name, on one runtime."""

    def __init__(self, emitted: EmittedProgram | StoredProgram, program: Program | None,
                 runtime: KernelRuntime, written: dict[str, frozenset[int]] | None = None,
                 checks: dict[str, tuple[LaunchCheck, ...]] | None = None,
                 built: Built | None = None) -> None:
        """``emitted``: an ``EmittedProgram`` (then ``program`` gives the written
        arguments) or a ``StoredProgram`` from a disk cache with ``written``;
        ``checks``: each kernel's launch checks (None: those ``emitted`` keeps);
        ``built``: ``emitted``'s source already built on ``runtime`` (None: built here)."""
        self.source = emitted.source
        self.runtime = runtime
        self.device = runtime.device
        names = tuple(info.c_name for info in emitted.kernels.values())
        self.built: Built = built if built is not None else runtime.build(emitted.source, names)
        written = written_by_kernel(emitted, program, written)
        self.kernels = {
            name: Kernel(info, self.built, runtime, written[name],
                         checks.get(name, ()) if checks is not None
                         else getattr(info, "checks", ()))
            for name, info in emitted.kernels.items()
        }


class Kernel:
    """One callable kernel: ``kernel(*args, num_groups=n)``."""

    def __init__(self, info: KernelInfo | StoredKernel, built: Built, runtime: KernelRuntime,
                 written: frozenset[int], checks: tuple[LaunchCheck, ...] = ()) -> None:
        """``built``: the module's built program, which has this kernel."""
        self.info = info
        self.name = info.name
        self.runtime = runtime
        self.device = runtime.device
        self._built = built
        self._handle: object = None
        self.written = written
        self.checks = checks
        """The launch checks (``tensorlang.schedule.contracts.LaunchCheck``) run before a launch."""
        self._records: list[object] = []  # zeroed bounds-guard records, one per launch in flight
        self._max_groups = runtime.max_groups(info.plan.work_group_size)
        self._lock = threading.Lock()

    @property
    def handle(self) -> object:
        """The runtime's kernel object (:meth:`KernelRuntime.launch` takes it), made at
        first use: the launches of a plan, the common caller, make their own."""
        if self._handle is None:
            with self._lock:
                if self._handle is None:
                    self._handle = self._built.kernel(self.info.c_name)
        return self._handle

    def __call__(self, *args: object, num_groups: int | None = None) -> None:
        """Check the arguments, run ``num_groups`` work-groups (omitted: as many as the
        arguments' group modes have entries, see
        :func:`~backend_opencl.exec.arguments.default_num_groups`), copy results back."""
        groups = check_call(self.name, self.info, args, num_groups, self._max_groups)
        checked = [self.bind(i, a, v, groups)
                   for i, (a, v) in enumerate(zip(self.info.abi, args, strict=True))]
        if groups == 0:
            return
        if self.checks:
            check_contract(self, tuple(view for view, _ in checked), groups)
        self.launch([binder for _, binder in checked], groups)

    def launch(self, binders: list[Binder], num_groups: int) -> None:
        """Bind, launch, wait, copy results back and raise a recorded bounds violation."""
        start = time.perf_counter()
        kernel_args: list[object] = []
        backs = []
        for binder in binders:
            values, back = binder()
            kernel_args += values
            if back is not None:
                backs.append(back)
        record = self.bounds_record() if self.info.guards else None
        if record is not None:
            kernel_args.append(self.runtime.record_arg(record))
        event = self.runtime.launch(self.handle, kernel_args, num_groups,
                                    self.info.plan.work_group_size)
        self.runtime.finish(event)  # the queue is in order: everything before is done
        for back in backs:
            back()
        if profile.enabled():
            self.runtime.profiled(self.name, event, time.perf_counter() - start)
        if record is not None:
            raise_recorded_violation(self.name, self.info, self.runtime.read_record(record))
            with self._lock:  # none recorded: the record is still zero, pool it
                self._records.append(record)

    def bounds_record(self) -> object:
        """A zeroed bounds-guard error record of this launch's own (records stay pooled
        while they stay 0, so concurrent launches never share one)."""
        with self._lock:
            if self._records:
                return self._records.pop()
        return self.runtime.record()

    def bind(self, index: int, arg: ArgAbi, value: object, num_groups: int
             ) -> tuple[object, Binder]:
        """Check argument ``index``; return what the launch checks read of it and how to
        bind it (LaunchError naming the argument when it does not fit)."""
        where = f"{self.name}: argument {index + 1} (%{arg.value.name}: {arg.type})"
        t, writes = arg.type, index in self.written
        if isinstance(t, ScalarType):
            scalar = check_scalar(value, t, where)
            return value, lambda: ([scalar], None)
        if isinstance(t, MemRefType):
            return self.runtime.memref(value, t, arg, where, writes)
        assert isinstance(t, GroupType)
        return self.runtime.group(value, t, arg, where, writes, num_groups)
