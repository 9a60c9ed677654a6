"""Function-level rules: attributes, argument types, unique names; then the body walk.

Rules (docs/language-constraints.md, "Functions"):

- (F1) ``work_group_size`` has two positive modes;
- (F2) ``subgroup_size`` is one of 8, 16, 32, 64;
- (F3) with both attributes, the first work-group mode is a multiple of the subgroup size;
- (F4) arguments have scalar, memref or group type, each well formed (T1-T6);
- (F5) function names are unique in a program;
- (F6) memref arguments are in the global address space (local memory comes from alloca).
"""

from __future__ import annotations

from tensorlang.ir.core import Function, Program
from tensorlang.ir.types import AddressSpace, MemRefType, VoidType
from tensorlang.verify.errors import fail, value_name
from tensorlang.verify.regions import Context, Walker
from tensorlang.verify.rules import CHECKS
from tensorlang.verify.types import check_type

SUBGROUP_SIZES = (8, 16, 32, 64)
"""Subgroup sizes a ``subgroup_size`` attribute may request (F2)."""


def verify_program_functions(program: Program) -> None:
    """Check F5 and then every function of ``program``."""
    seen: dict[str, Function] = {}
    for func in program.functions:
        if func.name in seen:
            raise fail(func.loc, "function (F5)", f"@{func.name} is defined more than once")
        seen[func.name] = func
        verify_function(func)


def verify_function(func: Function) -> None:
    """Check the attributes and arguments of ``func`` and walk its body."""
    _check_attributes(func)
    walker = Walker(CHECKS)
    for arg in func.args:
        if isinstance(arg.type, VoidType):
            raise fail(arg.loc, "function (F4)", f"argument {value_name(arg)} cannot have type "
                       "void")
        check_type(arg.type, arg.loc)
        if isinstance(arg.type, MemRefType) and arg.type.addrspace is AddressSpace.LOCAL:
            raise fail(arg.loc, "function (F6)", f"argument {value_name(arg)} cannot be a local "
                       "memref (local memory is allocated with alloca)", arg)
        walker.define(arg, arg.loc)
    walker.region(func.body, Context(spmd=False), set(func.args))


def _check_attributes(func: Function) -> None:
    size, sub = func.work_group_size, func.subgroup_size
    where = f"@{func.name}"
    if size is not None and (len(size) != 2 or any(m < 1 for m in size)):
        raise fail(func.loc, "function (F1)", f"{where}: work_group_size must have two positive "
                   f"modes, got {tuple(size)}")
    if sub is not None and sub not in SUBGROUP_SIZES:
        raise fail(func.loc, "function (F2)", f"{where}: subgroup_size must be one of "
                   f"{', '.join(map(str, SUBGROUP_SIZES))}, got {sub}")
    if size is not None and sub is not None and size[0] % sub != 0:
        raise fail(func.loc, "function (F3)", f"{where}: the first work_group_size mode "
                   f"{size[0]} must be a multiple of the subgroup size {sub}")
