"""jax's LAPACK custom calls on CPU: Cholesky (``lapack_?potrf_ffi``), LU with partial
pivoting (``lapack_?getrf_ffi``) and triangular solves (``lapack_?trsm_ffi``).

On a CPU, jax lowers ``jnp.linalg.cholesky``, ``solve``, ``inv``, ``det``, ``slogdet``
and ``jax.scipy.linalg``'s ``lu``, ``lu_factor``, ``solve_triangular`` and ``cho_solve``
to these ``stablehlo.custom_call`` s (the prefix names the type: ``s`` f32, ``d`` f64,
``c`` complex<f32>, ``z`` complex<f64>), leading dimensions being batch dimensions.  Their
results are those of LAPACK on the logical arrays: the column-major layouts jax asks for
are how XLA hands the buffers to LAPACK, not a change of meaning.  Characters are
attributes of ``mhlo.backend_config`` as their codes (``uplo = 76 : ui8`` is ``'L'``).

- ``potrf``: the factor in the ``uplo`` triangle (the other left as the input has it) and
  ``info`` per matrix (:func:`linalg.factor_cholesky`).
- ``getrf``: ``L`` (unit diagonal, below) and ``U`` in place, the 1-based row interchanges
  ``ipiv`` and ``info`` (the 1-based column of the first exactly zero pivot, else 0),
  unblocked as LAPACK's ``getf2``: the pivot is the first element of largest
  ``|re| + |im|`` down the column, one work-item per matrix (:func:`getrf`).
- ``trsm``: ``op(a) x = b`` (``side = 'L'``) or ``x op(a) = b`` with ``op`` given by
  ``trans_x`` (``'N'``, ``'T'``, ``'C'``), ``a``'s ``uplo`` triangle and a unit diagonal
  when ``diag = 'U'`` (:func:`linalg.solve_triangular`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from math import prod

from frontend.ir.core import Op
from frontend.lower.core import types
from frontend.lower.core.builder import IndexExpr, KernelBuilder, num_groups
from frontend.lower.core.driver import FuncLowering
from frontend.lower.families import linalg
from tensorlang.diagnostics import CompileError

_TYPES = {"s": "f32", "d": "f64", "c": "c32", "z": "c64"}
"""LAPACK's type prefixes and the element types they name."""
_REAL = {"c32": "f32", "c64": "f64"}


def _char(op: Op, name: str, allowed: str) -> str:
    """The character attribute ``name`` of ``op``'s ``mhlo.backend_config``."""
    config = op.attr("mhlo.backend_config")
    value = config.get(name) if isinstance(config, dict) else None
    char = chr(value) if isinstance(value, int) and 0 < value < 128 else ""
    if not char or char not in allowed:
        raise CompileError.at(op.loc, f"'{op.attr('call_target_name')}' needs "
                              f"{name} as one of {', '.join(allowed)} in its "
                              "mhlo.backend_config")
    return char


def potrf(lw: FuncLowering, op: Op) -> None:
    """``lapack_?potrf_ffi``: (factor, info) of the matrices of its operand."""
    (a,) = op.operands
    factor, info = op.results
    linalg.factor_cholesky(lw, op, a, factor, lower=_char(op, "uplo", "LU") == "L",
                           info=info)


def trsm(lw: FuncLowering, op: Op) -> None:
    """``lapack_?trsm_ffi``: the solution of a triangular system."""
    a, b = op.operands
    trans = {"N": "NO_TRANSPOSE", "T": "TRANSPOSE", "C": "ADJOINT"}[
        _char(op, "trans_x", "NTC")]
    linalg.solve_triangular(lw, op, a, b, op.result, left=_char(op, "side", "LR") == "L",
                            lower=_char(op, "uplo", "LU") == "L",
                            unit=_char(op, "diag", "UN") == "U", trans=trans)


def getrf(lw: FuncLowering, op: Op) -> None:
    """``lapack_?getrf_ffi``: (LU, ipiv, info) of the matrices of its operand, one
    work-item per matrix (see the module docstring)."""
    (a,) = op.operands
    lu, ipiv, info = op.results
    t = types.elem(a)
    shape = types.shape(a)
    batch, m, n = shape[:-2], shape[-2], shape[-1]
    out, pivots, status = lw.buffer_for(lu), lw.buffer_for(ipiv), lw.buffer_for(info)
    lw.compute_into(a, out)
    count = prod(batch)
    if count > 0:
        with lw.kernel("getrf") as (k, _):
            with k.elements(count) as w:
                base = k.delinearize(w, list(batch))
                matrix = _Matrix(k, out, t, shape, base)
                first_zero = _factor(matrix, m, n, pivots)
                k.store(first_zero, status, "i32", count, k.linear(base, list(batch)))
        lw.launch_last(num_groups(count))
    lw.bind(lu, out)
    lw.bind(ipiv, pivots)
    lw.bind(info, status)


class _Matrix:
    """One matrix of a batch in a buffer: loads, stores and magnitudes of its elements."""

    def __init__(self, k: KernelBuilder, buffer: int, t: str, shape: Sequence[int],
                 base: list[IndexExpr]) -> None:
        self.k, self.buffer, self.t, self.base = k, buffer, t, base
        self.shape = list(shape)
        self.size = prod(shape)
        self.real = _REAL.get(t, t)

    def at(self, i: IndexExpr, j: IndexExpr) -> IndexExpr:
        return self.k.linear([*self.base, i, j], self.shape)

    def load(self, i: IndexExpr, j: IndexExpr) -> str:
        return self.k.load(self.buffer, self.t, self.size, self.at(i, j))

    def store(self, x: str, i: IndexExpr, j: IndexExpr) -> None:
        self.k.store(x, self.buffer, self.t, self.size, self.at(i, j))

    def magnitude(self, x: str) -> str:
        """``|x|``, or ``|re| + |im|`` for complex (LAPACK's ``i?amax``)."""
        k = self.k
        if self.real == self.t:
            return k.math("abs", x, None, self.t)
        parts = (k.math(part, x, None, self.t) for part in ("real", "imag"))
        re, im = (k.math("abs", p, None, self.real) for p in parts)
        return k.arith("add", re, im, self.real)


def _factor(a: _Matrix, m: int, n: int, pivots: int) -> str:
    """LU of ``a`` in place (``getf2``), its interchanges into ``pivots``; ``info``."""
    k = a.k
    zero = k.const(0, "i32")
    steps = min(m, n)
    ipiv_shape = [*a.shape[:-2], steps]
    with k.loop(0, steps, [zero], ["i32"]) as cols:
        j = cols.var
        p, biggest = _pivot_row(a, j, m)
        k.store(k.cast(k.idx(k.iadd(p, 1)), "index", "i32"), pivots, "i32", prod(ipiv_shape),
                k.linear([*a.base, j], ipiv_shape))
        _swap_rows(a, j, p, n)
        nonzero = k.cmp("ne", biggest, k.const(0.0, a.real), a.real)  # NaN: not zero
        _eliminate(a, j, m, n, nonzero)
        first = k.arith("and", k.arith("not", nonzero, None, "i1"),
                        k.cmp("eq", cols.carried[0], zero, "i32"), "i1")
        here = k.cast(k.idx(k.iadd(j, 1)), "index", "i32")
        cols.yields = [k.select(first, here, cols.carried[0], "i32")]
    return cols.results[0]


def _pivot_row(a: _Matrix, j: IndexExpr, m: int) -> tuple[str, str]:
    """The first row ``p >= j`` of largest magnitude in column ``j``, and that magnitude
    (as LAPACK's ``i?amax``: the running maximum starts at row ``j``, so a NaN there
    stays the pivot)."""
    k = a.k
    with k.scope():  # loads are reused within a scope: this one must not be after the swap
        start = a.magnitude(a.load(j, j))
    with k.loop(k.iadd(j, 1), m, [start, k.idx(j)], [a.real, "index"]) as rows:
        i = rows.var
        mag = a.magnitude(a.load(i, j))
        better = k.cmp("gt", mag, rows.carried[0], a.real)
        rows.yields = [k.select(better, mag, rows.carried[0], a.real),
                       k.select(better, k.idx(i), rows.carried[1], "index")]
    return rows.results[1], rows.results[0]


def _swap_rows(a: _Matrix, j: IndexExpr, p: IndexExpr, n: int) -> None:
    """Exchange rows ``j`` and ``p`` (nothing when they are one)."""
    k = a.k
    with k.loop(0, n, [], []) as cols:
        c = cols.var
        x, y = a.load(j, c), a.load(p, c)
        a.store(y, j, c)
        a.store(x, p, c)


def _eliminate(a: _Matrix, j: IndexExpr, m: int, n: int, nonzero: str) -> None:
    """Divide column ``j`` below the pivot by it (unless it is zero), then subtract the
    outer product of that column and row ``j`` from the block below and right of it."""
    k = a.k
    pivot = a.load(j, j)
    below = k.iadd(j, 1)
    with k.loop(below, m, [], []) as rows:
        i = rows.var
        x = a.load(i, j)
        a.store(k.select(nonzero, k.arith("div", x, pivot, a.t), x, a.t), i, j)
    with k.loop(below, m, [], []) as rows:
        i = rows.var
        lij = a.load(i, j)
        with k.loop(below, n, [], []) as cols:
            c = cols.var
            update = k.arith("mul", lij, a.load(j, c), a.t)
            a.store(k.arith("sub", a.load(i, c), update, a.t), i, c)


LOWERINGS: dict[str, Callable[[FuncLowering, Op], None]] = {
    f"lapack_{prefix}{name}_ffi": lowering
    for prefix in _TYPES for name, lowering in (("potrf", potrf), ("getrf", getrf),
                                                ("trsm", trsm))}
"""The custom-call targets lowered here."""


_ARITY = {"potrf": (1, 2), "getrf": (1, 3), "trsm": (2, 1)}
"""Operands and results of each routine."""


def lower(lw: FuncLowering, op: Op, target: str) -> None:
    """Lower the LAPACK custom call ``op`` (its ``target`` one of :data:`LOWERINGS`),
    after checking its operands and results against the routine's."""
    _check(op, target)
    LOWERINGS[target](lw, op)


def _check(op: Op, target: str) -> None:
    """A CompileError unless ``op`` has the operands and results of ``target``: matrices
    of the prefix's type (square for ``potrf``, ``a`` for ``trsm``), with the batch
    dimensions and pivot and status vectors jax gives them."""
    routine = target[len("lapack_") + 1:-len("_ffi")]
    want = _TYPES[target[len("lapack_")]]

    def fail(what: str) -> CompileError:
        return CompileError.at(op.loc, f"'{target}' {what}")

    operands, results = _ARITY[routine]
    if (len(op.operands), len(op.results)) != (operands, results):
        raise fail(f"takes {operands} operand(s) and gives {results} result(s), not "
                   f"{len(op.operands)} and {len(op.results)}")
    for v in (*op.operands, op.results[0]):
        if types.elem(v, op.loc) != want:
            raise fail(f"takes and gives {want} matrices, not {types.elem(v, op.loc)}")
        if len(types.shape(v)) < 2:
            raise fail("takes matrices (rank 2 or more)")
    a = types.shape(op.operands[0])
    batch, m, n = list(a[:-2]), a[-2], a[-1]
    if routine == "trsm":
        b = types.shape(op.operands[1])
        side = _char(op, "side", "LR")
        if list(b[:-2]) != batch or m != n or (b[-2] if side == "L" else b[-1]) != m:
            raise fail(f"takes a square matrix and right-hand sides of its order, not "
                       f"{list(a)} and {list(b)}")
        shapes = [list(b)]
    else:
        if routine == "potrf" and m != n:
            raise fail(f"takes square matrices, not {m}x{n}")
        shapes = [list(a), *([[*batch, min(m, n)]] if routine == "getrf" else []), batch]
    for r, shape in zip(op.results, shapes, strict=True):
        elem = want if r is op.results[0] else "i32"
        if list(types.shape(r)) != shape or types.elem(r, op.loc) != elem:
            raise fail(f"gives a result of shape {shape} and type {elem} here")
