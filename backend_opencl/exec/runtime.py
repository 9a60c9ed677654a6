"""The protocols the executors are written against: what a runtime gives a module's
kernels (:class:`KernelRuntime`) and a StableHLO executable's plan (:class:`PlanRuntime`).

One module class (:mod:`backend_opencl.exec.module`) and one plan executor
(:mod:`backend_opencl.exec.executable`) run on every runtime; a runtime is a small object
implementing these protocols: OpenCL through pyopencl
(:mod:`backend_opencl.runtime.opencl.kernels`, :mod:`backend_opencl.runtime.opencl.plans`)
and SYCL queues through dpctl (:mod:`backend_opencl.runtime.sycl.kernels`,
:mod:`backend_opencl.runtime.sycl.plans`).  The composition root
(:mod:`backend_opencl.api.compiler`) picks the runtime for a device; ``exec`` imports no
runtime.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Generic, Protocol, TypeVar

import numpy as np

from backend_opencl.abi import ArgAbi
from backend_opencl.exec.arguments import LaunchFacts
from tensorlang.ir.types import GroupType, MemRefType
from tensorlang.plan import Launch, Plan

BufferT = TypeVar("BufferT")
"""The runtime's memory of one plan buffer (a pyopencl array, USM memory)."""
EventT = TypeVar("EventT")
"""The runtime's event of an enqueued command."""
KernelT = TypeVar("KernelT")
"""The runtime's kernel object."""
KernelT_co = TypeVar("KernelT_co", covariant=True)
RecordT = TypeVar("RecordT")
"""The runtime's device memory of a bounds-guard error record."""

Writeback = Callable[[], None]
"""Copies what a kernel wrote back into the caller's arrays (after the launch's wait)."""

Binder = Callable[[], tuple[list[object], Writeback | None]]
"""Binds one checked argument at launch: its kernel arguments and how to copy results
back (None: nothing to copy)."""


class Device(Protocol):
    """What every device tlc runs on has: a name and a key for caches."""

    @property
    def name(self) -> str:
        """The device's name."""

    @property
    def key(self) -> str:
        """Identity for caches (device, driver, runtime)."""


class Built(Protocol[KernelT_co]):
    """A program built for a device: its kernels by C name."""

    def kernel(self, c_name: str) -> KernelT_co:
        """The runtime's handle of kernel ``c_name`` (launched by :meth:`KernelRuntime.launch`)."""


class Run(Protocol[BufferT, EventT]):
    """What a runtime uses of one call's state (the executor's run or a prepared frame):
    its buffers and what it has in flight (:class:`InFlight`)."""

    last: EventT | None  # the event of the last command (None: none in flight)
    keep: list[object]

    def get(self, bid: int) -> BufferT:
        """The memory of buffer ``bid`` in this call."""

    def borrow(self, bid: int, arr: BufferT) -> None:
        """Make ``arr`` (memory that is not the pool's) buffer ``bid``."""

    def enqueued(self, event: EventT | None) -> None:
        """Note ``event`` as the last command's."""

    def transfer(self, event: EventT | None) -> None:
        """Note a host transfer's event as the last command's, kept until the wait."""


class Kernel(Protocol[KernelT_co]):
    """What a runtime uses of a module's kernel (:class:`~backend_opencl.exec.module.Kernel`)."""

    @property
    def name(self) -> str:
        """The kernel's name."""

    @property
    def info(self) -> LaunchFacts:
        """Its launch facts."""

    @property
    def handle(self) -> KernelT_co:
        """The runtime's kernel object."""


class Module(Protocol[KernelT_co]):
    """What a runtime uses of a module (:class:`~backend_opencl.exec.module.Module`)."""

    @property
    def built(self) -> Built[KernelT_co]:
        """Its program built for the device."""


class Executable(Protocol[BufferT, EventT]):
    """What a runtime uses of an executable
    (:class:`~backend_opencl.exec.executable.Executable`)."""

    plan: Plan
    name: str
    storage: list[np.dtype]
    written: frozenset[int]
    arg_dtypes: list[np.dtype | None]
    result_dtypes: list[np.dtype | None]
    in_place_results: tuple[bool, ...]
    params: tuple[tuple[int, np.dtype | None, tuple[int, ...]], ...]
    """(buffer, dtype or None for a token, shape) of each parameter."""

    @property
    def module(self) -> object:
        """Its kernels (an :class:`~backend_opencl.exec.module.Module`; None: it launches
        none)."""

    @property
    def runtime(self) -> PlanRuntime[BufferT, EventT]:
        """Its runtime."""

    @property
    def device(self) -> Device:
        """Its device."""

    @property
    def poison(self) -> bool:
        """Whether new buffers are filled with 0xFF bytes."""

    def new_buffer(self, bid: int) -> BufferT:
        """New memory for buffer ``bid``."""

    def constant(self, bid: int) -> BufferT:
        """The memory of constant buffer ``bid``."""

    def __call__(self, *arrays: object) -> tuple[np.ndarray | None, ...]:
        """A plain call."""


class KernelRuntime(Protocol[KernelT, EventT, RecordT]):
    """What a module's kernels need of a runtime: builds, argument binding, launches."""

    @property
    def device(self) -> Device:
        """The device (a ``runtime.Device`` or a ``SyclDevice``)."""

    def build(self, source: str, names: Sequence[str]) -> Built[KernelT]:
        """OpenCL C ``source`` built for the device (cached), with kernels ``names``."""

    def warm_up(self, text: str) -> None:
        """Start whatever the device's compiler sets up once per process, in the
        background, before the program ``text`` is lowered and built."""

    def max_groups(self, work_group_size: tuple[int, int]) -> int:
        """The most work-groups of ``work_group_size`` one launch may have."""

    def memref(self, value: object, t: MemRefType, arg: ArgAbi, where: str,
               writes: bool) -> tuple[object, Binder]:
        """Check a memref argument; return what the launch checks read of it (an array
        with ``shape``) and how to bind it.  LaunchError naming ``where``."""

    def group(self, value: object, t: GroupType, arg: ArgAbi, where: str, writes: bool,
              num_groups: int) -> tuple[object, Binder]:
        """Check a group argument; return what the launch checks read of it and how to
        bind it."""

    def record(self) -> RecordT:
        """New device memory holding a zeroed bounds-guard error record."""

    def record_arg(self, record: RecordT) -> object:
        """The kernel argument of a record from :meth:`record`."""

    def read_record(self, record: RecordT) -> np.ndarray:
        """The longs of a record (after the launch writing it has run)."""

    def launch(self, kernel: KernelT, args: Sequence[object], num_groups: int,
               work_group_size: tuple[int, int]) -> EventT:
        """Enqueue ``num_groups`` work-groups of kernel handle ``kernel``; its event."""

    def finish(self, event: EventT) -> None:
        """Wait for ``event`` and everything enqueued before it."""

    def profiled(self, name: str, event: EventT, seconds: float) -> None:
        """Record a checked call of kernel ``name`` in the profile (``TLC_PROFILE``)."""


class PlanRuntime(Protocol[BufferT, EventT]):
    """What a StableHLO executable needs of a runtime beyond its module's kernels: its
    buffers, argument binding, transfers and waits (a run's ``last`` event orders them).
    """

    @property
    def device(self) -> Device:
        """The device."""

    def max_bytes(self) -> int:
        """The device's largest buffer in bytes (0: unknown)."""

    def frames(self, exe: Executable[BufferT, EventT], direct: Callable[[Launch], bool]
               ) -> Any:
        """Prepared frames for ``exe``'s plan (each a whole call's buffers and enqueues,
        taken and given back by calls), or None to run the plan step by step.  ``direct``
        says which launches bind their buffers straight."""

    def prewarm(self, exe: Executable[BufferT, EventT], launches: Sequence[Launch]
                ) -> Callable[[], None] | None:
        """Start compiling the kernels of ``launches`` (``exe``'s direct launches, in plan
        order) elsewhere while the first call runs, where the runtime can; the function
        that stops it, to call when the first call returns (None: nothing started)."""

    def dispatch(self, exe: Executable[BufferT, EventT], args: list[object], frames: Any
                 ) -> tuple[object, ...]:
        """A call with checked ``args`` that does not wait, where the runtime can (on
        ``frames``); else a plain call's results."""

    def quick_dispatch(self, exe: Executable[BufferT, EventT], frames: Any
                       ) -> Callable[[Sequence[object]], tuple[object, ...] | None] | None:
        """The short way through ``exe``'s common asynchronous calls on ``frames``: called
        with unchecked arguments, it runs the call and returns its results, or returns
        None at once for any call it does not take (None: the runtime has none)."""

    def check_argument(self, exe: Executable[BufferT, EventT], i: int, value: object,
                       bid: int) -> object | None:
        """Argument ``i`` as the runtime binds it when it is device memory the runtime
        knows (checked: context, layout), else None (numpy is checked by the executor)."""

    def new_buffer(self, exe: Executable[BufferT, EventT], bid: int) -> BufferT:
        """New memory for buffer ``bid`` (filled with 0xFF bytes when ``exe.poison``)."""

    def pool_key(self, exe: Executable[BufferT, EventT], bid: int) -> object:
        """The key under which buffer ``bid``'s memory is pooled between calls."""

    def upload(self, host: np.ndarray) -> BufferT:
        """New device memory holding ``host`` (a constant of the plan)."""

    def bind(self, exe: Executable[BufferT, EventT], run: Run[BufferT, EventT], bid: int,
             arg: object, profiling: bool, snapshot: bool) -> None:
        """Make checked ``arg`` the contents of parameter buffer ``bid`` in ``run``: the
        caller's memory itself only when the plan never writes ``bid`` (``exe.written``),
        else a copy of its own (kernels declare their buffers ``restrict`` on that:
        :func:`tensorlang.plan.distinct_argument_kernels`)."""

    def copy(self, exe: Executable[BufferT, EventT], run: Run[BufferT, EventT], dst: int,
             src: int) -> None:
        """Enqueue a copy of buffer ``src`` into buffer ``dst``."""

    def direct_launch(self, module: Module[object], kernel: Kernel[object], num_groups: int
                      ) -> Callable[[Run[BufferT, EventT], Sequence[BufferT]], None]:
        """A launch of ``kernel`` (a module's :class:`~backend_opencl.exec.module.Kernel`)
        binding its buffers straight (one pointer each), enqueued without waiting."""

    def checked_view(self, exe: Executable[BufferT, EventT], run: Run[BufferT, EventT],
                     bid: int) -> object:
        """Buffer ``bid`` as a module kernel's checked call takes it."""

    def read(self, exe: Executable[BufferT, EventT], run: Run[BufferT, EventT], bid: int,
             n: int) -> np.ndarray:
        """A copy of buffer ``bid``'s first ``n`` elements once the commands before ran."""

    def write(self, exe: Executable[BufferT, EventT], run: Run[BufferT, EventT], bid: int,
              flat: np.ndarray) -> None:
        """Make buffer ``bid`` hold ``flat`` for the commands enqueued after."""

    def collect(self, exe: Executable[BufferT, EventT], run: Run[BufferT, EventT],
                hosts: Sequence[np.ndarray | None], profiling: bool
                ) -> tuple[np.ndarray | None, ...]:
        """The results as numpy arrays after one wait (None for a token)."""

    def abort(self) -> None:
        """Wait for everything in flight (a call failed; its memory is given back)."""

    def result_hosts(self, exe: Executable[BufferT, EventT]) -> tuple[bool, ...]:
        """Which results kernels write straight into fresh host arrays."""

    def result_host(self, exe: Executable[BufferT, EventT], run: Run[BufferT, EventT],
                    bid: int) -> np.ndarray:
        """A fresh host array that is result buffer ``bid`` of ``run``."""



class InFlight(Generic[EventT]):
    """The commands one call has in flight on an in-order queue: the event of the last
    (what the call waits for) and the events of host transfers, kept until that wait."""

    def __init__(self) -> None:
        self.last: EventT | None = None
        """The event of the call's last command (None: none in flight)."""
        self.keep: list[object] = []
        """Events of host transfers not yet waited for: pyopencl's event of such a copy
        waits for it when dropped, holding the GIL."""

    def enqueued(self, event: EventT | None) -> None:
        """Note ``event`` (None: nothing was enqueued) as the last command's."""
        if event is not None:
            self.last = event

    def transfer(self, event: EventT | None) -> None:
        """Note the event of a copy between host and device memory (None: nothing was
        enqueued) as the last command's, and keep it until the call's wait."""
        if event is not None:
            self.keep.append(event)
            self.last = event
