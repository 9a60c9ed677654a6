"""Hypothesis strategies: random well-typed tensor-language programs, built as IR.

:func:`programs` draws functions with scalar, memref (dynamic modes, strided layouts,
both address spaces) and group arguments, and bodies mixing every instruction with
nested regions (parallel, foreach, for with loop-carried values, if/else with
results).  Operands are always visible values of the types the parser checks, and
result types come from :mod:`tensorlang.ir.infer`, so printing a drawn program and
parsing it back must give the same program.  Value names are drawn from a small pool
with duplicates and invalid spellings so that the printer must rename.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from tensorlang.diagnostics import CompileError
from tensorlang.ir import infer
from tensorlang.ir.core import Function, Instruction, Program, Region, Value
from tensorlang.ir.ops import MATH_FNS, OPS, ArithOp, CmpCond, Slice, Transpose
from tensorlang.ir.types import (
    I1,
    INDEX,
    SCALAR_TYPES,
    AddressSpace,
    Dim,
    GroupType,
    MemRefType,
    ScalarType,
    Type,
    complex_part,
)

_NAMES = ["", "", "", "a", "b", "x", "tmp0", "Q_9", "0", "1", "7", "bad-name", "é"]
_SCALARS = sorted(SCALAR_TYPES.values(), key=str)
_MAX_DEPTH = 3
_INT_OPS = [op for op in ArithOp]
_FLOAT_OPS = [ArithOp.ADD, ArithOp.SUB, ArithOp.MUL, ArithOp.DIV, ArithOp.REM, ArithOp.NEG]
_COMPLEX_OPS = [ArithOp.ADD, ArithOp.SUB, ArithOp.MUL, ArithOp.DIV, ArithOp.NEG]


class _Gen:
    """Draws one function; ``scopes`` holds the values visible in each open region."""

    def __init__(self, draw: Any) -> None:
        self.draw = draw
        self.scopes: list[list[Value]] = []
        self.regions: list[Region] = []

    # -- types -----------------------------------------------------------------------

    def scalar_type(self) -> ScalarType:
        return self.draw(st.sampled_from(_SCALARS))

    def memref_type(self, *, static: bool = False, space: AddressSpace | None = None
                    ) -> MemRefType:
        order = self.draw(st.integers(0, 3))
        sizes = st.integers(1, 6) if static else st.one_of(st.none(), st.integers(1, 6))
        shape = tuple(self.draw(sizes) for _ in range(order))
        strides = self._strides(shape, static)
        if space is None:
            space = self.draw(st.sampled_from([AddressSpace.GLOBAL, AddressSpace.LOCAL]))
        return MemRefType(self.scalar_type(), shape, strides, space)

    def _strides(self, shape: tuple[Dim, ...], static: bool) -> tuple[Dim, ...]:
        strides: list[Dim] = []
        for i, _ in enumerate(shape):
            if i == 0:
                choices = [1, 2] if static else [1, 1, 2, None]
                strides.append(self.draw(st.sampled_from(choices)))
                continue
            prev, size = strides[-1], shape[i - 1]
            if prev is not None and size is not None:
                options = st.integers(prev * size, prev * size + 3)
            else:
                options = st.integers(1, 64)
            strides.append(self.draw(options if static else st.one_of(options, st.none())))
        return tuple(strides)

    def group_type(self) -> GroupType:
        memref = self.memref_type(space=AddressSpace.GLOBAL)
        return GroupType(memref, self.draw(st.one_of(st.just(0), st.none(), st.integers(1, 9))))

    def any_type(self) -> Type:
        kind = self.draw(st.sampled_from(["scalar", "scalar", "memref", "memref", "group"]))
        return {"scalar": self.scalar_type, "memref": self.memref_type,
                "group": self.group_type}[kind]()

    # -- values ----------------------------------------------------------------------

    def name(self) -> str:
        return self.draw(st.sampled_from(_NAMES))

    def visible(self, pred: Any) -> list[Value]:
        return [v for scope in self.scopes for v in scope if pred(v.type)]

    def pick(self, pred: Any) -> Value | None:
        values = self.visible(pred)
        return self.draw(st.sampled_from(values)) if values else None

    def scalar(self, t: ScalarType) -> Value:
        """A visible value of type ``t``, or a new constant."""
        value = self.pick(lambda u: u == t) if self.draw(st.booleans()) else None
        return value if value is not None else self.constant(t)

    def constant(self, t: ScalarType) -> Value:
        if t.is_bool:
            value: object = self.draw(st.booleans())
        elif t.is_int:
            value = self.draw(st.integers(-(2**63) + 1, 2**63 - 1))
        elif t.is_float:
            value = self.draw(st.floats(allow_nan=True, allow_infinity=True))
        else:
            value = complex(self.draw(st.floats()), self.draw(st.floats()))
        return self.emit("constant", {}, {"value": value, "type": t})[0]

    # -- instructions ----------------------------------------------------------------

    def emit(self, op: str, operands: dict[str, Any], attrs: dict[str, Any],
             regions: list[Region] | None = None) -> list[Value]:
        """Append an instruction (results typed by infer) to the current region."""
        inst = Instruction(OPS[op], operands, attrs, regions=regions or [])
        inst.results = [Value(t, self.name(), owner=inst) for t in infer.result_types(inst)]
        self.regions[-1].append(inst)
        self.scopes[-1].extend(inst.results)
        return inst.results

    def region(self, args: list[Value], depth: int, yields: tuple[ScalarType, ...] | None
               ) -> Region:
        """A region of a few random instructions, ending with a yield of ``yields``."""
        region = Region(args=args)
        self.regions.append(region)
        self.scopes.append(list(args))
        for _ in range(self.draw(st.integers(0, 4))):
            self.instruction(depth)
        if yields is not None and (yields or self.draw(st.booleans())):
            values = [self.scalar(t) for t in yields]
            self.emit("yield", {"values": values}, {"types": yields})
        self.scopes.pop()
        self.regions.pop()
        return region

    def instruction(self, depth: int) -> None:
        kinds = list(_SIMPLE)
        if depth < _MAX_DEPTH:
            kinds += list(_NESTED)
        kind = self.draw(st.sampled_from(kinds))
        builder = _SIMPLE.get(kind) or _NESTED[kind]
        builder(self, depth)

    def function(self, index: int) -> Function:
        args = [Value(self.any_type(), self.name()) for _ in range(self.draw(st.integers(0, 4)))]
        body = Region()
        self.regions, self.scopes = [body], [list(args)]
        for _ in range(self.draw(st.integers(0, 6))):
            self.instruction(0)
        wg = self.draw(st.one_of(st.none(), st.tuples(st.integers(1, 64), st.integers(1, 8))))
        sg = self.draw(st.one_of(st.none(), st.sampled_from([8, 16, 32])))
        return Function(f"k{index}", args, body, wg, sg)


# -- simple instructions -------------------------------------------------------------

def _arith(g: _Gen, depth: int) -> None:
    t = g.scalar_type()
    ops = _INT_OPS if t.is_int else _FLOAT_OPS if t.is_float else _COMPLEX_OPS
    op = g.draw(st.sampled_from(ops))
    b = None if op.unary else g.scalar(t)
    g.emit("arith", {"a": g.scalar(t), "b": b}, {"op": op, "type": t})


def _cmp(g: _Gen, depth: int) -> None:
    t = g.scalar_type()
    g.emit("cmp", {"a": g.scalar(t), "b": g.scalar(t)},
           {"cond": g.draw(st.sampled_from(list(CmpCond))), "type": t})


def _cast(g: _Gen, depth: int) -> None:
    src, dst = g.scalar_type(), g.scalar_type()
    g.emit("cast", {"a": g.scalar(src)}, {"from_type": src, "to_type": dst})


def _constant(g: _Gen, depth: int) -> None:
    g.constant(g.scalar_type())


def _nullary(g: _Gen, depth: int) -> None:
    g.emit(g.draw(st.sampled_from(["group_id", "group_size", "num_subgroups", "subgroup_size",
                                   "subgroup_id", "subgroup_local_id"])), {}, {})


def _alloca(g: _Gen, depth: int) -> None:
    g.emit("alloca", {}, {"type": g.memref_type(static=True, space=AddressSpace.LOCAL)})


def _barrier(g: _Gen, depth: int) -> None:
    g.emit("barrier", {}, {"fence_global": g.draw(st.booleans()),
                           "fence_local": g.draw(st.booleans())})


def _memref(g: _Gen, min_order: int = 0) -> Value:
    value = g.pick(lambda t: isinstance(t, MemRefType) and t.order >= min_order)
    if value is None:
        t = g.memref_type(static=True, space=AddressSpace.LOCAL)
        if t.order < min_order:
            t = MemRefType.of(t.element, (4,) * min_order, None, AddressSpace.LOCAL)
        value = g.emit("alloca", {}, {"type": t})[0]
    return value


def _load(g: _Gen, depth: int) -> None:
    group = g.pick(lambda t: isinstance(t, GroupType))
    if group is not None and g.draw(st.booleans()):
        g.emit("load", {"operand": group, "indices": [g.scalar(INDEX)]}, {"type": group.type})
        return
    memref = _memref(g)
    indices = [g.scalar(INDEX) for _ in range(memref.type.order)]
    g.emit("load", {"operand": memref, "indices": indices}, {"type": memref.type})


def _store(g: _Gen, depth: int) -> None:
    memref = _memref(g)
    t = memref.type
    g.emit("store", {"value": g.scalar(t.element), "operand": memref,
                     "indices": [g.scalar(INDEX) for _ in range(t.order)]}, {"type": t})


def _size(g: _Gen, depth: int) -> None:
    memref = _memref(g, 1)
    mode = g.draw(st.integers(0, memref.type.order - 1))
    g.emit("size", {"operand": memref}, {"mode": mode, "type": memref.type})


def _dim(g: _Gen, d: Dim, dynamic: list[Value]) -> Dim:
    if d is None:
        dynamic.append(g.scalar(INDEX))
    return d


def _subview(g: _Gen, depth: int) -> None:
    memref = _memref(g)
    dynamic: list[Value] = []
    slices = []
    for _ in range(memref.type.order):
        kind = g.draw(st.sampled_from(["full", "index", "slice"]))
        if kind == "full":
            slices.append(Slice(0, 0, full=True))
            continue
        offset = _dim(g, g.draw(st.one_of(st.none(), st.integers(0, 3))), dynamic)
        size = 0 if kind == "index" else _dim(g, g.draw(st.one_of(st.none(), st.integers(1, 4))),
                                               dynamic)
        slices.append(Slice(offset, size))
    g.emit("subview", {"operand": memref, "dynamic": dynamic},
           {"slices": tuple(slices), "type": memref.type})


def _expand(g: _Gen, depth: int) -> None:
    memref = _memref(g, 1)
    t = memref.type
    mode = g.draw(st.integers(0, t.order - 1))
    size = t.shape[mode]
    if size is not None and g.draw(st.booleans()):
        first = g.draw(st.sampled_from([d for d in range(1, size + 1) if size % d == 0]))
        shape: tuple[Dim, ...] = (first, size // first)
    else:
        count = g.draw(st.integers(2, 3))
        shape = (None,) + tuple(g.draw(st.one_of(st.none(), st.integers(1, 4)))
                                for _ in range(count - 1))
    dynamic: list[Value] = []
    for d in shape:
        _dim(g, d, dynamic)
    g.emit("expand", {"operand": memref, "dynamic": dynamic},
           {"mode": mode, "shape": shape, "type": t})


def _fuse(g: _Gen, depth: int) -> None:
    memref = _memref(g, 2)
    t = memref.type
    first = g.draw(st.integers(0, t.order - 2))
    last = g.draw(st.integers(first + 1, t.order - 1))
    try:
        infer.fuse_type(t, first, last, memref.loc)
    except CompileError:
        return
    g.emit("fuse", {"operand": memref}, {"from_mode": first, "to_mode": last, "type": t})


def _blas(g: _Gen, depth: int) -> None:
    name = g.draw(st.sampled_from(["axpby", "gemm", "gemv", "ger", "hadamard_product", "sum"]))
    element = g.scalar_type()
    slots = {"alpha": g.scalar(element), "beta": g.scalar(element)}
    for slot in ("A", "B", "C") if len(OPS[name].operands) == 5 else ("A", "B"):
        slots[slot] = _memref(g)
    attrs: dict[str, Any] = {"atomic": g.draw(st.booleans())}
    if name in ("axpby", "gemm", "gemv", "sum"):
        attrs["trans_a"] = g.draw(st.sampled_from(list(Transpose)))
    if name == "gemm":
        attrs["trans_b"] = g.draw(st.sampled_from(list(Transpose)))
    g.emit(name, {o.name: slots[o.name] for o in OPS[name].operands}, attrs)


def _lifetime_stop(g: _Gen, depth: int) -> None:
    g.emit("lifetime_stop", {"operand": _memref(g)}, {})


# -- instructions with regions -------------------------------------------------------

def _int_type(g: _Gen) -> ScalarType:
    return g.draw(st.sampled_from([t for t in _SCALARS if t.is_int and not t.is_bool]))


def _parallel(g: _Gen, depth: int) -> None:
    g.emit("parallel", {}, {}, [g.region([], depth + 1, None)])


def _foreach(g: _Gen, depth: int) -> None:
    t = _int_type(g)
    bounds = {"from": g.scalar(t), "to": g.scalar(t)}
    region = g.region([Value(t, g.name())], depth + 1, None)
    g.emit("foreach", bounds, {"loop_type": t}, [region])


def _for(g: _Gen, depth: int) -> None:
    t = _int_type(g)
    step = g.scalar(t) if g.draw(st.booleans()) else None
    operands: dict[str, Any] = {"from": g.scalar(t), "to": g.scalar(t), "step": step}
    carried = tuple(g.scalar_type() for _ in range(g.draw(st.integers(0, 2))))
    operands["init"] = [g.scalar(c) for c in carried]
    args = [Value(t, g.name())] + [Value(c, g.name()) for c in carried]
    region = g.region(args, depth + 1, carried if carried else None)
    g.emit("for", operands, {"loop_type": t}, [region])


def _if(g: _Gen, depth: int) -> None:
    types = tuple(g.scalar_type() for _ in range(g.draw(st.integers(0, 2))))
    cond = g.scalar(I1)
    regions = [g.region([], depth + 1, types)]
    if types or g.draw(st.booleans()):
        regions.append(g.region([], depth + 1, types))
    g.emit("if", {"cond": cond}, {"result_types": types}, regions)


def _math(g: _Gen, depth: int) -> None:
    t = g.scalar_type()
    kind = "i1" if t.is_bool else t.kind.value
    names = sorted(n for n, fn in MATH_FNS.items() if kind in fn.kinds)
    if not names:
        return
    fn = MATH_FNS[g.draw(st.sampled_from(names))]
    b = g.scalar(t) if fn.arity == 2 else None
    g.emit("math", {"a": g.scalar(t), "b": b}, {"fn": fn.name, "type": t})


def _select(g: _Gen, depth: int) -> None:
    t = g.scalar_type()
    g.emit("select", {"cond": g.scalar(I1), "a": g.scalar(t), "b": g.scalar(t)}, {"type": t})


def _bitcast(g: _Gen, depth: int) -> None:
    src = g.scalar_type()
    same = [t for t in _SCALARS if t.bits == src.bits and not t.is_bool]
    if src.is_bool or not same:
        return
    dst = g.draw(st.sampled_from(same))
    g.emit("bitcast", {"a": g.scalar(src)}, {"from_type": src, "to_type": dst})


def _complex(g: _Gen, depth: int) -> None:
    t = g.draw(st.sampled_from([t for t in _SCALARS if t.is_complex]))
    part = complex_part(t)
    g.emit("complex", {"re": g.scalar(part), "im": g.scalar(part)}, {"type": t})


def _foreach_nd(g: _Gen, depth: int) -> None:
    t = _int_type(g)
    modes = g.draw(st.integers(1, 3))
    bounds = {"from": [g.scalar(t) for _ in range(modes)],
              "to": [g.scalar(t) for _ in range(modes)]}
    region = g.region([Value(t, g.name()) for _ in range(modes)], depth + 1, None)
    g.emit("foreach_nd", bounds, {"loop_type": t}, [region])


_SIMPLE = {
    "math": _math, "select": _select, "bitcast": _bitcast, "complex": _complex,
    "arith": _arith, "cmp": _cmp, "cast": _cast, "constant": _constant, "nullary": _nullary,
    "alloca": _alloca, "barrier": _barrier, "load": _load, "store": _store, "size": _size,
    "subview": _subview, "expand": _expand, "fuse": _fuse, "blas": _blas,
    "lifetime_stop": _lifetime_stop,
}
_NESTED = {"parallel": _parallel, "foreach": _foreach, "for": _for, "if": _if,
           "foreach_nd": _foreach_nd}


@st.composite
def programs(draw: Any, max_functions: int = 2) -> Program:
    """A random well-typed program of up to ``max_functions`` functions."""
    count = draw(st.integers(1, max_functions))
    return Program([_Gen(draw).function(i) for i in range(count)])
