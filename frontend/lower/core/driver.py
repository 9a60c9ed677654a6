"""Lowering a StableHLO function to tensor-language kernels plus a host plan.

Calls are inlined first (:mod:`frontend.lower.core.inline`: a copy of the callee per call
site), so the function is one body.  :class:`FuncLowering` walks its ops in order.  Ops
with a kernel lowering run it (it emits kernels and plan steps); elemental ops are left
lazy and fuse into whichever kernel needs their elements, unless they are shared (used
more than once and not cheap), in which case they are materialized into a buffer right
away.  Function results are materialized at the return.

Tokens (``!stablehlo.token``) carry no data: every token value is one empty buffer
(:meth:`FuncLowering.token`) that no step reads or writes, so loops and branches that pass
tokens along copy nothing.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from frontend.ir.core import Block, Func, Module, Op, Region, Value
from frontend.ir.types import TokenType
from frontend.lower.core import quant, types
from frontend.lower.core.builder import KernelBuilder, groups_nd
from frontend.lower.core.concat_slices import compute_by_slices
from frontend.lower.core.dedup import DistinctKernels
from frontend.lower.core.fused import (
    Epilogue,
    Fused,
    materialize_results,
    plan_epilogue,
    recompute_instead,
)
from frontend.lower.core.inline import inline_calls
from frontend.lower.core.loop_invariants import hoist_loop_invariants
from frontend.lower.core.registry import CHEAP, ELEMENTAL, KERNEL, rewrites
from tensorlang.diagnostics import CompileError
from tensorlang.plan import Buffer, Launch, Plan, Step, kernels_renamed, with_frees


class Readers:
    """The ops of a block after a kernel op that read the values watched (:meth:`watch`),
    in block order, each once: what an epilogue planner scans.  Only those are visited,
    so planning every kernel op of a block is not quadratic in its length (a scan of every
    op after each one was)."""

    def __init__(self, lw: FuncLowering, op: Op, v: Value) -> None:
        self._lw = lw
        self._block, self._last = lw.position(op)
        self._heap: list[int] = []
        self.watch(v)

    def watch(self, v: Value) -> None:
        """Include the ops of the block after the last one yielded that read ``v``."""
        for user in self._lw.users(v):
            block, at = self._lw.position(user)
            if block is self._block and at > self._last:
                heapq.heappush(self._heap, at)

    def __iter__(self) -> Iterator[Op]:
        while self._heap:
            at = heapq.heappop(self._heap)
            if at > self._last:
                self._last = at
                yield self._block.ops[at]


Planner = Callable[[Value, Callable[[Value], Readers], dict[Value, int], set[Value]],
                   Epilogue | None]
"""Finds the consumers of a kernel op's result to fuse into its kernel (``plan_epilogue``),
given the :class:`Readers` of a value after the op."""

_PASSIVE = {"stablehlo.return", "func.return", "stablehlo.optimization_barrier"}


@dataclass(frozen=True)
class Lowered:
    """A lowered function: kernels as tensor-language text and the host plan."""

    kernels: str
    plan: Plan
    func: Func
    checks: tuple[object, ...] = ()
    """``frontend.lower.families.checks.Check`` per extra result after the function's own."""


class FuncLowering:
    """The state of lowering one entry function (and everything it calls)."""

    def __init__(self, module: Module, host_callbacks: int | None = None) -> None:
        self.module = module
        self.host_callbacks = host_callbacks
        """How many Python functions the executable's host callbacks will have (None:
        none; a host callback is then a CompileError)."""
        self._token: int | None = None
        self.buffers: list[Buffer] = []
        self.kernels = DistinctKernels()
        """The distinct kernels built (an equal kernel built again is dropped and its
        launches call the first one, :mod:`frontend.lower.core.dedup`)."""
        self._env: dict[Value, int] = {}
        self.steps: list[Step] = []
        self.uses: dict[Value, int] = {}
        self._users: dict[Value, list[Op]] = {}
        self.splats: dict[Value, bool] = {}
        """:func:`fused.splat_constant`'s answers, valid while the buffers it saw stay as
        they are (emptied when a value it called splat gets one, or ``env`` is replaced)."""
        self.tuples: dict[Value, list[Value]] = {}
        self.checks: list[tuple[int, object]] = []  # check.* ops: (buffer, Check)
        self._parents: dict[Block, Op] = {}  # the block of an op's region -> the op
        self._where: dict[Op, tuple[Block, int]] = {}  # op -> its block and position
        self._pending: dict[Value, Epilogue] = {}  # deferred kernel ops, by epilogue root
        self._claimed: set[Value] = set()  # values of pending epilogues (roots included)
        self._active: Epilogue | None = None  # the epilogue of the kernel op being lowered

    # -- buffers and values --------------------------------------------------------------------

    def new_buffer(self, dtype: str, shape: Sequence[int], init: bytes | None = None) -> int:
        """A new buffer id."""
        self.buffers.append(Buffer(len(self.buffers), dtype, tuple(shape), init))
        return len(self.buffers) - 1

    def buffer_for(self, v: Value) -> int:
        """A new buffer shaped like ``v`` (a token's: the token buffer)."""
        if isinstance(v.type, TokenType):
            return self.token()
        return self.new_buffer(types.elem(v), types.shape(v))

    def token(self) -> int:
        """The buffer every token value stands for: empty, never read or written."""
        if self._token is None:
            self._token = self.new_buffer("i1", (0,))
        return self._token

    @property
    def env(self) -> dict[Value, int]:
        """The buffer of every materialized value (lazy values have none)."""
        return self._env

    @env.setter
    def env(self, env: dict[Value, int]) -> None:
        self._env = env
        self.splats.clear()

    def bind(self, v: Value, buffer: int) -> None:
        """``v`` lives in ``buffer`` from now on."""
        if self.splats.get(v):  # no longer splat, nor what was splat through it
            self.splats.clear()
        self._env[v] = buffer

    def buffer_of(self, v: Value) -> int | None:
        """The buffer holding ``v``, or None while it is lazy (fusible)."""
        return self._env.get(v)

    def materialize(self, v: Value) -> int:
        """The buffer holding ``v``, computing it with a fused kernel if needed."""
        buf = self._env.get(v)
        if buf is not None:
            return buf
        out = self.buffer_for(v)
        if not isinstance(v.type, TokenType):  # ops making tokens bind none
            self.compute_into(v, out)
        self.bind(v, out)
        return out

    def compute_into(self, v: Value, out: int) -> None:
        """Write every element of ``v`` into buffer ``out`` with a fused kernel."""
        if compute_by_slices(self, v, out):  # a concatenation: a kernel per input
            return
        n, shape = types.size(v), types.shape(v)
        hint = _short(v.owner) if isinstance(v.owner, Op) else "copy"
        with self.kernel(hint) as (k, f):
            with k.elements_nd(shape) as idx:
                k.store(f.value(v, idx), out, types.elem(v), n, k.linear(idx, shape))
        self.launch_last(groups_nd(shape) if n else 0)

    # -- kernels and steps ---------------------------------------------------------------------

    @contextmanager
    def kernel(self, hint: str) -> Iterator[tuple[KernelBuilder, Fused]]:
        """Build a kernel; it is added to the program when the block ends, unless an equal
        one was built before: launches of ``k.name`` then call that one (the plan's
        launches are renamed at the end, :mod:`frontend.lower.core.dedup`)."""
        k = KernelBuilder(f"k{self.kernels.built}_{hint}")
        yield k, Fused(self, k)
        self.kernels.add(k.name, k.text())
        self._last = k

    def launch_last(self, groups: int) -> None:
        """Launch the kernel built last, its parameters bound to their buffers."""
        k = self._last
        if groups > 0:
            self.steps.append(Launch(k.name, tuple(k.params), groups))

    def step(self, step: Step) -> None:
        """Append a host step."""
        self.steps.append(step)

    @contextmanager
    def nested(self) -> Iterator[list[Step]]:
        """Collect the steps emitted inside the block into a new list.

        Values materialized inside are forgotten afterwards: a nested region may not run.
        """
        saved, self.steps = self.steps, []
        env = dict(self.env)
        try:
            yield self.steps
        finally:
            self.steps = saved
            self.env = env

    # -- walking -------------------------------------------------------------------------------

    def count_uses(self, body: Region) -> None:
        """Count uses of every value in ``body`` (calls already inlined); note where each
        op is and its users."""
        for block in body.blocks:
            for pos, op in enumerate(block.ops):
                self._where[op] = (block, pos)
                for v in op.operands:
                    self.uses[v] = self.uses.get(v, 0) + 1
                    self._users.setdefault(v, []).append(op)
                for region in op.regions:
                    self._parents[region.block] = op
                    self.count_uses(region)

    def position(self, op: Op) -> tuple[Block, int]:
        """The block holding ``op`` and its index there (after :meth:`count_uses`)."""
        return self._where[op]

    def region_of(self, where: Op | Block) -> Block | None:
        """The block of an op's region that holds op ``where`` or is block ``where``; None
        for the function's own block and for ops outside the function (quantized
        shadows)."""
        block = where if isinstance(where, Block) else self._where.get(where, (None,))[0]
        return block if block in self._parents else None

    def enclosing(self, where: Op | Block, block: Block) -> Op | None:
        """The op of ``block`` that is ``where`` or holds it in a region (``where``: an op
        or a region's block); None when ``where`` is not inside ``block``."""
        while True:
            home = where if isinstance(where, Block) else self._where.get(where, (None,))[0]
            if home is block and isinstance(where, Op):
                return where
            parent = self._parents.get(home) if home is not None else None
            if parent is None:
                return None
            where = parent

    def dead_at(self, v: Value, op: Op) -> bool:
        """Whether ``v`` is dead from ``op`` on: it is defined, and all its readers are
        read, in (or inside) ops before ``op`` in ``op``'s block whose results are all
        in buffers (a lazy reader would read ``v`` when materialized, later)."""
        block, pos = self.position(op)

        def done_before(where: Op | Block) -> bool:
            outer = self.enclosing(where, block)
            return outer is not None and self._where[outer][1] < pos \
                and all(r in self._env for r in outer.results)

        return done_before(v.owner) \
            and all(done_before(user) for user in self.users(v))

    def users(self, v: Value) -> list[Op]:
        """The ops reading ``v``, once per operand that is ``v`` (after
        :meth:`count_uses`)."""
        return self._users.get(v, [])

    def lower_block(self, block: Block) -> list[Value]:
        """Lower the ops of ``block``; return the values its terminator returns."""
        for op in block.ops[:-1]:
            self.lower_op(op)
        return list(block.ops[-1].operands)

    def lower_op(self, op: Op) -> None:
        """Lower one op (kernel lowering, or lazy elemental)."""
        if op.name not in ("stablehlo.tuple", "stablehlo.get_tuple_element"):
            types.check_op_types(op)
        if op.results and op.results[0] in self._pending:
            self._lower_with_epilogue(self._pending.pop(op.results[0]))
        elif op.name in KERNEL and op.results and op.results[0] in self._claimed:
            pass  # inside a pending group (row fusion): lowered with it at its root
        elif op.name in KERNEL and quant.requantizes(op):
            quant.lower_kernel(self, op)  # quantized tensors: the kernel runs on floats
        elif op.name in KERNEL:
            KERNEL[op.name](self, op)
        elif op.name in ELEMENTAL:
            if self._shared(op) and op.result not in self._claimed:
                self.materialize(op.result)
        else:
            raise CompileError.at(op.loc, f"'{op.name}' is not supported yet")

    def _shared(self, op: Op) -> bool:
        return (op.name not in CHEAP and self.uses.get(op.result, 0) > 1
                and not recompute_instead(self, op.result))

    # -- epilogue fusion -----------------------------------------------------------------------

    def defer_to_epilogue(self, op: Op, planner: Planner = plan_epilogue) -> bool:
        """For a kernel lowering that can fuse ``op``'s elementwise consumers into its own
        kernel (:class:`Epilogue`): True when it has some, so the lowering must return now;
        it runs again where the last of them is defined, and :meth:`epilogue` gives them.
        ``planner`` finds them (``reduce_rows.plan_rows``: reduce+broadcast chains)."""
        if self._active is not None and self._active.source is op.results[0]:
            return False
        if op not in self._where or len(op.results) != 1:
            return False
        plan = planner(op.result, lambda v: Readers(self, op, v), self.uses, self._claimed)
        if plan is None:
            return False
        self._pending[plan.root] = plan
        self._claimed |= plan.values | {plan.root}
        return True

    def epilogue(self, v: Value) -> Epilogue | None:
        """The epilogue to compute in the kernel that produces ``v``: it must bind the
        epilogue's root to that kernel's output (``v`` itself stays unbound)."""
        active = self._active
        return active if active is not None and active.source is v else None

    def _lower_with_epilogue(self, plan: Epilogue) -> None:
        """The deferred kernel op of ``plan``; its root is materialized separately when the
        lowering did not take the epilogue (e.g. an empty result)."""
        op = plan.source.owner
        assert isinstance(op, Op)
        self._active = plan
        try:
            KERNEL[op.name](self, op)
        finally:
            self._active = None
        self._claimed -= plan.values | {plan.root}
        if plan.root not in self.env:
            self.materialize(plan.root)


def _short(op: Op) -> str:
    return op.name.split(".")[-1]


def lower_function(module: Module, entry: str = "main",
                   host_callbacks: int | None = None) -> Lowered:
    """Lower the public function ``entry`` of ``module``; ``host_callbacks``: how many
    Python functions the executable's host callbacks will have (None: none, and a host
    callback is a CompileError)."""
    func = find_entry(module, entry)
    body = hoist_loop_invariants(inline_calls(module, func))
    for rewrite in rewrites():
        body = rewrite(body)
    lw = FuncLowering(module, host_callbacks)
    lw.count_uses(body)
    params = []
    for a in body.block.args:
        params.append(lw.buffer_for(a))
        lw.bind(a, params[-1])
    results = materialize_results(lw, lw.lower_block(body.block))
    results += [buf for buf, _ in lw.checks]
    keep = set(params) | set(results)
    steps = kernels_renamed(with_frees(lw.steps, keep), lw.kernels.aliases)
    plan = Plan(tuple(lw.buffers), tuple(params), tuple(results), steps)
    return Lowered("\n".join(lw.kernels.texts), plan, func,
                   tuple(c for _, c in lw.checks))


def find_entry(module: Module, entry: str) -> Func:
    """The function called ``entry``, or a CompileError listing the public ones."""
    func = module.func(entry)
    if func is None or func.body is None:
        names = ", ".join(f.name for f in module.funcs if f.visibility != "private")
        raise CompileError.at(module.loc, f"no function @{entry} in the module "
                              f"(public functions: {names or 'none'})")
    return func


def constant_bytes(array: np.ndarray, dtype: str) -> bytes:
    """The bytes of a constant as stored in a buffer of tensor-language type ``dtype``."""
    if dtype == "i1":
        return np.ascontiguousarray(array, dtype=np.bool_).tobytes()
    if dtype in types.STORAGE_DTYPES:
        array = array.astype(types.STORAGE_DTYPES[dtype])
    return np.ascontiguousarray(array).tobytes()
