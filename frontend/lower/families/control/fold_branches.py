"""Deciding ``if`` and ``case`` when compiling, where their predicate is a constant.

Libraries check their static arguments with ops jax cannot fold away: diffrax compares
``t0`` with ``t1`` and checks through equinox's ``error_if`` that the save times it built
with ``linspace`` are increasing and inside ``[t0, t1]``; once calls are inlined each
check is a ``case`` whose index is computed from literals alone.  Run on the device,
each costs launches for the predicate and a read-back that waits for the device (on PoCL
~40-100 us, more than the small kernels around it).

:func:`fold_constant_branches` evaluates, in program order, every value that only
depends on constants (ops of :data:`FOLDERS` over integers, booleans and f32/f64, at most
:data:`MAX_ELEMENTS` elements each) with numpy, and replaces an ``if`` or ``case`` whose
predicate or index it knows by the ops of the branch taken.  Only decisions are made
here: the values themselves are still computed as before, so the device's arithmetic is
unchanged.  The arithmetic folded is exact in IEEE terms (integer ops wrap as the
device's do; float add, subtract, multiply and divide round correctly, as on CPUs; float
sums, whose order matters, and float-to-integer conversions are not folded).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from frontend.ir.core import Block, Op, Region, Value
from frontend.ir.types import QuantizedType, TensorType
from frontend.lower.core import types
from frontend.lower.core.registry import rewrite

MAX_ELEMENTS = 4096
"""The largest value evaluated (larger ones are left to the device)."""
DTYPES = {"i1": np.bool_, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
          "u8": np.uint8, "u16": np.uint16, "u32": np.uint32, "u64": np.uint64,
          "f32": np.float32, "f64": np.float64}
"""The element types folded, as numpy dtypes."""

Folder = Callable[[Op, list[np.ndarray], np.dtype], np.ndarray | None]


@rewrite(order=0)  # first: later rewrites see the branches taken
def fold_constant_branches(region: Region) -> Region:
    """Replace every ``if``/``case`` of ``region`` (nested ones too) whose predicate or
    index is known when compiling by the ops of its branch taken (in place); return
    ``region``."""
    _Folding().block(region.block)
    return region


class _Folding:
    """Known values and the substitutions of folded branches' results."""

    def __init__(self) -> None:
        self.known: dict[Value, np.ndarray] = {}
        self.subst: dict[Value, Value] = {}

    def block(self, block: Block) -> None:
        """Fold the branches of ``block`` (and of the regions of its ops)."""
        out: list[Op] = []
        for op in block.ops:
            self.ops(op, out)
        block.ops[:] = out

    def ops(self, op: Op, out: list[Op]) -> None:
        """Append ``op`` to ``out``, or the ops of its branch taken when it is decided."""
        op.operands = [self.subst.get(v, v) for v in op.operands]
        taken = self.decided(op)
        if taken is None:
            for region in op.regions:
                self.block(region.block)
            out.append(op)
            self.evaluate(op)
            return
        branch = taken.block
        for inner in branch.ops[:-1]:
            self.ops(inner, out)
        returned = [self.subst.get(v, v) for v in branch.ops[-1].operands]
        for r, v in zip(op.results, returned, strict=True):
            self.subst[r] = v
            if v in self.known:
                self.known[r] = self.known[v]

    def decided(self, op: Op) -> Region | None:
        """The region an ``if``/``case`` runs when its predicate is known, else None."""
        if op.name not in ("stablehlo.if", "stablehlo.case") or not op.operands:
            return None
        value = self.known.get(op.operands[0])
        if value is None or value.size != 1:
            return None
        x = value.reshape(-1)[0]
        if op.name == "stablehlo.if":
            return op.regions[0] if bool(x) else op.regions[1]
        i = int(x)
        return op.regions[i] if 0 <= i < len(op.regions) else op.regions[-1]

    def evaluate(self, op: Op) -> None:
        """Note the value of ``op``'s result when it folds."""
        fold = FOLDERS.get(op.name)
        if fold is None or len(op.results) != 1 or op.regions and op.name != "stablehlo.reduce":
            return
        dtype = _dtype(op.results[0])
        if dtype is None:
            return
        args = [self.known.get(v) for v in op.operands]
        if any(a is None for a in args):
            return
        try:
            with np.errstate(all="ignore"):
                value = fold(op, [a for a in args if a is not None], dtype)
        except (ValueError, TypeError, IndexError, ZeroDivisionError, OverflowError):
            return
        if value is not None and value.shape == types.shape(op.results[0]):
            self.known[op.results[0]] = value.astype(dtype, copy=False)


def _dtype(v: Value) -> np.dtype | None:
    """The numpy dtype of a small value of a folded element type, else None."""
    t = v.type
    if not isinstance(t, TensorType) or types.size(v) > MAX_ELEMENTS:
        return None
    if isinstance(t.element, QuantizedType) or types.narrow_bits(v) is not None:
        return None
    name = types.scalar_name(t.element)
    return np.dtype(DTYPES[name]) if name in DTYPES else None


# -- the folders ---------------------------------------------------------------------------

def _constant(op: Op, args: list[np.ndarray], dtype: np.dtype) -> np.ndarray | None:
    array = np.asarray(op.dense_attr("value"))
    if array.dtype.kind == "c" or array.dtype.kind == "f" and dtype.kind != "f":
        return None
    return np.broadcast_to(array, types.shape(op.results[0])).astype(dtype)


def _convert(op: Op, args: list[np.ndarray], dtype: np.dtype) -> np.ndarray | None:
    (x,) = args
    if dtype.kind == "b":
        return x != 0
    if x.dtype.kind == "f" and dtype.kind in "iu":
        return None  # float -> int: the device's rounding and saturation, not folded
    return x.astype(dtype)


_COMPARE = {"EQ": np.equal, "NE": np.not_equal, "LT": np.less, "LE": np.less_equal,
            "GT": np.greater, "GE": np.greater_equal}


def _compare(op: Op, args: list[np.ndarray], dtype: np.dtype) -> np.ndarray | None:
    a, b = args
    kind = str(op.attr("compare_type", "") or "")
    if kind == "TOTALORDER":
        return None
    if kind in ("SIGNED", "UNSIGNED") and a.dtype.kind in "iu":
        target = a.dtype.str.replace("u", "i") if kind == "SIGNED" else \
            a.dtype.str.replace("i", "u")
        a, b = a.view(target), b.view(target)
    return _COMPARE[str(op.attr("comparison_direction"))](a, b)


def _binary(fn: Callable[[np.ndarray, np.ndarray], np.ndarray], ints_only: bool = False
            ) -> Folder:
    def fold(op: Op, args: list[np.ndarray], dtype: np.dtype) -> np.ndarray | None:
        a, b = args
        if ints_only and a.dtype.kind == "f":
            return None
        return fn(a, b)
    return fold


def _divide(op: Op, args: list[np.ndarray], dtype: np.dtype) -> np.ndarray | None:
    a, b = args
    if a.dtype.kind == "f":
        return a / b
    if not b.all() or a.dtype.kind == "i" and (a == np.iinfo(a.dtype).min).any():
        return None  # the device's quotient of these is its own
    q = np.abs(a) // np.abs(b)  # StableHLO divides integers toward zero
    return np.where((a < 0) != (b < 0), -q, q) if a.dtype.kind == "i" else a // b


def _unary(fn: Callable[[np.ndarray], np.ndarray]) -> Folder:
    return lambda op, args, dtype: fn(args[0])


def _not(op: Op, args: list[np.ndarray], dtype: np.dtype) -> np.ndarray:
    (x,) = args
    return ~x if x.dtype.kind != "b" else np.logical_not(x)


def _select(op: Op, args: list[np.ndarray], dtype: np.dtype) -> np.ndarray:
    pred, a, b = args
    return np.where(pred, a, b)


def _broadcast_in_dim(op: Op, args: list[np.ndarray], dtype: np.dtype) -> np.ndarray:
    (x,) = args
    out = types.shape(op.results[0])
    dims = op.ints_attr("broadcast_dimensions")
    shape = [1] * len(out)
    for d, n in zip(dims, x.shape, strict=True):
        shape[d] = n
    return np.broadcast_to(x.reshape(shape), out)


def _reshape(op: Op, args: list[np.ndarray], dtype: np.dtype) -> np.ndarray:
    return args[0].reshape(types.shape(op.results[0]))


def _transpose(op: Op, args: list[np.ndarray], dtype: np.dtype) -> np.ndarray:
    return np.transpose(args[0], op.ints_attr("permutation"))


def _slice(op: Op, args: list[np.ndarray], dtype: np.dtype) -> np.ndarray:
    starts, limits = op.ints_attr("start_indices"), op.ints_attr("limit_indices")
    strides = op.ints_attr("strides", [1] * len(starts))
    return args[0][tuple(slice(a, b, s) for a, b, s in zip(starts, limits, strides,
                                                             strict=True))]


def _concatenate(op: Op, args: list[np.ndarray], dtype: np.dtype) -> np.ndarray:
    return np.concatenate(args, axis=op.int_attr("dimension"))


def _iota(op: Op, args: list[np.ndarray], dtype: np.dtype) -> np.ndarray:
    shape = types.shape(op.results[0])
    d = op.int_attr("iota_dimension")
    ramp = np.arange(shape[d]).reshape([-1 if i == d else 1 for i in range(len(shape))])
    return np.broadcast_to(ramp, shape).astype(dtype)


_REDUCERS = {"stablehlo.or": np.logical_or, "stablehlo.and": np.logical_and,
             "stablehlo.maximum": np.maximum, "stablehlo.minimum": np.minimum,
             "stablehlo.add": np.add, "stablehlo.multiply": np.multiply}


def _reduce(op: Op, args: list[np.ndarray], dtype: np.dtype) -> np.ndarray | None:
    """A one-operand reduce whose body is one exact combiner: and/or, max/min, or an
    integer sum or product (a float sum depends on its order)."""
    if len(args) != 2:
        return None
    x, init = args
    body = op.regions[0].block
    combine = body.ops[0] if len(body.ops) == 2 else None
    if combine is None or combine.name not in _REDUCERS \
            or list(combine.operands) not in (body.args, body.args[::-1]) \
            or body.ops[-1].operands != [combine.results[0]]:
        return None
    fn = _REDUCERS[combine.name]
    if x.dtype.kind == "f" and fn in (np.add, np.multiply):
        return None
    if x.dtype.kind == "b" and fn in (np.maximum, np.add):
        fn = np.logical_or
    elif x.dtype.kind == "b" and fn in (np.minimum, np.multiply):
        fn = np.logical_and
    axes = tuple(op.ints_attr("dimensions"))
    reduced = fn.reduce(x, axis=axes) if axes else x
    return fn(np.asarray(reduced, x.dtype), init).astype(x.dtype)


FOLDERS: dict[str, Folder] = {
    "stablehlo.constant": _constant,
    "stablehlo.convert": _convert,
    "stablehlo.compare": _compare,
    "stablehlo.add": _binary(np.add),
    "stablehlo.subtract": _binary(np.subtract),
    "stablehlo.multiply": _binary(np.multiply),
    "stablehlo.divide": _divide,
    "stablehlo.maximum": _binary(np.maximum),
    "stablehlo.minimum": _binary(np.minimum),
    "stablehlo.and": _binary(np.bitwise_and),
    "stablehlo.or": _binary(np.bitwise_or),
    "stablehlo.xor": _binary(np.bitwise_xor),
    "stablehlo.not": _not,
    "stablehlo.negate": _unary(np.negative),
    "stablehlo.abs": _unary(np.abs),
    "stablehlo.select": _select,
    "stablehlo.broadcast_in_dim": _broadcast_in_dim,
    "stablehlo.reshape": _reshape,
    "stablehlo.transpose": _transpose,
    "stablehlo.slice": _slice,
    "stablehlo.concatenate": _concatenate,
    "stablehlo.iota": _iota,
    "stablehlo.reduce": _reduce,
}
"""The ops evaluated, by name: each gets the op, its operands' values and its result's
numpy dtype, and returns the result's value (None: not folded)."""
