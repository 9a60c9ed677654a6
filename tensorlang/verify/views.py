"""Memory instructions: alloca, load, store, size, subview, expand, fuse, lifetime_stop.

Rules (docs/language-constraints.md, "Memory instructions"); each message cites
``<instruction> (Cn)``.  Result types of views are re-derived with
:mod:`tensorlang.ir.infer` and compared with the IR's.
"""

from __future__ import annotations

from math import prod

from tensorlang.ir.core import Instruction, Value
from tensorlang.ir.types import INDEX, AddressSpace, GroupType, MemRefType
from tensorlang.verify.errors import fail, shape_str, value_name
from tensorlang.verify.scalar import expect_result, expect_type


def _declared(inst: Instruction) -> MemRefType:
    """C1: the operand has the type written after ':' and it is a memref."""
    declared = _declared_any(inst)
    if not isinstance(declared, MemRefType):
        value = inst.single("operand")
        raise fail(inst, "C1", f"{value_name(value)} must have memref type, got {declared}",
                   value)
    return declared


def _declared_or_group(inst: Instruction) -> MemRefType | GroupType:
    """C1: the operand has the type written after ':' and it is a memref or group."""
    declared = _declared_any(inst)
    if not isinstance(declared, (MemRefType, GroupType)):
        value = inst.single("operand")
        raise fail(inst, "C1", f"{value_name(value)} must have memref or group type, got "
                   f"{declared}", value)
    return declared


def _declared_any(inst: Instruction) -> object:
    """C1: the operand has the type written after ':'."""
    value = inst.single("operand")
    declared = inst.attr("type")
    if value.type != declared:
        raise fail(inst, "C1", f"{value_name(value)} has type {value.type} but the instruction "
                   f"says {declared}", value)
    return declared


def _indices(inst: Instruction, rule: str, values: list[Value], what: str = "index") -> None:
    for value in values:
        expect_type(inst, rule, value, INDEX, what)


def _mode(inst: Instruction, rule: str, mode: int, order: int, what: str = "mode") -> None:
    if not 0 <= mode < order:
        raise fail(inst, rule, f"{what} {mode} is out of range for a memref of order {order} "
                   f"(0 <= {what} < {order})", inst.single("operand"))


def check_alloca(inst: Instruction) -> None:
    """alloca: C1 static memref type, C2 local address space, C3 result type."""
    t = inst.attr("type")
    if not isinstance(t, MemRefType) or not t.is_static:
        raise fail(inst, "C1", f"the allocated type must be a memref with static shape and "
                   f"strides, got {t}")
    if t.addrspace is not AddressSpace.LOCAL:
        raise fail(inst, "C2", f"alloca returns local memory: write {_as_local(t)}")
    expect_result(inst, "C3", t)


def _as_local(t: MemRefType) -> str:
    return str(MemRefType(t.element, t.shape, t.strides, AddressSpace.LOCAL))


def check_load(inst: Instruction) -> None:
    """load: C1 declared type, C2 index count, C3 index types, C4 result type."""
    t = _declared_or_group(inst)
    indices: list[Value] = inst.variadic("indices")
    if isinstance(t, GroupType):
        expected, needs = 1, "a group takes one index"
    else:
        expected, needs = t.order, f"order {t.order} needs {t.order}"
    if len(indices) != expected:
        raise fail(inst, "C2", f"{len(indices)} indices given but {needs}",
                   inst.single("operand"))
    _indices(inst, "C3", indices)
    expect_result(inst, "C4", t.memref if isinstance(t, GroupType) else t.element)


def check_store(inst: Instruction) -> None:
    """store: C1 declared memref type, C2 index count, C3 index types, C4 value type."""
    t = _declared(inst)
    indices: list[Value] = inst.variadic("indices")
    if len(indices) != t.order:
        raise fail(inst, "C2", f"{len(indices)} indices given but order {t.order} needs "
                   f"{t.order}", inst.single("operand"))
    _indices(inst, "C3", indices)
    expect_type(inst, "C4", inst.single("value"), t.element, "the stored value")


def check_size(inst: Instruction) -> None:
    """size: C1 declared memref type, C2 mode in range, C3 result index."""
    t = _declared(inst)
    _mode(inst, "C2", inst.attr_of("mode", int), t.order)
    expect_result(inst, "C3", INDEX)


def check_lifetime_stop(inst: Instruction) -> None:
    """lifetime_stop: C1 the operand is the result of an alloca."""
    value: Value = inst.single("operand")
    owner = value.owner
    if not isinstance(owner, Instruction) or owner.name != "alloca":
        raise fail(inst, "C1", f"{value_name(value)} must be the result of an alloca", value)


def check_subview(inst: Instruction) -> None:
    """subview: C1 type, C2 slice count, C3 dynamic operands, C4 offsets/sizes, C5 bounds,
    C6 result type."""
    t = _declared(inst)
    slices = inst.attr("slices")
    if len(slices) != t.order:
        raise fail(inst, "C2", f"{len(slices)} indices or slices given but the memref has "
                   f"order {t.order}", inst.single("operand"))
    wanted = sum((s.offset is None) + (s.size is None) for s in slices if not s.full)
    _dynamic(inst, "C3", wanted, "offsets and sizes")
    for mode, (piece, size) in enumerate(zip(slices, t.shape, strict=True)):
        if not piece.full:
            _check_slice(inst, mode, piece.offset, piece.size, size)
    _compare_result(inst, "C6")


def _dynamic(inst: Instruction, rule: str, wanted: int, what: str) -> None:
    dynamic: list[Value] = inst.variadic("dynamic")
    if len(dynamic) != wanted:
        raise fail(inst, rule, f"{len(dynamic)} dynamic operands for {wanted} dynamic {what}")
    _indices(inst, rule, dynamic, "dynamic operand")


def _check_slice(inst: Instruction, mode: int, offset: int | None, size: int | None,
                 extent: int | None) -> None:
    if offset is not None and offset < 0:
        raise fail(inst, "C4", f"mode {mode}: offset {offset} must be non-negative")
    if size is not None and size < 0:
        raise fail(inst, "C4", f"mode {mode}: size {size} must be positive (or 0 to drop the "
                   "mode)")
    if offset is None or extent is None:
        return
    end = offset + (size or 1)  # an index (size 0) or a dynamic size covers >= 1 element
    if end > extent:
        block = f"[{offset}, {end})" if size else f"{'index' if size == 0 else 'offset'} {offset}"
        raise fail(inst, "C5", f"mode {mode}: {block} lies outside the mode of size {extent}",
                   inst.single("operand"))


def check_expand(inst: Instruction) -> None:
    """expand: C1 type, C2 mode, C3 expand shape and dynamic operands, C4 product, C5 result."""
    t = _declared(inst)
    mode, shape = inst.attr_of("mode", int), tuple(inst.attr("shape"))
    _mode(inst, "C2", mode, t.order)
    if len(shape) < 2:
        raise fail(inst, "C3", f"the expand shape needs at least two modes, got {len(shape)}")
    if any(s is not None and s < 0 for s in shape):
        raise fail(inst, "C3", f"the expand shape {shape_str(shape)} has a negative size")
    _dynamic(inst, "C3", sum(s is None for s in shape), "expand sizes")
    _check_product(inst, shape, t.shape[mode], mode)
    _compare_result(inst, "C5")


def _check_product(inst: Instruction, shape: tuple[int | None, ...], extent: int | None,
                   mode: int) -> None:
    if extent is None:
        return
    known = prod(s for s in shape if s is not None)
    if None not in shape and known != extent:
        raise fail(inst, "C4", f"the expand shape {shape_str(shape)} has {known} elements but "
                   f"mode {mode} has size {extent}", inst.single("operand"))
    if None in shape and (known == 0 or extent % known != 0):
        raise fail(inst, "C4", f"the static part of the expand shape {shape_str(shape)} "
                   f"({known}) does not divide the size {extent} of mode {mode}",
                   inst.single("operand"))


def check_fuse(inst: Instruction) -> None:
    """fuse: C1 type, C2 0 <= from < to < order, C3 compatible strides, C4 result type."""
    t = _declared(inst)
    first, last = inst.attr_of("from_mode", int), inst.attr_of("to_mode", int)
    if not 0 <= first < last < t.order:
        raise fail(inst, "C2", f"modes [{first},{last}] must satisfy 0 <= from < to < order "
                   f"= {t.order}", inst.single("operand"))
    for k in range(first, last):
        stride, size, following = t.strides[k], t.shape[k], t.strides[k + 1]
        if stride is None or size is None or following is None or stride * size == following:
            continue
        raise fail(inst, "C3", f"modes {k} and {k + 1} cannot be fused: S{k + 1} * s{k + 1} = "
                   f"{stride} * {size} = {stride * size} but S{k + 2} = {following}",
                   inst.single("operand"))
    _compare_result(inst, "C4")


def _compare_result(inst: Instruction, rule: str) -> None:
    from tensorlang.ir import infer

    expected = infer.result_type(inst)
    expect_result(inst, rule, expected)


CHECKS = {"alloca": check_alloca, "load": check_load, "store": check_store, "size": check_size,
          "lifetime_stop": check_lifetime_stop, "subview": check_subview,
          "expand": check_expand, "fuse": check_fuse}
"""The memory family's check per instruction name."""
