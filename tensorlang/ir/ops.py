"""The one declarative table of tensor-language instructions.

Each :class:`OpDef` names an instruction's operands (single, optional or variadic),
attributes, results, regions and execution kind (collective, SPMD or mixed).
The parser builds instructions from it, the printer and verifier dispatch on it,
and ``docs/language.md``'s instruction index is generated from it.

Dynamic pieces of static lists (the ``?`` entries of a subview's offsets/sizes or an
expand's shape) are ``None`` in the attribute and taken, in order, from the op's
variadic ``dynamic`` operand, as in MLIR's static/dynamic operand split.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import TypedDict

from tensorlang.ir.types import Dim
from tensorlang.shared import Shared


class Exec(Enum):
    """Where an instruction may appear (see the reference's execution model)."""

    COLLECTIVE = "collective"
    SPMD = "spmd"
    MIXED = "mixed"


class RegionKind(Enum):
    """The kind of a region an instruction opens."""

    SPMD = "spmd"
    INHERIT = "inherit"  # a mixed region: the kind of the enclosing region


class Transpose(Enum):
    """``.n`` or ``.t`` on a BLAS operand."""

    N = "n"
    T = "t"


class ArithOp(Enum):
    """The ``arith.<op>`` operations; ``unary`` tells the two-operand ones apart."""

    ADD = "add"
    SUB = "sub"
    MUL = "mul"
    DIV = "div"
    REM = "rem"
    SHL = "shl"
    SHR = "shr"
    AND = "and"
    OR = "or"
    XOR = "xor"
    NEG = "neg"
    NOT = "not"

    @property
    def unary(self) -> bool:
        """True for neg and not."""
        return self in (ArithOp.NEG, ArithOp.NOT)


class CmpCond(Enum):
    """The ``cmp.<cond>`` conditions."""

    EQ = "eq"
    NE = "ne"
    GT = "gt"
    GE = "ge"
    LT = "lt"
    LE = "le"


@dataclass(frozen=True)
class MathFn(Shared):
    """One ``math.<fn>`` function: its arity, the scalar kinds it takes and its result.

    ``kinds`` holds ``i1``, ``int`` (signed and unsigned integers, not i1), ``float``
    (f16, bf16, f32, f64) and ``complex``; ``result`` is ``same`` (the operand type), ``real`` (the
    part type of a complex operand, the operand type otherwise) or ``i1``.
    """

    name: str
    arity: int
    kinds: frozenset[str]
    result: str = "same"


def _fns(names: str, arity: int, kinds: str, result: str = "same") -> list[MathFn]:
    return [MathFn(n, arity, frozenset(kinds.split()), result) for n in names.split()]


MATH_FNS: dict[str, MathFn] = {fn.name: fn for fn in (
    *_fns("abs", 1, "int float complex", "real"),
    *_fns("sqrt rsqrt cbrt exp log log1p expm1 sin cos tan tanh logistic", 1,
          "float complex"),
    *_fns("asin acos atan sinh cosh asinh acosh atanh", 1, "float complex"),
    *_fns("exp2 log2 log10 erf erfc lgamma erfinv digamma bessel_i1e floor ceil round "
          "roundeven trunc", 1, "float"),
    *_fns("sign", 1, "int float complex"),
    *_fns("isfinite", 1, "float", "i1"),
    *_fns("popcount clz", 1, "int"),
    *_fns("real imag", 1, "float complex", "real"),
    *_fns("conj", 1, "complex"),
    *_fns("pow", 2, "int float complex"),
    *_fns("min max", 2, "i1 int float complex"),
    *_fns("atan2", 2, "float complex"),
    *_fns("copysign hypot nextafter", 2, "float"),
)}
"""Every ``math.<fn>`` function (docs/language.md, "Math functions")."""


@dataclass(frozen=True)
class Slice(Shared):
    """One mode of a subview: ``offset``, ``offset:size`` or ``:`` (the whole mode).

    ``size == 0`` is an index-only mode (rank reduction); ``full`` means ``:``.
    ``None`` entries are dynamic and come from the op's ``dynamic`` operands.
    A full slice is ``Slice(0, 0, full=True)``: it keeps the whole mode (size and
    stride, static or dynamic) and takes no dynamic operands; check ``full`` before
    reading ``size == 0`` as a rank reduction.
    """

    offset: Dim
    size: Dim = 0
    full: bool = False


class Arity(Enum):
    """How many values an operand slot holds."""

    ONE = "one"
    OPTIONAL = "optional"
    VARIADIC = "variadic"


@dataclass(frozen=True)
class OperandDef(Shared):
    """A named operand slot."""

    name: str
    arity: Arity = Arity.ONE


@dataclass(frozen=True)
class RegionDef(Shared):
    """A named region; ``optional`` regions may be absent (the else of an if)."""

    name: str
    kind: RegionKind
    optional: bool = False


@dataclass(frozen=True)
class OpDef(Shared):
    """One instruction of the language.

    :arg results: the number of results, or -1 for a variable number.
    :arg attrs: attribute names with a one-line meaning each.
    :arg terminator: the instruction ends its region (yield).
    :arg blas: a collective BLAS-like update ``alpha * f(...) + beta * out`` (with .atomic).

    Traits (what passes and the code generator may assume; instructions nested in an
    op's regions have their own):

    :arg pure: no effect besides its results (dead-code elimination drops it unused).
    :arg view: its memref result views the memory of operand ``operand`` (a group's
        member, for ``load``).
    :arg reads: the operands whose memory it reads (a group's member table excepted).
    :arg writes: the operands whose memory it writes; a BLAS update's output.
    :arg allocates: it allocates memory (``alloca``).
    :arg hoistable: a scalar computation or load without side effects that may move out
        of an element loop when none of its operands varies there.
    """

    name: str
    exec: Exec
    summary: str
    operands: tuple[OperandDef, ...] = ()
    attrs: tuple[tuple[str, str], ...] = ()
    results: int = 0
    regions: tuple[RegionDef, ...] = ()
    terminator: bool = False
    blas: bool = False
    pure: bool = False
    view: bool = False
    reads: tuple[str, ...] = ()
    writes: tuple[str, ...] = ()
    allocates: bool = False
    hoistable: bool = False

    @property
    def output(self) -> str:
        """The operand a BLAS update writes (``C`` or ``B``)."""
        assert self.blas and len(self.writes) == 1, self.name
        return self.writes[0]

    @property
    def touches_memory(self) -> bool:
        """Whether it reads, writes or allocates memory."""
        return bool(self.reads or self.writes or self.allocates)

    @property
    def traits(self) -> tuple[str, ...]:
        """The names of its traits, for documents."""
        flags = ("pure", "view", "allocates", "hoistable")
        names = [f for f in flags if getattr(self, f)]
        names += [f"reads {', '.join(self.reads)}"] if self.reads else []
        names += [f"writes {', '.join(self.writes)}"] if self.writes else []
        return tuple(names)

    @property
    def is_collective(self) -> bool:
        """Only allowed in collective regions."""
        return self.exec is Exec.COLLECTIVE

    @property
    def is_spmd(self) -> bool:
        """Only allowed in SPMD regions."""
        return self.exec is Exec.SPMD


def _ops(*names: str, arity: Arity = Arity.ONE) -> tuple[OperandDef, ...]:
    return tuple(OperandDef(n, arity) for n in names)


_ATOMIC = ("atomic", "bool: update the output atomically")
_TRANS_A = ("trans_a", "Transpose: op(A)")
_BLAS5 = _ops("alpha", "A", "B", "beta", "C")
_BLAS4 = _ops("alpha", "A", "beta", "B")
class _Traits(TypedDict, total=False):
    """Keyword arguments of :class:`OpDef` shared by several entries."""

    results: int
    blas: bool
    pure: bool
    view: bool
    reads: tuple[str, ...]
    writes: tuple[str, ...]
    hoistable: bool


_SCALAR: _Traits = {"results": 1, "pure": True, "hoistable": True}
"""A scalar computation: one result, no effect, movable out of loops."""
_QUERY: _Traits = {"results": 1, "pure": True}
"""A query of the launch or a memref: one result, no effect."""
_VIEW: _Traits = {"results": 1, "pure": True, "view": True}
_UPDATE5: _Traits = {"blas": True, "reads": ("A", "B", "C"), "writes": ("C",)}
_UPDATE4: _Traits = {"blas": True, "reads": ("A", "B"), "writes": ("B",)}

OPS: dict[str, OpDef] = {
    op.name: op
    for op in (
        # Collective instructions.
        OpDef("alloca", Exec.COLLECTIVE, "Allocate local memory for the enclosing region.",
              attrs=(("type", "MemRefType: the local memref allocated"),), results=1,
              pure=True, allocates=True),
        OpDef("axpby", Exec.COLLECTIVE, "B := alpha op(A) + beta B.", _BLAS4,
              (_TRANS_A, _ATOMIC), **_UPDATE4),
        OpDef("foreach", Exec.COLLECTIVE,
              "Loop over [from, to) without sequence guarantee; the body is SPMD.",
              _ops("from", "to"), (("loop_type", "ScalarType: type of the loop variable"),),
              regions=(RegionDef("body", RegionKind.SPMD),)),
        OpDef("foreach_nd", Exec.COLLECTIVE,
              "foreach (%i, %j, ...) = (from...), (to...): a multi-dimensional foreach over "
              "the box [from, to); the body is SPMD.", _ops("from", "to", arity=Arity.VARIADIC),
              (("loop_type", "ScalarType: type of the loop variables"),),
              regions=(RegionDef("body", RegionKind.SPMD),)),
        OpDef("gemm", Exec.COLLECTIVE, "C := alpha op(A) op(B) + beta C.", _BLAS5,
              (_TRANS_A, ("trans_b", "Transpose: op(B)"), _ATOMIC), **_UPDATE5),
        OpDef("gemv", Exec.COLLECTIVE, "c := alpha op(A) b + beta c.", _BLAS5,
              (_TRANS_A, _ATOMIC), **_UPDATE5),
        OpDef("ger", Exec.COLLECTIVE, "C := alpha a b^T + beta C.", _BLAS5, (_ATOMIC,),
              **_UPDATE5),
        OpDef("hadamard_product", Exec.COLLECTIVE, "c_i := alpha a_i b_i + beta c_i.", _BLAS5,
              (_ATOMIC,), **_UPDATE5),
        OpDef("parallel", Exec.COLLECTIVE, "Open an SPMD region.",
              regions=(RegionDef("body", RegionKind.SPMD),)),
        OpDef("sum", Exec.COLLECTIVE, "B := alpha op(A) 1 + beta B.", _BLAS4,
              (_TRANS_A, _ATOMIC), **_UPDATE4),
        # Mixed instructions.
        OpDef("arith", Exec.MIXED, "Binary or unary arithmetic on scalars.",
              (OperandDef("a"), OperandDef("b", Arity.OPTIONAL)),
              (("op", "ArithOp"), ("type", "ScalarType: operand and result type")), **_SCALAR),
        OpDef("bitcast", Exec.MIXED, "Reinterpret the bits of a scalar as another type of the "
              "same width.", _ops("a"), (("from_type", "ScalarType"), ("to_type", "ScalarType")),
              **_SCALAR),
        OpDef("complex", Exec.MIXED, "Build a complex number from its real and imaginary parts.",
              _ops("re", "im"), (("type", "ScalarType: the complex result type"),), **_SCALAR),
        OpDef("math", Exec.MIXED, "An elementary function of one or two scalars (math.<fn>).",
              (OperandDef("a"), OperandDef("b", Arity.OPTIONAL)),
              (("fn", "str: a key of MATH_FNS"), ("type", "ScalarType: operand type")),
              **_SCALAR),
        OpDef("select", Exec.MIXED, "a if cond else b (both evaluated).", _ops("cond", "a", "b"),
              (("type", "ScalarType: the type of a, b and the result"),), **_SCALAR),
        OpDef("barrier", Exec.MIXED, "Control barrier with optional memory fences.",
              attrs=(("fence_global", "bool: .global"), ("fence_local", "bool: .local"))),
        OpDef("cast", Exec.MIXED, "Convert a scalar to another scalar type.", _ops("a"),
              (("from_type", "ScalarType"), ("to_type", "ScalarType")), **_SCALAR),
        OpDef("cmp", Exec.MIXED, "Compare two scalars; the result is i1.", _ops("a", "b"),
              (("cond", "CmpCond"), ("type", "ScalarType: operand type")), **_SCALAR),
        OpDef("constant", Exec.MIXED, "A scalar constant.",
              attrs=(("value", "bool | int | float | complex"), ("type", "ScalarType")),
              **_SCALAR),
        OpDef("expand", Exec.MIXED, "View one mode as several.",
              (OperandDef("operand"), OperandDef("dynamic", Arity.VARIADIC)),
              (("mode", "int"), ("shape", "tuple[Dim, ...]: None entries are dynamic"),
               ("type", "MemRefType: the operand's type")), **_VIEW),
        OpDef("fuse", Exec.MIXED, "View adjacent modes [from, to] as one.", _ops("operand"),
              (("from_mode", "int"), ("to_mode", "int"), ("type", "MemRefType: operand")),
              **_VIEW),
        OpDef("group_id", Exec.MIXED, "The work-group's id (index).", **_QUERY),
        OpDef("group_size", Exec.MIXED, "The number of work-groups (index).", **_QUERY),
        OpDef("if", Exec.MIXED, "Conditional with optional results.", _ops("cond"),
              (("result_types", "tuple[ScalarType, ...]"),), results=-1,
              regions=(RegionDef("then", RegionKind.INHERIT),
                       RegionDef("else", RegionKind.INHERIT, optional=True))),
        OpDef("load", Exec.MIXED, "Load an element of a memref, or a memref of a group.",
              (OperandDef("operand"), OperandDef("indices", Arity.VARIADIC)),
              (("type", "MemRefType | GroupType: operand"),), results=1, pure=True, view=True,
              reads=("operand",), hoistable=True),
        OpDef("num_subgroups", Exec.MIXED, "The number of subgroups (i32).", **_QUERY),
        OpDef("for", Exec.MIXED,
              "Sequential loop over [from, to) with optional step and loop-carried values.",
              (OperandDef("from"), OperandDef("to"), OperandDef("step", Arity.OPTIONAL),
               OperandDef("init", Arity.VARIADIC)),
              (("loop_type", "ScalarType: type of the loop variable"),), results=-1,
              regions=(RegionDef("body", RegionKind.INHERIT),)),
        OpDef("size", Exec.MIXED, "The size of one mode (index).", _ops("operand"),
              (("mode", "int"), ("type", "MemRefType: operand")), **_SCALAR),
        OpDef("subgroup_size", Exec.MIXED, "The subgroup size (i32).", **_QUERY),
        OpDef("subview", Exec.MIXED, "A view on a block of a memref.",
              (OperandDef("operand"), OperandDef("dynamic", Arity.VARIADIC)),
              (("slices", "tuple[Slice, ...]"), ("type", "MemRefType: operand")), **_VIEW),
        OpDef("store", Exec.MIXED, "Store a scalar into a memref.",
              (OperandDef("value"), OperandDef("operand"), OperandDef("indices", Arity.VARIADIC)),
              (("type", "MemRefType: operand"),), writes=("operand",)),
        OpDef("yield", Exec.MIXED, "Return values from an if or for region.",
              (OperandDef("values", Arity.VARIADIC),),
              (("types", "tuple[ScalarType, ...]"),), terminator=True),
        OpDef("lifetime_stop", Exec.MIXED, "End the lifetime of an alloca early.",
              _ops("operand")),
        # SPMD instructions.
        OpDef("subgroup_id", Exec.SPMD, "The subgroup's id (i32).", **_QUERY),
        OpDef("subgroup_local_id", Exec.SPMD, "The work-item's id in its subgroup (i32).",
              **_QUERY),
    )
}

ALIASES: dict[str, str] = {"hadamard": "hadamard_product"}
"""Accepted alternative keywords (``hadamard`` is the spelling of tinytc)."""
