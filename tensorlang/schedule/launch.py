"""Launch contracts: what a kernel's accesses require of the values the host knows.

For every subview, load and store of a memref, every ``load`` of a group member and every
BLAS collective whose operand sizes must agree, isl computes the *violation* set: the
values of the launch's host-known quantities (dynamic sizes of memref arguments, integer
scalar arguments, ``num_groups``, a group's member count and, for a member loaded at
``group_id``, its dynamic sizes) for which some run of the instruction leaves its root
memref or pairs different sizes.  Loop variables of ``foreach``/``foreach_nd``/unit-step
``for`` loops and ``group_id`` are eliminated through their ranges (every value in the
range runs).

Each violation set becomes a :class:`LaunchCheck`, a picklable disjunction of linear
conditions the launcher evaluates before anything runs (``backend_opencl.exec.module``).  An
instruction whose violation depends on values the host cannot know (loaded data,
non-affine indices, conditions isl cannot read) is *residual*: with no possible
violation it needs nothing, otherwise it gets a run-time guard (docs/abi.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import islpy as isl

from tensorlang.ir.core import Function, Instruction, Region, Value
from tensorlang.ir.ops import ArithOp, CmpCond
from tensorlang.ir.types import GroupType, MemRefType, ScalarType
from tensorlang.schedule import space
from tensorlang.schedule.affine import Symbols, View, _sizes, _subview, affine, view
from tensorlang.schedule.bounds import SizePair, facts, operation_budget
from tensorlang.schedule.contracts import Form, GroupCount, LaunchCheck, Quantity

NUM_GROUPS = "tlc_num_groups"
_MEMBERS = "tlc_members_"


@dataclass(frozen=True)
class Contract:
    """A function's launch checks and the instructions that need run-time guards
    (with :func:`tensorlang.verify.bounds` marks: ``True`` or the unverifiable size pairs)."""

    checks: tuple[LaunchCheck, ...]
    residual: tuple[tuple[Instruction, object], ...]


class _Opaque(Exception):
    """The violation depends on something the host cannot know."""


SizePairsOf = Callable[[Instruction], tuple[SizePair, ...]]
"""The mode sizes of a collective that must agree (``tensorlang.verify.bounds.size_pairs``)."""


def contract(func: Function, size_pairs: SizePairsOf) -> Contract:
    """The launch contract of ``func`` (``size_pairs``: the collectives' size pairs,
    ``tensorlang.verify.bounds.size_pairs``)."""
    analysis = _Analysis(func)
    checks: list[LaunchCheck] = []
    residual: list[tuple[Instruction, object]] = []
    for inst in func.walk():
        found, mark = analysis.instruction(inst, size_pairs)
        checks += found
        if mark:
            residual.append((inst, mark))
    return Contract(tuple(checks), tuple(residual))


class _Analysis:
    """The host-known quantities of one function and the per-instruction questions."""

    def __init__(self, func: Function) -> None:
        self.func = func
        self.syms = Symbols()
        self.args = {a: i for i, a in enumerate(func.args)}
        self.gids = [i.result for i in func.walk() if i.name == "group_id"]
        self.gsizes = [i.result for i in func.walk() if i.name == "group_size"]

    # -- instructions -------------------------------------------------------------------

    def instruction(self, inst: Instruction,
                    size_pairs: SizePairsOf) -> tuple[list[LaunchCheck], object]:
        """The checks ``inst`` needs and its guard mark (False: none)."""
        try:
            with operation_budget():
                if inst.name in ("subview", "load", "store"):
                    return self._access(inst)
                if inst.name == "expand":
                    t = inst.single("operand").memref_type
                    mode = inst.attr_of("mode", int)
                    dynamic = t.shape[mode] is None or None in inst.attr("shape")
                    return [], dynamic
                if inst.op.blas:
                    return self._collective(inst, size_pairs(inst))
        except isl.Error:  # over budget or unreadable: guard what can be guarded
            if inst.op.blas:
                return [], tuple(size_pairs(inst))
            member = inst.name == "load" and isinstance(inst.single("operand").type,
                                                        GroupType)
            return [], not member
        return [], False

    def _access(self, inst: Instruction) -> tuple[list[LaunchCheck], object]:
        operand = inst.single("operand")
        if isinstance(operand.type, GroupType):
            return self._member_index(inst) if inst.name == "load" else ([], False)
        v = self._view(operand if inst.name != "subview" else inst.result)
        if v.index is None:
            return [], True
        if inst.name == "subview":
            points = [f"x{d}" for d in range(v.rank)]
            ranges = [f"0 <= x{d} < {s}" for d, s in enumerate(v.sizes)]
        else:
            points = [affine(i, self.syms) for i in inst.variadic("indices")]
            ranges = []
        coords = v.at(tuple(points))
        if coords is None:
            return [], True
        root = self._view(v.root)
        checks: list[LaunchCheck] = []
        for d, (z, size) in enumerate(zip(coords, root.sizes, strict=True)):
            outside = [f"{z} < 0", f"{z} >= {size}"]
            bad = self._violations(inst, [r for r in ranges], outside,
                                   [p for p in points if p.startswith("x")])
            if bad is None:
                return [], True
            if bad:
                arg, mode = self._root_arg(v.root, d)
                checks.append(LaunchCheck(arg, mode, _what(inst), bad))
        return checks, False

    def _member_index(self, load: Instruction) -> tuple[list[LaunchCheck], object]:
        group = load.single("operand")
        if group not in self.args:
            return [], False
        index = affine(load.variadic("indices")[0], self.syms)
        count = f"{_MEMBERS}{self.args[group]}"
        bad = self._violations(load, [], [f"{index} < 0", f"{index} >= {count}"], [])
        if bad is None:
            return [], False  # not guarded (docs/abi.md): the launcher checks num_groups
        found = [LaunchCheck(self.args[group], -1, _what(load), bad, "member")] if bad else []
        return found, False

    def _collective(self, inst: Instruction,
                    pairs: tuple[SizePair, ...]) -> tuple[list[LaunchCheck], object]:
        checks: list[LaunchCheck] = []
        unknown = []
        for pair in pairs:
            a = self._view(inst.operand(pair.a)).sizes[pair.a_mode]
            b = self._view(inst.operand(pair.b)).sizes[pair.b_mode]
            if a == b:
                continue
            bad = self._violations(inst, [], [f"{a} < {b}", f"{a} > {b}"], [])
            if bad is None:
                unknown.append(pair)
            elif bad:
                arg, mode = self._operand_arg(inst.operand(pair.a), pair.a_mode)
                other = self._operand_arg(inst.operand(pair.b), pair.b_mode)
                what = f"{_what(inst)}: {_operand(inst, pair.a)} mode {pair.a_mode} and " \
                    f"{_operand(inst, pair.b)} mode {pair.b_mode} must have equal sizes"
                if arg < 0:
                    arg, mode = other
                checks.append(LaunchCheck(arg, mode, what, bad, "sizes"))
        return checks, tuple(unknown)

    # -- isl ------------------------------------------------------------------------------

    def _violations(self, inst: Instruction, ranges: list[str], alternatives: list[str],
                    dims: list[str]) -> tuple[tuple[Form, ...], ...] | None:
        """Conditions on host quantities under which some point of ``ranges`` (over
        ``dims``) satisfies one of ``alternatives`` where ``inst`` runs; None when that
        depends on more than the host knows."""
        tuple_ = f"D[{', '.join(dims)}]"
        bad: isl.Set | None = None
        for alt in alternatives:
            part = space.set_(tuple_, ranges + [alt]).params()
            bad = part if bad is None else _union(bad, part)
        assert bad is not None
        names = _param_names(bad)
        where = facts(inst, self.syms, names)
        for fact in self._launch_facts(names + _param_names(where)):
            bad = _intersect(bad, fact)
        bad = _intersect(bad, where)
        opaque, ranged = self._classify(_param_names(bad))
        bad = _project(bad, ranged)
        if bad.is_empty():
            return ()
        if opaque or not self._exact_context(inst):
            return None
        bad = _project(bad, self._droppable(bad))
        return _forms(bad, self._quantity)

    def _launch_facts(self, names: list[str]) -> list[isl.Set]:
        """``0 <= group_id < num_groups``, ``group_size = num_groups``, ``0 <= sizes``."""
        found = [space.context([f"0 <= {self.syms.param(g)} < {NUM_GROUPS}"])
                 for g in self.gids if self.syms.param(g) in names]
        found += [space.context([f"{self.syms.param(g)} = {NUM_GROUPS}"])
                  for g in self.gsizes if self.syms.param(g) in names]
        if found:
            found.append(space.context([f"{NUM_GROUPS} >= 1"]))
        found += [space.context([f"{n} >= 0"]) for n in names  # 0 too: never trust it away
                  if n in self.syms.sizes or n.startswith(_MEMBERS)]
        return found

    def _classify(self, names: list[str]) -> tuple[list[str], list[str]]:
        """The opaque parameters and those to eliminate (loop variables, group sizes)."""
        opaque, ranged = [], []
        for name in names:
            kind = self._kind(name)
            if kind == "opaque":
                opaque.append(name)
            elif kind == "ranged":
                ranged.append(name)
        return opaque, ranged

    def _droppable(self, bad: isl.Set) -> list[str]:
        """``group_id`` when no member size needs it: its range replaces it."""
        names = _param_names(bad)
        if any(self._kind(n) == "msize" for n in names):
            return []
        return [n for n in names if self._kind(n) == "group_id"]

    def _kind(self, name: str) -> str:
        if name == NUM_GROUPS or name.startswith(_MEMBERS):
            return "host"
        if name in self.syms.sizes:
            root, _ = self.syms.sizes[name]
            if root in self.args:
                return "host"
            return "msize" if self._member_of_group_id(root) else "opaque"
        value = self.syms.values.get(name)
        if value is None:
            return "opaque"
        if value in self.args:
            t = value.type
            return "host" if isinstance(t, ScalarType) and t.is_int and not t.is_bool \
                else "opaque"
        owner = value.owner
        if isinstance(owner, Instruction):
            if owner.name == "group_id":
                return "group_id"
            return "ranged" if owner.name == "group_size" else "opaque"
        if isinstance(owner, Region) and _ranged_loop(owner):
            return "ranged"
        return "opaque"

    def _quantity(self, name: str) -> Quantity:
        if name == NUM_GROUPS:
            return Quantity("groups")
        if name.startswith(_MEMBERS):
            return Quantity("members", int(name[len(_MEMBERS):]))
        if name in self.syms.sizes:
            root, mode = self.syms.sizes[name]
            if root in self.args:
                return Quantity("size", self.args[root], mode)
            return Quantity("msize", self.args[_view_operand(root)], mode)
        value = self.syms.values[name]
        if value in self.args:
            return Quantity("scalar", self.args[value])
        return Quantity("group_id")

    def _member_of_group_id(self, root: Value) -> bool:
        load = root.owner
        if not isinstance(load, Instruction) or load.name != "load" or \
                load.single("operand") not in self.args:
            return False
        index = load.variadic("indices")[0]
        return index.owner is not None and isinstance(index.owner, Instruction) and \
            index.owner.name == "group_id"

    def _exact_context(self, inst: Instruction) -> bool:
        """True when every enclosing region's facts are exact (no condition dropped)."""
        child: Instruction = inst
        while child.parent is not None and isinstance(child.parent.parent, Instruction):
            owner = child.parent.parent
            if owner.name == "if" and not _exact_condition(
                    owner.single("cond"), owner.regions.index(child.parent) == 1):
                return False
            if owner.name not in ("if", "foreach", "foreach_nd", "for", "parallel") or \
                    (owner.name == "for" and not _ranged_loop(child.parent)):
                return False
            child = owner
        return True

    # -- views and names ----------------------------------------------------------------

    def _view(self, value: Value) -> View:
        """Like :func:`view`, with a member loaded from a group argument as a root."""
        inst = value.owner
        if isinstance(inst, Instruction) and inst.name == "subview":
            return _subview(inst, self._view(inst.single("operand")), self.syms)
        if isinstance(inst, Instruction) and inst.name == "load" and \
                isinstance(inst.single("operand").type, GroupType):
            t = value.memref_type
            return View(value, t.order, t.order, _sizes(value, t, self.syms),
                        tuple(f"@{d}@" for d in range(t.order)))
        if isinstance(inst, Instruction) and inst.name in ("fuse", "expand"):
            base = self._view(inst.single("operand"))
            sizes = self._reshaped_sizes(inst, list(base.sizes))
            if sizes is not None:  # exact sizes, inexact elements
                return View(base.root, len(sizes), base.root_rank, tuple(sizes), None)
        return view(value, self.syms)

    def _reshaped_sizes(self, inst: Instruction, sizes: list[str]) -> list[str] | None:
        """The affine sizes of a fuse or expand result (None when not affine)."""
        if inst.name == "expand":
            dynamic = iter(inst.variadic("dynamic"))
            mode = inst.attr_of("mode", int)
            new = [str(n) if n is not None else affine(next(dynamic), self.syms)
                   for n in inst.attr("shape")]
            return sizes[:mode] + new + sizes[mode + 1:]
        first, last = inst.attr_of("from_mode", int), inst.attr_of("to_mode", int)
        factors = sizes[first:last + 1]
        const = 1
        for f in factors:
            const *= int(f) if f.isdigit() else 1
        symbolic = [f for f in factors if not f.isdigit()]
        if len(symbolic) > 1:
            return None
        fused = f"{const} * ({symbolic[0]})" if symbolic else str(const)
        return sizes[:first] + [fused] + sizes[last + 1:]

    def _root_arg(self, root: Value, mode: int) -> tuple[int, int]:
        if root in self.args:
            return self.args[root], mode
        owner = root.owner
        if isinstance(owner, Instruction) and owner.name == "load" and \
                owner.single("operand") in self.args:
            return self.args[owner.single("operand")], mode
        return -1, mode

    def _operand_arg(self, value: Value, mode: int) -> tuple[int, int]:
        v = self._view(value)
        if v.index is None or v.rank != v.root_rank:
            return self._root_arg(v.root, -1)
        return self._root_arg(v.root, mode)


def _ranged_loop(region: Region) -> bool:
    """A loop region whose variables take every value of their range."""
    owner = region.parent
    if not isinstance(owner, Instruction):
        return False
    if owner.name in ("foreach", "foreach_nd"):
        return True
    if owner.name == "for":
        step = owner.optional("step")
        return step is None or affine(step, Symbols()) == "1"
    return False


def _exact_condition(cond: Value, negated: bool) -> bool:
    """True when ``bounds.facts`` captures ``cond`` (or its negation) exactly."""
    inst = cond.owner
    if not isinstance(inst, Instruction):
        return False
    if inst.name == "cmp" and inst.attr("type").is_int and not inst.attr("type").is_unsigned:
        how = inst.attr_of("cond", CmpCond)
        return how is not (CmpCond.EQ if negated else CmpCond.NE)
    if inst.name == "arith" and inst.attr("type").is_bool:
        op = inst.attr_of("op", ArithOp)
        if op is ArithOp.NOT:
            return _exact_condition(inst.single("a"), not negated)
        if (op is ArithOp.AND and not negated) or (op is ArithOp.OR and negated):
            return _exact_condition(inst.single("a"), negated) and \
                _exact_condition(inst.operand("b"), negated)
    return False


def _operand(inst: Instruction, name: str) -> str:
    return f"operand {name} (%{inst.operand(name).name})"


def _what(inst: Instruction) -> str:
    loc = inst.loc
    where = f" at {loc.file}:{loc.line}:{loc.col}" if getattr(loc, "line", 0) else ""
    return f"{inst.name}{where}"


def _view_operand(value: Value) -> Value:
    """The operand of the view instruction that defines ``value``."""
    inst = value.owner
    assert isinstance(inst, Instruction), f"{value!r} is not the result of a view"
    return inst.single("operand")


def _param_names(s: isl.Set) -> list[str]:
    return space.param_names(s)


def _union(a: isl.Set, b: isl.Set) -> isl.Set:
    a = a.align_params(b.get_space())
    return a.union(b.align_params(a.get_space()))


def _intersect(a: isl.Set, b: isl.Set) -> isl.Set:
    a = a.align_params(b.get_space())
    return a.intersect(b.align_params(a.get_space()))


def _project(s: isl.Set, names: list[str]) -> isl.Set:
    for name in names:
        i = s.find_dim_by_name(isl.dim_type.param, name)
        if i >= 0:
            s = s.project_out(isl.dim_type.param, i, 1)
    return s


def _forms(bad: isl.Set,
           quantity: Callable[[str], Quantity]) -> tuple[tuple[Form, ...], ...] | None:
    """``bad`` as a disjunction of conjunctions of linear forms (None with divisions)."""
    bad = bad.coalesce()
    names = _param_names(bad)
    out = []
    for bset in bad.get_basic_sets():
        if bset.dim(isl.dim_type.div):
            return None
        forms = []
        for c in bset.get_constraints():
            terms = tuple((quantity(n), int(c.get_coefficient_val(
                isl.dim_type.param, i).to_python())) for i, n in enumerate(names)
                if not c.get_coefficient_val(isl.dim_type.param, i).is_zero())
            forms.append(Form(terms, int(c.get_constant_val().to_python()),
                              c.is_equality()))
        out.append(tuple(forms))
    return tuple(out)


def group_count(func: Function) -> GroupCount:
    """The :class:`GroupCount` of ``func``."""
    args = {a: i for i, a in enumerate(func.args)}
    gids = {i.result for i in func.walk() if i.name == "group_id"}
    uses = bool(gids) or any(i.name == "group_size" for i in func.walk())
    modes: list[Quantity] = []
    for inst in func.walk():
        for value, mode in _indexed_modes(inst, gids):
            found = _argument_mode(value, mode, args)
            if found is not None and found not in modes:
                modes.append(found)
    return GroupCount(tuple(modes), uses)


def _indexed_modes(inst: Instruction, gids: set[Value]) -> list[tuple[Value, int]]:
    """The (operand, mode) pairs ``inst`` indexes with a ``group_id`` value (mode -1: a
    group's member index)."""
    if inst.name in ("load", "store"):
        operand = inst.single("operand")
        if isinstance(operand.type, GroupType):
            index = inst.variadic("indices")[0]
            return [(operand, -1)] if index in gids else []
        return [(operand, d) for d, index in enumerate(inst.variadic("indices"))
                if index in gids]
    if inst.name != "subview":
        return []
    found = []
    dynamic = iter(inst.variadic("dynamic"))
    for d, sl in enumerate(inst.attr("slices")):
        if sl.full:
            continue
        offset = next(dynamic) if sl.offset is None else None
        if sl.size is None:
            next(dynamic)
        if sl.size == 0 and offset in gids:
            found.append((inst.single("operand"), d))
    return found


def _argument_mode(value: Value, mode: int, args: dict[Value, int]) -> Quantity | None:
    """The argument mode (or member count) that mode ``mode`` of ``value`` is, through
    chains of subviews that keep the mode whole; None when it is not one."""
    while value not in args:
        inst = value.owner
        if not isinstance(inst, Instruction) or inst.name != "subview" or mode < 0:
            return None
        kept = [d for d, sl in enumerate(inst.attr("slices")) if sl.full or sl.size != 0]
        d = kept[mode]
        if not inst.attr("slices")[d].full:
            return None
        value, mode = inst.single("operand"), d
    if mode < 0:
        return Quantity("members", args[value])
    return Quantity("size", args[value], mode) if isinstance(value.type, MemRefType) \
        else None
