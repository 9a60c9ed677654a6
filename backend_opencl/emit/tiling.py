"""Helper functions for the collectives, with loops from the polyhedral scheduler.

A contraction ``C[i,j] := alpha * sum_k opA[i,k] opB[k,j] + beta * C[i,j]`` or an
elementwise update is described by a spec; :func:`contraction_helper` /
:func:`elementwise_helper` / :func:`reduction_helper` turn it into a helper function run
by every work-item of the work-group.  The loops themselves come from isl
(:mod:`tensorlang.schedule.tiling`): the work-item's full ``RM x RN`` register blocks run
straight-line code (k innermost, ``a*b+c``), edge blocks run loops bounded exactly by the
remaining rows and columns, so sizes need not divide the tiles and nothing is accessed out
of bounds.  Register-block sizes come from :mod:`backend_opencl.emit.costmodel` (or
``tlc tune``).  This module prints statements; it builds no loop bounds itself.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from backend_opencl.emit.cnames import ctype, zero
from backend_opencl.emit.costmodel import pow2_at_least, register_block
from backend_opencl.emit.loops import Statement, write_loops
from backend_opencl.emit.target import KernelPlan
from backend_opencl.emit.update import Scale, madd, scaled
from backend_opencl.emit.update import mul as mul_t
from backend_opencl.emit.view import add, is_literal, mul
from backend_opencl.emit.writer import Writer
from tensorlang.ir.types import ScalarType
from tensorlang.schedule.loops import Node
from tensorlang.schedule.tiling import TileShape, contraction_loops, distributed

Store = Callable[[str, str], str]
"""(lvalue, value) -> the C statement that updates the output element."""

MakeStore = Callable[[Scale], Store]
"""beta (as the helper sees it) -> the store."""


@dataclass(frozen=True)
class Matrix:
    """An operand addressed as ``op(X)[i, k] = ptr[i * si + k * sk]``."""

    ptr: str
    space: str
    si: str
    sk: str


@dataclass(frozen=True)
class Contraction:
    """``C := alpha * opA opB + beta * C`` with M x N x K sizes; ``b`` None means ones."""

    elem: ScalarType
    m: str
    n: str
    k: str
    a: Matrix
    b: Matrix | None
    c: Matrix
    alpha: Scale
    beta: Scale


@dataclass(frozen=True)
class Elementwise:
    """``C[i,j] := alpha * prod(operands[i,j]) + beta * C[i,j]`` over M x N."""

    elem: ScalarType
    m: str
    n: str
    operands: tuple[Matrix, ...]
    c: Matrix
    alpha: Scale
    beta: Scale


class Params:
    """Turns non-literal expressions into helper parameters (deduplicated)."""

    def __init__(self) -> None:
        self.decls: list[str] = []
        self.args: list[str] = []
        self._names: dict[str, str] = {}

    def value(self, expr: str, ctype_: str, name: str) -> str:
        """A literal stays; anything else becomes parameter ``name``."""
        if is_literal(expr):
            return expr
        if expr not in self._names:
            self._names[expr] = name
            self.decls.append(f"{ctype_} {name}")
            self.args.append(expr)
        return self._names[expr]

    def matrix(self, mat: Matrix, elem: ScalarType, name: str, const: bool) -> Matrix:
        """Parameters for an operand's pointer and strides."""
        qual = "const " if const else ""
        ptr = self.value(mat.ptr, f"{mat.space} {qual}{_storage(elem)}*", name)
        return Matrix(ptr, mat.space, self.value(mat.si, "long", f"{name}_si"),
                      self.value(mat.sk, "long", f"{name}_sk"))


def _scale_param(scale: Scale, t: ScalarType, p: Params, name: str) -> Scale:
    if scale.value is not None:
        return scale
    return Scale(p.value(scale.expr, ctype(t), name))


def _storage(elem: ScalarType) -> str:
    return "char" if elem.is_bool else ctype(elem)


def contraction_helper(spec: Contraction, plan: KernelPlan, make_store: MakeStore,
                       p: Params) -> str:
    """Helper text (named ``@NAME@``) for a contraction; ``p`` collects its parameters.

    The loops come from the scheduler (:func:`tensorlang.schedule.tiling.contraction_loops`):
    full register blocks run straight-line code, edge blocks loop exactly over the rows and
    columns that exist.
    """
    t = spec.elem
    rm, rn = register_block(plan, t, spec.m, spec.n)
    shape = TileShape(plan.work_group_size, rm, rn, plan.blocked)
    a = p.matrix(spec.a, t, "A", True)
    b = p.matrix(spec.b, t, "B", True) if spec.b is not None else None
    m, n, k = (p.value(e, "long", x) for e, x in ((spec.m, "M"), (spec.n, "N"), (spec.k, "K")))
    alpha = _scale_param(spec.alpha, t, p, "alpha")
    store = make_store(_scale_param(spec.beta, t, p, "beta"))
    c = p.matrix(spec.c, t, "C", False)
    loops = contraction_loops(shape, m, n)
    body = _ContractionBody(t, shape, a, b, c, k, alpha, store)
    w = Writer(1)
    wgx, wgy = plan.work_group_size
    w.line(f"const long lx = {'0' if wgx == 1 else 'get_local_id(0)'};")
    w.line(f"const long ly = {'0' if wgy == 1 else 'get_local_id(1)'};")
    write_loops(w, loops.full, {"Full": body.block(loops.rows, loops.cols, loops.cells)})
    write_loops(w, loops.edge, {"Edge": body.block(loops.edge_rows, loops.edge_cols,
                                                   loops.edge_cells)})
    return f"void @NAME@({', '.join(p.decls)}) {{\n{w.text()}}}\n"


_REGS = ("r", "c")
"""Intra-block loops over the register block: unrolled when their bounds are constant."""


def _paren(expr: str) -> str:
    return expr if expr.replace("_", "").isalnum() else f"({expr})"


def _unrolled(w: Writer, loops: list[tuple[str, int]], stmt: str) -> None:
    depth = 0
    for var, count in loops:
        w.line("#pragma unroll")
        w.line(f"for (int {var} = 0; {var} < {count}; ++{var})")
        w.level += 1
        depth += 1
    w.line(stmt)
    w.level -= depth


@dataclass
class _ContractionBody:
    """The statements of one register block: accumulate over k, then update C."""

    t: ScalarType
    shape: TileShape
    a: Matrix
    b: Matrix | None
    c: Matrix
    k: str
    alpha: Scale
    store: Store

    def block(self, rows: Node, cols: Node, cells: Node) -> Statement:
        """The statement ``Full(m0, n0)`` / ``Edge(m0, n0)`` with these intra-block loops."""

        def emit(w: Writer, origin: tuple[str, ...]) -> None:
            w.line("{")
            w.level += 1
            self._emit(w, origin, rows, cols, cells)
            w.level -= 1
            w.line("}")

        return emit

    def _emit(self, w: Writer, origin: tuple[str, ...], rows: Node, cols: Node,
              cells: Node) -> None:
        t, sh = self.t, self.shape
        row0 = mul("lx", str(sh.rm)) if sh.blocked else "lx"
        col0 = mul("ly", str(sh.rn)) if sh.blocked else "ly"
        w.line(f"const long mb = {add(_paren(origin[0]), row0)};")
        w.line(f"const long nb = {add(_paren(origin[1]), col0)};")
        w.line(f"{ctype(t)} acc[{sh.rn}][{sh.rm}];")
        _unrolled(w, [("c", sh.rn), ("r", sh.rm)], f"acc[c][r] = {zero(t)};")
        with w.block(f"for (long k = 0; k < {self.k}; ++k)"):
            w.line(f"{ctype(t)} a[{sh.rm}];")
            write_loops(w, rows, {"Row": self._load_a}, _REGS)
            if self.b is None:
                write_loops(w, cells, {"Cell": lambda w, cr: w.line(
                    f"acc[{cr[0]}][{cr[1]}] = a[{cr[1]}] + acc[{cr[0]}][{cr[1]}];")}, _REGS)
            else:
                w.line(f"{ctype(t)} b[{sh.rn}];")
                write_loops(w, cols, {"Col": self._load_b}, _REGS)
                write_loops(w, cells, {"Cell": self._madd}, _REGS)
        write_loops(w, cells, {"Cell": self._update}, _REGS)

    def _row(self, r: str) -> str:
        return f"(mb + {r})" if self.shape.blocked else f"(mb + {mul(r, str(self.shape.wg[0]))})"

    def _col(self, c: str) -> str:
        return f"(nb + {c})" if self.shape.blocked else f"(nb + {mul(c, str(self.shape.wg[1]))})"

    def _load_a(self, w: Writer, r: tuple[str, ...]) -> None:
        a = self.a
        w.line(f"a[{r[0]}] = {a.ptr}[{add(mul(self._row(r[0]), a.si), mul('k', a.sk))}];")

    def _load_b(self, w: Writer, c: tuple[str, ...]) -> None:
        b = self.b
        assert b is not None
        w.line(f"b[{c[0]}] = {b.ptr}[{add(mul('k', b.si), mul(self._col(c[0]), b.sk))}];")

    def _madd(self, w: Writer, cr: tuple[str, ...]) -> None:
        acc = f"acc[{cr[0]}][{cr[1]}]"
        w.line(f"{acc} = {madd(self.t, f'a[{cr[1]}]', f'b[{cr[0]}]', acc)};")

    def _update(self, w: Writer, cr: tuple[str, ...]) -> None:
        c = self.c
        out = f"{c.ptr}[{add(mul(self._row(cr[1]), c.si), mul(self._col(cr[0]), c.sk))}]"
        w.line(self.store(out, scaled(self.t, self.alpha, f"acc[{cr[0]}][{cr[1]}]")))


def elementwise_helper(spec: Elementwise, plan: KernelPlan, make_store: MakeStore,
                       p: Params) -> str:
    """Helper text (named ``@NAME@``) for an elementwise update over M x N.

    Points are dealt cyclically to the work-items (:func:`tensorlang.schedule.tiling.distributed`):
    the first mode over the work-group's first dimension, the second over its columns, or a
    vector over all work-items.
    """
    t = spec.elem
    ops = [p.matrix(x, t, "AB"[i] if i < 2 else f"X{i}", True)
           for i, x in enumerate(spec.operands)]
    m, n = p.value(spec.m, "long", "M"), p.value(spec.n, "long", "N")
    alpha = _scale_param(spec.alpha, t, p, "alpha")
    store = make_store(_scale_param(spec.beta, t, p, "beta"))
    c = p.matrix(spec.c, t, "C", False)
    wgx, wgy = plan.work_group_size
    w = Writer(1)
    if n == "1":
        w.line(f"const long lid = {_linear_id(plan)};")
        loops = distributed((m,), ("lid",), (wgx * wgy,))
    else:
        w.line(f"const long lx = {'0' if wgx == 1 else 'get_local_id(0)'};")
        w.line(f"const long ly = {'0' if wgy == 1 else 'get_local_id(1)'};")
        loops = distributed((m, n), ("lx", "ly"), (wgx, wgy))

    def point(w: Writer, ij: tuple[str, ...]) -> None:
        i, j = ij[0], ij[1] if len(ij) > 1 else "0"
        value = ""
        for x in ops:
            load = f"{x.ptr}[{add(mul(i, x.si), mul(j, x.sk))}]"
            value = load if not value else mul_t(t, value, load)
        out = f"{c.ptr}[{add(mul(i, c.si), mul(j, c.sk))}]"
        w.line(store(out, scaled(t, alpha, value)))

    write_loops(w, loops, {"P": point})
    return f"void @NAME@({', '.join(p.decls)}) {{\n{w.text()}}}\n"


def _linear_id(plan: KernelPlan) -> str:
    wgx, wgy = plan.work_group_size
    if wgx * wgy == 1:
        return "0"
    return "get_local_id(0)" if wgy == 1 else f"get_local_id(0) + get_local_id(1) * {wgx}"


def reduction_helper(spec: Contraction, plan: KernelPlan, make_store: MakeStore, p: Params,
                     scratch: str) -> str:
    """Helper text for ``c := alpha * sum_k a[k] + beta * c``: strided partial sums per
    work-item, then a tree in local memory (``scratch`` holds one value per work-item)."""
    t = spec.elem
    a = p.matrix(spec.a, t, "A", True)
    k = p.value(spec.k, "long", "K")
    alpha = _scale_param(spec.alpha, t, p, "alpha")
    store = make_store(_scale_param(spec.beta, t, p, "beta"))
    c = p.matrix(spec.c, t, "C", False)
    items = plan.num_work_items
    w = Writer(1)
    w.line(f"const long lid = {_linear_id(plan)};")
    w.line(f"{ctype(t)} acc = {zero(t)};")
    write_loops(w, distributed((k,), ("lid",), (items,)), {"P": lambda w, i: w.line(
        f"acc = {a.ptr}[{mul(i[0], a.sk)}] + acc;")})
    result = "acc"
    if items > 1:
        red = p.value(scratch, f"local {ctype(t)}*", "red")
        w.line(f"{red}[lid] = acc;")
        w.line("barrier(CLK_LOCAL_MEM_FENCE);")
        with w.block(f"for (int s = {pow2_at_least(items) // 2}; s > 0; s >>= 1)"):
            w.line(f"if (lid < s && lid + s < {items}) {red}[lid] = {red}[lid] + {red}[lid + s];")
            w.line("barrier(CLK_LOCAL_MEM_FENCE);")
        result = f"{red}[0]"
    guard = "" if items == 1 else "if (lid == 0) "
    w.line(guard + store(f"{c.ptr}[0]", scaled(t, alpha, result)))
    if items > 1:
        w.line("barrier(CLK_LOCAL_MEM_FENCE); // the scratch may be reused next")
    return f"void @NAME@({', '.join(p.decls)}) {{\n{w.text()}}}\n"
