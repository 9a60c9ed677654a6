"""The checks of a kernel call's arguments, the same on every runtime.

Before anything runs, a call checks the argument count, ``num_groups``, each scalar
(its kind and range), each array (dtype, shape, strides against the memref type, the
device's largest allocation) and each group (members, offset), and then the kernel's
launch checks (docs/abi.md, "Launch checks"); each mistake is a
:class:`~tensorlang.diagnostics.LaunchError` naming the argument.  A bounds guard's error
record read back after a launch becomes a :class:`~tensorlang.diagnostics.BoundsError`.
The runtimes (:mod:`backend_opencl.runtime.opencl.kernels`,
:mod:`backend_opencl.runtime.sycl.kernels`) bind what passed these checks.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, SupportsFloat, cast

import ml_dtypes
import numpy as np

from backend_opencl.abi import ArgAbi, ParamKind
from backend_opencl.runtime.host import span_elements, static_layout
from tensorlang.diagnostics import BoundsError, LaunchError, note
from tensorlang.ir.dtypes import NARROW_DTYPES
from tensorlang.ir.types import GroupType, MemRefType, ScalarType, dim_str

if TYPE_CHECKING:  # neither the code generator nor islpy is loaded to run a kernel
    from backend_opencl.emit.guards import GuardSite
    from tensorlang.schedule.contracts import Form, GroupCount, LaunchCheck, Quantity

Value = int | np.ndarray
"""A launch-check quantity's value: one number, or one per work-group."""


class Strided(Protocol):
    """What the launch checks read of an array argument (a numpy, pyopencl or USM array)."""

    @property
    def shape(self) -> tuple[int, ...]:
        """Its extents."""

    @property
    def strides(self) -> tuple[int, ...]:
        """Its strides in bytes."""

    @property
    def dtype(self) -> np.dtype:
        """Its element type."""

    @property
    def ndim(self) -> int:
        """Its number of dimensions."""

    @property
    def size(self) -> int:
        """Its number of elements."""


class WorkGroups(Protocol):
    """A kernel's plan, as launches read it."""

    @property
    def work_group_size(self) -> tuple[int, int]:
        """Work-items of a work-group (x, y)."""


class LaunchFacts(Protocol):
    """What the checks read of a kernel's launch facts (a ``KernelInfo`` fresh from the
    code generator or a :class:`~backend_opencl.exec.module.StoredKernel` from a cache)."""

    @property
    def name(self) -> str:
        """The kernel's tensor-language name."""

    @property
    def c_name(self) -> str:
        """Its name in the OpenCL C source."""

    @property
    def abi(self) -> tuple[ArgAbi, ...]:
        """Its arguments' kernel parameters."""

    @property
    def plan(self) -> WorkGroups:
        """Its plan (the work-group size)."""

    @property
    def guards(self) -> tuple[GuardSite, ...]:
        """Its bounds-guard sites (a record is passed last when there are any)."""

    @property
    def groups(self) -> GroupCount | None:
        """Where ``num_groups`` comes from when a call omits it."""


class Checked(Protocol):
    """What the launch checks read of a kernel: its name, launch facts and checks."""

    @property
    def name(self) -> str:
        """The kernel's name."""

    @property
    def info(self) -> LaunchFacts:
        """Its launch facts."""

    @property
    def checks(self) -> tuple[LaunchCheck, ...]:
        """Its launch checks."""


RECORD_LONGS = 6
"""Longs in a bounds-guard error record (``backend_opencl.emit.guards``; docs/abi.md)."""

NUMPY_DTYPES = {
    "i1": np.bool_, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
    "index": np.int64, "f32": np.float32, "f64": np.float64, "c32": np.complex64,
    "c64": np.complex128, "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64,
    "f16": np.float16, "bf16": ml_dtypes.bfloat16, **NARROW_DTYPES,
}

@dataclass(frozen=True)
class Group:
    """A list of arrays bound to a group argument, with its offset when that is dynamic."""

    arrays: Sequence[Strided]
    offset: int = 0

def check_call(name: str, info: LaunchFacts, args: tuple[object, ...], num_groups: object,
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


def default_num_groups(name: str, info: LaunchFacts, args: tuple[object, ...]) -> int:
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


def _group_mode_size(q: Quantity, args: tuple[object, ...]) -> int | None:
    """The size of group mode ``q`` in the call's ``args`` (None: not an array there)."""
    value = args[q.arg]
    if q.kind == "members":
        members = value.arrays if isinstance(value, Group) else value
        return len(members) if isinstance(members, (list, tuple)) else None
    shape = getattr(value, "shape", None)
    if not isinstance(shape, tuple) or len(shape) <= q.mode:
        return None
    return int(shape[q.mode])


def _group_mode_name(abi: tuple[ArgAbi, ...], q: Quantity) -> str:
    arg = f"argument {q.arg + 1} (%{abi[q.arg].value.name})"
    return f"{arg}'s member count" if q.kind == "members" else f"{arg} mode {q.mode}"


def raise_recorded_violation(name: str, info: LaunchFacts, record: np.ndarray) -> None:
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


def check_contract(kernel: Checked, args: tuple[object, ...], num_groups: int) -> None:
    """LaunchError when the (already type-checked) arguments violate one of the kernel's
    launch checks: an access out of bounds or collective sizes that disagree for these
    dynamic sizes, scalars and ``num_groups`` (docs/abi.md, "Launch checks")."""
    values: dict[Quantity, Value] = {}

    def value(q: Quantity) -> Value:
        if q not in values:
            values[q] = _quantity(q, args, num_groups)
        return values[q]

    for check in kernel.checks:
        for violation in check.violations:
            hit = _first_hit(violation, value)
            if hit is not None:
                raise LaunchError(_contract_message(kernel, check, violation, value, hit))


def _quantity(q: Quantity, args: tuple[Any, ...], num_groups: int) -> Value:
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


def _first_hit(forms: tuple[Form, ...], value: Callable[[Quantity], Value]) -> int | None:
    """None when one of ``forms`` fails; else the first work-group where all hold (-1:
    they hold for every work-group)."""
    holds: bool | np.ndarray = True
    for form in forms:
        total = form.constant + sum(c * value(q) for q, c in form.terms)
        holds = holds & ((total == 0) if form.equality else (total >= 0))
    if isinstance(holds, np.ndarray):
        hits = np.flatnonzero(holds)
        return int(hits[0]) if hits.size else None
    return -1 if holds else None


def _contract_message(kernel: Checked, check: LaunchCheck, violation: tuple[Form, ...],
                      value: Callable[[Quantity], Value], group: int) -> str:
    abi = kernel.info.abi
    seen: list[Quantity] = []
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


def _describe(q: Quantity, v: Value, abi: tuple[ArgAbi, ...], group: int) -> str:
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
    return f"member {group} of {name} has size {int(np.asarray(v)[group])} in mode {q.mode}"


def check_scalar(value: Any, t: ScalarType, where: str) -> np.generic:
    """``value`` as a numpy scalar of ``t``'s dtype, or LaunchError."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    ok = {
        "int": (bool, int, np.integer, np.bool_),
        "float": (int, float, np.integer, np.floating, ml_dtypes.bfloat16),
        "complex": (int, float, complex, np.number),
    }[t.kind.value]
    if not _is_a(value, ok) or (t.is_int and not t.is_bool
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
        bits = _convert_half(value, dtype, t, where).view(np.uint8 if t.is_narrow else np.uint16)
        return cast(np.generic, bits[()])  # a 0-d array's element
    if t.name in _FLOAT_LIMITS and not isinstance(value, np.generic):
        _check_float_range(value, _FLOAT_LIMITS[t.name], t, where)
    try:
        return dtype.type(value)
    except OverflowError:  # a Python int beyond the float's range
        raise LaunchError(f"{where}: {_short(value)} overflows {t}") from None


def _is_a(value: object, kinds: tuple[type, ...]) -> bool:
    """``isinstance`` that leaves ``value`` unnarrowed (its kind was checked by ``t``)."""
    return isinstance(value, kinds)


# the smallest magnitude that rounds to inf in f32 (f64 takes any Python float)
_FLOAT_LIMITS = {"f32": 2.0**128 * (1 - 2.0**-25), "c32": 2.0**128 * (1 - 2.0**-25)}


def _check_float_range(value: complex | SupportsFloat, limit: float, t: ScalarType,
                       where: str) -> None:
    """LaunchError when a finite Python number would silently become inf in ``t``."""
    parts = (value.real, value.imag) if isinstance(value, complex) else (value,)
    try:
        big = any(math.isfinite(p) and abs(p) >= limit for p in map(float, parts))
    except OverflowError:
        big = True
    if big:
        raise LaunchError(f"{where}: {_short(value)} overflows {t} (it would become inf)")


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:20] + "..." + text[-8:]


def _convert_half(value: SupportsFloat, dtype: np.dtype, t: ScalarType, where: str) -> np.ndarray:
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

def check_allocation(nbytes: int, max_bytes: int, where: str) -> None:
    """LaunchError when an argument needs a buffer larger than the device allows."""
    if max_bytes and nbytes > max_bytes:
        raise LaunchError(f"{where}: the array spans {nbytes} bytes but the device's "
                          f"largest buffer is {max_bytes} bytes")


def array_layout(arr: Strided, t: MemRefType, where: str) -> tuple[list[int], list[int], int]:
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
    return shape, strides, span_elements(shape, strides)


def _element_strides(arr: Strided, t: MemRefType, shape: list[int], where: str) -> list[int]:
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


def _elements(arr: Strided) -> tuple[int, ...]:
    return tuple(s // arr.dtype.itemsize for s in arr.strides)


def dynamic_values(t: MemRefType, arg: ArgAbi, shape: list[int],
                   strides: list[int]) -> list[int]:
    """The values of ``arg``'s dynamic size and stride parameters for an array of
    ``shape`` and element ``strides``, in parameter order."""
    values = []
    for p in arg.params:
        if p.kind in (ParamKind.SIZE, ParamKind.GROUP_SIZE):
            values.append(shape[p.mode])
        elif p.kind in (ParamKind.STRIDE, ParamKind.GROUP_STRIDE):
            values.append(strides[p.mode])
    return values

def group_members(value: object, t: GroupType, where: str,
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

def member_layout(member: Strided, t: GroupType, where: str, k: int,
                  offset: int) -> tuple[list[int], list[int], int]:
    """Group member ``k``'s shape, strides and span in elements (with an ``offset``: a
    contiguous 1-D array holding the offset and the memref's span), or LaunchError."""
    if offset == 0:
        return array_layout(member, t.memref, f"{where}, member {k}")
    if not t.memref.is_static:
        raise LaunchError(f"{where}: groups with an offset need static memref types")
    need = offset + span_elements(*static_layout(t.memref))
    flat_ok = member.ndim == 1 and member.strides[0] == member.dtype.itemsize
    if not flat_ok or member.size < need or member.dtype != NUMPY_DTYPES[t.memref.element.name]:
        raise LaunchError(f"{where}: member {k} must be a contiguous 1-D "
                          f"{t.memref.element} array of at least {need} elements (offset "
                          f"{offset})")
    return [need], [1], need


MAX_WORK_ITEMS = 2**31 - 1
"""The largest first NDRange dimension a launch uses: kernels compute work-item ids in
``int`` on some paths, and PoCL crashes (SIGILL at 2^32 work-items, aborts from 2^40,
``std::bad_cast`` at 2^64) instead of failing cleanly beyond 32 bits."""


def max_groups(device: object, work_group_size: tuple[int, int]) -> int:
    """The most work-groups of ``work_group_size`` one launch on ``device`` (a
    ``runtime.Device``: its address bits) may have."""
    bits = int(getattr(getattr(device, "cl_device", None), "address_bits", 64) or 64)
    return min(MAX_WORK_ITEMS, 2**bits - 1) // max(1, work_group_size[0])
