"""Iteration domains and access relations of the collectives, dependences and fusion."""

from __future__ import annotations

import io
from contextlib import redirect_stdout
from pathlib import Path

import tensorlang
from backend_opencl.tools.cli import main
from tensorlang.schedule.affine import Symbols
from tensorlang.schedule.deps import footprint, fusable
from tensorlang.schedule.domains import statement

PROGRAM = """
func @k(%A: memref<f32x?x?>, %B: memref<f32x?x8>, %C: memref<f32x?x8>, %x: memref<f32x?>,
        %y: memref<f32x?>, %z: memref<f32x?>, %lo: index, %hi: index) {
  %one = constant 1.0 : f32
  %zero = constant 0.0 : f32
  gemm.t.n %one, %A, %B, %zero, %C : f32, memref<f32x?x?>, memref<f32x?x8>, f32, memref<f32x?x8>
  hadamard_product %one, %x, %y, %zero, %z : f32, memref<f32x?>, memref<f32x?>, f32, memref<f32x?>
  axpby.n %one, %z, %one, %y : f32, memref<f32x?>, f32, memref<f32x?>
  foreach %i = %lo, %hi : index {
    %v = load %x[%i] : memref<f32x?>
    store %v, %y[%i] : memref<f32x?>
  }
}
"""


def _insts():
    func = tensorlang.parse(PROGRAM).functions[0]
    return [i for i in func.body.instructions if i.name not in ("constant",)]


def test_gemm_domain_and_accesses() -> None:
    syms = Symbols()
    gemm = statement(_insts()[0], syms)
    assert gemm.dims == ("i", "j", "k")
    text = str(gemm.domain())
    assert "0 <= j <= 7" in text and "p_C_n0" in text and "p_A_n0" in text  # K = rows of A
    accesses = {(a.root.name, a.write): a.index for a in gemm.accesses}
    assert accesses[("A", False)] == ("k", "i")  # transposed
    assert accesses[("B", False)] == ("k", "j")
    assert ("C", False) not in accesses  # beta = 0 never reads C
    assert accesses[("C", True)] == ("i", "j")


def test_foreach_domain_has_parametric_bounds() -> None:
    stmt = statement(_insts()[3], Symbols())
    assert "p_lo <= i < p_hi" in str(stmt.domain())
    assert {(a.root.name, a.write, a.index) for a in stmt.accesses} == \
        {("x", False, ("i",)), ("y", True, ("i",))}


def test_pointwise_collectives_are_fusable() -> None:
    text = PROGRAM.replace("f32x?>", "f32x16>")
    func = tensorlang.parse(text).functions[0]
    syms = Symbols()
    had, axpby = (statement(i, syms) for i in func.body.instructions
                  if i.name in ("hadamard_product", "axpby"))
    # hadamard writes z[i]; axpby reads z[i] and updates y[i]: same point only.
    assert fusable(had, axpby)


def test_different_dynamic_extents_are_not_fusable() -> None:
    syms = Symbols()
    had, axpby = (statement(i, syms) for i in _insts()[1:3])
    assert not fusable(had, axpby)  # isl cannot prove both loops have the same extent


def test_shifted_access_is_not_fusable() -> None:
    text = """
func @k(%x: memref<f32x16>, %y: memref<f32x16>) {
  %one = constant 1.0 : f32
  axpby.n %one, %x, %one, %y : f32, memref<f32x16>, f32, memref<f32x16>
  %s = subview %y[1:8] : memref<f32x16>
  %t = subview %x[0:8] : memref<f32x16>
  axpby.n %one, %s, %one, %t : f32, memref<f32x8>, f32, memref<f32x8>
}
"""
    func = tensorlang.parse(text).functions[0]
    first, second = (i for i in func.body.instructions if i.name == "axpby")
    syms = Symbols()
    a, b = statement(first, syms), statement(second, syms)
    assert not fusable(a, b)
    assert footprint(first, syms).conflicts(footprint(second, syms))


def test_emit_schedule_cli(tmp_path: Path) -> None:
    path = tmp_path / "k.tl"
    # several work-items: a CPU plan runs a kernel that leaves it the choice on one,
    # which needs no barriers
    path.write_text(PROGRAM.replace("%hi: index) {", "%hi: index) work_group_size(4, 1) {"))
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["compile", str(path), "--emit", "schedule"]) == 0
    text = out.getvalue()
    assert "kernel @k" in text and "domain:" in text and "full blocks:" in text
    assert "work-item loops:" in text and "barrier" in text


def test_foreach_nd_domain_and_dependences() -> None:
    text = """
func @f(%A: memref<f32x?x?>, %B: memref<f32x?x?>) {
  %m = size %A[0] : memref<f32x?x?>
  %n = size %A[1] : memref<f32x?x?>
  %c0 = constant 0 : index
  foreach (%i, %j) = (%c0, %c0), (%m, %n) : index {
    %v = load %A[%i, %j] : memref<f32x?x?>
    store %v, %B[%j, %i] : memref<f32x?x?>
  }
}"""
    func = tensorlang.parse(text).functions[0]
    inst = next(i for i in func.body.instructions if i.name == "foreach_nd")
    syms = Symbols()
    stmt = statement(inst, syms)
    assert stmt.dims == ("i0", "i1")
    assert {(a.root.name, a.index) for a in stmt.accesses} == \
        {("A", ("i0", "i1")), ("B", ("i1", "i0"))}
    fp = footprint(inst, syms)
    assert set(fp.writes) == {func.args[1]}
