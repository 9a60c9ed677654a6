"""Reductions of collective ops: MPI's built-in ops where the body is one, else the body
compiled by tlc and applied on the device.

A body ``result_i = add(arg_i, arg_{n+i})`` (or multiply, maximum, minimum, and, or,
xor, either operand order) is *plain*: MPI reduces it (``MPI_Allreduce``) where MPI knows
the dtype, numpy otherwise (after an allgather).  object other body is compiled into a
StableHLO ``map`` over the whole operand (one tlc program on the device) and folded
over the gathered operands in group order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from backend_opencl.distributed.transport import Transport
from frontend.ir.attrs import DenseArrayAttr
from frontend.ir.core import Block, Func, Module, Op, Region, Value
from frontend.ir.types import TensorType
from tensorlang.diagnostics import TlcError

if TYPE_CHECKING:
    from backend_opencl.exec.executable import Executable

_PLAIN = {
    "stablehlo.add": ("SUM", np.add),
    "stablehlo.multiply": ("PROD", np.multiply),
    "stablehlo.maximum": ("MAX", np.maximum),
    "stablehlo.minimum": ("MIN", np.minimum),
    "stablehlo.and": ("BAND", np.bitwise_and),
    "stablehlo.or": ("BOR", np.bitwise_or),
    "stablehlo.xor": ("BXOR", np.bitwise_xor),
}
_BOOL = {"stablehlo.add": np.logical_or, "stablehlo.multiply": np.logical_and,
         "stablehlo.maximum": np.logical_or, "stablehlo.minimum": np.logical_and}
_MPI_FLOAT_OPS = ("SUM", "PROD")  # MPI's MAX/MIN do not propagate NaN as StableHLO does


def plain_ops(op: Op) -> list[str] | None:
    """The op name of each result when the body is plain, else None (a body of two
    arguments applies to every operand on its own)."""
    block = op.regions[0].block
    n = len(block.args) // 2
    if n == 1 and len(op.operands) > 1:
        one = plain_ops_of(block, 1)
        return None if one is None else one * len(op.operands)
    return plain_ops_of(block, n)


def plain_ops_of(block: Block, n: int) -> list[str] | None:
    """The op name of each of ``n`` results when ``block`` is a plain body."""
    *ops, ret = block.ops
    if len(ops) != n or len(ret.operands) != n:
        return None
    names = []
    for i, (o, r) in enumerate(zip(ops, ret.operands, strict=True)):
        pair = {block.args[i], block.args[n + i]}
        if o.name not in _PLAIN or r is not o.results[0] or set(o.operands) != pair \
                or len(o.operands) != 2:
            return None
        names.append(o.name)
    return names


class Reducer:
    """The reduction of one collective op's body."""

    def __init__(self, op: Op, device: object = None) -> None:
        self.op = op
        self.device = device
        self.plain = plain_ops(op)
        self.folds: dict[int, Executable] = {}

    def allreduce(self, transport: Transport, group: list[int], args: list) -> list:
        """The reduction of ``args`` over ``group``, on every member."""
        if self.plain is not None:
            return [self._plain(transport, group, x, name)
                    for x, name in zip(args, self.plain, strict=True)]
        block = self.op.regions[0].block
        if len(block.args) != 2:
            raise TlcError(f"{self.op.loc}: error: '{self.op.name}' with several operands "
                           "and a reduction body other than one element-wise add, multiply, "
                           "maximum, minimum, and, or, xor per operand is not supported "
                           "across processes yet")
        return [self._fold(i, transport.allgather(group, x)) for i, x in enumerate(args)]

    def _plain(self, transport: Transport, group: list[int], x: np.ndarray,
               name: str) -> np.ndarray:
        mpi_op, ufunc = _PLAIN[name]
        if x.dtype == np.bool_:
            ufunc = _BOOL.get(name, ufunc)
        elif x.dtype.kind not in "fc" or mpi_op in _MPI_FLOAT_OPS:
            out = transport.allreduce(group, x, mpi_op)
            if out is not None:
                return out
        stacked = transport.allgather(group, x)
        out = stacked[0].copy()
        for row in stacked[1:]:
            out = ufunc(out, row).astype(x.dtype)
        return out

    def _fold(self, i: int, stacked: np.ndarray) -> np.ndarray:
        """``body(...body(x0, x1)..., x_{n-1})`` of operand ``i`` on the device."""
        exe = self._map_executable(i)
        out = stacked[0]
        for row in stacked[1:]:
            (out,) = exe(np.ascontiguousarray(out), np.ascontiguousarray(row))
        return np.asarray(out)

    def _map_executable(self, i: int) -> Executable:
        exe = self.folds.get(i)
        if exe is None:
            from backend_opencl.api.compiler import compile_stablehlo_program

            exe = self.folds[i] = compile_stablehlo_program(
                map_module_text(self.op, i), device=self.device,
                filename=f"<{self.op.name} body>")
        return exe


def map_module_text(op: Op, i: int = 0) -> str:
    """A module whose ``main(a, b)`` applies ``op``'s body element-wise (``map``) to two
    values of the type of operand ``i``."""
    t = op.operands[i].type  # reduce_scatter's result is smaller than what is reduced
    assert isinstance(t, TensorType)
    block = Block()
    block.args = [Value(t, block, i, f"x{i}", op.loc) for i in range(2)]
    rank = len(t.shape)
    body = op.regions[0]
    m = Op("stablehlo.map", list(block.args), [t],
           {"dimensions": DenseArrayAttr("i64", tuple(range(rank)))}, [body], op.loc)
    m.results = [Value(t, m, 0, "r", op.loc)]
    block.ops = [m, Op("func.return", [m.results[0]], [], {}, [], op.loc)]
    main = Func("main", "", [t, t], [None, None], [t], [None], {}, Region([block]), op.loc)
    return str(Module(None, {}, [main], op.loc))
