"""Tile plans and helper-function text for the collectives.

This is the one interface the collectives go through to become loops: a contraction
``C[i,j] := alpha * sum_k opA[i,k] opB[k,j] + beta * C[i,j]`` or an elementwise update
is described by a spec; :func:`contraction_helper` / :func:`elementwise_helper` turn it
into a helper function distributed over the work-group.  (The polyhedral scheduler can
later replace the loop building here without touching the instruction lowering.)

Contraction tiling: the work-group covers tiles of ``TM x TN = (RM*WGX) x (RN*WGY)``
elements of C; each work-item accumulates an ``RM x RN`` register block with the k loop
innermost.  ``blocked`` plans give a work-item RM contiguous rows (vectorisable on CPUs),
otherwise rows are interleaved across work-items (coalesced on GPUs).  Full tiles take an
unguarded path; edge tiles guard every load and store.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from backend_opencl.emit.cnames import ctype, zero
from backend_opencl.emit.target import KernelPlan
from backend_opencl.emit.update import Scale, madd, scaled
from backend_opencl.emit.update import mul as mul_t
from backend_opencl.emit.view import add, is_literal, mul
from backend_opencl.emit.writer import Writer
from tensorlang.ir.types import ScalarType

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


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _pow2_at_least(n: int) -> int:
    p = 1
    while p < n:
        p *= 2
    return p


def register_block(plan: KernelPlan, elem: ScalarType, m: str, n: str) -> tuple[int, int]:
    """RM x RN: the part of C one work-item holds in registers."""
    wgx, wgy = plan.work_group_size
    size = max(1, elem.bits // 8)
    if plan.blocked:  # one 256-bit vector of rows: PoCL's build time grows with the block
        rm_max, rn_max = max(1, 32 // size), 4
    else:
        rm_max, rn_max = 4, 4
    rm = rm_max if not is_literal(m) else min(rm_max, _pow2_at_least(_ceil_div(int(m), wgx)))
    rn = rn_max if not is_literal(n) else min(rn_max, _ceil_div(int(n), wgy))
    return max(rm, 1), max(rn, 1)


def contraction_helper(spec: Contraction, plan: KernelPlan, make_store: MakeStore,
                       p: Params) -> str:
    """Helper text (named ``@NAME@``) for a contraction; ``p`` collects its parameters."""
    t = spec.elem
    rm, rn = register_block(plan, t, spec.m, spec.n)
    wgx, wgy = plan.work_group_size
    a = p.matrix(spec.a, t, "A", True)
    b = p.matrix(spec.b, t, "B", True) if spec.b is not None else None
    m, n, k = (p.value(e, "long", x) for e, x in ((spec.m, "M"), (spec.n, "N"), (spec.k, "K")))
    alpha = _scale_param(spec.alpha, t, p, "alpha")
    store = make_store(_scale_param(spec.beta, t, p, "beta"))
    c = p.matrix(spec.c, t, "C", False)
    tm, tn = rm * wgx, rn * wgy
    rows = (mul("lx", str(rm)), "r") if plan.blocked else ("lx", f"r * {wgx}")
    cols = (mul("ly", str(rn)), "c") if plan.blocked else ("ly", f"c * {wgy}")
    w = Writer(1)
    w.line(f"const long lx = {'0' if wgx == 1 else 'get_local_id(0)'};")
    w.line(f"const long ly = {'0' if wgy == 1 else 'get_local_id(1)'};")
    with w.block(f"for (long n0 = 0; n0 < {n}; n0 += {tn})"), \
            w.block(f"for (long m0 = 0; m0 < {m}; m0 += {tm})"):
        w.line(f"const long mb = {add('m0', rows[0])};")
        w.line(f"const long nb = {add('n0', cols[0])};")
        w.line(f"{ctype(t)} acc[{rn}][{rm}];")
        _unrolled(w, [("c", rn), ("r", rm)], f"acc[c][r] = {zero(t)};")
        body = _ContractionBody(t, rm, rn, a, b, c, m, n, k, rows[1], cols[1], alpha, store)
        if _divides(m, tm) and _divides(n, tn):
            body.emit(w, guarded=False)
        else:
            with w.block(f"if (m0 + {tm} <= {m} && n0 + {tn} <= {n})"):
                body.emit(w, guarded=False)
            with w.else_block():
                body.emit(w, guarded=True)
    return f"void @NAME@({', '.join(p.decls)}) {{\n{w.text()}}}\n"


def _divides(size: str, tile: int) -> bool:
    return is_literal(size) and int(size) % tile == 0


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
    t: ScalarType
    rm: int
    rn: int
    a: Matrix
    b: Matrix | None
    c: Matrix
    m: str
    n: str
    k: str
    r_step: str
    c_step: str
    alpha: Scale
    store: Store

    def emit(self, w: Writer, guarded: bool) -> None:
        t, row, col = self.t, f"(mb + {self.r_step})", f"(nb + {self.c_step})"
        with w.block(f"for (long k = 0; k < {self.k}; ++k)"):
            w.line(f"{ctype(t)} a[{self.rm}];")
            load = f"{self.a.ptr}[{add(mul(row, self.a.si), mul('k', self.a.sk))}]"
            guard = f"{row} < {self.m} ? {load} : {zero(t)}" if guarded else load
            _unrolled(w, [("r", self.rm)], f"a[r] = {guard};")
            if self.b is None:
                _unrolled(w, [("c", self.rn), ("r", self.rm)], "acc[c][r] = a[r] + acc[c][r];")
            else:
                w.line(f"{ctype(t)} b[{self.rn}];")
                load = f"{self.b.ptr}[{add(mul('k', self.b.si), mul(col, self.b.sk))}]"
                guard = f"{col} < {self.n} ? {load} : {zero(t)}" if guarded else load
                _unrolled(w, [("c", self.rn)], f"b[c] = {guard};")
                _unrolled(w, [("c", self.rn), ("r", self.rm)],
                          f"acc[c][r] = {madd(t, 'a[r]', 'b[c]', 'acc[c][r]')};")
        out = f"{self.c.ptr}[{add(mul(row, self.c.si), mul(col, self.c.sk))}]"
        stmt = self.store(out, scaled(t, self.alpha, "acc[c][r]"))
        if guarded:
            stmt = f"if ({row} < {self.m} && {col} < {self.n}) {stmt}"
        _unrolled(w, [("c", self.rn), ("r", self.rm)], stmt)


def elementwise_helper(spec: Elementwise, plan: KernelPlan, make_store: MakeStore,
                       p: Params) -> str:
    """Helper text (named ``@NAME@``) for an elementwise update over M x N."""
    t = spec.elem
    ops = [p.matrix(x, t, "AB"[i] if i < 2 else f"X{i}", True)
           for i, x in enumerate(spec.operands)]
    m, n = p.value(spec.m, "long", "M"), p.value(spec.n, "long", "N")
    alpha = _scale_param(spec.alpha, t, p, "alpha")
    store = make_store(_scale_param(spec.beta, t, p, "beta"))
    c = p.matrix(spec.c, t, "C", False)
    value = ""
    for x in ops:
        load = f"{x.ptr}[{add(mul('i', x.si), mul('j', x.sk))}]"
        value = load if not value else mul_t(t, value, load)
    out = f"{c.ptr}[{add(mul('i', c.si), mul('j', c.sk))}]"
    w = Writer(1)
    wgx, wgy = plan.work_group_size
    if n == "1":
        items = wgx * wgy
        lid = "0" if items == 1 else "get_local_id(0) + get_local_id(1) * " + str(wgx)
        w.line("const long j = 0;")
        head = [f"for (long i = {lid}; i < {m}; i += {items})"]
    else:
        head = [f"for (long j = {'0' if wgy == 1 else 'get_local_id(1)'}; j < {n}; j += {wgy})",
                f"for (long i = {'0' if wgx == 1 else 'get_local_id(0)'}; i < {m}; i += {wgx})"]
    for h in head:
        w.line(h + " {")
        w.level += 1
    w.line(store(out, scaled(t, alpha, value)))
    for _ in head:
        w.level -= 1
        w.line("}")
    return f"void @NAME@({', '.join(p.decls)}) {{\n{w.text()}}}\n"




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
    lid = "0" if items == 1 else f"get_local_id(0) + get_local_id(1) * {plan.work_group_size[0]}"
    w.line(f"const long lid = {lid};")
    w.line(f"{ctype(t)} acc = {zero(t)};")
    step = "++i" if items == 1 else f"i += {items}"
    w.line(f"for (long i = lid; i < {k}; {step}) acc = {a.ptr}[{mul('i', a.sk)}] + acc;")
    result = "acc"
    if items > 1:
        red = p.value(scratch, f"local {ctype(t)}*", "red")
        w.line(f"{red}[lid] = acc;")
        w.line("barrier(CLK_LOCAL_MEM_FENCE);")
        with w.block(f"for (int s = {_pow2_at_least(items) // 2}; s > 0; s >>= 1)"):
            w.line(f"if (lid < s && lid + s < {items}) {red}[lid] = {red}[lid] + {red}[lid + s];")
            w.line("barrier(CLK_LOCAL_MEM_FENCE);")
        result = f"{red}[0]"
    guard = "" if items == 1 else "if (lid == 0) "
    w.line(guard + store(f"{c.ptr}[0]", scaled(t, alpha, result)))
    if items > 1:
        w.line("barrier(CLK_LOCAL_MEM_FENCE); // the scratch may be reused next")
    return f"void @NAME@({', '.join(p.decls)}) {{\n{w.text()}}}\n"
