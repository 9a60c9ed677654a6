"""Memory instructions: load, store, views (subview, expand, fuse), size, alloca."""

from __future__ import annotations

from collections.abc import Iterator

from backend_opencl.emit.cnames import address_space, ctype, literal, pointer_type, storage_type
from backend_opencl.emit.kernel import SLAB, KernelEmitter, handler
from backend_opencl.emit.numeric import load_value, store_value
from backend_opencl.emit.view import MemView, add, is_literal, mul
from tensorlang.ir.core import Instruction
from tensorlang.ir.ops import Slice
from tensorlang.ir.types import GroupType
from tensorlang.verify.bounds import GUARD


@handler("load")
def emit_load(em: KernelEmitter, inst: Instruction) -> None:
    """``load``: an element of a memref, or a member of a group (a new view)."""
    indices = [em.scalar(v) for v in inst.variadic("indices")]
    source = inst.single("operand")
    if isinstance(source.type, GroupType):
        _load_member(em, inst, indices[0])
        return
    view = em.view(source)
    parts = _complex_parts(em, view, indices)
    t = inst.result.scalar_type
    value = load_value(t, view.at(indices)) if parts is None else \
        f"(({ctype(t)})({parts[0]}, {parts[1]}))"
    ok = _access_guard(em, inst, view, indices)
    if ok:  # a skipped load yields zero
        value = f"{ok} ? {value} : {literal(0, t)}"
    em.define(inst.result, value)


def _access_guard(em: KernelEmitter, inst: Instruction, view: MemView,
                  indices: list[str]) -> str:
    """The run-time check of a marked load or store ('' when unmarked)."""
    if not inst.attrs.get(GUARD):
        return ""
    site = em.next_site()
    checks = [em.in_range(site, mode, index, "1", size)
              for mode, (index, size) in enumerate(zip(indices, view.shape, strict=True))]
    if any(checks):
        em.add_site(inst.name, inst, inst.single("operand"), view.type.order)
    return em.condition([view.valid, *checks], "in_bounds")


def _load_member(em: KernelEmitter, inst: Instruction, index: str) -> None:
    group = em.group(inst.single("operand"))
    t = inst.result.memref_type
    name = em.namer.fresh(inst.result.name or "member")
    base = f"({pointer_type(t)}){group.table}[{index}]" if group.base is None else \
        f"{group.base} + {group.table}[{index}]"
    offset = "" if group.offset == "0" else f" + {group.offset}"
    em.w.line(f"{pointer_type(t)} {name} = {base}{offset};")

    def member(expr: str, hint: str) -> str:
        if is_literal(expr):
            return expr
        var = em.namer.fresh(f"{name}_{hint}")
        em.w.line(f"const long {var} = {expr}[{index}];")
        return var

    shape = tuple(member(s, f"size{m}") for m, s in enumerate(group.shape))
    strides = tuple(member(s, f"stride{m}") for m, s in enumerate(group.strides))
    em.env[inst.result] = MemView(t, name, shape, strides)


@handler("store")
def emit_store(em: KernelEmitter, inst: Instruction) -> None:
    """``store``: one element."""
    indices = [em.scalar(v) for v in inst.variadic("indices")]
    view = em.view(inst.single("operand"))
    value = store_value(view.type.element, em.scalar(inst.single("value")))
    ok = _access_guard(em, inst, view, indices)
    parts = _complex_parts(em, view, indices)
    if parts is not None:
        value = em.scalar(inst.single("value"))
        if not value.isidentifier():
            value = em.namer.fresh("c")
            em.w.line(f"const {ctype(view.type.element)} {value} = "
                      f"{em.scalar(inst.operand('value'))};")
        text = f"{parts[0]} = {value}.x; {parts[1]} = {value}.y;"
        em.w.line(f"if ({ok}) {{ {text} }}" if ok else text)
        return
    em.w.line(f"if ({ok}) {view.at(indices)} = {value};" if ok else
              f"{view.at(indices)} = {value};")


def _complex_parts(em: KernelEmitter, view: MemView,
                   indices: list[str]) -> tuple[str, str] | None:
    """On CPUs, the real and imaginary parts of a complex element as two lvalues of its
    real type: PoCL's loop vectoriser gives up on loops of ``float2`` loads and stores
    that call ``exp`` (complex exp times a conjugate, 64k c64: 0.75 -> 0.15 ms)."""
    t = view.type.element
    if not (t.is_complex and em.plan.blocked):
        return None
    real = "float" if t.name == "c32" else "double"
    base = f"(({address_space(view.type)} {real}*){view.ptr})"
    offset = view.offset(indices)
    at = "0" if offset == "0" else f"2 * ({offset})"
    return f"{base}[{at}]", f"{base}[{at} + 1]"


def _dynamic(em: KernelEmitter, inst: Instruction) -> Iterator[str]:
    for value in inst.variadic("dynamic"):
        yield em.scalar(value)


def _pick(static: int | None, dynamic: Iterator[str]) -> str:
    return str(static) if static is not None else next(dynamic)


def _bind_view(em: KernelEmitter, inst: Instruction, src: MemView, offset: str,
               shape: list[str], strides: list[str], valid: str = "") -> None:
    """Bind the view; with ``valid`` (a guard's result) its sizes are zero when false."""
    t = inst.result.memref_type
    hint = inst.result.name or "view"
    ptr = src.ptr
    if offset != "0":
        ptr = em.namer.fresh(hint)
        em.w.line(f"{pointer_type(t)} {ptr} = {src.ptr} + {offset};")
    shape = [str(s) if s is not None else em.long_var(e, f"{hint}_size{m}")
             for m, (s, e) in enumerate(zip(t.shape, shape, strict=False))]
    if valid:
        shape = [em.long_var(f"{valid} ? {s} : 0", f"{hint}_size{m}")
                 for m, s in enumerate(shape)]
    strides = [str(s) if s is not None else em.long_var(e, f"{hint}_stride{m}")
               for m, (s, e) in enumerate(zip(t.strides, strides, strict=False))]
    em.env[inst.result] = MemView(t, ptr, tuple(shape), tuple(strides), valid)


@handler("subview")
def emit_subview(em: KernelEmitter, inst: Instruction) -> None:
    """``subview``: offset the pointer, keep strides, drop index-only modes."""
    src = em.view(inst.single("operand"))
    dynamic = _dynamic(em, inst)
    offsets, shape, strides = [], [], []
    marked, site = bool(inst.attrs.get(GUARD)), em.next_site()
    checks, details = [], []
    slices: tuple[Slice, ...] = inst.attr("slices")
    for mode, piece in enumerate(slices):
        details.append("slice" if piece.size != 0 else "index")
        if piece.full:
            shape.append(src.shape[mode])
            strides.append(src.strides[mode])
            continue
        offset = _pick(piece.offset, dynamic)
        offsets.append(mul(offset, src.strides[mode]))
        size = _pick(piece.size, dynamic)
        if marked:
            checks.append(em.in_range(site, mode, offset, "1" if size == "0" else size,
                                      src.shape[mode]))
        if size != "0":
            shape.append(size)
            strides.append(src.strides[mode])
    if any(checks):
        em.add_site("subview", inst, inst.single("operand"), src.type.order, tuple(details))
    valid = em.condition([src.valid, *checks], (inst.result.name or "view") + "_ok")
    _bind_view(em, inst, src, add(*offsets), shape, strides, valid)


@handler("expand")
def emit_expand(em: KernelEmitter, inst: Instruction) -> None:
    """``expand``: one mode becomes several with canonical strides inside it."""
    src = em.view(inst.single("operand"))
    mode: int = inst.attr_of("mode", int)
    dynamic = _dynamic(em, inst)
    sizes = [_pick(s, dynamic) for s in inst.attr("shape")]
    new_strides, stride = [], src.strides[mode]
    for size in sizes:
        new_strides.append(stride)
        stride = mul(stride, size)
    shape = list(src.shape[:mode]) + sizes + list(src.shape[mode + 1:])
    strides = list(src.strides[:mode]) + new_strides + list(src.strides[mode + 1:])
    check = ""
    if inst.attrs.get(GUARD):
        product = "1"
        for size in sizes:
            product = mul(product, size)
        check = em.equal(em.next_site(), mode, product, src.shape[mode])
        if check:
            em.add_site("expand", inst, inst.single("operand"), src.type.order)
    valid = em.condition([src.valid, check], (inst.result.name or "view") + "_ok")
    _bind_view(em, inst, src, "0", shape, strides, valid)


@handler("fuse")
def emit_fuse(em: KernelEmitter, inst: Instruction) -> None:
    """``fuse``: modes [from, to] become one with the first mode's stride."""
    src = em.view(inst.single("operand"))
    first, last = inst.attr_of("from_mode", int), inst.attr_of("to_mode", int)
    size = "1"
    for s in src.shape[first:last + 1]:
        size = mul(size, s)
    shape = list(src.shape[:first]) + [size] + list(src.shape[last + 1:])
    strides = list(src.strides[:first]) + [src.strides[first]] + list(src.strides[last + 1:])
    _bind_view(em, inst, src, "0", shape, strides, src.valid)


@handler("size")
def emit_size(em: KernelEmitter, inst: Instruction) -> None:
    """``size``: a mode size."""
    em.define(inst.result, em.view(inst.single("operand")).shape[inst.attr_of("mode", int)])


@handler("alloca")
def emit_alloca(em: KernelEmitter, inst: Instruction) -> None:
    """``alloca``: a pointer into the kernel's local memory slab."""
    t = inst.result.memref_type
    em.use_type(t)
    offset = em.local.offsets[inst]
    name = em.namer.fresh(inst.result.name or "tmp")
    if inst in em.local.reused:
        em.w.line("barrier(CLK_LOCAL_MEM_FENCE); // local memory reused")
    em.w.line(f"local {storage_type(t.element)}* {name} = "
              f"(local {storage_type(t.element)}*)((local char*){SLAB} + {offset});")
    em.env[inst.result] = MemView(t, name, tuple(map(str, t.shape)), tuple(map(str, t.strides)))


@handler("lifetime_stop")
def emit_lifetime_stop(em: KernelEmitter, inst: Instruction) -> None:
    """``lifetime_stop``: only affects local memory planning."""
    em.w.line(f"// lifetime of {em.view(inst.operand('operand')).ptr} ends")
