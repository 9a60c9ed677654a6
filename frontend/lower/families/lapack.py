"""jax's LAPACK custom calls on CPU: Cholesky (``lapack_?potrf_ffi``), LU with partial
pivoting (``lapack_?getrf_ffi``), triangular solves (``lapack_?trsm_ffi``) and, for real
types, QR (``lapack_?geqrf_ffi``, ``lapack_?orgqr_ffi``).

On a CPU, jax lowers ``jnp.linalg.cholesky``, ``solve``, ``inv``, ``det``, ``slogdet``,
``qr`` and ``jax.scipy.linalg``'s ``lu``, ``lu_factor``, ``solve_triangular`` and
``cho_solve`` to these ``stablehlo.custom_call`` s (the prefix names the type: ``s`` f32, ``d`` f64,
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
- ``geqrf``, ``orgqr`` (``s``, ``d``): Householder QR as LAPACK's unblocked ``geqr2``
  and ``org2r`` (its reflectors, scalars and signs, so ``Q`` and ``R`` are LAPACK's).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from math import prod

from frontend.ir.core import Op, Value
from frontend.lower.core import types
from frontend.lower.core.builder import IndexExpr, KernelBuilder, num_groups
from frontend.lower.core.driver import FuncLowering
from frontend.lower.core.fused import Fused
from frontend.lower.families import linalg
from tensorlang.diagnostics import CompileError

_TYPES = {"s": "f32", "d": "f64", "c": "c32", "z": "c64"}
"""LAPACK's type prefixes and the element types they name."""


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
    out, pivots, status = lw.buffer_for(lu), lw.buffer_for(ipiv), lw.buffer_for(info)
    lw.compute_into(a, out)
    batch = list(types.shape(a)[:-2])

    def factor(matrix: _Matrix, _: Fused) -> None:
        k = matrix.k
        k.store(_factor(matrix, pivots), status, "i32", prod(batch), k.linear(matrix.base, batch))

    _per_matrix(lw, "getrf", a, out, factor)
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
        self.real = types.COMPLEX_PARTS.get(t, t)

    def at(self, i: IndexExpr, j: IndexExpr) -> IndexExpr:
        """The linear index of element ``(i, j)``."""
        return self.k.linear([*self.base, i, j], self.shape)

    def load(self, i: IndexExpr, j: IndexExpr) -> str:
        """Element ``(i, j)`` (loads are reused within a scope: see :func:`_pivot_row`)."""
        return self.k.load(self.buffer, self.t, self.size, self.at(i, j))

    def store(self, x: str, i: IndexExpr, j: IndexExpr) -> None:
        """Store ``x`` at ``(i, j)``."""
        self.k.store(x, self.buffer, self.t, self.size, self.at(i, j))

    def magnitude(self, x: str) -> str:
        """``|x|``, or ``|re| + |im|`` for complex (LAPACK's ``i?amax``)."""
        k = self.k
        if self.real == self.t:
            return k.math("abs", x, None, self.t)
        parts = (k.math(part, x, None, self.t) for part in ("real", "imag"))
        re, im = (k.math("abs", p, None, self.real) for p in parts)
        return k.arith("add", re, im, self.real)


def _factor(a: _Matrix, pivots: int) -> str:
    """LU of ``a`` in place (``getf2``), its interchanges into ``pivots``; ``info``."""
    k = a.k
    m, n = a.shape[-2], a.shape[-1]
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


def geqrf(lw: FuncLowering, op: Op) -> None:
    """``lapack_?geqrf_ffi`` (real): ``R`` on and above the diagonal, the Householder
    vectors below it and their scalars ``tau``, as LAPACK's unblocked ``geqr2``."""
    (a,) = op.operands
    qr, tau = op.results
    out, taus = lw.buffer_for(qr), lw.buffer_for(tau)
    lw.compute_into(a, out)
    _per_matrix(lw, "geqrf", a, out, lambda matrix, _: _householder_qr(matrix, taus))
    lw.bind(qr, out)
    lw.bind(tau, taus)


def orgqr(lw: FuncLowering, op: Op) -> None:
    """``lapack_?orgqr_ffi`` (real): the first columns of ``Q = H(0) H(1) ... H(k-1)``
    from ``geqrf``'s vectors and scalars, as LAPACK's unblocked ``org2r``."""
    a, tau = op.operands
    out = lw.buffer_for(op.result)
    lw.compute_into(a, out)
    _per_matrix(lw, "orgqr", a, out, lambda matrix, f: _form_q(
        matrix, lambda i: f.value(tau, [*matrix.base, i]), types.shape(tau)[-1]))
    lw.bind(op.result, out)


def _per_matrix(lw: FuncLowering, hint: str, a: Value, out: int,
                body: Callable[[_Matrix, Fused], None]) -> None:
    """A kernel running ``body`` on each matrix of ``out`` (``a``'s shape), a work-item
    per matrix."""
    shape = types.shape(a)
    batch = list(shape[:-2])
    count = prod(batch)
    if count == 0:
        return
    with lw.kernel(hint) as (k, f):
        with k.elements(count) as w:
            body(_Matrix(k, out, types.elem(a), shape, k.delinearize(w, batch)), f)
    lw.launch_last(num_groups(count))


def _householder_qr(a: _Matrix, taus: int) -> None:
    """``geqr2`` on ``a`` in place, the reflectors' scalars into ``taus``: for each
    column ``i``, ``dlarfg`` makes ``H(i) = I - tau v v^T`` (``v[i] = 1``, the rest stored
    below the diagonal) that zeroes the column below ``R[i][i] = beta``, then ``H(i)``
    is applied to the columns right of it."""
    k = a.k
    m, n = a.shape[-2], a.shape[-1]
    steps = min(m, n)
    tau_shape = [*a.shape[:-2], steps]
    zero = k.const(0.0, a.t)
    with k.loop(0, steps, [], []) as cols:
        i = cols.var
        below = k.iadd(i, 1)
        with k.loop(below, m, [zero], [a.t]) as norm:  # by hypot: no overflow, as dnrm2
            norm.yields = [k.math("hypot", norm.carried[0], a.load(norm.var, i), a.t)]
        xnorm = norm.results[0]
        alpha = a.load(i, i)
        reflect = k.cmp("ne", xnorm, zero, a.t)  # else H(i) = I: tau = 0, beta = alpha
        beta = k.select(reflect, k.arith("neg", k.math("copysign", k.math(
            "hypot", alpha, xnorm, a.t), alpha, a.t), None, a.t), alpha, a.t)
        tau = k.select(reflect, k.arith("div", k.arith("sub", beta, alpha, a.t), beta, a.t),
                       zero, a.t)
        scale = k.select(reflect, k.arith("div", k.const(1.0, a.t),
                                          k.arith("sub", alpha, beta, a.t), a.t),
                         k.const(1.0, a.t), a.t)
        k.store(tau, taus, a.t, prod(tau_shape), k.linear([*a.base, i], tau_shape))
        with k.loop(below, m, [], []) as rows:
            r = rows.var
            a.store(k.arith("mul", a.load(r, i), scale, a.t), r, i)
        a.store(beta, i, i)
        _reflect(a, i, below, n, tau)


def _reflect(a: _Matrix, i: IndexExpr, first: IndexExpr, last: IndexExpr, tau: str) -> None:
    """Apply ``H = I - tau v v^T`` (``v``: 1 at row ``i``, column ``i`` of ``a`` below it)
    from the left to columns ``first`` to ``last - 1`` of rows ``i`` down."""
    k = a.k
    m = a.shape[-2]
    below = k.iadd(i, 1)
    with k.loop(first, last, [], []) as cols:
        j = cols.var
        with k.loop(below, m, [a.load(i, j)], [a.t]) as dot:
            r = dot.var
            term = k.arith("mul", a.load(r, i), a.load(r, j), a.t)
            dot.yields = [k.arith("add", dot.carried[0], term, a.t)]
        w = k.arith("mul", tau, dot.results[0], a.t)
        a.store(k.arith("sub", a.load(i, j), w, a.t), i, j)
        with k.loop(below, m, [], []) as rows:
            r = rows.var
            update = k.arith("mul", a.load(r, i), w, a.t)
            a.store(k.arith("sub", a.load(r, j), update, a.t), r, j)


def _form_q(a: _Matrix, tau: Callable[[IndexExpr], str], steps: int) -> None:
    """``org2r`` on ``a`` in place: the columns past ``steps`` start as the identity's,
    then ``H(i)`` for ``i`` from ``steps - 1`` down to 0 is applied to the columns right
    of ``i`` and column ``i`` becomes ``H(i)``'s."""
    k = a.k
    m, n = a.shape[-2], a.shape[-1]
    zero, one = k.const(0.0, a.t), k.const(1.0, a.t)
    with k.loop(steps, n, [], []) as cols:
        j = cols.var
        with k.loop(0, m, [], []) as rows:
            r = rows.var
            a.store(k.select(k.cmp("eq", k.idx(r), k.idx(j), "index"), one, zero, a.t), r, j)
    with k.loop(0, steps, [], []) as back:
        i = k.isub(steps - 1, back.var)
        t = tau(i)
        _reflect(a, i, k.iadd(i, 1), n, t)
        below = k.iadd(i, 1)
        with k.loop(below, m, [], []) as rows:
            r = rows.var
            a.store(k.arith("mul", k.arith("neg", t, None, a.t), a.load(r, i), a.t), r, i)
        a.store(k.arith("sub", one, t, a.t), i, i)
        with k.loop(0, i, [], []) as rows:
            a.store(zero, rows.var, i)


_ROUTINES: dict[str, tuple[str, Callable[[FuncLowering, Op], None]]] = {
    "potrf": ("sdcz", potrf), "getrf": ("sdcz", getrf), "trsm": ("sdcz", trsm),
    "geqrf": ("sd", geqrf), "orgqr": ("sd", orgqr)}
"""Each routine lowered here: its type prefixes and its lowering."""
LOWERINGS: dict[str, Callable[[FuncLowering, Op], None]] = {
    f"lapack_{prefix}{name}_ffi": lowering
    for name, (prefixes, lowering) in _ROUTINES.items() for prefix in prefixes}
"""The custom-call targets lowered here."""


def lower(lw: FuncLowering, op: Op, target: str) -> None:
    """Lower the LAPACK custom call ``op`` (its ``target`` one of :data:`LOWERINGS`),
    after checking its operands and results against the routine's."""
    _check(op, target)
    LOWERINGS[target](lw, op)


Signature = tuple[list[tuple[list[int], str]], list[tuple[list[int], str]]]
"""(shape, element type) of each operand and each result."""


def _check(op: Op, target: str) -> None:
    """A CompileError unless ``op``'s operands and results are those ``target`` takes
    and gives, as jax calls it (:func:`_signature`)."""
    routine = target[len("lapack_") + 1:-len("_ffi")]
    elem = _TYPES[target[len("lapack_")]]

    def fail(what: str) -> CompileError:
        return CompileError.at(op.loc, f"'{target}' {what}")

    a = op.operands[0] if op.operands else None
    if a is None or types.elem(a, op.loc) != elem or len(types.shape(a)) < 2:
        raise fail(f"takes a matrix of {elem} (rank 2 or more) first")
    operands, results = _signature(op, routine, list(types.shape(a)), elem)
    for kind, values, want in (("operand", op.operands, operands),
                               ("result", op.results, results)):
        got = [(list(types.shape(v)), types.elem(v, op.loc)) for v in values]
        if got != want:
            shown = ", ".join(f"{shape} {t}" for shape, t in want)
            raise fail(f"takes {len(operands)} operand(s) and gives {len(results)} "
                       f"result(s); its {kind}s here must be {shown}")
    a_shape, b_shape = operands[0][0], operands[-1][0]
    if routine == "potrf" and a_shape[-1] != a_shape[-2]:
        raise fail(f"takes square matrices, not {a_shape[-2]}x{a_shape[-1]}")
    if routine == "trsm" and (b_shape[:-2] != a_shape[:-2] or a_shape[-1] != a_shape[-2] or (
            b_shape[-2] if _char(op, "side", "LR") == "L" else b_shape[-1]) != a_shape[-1]):
        raise fail(f"takes a square matrix and right-hand sides of its order, not "
                   f"{a_shape} and {b_shape}")


def _signature(op: Op, routine: str, a: list[int], elem: str) -> Signature:
    """The operands and results of ``routine`` given its first operand's shape ``a``."""
    batch, m, n = a[:-2], a[-2], a[-1]
    if routine == "trsm":  # b's order is checked apart, after its type
        b = list(types.shape(op.operands[1])) if len(op.operands) > 1 else [*batch, m, n]
        return [(a, elem), (b, elem)], [(b, elem)]
    if routine == "orgqr":
        steps = types.shape(op.operands[1])[-1] if len(op.operands) > 1 and \
            types.shape(op.operands[1]) else min(m, n)
        return [(a, elem), ([*batch, min(steps, n)], elem)], [(a, elem)]
    status = (batch, "i32")
    outputs = {"potrf": [(a, elem), status],
               "getrf": [(a, elem), ([*batch, min(m, n)], "i32"), status],
               "geqrf": [(a, elem), ([*batch, min(m, n)], elem)]}[routine]
    return [(a, elem)], outputs
