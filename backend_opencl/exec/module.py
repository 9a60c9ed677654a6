"""A compiled module: its kernels are attributes you call with numpy or pyopencl arrays.

``mod.fused_kernel(alpha, A_list, B, C, D, num_groups=n)`` checks every argument against
the kernel's signature first (count, dtype, shape, strides, group sizes) and raises
:class:`~tensorlang.diagnostics.LaunchError` before anything runs.  numpy arrays bind to
memrefs by shape and strides (no silent copies into another layout).  On a CPU device
aligned numpy arrays are used in place (``CL_MEM_USE_HOST_PTR``: the kernel writes into
them); elsewhere, or when misaligned, they are copied and results copied back into the
arrays the kernel writes.  pyopencl arrays are used in place; a group of pyopencl arrays
is bound on the device (see ``docs/abi.md``, "Groups of pyopencl arrays" and "numpy
arrays in place").  A kernel may be called from several threads at once.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import ml_dtypes
import numpy as np

from backend_opencl.abi import ArgAbi, ParamKind
from backend_opencl.runtime import profile
from backend_opencl.runtime.opencl import buffers, build, device_groups, launch, memory
from tensorlang.diagnostics import BoundsError, LaunchError, note
from tensorlang.ir.core import Value
from tensorlang.ir.dtypes import NARROW_DTYPES
from tensorlang.ir.types import GroupType, MemRefType, ScalarType, dim_str

if TYPE_CHECKING:  # the code generator is not imported when a module comes from a cache
    from backend_opencl.emit import EmittedProgram, KernelInfo
    from tensorlang.ir.core import Program

RECORD_LONGS = 6
"""Longs in a bounds-guard error record (``backend_opencl.emit.guards``; docs/abi.md)."""

NUMPY_DTYPES = {
    "i1": np.bool_, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
    "index": np.int64, "f32": np.float32, "f64": np.float64, "c32": np.complex64,
    "c64": np.complex128, "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64,
    "f16": np.float16, "bf16": ml_dtypes.bfloat16, **NARROW_DTYPES,
}


def aligned_empty(shape: tuple[int, ...], dtype: Any, order: str = "F",
                  align: int = 128) -> np.ndarray:
    """An uninitialized numpy array whose data is ``align``-byte aligned: on CPU devices
    such arrays bind to kernels in place (no copy; 128 bytes is PoCL's
    ``CL_DEVICE_MEM_BASE_ADDR_ALIGN``)."""
    dtype = np.dtype(dtype)
    count = int(np.prod(shape, dtype=np.int64))
    flat = memory.aligned_empty(count * dtype.itemsize, align).view(dtype)
    return flat.reshape(shape, order=order)  # type: ignore[call-overload]


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
    guards: tuple[Any, ...] = field(default=())
    checks: tuple[Any, ...] = field(default=())
    groups: Any = None
    """``tensorlang.schedule.launch.GroupCount``: the default ``num_groups``."""

    @staticmethod
    def of(info: Any, checks: tuple[Any, ...] = ()) -> StoredKernel:
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


@dataclass(frozen=True)
class Group:
    """A list of arrays bound to a group argument, with its offset when that is dynamic."""

    arrays: list[Any]
    offset: int = 0


class KernelTable:
    """Kernels by name, callable as attributes (``module.name(...)``): what the OpenCL
    :class:`Module` and the SYCL module (:mod:`backend_opencl.exec.sycl_module`) share."""

    source: str
    kernels: dict[str, Any]

    def stored(self) -> tuple[StoredProgram, dict[str, frozenset[int]]] | None:
        """What a disk cache keeps of this module (None with bounds guards, whose
        diagnostics need the kernels' IR): source, launch facts and written arguments."""
        if any(k.info.guards for k in self.kernels.values()):
            return None
        kernels = {name: StoredKernel.of(k.info, k.checks) for name, k in self.kernels.items()}
        return StoredProgram(self.source, kernels), {n: k.written
                                                      for n, k in self.kernels.items()}

    def __getattr__(self, name: str) -> Any:
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
    """The kernels of one compiled program, callable by name."""

    def __init__(self, emitted: EmittedProgram | StoredProgram, program: Program | None,
                 device: Any, written: dict[str, frozenset[int]] | None = None,
                 checks: dict[str, tuple[Any, ...]] | None = None) -> None:
        self.source = emitted.source
        self.device = device
        names = tuple(info.c_name for info in emitted.kernels.values())
        self._program = build.build_program(device, emitted.source, (), names)
        written = written_by_kernel(emitted, program, written)
        self.kernels = {
            name: Kernel(info, self._program, device, written[name],
                         checks.get(name, ()) if checks is not None
                         else getattr(info, "checks", ()))
            for name, info in emitted.kernels.items()
        }

    @property
    def program(self) -> Any:
        """The built OpenCL program (the plan executor prepares its launches from it)."""
        return self._program


class Kernel:
    """One callable kernel: ``kernel(*args, num_groups=n)``."""

    def __init__(self, info: KernelInfo | StoredKernel, program: Any, device: Any,
                 written: frozenset[int], checks: tuple[Any, ...] = ()) -> None:
        self.info = info
        self.name = info.name
        self.device = device
        self.written = written
        self.checks = checks
        """The launch checks (``tensorlang.schedule.launch.LaunchCheck``) run before a launch."""
        self._kernel = launch.get_kernel(program, info.c_name)
        self._records: list[Any] = []  # zeroed bounds-guard records, one per launch in flight
        self._align = memory.host_alignment(device)  # 0: numpy arrays are copied
        self._anywhere = memory.binds_anywhere(device)
        self._max_bytes = max_allocation(device)
        self._max_groups = launch.max_groups(device, info.plan.work_group_size)
        self._lock = threading.Lock()  # the kernel object's arguments are shared state

    def __call__(self, *args: Any, num_groups: int | None = None) -> None:
        """Check the arguments, run ``num_groups`` work-groups (omitted: as many as the
        arguments' group modes have entries, see :func:`default_num_groups`), copy results
        back."""
        abi = self.info.abi
        num_groups = check_call(self.name, self.info, args, num_groups, self._max_groups)
        binders = [self._check(i, a, v, num_groups) for i, (a, v) in
                   enumerate(zip(abi, args, strict=True))]
        if num_groups == 0:
            return
        if self.checks:
            check_contract(self, args, num_groups)
        start = time.perf_counter()
        ctx, queue = self.device.context, self.device.queue
        kernel_args: list[Any] = []
        backs = []
        for binder in binders:
            values, back = binder(ctx, queue)
            kernel_args += values
            if back is not None:
                backs.append(back)
        record = self._bounds_record() if self.info.guards else None
        if record is not None:
            kernel_args.append(memory.device_buffer(record))
        with self._lock:
            event = launch.launch(queue, self._kernel, kernel_args, num_groups,
                                  self.info.plan.work_group_size)
        launch.finish(queue, event)  # the queue is in order: everything before is done
        for back in backs:
            back()
        if profile.enabled():
            profile.PROFILE.launch(self.name, event)
            profile.PROFILE.call(time.perf_counter() - start)
        if record is not None:
            self._raise_violation(record, buffers.download(record, RECORD_LONGS))

    def _bounds_record(self) -> Any:
        """A zeroed bounds-guard error record of this launch's own (records stay pooled
        while they stay 0, so concurrent launches never share one)."""
        with self._lock:
            if self._records:
                return self._records.pop()
        return buffers.upload(self.device, np.zeros(RECORD_LONGS, np.int64))

    def _raise_violation(self, buffer: Any, record: np.ndarray) -> None:
        """Raise BoundsError for the first violation a guard recorded (none: return the
        record to the pool)."""
        raise_recorded_violation(self.name, self.info, record)
        with self._lock:
            self._records.append(buffer)

    # -- argument checking (no device work) ------------------------------------------------

    def _check(self, index: int, arg: ArgAbi, value: Any, num_groups: int) -> Binder:
        where = f"{self.name}: argument {index + 1} (%{arg.value.name}: {arg.type})"
        t = arg.type
        writes = index in self.written
        if isinstance(t, ScalarType):
            scalar = check_scalar(value, t, where)
            return lambda ctx, queue: ([scalar], None)
        if isinstance(t, MemRefType):
            return _memref_binder(value, t, arg, where, writes, self._align,
                                  self.device.context, self._max_bytes, self._anywhere)
        assert isinstance(t, GroupType)
        svm = all(p.kind is not ParamKind.GROUP_BASE for p in arg.params)
        # a table of host addresses needs kernels in the host's address space (PoCL)
        align = self._align if self.device.is_pocl else 0
        return _group_binder(value, t, arg, where, writes, num_groups, svm, self.device,
                             align, self._max_bytes)


Binder = Callable[[Any, Any], tuple[list[Any], Callable[[], None] | None]]


def check_call(name: str, info: Any, args: tuple[Any, ...], num_groups: Any,
               max_groups: int) -> int:
    """The number of work-groups of a kernel call (``num_groups``, or when that is None
    :func:`default_num_groups`); LaunchError unless the call passes one argument per ABI
    entry of ``info`` and the count is from 0 to ``max_groups``."""
    abi = info.abi
    if len(args) != len(abi):
        raise LaunchError(f"{name}: expected {len(abi)} arguments "
                          f"({', '.join('%' + a.value.name for a in abi)}), got {len(args)}")
    if num_groups is None:
        num_groups = default_num_groups(name, info, args)
    if isinstance(num_groups, bool) or not isinstance(num_groups, (int, np.integer)) \
            or num_groups < 0:
        raise LaunchError(f"{name}: num_groups must be a non-negative integer, "
                          f"got {num_groups!r}")
    if num_groups > max_groups:
        raise LaunchError(f"{name}: num_groups={num_groups} exceeds the device's limit of "
                          f"{max_groups} work-groups of {info.plan.work_group_size} "
                          "work-items")
    return int(num_groups)


def default_num_groups(name: str, info: Any, args: tuple[Any, ...]) -> int:
    """The number of work-groups of a call without ``num_groups``: the size of the
    argument modes that ``group_id`` indexes (a group's member count), when they agree;
    1 for a kernel that never reads ``group_id`` or ``group_size``.  LaunchError naming
    the arguments when they disagree, or when the kernel reads the group id but no
    argument says how many groups there are (never a partial run)."""
    groups = getattr(info, "groups", None)
    if groups is None or not groups.modes:
        if groups is not None and not groups.uses_groups:
            return 1
        raise LaunchError(f"{name}: pass num_groups=... (tlc run: --num-groups): the kernel "
                          "reads group_id or group_size, and no argument mode it indexes by "
                          "group_id says how many work-groups there are")
    counts = [(_group_mode_name(info.abi, q), n) for q in groups.modes
              if (n := _group_mode_size(q, args)) is not None]
    if not counts:  # no such argument is an array: its own check raises the error
        return 1
    if any(n != counts[0][1] for _, n in counts):
        listed = ", ".join(f"{where} has {n}" for where, n in counts)
        raise LaunchError(f"{name}: num_groups omitted, and the argument modes group_id "
                          f"indexes disagree ({listed}); pass num_groups=... (tlc run: "
                          "--num-groups)")
    return counts[0][1]


def _group_mode_size(q: Any, args: tuple[Any, ...]) -> int | None:
    """The size of group mode ``q`` in the call's ``args`` (None: not an array there)."""
    value = args[q.arg]
    if q.kind == "members":
        members = value.arrays if isinstance(value, Group) else value
        return len(members) if isinstance(members, (list, tuple)) else None
    shape = getattr(value, "shape", None)
    if not isinstance(shape, tuple) or len(shape) <= q.mode:
        return None
    return int(shape[q.mode])


def _group_mode_name(abi: tuple[ArgAbi, ...], q: Any) -> str:
    arg = f"argument {q.arg + 1} (%{abi[q.arg].value.name})"
    return f"{arg}'s member count" if q.kind == "members" else f"{arg} mode {q.mode}"


def raise_recorded_violation(name: str, info: Any, record: np.ndarray) -> None:
    """BoundsError for the first violation a bounds guard of kernel ``name`` recorded in
    its error ``record`` (none recorded: return)."""
    site = int(record[:1].view(np.int32)[0]) - 1  # the claim is the first int
    if site < 0:
        return
    mode, a, b, c, group = (int(x) for x in record[1:6])
    guard = info.guards[site]
    raise BoundsError.at(guard.loc, guard.message(mode, a, b, c),
                         note(None, f"in @{name}, work-group {group}; the access was "
                              "skipped (a load yields 0, a store is dropped)"))


def check_contract(kernel: Kernel, args: tuple[Any, ...], num_groups: int) -> None:
    """LaunchError when the (already type-checked) arguments violate one of the kernel's
    launch checks: an access out of bounds or collective sizes that disagree for these
    dynamic sizes, scalars and ``num_groups`` (docs/abi.md, "Launch checks")."""
    values: dict[Any, Any] = {}

    def value(q: Any) -> Any:
        if q not in values:
            values[q] = _quantity(q, args, num_groups)
        return values[q]

    for check in kernel.checks:
        for violation in check.violations:
            hit = _first_hit(violation, value)
            if hit is not None:
                raise LaunchError(_contract_message(kernel, check, violation, value, hit))


def _quantity(q: Any, args: tuple[Any, ...], num_groups: int) -> Any:
    """The value of a launch-check quantity (an array over work-groups for per-group ones)."""
    if q.kind == "groups":
        return num_groups
    if q.kind == "group_id":
        return np.arange(num_groups, dtype=np.int64)
    value = args[q.arg]
    if q.kind == "size":
        return int(value.shape[q.mode])
    if q.kind == "scalar":
        return int(value)
    members = value.arrays if isinstance(value, Group) else value
    if q.kind == "members":
        return len(members)
    return np.array([members[g].shape[q.mode] for g in range(num_groups)], dtype=np.int64)


def _first_hit(forms: tuple[Any, ...], value: Callable[[Any], Any]) -> int | None:
    """None when one of ``forms`` fails; else the first work-group where all hold (-1:
    they hold for every work-group)."""
    holds: Any = True
    for form in forms:
        total = form.constant + sum(c * value(q) for q, c in form.terms)
        holds = holds & ((total == 0) if form.equality else (total >= 0))
    if isinstance(holds, np.ndarray):
        hits = np.flatnonzero(holds)
        return int(hits[0]) if hits.size else None
    return -1 if holds else None


def _contract_message(kernel: Kernel, check: Any, violation: tuple[Any, ...],
                      value: Callable[[Any], Any], group: int) -> str:
    abi = kernel.info.abi
    seen: list[Any] = []
    for form in violation:
        seen += [q for q, _ in form.terms if q not in seen]
    details = ", ".join(_describe(q, value(q), abi, group) for q in seen)
    if check.arg < 0:
        where = f"{kernel.name}"
    else:
        arg = abi[check.arg]
        where = f"{kernel.name}: argument {check.arg + 1} (%{arg.value.name}: {arg.type})"
    if check.kind == "sizes":
        return f"{where}: {check.what} ({details})"
    if check.kind == "member":
        return f"{where}: the {check.what} indexes past the group's members ({details})"
    mode = f", mode {check.mode}" if check.mode >= 0 else ""
    return f"{where}{mode}: the {check.what} would access outside the array ({details})"


def _describe(q: Any, v: Any, abi: tuple[ArgAbi, ...], group: int) -> str:
    name = f"%{abi[q.arg].value.name}" if q.arg >= 0 else ""
    if q.kind == "groups":
        return f"num_groups = {v}"
    if q.kind == "group_id":
        return f"in work-group {group}"
    if q.kind == "size":
        return f"{name} mode {q.mode} has size {v}"
    if q.kind == "scalar":
        return f"{name} = {v}"
    if q.kind == "members":
        return f"{name} has {v} members"
    return f"member {group} of {name} has size {int(v[group])} in mode {q.mode}"


def check_scalar(value: Any, t: ScalarType, where: str) -> np.generic:
    """``value`` as a numpy scalar of ``t``'s dtype, or LaunchError."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    ok = {
        "int": (bool, int, np.integer, np.bool_),
        "float": (int, float, np.integer, np.floating, ml_dtypes.bfloat16),
        "complex": (int, float, complex, np.number),
    }[t.kind.value]
    if not isinstance(value, ok) or (t.is_int and not t.is_bool
                                     and isinstance(value, (bool, np.bool_))):
        raise LaunchError(f"{where}: expected a {t} scalar, got {type(value).__name__}")
    dtype = np.dtype(NUMPY_DTYPES[t.name])
    if isinstance(value, np.generic) and value.dtype != dtype:
        raise LaunchError(f"{where}: expected a {t} ({dtype.name}) scalar, got a numpy "
                          f"{value.dtype.name}; Python numbers are converted, numpy scalars "
                          "must match")
    if t.is_bool:
        return np.int8(bool(value))
    if t.is_int:
        info = np.iinfo(dtype)
        if not info.min <= int(value) <= info.max:
            raise LaunchError(f"{where}: {value} does not fit in {t}")
    if t.is_half:  # passed as its bit pattern
        return _convert_half(value, dtype, t, where).view(
            np.uint8 if t.is_narrow else np.uint16)[()]
    if t.name in _FLOAT_LIMITS and not isinstance(value, np.generic):
        _check_float_range(value, _FLOAT_LIMITS[t.name], t, where)
    try:
        return dtype.type(value)
    except OverflowError:  # a Python int beyond the float's range
        raise LaunchError(f"{where}: {_short(value)} overflows {t}") from None


# the smallest magnitude that rounds to inf in f32 (f64 takes any Python float)
_FLOAT_LIMITS = {"f32": 2.0**128 * (1 - 2.0**-25), "c32": 2.0**128 * (1 - 2.0**-25)}


def _check_float_range(value: Any, limit: float, t: ScalarType, where: str) -> None:
    """LaunchError when a finite Python number would silently become inf in ``t``."""
    parts = (value.real, value.imag) if isinstance(value, complex) else (value,)
    try:
        big = any(math.isfinite(p) and abs(p) >= limit for p in map(float, parts))
    except OverflowError:
        big = True
    if big:
        raise LaunchError(f"{where}: {_short(value)} overflows {t} (it would become inf)")


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:20] + "..." + text[-8:]


def _convert_half(value: Any, dtype: np.dtype, t: ScalarType, where: str) -> np.ndarray:
    """``value`` as a 0-d array of a storage float; LaunchError when a finite number
    overflows the type (it would silently become inf or NaN)."""
    try:
        with np.errstate(over="ignore", invalid="ignore"):
            out = np.array(value, dtype=dtype)
    except OverflowError:
        raise LaunchError(f"{where}: {_short(value)} overflows {t}") from None
    if math.isfinite(float(value)) and not math.isfinite(float(out)):
        raise LaunchError(f"{where}: {_short(value)} overflows {t} (its largest finite value is "
                          f"{float(ml_dtypes.finfo(dtype).max):g})")
    return out


_ORDER_NAMES = {">": "big-endian", "<": "little-endian"}


def max_allocation(device: Any) -> int:
    """The device's largest buffer in bytes (``CL_DEVICE_MAX_MEM_ALLOC_SIZE``; 0: unknown)."""
    return int(getattr(device.cl_device, "max_mem_alloc_size", 0) or 0)


def check_allocation(nbytes: int, max_bytes: int, where: str) -> None:
    """LaunchError when an argument needs a buffer larger than the device allows."""
    if max_bytes and nbytes > max_bytes:
        raise LaunchError(f"{where}: the array spans {nbytes} bytes but the device's "
                          f"largest buffer is {max_bytes} bytes")


def array_layout(arr: Any, t: MemRefType, where: str) -> tuple[list[int], list[int], int]:
    """Check ``arr`` against ``t``; return its shape, element strides and span in elements."""
    dtype = np.dtype(NUMPY_DTYPES[t.element.name])
    if not hasattr(arr, "dtype") or not hasattr(arr, "strides"):
        raise LaunchError(f"{where}: expected a numpy or pyopencl array, "
                          f"got {type(arr).__name__}")
    if arr.dtype != dtype:
        if arr.dtype.byteorder not in "=|" and arr.dtype.newbyteorder("=") == dtype:
            raise LaunchError(f"{where}: the array is {_ORDER_NAMES[arr.dtype.byteorder]} "
                              f"({arr.dtype.str}); kernels take native-order {dtype.name} "
                              "arrays: pass arr.astype(arr.dtype.newbyteorder('='))")
        raise LaunchError(f"{where}: expected dtype {dtype.name}, got {arr.dtype.name}")
    if arr.ndim != t.order:
        raise LaunchError(f"{where}: expected {t.order} dimensions, got shape {arr.shape}")
    shape = [int(n) for n in arr.shape]
    for mode, (want, got) in enumerate(zip(t.shape, shape, strict=True)):
        if want is not None and want != got:
            raise LaunchError(f"{where}: mode {mode} must have size {want}, "
                              f"got shape {tuple(shape)}")
    strides = _element_strides(arr, t, shape, where)
    return shape, strides, memory.span_elements(shape, strides)


def _element_strides(arr: Any, t: MemRefType, shape: list[int], where: str) -> list[int]:
    strides: list[int] = []
    expected = 1
    for mode, (size, byte_stride) in enumerate(zip(shape, arr.strides, strict=True)):
        declared = t.strides[mode]
        # No two elements to step between (numpy gives every mode of an empty array 0).
        if size <= 1 or arr.size == 0:
            stride = declared if declared is not None else expected
        elif byte_stride <= 0 or byte_stride % arr.dtype.itemsize:
            raise LaunchError(f"{where}: mode {mode} has stride {byte_stride} bytes; strides "
                              "must be positive multiples of the element size")
        else:
            stride = byte_stride // arr.dtype.itemsize
        if declared is not None and size > 1 and declared != stride:
            raise LaunchError(
                f"{where}: array strides {_elements(arr)} (in elements) do not fit the "
                f"memref layout strided<{','.join(map(dim_str, t.strides))}>; pass an array with "
                "that layout (e.g. np.asfortranarray) or declare dynamic strides")
        if size > 1 and stride < expected and t.strides[mode] is None:
            raise LaunchError(f"{where}: array strides {_elements(arr)} are not column-major "
                              "(each stride must be at least the previous stride times size)")
        strides.append(stride)
        expected = max(expected, stride * size)
    return strides


def _elements(arr: Any) -> tuple[int, ...]:
    return tuple(s // arr.dtype.itemsize for s in arr.strides)


def _dynamic_values(t: MemRefType, arg: ArgAbi, shape: list[int],
                    strides: list[int]) -> list[int]:
    values = []
    for p in arg.params:
        if p.kind in (ParamKind.SIZE, ParamKind.GROUP_SIZE):
            values.append(shape[p.mode])
        elif p.kind in (ParamKind.STRIDE, ParamKind.GROUP_STRIDE):
            values.append(strides[p.mode])
    return values


def _memref_binder(value: Any, t: MemRefType, arg: ArgAbi, where: str, writes: bool,
                   align: int = 0, context: Any = None, max_bytes: int = 0,
                   anywhere: bool = True) -> Binder:
    shape, strides, span = array_layout(value, t, where)
    check_allocation(span * value.dtype.itemsize, max_bytes, where)
    dims = [np.int64(v) for v in _dynamic_values(t, arg, shape, strides)]
    if memory.is_device_array(value):
        if context is not None and device_groups.foreign_members([value], context):
            raise LaunchError(f"{where}: the pyopencl array belongs to another OpenCL "
                              "context than the kernel's (use the device's context)")
        return lambda ctx, queue: ([memory.device_buffer(value)] + dims, None)
    if not isinstance(value, np.ndarray):
        raise LaunchError(f"{where}: expected a numpy or pyopencl array")
    if writes and not value.flags.writeable:
        raise LaunchError(f"{where}: the kernel writes this argument but the array is "
                          "read-only")

    def bind(ctx: Any, queue: Any) -> tuple[list[Any], Callable[[], None] | None]:
        buf, back = memory.upload(ctx, queue, value, span, writes, align, anywhere)
        return [buf] + dims, back

    return bind


def _group_binder(value: Any, t: GroupType, arg: ArgAbi, where: str, writes: bool,
                  num_groups: int, svm: bool, device: Any, align: int = 0,
                  max_bytes: int = 0) -> Binder:
    """Check a group argument (a list, tuple or :class:`Group` of numpy arrays or of
    pyopencl arrays) and return how to bind it (``align``: numpy members aligned to it
    are used in place, see :func:`memory.upload_group`)."""
    members, offset = _group_members(value, t, where, num_groups)
    on_device = _members_on_device(members, where, device)
    layouts = _member_layouts(members, t, where, offset)
    for k, (_, _, span) in enumerate(layouts):
        check_allocation(span * members[k].dtype.itemsize, max_bytes, f"{where}, member {k}")
    per_param = list(zip(*[_dynamic_values(t.memref, arg, s, st) for s, st, _ in layouts],
                         strict=True)) if layouts and t.memref.dynamic_dims else []
    if writes and not on_device and not all(m.flags.writeable for m in members):
        raise LaunchError(f"{where}: the kernel writes this group but an array is read-only")

    def bind(ctx: Any, queue: Any) -> tuple[list[Any], Callable[[], None] | None]:
        spans = [span for _, _, span in layouts]
        if on_device:
            args, keep, back = device_groups.bind_device_group(ctx, queue, members, spans,
                                                               writes, svm)
        else:
            args, keep, back = memory.upload_group(ctx, queue, members, spans, writes, svm,
                                                   align)
        extra = [memory.index_array(ctx, values) for values in per_param]
        if t.offset is None:
            extra.append(np.int64(offset))
        return args + extra, _keep_alive(back, keep)

    return bind


def _group_members(value: Any, t: GroupType, where: str,
                   num_groups: int) -> tuple[list[Any] | tuple[Any, ...], int]:
    """The members of a group argument and its offset; LaunchError if they cannot be."""
    offset = value.offset if isinstance(value, Group) else 0
    members = value.arrays if isinstance(value, Group) else value
    if not isinstance(members, (list, tuple)):
        raise LaunchError(f"{where}: expected a list of numpy or pyopencl arrays for a group "
                          f"argument, got {type(members).__name__}")
    if len(members) < num_groups:
        raise LaunchError(f"{where}: the group has {len(members)} arrays but {num_groups} "
                          "work-groups were asked for (group_id indexes the group)")
    if t.offset is not None and isinstance(value, Group) and value.offset != t.offset:
        raise LaunchError(f"{where}: the group's offset is {t.offset}, got {value.offset}")
    return members, t.offset if t.offset is not None else offset


def _members_on_device(members: list[Any] | tuple[Any, ...], where: str, device: Any) -> bool:
    """True when the members are pyopencl arrays (of ``device``'s context), False when
    they are numpy arrays; LaunchError for a mix."""
    if all(type(m) is np.ndarray for m in members):  # the common case, quickly
        return False
    kinds = [_array_kind(m) for m in members]
    present = [kind for kind in kinds if kind is not None]
    if "pyopencl" not in present:
        return False
    if "numpy" in present:
        other = "numpy" if present[0] == "pyopencl" else "pyopencl"
        raise LaunchError(f"{where}: member {kinds.index(other)} is a {other} array but the "
                          f"group starts with a {present[0]} array; a group's members must "
                          "be all numpy or all pyopencl arrays")
    foreign = device_groups.foreign_members(members, device.context)
    if foreign:
        raise LaunchError(f"{where}: member {foreign[0]} is a pyopencl array of another "
                          "OpenCL context than the kernel's (use the device's context)")
    return True


def _array_kind(value: Any) -> str | None:
    """``"pyopencl"`` or ``"numpy"`` for arrays, None for anything else."""
    if memory.is_device_array(value):
        return "pyopencl"
    return "numpy" if isinstance(value, np.ndarray) else None


def _keep_alive(back: Callable[[], None] | None, keep: list[Any]) -> Callable[[], None]:
    def run() -> None:
        if back is not None:
            back()
        keep.clear()

    return run


def _member_layouts(members: list[Any] | tuple[Any, ...], t: GroupType, where: str,
                    offset: int) -> list[tuple[list[int], list[int], int]]:
    """Check every member; members with the same dtype, shape and strides are checked once."""
    seen: dict[tuple[Any, ...], tuple[list[int], list[int], int]] = {}
    layouts = []
    for k, member in enumerate(members):
        key = (member.dtype, member.shape, member.strides) if type(member) is np.ndarray \
            else (type(member), getattr(member, "dtype", None),
                  getattr(member, "shape", None), getattr(member, "strides", None))
        layout = seen.get(key)
        if layout is None:
            layout = seen[key] = _member_layout(member, t, where, k, offset)
        layouts.append(layout)
    return layouts


def _member_layout(member: Any, t: GroupType, where: str, k: int,
                   offset: int) -> tuple[list[int], list[int], int]:
    if not isinstance(member, np.ndarray) and not memory.is_device_array(member):
        raise LaunchError(f"{where}: member {k} must be a numpy or pyopencl array, "
                          f"got {type(member).__name__}")
    return member_layout(member, t, where, k, offset)


def member_layout(member: Any, t: GroupType, where: str, k: int,
                  offset: int) -> tuple[list[int], list[int], int]:
    """Group member ``k``'s shape, strides and span in elements (with an ``offset``: a
    contiguous 1-D array holding the offset and the memref's span), or LaunchError."""
    if offset == 0:
        return array_layout(member, t.memref, f"{where}, member {k}")
    if not t.memref.is_static:
        raise LaunchError(f"{where}: groups with an offset need static memref types")
    need = offset + memory.span_elements(t.memref.shape, t.memref.strides)  # type: ignore[arg-type]
    flat_ok = member.ndim == 1 and member.strides[0] == member.dtype.itemsize
    if not flat_ok or member.size < need or member.dtype != NUMPY_DTYPES[t.memref.element.name]:
        raise LaunchError(f"{where}: member {k} must be a contiguous 1-D "
                          f"{t.memref.element} array of at least {need} elements (offset "
                          f"{offset})")
    return [need], [1], need
