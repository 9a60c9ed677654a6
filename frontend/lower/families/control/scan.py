"""chlo.scan with a body elementwise over the slice: one kernel, a sequential loop per
slice element.

``chlo.scan`` runs its body once per index ``i`` along ``dimension`` (from the end with
``is_reverse``): ``(outs..., carries...) = body(inputs[..., i, ...]..., carries...)``;
the outputs are the ``outs`` stacked along ``dimension``, then come the final carries.
When every value of the body has the slice's shape and every op of it is elemental (the
common cumulative sum / max / argmax bodies), element ``j`` of every slice depends only
on element ``j`` of the inputs' slices and of the carries, so each work-item takes slice
elements (``foreach_nd`` over the slice shape, :meth:`KernelBuilder.elements_nd`) and
walks the scanned dimension with the carries in registers, storing each step's outputs.
Other bodies (matrix products, reductions over the slice) are refused with a diagnostic.
"""

from __future__ import annotations

from math import prod

import numpy as np

from frontend.ir.core import Op, Value
from frontend.lower.core import types
from frontend.lower.core.builder import IndexExpr, groups_nd
from frontend.lower.core.driver import FuncLowering
from frontend.lower.core.fused import ELEMENTWISE, Fused
from frontend.lower.core.registry import ELEMENTAL, KERNEL, kernel
from frontend.lower.families.control.scan_loop import lower_scan_loop


def _slice_shape(op: Op, dim: int) -> tuple[int, ...]:
    """The shape every body value must have (the inputs' shape without ``dim``)."""
    inits = op.operand_group("inits")
    inputs = op.operand_group("inputs")
    if inputs:
        shape = types.shape(inputs[0])
        return tuple(shape[:dim]) + tuple(shape[dim + 1:])
    return tuple(types.shape(inits[0])) if inits else ()


def _pointwise(op: Op, shape: tuple[int, ...]) -> bool:
    """Every body value has ``shape`` and every body op reads its operands at the
    element's own index: elementwise ops, splat constants, broadcasts of scalars (a
    reverse or transpose would read another element of a bound argument)."""
    block = op.regions[0].block
    values: list[Value] = list(block.args) + list(op.operand_group("inits"))
    for o in block.ops[:-1]:
        scalar_broadcast = o.name == "stablehlo.broadcast_in_dim" and \
            types.shape(o.operands[0]) == ()
        if o.name not in ELEMENTAL or o.regions or not (
                o.name in ELEMENTWISE or o.name in _ALSO or scalar_broadcast):
            return False
        if o.name != "stablehlo.constant" or not _splat(o):  # a splat reads no element
            values += list(o.results)
    return all(tuple(types.shape(v)) == shape for v in values)


def _splat(op: Op) -> bool:
    """A constant whose elements are all equal (its elemental lowering is one literal;
    the others get their buffer before the kernel)."""
    array = np.asarray(op.dense_attr("value"))
    return array.size <= 1 or bool((array == array.reshape(-1)[0]).all())


_ALSO = {"chlo.mulhi", "stablehlo.constant"}
"""Elemental ops outside ``fused.ELEMENTWISE`` that read operands at the same index (a
constant with a lowering here is a splat)."""


@kernel("chlo.scan")
def scan(lw: FuncLowering, op: Op) -> None:
    """The scan as one kernel over the slice elements (see the module docstring)."""
    dim = op.int_attr("dimension", 0)
    shape = _slice_shape(op, dim)
    if not _pointwise(op, shape):
        lower_scan_loop(lw, op)
        return
    inputs = op.operand_group("inputs")
    length = types.shape(inputs[0])[dim] if inputs else 0
    for o in op.regions[0].block.ops:  # other constants are read from buffers
        if o.name == "stablehlo.constant" and not _splat(o):
            KERNEL[o.name](lw, o)
    outs = [lw.buffer_for(r) for r in op.results]
    if prod(shape) > 0:
        _scan_kernel(lw, op, (dim, length, shape), outs)
    for r, buf in zip(op.results, outs, strict=True):
        lw.bind(r, buf)


def _scan_kernel(lw: FuncLowering, op: Op, geometry: tuple[int, int, tuple[int, ...]],
                 outs: list[int]) -> None:
    """Emit and launch the kernel writing ``outs`` (outputs, then final carries)."""
    dim, length, shape = geometry
    inputs, inits = op.operand_group("inputs"), op.operand_group("inits")
    n_out = len(op.results) - len(inits)
    reverse = bool(op.attr("is_reverse", False))
    with lw.kernel("scan") as (k, f):
        with k.elements_nd(list(shape)) as idx:
            start = [f.value(v, idx) for v in inits]
            ctypes = [types.elem(v) for v in inits]
            with k.loop(0, length, start, ctypes) as loop:
                pos: IndexExpr = loop.var
                if reverse:
                    pos = k.isub(length - 1, loop.var)
                full = [*idx[:dim], pos, *idx[dim:]]
                args = [f.value(v, full) for v in inputs] + loop.carried
                results = _body(f, op, args, idx)
                for r, buf, x in zip(op.results[:n_out], outs, results, strict=False):
                    rshape = types.shape(r)
                    k.store(x, buf, types.elem(r), prod(rshape), k.linear(full, rshape))
                loop.yields = results[n_out:]
            for r, buf, x in zip(op.results[n_out:], outs[n_out:], loop.results, strict=True):
                k.store(x, buf, types.elem(r), max(prod(shape), 1), k.linear(idx, shape))
    lw.launch_last(groups_nd(list(shape)))


def _body(f: Fused, op: Op, args: list[str], idx: list[IndexExpr]) -> list[str]:
    """The body's results at slice element ``idx``, its arguments bound to ``args``."""
    block = op.regions[0].block
    saved = dict(f.bound)
    for a, ssa in zip(block.args, args, strict=True):
        f.bound[a] = ssa
    for o in block.ops[:-1]:
        types.check_op_types(o)
    results = [f.value(r, idx) for r in block.ops[-1].operands]
    f.bound = saved
    return results
