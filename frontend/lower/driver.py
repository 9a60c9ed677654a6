"""Lowering a StableHLO function to tensor-language kernels plus a host plan.

:class:`FuncLowering` walks a function's ops in order.  Ops with a kernel lowering run it
(it emits kernels and plan steps); elemental ops are left lazy and fuse into whichever
kernel needs their elements, unless they are shared (used more than once and not cheap),
in which case they are materialized into a buffer right away.  Function results are
materialized at the return.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from frontend.ir.core import Block, Func, Module, Op, Value, walk
from frontend.lower import types
from frontend.lower.builder import KernelBuilder, num_groups
from frontend.lower.fused import Fused
from frontend.lower.registry import CHEAP, ELEMENTAL, KERNEL, load_families
from tensorlang.diagnostics import CompileError
from tensorlang.plan import Buffer, Launch, Plan, Step, with_frees

_PASSIVE = {"stablehlo.return", "func.return", "stablehlo.optimization_barrier"}


@dataclass(frozen=True)
class Lowered:
    """A lowered function: kernels as tensor-language text and the host plan."""

    kernels: str
    plan: Plan
    func: Func
    checks: tuple[object, ...] = ()
    """``frontend.lower.checks.Check`` per extra result after the function's own."""


class FuncLowering:
    """The state of lowering one entry function (and everything it calls)."""

    def __init__(self, module: Module) -> None:
        self.module = module
        self.buffers: list[Buffer] = []
        self.kernels: list[str] = []
        self.env: dict[Value, int] = {}
        self.steps: list[Step] = []
        self.uses: dict[Value, int] = {}
        self.tuples: dict[Value, list[Value]] = {}
        self.checks: list[tuple[int, object]] = []  # check.* ops: (buffer, Check)
        self._nested: set[Value] = set()

    # -- buffers and values --------------------------------------------------------------------

    def new_buffer(self, dtype: str, shape: Sequence[int], init: bytes | None = None) -> int:
        """A new buffer id."""
        self.buffers.append(Buffer(len(self.buffers), dtype, tuple(shape), init))
        return len(self.buffers) - 1

    def buffer_for(self, v: Value) -> int:
        """A new buffer shaped like ``v``."""
        return self.new_buffer(types.elem(v), types.shape(v))

    def bind(self, v: Value, buffer: int) -> None:
        """``v`` lives in ``buffer`` from now on."""
        self.env[v] = buffer

    def buffer_of(self, v: Value) -> int | None:
        """The buffer holding ``v``, or None while it is lazy (fusible)."""
        return self.env.get(v)

    def materialize(self, v: Value) -> int:
        """The buffer holding ``v``, computing it with a fused kernel if needed."""
        buf = self.env.get(v)
        if buf is not None:
            return buf
        out = self.buffer_for(v)
        self.compute_into(v, out)
        self.bind(v, out)
        return out

    def compute_into(self, v: Value, out: int) -> None:
        """Write every element of ``v`` into buffer ``out`` with a fused kernel."""
        n = types.size(v)
        hint = _short(v.owner) if isinstance(v.owner, Op) else "copy"
        with self.kernel(hint) as (k, f):
            with k.elements(n) as i:
                k.store(f.value(v, k.delinearize(i, types.shape(v))), out, types.elem(v), n, i)
        self.launch_last(num_groups(n))

    # -- kernels and steps ---------------------------------------------------------------------

    @contextmanager
    def kernel(self, hint: str) -> Iterator[tuple[KernelBuilder, Fused]]:
        """Build a kernel; it is added to the program when the block ends."""
        k = KernelBuilder(f"k{len(self.kernels)}_{hint}")
        yield k, Fused(self, k)
        self.kernels.append(k.text())
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

    def count_uses(self, func: Func) -> None:
        """Count uses of every value (uses inside regions count twice: recomputation)."""
        for op in walk(func.body):
            for v in op.operands:
                self.uses[v] = self.uses.get(v, 0) + 1

    def lower_block(self, block: Block) -> list[Value]:
        """Lower the ops of ``block``; return the values its terminator returns."""
        for op in block.ops[:-1]:
            self.lower_op(op)
        return list(block.ops[-1].operands)

    def lower_op(self, op: Op) -> None:
        """Lower one op (kernel lowering, or lazy elemental)."""
        if op.name not in ("stablehlo.tuple", "stablehlo.get_tuple_element"):
            types.check_op_types(op)
        if op.name in KERNEL:
            KERNEL[op.name](self, op)
        elif op.name in ELEMENTAL:
            if self._shared(op):
                self.materialize(op.result)
        else:
            raise CompileError.at(op.loc, f"'{op.name}' is not supported yet")

    def _shared(self, op: Op) -> bool:
        return op.name not in CHEAP and self.uses.get(op.result, 0) > 1

    def call(self, func: Func, args: Sequence[Value], loc: object) -> list[Value]:
        """Lower ``func``'s body with its parameters bound to ``args`` (inlining)."""
        for op in walk(func.body):  # a second call recomputes the body's values
            for r in op.results:
                self.env.pop(r, None)
        for param, arg in zip(func.args, args, strict=True):
            self.env[param] = self.materialize(arg)
        return self.lower_block(func.body.block)


def _short(op: Op) -> str:
    return op.name.split(".")[-1]


def lower_function(module: Module, entry: str = "main") -> Lowered:
    """Lower the public function ``entry`` of ``module``."""
    load_families()
    func = find_entry(module, entry)
    lw = FuncLowering(module)
    for part_func in module.funcs:
        if part_func.body is not None:
            lw.count_uses(part_func)
    params = []
    for a in func.args:
        params.append(lw.buffer_for(a))
        lw.bind(a, params[-1])
    results = [lw.materialize(v) for v in lw.lower_block(func.body.block)]
    results += [buf for buf, _ in lw.checks]
    keep = set(params) | set(results)
    plan = Plan(tuple(lw.buffers), tuple(params), tuple(results),
                tuple(with_frees(lw.steps, keep)))
    return Lowered("\n".join(lw.kernels), plan, func, tuple(c for _, c in lw.checks))


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
