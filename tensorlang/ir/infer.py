"""Result types of every instruction: the single home of the reference's type rules.

The parser calls :func:`result_types` to type the results it creates, and the verifier
calls it again to re-check rewritten IR.  Where a result type cannot be computed (wrong
number of indices, a mode out of range, modes that cannot be fused, an expand shape
whose static product differs from the mode size) a :class:`CompileError` citing the
rule is raised at the instruction.

View rules (spec/tensor-language.rst):

- subview: strides are invariant; a mode given by an offset only, or with static size
  0, is removed (rank reduction); a slice's size becomes the mode size (dynamic if
  the size is a value); ``:`` keeps the whole mode, size and stride.
- expand: the mode is replaced by the expand shape (values are dynamic modes); the
  new strides follow the canonical computation from the mode's stride
  (``S, S*s1, S*s1*s2, ...``, dynamic once a factor is).
- fuse: the fused mode size is the product (dynamic if any factor is) and the stride
  is that of the first mode; the inner strides are dropped.
"""

from __future__ import annotations

from tensorlang.diagnostics import CompileError, Loc
from tensorlang.ir.core import Instruction, Value
from tensorlang.ir.ops import MATH_FNS, Slice
from tensorlang.ir.types import (
    I1,
    I32,
    INDEX,
    Dim,
    GroupType,
    MemRefType,
    ScalarType,
    Type,
    complex_part,
    dim_str,
    known_product,
)

_INDEX_RESULT = ("group_id", "group_size", "size")
_I32_RESULT = ("num_subgroups", "subgroup_size", "subgroup_id", "subgroup_local_id")
_ATTR_RESULT = {"alloca": "type", "arith": "type", "constant": "type", "cast": "to_type",
                "select": "type", "bitcast": "to_type", "complex": "type"}


def result_types(inst: Instruction) -> list[Type]:
    """The types of ``inst``'s results, computed from its operands and attributes."""
    name = inst.name
    if name in _INDEX_RESULT:
        if name == "size":
            _mode_in_range(inst, _memref_operand(inst), inst.attr_of("mode", int), "size")
        return [INDEX]
    if name in _I32_RESULT:
        return [I32]
    if name in _ATTR_RESULT:
        return [inst.attr(_ATTR_RESULT[name])]
    if name == "cmp":
        return [I1]
    if name == "math":
        return [math_result_type(inst.attr_of("fn", str), inst.attr("type"))]
    if name == "if":
        return list(inst.attr("result_types"))
    if name == "for":
        return [v.type for v in inst.variadic("init")]
    if name in _VIEWS:
        return [_VIEWS[name](inst)]
    return []


def math_result_type(fn: str, t: ScalarType) -> ScalarType:
    """``math.<fn>`` on type ``t``: ``t``, its real part type (abs, real, imag) or i1."""
    result = MATH_FNS[fn].result
    if result == "i1":
        return I1
    return complex_part(t) if result == "real" else t


def result_type(inst: Instruction) -> Type:
    """The type of the single result of ``inst``."""
    types = result_types(inst)
    assert len(types) == 1, f"{inst.name} has {len(types)} results"
    return types[0]


def _operand_type(inst: Instruction) -> Type:
    value: Value = inst.single("operand")
    return value.type


def _memref_operand(inst: Instruction) -> MemRefType:
    t = _operand_type(inst)
    if not isinstance(t, MemRefType):
        raise CompileError.at(inst.loc, f"{inst.name}: the operand must have memref type, "
                              f"got {t}")
    return t


def _mode_in_range(inst: Instruction, t: MemRefType, mode: int, what: str) -> None:
    if not 0 <= mode < t.order:
        raise CompileError.at(inst.loc, f"{what}: mode {mode} is out of range for {t} "
                              f"(0 <= mode < order = {t.order})")


def _load(inst: Instruction) -> Type:
    t = _operand_type(inst)
    count = len(inst.variadic("indices"))
    return load_type(t, count, inst.loc)


def load_type(t: Type, count: int, loc: Loc) -> Type:
    """load: a memref's element type (one index per mode), a group's memref (one index)."""
    if isinstance(t, GroupType):
        if count != 1:
            raise CompileError.at(loc, f"load: a group takes exactly one index, got {count}")
        return t.memref
    if not isinstance(t, MemRefType):
        raise CompileError.at(loc, f"load: the operand must have memref or group type, got {t}")
    if count != t.order:
        raise CompileError.at(loc, f"load: {t} needs {t.order} indices (one per mode), "
                              f"got {count}")
    return t.element


def _subview(inst: Instruction) -> Type:
    return subview_type(_memref_operand(inst), tuple(inst.attr("slices")), inst.loc)


def subview_type(t: MemRefType, slices: tuple[Slice, ...], loc: Loc) -> MemRefType:
    """subview: invariant strides, rank reduction, output mode sizes from the slices."""
    if len(slices) != t.order:
        raise CompileError.at(loc, f"subview: {t} needs {t.order} indices or slices (one per "
                              f"mode), got {len(slices)}")
    shape: list[Dim] = []
    strides: list[Dim] = []
    for mode, piece in enumerate(slices):
        _check_slice(piece, mode, loc)
        if piece.full:
            shape.append(t.shape[mode])
        elif piece.size == 0:
            continue
        else:
            shape.append(piece.size)
        strides.append(t.strides[mode])
    return MemRefType(t.element, tuple(shape), tuple(strides), t.addrspace)


def _check_slice(piece: Slice, mode: int, loc: Loc) -> None:
    if piece.full:
        return
    if piece.offset is not None and piece.offset < 0:
        raise CompileError.at(loc, f"subview: the offset {piece.offset} of mode {mode} must be "
                              "non-negative")
    if piece.size is not None and piece.size < 0:
        raise CompileError.at(loc, f"subview: the size {piece.size} of mode {mode} must be "
                              "positive (or 0 to remove the mode)")


def _expand(inst: Instruction) -> Type:
    t = _memref_operand(inst)
    return expand_type(t, inst.attr_of("mode", int), tuple(inst.attr("shape")), inst.loc)


def expand_type(t: MemRefType, mode: int, shape: tuple[Dim, ...], loc: Loc) -> MemRefType:
    """expand: the mode replaced by ``shape``, new strides by the canonical computation."""
    if not 0 <= mode < t.order:
        raise CompileError.at(loc, f"expand: mode {mode} is out of range for {t} "
                              f"(0 <= mode < order = {t.order})")
    if len(shape) < 2:
        raise CompileError.at(loc, f"expand: the expand shape needs at least two modes, "
                              f"got {len(shape)}")
    size, total = t.shape[mode], known_product(shape)
    if total is not None and size is not None and total != size:
        raise CompileError.at(loc, f"expand: the expand shape {_shape(shape)} has "
                              f"{total} elements but mode {mode} of {t} has size {size} "
                              "(the product of the expand shape must equal the mode size)")
    strides: list[Dim] = []
    stride = t.strides[mode]
    for extent in shape:
        strides.append(stride)
        stride = None if stride is None or extent is None else stride * extent
    return MemRefType(t.element, t.shape[:mode] + shape + t.shape[mode + 1:],
                      t.strides[:mode] + tuple(strides) + t.strides[mode + 1:], t.addrspace)


def _fuse(inst: Instruction) -> Type:
    t = _memref_operand(inst)
    return fuse_type(t, inst.attr_of("from_mode", int), inst.attr_of("to_mode", int), inst.loc)


def fuse_type(t: MemRefType, first: int, last: int, loc: Loc) -> MemRefType:
    """fuse: modes [first, last] become one mode of their product size; strides kept."""
    if not 0 <= first < last < t.order:
        raise CompileError.at(loc, f"fuse: modes [{first},{last}] are out of range for {t} "
                              f"(0 <= from < to < order = {t.order})")
    for k in range(first, last):
        stride, extent, following = t.strides[k], t.shape[k], t.strides[k + 1]
        if stride is not None and extent is not None and following is not None \
                and stride * extent != following:
            raise CompileError.at(loc, f"fuse: modes {k} and {k + 1} of {t} cannot be fused "
                                  f"(S{k + 1} * s{k + 1} = {stride} * {extent} must equal "
                                  f"S{k + 2} = {following})")
    fused = t.shape[first:last + 1]
    size = known_product(fused)
    return MemRefType(t.element, t.shape[:first] + (size,) + t.shape[last + 1:],
                      t.strides[:first + 1] + t.strides[last + 1:], t.addrspace)


def _shape(shape: tuple[Dim, ...]) -> str:
    return "x".join(dim_str(d) for d in shape)


_VIEWS = {"load": _load, "subview": _subview, "expand": _expand, "fuse": _fuse}
