"""Well-formedness of types: the memref layout restrictions and group offsets.

The parser calls :func:`check_type` on every type it reads, and the verifier calls
it on every type that reaches the IR, so a type that breaks the reference's
restrictions is reported where it is written.  Rules (docs/language-constraints.md,
"Types"):

- (T1) a memref has one stride per mode;
- (T2) mode sizes are non-negative;
- (T3) ``1 <= S1`` and static strides are non-negative;
- (T4) ``S(i-1) s(i-1) <= Si`` wherever the three are known (column-major layout);
- (T5) a group's offset is non-negative;
- (T6) a group holds memrefs in the global address space.
"""

from __future__ import annotations

from tensorlang.diagnostics import CompileError, Loc
from tensorlang.ir.types import AddressSpace, GroupType, MemRefType, Type, dim_str


def check_type(t: Type, loc: Loc) -> None:
    """Raise :class:`CompileError` at ``loc`` if ``t`` breaks a type restriction (T1-T6)."""
    if isinstance(t, MemRefType):
        _check_memref(t, loc)
    elif isinstance(t, GroupType):
        _check_group(t, loc)


def _fail(loc: Loc, t: Type, rule: str, message: str) -> CompileError:
    return CompileError.at(loc, f"type {t} ({rule}): {message}")


def _check_memref(t: MemRefType, loc: Loc) -> None:
    if len(t.strides) != t.order:
        raise _fail(loc, t, "T1", f"the strided layout has {len(t.strides)} strides "
                    f"but the memref has order {t.order}")
    for i, size in enumerate(t.shape):
        if size is not None and size < 0:
            raise _fail(loc, t, "T2", f"mode {i} has negative size {size}")
    for i, stride in enumerate(t.strides):
        least = 1 if i == 0 else 0
        if stride is not None and stride < least:
            raise _fail(loc, t, "T3", f"stride S{i + 1} = {stride} must be at least {least}")
    for i in range(1, t.order):
        prev, size, stride = t.strides[i - 1], t.shape[i - 1], t.strides[i]
        if prev is None or size is None or stride is None:
            continue
        if prev * size > stride:
            raise _fail(loc, t, "T4", f"stride S{i + 1} = {dim_str(stride)} is smaller than "
                        f"S{i} * s{i} = {prev} * {size} = {prev * size} "
                        "(the layout must be column-major)")


def _check_group(t: GroupType, loc: Loc) -> None:
    _check_memref(t.memref, loc)
    if t.offset is not None and t.offset < 0:
        raise _fail(loc, t, "T5", f"the offset {t.offset} must be non-negative")
    if t.memref.addrspace is not AddressSpace.GLOBAL:
        raise _fail(loc, t, "T6", "a group holds memrefs in the global address space")
