"""Every program that verifies builds: each instruction of the op table with each scalar
type (and every modifier) is verified on its own; the ones the verifier accepts are
compiled together, one program per type, on the default device (build only).
"""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, given, settings

import backend_opencl
import tensorlang
from tensorlang import CompileError
from tensorlang.ir.ops import MATH_FNS, OPS, ArithOp, CmpCond
from tensorlang.ir.types import SCALAR_TYPES, ScalarType
from tests.tensorlang.strategies import programs

TYPES = sorted(SCALAR_TYPES)
ARGS = "%a: {t}, %b: {t}, %p: i1, %n: index, %v: memref<{t}x?>"
BLAS_ARGS = ("%alpha: {t}, %beta: {t}, %A: memref<{t}x8x8>, %B: memref<{t}x8x8>, "
             "%C: memref<{t}x8x8>, %x: memref<{t}x8>, %y: memref<{t}x8>, %s: memref<{t}>")
_LOCAL = re.compile(r"%(?![abpnv]\b)[a-z]\b")  # every value but the arguments
COVERED = {"alloca", "axpby", "foreach", "foreach_nd", "gemm", "gemv", "ger",
           "hadamard_product", "parallel", "sum", "arith", "bitcast", "complex", "math",
           "select", "barrier", "cast", "cmp", "constant", "expand", "fuse", "group_id",
           "group_size", "if", "load", "num_subgroups", "for", "size", "subgroup_size",
           "subview", "store", "yield", "lifetime_stop", "subgroup_id", "subgroup_local_id"}


def _literal(t: ScalarType) -> str:
    if t.is_bool:
        return "true"
    if t.is_complex:
        return "[1.0, 2.0]"
    return "1.5" if t.is_float else "3"


def scalar_snippets(t: ScalarType) -> list[str]:
    """One instruction (or a small region) per op-table entry for operands of type ``t``."""
    n = t.name
    out = [f"%r = arith.{op.value} %a : {n}" if op.unary else
           f"%r = arith.{op.value} %a, %b : {n}" for op in ArithOp]
    out += [f"%r = cmp.{c.value} %a, %b : {n}" for c in CmpCond]
    out += [f"%r = math.{fn.name} %a : {n}" if fn.arity == 1 else
            f"%r = math.{fn.name} %a, %b : {n}" for fn in MATH_FNS.values()]
    out += [f"%r = cast %a : {n} -> {u}" for u in TYPES]
    out += [f"%r = bitcast %a : {n} -> {u}" for u, ut in SCALAR_TYPES.items()
            if ut.bits == t.bits]
    out += [f"%r = complex %a, %b : {c}" for c in ("c32", "c64")]
    out += [f"%r = select %p, %a, %b : {n}", f"%r = constant {_literal(t)} -> {n}",
            f"%i = constant 0 : index\n  %r = load %v[%i] : memref<{n}x?>\n"
            f"  store %r, %v[%i] : memref<{n}x?>",
            f"%r = if %p -> ({n}) {{\n    yield %a : {n}\n  }} else {{\n    yield %b : {n}\n  }}",
            f"%r = for %k = 0, %n init(%x = %a) -> ({n}) {{\n    yield %x : {n}\n  }}",
            f"foreach %i = 0, %n {{\n    %e = load %v[%i] : memref<{n}x?>\n"
            f"    store %e, %v[%i] : memref<{n}x?>\n  }}",
            f"%z = constant 0 : index\n  foreach (%i, %j) = (%z, %z), (%n, %n) {{\n"
            f"    %e = load %v[%i] : memref<{n}x?>\n    store %e, %v[%j] : memref<{n}x?>\n  }}",
            f"parallel {{\n    %s = subgroup_id\n    %l = subgroup_local_id\n"
            f"    %e = load %v[0] : memref<{n}x?>\n  }}",
            f"%m = alloca -> memref<{n}x16,local>\n  barrier.global.local\n"
            f"  lifetime_stop %m",
            "%g = group_id\n  %h = group_size\n  %q = num_subgroups\n  %w = subgroup_size",
            f"%s = size %v[0] : memref<{n}x?>\n  %w = subview %v[2:4] : memref<{n}x?>\n"
            f"  %e = expand %v[0 -> 2 x %s] : memref<{n}x?>\n"
            f"  %f = fuse %e[0, 1] : memref<{n}x2x?>"]
    return out


def blas_snippets(t: ScalarType) -> list[str]:
    """Every BLAS-like instruction with every modifier, alpha and beta as arguments."""
    n = t.name
    m, v = f"memref<{n}x8x8>", f"memref<{n}x8>"
    out = []
    # atomic updates have three modes: store (beta = 0), add (beta = 1) and axpby
    for atomic, betas in (("", ("%beta",)), (".atomic", ("%beta", "0", "1"))):
        for beta in betas:
            ab = f"%alpha, {{}}, {beta}"
            for ta in "nt":
                out.append(f"axpby.{ta}{atomic} {ab.format('%A')}, %B : {n}, {m}, {n}, {m}")
                out.append(f"gemv.{ta}{atomic} {ab.format('%A, %x')}, %y "
                           f": {n}, {m}, {v}, {n}, {v}")
                out.append(f"sum.{ta}{atomic} {ab.format('%A')}, %x : {n}, {m}, {n}, {v}")
                for tb in "nt":
                    out.append(f"gemm.{ta}.{tb}{atomic} {ab.format('%A, %B')}, %C "
                               f": {n}, {m}, {m}, {n}, {m}")
            out.append(f"axpby.n{atomic} {ab.format('%x')}, %y : {n}, {v}, {n}, {v}")
            out.append(f"sum.n{atomic} {ab.format('%x')}, %s : {n}, {v}, {n}, memref<{n}>")
            out.append(f"ger{atomic} {ab.format('%x, %y')}, %C : {n}, {v}, {v}, {n}, {m}")
            out.append(f"hadamard_product{atomic} {ab.format('%x, %y')}, %y "
                       f": {n}, {v}, {v}, {n}, {v}")
            out.append(f"hadamard_product{atomic} {ab.format('%x, %x')}, %x "
                       f": {n}, {v}, {v}, {n}, {v}")
    return out


def _function(name: str, args: str, body: list[str]) -> str:
    return f"func @{name}({args}) {{\n  " + "\n  ".join(body) + "\n}\n"


def _verified(name: str, args: str, snippets: list[str]) -> list[str]:
    """The snippets the verifier accepts on their own."""
    ok = []
    for snippet in snippets:
        try:
            tensorlang.parse(_function(name, args, [snippet]), "op_table.tl")
        except CompileError:
            continue
        ok.append(snippet)
    return ok


def _rename(snippet: str, k: int) -> str:
    """Give a snippet's own values a unique suffix so snippets can share one function."""
    return _LOCAL.sub(lambda m: f"{m.group()}_{k}", snippet)


def program(t: ScalarType) -> tuple[str, int]:
    """One program with a scalar-instruction kernel and a BLAS kernel for type ``t``."""
    args, blas_args = ARGS.format(t=t.name), BLAS_ARGS.format(t=t.name)
    scalars = _verified("s", args, scalar_snippets(t))
    blas = _verified("b", blas_args, blas_snippets(t))
    parts = []
    if scalars:
        parts.append(_function(f"scalars_{t.name}", args,
                               [_rename(s, k) for k, s in enumerate(scalars)]))
    if blas:
        parts.append(_function(f"blas_{t.name}", blas_args, blas))
    return "\n".join(parts), len(scalars) + len(blas)


def test_snippets_cover_the_op_table() -> None:
    """A new instruction in the op table needs a snippet here."""
    assert set(OPS) <= COVERED


@pytest.mark.parametrize("name", TYPES)
def test_every_verified_instruction_builds(name: str) -> None:
    """The program of every verified instruction of type ``name`` builds."""
    text, count = program(SCALAR_TYPES[name])
    assert count > 0
    module = backend_opencl.compile(text)
    assert module.kernels


@pytest.mark.parametrize("head", ["for %i{k} = 0, %n", "if %p", "parallel_then_if"])
def test_deepest_nesting_the_parser_accepts_builds(head: str) -> None:
    """Regions nested as deep as the parser allows still compile (no RecursionError)."""
    from tensorlang.syntax.builder import MAX_DEPTH

    depth = MAX_DEPTH - 1
    body = ("%z = constant 0 : index\n%x = load %v[%z] : memref<f32x?>\n"
            "store %x, %v[%z] : memref<f32x?>\n")
    text = ("func @deep(%n: index, %p: i1, %v: memref<f32x?>) {\n"
            + "".join(_head(head, k) + " {\n" for k in range(depth)) + body
            + "}\n" * depth + "}\n")
    assert backend_opencl.compile(text).kernels


def _head(head: str, k: int) -> str:
    if head == "parallel_then_if":  # an SPMD region holding if regions
        return "parallel" if k == 0 else "if %p"
    return head.format(k=k)


@settings(max_examples=40, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(programs())
def test_random_programs_that_verify_build(program: tensorlang.Program) -> None:
    """A random program either fails verification or builds (a static out-of-bounds
    access is a diagnostic of the check-bounds pass, also a CompileError)."""
    text = str(program)
    try:
        tensorlang.parse(text, "random.tl")
    except CompileError:
        return
    try:
        backend_opencl.compile(text)
    except CompileError as err:
        assert "out of bounds" in str(err), str(err)
