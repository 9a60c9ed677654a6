"""The composition root: public compile functions and what the ``tlc`` CLI calls.

``compile_program`` parses (if given text), runs the back end's pass pipeline on a copy
(the caller's program is never modified), generates OpenCL C for the chosen device,
builds it once (cached) and returns a :class:`~backend_opencl.exec.module.Module`.

``compile_stablehlo_program`` keeps what lowering a StableHLO program produced (the host
plan, the OpenCL C source and its kernels' launch facts) in a disk cache keyed by the
text, entry, device and a hash of tlc's own sources, so a second process skips parsing,
lowering and code generation (and imports none of them); the OpenCL build itself comes
from the driver's or pyopencl's cache (``runtime/build.py``).
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, TypeGuard, cast

from backend_opencl import progress
from backend_opencl.api.collector import collector_paused
from backend_opencl.api.tuned import cached_target
from backend_opencl.memo import Memo
from tensorlang.diagnostics import TlcError
from tensorlang.ir.core import Program

if TYPE_CHECKING:
    import numpy as np

    from backend_opencl.emit import EmittedProgram, Target
    from backend_opencl.exec.executable import Executable
    from backend_opencl.exec.module import Module, StoredProgram
    from backend_opencl.exec.runtime import Built, KernelRuntime, PlanRuntime
    from backend_opencl.runtime.opencl.devices import Device
    from backend_opencl.runtime.sycl.queue import SyclDevice
    from frontend.ir.core import Module as StableHLOModule
    from frontend.lower import Lowered
    from tensorlang.plan import Plan
    from tensorlang.schedule.contracts import LaunchCheck

    RunDevice = Device | SyclDevice
    """A device tlc runs on: an OpenCL device or a SYCL queue's."""
    CompileKey = tuple[str, str, str, str, int | None, bool]
    """What the disk cache keys a StableHLO compile by: text, filename, entry, the
    device's key, the number of host callbacks (None: none) and ``check_bounds``."""
    Stored = tuple[Plan, StoredProgram | None, dict[str, frozenset[int]] | None, str,
                   list[np.dtype | None], list[np.dtype | None]]
    """What the disk cache keeps of a compile: plan, stored program, written arguments,
    entry, argument and result dtypes."""


def as_program(program: object, filename: str = "<string>") -> Program:
    """``program`` itself, or tensor-language text parsed; TlcError for anything else."""
    if isinstance(program, Program):
        return program
    if isinstance(program, str):
        import tensorlang

        return tensorlang.parse(program, filename=filename)
    raise TlcError(f"error: expected tensor-language text or a Program, got "
                   f"{type(program).__name__}")


def target_from_device(device: Device) -> Target:
    """The code-generation target for ``device`` (the code generator is imported only
    when something is compiled; tests replace this function)."""
    from backend_opencl.emit.target import target_from_device as derive

    return derive(device)


def device_of(device: object) -> RunDevice:
    """The device tlc runs on for ``device``: a ``runtime.Device`` as it is, a
    ``dpctl.SyclQueue``'s :class:`~backend_opencl.runtime.sycl.queue.SyclDevice`, else
    the OpenCL device a spec (or None) picks (a spec of another type, such as a numpy
    integer, is matched by its text, as the device choice always read it)."""
    from backend_opencl.runtime import Device, get_device
    from backend_opencl.runtime.sycl.queue import SyclDevice, is_queue, sycl_device

    if isinstance(device, (Device, SyclDevice)):
        return device
    if is_queue(device):
        return sycl_device(device)
    return get_device(device if device is None or isinstance(device, (str, int))
                      else str(device))


def facts_of(dev: RunDevice) -> Device:
    """The OpenCL device facts code generation and tuning use for ``dev`` (a SYCL
    device's are those of the same device as pyopencl sees it)."""
    from backend_opencl.runtime.sycl.queue import SyclDevice

    return dev.facts if isinstance(dev, SyclDevice) else dev


def kernel_runtime(dev: RunDevice) -> KernelRuntime:
    """The runtime a module's kernels run on for device ``dev``."""
    from backend_opencl.runtime.sycl.queue import SyclDevice

    if isinstance(dev, SyclDevice):
        from backend_opencl.runtime.sycl.kernels import SyclKernels

        return SyclKernels(dev)
    from backend_opencl.runtime.opencl.kernels import OpenCLKernels

    return OpenCLKernels(dev)


def plan_runtime(dev: RunDevice) -> PlanRuntime:
    """The runtime a StableHLO executable's plan runs on for device ``dev``."""
    from backend_opencl.runtime.sycl.queue import SyclDevice

    if isinstance(dev, SyclDevice):
        from backend_opencl.runtime.sycl.plans import SyclPlans

        return SyclPlans(dev)
    from backend_opencl.runtime.opencl.plans import OpenCLPlans

    return OpenCLPlans(dev)


VERIFY_ENV = "TLC_VERIFY"
"""``1``: programs lowered from StableHLO get the static checks of programs users write
(``check-bounds``), as tlc's tests run them."""


def verify_lowered() -> bool:
    """Whether programs lowered from StableHLO run ``check-bounds`` (:data:`VERIFY_ENV`).

    Off by default: the lowering's accesses are in bounds by construction (its tests and
    the conformance suites check that with this on), and proving it took a quarter of a
    model's cold compile (``train_cnn_adamw``: 2.2 of 9 s)."""
    return os.environ.get(VERIFY_ENV, "0") == "1"


def _after_passes(program: Program, target: Target, check_bounds: bool = False,
                  contracts: dict[str, tuple[LaunchCheck, ...]] | None = None,
                  static_checks: bool = True) -> Program:
    """A copy of ``program`` after the back end's pass pipeline for ``target`` (with
    ``check_bounds``, ``check-bounds`` also marks the accesses that need run-time guards;
    without ``static_checks`` and ``check_bounds``, it does not run; where the target
    runs one work-item per group, functions that leave it the choice get no barriers).
    With ``contracts``, each function's launch checks are put there and, without
    ``check_bounds``, the accesses the host cannot check get run-time guards (with it,
    every access is guarded and only the checks of group member indices are kept)."""
    from backend_opencl.emit.target import single_item_groups
    from tensorlang.ir.clone import clone_program
    from tensorlang.passes import DEFAULT_PIPELINE, run_pipeline

    work = clone_program(program)
    pipeline = DEFAULT_PIPELINE
    if single_item_groups(target):
        pipeline = pipeline.replace("insert-barrier", "insert-barrier{single_item=true}")
    if not static_checks:
        pipeline = ",".join(p for p in pipeline.split(",") if p != "check-bounds")
    if check_bounds:  # last: the loads and stores other passes create are marked too
        pipeline += ",check-bounds{guards=true}"
    run_pipeline(work, pipeline)
    if contracts is not None:
        contracts.update(_launch_contracts(work, guard=not check_bounds))
    return work


def _launch_contracts(program: Program, guard: bool) -> dict[str, tuple[LaunchCheck, ...]]:
    """Each function's launch checks (``tensorlang.schedule.launch``); with ``guard``,
    mark the instructions they cannot cover for run-time guards."""
    from tensorlang.schedule.launch import contract
    from tensorlang.verify.bounds import GUARD, size_pairs

    found = {}
    for func in program.functions:
        terms = contract(func, size_pairs)
        if guard:
            for inst, mark in terms.residual:
                inst.attrs[GUARD] = mark
            found[func.name] = terms.checks
        else:  # every access is guarded: keep what guards cannot see, a member index
            found[func.name] = tuple(c for c in terms.checks if c.kind == "member")
    return found


def lower(program: Program, target: Target | None = None, check_bounds: bool = False,
          contracts: dict[str, tuple[LaunchCheck, ...]] | None = None,
          static_checks: bool = True) -> EmittedProgram:
    """Run the back end's passes on a copy of ``program`` and generate OpenCL C
    (``check_bounds``: with run-time bounds guards, docs/abi.md; ``contracts``: filled
    with the launch checks, and the accesses they cannot cover guarded;
    ``static_checks``: see :func:`_after_passes`)."""
    from backend_opencl.emit import DEFAULT_TARGET, emit_program

    target = target or DEFAULT_TARGET
    return emit_program(_after_passes(program, target, check_bounds, contracts,
                                      static_checks), target)


def compile_program(program: object, device: object = None, target: Target | None = None,
                    check_bounds: bool = False, launch_checks: bool = True,
                    restrict_kernels: frozenset[str] = frozenset(),
                    static_checks: bool = True) -> Module:
    """Compile tensor-language text or a Program for ``device``; return a Module.

    ``target`` overrides the code-generation target derived from the device (tests use it
    to run GPU-style tiling on a CPU device).  ``check_bounds`` guards every access isl
    cannot prove in bounds; a violation raises ``BoundsError`` after the launch.
    ``launch_checks`` (the default): each launch checks the sizes the kernel's accesses
    need before it runs, and the accesses the host cannot check are guarded (docs/abi.md,
    "Launch checks"); StableHLO executables, whose plans bind their own buffers, skip it.
    ``restrict_kernels``: kernels whose buffer arguments never share memory one of them
    writes (``Target.restrict_kernels``).  ``static_checks`` (the default): an access isl
    proves out of bounds is a CompileError (``check-bounds``); programs lowered from
    StableHLO skip the proof unless :func:`verify_lowered`.
    """
    from backend_opencl.exec.module import Module

    prog = as_program(program)
    dev = device_of(device)
    with progress.compiling(_program_name(prog)), collector_paused():
        if target is None:  # the device's facts plus register blocks tuned by ``tlc tune``
            facts = facts_of(dev)
            target = cached_target(prog, facts, target_from_device(facts))
        if restrict_kernels:
            target = replace(target, restrict_kernels=restrict_kernels)
        contracts: dict[str, tuple[LaunchCheck, ...]] | None = {} if launch_checks else None
        progress.phase("passes")
        emitted = lower(prog, target, check_bounds, contracts, static_checks)
        progress.phase(f"OpenCL build of {len(emitted.kernels)} kernels")
        return Module(emitted, prog, kernel_runtime(dev), checks=contracts)


def _program_name(program: Program) -> str:
    """The file a program was parsed from, for progress lines."""
    loc = program.functions[0].loc if program.functions else None
    return loc.file if loc is not None else "<program>"


def tensor_language(program: object, entry: str = "main",
                    host_callbacks: int | None = None) -> Program:
    """The tensor-language program of ``program``: itself (text is parsed), or for a
    StableHLO module the kernels its function ``entry`` lowers to, exactly as
    :func:`compile_stablehlo_program` compiles them (so blocks ``tlc tune`` caches for
    them apply there; ``host_callbacks``: how many Python functions its host callbacks
    would have, None: none)."""
    if not _is_stablehlo_module(program):
        return as_program(program)
    return _kernels_program(_lowered(program, entry, host_callbacks))


def _lowered(module: StableHLOModule, entry: str, host_callbacks: int | None) -> Lowered:
    """StableHLO ``module``'s function ``entry`` lowered, its small launches merged as
    :func:`_executable` compiles them."""
    from frontend.lower import lower_function, merged_launches

    return merged_launches(lower_function(_part_with(module.parts or [module], entry), entry,
                                          host_callbacks))


def _restrict_kernels(program: object, entry: str, host_callbacks: int | None
                      ) -> frozenset[str]:
    """For ``tlc compile --emit cl``: the kernels of a StableHLO module declared with
    ``restrict`` arguments, as :func:`compile_stablehlo_program` compiles them (none for
    a tensor-language program)."""
    if not _is_stablehlo_module(program):
        return frozenset()
    lowered = _lowered(program, entry, host_callbacks)
    return distinct_arguments(lowered.plan, _kernels_program(lowered))


def distinct_arguments(plan: Plan, program: Program) -> frozenset[str]:
    """The kernels of ``program`` that ``plan`` never launches with arguments sharing
    memory one of them writes (:func:`tensorlang.plan.distinct_argument_kernels`)."""
    from tensorlang.plan import distinct_argument_kernels

    return distinct_argument_kernels(plan, (f.name for f in program.functions))


def emit(program: object, kind: str, device: object = None, entry: str = "main",
         check_bounds: bool = False, host_callbacks: int | None = None) -> str:
    """Text for ``tlc compile --emit kind``: ``tl``, ``cl`` or ``schedule``.

    A StableHLO module is lowered first (:func:`tensor_language`): ``tl`` prints its
    kernels.
    """
    prog = tensor_language(program, entry, host_callbacks)
    if kind == "tl":
        return str(prog)
    if kind == "cl":
        target = replace(_target_or_default(device),
                         restrict_kernels=_restrict_kernels(program, entry, host_callbacks))
        return lower(prog, target, check_bounds).source
    if kind == "schedule":
        from backend_opencl.emit.schedule_text import schedule_text

        target = _target_or_default(device)
        return schedule_text(_after_passes(prog, target), target)
    raise TlcError(f"error: unknown --emit kind {kind!r} (use tl, cl or schedule)")


def _target_or_default(device: object) -> Target:
    """The device's target, or the default CPU target when no OpenCL device is available."""
    from backend_opencl.emit import DEFAULT_TARGET
    from backend_opencl.runtime import DeviceError

    try:
        return target_from_device(facts_of(device_of(device)))
    except DeviceError:
        if device is not None:
            raise
        return DEFAULT_TARGET


def _is_stablehlo_module(program: object) -> TypeGuard[StableHLOModule]:
    from frontend.ir.core import Module as StableHLOModule

    return isinstance(program, StableHLOModule)


def _kernels_program(lowered: Lowered) -> Program:
    """The lowered kernels parsed, without dead code (index arithmetic nobody reads)."""
    import tensorlang
    from tensorlang.passes import run_pipeline

    program = tensorlang.parse(lowered.kernels or "", filename="<lowered>")
    run_pipeline(program, "dce")
    return program


EXECUTABLES_KEPT = 128
"""The most compiled StableHLO executables a process keeps in memory (the disk cache
answers a later compile of an older one in ~0.1 s)."""
_EXECUTABLES: Memo[CompileKey | tuple[str, str, str, str, int | None, bool, object],
                   Executable] = Memo(EXECUTABLES_KEPT)


def compile_stablehlo_program(text: str, device: object = None, filename: str = "<string>",
                              entry: str = "main", check_bounds: bool = False,
                              host_callbacks: Sequence[Callable[..., object]] | None = None
                              ) -> Executable:
    """Parse, verify and lower StableHLO text; build its kernels (one program); cached.

    ``check_bounds``: the kernels get run-time bounds guards (their locations are in
    the lowered tensor language, ``<lowered>``).  ``host_callbacks``: the Python functions
    of the program's host callbacks (``stablehlo.custom_call
    @xla_ffi_python_cpu_callback``, whose ``mhlo.backend_config = {index = N}`` names
    one), as jax's lowering keeps them; without them such a program is a CompileError at
    the callback.  The cache keeps the executable without them (keyed by their number);
    the one returned calls them."""
    from backend_opencl.runtime.sycl.queue import SyclDevice

    dev = device_of(device)
    count = None if host_callbacks is None else len(host_callbacks)
    key = (text, filename, entry, dev.key, count, check_bounds)  # the disk cache's key
    # an executable runs on its queue
    memo = key + (dev.queue,) if isinstance(dev, SyclDevice) else key
    exe = _EXECUTABLES.get(memo)
    if exe is None:
        with progress.compiling(filename), collector_paused():
            disk = _lowered_cache_file(key)
            progress.phase("load from the disk cache")
            exe = _load_executable(disk, dev) if disk is not None else None
            if exe is None:
                exe = _compile_stablehlo(text, dev, filename, entry, check_bounds, count)
                if disk is not None:
                    _store_executable(disk, exe)
        _EXECUTABLES[memo] = exe
    return exe.with_callbacks(host_callbacks) if host_callbacks else exe


def _compile_stablehlo(text: str, dev: RunDevice, filename: str, entry: str,
                       check_bounds: bool, callbacks: int | None) -> Executable:
    """Parse, verify and lower StableHLO text (``callbacks``: how many host callbacks the
    executable will have), and compile its kernels."""
    import frontend
    from frontend.lower import lower_function

    kernel_runtime(dev).warm_up(text)
    progress.phase("parse")
    module = frontend.parse(text, filename=filename)
    progress.phase("lower")
    lowered = lower_function(_part_with(module.parts or [module], entry), entry, callbacks)
    return _executable(lowered, dev, entry, check_bounds)


LOWERED_VERSION = 3
"""Bumped when the stored form changes."""
_SOURCE_HASH: list[str] = []


SOURCE_PACKAGES = ("frontend", "tensorlang", "backend_opencl")
"""The packages whose sources decide what a compile produces."""


def source_files() -> list[Path]:
    """tlc's own Python sources, sorted (those :func:`_source_hash` covers)."""
    root = Path(__file__).resolve().parents[2]  # backend_opencl/api/compiler.py
    return [root / name for name in _relative_sources(str(root))]


def _relative_sources(root: str) -> list[str]:
    """The paths of tlc's Python sources relative to ``root``, sorted (strings: Path
    objects made the source hash take ~10 ms, in every process's first compile)."""
    return sorted(f"{folder[len(root) + 1:]}/{name}"
                  for package in SOURCE_PACKAGES
                  for folder, _, names in os.walk(os.path.join(root, package))
                  for name in names if name.endswith(".py"))


def _source_hash() -> str:
    """A hash of tlc's own Python sources, by path, size and modification time (a
    changed compiler never reads old entries; stat is ~10x faster than reading them)."""
    if not _SOURCE_HASH:
        digest = hashlib.sha256(str(LOWERED_VERSION).encode())
        root = str(Path(__file__).resolve().parents[2])
        for name in _relative_sources(root):
            st = os.stat(f"{root}/{name}")
            digest.update(f"{name}:{st.st_size}:{st.st_mtime_ns};".encode())
        _SOURCE_HASH.append(digest.hexdigest())
    return _SOURCE_HASH[0]


def lowered_cache_directory() -> Path | None:
    """Where lowered programs are kept: the ``lowered`` folder of
    :mod:`backend_opencl.diskcache`; None when the disk cache is off or not safe."""
    from backend_opencl import diskcache

    return diskcache.folder(diskcache.LOWERED)


def _lowered_cache_file(key: CompileKey) -> Path | None:
    """The cache file of a compile (None: no disk cache, or bounds guards asked for)."""
    from backend_opencl import diskcache

    if key[-1]:  # check_bounds: diagnostics need the kernels' IR
        return None
    folder = lowered_cache_directory()
    if folder is None:
        return None
    digest = hashlib.sha256(repr(key).encode() + _source_hash().encode() +
                            diskcache.tune_bytes())
    return folder / f"{digest.hexdigest()}.pickle"


def _load_stored(path: Path, on_head: Callable[[object], None] | None = None
                 ) -> Stored | None:
    """(plan, stored program, written arguments, entry, argument and result dtypes) kept
    in ``path`` by this very tlc (its sources' hash tags the entry); None: a miss.
    ``on_head`` gets the entry's head first (:class:`EarlyBuild`)."""
    from backend_opencl import diskcache
    from tensorlang.plan import Plan

    stored = diskcache.read_pickle(path, _source_hash(), on_head)
    if isinstance(stored, tuple) and len(stored) == 6 and isinstance(stored[0], Plan):
        return cast("Stored", stored)  # written by _store_executable
    return None


class EarlyBuild:
    """The build of a stored program's OpenCL source, started in a thread as soon as
    the disk cache entry's head (source and kernel names) is read, so that the driver
    builds while the rest of the entry is unpickled (a cached PoCL build still
    preprocesses the source: ~40 ms for 35 kernels, against ~15 ms of unpickling)."""

    def __init__(self, runtime: KernelRuntime) -> None:
        self.runtime = runtime
        self._thread: threading.Thread | None = None
        self._built: tuple[str, Built] | None = None

    def start(self, head: object) -> None:
        """Build ``head``'s source in the background (a head of another form: nothing)."""
        if isinstance(head, tuple) and len(head) == 2 and isinstance(head[0], str):
            self._thread = threading.Thread(target=self._build, args=head, daemon=True,
                                            name="tlc-early-build")
            self._thread.start()

    def _build(self, source: str, names: tuple[str, ...]) -> None:
        try:
            self._built = (source, self.runtime.build(source, names))
        except Exception:  # noqa: S110 -- the module's own build reports it
            pass

    def result(self, source: str) -> Built | None:
        """The built program once ready, if it is ``source``'s (None: build it now)."""
        if self._thread is not None:
            self._thread.join()
        return self._built[1] if self._built and self._built[0] == source else None


def _load_executable(path: Path, dev: RunDevice) -> Executable | None:
    """The executable stored in ``path``, or None when there is none (or it is unreadable)."""
    runtime = kernel_runtime(dev)
    early = EarlyBuild(runtime)
    stored = _load_stored(path, early.start)
    if stored is None:
        return None
    from backend_opencl.exec.executable import Executable
    from backend_opencl.exec.module import Module

    plan, program, written, entry, arg_dtypes, result_dtypes = stored
    module = Module(program, None, runtime, written, built=early.result(program.source)) \
        if program is not None else None
    return Executable(plan, module, plan_runtime(dev), entry, arg_dtypes, result_dtypes)


def _store_executable(path: Path, exe: Executable) -> None:
    """Write ``exe``'s plan and kernels to ``path`` (atomically, then the cache is kept
    under its cap; errors are ignored: the cache is an optimisation).  The entry's head
    is the OpenCL source and kernel names, which a load builds first."""
    from backend_opencl import diskcache

    stored = exe.module.stored() if exe.module is not None else (None, None)
    if stored is None:
        return
    program = stored[0]
    head = None if program is None else \
        (program.source, tuple(k.c_name for k in program.kernels.values()))
    payload = (exe.plan, program, stored[1], exe.name, exe.arg_dtypes, exe.result_dtypes)
    diskcache.write_pickle(path, _source_hash(), payload, head)


def _part_with(parts: list[StableHLOModule], entry: str) -> StableHLOModule:
    return next((p for p in parts if p.func(entry) is not None), parts[0])


def compile_lowered(lowered: Lowered, device: object = None) -> Executable:
    """An executable for an already lowered function (``frontend.lower.Lowered``)."""
    return _executable(lowered, device_of(device), lowered.func.name.strip('"'))


def _executable(lowered: Lowered, dev: RunDevice, entry: str, check_bounds: bool = False
                ) -> Executable:
    from backend_opencl.exec.executable import Executable
    from frontend.lower import merged_launches

    lowered = merged_launches(lowered)  # a launch for each run of one-work-group ones
    program = _kernels_program(lowered)
    module = compile_program(program, dev, check_bounds=check_bounds, launch_checks=False,
                             restrict_kernels=distinct_arguments(lowered.plan, program),
                             static_checks=verify_lowered()) if program.functions else None
    return Executable(lowered.plan, module, plan_runtime(dev), entry, *value_dtypes(lowered))


def value_dtypes(lowered: Lowered) -> tuple[list[np.dtype | None], list[np.dtype | None]]:
    """The numpy dtypes of a lowered function's parameters and of its results (those of
    its checks after its own); None for a token."""
    from frontend.ir.types import TensorType

    func = lowered.func
    args = [t.element.dtype if isinstance(t, TensorType) else None for t in func.arg_types]
    results = [t.element.dtype if isinstance(t, TensorType) else None
               for t in func.result_types]
    return args, results + [_check_dtype(lowered, i) for i in range(len(lowered.checks))]


def _check_dtype(lowered: Lowered, i: int) -> np.dtype:
    """The numpy dtype of the i-th check result (the checked value's buffer)."""
    import numpy as np

    from backend_opencl.exec.arguments import NUMPY_DTYPES

    bid = lowered.plan.results[len(lowered.func.result_types) + i]
    return np.dtype(NUMPY_DTYPES[lowered.plan.buffer(bid).dtype])
