"""Helper functions for the collectives, with loops from the polyhedral scheduler.

A contraction ``C[i,j] := alpha * sum_k opA[i,k] opB[k,j] + beta * C[i,j]`` or an
elementwise update is described by a spec; :func:`contraction_helper` /
:func:`elementwise_helper` / :func:`reduction_helper` turn it into a helper function run
by every work-item of the work-group.  The loops themselves come from isl
(:mod:`tensorlang.schedule.tiling`): the work-item's full ``RM x RN`` register blocks run
straight-line code (k innermost, ``a*b+c``; on CPU plans in explicit ``floatV`` /
``doubleV`` vectors along the rows), edge blocks run loops bounded exactly by the
remaining rows and columns, so sizes need not divide the tiles and nothing is accessed out
of bounds.  A transposed operand may be staged: panels of it are copied through local
memory along its contiguous mode and the blocks read them from there.  Register-block
sizes and staging come from :mod:`backend_opencl.emit.costmodel` (or ``tlc tune``).  This
module prints statements; it builds no loop bounds itself.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from backend_opencl.emit.cnames import ctype, literal, zero
from backend_opencl.emit.costmodel import (
    lanes,
    panel_depth,
    pow2_at_least,
    register_block,
    stage_depth,
    staged_operand,
)
from backend_opencl.emit.loops import Statement, write_loops
from backend_opencl.emit.target import KernelPlan
from backend_opencl.emit.update import Scale, madd, scaled
from backend_opencl.emit.update import mul as mul_t
from backend_opencl.emit.view import add, is_literal, mul
from backend_opencl.emit.writer import Writer
from tensorlang.ir.types import ScalarType
from tensorlang.schedule.loops import Node
from tensorlang.schedule.tiling import (
    TileShape,
    contraction_loops,
    distributed,
    staged_loops,
)

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
    transposed: str = ""
    """The operands (``"a"``, ``"b"``) read along their non-contiguous mode."""
    atomic: bool = False


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
        if not const and mat.ptr in self._names:  # an output that is also an input
            i = self.args.index(mat.ptr)
            self.decls[i] = self.decls[i].replace(" const ", " ", 1)
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
                       p: Params, scratch: Scratch | None = None) -> str:
    """Helper text (named ``@NAME@``) for a contraction; ``p`` collects its parameters.

    The loops come from the scheduler (:func:`tensorlang.schedule.tiling.contraction_loops`):
    full register blocks run straight-line code, edge blocks loop exactly over the rows and
    columns that exist.  When the cost model (or the plan) stages a transposed operand and
    ``scratch`` provides local memory, :func:`_staged` writes the staged variant (not
    for an atomic update whose K takes several chunks: C would be updated once per chunk).
    A long K on a CPU is walked in chunks the same way, A read in place
    (:func:`backend_opencl.emit.costmodel.panel_depth`).
    """
    t = spec.elem
    rm, rn = register_block(plan, t, spec.m, spec.n)
    shape = TileShape(plan.work_group_size, rm, rn, plan.blocked)
    a_bytes = int(spec.m) * int(spec.k) * _bytes(t) \
        if is_literal(spec.m) and is_literal(spec.k) else 0
    operand = staged_operand(plan, t, spec.transposed, spec.n, a_bytes) \
        if scratch is not None else None
    vector = _vector_width(plan, t, rm, spec.atomic)
    a = p.matrix(spec.a, t, "A", True)
    b = p.matrix(spec.b, t, "B", True) if spec.b is not None else None
    m, n, k = (p.value(e, "long", x) for e, x in ((spec.m, "M"), (spec.n, "N"), (spec.k, "K")))
    alpha = _scale_param(spec.alpha, t, p, "alpha")
    beta = _scale_param(spec.beta, t, p, "beta")
    c = p.matrix(spec.c, t, "C", False)
    w = Writer(1)
    wgx, wgy = plan.work_group_size
    w.line(f"const long lx = {'0' if wgx == 1 else 'get_local_id(0)'};")
    w.line(f"const long ly = {'0' if wgy == 1 else 'get_local_id(1)'};")
    ops = _Operands(t, shape, a, b, c, alpha, make_store, beta, vector)
    if operand is not None and scratch is not None and (b is not None or operand == "a"):
        depth = stage_depth(t, shape.tm if operand == "a" else shape.tn, k)
        if not spec.atomic or (is_literal(k) and int(k) <= depth):
            _staged(w, ops, (m, n, k), (operand, operand in spec.transposed), depth, scratch, p)
            return f"void @NAME@({', '.join(p.decls)}) {{\n{w.text()}}}\n"
    chunk = panel_depth(plan, t, shape.tm, k, spec.n) if b is not None and not spec.atomic \
        else None
    if chunk is not None:
        _staged(w, ops, (m, n, k), ("a", False), chunk, None, p)
        return f"void @NAME@({', '.join(p.decls)}) {{\n{w.text()}}}\n"
    loops = contraction_loops(shape, m, n)
    body = _ContractionBody(t, shape, _global_a(a), _global_b(b), c, k, alpha,
                            make_store(beta), vector=vector, a_ptr=_global_a_ptr(a))
    write_loops(w, loops.full, {"Full": body.block(loops.rows, loops.cols, loops.cells,
                                                   full=True)})
    write_loops(w, loops.edge, {"Edge": body.block(loops.edge_rows, loops.edge_cols,
                                                   loops.edge_cells)})
    return f"void @NAME@({', '.join(p.decls)}) {{\n{w.text()}}}\n"


Scratch = Callable[[int, str], str]
"""(bytes, element C type) -> a ``local`` pointer to that much scratch memory."""

At = Callable[[str, str], str]
"""(row or k, k or column) -> the C expression of an operand's element."""

Ptr = Callable[[str, str], "str | None"]
"""(row, k) -> a pointer to op(A)[row, k] when A's rows are contiguous, else None."""


def _shifted(k: str, k0: str) -> str:
    return f"({k0} + {k})" if k0 else k


def _global_a(a: Matrix, k0: str = "") -> At:
    """op(A)[row, k0 + k] in global memory."""
    return lambda row, k: f"{a.ptr}[{add(mul(row, a.si), mul(_shifted(k, k0), a.sk))}]"


def _global_a_ptr(a: Matrix, k0: str = "") -> Ptr:
    """&op(A)[row, k0 + k] when A's rows are contiguous."""
    def ptr(row: str, k: str) -> str | None:
        return f"{a.ptr} + {add(row, mul(_shifted(k, k0), a.sk))}" if a.si == "1" else None

    return ptr


def _vector_width(plan: KernelPlan, t: ScalarType, rm: int, atomic: bool) -> int:
    """Lanes of the explicit vectors of full blocks: the register's width for f32 / f64
    (halved until it divides RM) on CPU plans with plain stores; 0 for scalar code."""
    if not plan.blocked or atomic or not t.is_float or t.bits not in (32, 64):
        return 0
    v = lanes(plan, t)
    while v > 1 and rm % v:
        v //= 2
    return v if v >= 2 else 0


def _global_b(b: Matrix | None, k0: str = "") -> At | None:
    """op(B)[k0 + k, col] in global memory (None for a sum's ones)."""
    if b is None:
        return None
    return lambda k, col: f"{b.ptr}[{add(mul(_shifted(k, k0), b.si), mul(col, b.sk))}]"


@dataclass(frozen=True)
class _Operands:
    """Everything a staged contraction needs besides its sizes."""

    t: ScalarType
    shape: TileShape
    a: Matrix
    b: Matrix | None
    c: Matrix
    alpha: Scale
    make_store: MakeStore
    beta: Scale
    vector: int = 0


def _staged(w: Writer, ops: _Operands, sizes: tuple[str, str, str],
            staged: tuple[str, bool], depth: int, scratch: Scratch | None, p: Params) -> None:
    """The staged variant: per panel of ``operand`` and K chunk, the work-group copies the
    chunk into local memory along the operand's contiguous mode, then every work-item
    accumulates its blocks of the panel from there; the first chunk applies beta, later
    ones add to C (a single chunk when K fits).  Without ``scratch`` nothing is copied:
    the blocks read the chunk of A in place (K blocked for the caches)."""
    t, sh = ops.t, ops.shape
    m, n, k = sizes
    operand, transposed = staged
    width = sh.tm if operand == "a" else sh.tn
    loops = staged_loops(sh, m, n, k, operand, depth, transposed, copied=scratch is not None)
    chunked = not (is_literal(k) and int(k) <= depth)
    kb = k if not chunked else str(depth) if is_literal(k) and int(k) % depth == 0 \
        else f"min((long){depth}, {k} - k0)"
    items = sh.wg[0] * sh.wg[1] if scratch is not None else 1
    x0 = "m0" if operand == "a" else "n0"
    src = ops.a if operand == "a" else ops.b
    assert src is not None
    local = p.value(scratch(width * depth * _bytes(t), ctype(t)), f"local {ctype(t)}*", "L") \
        if scratch is not None else ""

    def copy(w: Writer, pk: tuple[str, ...]) -> None:
        row, kk = f"({x0} + {pk[0]})", f"(k0 + {pk[1]})"
        get = _global_a(src) if operand == "a" else _global_b(src)
        assert get is not None
        element = get(row, kk) if operand == "a" else get(kk, row)
        w.line(f"{local}[{add(mul(pk[1], str(width)), pk[0])}] = {element};")

    def at_local(index: str, kk: str) -> str:
        return f"{local}[{add(mul(kk, str(width)), f'{index} - {x0}')}]"

    in_a, in_b = local and operand == "a", local and operand == "b"
    a_at = (lambda row, kk: at_local(row, kk)) if in_a else _global_a(ops.a, "k0")
    b_at = (lambda kk, col: at_local(col, kk)) if in_b else _global_b(ops.b, "k0")
    later = ops.make_store(Scale(literal(1, t), 1)) if chunked else None
    a_ptr = (lambda row, kk: f"{local} + {add(mul(kk, str(width)), f'{row} - {x0}')}") \
        if in_a else _global_a_ptr(ops.a, "k0")
    body = _ContractionBody(t, sh, a_at, b_at, ops.c, "kb", ops.alpha, ops.make_store(ops.beta),
                            later, ops.vector, a_ptr)
    intra = loops.intra
    blocks = {"Full": body.block(intra.rows, intra.cols, intra.cells, x0, full=True),
              "Edge": body.block(intra.edge_rows, intra.edge_cols, intra.edge_cells, x0)}

    block = min(TRANSPOSE_BLOCK, ops.vector)  # a register's lanes at most (see below)
    by_blocks = local and operand == "a" and transposed and items == 1 \
        and src.sk == "1" and t.is_float and not t.is_half and block in (4, 8)

    def chunk(w: Writer, k0: tuple[str, ...]) -> None:
        with _scope(w):
            _bind(w, "k0", k0[0])
            w.line(f"const long kb = {kb};")
            if by_blocks:
                _transposed_copy(w, local, src, (t, block), width,
                                 f"min((long){width}, {m} - {x0})")
            elif local:
                write_loops(w, loops.copy, {"Copy": copy})
            if items > 1:
                w.line("barrier(CLK_LOCAL_MEM_FENCE);")
            write_loops(w, loops.full, blocks)
            write_loops(w, loops.edge, blocks)
            if items > 1:
                w.line("barrier(CLK_LOCAL_MEM_FENCE); // the panel is overwritten next")

    def panel(w: Writer, origin: tuple[str, ...]) -> None:
        with _scope(w):
            _bind(w, x0, origin[0])
            write_loops(w, loops.chunks, {"Chunk": chunk})

    if items > 1:
        w.line(f"const long lid = {_linear_id_of(sh.wg)};")
    write_loops(w, loops.panels, {"Panel": panel})


TRANSPOSE_BLOCK = 8
"""Rows and K steps of the blocks a transposed A's panel is staged by on CPUs (fewer
where a register holds fewer elements: f64 on AVX2 takes 4 x 4 blocks)."""


def _transposed_copy(w: Writer, local: str, a: Matrix, block: tuple[ScalarType, int],
                     width: int, rows: str) -> None:
    """Stage the chunk (``kb`` deep, from ``k0``) of a transposed A's panel (``rows``
    rows from ``m0``; K contiguous in memory) into ``local``, K-major, by ``b x b``
    blocks (``block``: the element type and ``b``): ``b`` vector loads along K,
    transposed in registers, ``b`` vector stores along the panel; the rows and K steps
    left over element by element.

    Element by element, the copy either reads or writes with a stride, which the loop
    vectoriser makes gathers or scatters (slow on Zen 4): equinox's ``x @ W.T``,
    32x784 by 256x784, took 132 us a call on PoCL staged that way, 96 by blocks.  A
    vector wider than the device's registers is not used: PyPI's PoCL 3.0 (built for
    AVX2) crashed in ``vload8`` / ``vstore8`` of ``double8``, whose 512-bit ABI its
    builtins do not share."""
    t, b = block
    vec = f"{ctype(t)}{b}"

    def row(r: str) -> str:
        return f"{a.ptr} + {add(mul(f'(m0 + {r})', a.si), 'k0')}"

    def element(p: str, kk: str) -> None:
        w.line(f"{local}[{add(mul(kk, str(width)), p)}] = "
               f"{a.ptr}[{add(mul(f'(m0 + {p})', a.si), f'(k0 + {kk})')}];")

    w.line(f"const long s_rows = {rows};")
    w.line("long s_k = 0;")
    with w.block(f"for (; s_k + {b} <= kb; s_k += {b})"):
        w.line("long s_p = 0;")
        with w.block(f"for (; s_p + {b} <= s_rows; s_p += {b})"):
            for r in range(b):
                w.line(f"const {vec} s_r{r} = vload{b}(0, {row(f's_p + {r}')} + s_k);")
            for c in range(b):
                column = ", ".join(f"s_r{r}.s{c}" for r in range(b))
                w.line(f"vstore{b}(({vec})({column}), 0, {local} + (s_k + {c}) * {width} "
                       "+ s_p);")
        with w.block("for (; s_p < s_rows; ++s_p)"), \
                w.block(f"for (long s_kk = s_k; s_kk < s_k + {b}; ++s_kk)"):
            element("s_p", "s_kk")
    with w.block("for (; s_k < kb; ++s_k)"), w.block("for (long s_p = 0; s_p < s_rows; ++s_p)"):
        element("s_p", "s_k")


def _bind(w: Writer, name: str, value: str) -> None:
    """``name`` holds ``value`` (already so when the loop variable has that name)."""
    if value != name:
        w.line(f"const long {name} = {value};")


@contextmanager
def _scope(w: Writer) -> Iterator[None]:
    """A ``{ ... }`` block."""
    w.line("{")
    w.level += 1
    yield
    w.level -= 1
    w.line("}")


def _bytes(t: ScalarType) -> int:
    return max(1, t.bits // 8)


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
    """The statements of one register block: accumulate over k, then update C.

    ``a_at(row, k)`` / ``b_at(k, col)`` read the operands (global memory, or a staged
    panel with ``k`` counted from the chunk's start); ``later_store``, when given, updates
    C after the first K chunk (``k0 != 0``) instead of ``store``.
    """

    t: ScalarType
    shape: TileShape
    a_at: At
    b_at: At | None
    c: Matrix
    k: str
    alpha: Scale
    store: Store
    later_store: Store | None = None
    vector: int = 0
    """Lanes of the explicit vectors of full blocks (0: scalar code, vectorised by PoCL)."""
    a_ptr: Ptr | None = None
    """Pointer to op(A)[row, k] when rows are contiguous (vector loads), else None."""

    def block(self, rows: Node, cols: Node, cells: Node, panel: str = "",
              full: bool = False) -> Statement:
        """The statement ``Full(m0, n0)`` / ``Edge(m0, n0)`` with these intra-block loops
        (``Full(n0)`` in the panel ``m0`` when ``panel`` is ``"m0"``, and vice versa);
        ``full`` blocks use explicit vectors when ``vector`` is set."""

        def emit(w: Writer, origin: tuple[str, ...]) -> None:
            if panel:
                origin = ("m0", origin[0]) if panel == "m0" else (origin[0], "n0")
            with _scope(w):
                self._origin(w, origin)
                if full and self.vector:
                    self._emit_vector(w)
                else:
                    self._emit(w, rows, cols, cells)

        return emit

    def _origin(self, w: Writer, origin: tuple[str, ...]) -> None:
        sh = self.shape
        row0 = mul("lx", str(sh.rm)) if sh.blocked else "lx"
        col0 = mul("ly", str(sh.rn)) if sh.blocked else "ly"
        w.line(f"const long mb = {add(_paren(origin[0]), row0)};")
        w.line(f"const long nb = {add(_paren(origin[1]), col0)};")

    def _emit_vector(self, w: Writer) -> None:
        """A full block in explicit ``floatV`` vectors: PoCL's SLP vectoriser does not
        always find the vectors itself (with a transposed B it fell back to scalar FMAs,
        7x slower)."""
        t, sh, v = self.t, self.shape, self.vector
        vt, nv = f"{ctype(t)}{v}", sh.rm // v
        w.line(f"{vt} acc[{sh.rn}][{nv}];")
        _unrolled(w, [("c", sh.rn), ("v", nv)], f"acc[c][v] = ({vt})({zero(t)});")
        with w.block(f"for (long k = 0; k < {self.k}; ++k)"):
            w.line(f"{vt} a[{nv}];")
            _unrolled(w, [("v", nv)], f"a[v] = {self._vector_a(f'(mb + {v} * v)')};")
            if self.b_at is None:
                _unrolled(w, [("c", sh.rn), ("v", nv)], "acc[c][v] = a[v] + acc[c][v];")
            else:
                w.line(f"{ctype(t)} b[{sh.rn}];")
                _unrolled(w, [("c", sh.rn)], f"b[c] = {self.b_at('k', '(nb + c)')};")
                _unrolled(w, [("c", sh.rn), ("v", nv)], "acc[c][v] = a[v] * b[c] + acc[c][v];")
        if self.later_store is None:
            self._vector_update(w, self.store)
            return
        with w.block("if (k0 == 0)"):
            self._vector_update(w, self.store)
        with w.else_block():
            self._vector_update(w, self.later_store)

    def _vector_a(self, row0: str) -> str:
        v = self.vector
        ptr = self.a_ptr(row0, "k") if self.a_ptr is not None else None
        if ptr is not None:
            return f"vload{v}(0, {ptr})"
        parts = ", ".join(self.a_at(f"({row0} + {i})", "k") for i in range(v))
        return f"({ctype(self.t)}{v})({parts})"

    def _vector_update(self, w: Writer, store: Store) -> None:
        """C updated a vector at a time (``vloadV``/``vstoreV`` along contiguous rows, the
        old value read only when the store needs it), else element by element."""
        t, sh, v, c = self.t, self.shape, self.vector, self.c
        for col in range(sh.rn):
            for i in range(sh.rm // v):
                acc = f"acc[{col}][{i}]"
                if c.si == "1":
                    ptr = f"{c.ptr} + {add(f'(mb + {i * v})', mul(f'(nb + {col})', c.sk))}"
                    stmt = store("cv", scaled(t, self.alpha, acc))
                    old = f" = vload{v}(0, {ptr})" if stmt.count("cv") > 1 else ""
                    w.line(f"{{ {ctype(t)}{v} cv{old}; {stmt} vstore{v}(cv, 0, {ptr}); }}")
                    continue
                for j in range(v):
                    row, part = f"(mb + {i * v + j})", f"{acc}.s{j:x}"
                    out = f"{c.ptr}[{add(mul(row, c.si), mul(f'(nb + {col})', c.sk))}]"
                    w.line(store(out, scaled(t, self.alpha, part)))

    def _emit(self, w: Writer, rows: Node, cols: Node, cells: Node) -> None:
        t, sh = self.t, self.shape
        w.line(f"{ctype(t)} acc[{sh.rn}][{sh.rm}];")
        _unrolled(w, [("c", sh.rn), ("r", sh.rm)], f"acc[c][r] = {zero(t)};")
        with w.block(f"for (long k = 0; k < {self.k}; ++k)"):
            w.line(f"{ctype(t)} a[{sh.rm}];")
            write_loops(w, rows, {"Row": self._load_a}, _REGS)
            if self.b_at is None:
                write_loops(w, cells, {"Cell": lambda w, cr: w.line(
                    f"acc[{cr[0]}][{cr[1]}] = a[{cr[1]}] + acc[{cr[0]}][{cr[1]}];")}, _REGS)
            else:
                w.line(f"{ctype(t)} b[{sh.rn}];")
                write_loops(w, cols, {"Col": self._load_b}, _REGS)
                write_loops(w, cells, {"Cell": self._madd}, _REGS)
        if self.later_store is None:
            write_loops(w, cells, {"Cell": self._updater(self.store)}, _REGS)
            return
        with w.block("if (k0 == 0)"):
            write_loops(w, cells, {"Cell": self._updater(self.store)}, _REGS)
        with w.else_block():
            write_loops(w, cells, {"Cell": self._updater(self.later_store)}, _REGS)

    def _row(self, r: str) -> str:
        return f"(mb + {r})" if self.shape.blocked else f"(mb + {mul(r, str(self.shape.wg[0]))})"

    def _col(self, c: str) -> str:
        return f"(nb + {c})" if self.shape.blocked else f"(nb + {mul(c, str(self.shape.wg[1]))})"

    def _load_a(self, w: Writer, r: tuple[str, ...]) -> None:
        w.line(f"a[{r[0]}] = {self.a_at(self._row(r[0]), 'k')};")

    def _load_b(self, w: Writer, c: tuple[str, ...]) -> None:
        assert self.b_at is not None
        w.line(f"b[{c[0]}] = {self.b_at('k', self._col(c[0]))};")

    def _madd(self, w: Writer, cr: tuple[str, ...]) -> None:
        acc = f"acc[{cr[0]}][{cr[1]}]"
        w.line(f"{acc} = {madd(self.t, f'a[{cr[1]}]', f'b[{cr[0]}]', acc)};")

    def _updater(self, store: Store) -> Statement:
        def update(w: Writer, cr: tuple[str, ...]) -> None:
            c = self.c
            out = f"{c.ptr}[{add(mul(self._row(cr[1]), c.si), mul(self._col(cr[0]), c.sk))}]"
            w.line(store(out, scaled(self.t, self.alpha, f"acc[{cr[0]}][{cr[1]}]")))

        return update


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
    return _linear_id_of(plan.work_group_size)


def _linear_id_of(wg: tuple[int, int]) -> str:
    wgx, wgy = wg
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
        if plan.native_subgroups and t.name in SUBGROUP_REDUCE_TYPES:
            _subgroup_tree(w, red)
        else:
            _local_tree(w, red, items)
        result = f"{red}[0]"
    guard = "" if items == 1 else "if (lid == 0) "
    w.line(guard + store(f"{c.ptr}[0]", scaled(t, alpha, result)))
    if items > 1:
        w.line("barrier(CLK_LOCAL_MEM_FENCE); // the scratch may be reused next")
    return f"void @NAME@({', '.join(p.decls)}) {{\n{w.text()}}}\n"


SUBGROUP_REDUCE_TYPES = frozenset({"i32", "u32", "i64", "u64", "f32", "f64"})
"""Element types ``sub_group_reduce_add`` takes without further extensions."""


def _local_tree(w: Writer, red: str, items: int) -> None:
    """Sum every work-item's ``acc`` into ``red[0]``: a tree in local memory."""
    w.line(f"{red}[lid] = acc;")
    w.line("barrier(CLK_LOCAL_MEM_FENCE);")
    with w.block(f"for (int s = {pow2_at_least(items) // 2}; s > 0; s >>= 1)"):
        w.line(f"if (lid < s && lid + s < {items}) {red}[lid] = {red}[lid] + {red}[lid + s];")
        w.line("barrier(CLK_LOCAL_MEM_FENCE);")


def _subgroup_tree(w: Writer, red: str) -> None:
    """Sum every work-item's ``acc`` into ``red[0]`` with native subgroups: each subgroup
    reduces in registers, its first work-item leaves the partial sum in local memory, and
    work-item 0 adds the partial sums (two barriers instead of one per tree level)."""
    w.line("acc = sub_group_reduce_add(acc);")
    w.line(f"if (get_sub_group_local_id() == 0) {red}[get_sub_group_id()] = acc;")
    w.line("barrier(CLK_LOCAL_MEM_FENCE);")
    with w.block("if (lid == 0)"):
        with w.block("for (uint s = 1; s < get_num_sub_groups(); ++s)"):
            w.line(f"{red}[0] = {red}[0] + {red}[s];")
    w.line("barrier(CLK_LOCAL_MEM_FENCE);")
