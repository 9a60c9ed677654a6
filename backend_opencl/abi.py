"""The kernel ABI: how each tensor-language argument becomes OpenCL kernel parameters.

In argument order (docs/abi.md):

- a scalar: one parameter by value (``i1`` travels as ``char``);
- a memref: a pointer to its first element, then one ``long`` per dynamic mode size
  (in mode order), then one ``long`` per dynamic stride (in mode order);
- a group: a pointer to a table of 64-bit device addresses (shared virtual memory),
  then one ``global const long*`` array per dynamic mode size and per dynamic stride
  (one entry per member, so members may differ), then a ``long`` offset if it is dynamic.
  Without SVM the table holds element offsets into a buffer passed right after it.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING

from tensorlang.ir.core import Function, Value
from tensorlang.ir.types import GroupType, MemRefType, ScalarType

if TYPE_CHECKING:
    from backend_opencl.emit.writer import Namer


class ParamKind(Enum):
    """What a kernel parameter carries."""

    SCALAR = "scalar"
    POINTER = "pointer"        # a memref's base pointer
    SIZE = "size"              # a dynamic mode size (mode in ``mode``)
    STRIDE = "stride"          # a dynamic stride
    TABLE = "table"            # a group's table of member addresses (or offsets)
    GROUP_BASE = "group_base"  # without SVM: the buffer the members are packed into
    GROUP_SIZE = "group_size"  # per-member dynamic mode sizes (array)
    GROUP_STRIDE = "group_stride"
    OFFSET = "offset"          # a group's dynamic offset


@dataclass(frozen=True)
class Param:
    """One OpenCL kernel parameter."""

    name: str
    ctype: str
    kind: ParamKind
    mode: int = -1


@dataclass(frozen=True)
class ArgAbi:
    """The kernel parameters of one function argument, in order."""

    value: Value
    name: str
    params: tuple[Param, ...]

    @property
    def type(self) -> ScalarType | MemRefType | GroupType:
        """The argument's tensor-language type."""
        t = self.value.type
        assert isinstance(t, (ScalarType, MemRefType, GroupType)), t  # arguments have no other
        return t


def function_abi(func: Function, namer: Namer, svm: bool = True) -> list[ArgAbi]:
    """The ABI of every argument of ``func``; names are reserved in ``namer``.

    ``svm=False`` (devices without shared virtual memory): a group's table holds element
    offsets into a ``global T*`` buffer passed right after it.
    """
    return [_arg_abi(arg, namer, svm) for arg in func.args]


def _arg_abi(arg: Value, namer: Namer, svm: bool) -> ArgAbi:
    from backend_opencl.emit.cnames import pointer_type, storage_type  # emit imports abi

    name = namer.fresh(arg.name or "arg")
    t = arg.type
    if isinstance(t, ScalarType):
        params: tuple[Param, ...] = (Param(name, storage_type(t), ParamKind.SCALAR),)
    elif isinstance(t, MemRefType):
        params = (Param(name, pointer_type(t), ParamKind.POINTER),)
        params += _dims(t, name, namer, "long", ParamKind.SIZE, ParamKind.STRIDE)
    elif isinstance(t, GroupType):
        params = (Param(name, "global const ulong*", ParamKind.TABLE),)
        if not svm:
            params += (Param(namer.fresh(name + "_base"), pointer_type(t.memref),
                             ParamKind.GROUP_BASE),)
        params += _dims(t.memref, name, namer, "global const long*", ParamKind.GROUP_SIZE,
                        ParamKind.GROUP_STRIDE)
        if t.offset is None:
            params += (Param(namer.fresh(name + "_offset"), "long", ParamKind.OFFSET),)
    else:
        raise AssertionError(f"argument of type {t} has no ABI")
    return ArgAbi(arg, name, params)


def _dims(t: MemRefType, name: str, namer: Namer, ctype: str, size_kind: ParamKind,
          stride_kind: ParamKind) -> tuple[Param, ...]:
    params = [Param(namer.fresh(f"{name}_size{m}"), ctype, size_kind, m)
              for m, s in enumerate(t.shape) if s is None]
    params += [Param(namer.fresh(f"{name}_stride{m}"), ctype, stride_kind, m)
               for m, s in enumerate(t.strides) if s is None]
    return tuple(params)
