"""The lowering registry: StableHLO op names to lowering functions.

Two kinds of lowering, each registered by decorator in a family module:

* ``@elemental("stablehlo.add", ...)`` – ``fn(f: Fused, op, idx) -> ssa``: compute the
  result element at row-major index ``idx`` (a list of IndexExpr) as scalar code in the
  kernel being built.  Such ops fuse: they never get a kernel of their own unless their
  value must be materialized.
* ``@kernel("stablehlo.dot_general", ...)`` – ``fn(lw: FuncLowering, op) -> None``: emit
  kernels and plan steps and bind every result with ``lw.bind(value, buffer)``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from frontend.ir.core import Op
    from frontend.lower.builder import IndexExpr
    from frontend.lower.driver import FuncLowering
    from frontend.lower.fused import Fused

ElementalFn = Callable[["Fused", "Op", "list[IndexExpr]"], str]
KernelFn = Callable[["FuncLowering", "Op"], None]

ELEMENTAL: dict[str, ElementalFn] = {}
KERNEL: dict[str, KernelFn] = {}
CHEAP: set[str] = set()
"""Elemental ops recomputed by every consumer instead of materialized when shared."""


def elemental(*names: str, cheap: bool = False) -> Callable[[ElementalFn], ElementalFn]:
    """Register ``fn`` as the elemental lowering of ``names``."""
    def register(fn: ElementalFn) -> ElementalFn:
        for name in names:
            ELEMENTAL[name] = fn
            if cheap:
                CHEAP.add(name)
        return fn
    return register


def kernel(*names: str) -> Callable[[KernelFn], KernelFn]:
    """Register ``fn`` as the kernel lowering of ``names``."""
    def register(fn: KernelFn) -> KernelFn:
        for name in names:
            KERNEL[name] = fn
        return fn
    return register


def load_families() -> None:
    """Import every family module so their decorators run."""
    from frontend.lower import (  # noqa: F401
        batchnorm,
        bitcast,
        callbacks,
        checks,
        chlo_mulhi,
        chlo_scan,
        control,
        conv,
        dot,
        dynamic,
        elementwise,
        fft,
        interpreter_ops,
        linalg,
        mathfns,
        misc,
        ragged_dot,
        reduce,
        reduce_window,
        rng,
        scatter_gather,
        shape,
        sort,
    )


def supported() -> set[str]:
    """Every op name with a lowering."""
    load_families()
    return set(ELEMENTAL) | set(KERNEL)


__all__: list[Any] = ["elemental", "kernel", "ELEMENTAL", "KERNEL", "CHEAP"]
