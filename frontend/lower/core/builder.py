"""A small builder of tensor-language kernel text.

Lowerings write scalar code through it: ``k.arith("add", a, b, "f32")`` returns the SSA
name of the result.  Index arithmetic folds constants (an :data:`IndexExpr` is an ``int``
or the name of an ``index`` value).  Buffers become flat ``memref<T x N>`` parameters on
first use.  Values are memoized per scope so a fused expression is computed once.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import cast

from frontend.ir.attrs import as_complex, as_float, as_int
from frontend.lower.core import types

IndexExpr = int | str
CHUNK = 1024
"""Elements per work-group in elementwise kernels."""


def memref(dtype: str, n: int, local: bool = False) -> str:
    """The flat memref type of a buffer of ``n`` elements (at least 1), in local memory
    when ``local``."""
    return f"memref<{dtype}x{max(n, 1)}{',local' if local else ''}>"


_REFLEXIVE = ("eq", "le", "ge")
"""The ``cmp`` conditions every value satisfies with itself (but a float NaN)."""
LOCAL_SCRATCH_BYTES = 16384
"""The most local memory a kernel's private buffers take (:attr:`KernelBuilder.
private_from`); the rest stay buffer parameters.  Half the 32 KiB an OpenCL device has at
least, leaving room for a gemm's staged tiles."""


def literal(value: object, dtype: str) -> str:
    """A constant's literal text for scalar type ``dtype``."""
    if dtype == "i1":
        return "true" if bool(value) else "false"
    if dtype.startswith("c"):
        c = as_complex(value)
        return f"[{_float(c.real)}, {_float(c.imag)}]"
    if types.is_float(dtype):
        return _float(as_float(value))
    return str(as_int(value))


def _float(x: float) -> str:
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    text = repr(x)
    return text if any(c in text for c in ".en") else text + ".0"


@dataclass
class Loop:
    """A ``for`` being built: its variable, carried values, and (after it) its results."""

    var: str
    carried: list[str]
    types: list[str]
    yields: list[str] = field(default_factory=list)
    results: list[str] = field(default_factory=list)


class KernelBuilder:
    """Builds one kernel function's text."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.params: dict[int, tuple[str, str]] = {}  # buffer id -> (ssa, memref type)
        self.lines: list[str] = []
        self._indent = 1
        self._count = 0
        self._memo: list[dict[object, str | tuple[IndexExpr, ...]]] = [{}]
        self.attributes = ""
        """Function attributes written after the parameters, e.g. ``work_group_size(64,1)``."""
        self.locals: dict[int, tuple[str, str]] = {}  # buffer id -> (ssa, local memref type)
        self.private_from: int | None = None
        """Buffers from this id on are the kernel's own (written before read in every run,
        used by no other launch): they become local memory while
        :data:`LOCAL_SCRATCH_BYTES` allows, which spares their launches an argument each."""
        self._local_bytes = 0

    # -- text --------------------------------------------------------------------------------

    def fresh(self, hint: str = "t") -> str:
        """A new SSA name."""
        self._count += 1
        return f"%{hint}{self._count}"

    def line(self, text: str) -> None:
        """Append one line at the current indentation."""
        self.lines.append("  " * self._indent + text)

    def emit(self, rhs: str, hint: str = "t") -> str:
        """Append ``%new = rhs`` and return ``%new``."""
        name = self.fresh(hint)
        self.line(f"{name} = {rhs}")
        return name

    def text(self) -> str:
        """The finished kernel."""
        params = ", ".join(f"{ssa}: {t}" for ssa, t in self.params.values())
        attrs = f" {self.attributes}" if self.attributes else ""
        allocas = [f"  {ssa} = alloca -> {t}" for ssa, t in self.locals.values()]
        return f"func @{self.name}({params}){attrs} {{\n" + "\n".join(allocas + self.lines) \
            + "\n}\n"

    # -- memo scopes ---------------------------------------------------------------------------

    def lookup(self, key: object) -> str | None:
        """A value computed before in a visible scope."""
        found = self._find(key)
        assert not isinstance(found, tuple), key
        return found

    def lookup_index(self, key: object) -> tuple[IndexExpr, ...] | None:
        """A multi-index computed before in a visible scope."""
        found = self._find(key)
        assert not isinstance(found, str), key
        return found

    def _find(self, key: object) -> str | tuple[IndexExpr, ...] | None:
        for scope in reversed(self._memo):
            if key in scope:
                return scope[key]
        return None

    def remember(self, key: object, ssa: str) -> str:
        """Record ``ssa`` as the value of ``key`` in the innermost scope."""
        self._memo[-1][key] = ssa
        return ssa

    def remember_index(self, key: object, idx: tuple[IndexExpr, ...]) -> None:
        """Record the multi-index ``idx`` as the value of ``key`` in the innermost scope."""
        self._memo[-1][key] = idx

    @contextmanager
    def scope(self) -> Iterator[None]:
        """A memo scope without a region: values made inside are not reused outside."""
        self._memo.append({})
        try:
            yield
        finally:
            self._memo.pop()

    @contextmanager
    def block(self, header: str, footer: str = "}") -> Iterator[None]:
        """An indented region opened by ``header``; values made inside stay inside."""
        self.line(header)
        self._indent += 1
        self._memo.append({})
        try:
            yield
        finally:
            self._memo.pop()
            self._indent -= 1
            self.line(footer)

    # -- scalars -------------------------------------------------------------------------------

    def const(self, value: object, dtype: str) -> str:
        """A constant (emitted once per scope)."""
        if dtype in ("i64", "u64", "index") and not isinstance(value, bool):
            wide = self._wide(as_int(value), dtype)
            if wide is not None:
                return wide
        text = literal(value, dtype)
        key = ("const", text, dtype)
        return self.lookup(key) or self.remember(key, self.emit(f"constant {text} -> {dtype}",
                                                                "c"))

    def _wide(self, value: int, dtype: str) -> str | None:
        """64-bit constants beyond the literal range (-2^63, >= 2^63) built from two."""
        if value == -2**63:
            low = self.const(-2**63 + 1, dtype)
            return self.arith("sub", low, self.const(1, dtype), dtype)
        if value >= 2**63:
            return self.bitcast(self.const(value - 2**64, "i64"), "i64", dtype)
        return None

    def arith(self, op: str, a: str, b: str | None, dtype: str) -> str:
        """``arith.op`` on one or two scalars."""
        args = a if b is None else f"{a}, {b}"
        return self.emit(f"arith.{op} {args} : {dtype}")

    def cmp(self, cond: str, a: str, b: str, dtype: str) -> str:
        """``cmp.cond``: an i1.  An integer compared with itself is a constant (the C
        compiler warns of such a self-comparison; a float's is the NaN test)."""
        if a == b and not (types.is_float(dtype) or dtype in types.COMPLEX_PARTS):
            return self.const(cond in _REFLEXIVE, "i1")
        return self.emit(f"cmp.{cond} {a}, {b} : {dtype}")

    def cast(self, a: str, src: str, dst: str) -> str:
        """``cast`` between scalar types (the value itself when they are equal)."""
        return a if src == dst else self.emit(f"cast {a} : {src} -> {dst}")

    def select(self, cond: str, a: str, b: str, dtype: str) -> str:
        """``cond ? a : b`` (both evaluated)."""
        return a if a == b else self.emit(f"select {cond}, {a}, {b} : {dtype}", "s")

    def math(self, fn: str, a: str, b: str | None, dtype: str) -> str:
        """``math.fn`` of one or two scalars of type ``dtype``."""
        args = a if b is None else f"{a}, {b}"
        return self.emit(f"math.{fn} {args} : {dtype}")

    def bitcast(self, a: str, src: str, dst: str) -> str:
        """Reinterpret the bits of ``a``."""
        return a if src == dst else self.emit(f"bitcast {a} : {src} -> {dst}")

    def branch(self, cond: str, dtype: str, then: Callable[[], str],
               otherwise: Callable[[], str]) -> str:
        """``cond ? then() : otherwise()`` evaluating only the taken side (guarded loads)."""
        name = self.fresh("s")
        self.line(f"{name} = if {cond} -> ({dtype}) {{")
        for body, end in ((then, "} else {"), (otherwise, "}")):
            self._indent += 1
            self._memo.append({})
            value = body()
            self.line(f"yield {value} : {dtype}")
            self._memo.pop()
            self._indent -= 1
            self.line(end)
        return name

    # -- index arithmetic ----------------------------------------------------------------------

    def idx(self, e: IndexExpr) -> str:
        """``e`` as an index SSA value."""
        return self.const(e, "index") if isinstance(e, int) else e

    def iadd(self, a: IndexExpr, b: IndexExpr) -> IndexExpr:
        """a + b on indices, folded."""
        if isinstance(a, int) and isinstance(b, int):
            return a + b
        if b == 0:
            return a
        if a == 0:
            return b
        return self._index_op("add", a, b)

    def isub(self, a: IndexExpr, b: IndexExpr) -> IndexExpr:
        """a - b on indices, folded."""
        if isinstance(a, int) and isinstance(b, int):
            return a - b
        if b == 0:
            return a
        return self._index_op("sub", a, b)

    def imul(self, a: IndexExpr, b: IndexExpr) -> IndexExpr:
        """a * b on indices, folded."""
        if isinstance(a, int) and isinstance(b, int):
            return a * b
        if a == 0 or b == 0:
            return 0
        if b == 1:
            return a
        if a == 1:
            return b
        return self._index_op("mul", a, b)

    def idiv(self, a: IndexExpr, b: int) -> IndexExpr:
        """a / b for non-negative a, folded."""
        if isinstance(a, int):
            return a // b
        return a if b == 1 else self._index_op("div", a, b)

    def irem(self, a: IndexExpr, b: int) -> IndexExpr:
        """a % b for non-negative a, folded."""
        if isinstance(a, int):
            return a % b
        return 0 if b == 1 else self._index_op("rem", a, b)

    def _index_op(self, op: str, a: IndexExpr, b: IndexExpr) -> str:
        """``arith.op`` on two indices, emitted once per scope (the indices of neighbouring
        elements share their row's arithmetic)."""
        key = ("index", op, a, b)
        return self.lookup(key) or self.remember(key, self.arith(op, self.idx(a), self.idx(b),
                                                                 "index"))

    def iclamp(self, x: str, lo: int, hi: int) -> str:
        """``x`` (an index SSA value) clamped to ``[lo, hi]``."""
        x = self.select(self.cmp("lt", x, self.idx(lo), "index"), self.idx(lo), x, "index")
        return self.select(self.cmp("gt", x, self.idx(hi), "index"), self.idx(hi), x, "index")

    def to_index(self, x: str, dtype: str) -> str:
        """An integer scalar of type ``dtype`` as an index."""
        if dtype == "u64":
            x, dtype = self.bitcast(x, "u64", "i64"), "i64"
        return self.cast(x, dtype, "index")

    def linear(self, idx: Sequence[IndexExpr], shape: Sequence[int]) -> IndexExpr:
        """The row-major linear index of ``idx`` in ``shape``."""
        # the longest prefix linearized before (a delinearized index with modes added:
        # an element's row, then its column) is extended, not recomputed
        start, out = 0, cast(IndexExpr, 0)
        for p in range(len(idx), 0, -1):
            known = self.lookup(("lin", tuple(idx[:p]), tuple(shape[:p])))
            if known is not None:
                start, out = p, known
                break
        if start == len(idx):
            return out
        for p in range(start, len(idx)):
            out = self.iadd(self.imul(out, shape[p]), idx[p])
            if isinstance(out, str) and p + 1 < len(idx):
                self.remember(("lin", tuple(idx[:p + 1]), tuple(shape[:p + 1])), out)
        if isinstance(out, str):  # delinearize(linear(idx)) is idx: no division
            self.remember(("lin", tuple(idx), tuple(shape)), out)
            if all(i == 0 for i, n in zip(idx, shape, strict=True) if n == 1):
                kept = tuple(i for i, n in zip(idx, shape, strict=True) if n != 1)
                self.remember_index(("delin", out, _without_units(shape)), kept)
        return out

    def delinearize(self, i: IndexExpr, shape: Sequence[int]) -> list[IndexExpr]:
        """The row-major multi-index of linear index ``i`` in ``shape``."""
        # keyed without unit modes: a reshape that adds or drops them (a slice of one
        # step of a sequence) finds the index it was linearized from, with no division
        known = self.lookup_index(("delin", i, _without_units(shape)))
        if known is not None:
            kept = iter(known)
            return [0 if n == 1 else next(kept) for n in shape]
        idx: list[IndexExpr] = []
        rest = i
        for k, n in reversed(list(enumerate(shape))):
            idx.append(0 if n == 1 else (rest if k == 0 else self.irem(rest, n)))
            rest = self.idiv(rest, n) if k else rest
        if isinstance(i, str):
            self.remember(("lin", tuple(idx[::-1]), tuple(shape)), i)
            self.remember_index(("delin", i, _without_units(shape)),
                                tuple(e for e, n in zip(idx[::-1], shape, strict=True) if n != 1))
        return idx[::-1]

    # -- memory and loops ----------------------------------------------------------------------

    def param(self, buffer: int, dtype: str, n: int) -> tuple[str, str]:
        """The parameter for ``buffer`` (added on first use), or its local memory when it
        is the kernel's own (:attr:`private_from`): its SSA name and type."""
        if buffer in self.locals:
            return self.locals[buffer]
        if buffer not in self.params:
            nbytes = types.elem_bytes(dtype) * max(n, 1)
            if self.private_from is not None and buffer >= self.private_from \
                    and self._local_bytes + nbytes <= LOCAL_SCRATCH_BYTES:
                self._local_bytes += nbytes
                self.locals[buffer] = (f"%b{buffer}", memref(dtype, n, local=True))
                return self.locals[buffer]
            self.params[buffer] = (f"%b{buffer}", memref(dtype, n))
        return self.params[buffer]

    def load(self, buffer: int, dtype: str, n: int, i: IndexExpr) -> str:
        """Element ``i`` of flat ``buffer``."""
        ssa, t = self.param(buffer, dtype, n)
        key = ("load", buffer, i)
        return self.lookup(key) or self.remember(
            key, self.emit(f"load {ssa}[{self.idx(i)}] : {t}", "x"))

    def store(self, value: str, buffer: int, dtype: str, n: int, i: IndexExpr) -> None:
        """Store ``value`` at element ``i`` of flat ``buffer``."""
        ssa, t = self.param(buffer, dtype, n)
        self.line(f"store {value}, {ssa}[{self.idx(i)}] : {t}")

    @contextmanager
    def elements(self, n: int) -> Iterator[str]:
        """A foreach over this work-group's chunk of ``n`` elements; yields the index."""
        g = self.emit("group_id", "g")
        lo = self.imul(g, CHUNK)
        end = self.iadd(lo, CHUNK)
        total = self.const(n, "index")
        hi = self.select(self.cmp("lt", self.idx(end), total, "index"), self.idx(end), total,
                         "index")
        i = self.fresh("i")
        with self.block(f"foreach {i} = {self.idx(lo)}, {hi} : index {{"):
            yield i

    @contextmanager
    def elements_nd(self, shape: Sequence[int]) -> Iterator[list[IndexExpr]]:
        """A ``foreach_nd`` over this work-group's block of the row-major index space
        ``shape`` (:func:`split_nd`); yields the multi-index, so consumers index by mode
        without dividing, and a mode-invariant operand (a broadcast row) is invariant in
        the innermost loop.  Launch with :func:`groups_nd` groups."""
        if not shape:
            with self.elements(1):
                yield []
            return
        mode, block = split_nd(shape)
        blocks = -(-shape[mode] // block)
        # modulo the launch's groups: every index is bounded (32-bit index arithmetic in
        # the back end), and a group launched beyond them repeats a block, never beyond it
        g = self.irem(self.emit("group_id", "g"), groups_nd(shape))
        *idx, b = self.delinearize(g, [*shape[:mode], blocks])
        lo = self.imul(b, block)
        hi = self.iadd(lo, block)
        if shape[mode] % block:
            hi = self.select(self.cmp("lt", self.idx(hi), self.idx(shape[mode]), "index"),
                             self.idx(hi), self.idx(shape[mode]), "index")
        box = [(lo, hi), *((0, n) for n in shape[mode + 1:])]
        extents = [block, *shape[mode + 1:]]
        looped = [d for d, n in enumerate(extents) if n != 1] or [0]
        names = {d: self.fresh("i") for d in looped}
        idx += [names.get(d, a) for d, (a, _) in enumerate(box)]
        inner = looped[::-1]  # the first foreach_nd mode is the fastest: the last index
        los = ", ".join(self.idx(box[d][0]) for d in inner)
        his = ", ".join(self.idx(box[d][1]) for d in inner)
        head = f"foreach ({', '.join(names[d] for d in inner)}) = ({los}), ({his}) : index {{"
        if len(inner) == 1:
            head = f"foreach {names[inner[0]]} = {los}, {his} : index {{"
        with self.block(head):
            yield idx

    @contextmanager
    def loop(self, lo: IndexExpr, hi: IndexExpr, inits: Sequence[str],
             types: Sequence[str], step: IndexExpr | None = None) -> Iterator[Loop]:
        """A sequential ``for`` with carried values; set ``yields``, read ``results`` after."""
        loop = Loop(self.fresh("k"), [self.fresh("acc") for _ in inits], list(types))
        loop.results = [self.fresh("r") for _ in inits]
        init = ", ".join(f"{c} = {v}" for c, v in zip(loop.carried, inits, strict=True))
        by = "" if step is None else f", {self.idx(step)}"
        head = f"for {loop.var} = {self.idx(lo)}, {self.idx(hi)}{by} : index"
        if inits:
            head = f"{', '.join(loop.results)} = {head} init({init}) -> ({', '.join(types)})"
        self.line(head + " {")
        self._indent += 1
        self._memo.append({})
        try:
            yield loop
            if inits:
                self.line(f"yield {', '.join(loop.yields)} : {', '.join(types)}")
        finally:
            self._memo.pop()
            self._indent -= 1
            self.line("}")


def num_groups(n: int) -> int:
    """Work-groups for an elementwise kernel over ``n`` elements."""
    return (n + CHUNK - 1) // CHUNK


def split_nd(shape: Sequence[int]) -> tuple[int, int]:
    """How :meth:`KernelBuilder.elements_nd` deals a row-major ``shape`` to work-groups:
    ``(mode, block)``: a work-group takes one index of each mode before ``mode``,
    ``block`` indices of ``mode`` and all of the modes after it (about ``CHUNK``
    elements)."""
    inner = 1
    for mode in reversed(range(len(shape))):
        if inner * shape[mode] > CHUNK:
            return mode, max(1, CHUNK // inner)
        inner *= shape[mode]
    return 0, max(shape[0], 1)


def groups_nd(shape: Sequence[int]) -> int:
    """Work-groups for :meth:`KernelBuilder.elements_nd` over ``shape``."""
    if not shape:
        return 1
    mode, block = split_nd(shape)
    return math.prod(shape[:mode]) * -(-shape[mode] // block)


def _without_units(shape: Sequence[int]) -> tuple[int, ...]:
    """``shape`` without its modes of extent 1 (their index is always 0)."""
    return tuple(n for n in shape if n != 1)
