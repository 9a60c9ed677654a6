"""check-bounds{guards=true}: which instructions get a run-time guard mark.

isl proves accesses in bounds using loop ranges, if conditions and ``size`` results;
what it cannot prove (loaded indices, unrelated dynamic sizes) is marked, and a
collective is marked with exactly the size pairs it cannot prove equal.
"""

from __future__ import annotations

import pytest

import tensorlang
from tensorlang.ir.core import Instruction
from tensorlang.passes import run_pipeline
from tensorlang.verify.bounds import GUARD, SizePair


def _marks(source: str) -> list[tuple[str, object]]:
    program = tensorlang.parse(source, filename="k.tl")
    run_pipeline(program, "check-bounds{guards=true}", verify_each=True)
    return [(inst.name, inst.attrs[GUARD]) for inst in program.functions[0].walk()
            if GUARD in inst.attrs]


def _func(body: str, args: str = "") -> str:
    return f"""func @f(%A: memref<f32x16>, %D: memref<f32x?>, %E: memref<f32x?>,
        %I: memref<i32x?>, %i: index{args}) {{
  %c0 = constant 0 : index
  %c1 = constant 1 : index
  %c16 = constant 16 : index
  %x = constant 1.0 : f32
{body}
}}"""


def _names(marks: list[tuple[str, object]]) -> list[str]:
    return [name for name, _ in marks]


def test_without_the_option_nothing_is_marked() -> None:
    program = tensorlang.parse(_func("  %v = load %A[%i] : memref<f32x16>"))
    run_pipeline(program, "check-bounds")
    assert not any(GUARD in inst.attrs for inst in program.functions[0].walk())


@pytest.mark.parametrize("body", [
    # A loop over the static size.
    "  foreach %j = %c0, %c16 : index {\n    %v = load %A[%j] : memref<f32x16>\n  }",
    # A loop over a dynamic size read with size.
    "  %n = size %D[0] : memref<f32x?>\n"
    "  foreach %j = %c0, %n : index {\n    store %x, %D[%j] : memref<f32x?>\n  }",
    # A sequential loop with a step, shifted indices.
    "  %c2 = constant 2 : index\n  %c15 = constant 15 : index\n"
    "  for %j = %c0, %c15, %c2 : index {\n    %k = arith.add %j, %c1 : index\n"
    "    %v = load %A[%k] : memref<f32x16>\n  }",
    # A guarding if (then branch), and its negation (else branch).
    "  %ok = cmp.lt %i, %c16 : index\n  %pos = cmp.ge %i, %c0 : index\n"
    "  %both = arith.and %ok, %pos : i1\n  if %both {\n    %v = load %A[%i] : memref<f32x16>\n  }",
    "  %bad = cmp.ge %i, %c16 : index\n  %neg = cmp.lt %i, %c0 : index\n"
    "  %either = arith.or %bad, %neg : i1\n  if %either {\n  } else {\n"
    "    %v = load %A[%i] : memref<f32x16>\n  }",
    # Two-dimensional loop nest.
    "  %n = size %D[0] : memref<f32x?>\n"
    "  foreach (%j, %k) = (%c0, %c0), (%c16, %n) : index {\n"
    "    %v = load %A[%j] : memref<f32x16>\n    store %v, %D[%k] : memref<f32x?>\n  }",
])
def test_proven_in_bounds_gets_no_guard(body: str) -> None:
    assert _marks(_func(body)) == []


@pytest.mark.parametrize(("body", "marked"), [
    # An index loaded from memory.
    ("  %j32 = load %I[%c0] : memref<i32x?>\n  %j = cast %j32 : i32 -> index\n"
     "  %v = load %A[%j] : memref<f32x16>", ["load", "load"]),
    # A loop over D's size reading E: the sizes are not related.
    ("  %n = size %D[0] : memref<f32x?>\n"
     "  foreach %j = %c0, %n : index {\n    %v = load %E[%j] : memref<f32x?>\n"
     "    store %v, %D[%j] : memref<f32x?>\n  }", ["load"]),
    # The loop runs one step too far: in bounds for some values only (not an error).
    ("  %c17 = constant 17 : index\n"
     "  foreach %j = %c0, %c17 : index {\n    %v = load %A[%j] : memref<f32x16>\n  }",
     ["load"]),
    # A dynamic offset; the load through it is exact but still depends on %i.
    ("  %s = subview %A[%i:4] : memref<f32x16>\n  %v = load %s[%c1] : memref<f32x4>",
     ["subview", "load"]),
    # The if proves nothing about the else branch.
    ("  %ok = cmp.lt %i, %c16 : index\n  if %ok {\n  } else {\n"
     "    %v = load %A[%i] : memref<f32x16>\n  }", ["load"]),
    # A dynamic expand: the product is checked at run time.
    ("  %c4 = constant 4 : index\n  %e = expand %D[0 -> 4 x %i] : memref<f32x?>",
     ["expand"]),
])
def test_unknown_accesses_are_marked(body: str, marked: list[str]) -> None:
    assert _names(_marks(_func(body))) == marked


def test_collective_marks_only_unproven_size_pairs() -> None:
    source = """func @f(%A: memref<f32x?x?>, %B: memref<f32x?x?>, %C: memref<f32x?x?>) {
  %one = constant 1.0 : f32
  %m = size %A[0] : memref<f32x?x?>
  %n = size %B[1] : memref<f32x?x?>
  %c0 = constant 0 : index
  %cv = subview %C[0:%m, 0:%n] : memref<f32x?x?>
  gemm.n.n %one, %A, %B, %one, %cv
    : f32, memref<f32x?x?>, memref<f32x?x?>, f32, memref<f32x?x?,strided<1,?>>
  gemm.t.n %one, %A, %B, %one, %C
    : f32, memref<f32x?x?>, memref<f32x?x?>, f32, memref<f32x?x?>
}"""
    marks = _marks(source)
    assert marks[0] == ("subview", True)  # C may be smaller than m x n
    # M and N are the sizes of the subview, proven equal; K is not related.
    assert marks[1] == ("gemm", (SizePair("A", 1, "B", 0),))
    assert marks[2] == ("gemm", (SizePair("A", 1, "C", 0), SizePair("B", 1, "C", 1),
                                 SizePair("A", 0, "B", 0)))


def test_static_collectives_are_not_marked() -> None:
    source = """func @f(%A: memref<f32x4x8>, %B: memref<f32x8x4>) {
  %one = constant 1.0 : f32
  axpby.t %one, %A, %one, %B : f32, memref<f32x4x8>, f32, memref<f32x8x4>
}"""
    assert _marks(source) == []


def test_marks_survive_the_printer_round_trip_as_nothing() -> None:
    """The mark is an attribute for the emitter; printing the program is unchanged."""
    text = _func("  %v = load %A[%i] : memref<f32x16>")
    program = tensorlang.parse(text, filename="k.tl")
    before = str(program)
    run_pipeline(program, "check-bounds{guards=true}")
    loads: list[Instruction] = [i for i in program.functions[0].walk() if i.name == "load"]
    assert loads[0].attrs[GUARD] is True
    assert str(program) == before


def _clamped_loads(count: int) -> str:
    """``count`` loads of %A at ``max(%i + k, 0)`` clamped below 16, one clamp each."""
    lines = ["  %c15 = constant 15 : index"]
    for k in range(count):
        lines += [f"  %o{k} = arith.add %i, {k} : index",
                  f"  %lo{k} = cmp.lt %o{k}, %c0 : index",
                  f"  %p{k} = select %lo{k}, %c0, %o{k} : index",
                  f"  %hi{k} = cmp.gt %p{k}, %c15 : index",
                  f"  %q{k} = select %hi{k}, %c15, %p{k} : index",
                  f"  %v{k} = load %A[%q{k}] : memref<f32x16>"]
    return "\n".join(lines)


def test_clamped_indices_are_proven_in_bounds() -> None:
    """What is known of a min/max bounds the access that uses it."""
    assert _marks(_func(_clamped_loads(3))) == []


def test_other_accesses_clamps_stay_out_of_the_question() -> None:
    """An access asks only about the values it uses: the clamps of the other accesses,
    which share its operand %i, are left out (each is a disjunction isl must split)."""
    from tensorlang.schedule.affine import Symbols
    from tensorlang.schedule.bounds import facts
    from tensorlang.schedule.space import param_names

    program = tensorlang.parse(_func(_clamped_loads(12)), filename="k.tl")
    func = program.functions[0]
    syms = Symbols()
    loads = [inst for inst in func.walk() if inst.name == "load"]
    asked = {}
    for _ in range(2):  # the second time, every clamp has its parameter
        for k, inst in enumerate(loads):
            index = syms.param(inst.variadic("indices")[0])
            asked[k] = set(param_names(facts(inst, syms, [index])))
    for k, names in asked.items():
        other = {syms.param(loads[j].variadic("indices")[0]) for j in asked if j != k}
        assert syms.param(loads[k].variadic("indices")[0]) in names
        assert not names & other, f"load {k} asked about other clamps: {names & other}"
