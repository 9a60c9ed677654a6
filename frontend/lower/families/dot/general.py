"""stablehlo.dot_general as gemm: one work-group per batch element.

The operands are brought (by a fused copy kernel, skipped when they already are) into the
canonical row-major layouts lhs[B, M, K] and rhs[B, K, N] of the result's element type;
the result is row-major [B, M, N].  With the layout mapping (row-major tensor = column-major
memref with reversed modes) that is C^T = B^T A^T: ``gemm.n.n 1, rhs_b, lhs_b, 0, out_b``
on the memref views ``memref<NxK>``, ``memref<KxM>`` and ``memref<NxM>`` of batch ``b =
group_id``.

Elementwise consumers of the result (its epilogue, ``FuncLowering.defer_to_epilogue``)
and the conversion of an f32 accumulator to f16/bf16 run in the same kernel after the
gemm, on the work-group's own rows of C (:class:`Tail`).
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

from frontend.ir.core import Op, Value
from frontend.lower.core import types
from frontend.lower.core.builder import IndexExpr, KernelBuilder, groups_nd, num_groups
from frontend.lower.core.driver import FuncLowering
from frontend.lower.core.fused import Fused
from frontend.lower.core.registry import kernel
from frontend.lower.families.reduce.coop import clamp
from tensorlang.diagnostics import CompileError


def _dims(op: Op) -> tuple[list[int], list[int], list[int], list[int]]:
    def get(name: str) -> list[int]:
        return op.struct_ints("dot_dimension_numbers", name)

    return (get("lhs_batching_dimensions"), get("rhs_batching_dimensions"),
            get("lhs_contracting_dimensions"), get("rhs_contracting_dimensions"))


def canonical(lw: FuncLowering, v: Value, order: list[int], dtype: str,
              copies: list[Copy] | None = None) -> int:
    """A buffer holding ``v`` transposed to ``order`` and converted to ``dtype``; the copy
    is made now, or appended to ``copies`` for :func:`copy_layouts`."""
    buf = lw.buffer_of(v)
    if buf is not None and order == sorted(order) and types.elem(v) == dtype:
        return buf
    shape = types.shape(v)
    copy = Copy(v, order, dtype, lw.new_buffer(dtype, [shape[d] for d in order]))
    if copies is None:
        copy_layouts(lw, [copy])
    else:
        copies.append(copy)
    return copy.out


@dataclass(frozen=True)
class Copy:
    """A layout copy of :func:`canonical`: ``v`` transposed to ``order`` into ``out``."""

    v: Value
    order: list[int]
    dtype: str
    out: int

    @property
    def shape(self) -> list[int]:
        """The copy's shape (``v``'s dimensions in ``order``)."""
        return [types.shape(self.v)[d] for d in self.order]


def copy_layouts(lw: FuncLowering, copies: list[Copy]) -> None:
    """The ``copies``: one kernel for all of them when they take the same number of
    work-groups (the two operands of a bf16 gemm: one launch fewer), else one each."""
    groups = {groups_nd(c.shape) for c in copies}
    runs = [copies] if len(groups) == 1 and min(groups) else [[c] for c in copies]
    for run in runs:
        with lw.kernel("layout") as (k, f):
            for c in run:
                _copy_loop(k, f, c)
        lw.launch_last(groups_nd(run[0].shape) if prod(run[0].shape) else 0)


def _copy_loop(k: KernelBuilder, f: Fused, c: Copy) -> None:
    """This work-group's block of copy ``c``."""
    shape, out_shape = types.shape(c.v), c.shape
    with k.elements_nd(out_shape) as idx:
        src: list[IndexExpr] = [0] * len(shape)
        for pos, d in enumerate(c.order):
            src[d] = idx[pos]
        x = k.cast(f.value(c.v, src), types.elem(c.v), c.dtype)
        k.store(x, c.out, c.dtype, prod(out_shape), k.linear(idx, out_shape))


FOLD_TRANSPOSES = True
"""Transposed operands read by the gemm's transposed variants (benchmarks switch it off)."""


def operands(lw: FuncLowering, specs: list[tuple[Value, tuple[list[int], list[int], list[int]]]],
             dtype: str) -> list[tuple[int | Strided, bool]]:
    """:func:`operand` of each ``(value, order)``; the layout copies they need are made
    together (:func:`copy_layouts`)."""
    copies: list[Copy] = []
    found = [operand(lw, v, order, dtype, copies) for v, order in specs]
    if copies:
        copy_layouts(lw, copies)
    return found


def operand(lw: FuncLowering, v: Value, order: tuple[list[int], list[int], list[int]],
            dtype: str, copies: list[Copy] | None = None) -> tuple[int | Strided, bool]:
    """A buffer for a gemm operand whose canonical layout is ``batch + first + second``
    (dimension lists of ``v``) and whether the gemm reads it transposed: a buffer already
    laid out as ``batch + second + first`` (a transposed result, e.g. the keys of
    attention) is used as it is, with the gemm's transposed variant.  Lazy transposes
    and reshapes of a buffer are looked through (``x @ w.T`` reads ``w`` in place, a
    flattened feature map is read as it is)."""
    src, batch, first, second = _through_transposes(lw, v, order)
    buf = _storage(lw, src)
    if FOLD_TRANSPOSES and buf is not None and types.elem(src) == dtype:
        natural = list(range(len(types.shape(src))))
        if batch + first + second == natural:
            return buf, False
        if first and second and batch + second + first == natural:
            return buf, True
    if FOLD_TRANSPOSES and types.elem(v) == dtype:
        found = strided(lw, v, order)
        if found is not None:
            return found
    return canonical(lw, v, order[0] + order[1] + order[2], dtype, copies), False


@dataclass(frozen=True)
class Strided:
    """A gemm operand read in place from buffer ``buffer``: batch element ``b`` (row-major
    over ``batch_shape``) is the ``size0 x size1`` block at element ``offset + sum(b_d *
    batch_strides[d])`` with strides ``(1, ld)`` (mode 0 contiguous)."""

    buffer: int
    offset: int
    ld: int
    sizes: tuple[int, int]
    batch_shape: tuple[int, ...]
    batch_strides: tuple[int, ...]


def strided(lw: FuncLowering, v: Value, order: tuple[list[int], list[int], list[int]]
            ) -> tuple[Strided, bool] | None:
    """``v`` as a strided view of a buffer (through lazy transposes, slices and reshapes
    that split or merge contiguous dimensions: the heads of attention sliced out of a
    fused QKV projection), with whether the gemm reads it transposed; None when its
    dimension groups ``order`` (batch, first, second) are not such a view whose rows fit
    a row-major reading of the buffer."""
    found = _layout(lw, v, 8)
    return None if found is None else _as_view(lw, *found, order)


def _as_view(lw: FuncLowering, buf: int, off: int, shape: list[int], st: list[int],
             order: tuple[list[int], list[int], list[int]]) -> tuple[Strided, bool] | None:
    """The view of :func:`strided` for a tensor at ``off`` with strides ``st`` in ``buf``."""
    batch, first, second = order
    f, sec = _merge(shape, st, first), _merge(shape, st, second)
    if f is None or sec is None:
        return None
    trans = not (sec[1] == 1 or sec[0] == 1)
    (size0, s0), (size1, ld) = (f, sec) if trans else (sec, f)
    if s0 != 1 and size0 != 1:
        return None
    ld = max(ld, size0) if size1 == 1 else ld
    n = lw.buffers[buf].size
    bstrides = [st[d] for d in batch]
    small = sum((shape[d] - 1) * st[d] for d in batch if st[d] % ld)
    if ld < 1 or n % ld or off % ld + small + size0 > ld:
        return None
    return Strided(buf, off, ld, (size0, size1), tuple(shape[d] for d in batch),
                   tuple(bstrides)), trans


def _layout(lw: FuncLowering, v: Value, depth: int
            ) -> tuple[int, int, list[int], list[int]] | None:
    """(buffer, offset, shape, strides) of ``v`` as a view of a buffer, or None."""
    shape = list(types.shape(v))
    buf = lw.buffer_of(v)
    if buf is not None:
        return buf, 0, shape, _packed(shape)
    op = v.owner
    if depth == 0 or not isinstance(op, Op) or not op.operands \
            or types.elem(op.operands[0]) != types.elem(v) \
            or op.name not in ("stablehlo.transpose", "stablehlo.slice", "stablehlo.reshape"):
        return None
    inner = _layout(lw, op.operands[0], depth - 1)
    if inner is None:
        return None
    buf, off, ishape, ist = inner
    if op.name == "stablehlo.transpose":
        perm = op.ints_attr("permutation")
        return buf, off, shape, [ist[d] for d in perm]
    if op.name == "stablehlo.slice":
        starts = op.ints_attr("start_indices")
        steps = op.ints_attr("strides")
        off += sum(a * b for a, b in zip(starts, ist, strict=True))
        return buf, off, shape, [a * b for a, b in zip(ist, steps, strict=True)]
    out = _reshaped(ishape, ist, shape)
    return None if out is None else (buf, off, shape, out)


def _packed(shape: list[int]) -> list[int]:
    """Row-major strides of ``shape``."""
    out, stride = [], 1
    for n in reversed(shape):
        out.append(stride)
        stride *= n
    return out[::-1]


def _reshaped(ishape: list[int], ist: list[int], oshape: list[int]) -> list[int] | None:
    """Strides of a reshape to ``oshape`` of a view (``ishape``, ``ist``): dimension groups
    of equal size map onto each other; a group of input dimensions must be contiguous."""
    a = [(n, s) for n, s in zip(ishape, ist, strict=True) if n != 1]
    outs = [d for d, n in enumerate(oshape) if n != 1]
    strides = [0] * len(oshape)
    i = j = 0
    while i < len(a) and j < len(outs):
        gi, gj, pi, pj = [i], [j], a[i][0], oshape[outs[j]]
        while pi != pj:
            if pi < pj and i + 1 < len(a):
                i += 1
                gi.append(i)
                pi *= a[i][0]
            elif pj < pi and j + 1 < len(outs):
                j += 1
                gj.append(j)
                pj *= oshape[outs[j]]
            else:
                return None
        if any(a[x][1] != a[x + 1][1] * a[x + 1][0] for x in gi[:-1]):
            return None
        stride = a[gi[-1]][1]
        for y in reversed(gj):
            strides[outs[y]] = stride
            stride *= oshape[outs[y]]
        i, j = i + 1, j + 1
    return strides if i == len(a) and j == len(outs) else None


def _merge(shape: list[int], st: list[int], dims: list[int]) -> tuple[int, int] | None:
    """(size, stride) of dimensions ``dims`` read as one (row-major), or None when they
    are not contiguous with one another."""
    live = [d for d in dims if shape[d] != 1]
    if not live:
        return 1, 1
    for x, y in zip(live, live[1:], strict=False):
        if st[x] != st[y] * shape[y]:
            return None
    return prod(shape[d] for d in live), st[live[-1]]


def _storage(lw: FuncLowering, v: Value) -> int | None:
    """The buffer holding ``v``'s elements in row-major order: its own, or that of the
    operand of the lazy reshapes that define it (a reshape keeps the row-major order)."""
    while lw.buffer_of(v) is None and isinstance(v.owner, Op) \
            and v.owner.name == "stablehlo.reshape" \
            and types.elem(v.owner.operands[0]) == types.elem(v):
        v = v.owner.operands[0]
    return lw.buffer_of(v)


def _through_transposes(lw: FuncLowering, v: Value, order: tuple[list[int], list[int],
                                                                  list[int]]
                        ) -> tuple[Value, list[int], list[int], list[int]]:
    """``v`` or the operand of the lazy transposes that define it, and ``order``'s
    dimension lists in its dimensions."""
    batch, first, second = (list(o) for o in order)
    while lw.buffer_of(v) is None and isinstance(v.owner, Op) \
            and v.owner.name == "stablehlo.transpose":
        perm = v.op.ints_attr("permutation")
        batch, first, second = ([perm[d] for d in o] for o in (batch, first, second))
        v = v.owner.operands[0]
    return v, batch, first, second


@kernel("stablehlo.dot_general")
def dot_general(lw: FuncLowering, op: Op) -> None:
    """gemm per batch element, batch elements over work-groups; elementwise consumers of
    the result (and the f16/bf16 conversion) run on each work-group's tile afterwards."""
    lhs, rhs = op.operand("lhs"), op.operand("rhs")
    lb, rb, lc, rc = _dims(op)
    t = types.elem(op.result)
    if t == "i1":
        raise CompileError.at(op.loc, "'stablehlo.dot_general' on i1 is not supported yet")
    ls, rs = types.shape(lhs), types.shape(rhs)
    lf = [d for d in range(len(ls)) if d not in lb + lc]
    rf = [d for d in range(len(rs)) if d not in rb + rc]
    nb, m = prod(ls[d] for d in lb), prod(ls[d] for d in lf)
    kk, n = prod(ls[d] for d in lc), prod(rs[d] for d in rf)
    if nb * m * n * kk > 0 and lw.defer_to_epilogue(op):
        return
    if nb * m * n * kk == 0:
        out = lw.buffer_for(op.result)
        lw.bind(op.result, out)
        if nb * m * n:
            zero_fill(lw, out, t, nb * m * n)
        return
    acc = _ACCUMULATE.get(t, t)
    ranks = (len(lb), len(lf), len(rf))
    transposed = _transposed_output(lw, op, acc, ranks)
    swapped = None if transposed is not None else _swapped_transpose(lw, op, ranks)
    if swapped is not None and m >= min(n, MIN_SWAPPED_ROWS):  # (lhs rhs)^T = rhs^T lhs^T
        (a, ta), (b, tb) = operands(lw, [(rhs, (rb, rf, rc)), (lhs, (lb, lc, lf))], acc)
        c, tail = gemm_output(lw, swapped.result, acc)
        gemm_kernel(lw, (a, b, c), acc, (nb, n, kk, m), tail, (ta, tb))
        return
    (a, ta), (b, tb) = operands(lw, [(lhs, (lb, lf, lc)), (rhs, (rb, rc, rf))], acc)
    if transposed is not None:
        view, user = transposed
        gemm_kernel(lw, (a, b, view), acc, (nb, m, kk, n), None, (ta, tb))
        lw.bind(user.result, view.buffer)
        return
    c, tail = gemm_output(lw, op.result, acc)
    gemm_kernel(lw, (a, b, c), acc, (nb, m, kk, n), tail, (ta, tb))


MIN_SWAPPED_ROWS = 32
"""Rows (the lhs's free size) a swapped product needs unless the unswapped one has as
few: C's rows are the gemm's vector direction (a 10-row C of the 512 x 10 gradient of a
10-class layer ran 6x slower than its 512-row transpose plus the transposed read)."""


def _swapped_transpose(lw: FuncLowering, op: Op, ranks: tuple[int, int, int]) -> Op | None:
    """The ``transpose`` that is the only use of the result and swaps its lhs and rhs
    dimensions (keeping the batch first: the weight gradient ``(x^T @ dy)^T`` of a
    dense layer), when it cannot be written as a strided view: the gemm then computes
    the transposed product with swapped operands (contiguous rows of C, and the
    transpose's consumers read it in order instead of across rows)."""
    r = op.result
    nb, nf, nr = ranks
    if FOLD_TRANSPOSES is False or not nf or not nr or lw.uses.get(r) != 1 \
            or lw.epilogue(r) is not None:
        return None
    users = lw.users(r)
    if len(users) != 1 or users[0].name != "stablehlo.transpose":
        return None
    perm = users[0].ints_attr("permutation")
    swap = [*range(nb), *range(nb + nf, nb + nf + nr), *range(nb, nb + nf)]
    return users[0] if perm == swap else None


def _transposed_output(lw: FuncLowering, op: Op, acc: str, ranks: tuple[int, int, int]
                       ) -> tuple[Strided, Op] | None:
    """When the result's only use is a ``transpose`` (attention's heads going back to
    [batch, seq, heads, dim]) and the gemm can write that layout directly: the strided
    view of the transpose's new buffer and the transpose (the gemm writes its result)."""
    r = op.result
    if FOLD_TRANSPOSES is False or types.elem(r) != acc or lw.uses.get(r) != 1 \
            or lw.epilogue(r) is not None:
        return None
    users = lw.users(r)
    if len(users) != 1 or users[0].name != "stablehlo.transpose":
        return None
    user = users[0]
    perm = user.ints_attr("permutation")
    packed = _packed(list(types.shape(user.result)))
    st = [0] * len(perm)
    for j, d in enumerate(perm):
        st[d] = packed[j]
    nb, nf, nr = ranks
    buf = lw.buffer_for(user.result)
    order = (list(range(nb)), list(range(nb, nb + nf)), list(range(nb + nf, nb + nf + nr)))
    found = _as_view(lw, buf, 0, list(types.shape(r)), st, order)
    if found is None or found[1]:  # the gemm writes C with its rows contiguous only
        return None
    return found[0], user


@dataclass(frozen=True)
class Tail:
    """Elementwise work of a gemm's work-group on its tile of C, after the gemm in the same
    kernel: element ``i`` of ``root`` into ``out[i]``, where ``source`` (the op's result:
    C converted to its type) is read at the same index."""

    source: Value
    root: Value
    out: int


def gemm_output(lw: FuncLowering, result: Value, acc: str) -> tuple[int, Tail | None]:
    """The buffer a gemm writes for ``result`` (accumulating in ``acc``) and its tail:
    the result's epilogue (:meth:`FuncLowering.epilogue`), or the conversion to a narrower
    result type, or none (C is the result's own buffer, bound to it; the tail's output is
    bound by :func:`gemm_kernel`)."""
    epilogue = lw.epilogue(result)
    root = epilogue.root if epilogue is not None else result
    if epilogue is None and types.elem(result) == acc:
        out = lw.buffer_for(result)
        lw.bind(result, out)
        return out, None
    out = lw.buffer_for(root)
    c = out if types.elem(root) == acc else lw.new_buffer(acc, types.shape(result))
    return c, Tail(result, root, out)


_ACCUMULATE = {"f16": "f32", "bf16": "f32"}
"""Element types whose products accumulate in a wider type (as XLA does)."""


def zero_fill(lw: FuncLowering, out: int, t: str, n: int) -> None:
    """Fill ``out`` with zeros."""
    with lw.kernel("zero") as (k, _):
        with k.elements(n) as i:
            k.store(k.const(0.0 if t[0] in "fc" else 0, t), out, t, n, i)
    lw.launch_last(num_groups(n))


TILE_M = 64
"""Columns of the memref view of lhs/out (rows of the row-major result) per work-group.
Each K chunk of a register block's rows of the rhs serves ``TILE_M / 8`` column blocks
before the next: 64 halves the rhs's reads from L2 against 32 (a dense layer at batch 64,
784 x 512 f32 weights on the Xeon VM: 304 -> 267 us a call, XLA 276; 512^3 alike)."""
STAGED_TILES = (128, 64)
"""Larger tiles where the gemm reads its first operand (rhs) transposed: CPUs stage it
through local memory a panel at a time, and each panel copy serves every column block of
the tile (q k^T of attention, 8 x 128 x 128 x 64: 0.17 -> 0.11 ms a call with 128)."""


def tile_rows(nb: int, m: int, staged: bool) -> int:
    """Result rows per work-group: :data:`TILE_M`, or with ``staged`` (a transposed rhs)
    the largest of :data:`STAGED_TILES` that leaves at least two work-groups."""
    if staged:
        for size in STAGED_TILES:
            if m > TILE_M and nb * -(-m // size) >= 2:
                return size
    return TILE_M


WIDE_TILE = 256
"""Rows and columns of a work-group's tile of a product whose rhs is large."""
WIDE_RHS_BYTES = 2 << 20
"""A rhs (K x N) larger than this is shared by tiles of :data:`WIDE_TILE` rows and
columns: in tiles of :data:`TILE_M` rows and all N columns, each of the many work-groups
reads the whole rhs from beyond the caches (f32 2048^3 on Zen 4: ~115 -> ~190 GFLOP/s
by hand-written kernels, the gemm walking K in chunks as ``emit/costmodel.panel_depth``
says)."""


MIN_GROUPS = 8
"""Work-groups a product of at least :data:`SPLIT_MACS` multiply-adds gets at least: where
its row tiles are fewer, its columns are split into strips.  A work-group runs on one
core (a GPU: one compute unit), and a dense layer at a small batch was one tile:
equinox's MLP (32 x 784 by 784 x 256, then 256 x 256) took 314 us of device time a call
on one of the test VM's two cores, 230 us in four strips.  Eight rather than four lets
the cores share the strips out when one of them is slowed (a shared VM): batch 64 by
784 x 512, hand-written kernels in one process, 274 us a call in 8 tiles of 64 x 64
against 349 in 4 of 64 x 128 (noisy: another run gave the 64 x 64 tiles 366-397)."""
SPLIT_MACS = 1 << 20
"""Multiply-adds from which a product is split (below, a launch of its own would cost
more than the product takes on one core, and one-work-group launches merge)."""
STRIP_MULTIPLE = 32
"""Strips are a multiple of this many columns wide (whole column register blocks)."""


def tile_shape(nb: int, sizes: tuple[int, int, int], dtype: str, staged: bool
               ) -> tuple[int, int]:
    """(result rows, result columns) of a work-group's tile of an M x K x N product:
    :func:`tile_rows` and all N (in strips where that leaves fewer than
    :data:`MIN_GROUPS` tiles of a large product), or :data:`WIDE_TILE` square tiles for a
    large rhs."""
    m, kk, n = sizes
    if staged or kk * n * types.elem_bytes(dtype) <= WIDE_RHS_BYTES:
        rows = tile_rows(nb, m, staged)
        tiles = nb * -(-m // rows)
        if tiles >= MIN_GROUPS or nb * m * kk * n < SPLIT_MACS:
            return rows, n
        strips = -(-MIN_GROUPS // tiles)
        width = -(-n // strips)
        return rows, min(n, -(-width // STRIP_MULTIPLE) * STRIP_MULTIPLE)
    return min(m, WIDE_TILE), min(n, WIDE_TILE)


def gemm_kernel(lw: FuncLowering, bufs: tuple[int | Strided, int | Strided, int | Strided],
                t: str,
                sizes: tuple[int, int, int, int], tail: Tail | None = None,
                trans: tuple[bool, bool] = (False, False)) -> None:
    """out[b] = lhs[b] @ rhs[b] for row-major lhs[B,M,K], rhs[B,K,N], out[B,M,N]: one
    work-group per (batch element, tile of :func:`tile_shape` result rows and columns),
    then the ``tail`` on that tile.  ``trans``: lhs is [B,K,M], rhs is [B,N,K] instead (the
    gemm reads it transposed).  An operand given as :class:`Strided` is read (the output:
    written) in place; a strided output takes no tail."""
    nb, m, kk, n = sizes
    a, b, c = bufs
    ta, tb = trans
    size, width = tile_shape(nb, (m, kk, n), t, tb)
    tiles, strips = -(-m // size), -(-n // width)
    with lw.kernel("dot" if tail is None else f"dot_{_short(tail.root)}") as (k, f):
        g = k.emit("group_id", "g")
        batch, tile = k.idiv(g, tiles * strips), k.irem(g, tiles)
        strip = k.irem(k.idiv(g, tiles), strips)
        shapes = [(kk, n) if tb else (n, kk), (m, kk) if ta else (kk, m), (n, m)]
        views, vtypes, lds = [], [], []
        for buf, (rows, cols) in zip((b, a, c), shapes, strict=True):
            if isinstance(buf, Strided):
                view, ld = _strided_view(lw, k, buf, t, batch), buf.ld
            else:
                ssa, flat = k.param(buf, t, nb * rows * cols)
                full = k.emit(f"expand {ssa}[0 -> {rows}x{cols}x{nb}] : {flat}", "v")
                view, ld = k.emit(f"subview {full}[:,:,{k.idx(batch)}] : "
                                  f"memref<{t}x{rows}x{cols}x{nb}>", "v"), rows
            views.append(view)
            lds.append(ld)
            vtypes.append(f"memref<{t}x{rows}x{cols},strided<1,{ld}>>")
        if tiles > 1:
            tiled = [(views[2], vtypes[2], n, lds[2])]
            if not ta:
                tiled.insert(0, (views[1], vtypes[1], kk, lds[1]))
            out = _tile_columns(k, [v[0] for v in tiled], [v[1] for v in tiled],
                                [(v[2], v[3]) for v in tiled], m, tile, size)
            views[3 - len(tiled):], vtypes[3 - len(tiled):] = out
            if ta:
                views[1], vtypes[1] = _tile_rows(k, views[1], (t, m, kk), tile, lds[1], size)
        if strips > 1:
            _strip(k, views, vtypes, (t, n, width, tb), strip)
        one, zero = (k.const(x if t[0] in "fc" else int(x), t) for x in (1.0, 0.0))
        k.line(f"gemm.{'t' if tb else 'n'}.{'t' if ta else 'n'} {one}, {views[0]}, "
               f"{views[1]}, {zero}, {views[2]} : {t}, {vtypes[0]}, {vtypes[1]}, {t}, "
               f"{vtypes[2]}")
        if tail is not None:
            assert not isinstance(c, Strided), "a strided output takes no tail"
            _run_tail(k, f, tail, (c, t), (m, n, nb), (batch, tile, strip), (size, width))
    lw.launch_last(nb * tiles * strips)
    if tail is not None:
        lw.bind(tail.root, tail.out)


def _strip(k: KernelBuilder, views: list[str], vtypes: list[str],
           shape: tuple[str, int, int, bool], strip: IndexExpr) -> None:
    """Result columns [strip * width, + width): those rows of the (n x m) output view and
    of the rhs view (n x kk, or kk x n when it is read transposed)."""
    t, n, width, tb = shape
    lo, size, size_text = _tile_size(k, n, strip, width)
    for i in (0, 2):
        dims = vtypes[i][len(f"memref<{t}x"):].split(",strided")[0].split("x")
        layout = vtypes[i][vtypes[i].index(",strided"):]
        if i == 0 and tb:
            views[i] = k.emit(f"subview {views[i]}[:,{lo}:{size}] : {vtypes[i]}", "v")
            vtypes[i] = f"memref<{t}x{dims[0]}x{size_text}{layout}"
        else:
            views[i] = k.emit(f"subview {views[i]}[{lo}:{size},:] : {vtypes[i]}", "v")
            vtypes[i] = f"memref<{t}x{size_text}x{dims[1]}{layout}"


def _run_tail(k: KernelBuilder, f: Fused, tail: Tail, c: tuple[int, str],
              sizes: tuple[int, int, int], at: tuple[IndexExpr, IndexExpr, IndexExpr],
              tile: tuple[int, int]) -> None:
    """The tail on the tile ``at`` = (batch element, row tile, column strip) of ``tile``
    rows and columns of the row-major [B, M, N] result: a foreach over its elements
    (contiguous when the tile has every column)."""
    (m, n, nb), (batch, row_tile, strip) = sizes, at
    rows, cols = tile
    if cols == n:
        lo = k.imul(k.iadd(k.imul(batch, m), k.imul(row_tile, rows)), n)
        hi = k.iadd(lo, rows * n)
        if m % rows:
            end = k.idx(k.imul(k.iadd(batch, 1), m * n))
            hi = k.select(k.cmp("lt", k.idx(hi), end, "index"), k.idx(hi), end, "index")
        i = k.fresh("i")
        with k.block(f"foreach {i} = {k.idx(lo)}, {k.idx(hi)} : index {{"):
            _tail_element(k, f, tail, c, nb * m * n, i)
        return
    (r_lo, r_hi), (c_lo, c_hi) = (_range(k, m, row_tile, rows), _range(k, n, strip, cols))
    r, col = k.fresh("i"), k.fresh("i")
    with k.block(f"foreach ({col}, {r}) = ({c_lo}, {r_lo}), ({c_hi}, {r_hi}) : index {{"):
        _tail_element(k, f, tail, c, nb * m * n, k.linear([batch, r, col], [nb, m, n]))


def _range(k: KernelBuilder, extent: int, tile: IndexExpr, size: int) -> tuple[str, str]:
    """[tile * size, min(+ size, extent)) as index texts."""
    lo = k.imul(tile, size)
    hi = k.iadd(lo, size)
    return k.idx(lo), k.idx(hi if extent % size == 0 else clamp(k, hi, extent))


def _tail_element(k: KernelBuilder, f: Fused, tail: Tail, c: tuple[int, str], total: int,
                  i: IndexExpr) -> None:
    """The tail's value at linear index ``i`` of the result, stored."""
    buf, acc = c
    t = types.elem(tail.source)
    f.bound[tail.source] = k.cast(k.load(buf, acc, total, i), acc, t)
    x = f.value(tail.root, k.delinearize(i, types.shape(tail.root)))
    k.store(x, tail.out, types.elem(tail.root), total, i)
    del f.bound[tail.source]


def _short(v: Value) -> str:
    return v.owner.name.split(".")[-1] if isinstance(v.owner, Op) else "tail"


def _tile_size(k: KernelBuilder, m: int, tile: IndexExpr, rows: int = TILE_M
               ) -> tuple[str, str, str]:
    """The first index, the size and the size's text in a type of tile ``tile`` (of
    ``rows``) of m."""
    lo = k.idx(k.imul(tile, rows))
    if m % rows == 0:
        return lo, str(rows), str(rows)
    left = k.arith("sub", k.idx(m), lo, "index")
    size = k.select(k.cmp("lt", left, k.idx(rows), "index"), left, k.idx(rows), "index")
    return lo, size, "?"


def _tile_rows(k: KernelBuilder, view: str, shape: tuple[str, int, int],
               tile: IndexExpr, ld: int, rows: int = TILE_M) -> tuple[str, str]:
    """Rows [tile * rows, + rows) of an (m x kk) view of leading dimension ``ld`` (a
    transposed lhs)."""
    t, m, kk = shape
    lo, size, size_text = _tile_size(k, m, tile, rows)
    vtype = f"memref<{t}x{m}x{kk},strided<1,{ld}>>"
    return (k.emit(f"subview {view}[{lo}:{size},:] : {vtype}", "v"),
            f"memref<{t}x{size_text}x{kk},strided<1,{ld}>>")


def _tile_columns(k: KernelBuilder, views: list[str], vtypes: list[str],
                  rows: list[tuple[int, int]], m: int, tile: IndexExpr, cols: int = TILE_M
                  ) -> tuple[list[str], list[str]]:
    """Columns [tile * cols, + cols) of the (rows x m) views of leading dimension ld
    (``rows``: (rows, ld) pairs; fewer columns in the last tile)."""
    lo, size, size_text = _tile_size(k, m, tile, cols)
    out_views, out_types = [], []
    for view, vtype, (r, ld) in zip(views, vtypes, rows, strict=True):
        out_views.append(k.emit(f"subview {view}[:,{lo}:{size}] : {vtype}", "v"))
        out_types.append(f"memref<{vtype[7:].split('x')[0]}x{r}x{size_text},strided<1,{ld}>>")
    return out_views, out_types


def _strided_view(lw: FuncLowering, k: KernelBuilder, op: Strided, t: str,
                  batch: IndexExpr) -> str:
    """Batch element ``batch`` of a strided operand: the buffer viewed as rows of ``ld``
    elements, the block at (offset mod ld, offset div ld) of that element's offset."""
    n, ld = lw.buffers[op.buffer].size, op.ld
    ssa, flat = k.param(op.buffer, t, n)
    full = k.emit(f"expand {ssa}[0 -> {ld}x{n // ld}] : {flat}", "v")
    col: IndexExpr = op.offset % ld
    row: IndexExpr = op.offset // ld
    for i, stride in zip(k.delinearize(batch, op.batch_shape), op.batch_strides,
                         strict=True):
        if stride % ld:
            col = k.iadd(col, k.imul(i, stride))
        else:
            row = k.iadd(row, k.imul(i, stride // ld))
    size0, size1 = op.sizes
    return k.emit(f"subview {full}[{k.idx(col)}:{size0},{k.idx(row)}:{size1}] : "
                  f"memref<{t}x{ld}x{n // ld}>", "v")
