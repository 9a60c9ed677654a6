"""One tensor-language function to one OpenCL kernel.

:class:`KernelEmitter` walks the function's regions and dispatches each instruction
to the handler of its family (``scalar``, ``memref``, ``control``, ``collectives``),
which writes C lines and binds the instruction's results to C expressions.
"""

from __future__ import annotations

from collections.abc import Callable

from backend_opencl.abi import ArgAbi, ParamKind, function_abi
from backend_opencl.emit import guards
from backend_opencl.emit.cnames import ctype, kernel_c_name, literal
from backend_opencl.emit.localmem import plan_local_memory
from backend_opencl.emit.ranges import Range, fits, index_ranges
from backend_opencl.emit.target import KernelPlan, Target
from backend_opencl.emit.unit import Unit
from backend_opencl.emit.view import GroupView, MemView, is_literal
from backend_opencl.emit.writer import Namer, Writer
from tensorlang.ir.core import Function, Instruction, Region, Value
from tensorlang.ir.types import INDEX, GroupType, MemRefType, Number, ScalarType, Type
from tensorlang.verify.bounds import GUARD

Handler = Callable[["KernelEmitter", Instruction], None]
HANDLERS: dict[str, Handler] = {}
"""Instruction name -> handler; filled by the family modules."""

SLAB = "tlc_slm"


def handler(*names: str) -> Callable[[Handler], Handler]:
    """Register a function as the handler of instructions ``names``."""

    def register(func: Handler) -> Handler:
        for name in names:
            HANDLERS[name] = func
        return func

    return register


class KernelEmitter:
    """Emits one kernel; the family handlers call back into it."""

    def __init__(self, func: Function, plan: KernelPlan, target: Target, unit: Unit) -> None:
        self.func, self.plan, self.target, self.unit = func, plan, target, unit
        self.namer = Namer()
        self.w = Writer(1)
        self.env: dict[Value, str | MemView | GroupView] = {}
        self.consts: dict[Value, Number] = {}
        self.yields: list[list[str]] = []
        self.abi: list[ArgAbi] = function_abi(func, self.namer, target.has_svm)
        self.local = plan_local_memory(func)
        self.scratch_bytes = 0
        self.guard_sites: list[guards.GuardSite] = []
        self.namer.used.add(guards.PARAM)
        self.ranges = index_ranges(func) if target.narrows_index else {}
        self.narrow_names: set[str] = set()
        """C names of ``int`` index values (and loop variables)."""

    # -- values -----------------------------------------------------------------------------

    def scalar(self, value: Value) -> str:
        """The C expression of a scalar value."""
        expr = self.env[value]
        assert isinstance(expr, str), f"{value} is not a scalar"
        return expr

    def view(self, value: Value) -> MemView:
        """The C view of a memref value."""
        view = self.env[value]
        assert isinstance(view, MemView), f"{value} is not a memref"
        return view

    def group(self, value: Value) -> GroupView:
        """The C view of a group value."""
        view = self.env[value]
        assert isinstance(view, GroupView), f"{value} is not a group"
        return view

    def const(self, value: Value) -> Number | None:
        """The value of ``value`` when a constant instruction defines it, else None."""
        return self.consts.get(value)

    def define(self, value: Value, expr: str, hint: str = "") -> str:
        """Declare ``const T name = expr;`` for a scalar result and bind it (an ``index``
        whose range fits 32 bits is an ``int``)."""
        t = value.type
        assert isinstance(t, ScalarType)
        self.use_type(t)
        name = self.namer.fresh(hint or value.name or "v")
        narrow = self.narrow(value)
        self.w.line(f"const {'int' if narrow else ctype(t)} {name} = {expr};")
        if narrow:
            self.narrow_names.add(name)
        self.env[value] = name
        return name

    def range(self, value: Value) -> Range | None:
        """The proven interval of an integer value (None when unbounded)."""
        return self.ranges.get(value)

    def narrow(self, value: Value) -> bool:
        """True for an ``index`` value that is held in an ``int`` (docs/codegen.md)."""
        return value.type == INDEX and fits(self.ranges.get(value))

    def narrow_expr(self, expr: str) -> bool:
        """True when C expression ``expr`` is an ``int`` index name or a small literal."""
        if expr.lstrip("-").isdigit():
            return fits((int(expr), int(expr)))
        return expr in self.narrow_names

    def long_var(self, expr: str, hint: str) -> str:
        """``expr`` itself when simple, else a new ``const long`` holding it."""
        if expr.replace("_", "").isalnum():
            return expr
        name = self.namer.fresh(hint)
        self.w.line(f"const long {name} = {expr};")
        return name

    def use_type(self, t: Type) -> None:
        """Record prelude features that values of type ``t`` need."""
        if isinstance(t, GroupType):
            t = t.memref
        if isinstance(t, MemRefType):
            t = t.element
        if isinstance(t, ScalarType):
            if t.name in ("f64", "c64"):
                self.unit.need("fp64")
            if t.is_complex:
                self.unit.need(f"complex:{t.name}")
            if t.is_half:
                self.unit.need(f"half:{t.name}")

    # -- structure --------------------------------------------------------------------------

    def region(self, region: Region) -> None:
        """Emit every instruction of ``region`` at the current indentation."""
        self.instructions(region.instructions)

    def instructions(self, instructions: list[Instruction]) -> None:
        """Emit ``instructions`` (of one region, in order) at the current indentation."""
        for inst in instructions:
            emit = HANDLERS.get(inst.name)
            assert emit is not None, f"no OpenCL lowering for {inst.name}"
            guard = self._collective_guard(inst) if inst.op.blas else ""
            if guard:
                with self.w.block(f"if ({guard})"):
                    emit(self, inst)
            else:
                emit(self, inst)

    # -- bounds guards (docs/abi.md, "Bounds guards") ---------------------------------------

    def next_site(self) -> int:
        """The id the next :meth:`add_site` gets (checks are written before the site)."""
        return len(self.guard_sites)

    def add_site(self, kind: str, inst: Instruction, operand: Value, rank: int = 1,
                 details: tuple[str, ...] = ()) -> None:
        """Record the guard site whose checks were just generated with :meth:`next_site`."""
        self.guard_sites.append(guards.GuardSite(kind, inst.loc, operand.name or "?", rank,
                                                 details))

    def in_range(self, site: int, mode: int, lo: str, size: str, extent: str) -> str:
        """A check that ``[lo, lo + size)`` lies in ``[0, extent)`` ('' when it is literal
        and true)."""
        if all(is_literal(x) for x in (lo, size, extent)) and \
                0 <= int(lo) and 0 <= int(size) <= int(extent) - int(lo):
            return ""
        name = self.unit.helper("bounds_range", guards.RANGE_CHECK)
        return f"{name}({guards.PARAM}, {site}, {mode}, {lo}, {size}, {extent})"

    def equal(self, site: int, which: int, a: str, b: str) -> str:
        """A check that sizes ``a`` and ``b`` agree ('' when both are the same literal)."""
        if a == b:
            return ""
        name = self.unit.helper("bounds_equal", guards.EQUAL_CHECK)
        return f"{name}({guards.PARAM}, {site}, {which}, {a}, {b})"

    def condition(self, parts: list[str], hint: str) -> str:
        """A new ``const bool`` holding the conjunction of ``parts`` ('' when none)."""
        parts = [p for p in parts if p]
        if not parts:
            return ""
        if len(parts) == 1 and parts[0].replace("_", "").isalnum():
            return parts[0]
        name = self.namer.fresh(hint)
        self.w.line(f"const bool {name} = {' && '.join(parts)};")
        return name

    def _collective_guard(self, inst: Instruction) -> str:
        """Valid operands and, for a marked collective, agreeing sizes ('' if unguarded)."""
        views = {name: view for name, v in inst.operands.items()
                 if isinstance(v, Value) and isinstance(view := self.env.get(v), MemView)}
        site, checks, details = self.next_site(), [], []
        for which, pair in enumerate(inst.attrs.get(GUARD) or ()):
            a, b = views[pair.a], views[pair.b]
            checks.append(self.equal(site, which, a.shape[pair.a_mode], b.shape[pair.b_mode]))
            details.append(f"%{inst.operand(pair.a).name} mode {pair.a_mode} vs "
                           f"%{inst.operand(pair.b).name} mode {pair.b_mode}")
        if any(checks):
            out = list(views)[-1]  # the updated operand
            self.add_site(inst.name, inst, inst.operand(out), len(details), tuple(details))
        return self.condition([v.valid for v in views.values()] + checks, "run_" + inst.name)

    def local_id(self) -> str:
        """The linear local id expression."""
        wgx = self.plan.work_group_size[0]
        if self.plan.work_group_size == (1, 1):
            return "0"
        if self.plan.work_group_size[1] == 1:
            return "(long)get_local_id(0)"
        return f"((long)get_local_id(0) + {wgx} * (long)get_local_id(1))"

    def scratch(self, nbytes: int, ctype_: str) -> str:
        """A ``local`` pointer to ``nbytes`` of scratch after the allocas (for reductions)."""
        self.scratch_bytes = max(self.scratch_bytes, nbytes)
        offset = (self.local.size + 15) // 16 * 16
        return f"(local {ctype_}*)((local char*){SLAB} + {offset})"

    def slab_bytes(self) -> int:
        """Bytes of local memory the kernel declares."""
        total = self.local.size
        if self.scratch_bytes:
            total = (total + 15) // 16 * 16 + self.scratch_bytes
        return total

    def emit(self) -> str:
        """The kernel's complete C text."""
        self._bind_args()
        self.region(self.func.body)
        if self.slab_bytes():
            self.w.lines.insert(0, f"    local ulong2 {SLAB}[{(self.slab_bytes() + 15) // 16}];")
        return f"{self._signature()} {{\n{self.w.text()}}}\n"

    def _signature(self) -> str:
        wgx, wgy = self.plan.work_group_size
        attrs = f"__attribute__((reqd_work_group_size({wgx}, {wgy}, 1)))"
        if self.plan.native_subgroups:
            attrs += f" __attribute__((intel_reqd_sub_group_size({self.plan.subgroup_size})))"
        restrict = self.func.name in self.target.restrict_kernels
        params = [f"{p.ctype} restrict {p.name}" if restrict and p.kind == ParamKind.POINTER
                  else f"{p.ctype} {p.name}" for arg in self.abi for p in arg.params]
        if self.guard_sites:
            params.append(f"global long* {guards.PARAM}")
        joined = ",\n    ".join(params)
        name = kernel_c_name(self.func.name)
        return f"kernel {attrs}\nvoid {name}(\n    {joined})" if params else \
            f"kernel {attrs}\nvoid {name}(void)"

    def _bind_args(self) -> None:
        for arg in self.abi:
            self.use_type(arg.type)
            by_mode = {(p.kind, p.mode): p.name for p in arg.params}
            t = arg.type
            if isinstance(t, ScalarType):
                self.env[arg.value] = scalar_arg(arg.name, t)
            elif isinstance(t, MemRefType):
                shape, strides = _dims(t, by_mode, ParamKind.SIZE, ParamKind.STRIDE)
                self.env[arg.value] = MemView(t, arg.name, shape, strides)
            else:
                assert isinstance(t, GroupType)
                shape, strides = _dims(t.memref, by_mode, ParamKind.GROUP_SIZE,
                                       ParamKind.GROUP_STRIDE)
                offset = by_mode.get((ParamKind.OFFSET, -1), str(t.offset))
                base = by_mode.get((ParamKind.GROUP_BASE, -1))
                self.env[arg.value] = GroupView(arg.name, t.memref, shape, strides, offset, base)


def _dims(t: MemRefType, params: dict[tuple[ParamKind, int], str], size: ParamKind,
          stride: ParamKind) -> tuple[tuple[str, ...], tuple[str, ...]]:
    shape = tuple(str(s) if s is not None else params[(size, m)] for m, s in enumerate(t.shape))
    strides = tuple(str(s) if s is not None else params[(stride, m)]
                    for m, s in enumerate(t.strides))
    return shape, strides


def scalar_arg(name: str, t: ScalarType) -> str:
    """The value of a scalar kernel parameter (i1 travels as char, f16/bf16 as bits)."""
    if t.is_bool:
        return f"({name} != 0)"
    return f"tlc_{t.name}_to_f32({name})" if t.is_half else name


def constant_literal(value: Number, t: ScalarType) -> str:
    """A constant as C text (re-exported for the family modules)."""
    return literal(value, t)
