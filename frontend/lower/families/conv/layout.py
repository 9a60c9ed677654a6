"""Channels-first convolutions rewritten channels-last, before lowering.

The one-kernel convolution paths (:mod:`frontend.lower.families.conv.gemm`, :mod:`conv_rows`) are
built for ``[b, 0, 1, ..., f]`` inputs and results: the gemm's ``[M, O]`` output is the
result itself, the epilogue (bias, ReLU) and a pooling ``reduce_window`` fuse into the
kernel, and padded input rows are contiguous runs of features.  Models written channels
first (equinox's ``Conv2d`` is NCHW/OIHW; under ``vmap`` its pooling transposes to
channels-last and back around every ``reduce_window``) took the scattered-store variant,
and the pooling read the NCHW result across its channels.

:func:`channels_last` rewrites, in a function body already inlined:

* every convolution that takes a gemm path (contraction of at least ``conv.DIRECT_K``,
  not a small depthwise window) whose input or result is not ``[b, 0.., f]`` into
  ``transpose(conv'(transpose(lhs)), back)`` with ``conv'`` channels-last on both sides
  (the weights keep their layout: they are packed per call anyway);
* a transpose of a transpose into one transpose of the source (none when the two cancel)
  when either is one of those introduced here;
* an elementwise op whose operands are all the same transpose of such a result, or
  broadcasts, into the op on the untransposed operands followed by the transpose: the
  transpose sinks below bias adds and activations until it meets its inverse;
* a reshape of a reshape, or of a ``broadcast_in_dim`` that only inserts unit dimensions,
  back to the source's own shape, into the source itself (``vmap`` over a per-sample
  model wraps every layer's input in such pairs);
* a ``reduce_window`` over such a unit-dimension broadcast, with one-element windows on
  the unit dimensions, into the ``reduce_window`` of the source, reshaped (so a pooling
  of the channels-last result is the rank-4 pooling the convolution's kernel can fuse).

Transposes, reshapes and broadcasts are index maps that fuse into their consumers, so
what is left costs nothing where the transposes cancel.  Ops left without uses are
removed.  The semantics are unchanged: each rewrite is an identity of StableHLO.
"""

from __future__ import annotations

import numpy as np

from frontend.ir.attrs import ConvDimsAttr, DenseArrayAttr, DenseElementsAttr, as_ints
from frontend.ir.core import Block, Op, Region, Value
from frontend.ir.types import TensorType
from frontend.lower.core import types
from frontend.lower.core.registry import rewrite
from frontend.lower.families.conv import convolution

ELEMENTWISE = frozenset(f"stablehlo.{n}" for n in (
    "add", "subtract", "multiply", "divide", "remainder", "maximum", "minimum", "power",
    "atan2", "and", "or", "xor", "negate", "abs", "exponential", "exponential_minus_one",
    "log", "log_plus_one", "logistic", "tanh", "sqrt", "rsqrt", "cbrt", "sine", "cosine",
    "tan", "floor", "ceil", "round_nearest_even", "round_nearest_afz", "sign", "not",
    "compare", "select", "convert", "clamp", "is_finite"))
"""Ops computed element by element from operands of the result's shape (checked too)."""

FLOATS = frozenset({"f16", "bf16", "f32", "f64"})

PURE = ELEMENTWISE | {f"stablehlo.{n}" for n in (
    "transpose", "reshape", "broadcast_in_dim", "constant", "iota")}
"""Ops that may be removed when nothing reads them (after a rewrite)."""

Perm = tuple[int, ...]


@rewrite(order=1)
def channels_last(region: Region) -> Region:
    """Rewrite ``region`` (a function body whose calls are inlined; changed in place) as
    the module docstring says; return it."""
    users: dict[Value, list[Op]] = {}
    _users(region, users)
    rw = _Rewriter(users)
    rw.region(region)
    if rw.changed:
        _drop_unused(region, rw.removable)
    return region


def wants_channels_last(op: Op) -> bool:
    """Whether convolution ``op`` takes a gemm path and is not channels-last on both
    sides (its input and result ``[b, 0, 1, ..., f]``)."""
    dn = op.attrs.get("dimension_numbers")
    if not isinstance(dn, ConvDimsAttr) or len(dn.lhs) < 3:
        return False
    if any(not isinstance(v.type, TensorType) or not v.type.is_static
           or types.elem(v) not in FLOATS for v in (*op.operands, op.result)):
        return False
    if _natural(dn.lhs) and _natural(dn.out):
        return False
    cs = convolution.conv_shape(op)
    if cs.groups > 1 and not cs.feature_groups:
        return False  # batch groups: rare (weight gradients), left as they are
    return not (cs.k < convolution.DIRECT_K or (cs.feature_groups and cs.in_features == 1
                                                and cs.k <= convolution.DEPTHWISE_K))


def _natural(labels: tuple[str, ...]) -> bool:
    return list(labels) == ["b", *(str(i) for i in range(len(labels) - 2)), "f"]


def _to_natural(labels: tuple[str, ...]) -> Perm:
    """The permutation taking a ``labels`` layout to ``[b, 0, 1, ..., f]``."""
    return (labels.index("b"), *(labels.index(str(i)) for i in range(len(labels) - 2)),
            labels.index("f"))


def _compose(inner: Perm, outer: Perm) -> Perm:
    """``transpose(transpose(x, inner), outer)`` = ``transpose(x, result)``."""
    return tuple(inner[p] for p in outer)


def _inverse(perm: Perm) -> Perm:
    inv = [0] * len(perm)
    for r, p in enumerate(perm):
        inv[p] = r
    return tuple(inv)


def _shape(v: Value) -> tuple[int, ...]:
    return tuple(types.shape(v))


def _new_op(name: str, operands: list[Value], shape: tuple[int, ...], like: Value,
            attrs: dict, regions: list[Region] | None = None) -> Op:
    """A detached op with one result of ``like``'s element type and ``shape``."""
    t = types.tensor_of(like.type, like.loc).with_shape(shape)
    op = Op(name, operands, [t], attrs, regions or [], like.loc)
    op.results = [Value(t, op, 0, f"{like.name}_cl", like.loc)]
    return op


class _Rewriter:
    """One forward walk: each op's operands substituted, then the op rewritten."""

    def __init__(self, users: dict[Value, list[Op]]) -> None:
        self.users = users
        """The ops reading each value of the region as it was."""
        self.subst: dict[Value, Value] = {}
        self.transposed: dict[Value, tuple[Value, Perm]] = {}
        """Values that are ``transpose(source, perm)``: every transpose seen or made."""
        self.ours: set[Value] = set()
        """The transposes introduced here (only they compose with others or sink)."""
        self.removable: set[Op] = set()
        """Pure ops that may be left unused (removed at the end when they are)."""
        self.changed = False

    def region(self, region: Region) -> None:
        """Rewrite every block of ``region``."""
        for block in region.blocks:
            self.block(block)

    def block(self, block: Block) -> None:
        """Rewrite ``block``'s ops in order."""
        out: list[Op] = []
        for op in block.ops:
            op.operands = [self.subst.get(v, v) for v in op.operands]
            for r in op.regions:
                self.region(r)
            out.extend(self.rewrite(op))
        block.ops[:] = out

    def rewrite(self, op: Op) -> list[Op]:
        """The ops that replace ``op`` (``[op]`` when it stays)."""
        name = op.name
        if name == "stablehlo.transpose":
            return self._transpose_op(op)
        if name == "stablehlo.reshape":
            return self._reshape(op)
        if name == "stablehlo.convolution" and wants_channels_last(op) and self._pays(op):
            return self._convolution(op)
        if name == "stablehlo.reduce_window":
            return self._reduce_window(op)
        if name in ELEMENTWISE:
            return self._elementwise(op)
        return [op]

    def _replace(self, op: Op, value: Value) -> None:
        """``op``'s (single) result is ``value`` from now on."""
        self.subst[op.result] = value
        self.removable.add(op)
        self.changed = True

    def transpose(self, x: Value, perm: Perm, new: list[Op]) -> Value:
        """``transpose(x, perm)``, composed with ``x``'s own transpose (appending the op
        made, if any, to ``new``)."""
        if x in self.transposed:
            x, inner = self.transposed[x]
            perm = _compose(inner, perm)
        if perm == tuple(range(len(perm))):
            return x
        shape = _shape(x)
        t = _new_op("stablehlo.transpose", [x], tuple(shape[p] for p in perm), x,
                    {"permutation": DenseArrayAttr("i64", perm)})
        new.append(t)
        self.removable.add(t)
        self.transposed[t.result] = (x, perm)
        self.ours.add(t.result)
        return t.result

    def _transpose_op(self, op: Op) -> list[Op]:
        x = op.operand("operand")
        perm = tuple(op.ints_attr("permutation"))
        if x not in self.ours:
            self.transposed[op.result] = (x, perm)
            return [op]
        new: list[Op] = []
        self._replace(op, self.transpose(x, perm, new))
        return new

    def _reshape(self, op: Op) -> list[Op]:
        """reshape(reshape(x)) or reshape(unit broadcast(x)) of x's shape: x."""
        x = op.operand("operand")
        src = _unit_source(x)
        if src is not None and _shape(src) == _shape(op.result):
            self._replace(op, src)
            return []
        return [op]

    def _pays(self, op: Op) -> bool:
        """Whether ``op``'s result is channels-last already or transposed back to
        channels-last by a consumer (through elementwise ops and unit reshapes): else
        the result would be computed channels-last and then transposed in memory, where
        the scattered store of :func:`conv_gemm.implicit_gemm` does it in one kernel."""
        dn = op.conv_dims
        assert isinstance(dn, ConvDimsAttr)
        if _natural(dn.out):
            return True
        shape, back = _shape(op.result), _to_natural(dn.out)
        seen: set[Value] = set()
        todo = [op.result]
        while todo:
            v = todo.pop()
            for user in self.users.get(v, []):
                if len(user.results) != 1 or user.result in seen:
                    continue
                r = user.result
                if user.name == "stablehlo.transpose" and _shape(v) == shape:
                    if tuple(user.ints_attr("permutation")) == back:
                        return True
                elif (user.name in ELEMENTWISE and _shape(r) == _shape(v)
                      or user.name == "stablehlo.reshape" or _unit_source(r) is v):
                    seen.add(r)
                    todo.append(r)
        return False

    def _convolution(self, op: Op) -> list[Op]:
        """transpose(conv'(transpose(lhs), rhs), back), conv' channels-last."""
        dn = op.conv_dims
        assert isinstance(dn, ConvDimsAttr)
        new: list[Op] = []
        lhs = self.transpose(op.operand("lhs"), _to_natural(dn.lhs), new)
        natural = ("b", *(str(i) for i in range(len(dn.lhs) - 2)), "f")
        attrs = dict(op.attrs)
        attrs["dimension_numbers"] = ConvDimsAttr(natural, dn.rhs, natural)
        to_out = _to_natural(dn.out)
        shape = _shape(op.result)
        conv = _new_op(op.name, [lhs, op.operand("rhs")], tuple(shape[p] for p in to_out),
                       op.result, attrs)
        conv.src_loc, conv.origin = op.src_loc, op.origin
        new.append(conv)
        self.ours.add(conv.result)  # (not transposed itself: marks the chain as ours)
        self._replace(op, self.transpose(conv.result, _inverse(to_out), new))
        return new

    def _elementwise(self, op: Op) -> list[Op]:
        """op(transpose(a, p), ...) = transpose(op(a, ...), p) when every operand is our
        transpose by ``p`` or a broadcast."""
        if len(op.results) != 1 or op.regions:
            return [op]
        shape = _shape(op.result)
        perm = next((self.transposed[v][1] for v in op.operands
                     if v in self.ours and v in self.transposed), None)
        if perm is None or any(_shape(v) != shape for v in op.operands):
            return [op]
        new: list[Op] = []
        operands = []
        for v in op.operands:
            if v in self.ours and v in self.transposed and self.transposed[v][1] == perm:
                operands.append(self.transposed[v][0])
            elif isinstance(v.owner, Op) and v.owner.name == "stablehlo.broadcast_in_dim":
                operands.append(_broadcast(v.owner, perm, new))
            else:
                return [op]
        inner = tuple(shape[p] for p in _inverse(perm))
        moved = _new_op(op.name, operands, inner, op.result, dict(op.attrs))
        moved.src_loc, moved.origin = op.src_loc, op.origin
        new.append(moved)
        self.removable.add(moved)
        self._replace(op, self.transpose(moved.result, perm, new))
        return new

    def _reduce_window(self, op: Op) -> list[Op]:
        """reduce_window(unit broadcast(x)) with one-element windows on the inserted
        dimensions = reshape(reduce_window(x))."""
        n = len(op.operands) // 2
        if n != 1 or len(op.results) != 1:
            return [op]
        x = op.operands[0]
        bcast = x.owner
        if not isinstance(bcast, Op) or bcast.name != "stablehlo.broadcast_in_dim":
            return [op]
        src = bcast.operand("operand")
        dims = bcast.ints_attr("broadcast_dimensions")
        rank = len(_shape(x))
        if not _inserts_units(_shape(src), _shape(x), dims):
            return [op]
        attrs = _window_attrs_on(op, rank, dims)
        if attrs is None:
            return [op]
        out = _shape(op.result)
        pooled = _new_op(op.name, [src, op.operands[1]], tuple(out[d] for d in dims),
                         op.result, attrs, op.regions)
        pooled.src_loc, pooled.origin = op.src_loc, op.origin
        op.regions = []
        back = _new_op("stablehlo.reshape", [pooled.result], out, op.result, {})
        self.removable.add(back)
        self._replace(op, back.result)
        return [pooled, back]


def _broadcast(op: Op, perm: Perm, new: list[Op]) -> Value:
    """The broadcast ``op`` (``result = transpose(?, perm)``) as a broadcast to the
    untransposed shape."""
    dims = op.ints_attr("broadcast_dimensions")
    shape = _shape(op.result)
    inv = _inverse(perm)
    b = _new_op(op.name, [op.operand("operand")], tuple(shape[p] for p in inv), op.result,
                {**op.attrs, "broadcast_dimensions":
                 DenseArrayAttr("i64", tuple(perm[d] for d in dims))})
    new.append(b)
    return b.result


def _inserts_units(src: tuple[int, ...], out: tuple[int, ...], dims: list[int]) -> bool:
    """Whether a broadcast of ``src`` along ``dims`` to ``out`` only inserts unit
    dimensions (its elements in the same order)."""
    return (len(dims) == len(src) and dims == sorted(dims)
            and all(out[d] == s for d, s in zip(dims, src, strict=True))
            and all(out[d] == 1 for d in range(len(out)) if d not in dims))


def _unit_source(x: Value) -> Value | None:
    """``y`` when ``x`` is a reshape of ``y`` or a broadcast of ``y`` that only inserts
    unit dimensions (both keep the row-major order), else None."""
    op = x.owner
    if not isinstance(op, Op) or not isinstance(x.type, TensorType) or not x.type.is_static:
        return None
    if op.name == "stablehlo.reshape":
        return op.operand("operand")
    if op.name == "stablehlo.broadcast_in_dim":
        src = op.operand("operand")
        dims = op.ints_attr("broadcast_dimensions")
        if _inserts_units(_shape(src), _shape(x), dims):
            return src
    return None


_WINDOW = ("window_dimensions", "window_strides", "base_dilations", "window_dilations")


def _window_attrs_on(op: Op, rank: int, dims: list[int]) -> dict | None:
    """``op``'s attributes restricted to dimensions ``dims`` when every other dimension
    has a one-element window, stride and dilations 1 and no padding; else None."""
    attrs = dict(op.attrs)
    for name in _WINDOW:
        a = op.attrs.get(name)
        if a is None:
            continue
        values = as_ints(a.py)
        if any(values[d] != 1 for d in range(rank) if d not in dims):
            return None
        attrs[name] = DenseArrayAttr("i64", tuple(values[d] for d in dims))
    old = op.attrs.get("padding")
    if old is not None:
        if not isinstance(old, DenseElementsAttr):
            return None
        pad = np.asarray(old.array, dtype=np.int64).reshape(rank, 2)
        if any(pad[d].any() for d in range(rank) if d not in dims):
            return None
        kept = np.ascontiguousarray(pad[dims])
        attrs["padding"] = DenseElementsAttr(old.type.with_shape(kept.shape), kept)
    return attrs


def _users(region: Region, users: dict[Value, list[Op]]) -> None:
    """Record the ops reading each value of ``region`` (nested regions too)."""
    for block in region.blocks:
        for op in block.ops:
            for v in op.operands:
                users.setdefault(v, []).append(op)
            for r in op.regions:
                _users(r, users)


def _drop_unused(region: Region, removable: set[Op]) -> None:
    """Remove the ops of ``removable`` and the pure ops (:data:`PURE`) whose results
    nothing reads (last first, so chains of them go)."""
    uses: dict[Value, int] = {}
    _count(region, uses)
    _sweep(region, removable, uses)


def _count(region: Region, uses: dict[Value, int]) -> None:
    for block in region.blocks:
        for op in block.ops:
            for v in op.operands:
                uses[v] = uses.get(v, 0) + 1
            for r in op.regions:
                _count(r, uses)


def _sweep(region: Region, removable: set[Op], uses: dict[Value, int]) -> None:
    for block in region.blocks:
        keep: list[Op] = []
        for op in reversed(block.ops):
            if ((op in removable or op.name in PURE)
                    and all(uses.get(r, 0) == 0 for r in op.results)):
                for v in op.operands:
                    uses[v] -= 1
                continue
            for r in op.regions:
                _sweep(r, removable, uses)
            keep.append(op)
        block.ops[:] = keep[::-1]
