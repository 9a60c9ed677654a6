"""Verifier rules of alloca, load, store, size, subview, expand, fuse and lifetime_stop."""

from __future__ import annotations

import pytest

import tensorlang
from tensorlang.diagnostics import CompileError, Loc
from tensorlang.ir.core import Function, Instruction, Program, Region, Value
from tensorlang.ir.ops import OPS, Slice
from tensorlang.ir.types import F32, F64, INDEX, AddressSpace, GroupType, MemRefType, Type
from tests.tensorlang.verify_helpers import error_of, opcode_col, wrap

HEAD = ("func @k(%M: memref<f32x16x8>, %G: group<memref<f32x4>>, %V: memref<f32x16>, "
        "%n: index, %i: i32, %x: f32, %S: memref<f32x8x16,strided<1,10>>, "
        "%T: memref<f32x32x16x8>, %D: memref<f32x?x8>) {")
TM = "memref<f32x16x8>"
TT = "memref<f32x32x16x8>"


def prog(*body: str) -> str:
    """``body`` inside this file's kernel header."""
    return wrap(HEAD, *body)


BAD = [
    ("%t = alloca -> memref<f32x?,local>", "alloca (C1): the allocated type must be a memref "
     "with static shape and strides, got memref<f32x?,local>"),
    ("%t = alloca -> memref<f32x4,strided<?>,local>", "alloca (C1)"),
    ("%t = alloca -> memref<f32x4,global>", "alloca (C2): alloca returns local memory: write "
     "memref<f32x4,local>"),
    (f"%v = load %M[%n, %i] : {TM}", "load (C3): index %i has type i32, expected index"),
    ("%v = load %G[%i] : group<memref<f32x4>>", "load (C3): index %i has type i32"),
    (f"%v = load %M[%x, %n] : {TM}", "load (C3): index %x has type f32, expected index"),
    (f"store %x, %M[%n] : {TM}", "store (C2): 1 indices given but order 2 needs 2"),
    (f"store %x, %M[%n, %i] : {TM}", "store (C3): index %i has type i32, expected index"),
    (f"store %i, %M[%n, %n] : {TM}", "store (C4): the stored value %i has type i32, expected "
     "f32"),
    (f"%s = subview %M[%i:4, 0:8] : {TM}", "subview (C3): dynamic operand %i has type i32, "
     "expected index"),
    (f"%s = subview %M[0:%i, 0:8] : {TM}", "subview (C3): dynamic operand %i has type i32"),
    (f"%s = subview %M[12:8, 0:8] : {TM}", "subview (C5): mode 0: [12, 20) lies outside the "
     "mode of size 16"),
    (f"%s = subview %M[16, 0:8] : {TM}", "subview (C5): mode 0: index 16 lies outside the "
     "mode of size 16"),
    (f"%s = subview %M[0:16, 1:8] : {TM}", "subview (C5): mode 1: [1, 9) lies outside"),
    (f"%s = subview %M[16:%n, 1:7] : {TM}", "subview (C5): mode 0: offset 16 lies outside"),
    (f"%e = expand %T[1 -> %n x 3] : {TT}", "expand (C4): the static part of the expand shape "
     "?x3 (3) does not divide the size 16 of mode 1"),
    (f"%e = expand %T[1 -> %i x 2] : {TT}", "expand (C3): dynamic operand %i has type i32, "
     "expected index"),
    ("lifetime_stop %M", "lifetime_stop (C1): %M must be the result of an alloca"),
]


@pytest.mark.parametrize(("line", "message"), BAD)
def test_view_rule_violations(line: str, message: str) -> None:
    err = error_of(prog(line))
    assert (err.first.loc.line, err.first.loc.col) == (2, opcode_col(line))
    assert err.first.message.startswith(message), err.first.message


# Rules that the parser already enforces while it types results (tensorlang.ir.infer):
# the verifier re-checks them on IR built in code; here only line, column and wording.
PARSE_TIME = [
    (f"%v = load %M[%n] : {TM}", "2 indices"),
    ("%v = load %G[%n, %n] : group<memref<f32x4>>", "one index"),
    (f"%s = size %M[2] : {TM}", "out of range"),
    (f"%s = subview %M[0:4] : {TM}", "indices or slices"),
    (f"%s = subview %M[-1:4, 0:8] : {TM}", "non-negative"),
    (f"%s = subview %M[0:-4, 0:8] : {TM}", "positive"),
    (f"%e = expand %T[1 -> 4x8] : {TT}", "product"),
    (f"%e = expand %T[3 -> 2x4] : {TT}", "out of range"),
    ("%f = fuse %S[0,1] : memref<f32x8x16,strided<1,10>>", "cannot be fused"),
    (f"%f = fuse %T[1,1] : {TT}", "from < to"),
    (f"%f = fuse %T[0,3] : {TT}", "to < order"),
]


@pytest.mark.parametrize(("line", "words"), PARSE_TIME)
def test_view_errors_found_while_typing(line: str, words: str) -> None:
    err = error_of(prog(line))
    assert (err.first.loc.line, err.first.loc.col) == (2, opcode_col(line))
    assert words in err.first.message, err.first.message


@pytest.mark.parametrize(("line", "col"), [
    ("%t = alloca -> f32", 18), ("store %x, %G[%n] : group<memref<f32x4>>", 22)])
def test_view_needs_memref_type(line: str, col: int) -> None:
    err = error_of(prog(line))
    assert (err.first.loc.line, err.first.loc.col) == (2, col)
    assert "memref" in err.first.message


GOOD = [
    "%t = alloca -> memref<f32x4x4,local>",
    "%t = alloca -> memref<f32x4x4>",
    "%t = alloca -> memref<f32x4x4,strided<1,8>,local>",
    f"%v = load %M[%n, %n] : {TM}",
    "%v = load %G[%n] : group<memref<f32x4>>",
    f"store %x, %M[%n, %n] : {TM}",
    f"%s = size %M[1] : {TM}",
    f"%s = subview %M[2:4, %n] : {TM}",
    f"%s = subview %M[%n:%n, %n:0] : {TM}",
    f"%s = subview %M[0:16, 7] : {TM}",
    f"%s = subview %M[15, 0:8] : {TM}",
    f"%s = subview %M[:, 1:7] : {TM}",
    "%s = subview %D[100:4, 0:8] : memref<f32x?x8>",
    f"%e = expand %T[1 -> %n x 2] : {TT}",
    f"%e = expand %T[1 -> %n x %n] : {TT}",
    "%e = expand %D[0 -> 3 x %n] : memref<f32x?x8>",
    f"%f = fuse %T[0,2] : {TT}",
]


@pytest.mark.parametrize("line", GOOD)
def test_view_accepted(line: str) -> None:
    tensorlang.parse(prog(line), "k.tl")


def test_lifetime_stop_of_alloca() -> None:
    tensorlang.parse(prog("%t = alloca -> memref<f32x4,local>", "lifetime_stop %t"), "k.tl")


def test_lifetime_stop_notes_the_value() -> None:
    err = error_of(prog("lifetime_stop %M"))
    assert [(n.loc.line, n.message) for n in err.first.notes] == [(1, "value defined here")]


# The same rules on IR built in code, where the parser's checks do not run.
LOC = Loc("k.tl", 2, 3)
MT = MemRefType.of(F32, (16, 8))
GT = GroupType(MemRefType.of(F32, (4,)))
VM, VG, VN = Value(MT, "M", Loc("k.tl", 1, 9)), Value(GT, "G", Loc("k.tl", 1, 30)), \
    Value(INDEX, "n", Loc("k.tl", 1, 50))
VS = Value(MemRefType.of(F32, (8, 16), (1, 10)), "S", Loc("k.tl", 1, 60))


def _inst(name: str, operands: dict, attrs: dict, result: Type | None) -> Instruction:
    results = [Value(result, "r", LOC)] if result is not None else []
    return Instruction(OPS[name], operands, attrs, results, [], LOC)


@pytest.mark.parametrize(("inst", "message"), [
    (_inst("load", {"operand": VM, "indices": [VN]}, {"type": MT}, F32),
     "load (C2): 1 indices given but order 2 needs 2"),
    (_inst("load", {"operand": VG, "indices": [VN, VN]}, {"type": GT}, GT.memref),
     "load (C2): 2 indices given but a group takes one index"),
    (_inst("load", {"operand": VM, "indices": [VN, VN]}, {"type": GT}, F32),
     "load (C1): %M has type memref<f32x16x8> but the instruction says group<memref<f32x4>>"),
    (_inst("load", {"operand": VN, "indices": []}, {"type": INDEX}, F32),
     "load (C1): %n must have memref or group type, got index"),
    (_inst("load", {"operand": VM, "indices": [VN, VN]}, {"type": MT}, F64),
     "load (C4): the result has type f64, expected f32"),
    (_inst("load", {"operand": VG, "indices": [VN]}, {"type": GT}, F32),
     "load (C4): the result has type f32, expected memref<f32x4>"),
    (_inst("store", {"value": VN, "operand": VG, "indices": [VN]}, {"type": GT}, None),
     "store (C1): %G must have memref type"),
    (_inst("size", {"operand": VM}, {"mode": 0, "type": VS.type}, INDEX),
     "size (C1): %M has type memref<f32x16x8> but the instruction says"),
    (_inst("subview", {"operand": VM, "dynamic": []}, {"slices": (), "type": GT}, MT),
     "subview (C1): %M has type memref<f32x16x8> but the instruction says group"),
    (_inst("expand", {"operand": VG, "dynamic": []}, {"mode": 0, "shape": (2, 2), "type": GT},
           MT), "expand (C1): %G must have memref type, got group<memref<f32x4>>"),
    (_inst("fuse", {"operand": VS}, {"from_mode": 0, "to_mode": 1, "type": MT}, MT),
     "fuse (C1): %S has type memref<f32x8x16,strided<1,10>> but the instruction says "
     "memref<f32x16x8>"),
    (_inst("size", {"operand": VM}, {"mode": 2, "type": MT}, INDEX),
     "size (C2): mode 2 is out of range for a memref of order 2 (0 <= mode < 2)"),
    (_inst("size", {"operand": VM}, {"mode": 0, "type": MT}, F32),
     "size (C3): the result has type f32, expected index"),
    (_inst("subview", {"operand": VM, "dynamic": []}, {"slices": (Slice(0, 4),), "type": MT},
           MT), "subview (C2): 1 indices or slices given but the memref has order 2"),
    (_inst("subview", {"operand": VM, "dynamic": []},
           {"slices": (Slice(None, 4), Slice(0, 8)), "type": MT}, MT),
     "subview (C3): 0 dynamic operands for 1 dynamic offsets and sizes"),
    (_inst("subview", {"operand": VM, "dynamic": []},
           {"slices": (Slice(-1, 4), Slice(0, 8)), "type": MT}, MT),
     "subview (C4): mode 0: offset -1 must be non-negative"),
    (_inst("subview", {"operand": VM, "dynamic": []},
           {"slices": (Slice(0, -4), Slice(0, 8)), "type": MT}, MT),
     "subview (C4): mode 0: size -4 must be positive (or 0 to drop the mode)"),
    (_inst("subview", {"operand": VM, "dynamic": [VN]},
           {"slices": (Slice(0, 4), Slice(None, 0)), "type": MT}, MT),
     "subview (C6): the result has type memref<f32x16x8>, expected memref<f32x4>"),
    (_inst("expand", {"operand": VM, "dynamic": []}, {"mode": 2, "shape": (2, 4), "type": MT},
           MT), "expand (C2): mode 2 is out of range"),
    (_inst("expand", {"operand": VM, "dynamic": []}, {"mode": 0, "shape": (16,), "type": MT},
           MT), "expand (C3): the expand shape needs at least two modes, got 1"),
    (_inst("expand", {"operand": VM, "dynamic": []}, {"mode": 0, "shape": (-2, -8),
                                                        "type": MT}, MT),
     "expand (C3): the expand shape -2x-8 has a negative size"),
    (_inst("expand", {"operand": VM, "dynamic": []}, {"mode": 0, "shape": (4, 8), "type": MT},
           MT), "expand (C4): the expand shape 4x8 has 32 elements but mode 0 has size 16"),
    (_inst("expand", {"operand": VM, "dynamic": []}, {"mode": 0, "shape": (4, 4), "type": MT},
           MT), "expand (C5): the result has type memref<f32x16x8>, expected memref<f32x4x4x8>"),
    (_inst("fuse", {"operand": VM}, {"from_mode": 1, "to_mode": 1, "type": MT}, MT),
     "fuse (C2): modes [1,1] must satisfy 0 <= from < to < order = 2"),
    (_inst("fuse", {"operand": VS}, {"from_mode": 0, "to_mode": 1, "type": VS.type}, MT),
     "fuse (C3): modes 0 and 1 cannot be fused: S1 * s1 = 1 * 8 = 8 but S2 = 10"),
    (_inst("fuse", {"operand": VM}, {"from_mode": 0, "to_mode": 1, "type": MT}, MT),
     "fuse (C4): the result has type memref<f32x16x8>, expected memref<f32x128>"),
    (_inst("alloca", {}, {"type": MemRefType.of(F32, (4,), None, AddressSpace.LOCAL)}, MT),
     "alloca (C3): the result has type memref<f32x16x8>, expected memref<f32x4,local>"),
])
def test_view_rules_on_ir_built_in_code(inst: Instruction, message: str) -> None:
    func = Function("k", [VM, VG, VN, VS], Region([inst]))
    with pytest.raises(CompileError) as info:
        tensorlang.verify_program(Program([func]))
    assert (info.value.first.loc.line, info.value.first.loc.col) == (2, 3)
    assert info.value.first.message.startswith(message), info.value.first.message
