"""stablehlo.triangular_solve and stablehlo.cholesky: one work-item per independent
vector (a column of the right-hand side, or a batch element), substitution loops in
place in the result buffer.

``triangular_solve`` reduces every variant to ``S y = c`` with ``S`` triangular:

* left side, ``op(a) x = b``: ``S = op(a)``, the vectors are the columns of ``b``;
* right side, ``x op(a) = b`` (``op(a)^T x^T = b^T``): ``S = op(a)^T``, the vectors are
  the rows of ``b``.

``op(a)`` is ``a``, ``a^T`` or ``conj(a)^T``; only the triangle of ``a`` named by
``lower`` is read, and its diagonal is taken as ones with ``unit_diagonal``.
"""

from __future__ import annotations

from collections.abc import Callable
from math import prod

from frontend.ir.core import Op, Value
from frontend.lower.core import types
from frontend.lower.core.builder import IndexExpr, num_groups
from frontend.lower.core.driver import FuncLowering
from frontend.lower.core.fused import Fused
from frontend.lower.core.registry import kernel
from tensorlang.diagnostics import CompileError

_WIDE = {"f16": "f32", "bf16": "f32"}
"""Element types computed in a wider type."""

Matrix = Callable[[IndexExpr, IndexExpr], str]


def _check_type(op: Op, t: str) -> None:
    if t[0] not in "fbc":
        raise CompileError.at(op.loc, f"'{op.name}' on {t} is not supported yet")


@kernel("stablehlo.triangular_solve")
def triangular_solve(lw: FuncLowering, op: Op) -> None:
    """``stablehlo.triangular_solve`` (:func:`solve_triangular`)."""
    a, b = op.operands
    solve_triangular(lw, op, a, b, op.result, left=bool(op.attr("left_side")),
                     lower=bool(op.attr("lower")), unit=bool(op.attr("unit_diagonal")),
                     trans=str(op.attr("transpose_a", "NO_TRANSPOSE")))


def solve_triangular(lw: FuncLowering, op: Op, a: Value, b: Value, result: Value, *,
                     left: bool, lower: bool, unit: bool, trans: str) -> None:
    """``result`` = the solution of ``op(a) x = b`` (``left``) or ``x op(a) = b``, where
    ``op(a)`` is ``a``'s ``lower`` (else upper) triangle, ones on its diagonal when
    ``unit``, transposed as ``trans`` says (``NO_TRANSPOSE``, ``TRANSPOSE``,
    ``ADJOINT``): ``b`` copied to the result, then substituted in place, one vector per
    work-item."""
    t = types.elem(b)
    _check_type(op, t)
    out = lw.buffer_for(result)
    lw.compute_into(b, out)
    shape = types.shape(b)
    batch, m, n = shape[:-2], shape[-2], shape[-1]
    size = prod(shape)
    count = prod(batch) * (n if left else m)
    if size == 0:
        lw.bind(result, out)
        return
    k_dim = m if left else n
    # op(a) is lower triangular iff (lower xor transposed); S = op(a)^T on the right.
    s_lower = lower != (trans != "NO_TRANSPOSE")
    s_lower = s_lower if left else not s_lower
    wt = _WIDE.get(t, t)
    with lw.kernel("trsolve") as (k, f):
        with k.elements(count) as w:
            bidx = k.delinearize(w, [*batch, n if left else m])
            base, col = bidx[:-1], bidx[-1]

            def at(i: IndexExpr) -> IndexExpr:
                return k.linear([*base, i, col] if left else [*base, col, i], shape)

            def a_elem(r: IndexExpr, c: IndexExpr) -> str:
                return k.cast(f.value(a, [*base, r, c]), t, wt)

            def op_a(i: IndexExpr, j: IndexExpr) -> str:
                if trans == "NO_TRANSPOSE":
                    return a_elem(i, j)
                x = a_elem(j, i)
                return k.math("conj", x, None, wt) if trans == "ADJOINT" and t[0] == "c" else x

            s: Matrix = op_a if left else (lambda i, j: op_a(j, i))
            _substitute(f, out, t, wt, size, k_dim, s, at, s_lower, unit)
    lw.launch_last(num_groups(count))
    lw.bind(result, out)


def _substitute(f: Fused, out: int, t: str, wt: str, size: int, n: int, s: Matrix,
                at: Callable[[IndexExpr], IndexExpr], lower: bool, unit: bool) -> None:
    """Solve ``S y = c`` in place (``c`` at ``at(i)`` of ``out``): forward substitution
    when ``S`` is lower triangular, backward otherwise."""
    k = f.k
    with k.loop(0, n, [], []) as outer:
        i = outer.var if lower else k.idx(k.isub(n - 1, outer.var))
        lo, hi = (0, i) if lower else (k.iadd(i, 1), n)
        with k.loop(lo, hi, [k.const(0, wt)], [wt]) as inner:
            y = k.cast(k.load(out, t, size, at(inner.var)), t, wt)
            term = k.arith("mul", s(i, inner.var), y, wt)
            inner.yields = [k.arith("add", inner.carried[0], term, wt)]
        c = k.cast(k.load(out, t, size, at(i)), t, wt)
        x = k.arith("sub", c, inner.results[0], wt)
        if not unit:
            x = k.arith("div", x, s(i, i), wt)
        k.store(k.cast(x, wt, t), out, t, size, at(i))


@kernel("stablehlo.cholesky")
def cholesky(lw: FuncLowering, op: Op) -> None:
    """``stablehlo.cholesky`` (:func:`factor_cholesky`)."""
    (a,) = op.operands
    factor_cholesky(lw, op, a, op.result, lower=bool(op.attr("lower", False)))


def factor_cholesky(lw: FuncLowering, op: Op, a: Value, result: Value, *, lower: bool,
                    info: Value | None = None) -> None:
    """``result`` = the Cholesky factor of each matrix of ``a`` in its ``lower`` (else
    upper) triangle: Cholesky–Banachiewicz, in place in a copy of ``a``, whose other
    triangle is left as it is.  ``info`` (i32 per matrix), when given, gets LAPACK's
    ``potrf`` status: 0, or the order of the first leading minor that is not positive
    definite (a diagonal element not above zero, or NaN, before its square root)."""
    t = types.elem(a)
    _check_type(op, t)
    out = lw.buffer_for(result)
    lw.compute_into(a, out)
    status = None if info is None else lw.buffer_for(info)
    shape = types.shape(a)
    batch, n = shape[:-2], shape[-1]
    size, count = prod(shape), prod(batch)
    if count > 0 and (size > 0 or status is not None):
        wt = _WIDE.get(t, t)
        with lw.kernel("cholesky") as (k, f):
            with k.elements(count) as w:
                base = k.delinearize(w, list(batch))

                def at(i: IndexExpr, j: IndexExpr) -> IndexExpr:
                    return k.linear([*base, i, j] if lower else [*base, j, i], shape)

                _cholesky(f, out, t, wt, size, n, at, conj_upper=not lower)
                if status is not None:
                    first = _first_failure(f, out, t, size, n, at)
                    k.store(first, status, "i32", count, k.linear(base, list(batch)))
        lw.launch_last(num_groups(count))
    lw.bind(result, out)
    if info is not None and status is not None:
        lw.bind(info, status)


def _first_failure(f: Fused, out: int, t: str, size: int, n: int,
                   at: Callable[[IndexExpr, IndexExpr], IndexExpr]) -> str:
    """1 + the first ``j`` whose computed diagonal ``L[j][j]`` (its real part) is not
    above zero (the argument of its square root was not, or was NaN), else 0: an i32."""
    k = f.k
    wt = _WIDE.get(t, t)
    rt = types.COMPLEX_PARTS.get(wt, wt)
    zero = k.const(0, "i32")
    with k.loop(0, n, [zero], ["i32"]) as diag:
        j = diag.var
        d = k.cast(k.load(out, t, size, at(j, j)), t, wt)
        if rt != wt:
            d = k.math("real", d, None, wt)
        bad = k.arith("not", k.cmp("gt", d, k.const(0.0, rt), rt), None, "i1")
        first = k.arith("and", bad, k.cmp("eq", diag.carried[0], zero, "i32"), "i1")
        here = k.cast(k.idx(k.iadd(j, 1)), "index", "i32")
        diag.yields = [k.select(first, here, diag.carried[0], "i32")]
    return diag.results[0]


def _cholesky(f: Fused, out: int, t: str, wt: str, size: int, n: int,
              at: Callable[[IndexExpr, IndexExpr], IndexExpr], conj_upper: bool) -> None:
    """``L[i][j]`` at ``at(i, j)`` (for upper results ``U = L^H``: stored conjugated)."""
    k = f.k
    cplx = t[0] == "c"

    def load(i: IndexExpr, j: IndexExpr) -> str:
        x = k.cast(k.load(out, t, size, at(i, j)), t, wt)
        return k.math("conj", x, None, wt) if cplx and conj_upper else x

    def store(x: str, i: IndexExpr, j: IndexExpr) -> None:
        x = k.math("conj", x, None, wt) if cplx and conj_upper else x
        k.store(k.cast(x, wt, t), out, t, size, at(i, j))

    with k.loop(0, n, [], []) as rows:
        i = rows.var
        with k.loop(0, k.iadd(i, 1), [], []) as cols:
            j = cols.var
            with k.loop(0, j, [k.const(0, wt)], [wt]) as inner:
                p = inner.var
                lj = k.math("conj", load(j, p), None, wt) if cplx else load(j, p)
                term = k.arith("mul", load(i, p), lj, wt)
                inner.yields = [k.arith("add", inner.carried[0], term, wt)]
            x = k.arith("sub", load(i, j), inner.results[0], wt)
            diag = k.cmp("eq", k.idx(i), k.idx(j), "index")
            value = k.branch(diag, wt, lambda: _sqrt(f, x, wt, cplx),
                             lambda: k.arith("div", x, load(j, j), wt))
            store(value, i, j)


def _sqrt(f: Fused, x: str, wt: str, cplx: bool) -> str:
    """The square root of a diagonal element (real part for complex; NaN when negative)."""
    k = f.k
    if not cplx:
        return k.math("sqrt", x, None, wt)
    rt = types.COMPLEX_PARTS[wt]
    root = k.math("sqrt", k.math("real", x, None, wt), None, rt)
    return k.emit(f"complex {root}, {k.const(0.0, rt)} : {wt}")
