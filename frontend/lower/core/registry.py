"""The lowering registry: StableHLO op names to lowering functions.

Family modules (:mod:`frontend.lower.families`) fill its tables by decorator when they
are imported; :mod:`frontend.lower` imports them all, so the tables are complete before
anything is lowered.  Core modules only read the tables, never import a family.  Two kinds
of lowering:

* ``@elemental("stablehlo.add", ...)`` – ``fn(f: Fused, op, idx) -> ssa``: compute the
  result element at row-major index ``idx`` (a list of IndexExpr) as scalar code in the
  kernel being built.  Such ops fuse: they never get a kernel of their own unless their
  value must be materialized.
* ``@kernel("stablehlo.dot_general", ...)`` – ``fn(lw: FuncLowering, op) -> None``: emit
  kernels and plan steps and bind every result with ``lw.bind(value, buffer)``.

Besides, ``@rewrite(order)`` registers a rewrite of the whole inlined body that runs before
lowering (``fn(region) -> region``), such as the channels-last convolution layout.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from frontend.ir.core import Op, Region
    from frontend.lower.core.builder import IndexExpr
    from frontend.lower.core.driver import FuncLowering
    from frontend.lower.core.fused import Fused

ElementalFn = Callable[["Fused", "Op", "list[IndexExpr]"], str]
KernelFn = Callable[["FuncLowering", "Op"], None]
RewriteFn = Callable[["Region"], "Region"]

ELEMENTAL: dict[str, ElementalFn] = {}
KERNEL: dict[str, KernelFn] = {}
CHEAP: set[str] = set()
"""Elemental ops recomputed by every consumer instead of materialized when shared."""
REWRITES: list[tuple[int, RewriteFn]] = []
"""Whole-body rewrites (``@rewrite(order)``) with their order."""


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


def rewrite(order: int) -> Callable[[RewriteFn], RewriteFn]:
    """Register ``fn`` as a rewrite of the inlined function body before it is lowered;
    the driver applies the rewrites by increasing ``order``."""
    def register(fn: RewriteFn) -> RewriteFn:
        REWRITES.append((order, fn))
        return fn
    return register


def rewrites() -> list[RewriteFn]:
    """The registered rewrites in the order they apply."""
    return [fn for _, fn in sorted(REWRITES, key=lambda entry: entry[0])]


def supported() -> set[str]:
    """Every op name with a lowering (all of them once :mod:`frontend.lower` is imported)."""
    return set(ELEMENTAL) | set(KERNEL)


__all__: list[Any] = ["elemental", "kernel", "rewrite", "ELEMENTAL", "KERNEL", "CHEAP", "REWRITES"]
