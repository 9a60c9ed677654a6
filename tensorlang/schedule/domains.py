"""Iteration domains and access relations of collectives, foreach loops, loads and stores.

Every statement is a parametric isl set (dynamic sizes and opaque index values are
parameters) plus one access relation per memref operand, from the domain into the
operand's root (see :func:`.affine.view`)::

    gemm      S[i, j, k] : 0 <= i < M, 0 <= j < N, 0 <= k < K   A[i,k] B[k,j] C[i,j]
    gemv      S[i, k]                                           A[i,k] B[k]   C[i]
    ger       S[i, j]                                           A[i]   B[j]   C[i,j]
    axpby     S[] / S[i] / S[i, j]                              A      B
    sum       S[k] / S[i, k]                                    A      B[] / B[i]
    hadamard  S[i]                                              A[i]   B[i]   C[i]
    foreach   S[i] : from <= i < to       the loads and stores of its body
    load      S[]                          store  S[]

``beta = 0`` (a constant) does not read the output.
"""

from __future__ import annotations

from dataclasses import dataclass

import islpy as isl

from tensorlang.ir.core import Instruction, Value
from tensorlang.ir.ops import Transpose
from tensorlang.ir.types import MemRefType
from tensorlang.schedule import space
from tensorlang.schedule.affine import Symbols, View, affine, view


@dataclass(frozen=True)
class Access:
    """One memory access: root, read or write, root coordinates (None: anywhere)."""

    root: Value
    write: bool
    index: tuple[str, ...] | None
    root_rank: int


@dataclass(frozen=True)
class Statement:
    """An instruction's iteration domain and accesses."""

    name: str
    dims: tuple[str, ...]
    constraints: tuple[str, ...]
    accesses: tuple[Access, ...]
    local: frozenset[str] = frozenset()
    """Parameters that vary inside the statement (projected out of its footprints)."""
    box: tuple[tuple[str, str], ...] = ()
    """foreach: the (lower, upper) bound of each dimension, affine texts (``lo <= i < hi``)."""

    def domain(self) -> isl.Set:
        """The iteration domain ``S[dims] : constraints``."""
        return space.set_(f"S[{', '.join(self.dims)}]", self.constraints)

    def access_map(self, acc: Access, memory: str) -> isl.Map:
        """``S[dims] -> memory[root coordinates]`` restricted to the domain."""
        if acc.index is None:  # anywhere in the root
            dims = ", ".join(f"z{d}" for d in range(acc.root_rank))
            anywhere = isl.Set(f"{{ {memory}[{dims}] }}")
            return isl.Map.from_domain_and_range(self.domain(), anywhere)
        text = f"S[{', '.join(self.dims)}] -> {memory}[{', '.join(acc.index)}]"
        return space.map_(text, self.domain())


def statement(inst: Instruction, syms: Symbols) -> Statement | None:
    """The :class:`Statement` of ``inst``, or None when it touches no memory."""
    if inst.name in ("gemm", "gemv", "ger"):
        return _contraction(inst, syms)
    if inst.name in ("axpby", "sum", "hadamard_product"):
        return _elementwise(inst, syms)
    if inst.name in ("foreach", "foreach_nd"):
        return _foreach(inst, syms)
    if inst.name in ("load", "store") and isinstance(inst.single("operand").type, MemRefType):
        acc = _element_access(inst, syms)
        return Statement(inst.name, (), (), (acc,))
    return None


def _ranges(dims: tuple[str, ...], sizes: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(f"0 <= {d} < {s}" for d, s in zip(dims, sizes, strict=True))


def _operand(v: View, write: bool, idx: tuple[str, ...]) -> Access:
    return Access(v.root, write, v.at(idx), v.root_rank)


def _op_index(trans: Transpose | None, rows: str, cols: str) -> tuple[str, str]:
    return (cols, rows) if trans is Transpose.T else (rows, cols)


def _output(inst: Instruction, v: View, idx: tuple[str, ...]) -> list[Access]:
    beta = inst.single("beta").owner
    zero = isinstance(beta, Instruction) and beta.name == "constant" and \
        complex(beta.attr("value")) == 0
    accs = [_operand(v, True, idx)]
    return accs if zero else [_operand(v, False, idx), *accs]


def _contraction(inst: Instruction, syms: Symbols) -> Statement:
    A, B, C = (view(inst.operand(x), syms) for x in "ABC")
    trans_a = inst.attrs.get("trans_a")
    dims: tuple[str, ...]
    sizes: tuple[str, ...]
    a_idx: tuple[str, ...]
    b_idx: tuple[str, ...]
    c_idx: tuple[str, ...]
    if inst.name == "gemm":
        dims = ("i", "j", "k")
        k = A.sizes[1] if trans_a is not Transpose.T else A.sizes[0]
        sizes = (C.sizes[0], C.sizes[1], k)
        a_idx = _op_index(trans_a, "i", "k")
        b_idx = _op_index(inst.attrs.get("trans_b"), "k", "j")
        c_idx = ("i", "j")
    elif inst.name == "gemv":
        dims = ("i", "k")
        sizes = (C.sizes[0], A.sizes[1] if trans_a is not Transpose.T else A.sizes[0])
        a_idx, b_idx, c_idx = _op_index(trans_a, "i", "k"), ("k",), ("i",)
    else:
        dims, sizes = ("i", "j"), (C.sizes[0], C.sizes[1])
        a_idx, b_idx, c_idx = ("i",), ("j",), ("i", "j")
    accesses = [_operand(A, False, a_idx), _operand(B, False, b_idx), *_output(inst, C, c_idx)]
    return Statement(inst.name, dims, _ranges(dims, sizes), tuple(accesses))


def _elementwise(inst: Instruction, syms: Symbols) -> Statement:
    out = view(inst.operand(inst.op.output), syms)
    A = view(inst.single("A"), syms)
    trans_a = inst.attrs.get("trans_a")
    dims: tuple[str, ...]
    a_idx: tuple[str, ...]
    if inst.name == "sum":
        dims = ("k",) if A.rank == 1 else ("i", "k")
        a_idx = ("k",) if A.rank == 1 else _op_index(trans_a, "i", "k")
        sizes = A.sizes if A.rank == 1 else (out.sizes[0], A.sizes[1 if trans_a is not
                                                                  Transpose.T else 0])
        accs = [_operand(A, False, a_idx), *_output(inst, out, dims[:-1])]
        return Statement(inst.name, dims, _ranges(dims, sizes), tuple(accs))
    dims = ("i", "j")[:out.rank]
    a_idx = _op_index(trans_a, "i", "j") if A.rank == 2 else dims
    accs = [_operand(A, False, a_idx)]
    if inst.name == "hadamard_product":
        accs.append(_operand(view(inst.single("B"), syms), False, dims))
    accs += _output(inst, out, dims)
    return Statement(inst.name, dims, _ranges(dims, out.sizes), tuple(accs))


def _foreach(inst: Instruction, syms: Symbols) -> Statement:
    """``foreach`` (one variable) or ``foreach_nd`` (one dimension per variable)."""
    body = inst.regions[0]
    los, his = inst.operand("from"), inst.operand("to")
    los, his = (los, his) if isinstance(los, list) else ([los], [his])
    dims = ("i",) if len(los) == 1 else tuple(f"i{d}" for d in range(len(los)))
    box = tuple((affine(lo, syms), affine(hi, syms)) for lo, hi in zip(los, his, strict=True))
    bounds = tuple(f"{lo} <= {d} < {hi}" for d, (lo, hi) in zip(dims, box, strict=True))
    syms.bound.update(zip(body.args, dims, strict=False))
    try:
        accs = [_element_access(nested, syms) for nested in body.walk()
                if nested.name in ("load", "store")
                and isinstance(nested.single("operand").type, MemRefType)]
    finally:
        for arg in body.args:
            syms.bound.pop(arg, None)
    return Statement("foreach", dims, bounds, tuple(accs), defined_inside(inst, syms), box)


def _element_access(inst: Instruction, syms: Symbols) -> Access:
    v = view(inst.single("operand"), syms)
    idx = tuple(affine(x, syms) for x in inst.variadic("indices"))
    return _operand(v, inst.name == "store", idx)


def defined_inside(inst: Instruction, syms: Symbols) -> frozenset[str]:
    """Parameters standing for values defined inside ``inst`` (they vary per iteration)."""
    values: list[Value] = []
    for nested in inst.walk():
        values += [arg for region in nested.regions for arg in region.args]
        values += nested.results if nested is not inst else []
    return frozenset(syms.names[v] for v in values if v in syms.names)
