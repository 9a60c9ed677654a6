"""Ahead of time: ``tlc.jax.jit(f).lower(*args)`` and its ``.compile()``, spelled as jax's
``Lowered`` and ``Compiled`` but compiled by tlc and run on its device.

``Lowered.as_text()`` is the StableHLO tlc compiles (jax's text; other attributes are
jax's ``Lowered``'s: ``in_tree``, ``out_info``, ``compiler_ir`` ...). ``compile()`` gives
a :class:`Compiled` sharing the jitted function's cache (the same signature called
later does not compile again, and one compiled before is not compiled again):
callable with the dynamic arguments, ``as_text(dialect)`` for the StableHLO, the
tensor-language kernels or the OpenCL C, and :meth:`Compiled.summary`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from backend_opencl.api.jax.common import (
    Entry,
    JitFunction,
    Signature,
    host_callbacks,
    jax_module,
    leaf_key,
)

if TYPE_CHECKING:
    import jax

    from tensorlang.plan import Step

DIALECTS = ("stablehlo", "tl", "opencl")
"""What :meth:`Compiled.as_text` prints."""


class Lowered:
    """jax's lowering of a ``tlc.jax.jit`` function for one signature, for tlc."""

    def __init__(self, jitted: JitFunction, key: Signature, lowered: jax.stages.Lowered
                 ) -> None:
        self._jitted = jitted
        self._key = key
        self._lowered = lowered

    def as_text(self, dialect: str | None = None, *, debug_info: bool = False) -> str:
        """The StableHLO tlc compiles (``debug_info``: with jax's source locations)."""
        return self._lowered.as_text(dialect, debug_info=debug_info)

    def compile(self) -> Compiled:
        """tlc's executable for this signature (a :class:`backend_opencl.api.jax.bridge.
        JaxCompileError` where tlc cannot compile it)."""
        entry = self._jitted.entry(self._key, lambda: self._lowered)
        return Compiled(self._jitted, self._key, entry, self._lowered)

    def __getattr__(self, name: str) -> Any:
        """The other attributes of jax's ``Lowered``."""
        if name.startswith("_"):  # not set yet (copy, pickle): not jax's either
            raise AttributeError(name)
        return getattr(self._lowered, name)


@dataclass(frozen=True)
class Summary:
    """A compiled program at a glance: its kernels, the kernel launches of its plan (a
    loop's body counted once), the bytes of its device buffers (before the executor
    reuses freed ones; constants included), and its parameters and results as tlc sees
    them (a typed key is its data)."""

    kernels: tuple[str, ...]
    launches: int
    buffer_bytes: int
    parameters: tuple[tuple[tuple[int, ...], np.dtype | None], ...]  # None: a token
    results: tuple[tuple[tuple[int, ...], np.dtype | None], ...]

    def __str__(self) -> str:
        def types(values: tuple[tuple[tuple[int, ...], object], ...]) -> str:
            return ", ".join(_type_text(shape, dtype) for shape, dtype in values) or "none"

        return (f"{len(self.kernels)} kernels ({', '.join(self.kernels) or 'none'}), "
                f"{self.launches} launches, {self.buffer_bytes} buffer bytes\n"
                f"parameters: {types(self.parameters)}\nresults: {types(self.results)}")


class Compiled:
    """tlc's executable for one signature of a ``tlc.jax.jit`` function: call it with the
    dynamic arguments (the static ones were given to ``lower``), as jax's ``Compiled``."""

    def __init__(self, jitted: JitFunction, key: Signature, entry: Entry,
                 lowered: jax.stages.Lowered) -> None:
        self._jitted = jitted
        self._key = key
        self._entry = entry
        self._lowered = lowered
        self.in_tree = lowered.in_tree
        """The pytree structure of the arguments: ``(args, kwargs)``."""
        self.out_tree = lowered.out_tree
        """The pytree structure of the results."""
        self._in_avals = jax_module().tree_util.tree_leaves(lowered.in_avals)

    def __call__(self, *args: object, **kwargs: object) -> Any:
        """Run tlc's executable: numpy arrays in the function's output pytree. A
        TypeError when the arguments' structure, shapes or dtypes are not the compiled
        ones (jax's canonical dtypes; weak types may differ)."""
        leaves, tree = jax_module().tree_util.tree_flatten((args, kwargs))
        if tree != self.in_tree:
            raise TypeError(f"{self._jitted.name} was compiled for arguments {self.in_tree}, "
                            f"called with {tree}")
        if tuple(leaf_key(x) for x in leaves) != self._key.leaves:
            self._check_types(leaves)
        return self._call_leaves(leaves)

    def _check_types(self, leaves: list[object]) -> None:
        """A TypeError at the first leaf whose type is not the compiled one."""
        for i, (leaf, want) in enumerate(zip(leaves, self._in_avals, strict=True)):
            aval = jax_module().typeof(leaf)
            if (aval.shape, aval.dtype) != (want.shape, want.dtype):
                raise TypeError(f"{self._jitted.name} was compiled for "
                                f"{_type_text(want.shape, want.dtype)} at argument leaf {i}, "
                                f"called with {_type_text(aval.shape, aval.dtype)}")

    def _call_leaves(self, leaves: list[object]) -> Any:
        """Run on the arguments' leaves, unchecked (a host callback's, typed by jax)."""
        return self._jitted.run_entry(self._entry, leaves)

    def as_text(self, dialect: str = "opencl") -> str:
        """The program: ``stablehlo`` (what tlc compiled), ``tl`` (the tensor-language
        kernels it lowered to) or ``opencl`` (the OpenCL C built for the device; empty
        for a program without kernels)."""
        if dialect == "stablehlo":
            return self._lowered.as_text()
        if dialect == "tl":
            import frontend
            from backend_opencl.api import compiler

            return compiler.emit(frontend.parse(self._lowered.as_text()), "tl",
                               host_callbacks=len(host_callbacks(self._lowered)))
        if dialect == "opencl":
            module = self._entry.exe.module
            return module.source if module is not None else ""
        raise ValueError(f"unknown dialect {dialect!r} (use {', '.join(DIALECTS)})")

    def summary(self) -> Summary:
        """The kernels, launches, buffer bytes, parameters and results."""
        from backend_opencl.exec.arguments import NUMPY_DTYPES

        exe = self._entry.exe
        plan = exe.plan
        results = plan.results[:self._entry.tokens + self._entry.results]
        return Summary(
            tuple(exe.module.kernels) if exe.module is not None else (),
            _launches(plan.steps),
            sum(b.size * np.dtype(NUMPY_DTYPES[b.dtype]).itemsize for b in plan.buffers),
            tuple((plan.buffer(b).shape, None if d is None else np.dtype(d))
                  for b, d in zip(plan.params, exe.arg_dtypes, strict=True)),
            tuple((plan.buffer(b).shape, d)
                  for b, d in zip(results, exe.result_dtypes[:len(results)], strict=True)))


def _type_text(shape: tuple[int, ...], dtype: object) -> str:
    """``float32[2,3]`` as jax writes types (``token`` for a None dtype)."""
    return f"{dtype}[{','.join(map(str, shape))}]" if dtype is not None else "token"


def _launches(steps: tuple[Step, ...]) -> int:
    """The kernel launches among ``steps`` and their nested steps (each body once)."""
    from tensorlang.plan import Case, If, Launch, While

    count = 0
    for step in steps:
        if isinstance(step, Launch):
            count += 1
        elif isinstance(step, While):
            count += _launches(step.cond) + _launches(step.body)
        elif isinstance(step, If):
            count += _launches(step.then) + _launches(step.otherwise)
        elif isinstance(step, Case):
            count += sum(_launches(branch) for branch in step.branches)
    return count
