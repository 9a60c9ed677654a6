"""clone_program: a copy equal to the original (structure and text) that shares no value,
instruction, region or function with it, so passes on the copy leave the original as it is."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

import tensorlang
from tensorlang.ir.clone import clone_program
from tensorlang.ir.compare import first_difference
from tensorlang.ir.core import Function, Instruction, Program, Region, Value
from tensorlang.passes import DEFAULT_PIPELINE, run_pipeline
from tests.tensorlang.strategies import programs

INPUTS = sorted((Path(__file__).parent / "inputs").glob("*.tl"))


def _objects(program: Program) -> set[int]:
    """The ids of every value, instruction, region and function of ``program``."""
    found: set[int] = set()

    def region(r: Region) -> None:
        found.add(id(r))
        found.update(id(a) for a in r.args)
        for inst in r.instructions:
            found.add(id(inst))
            found.update(id(v) for v in inst.results)
            for inner in inst.regions:
                region(inner)

    for func in program.functions:
        found.add(id(func))
        found.update(id(a) for a in func.args)
        region(func.body)
    return found


def _owners_consistent(program: Program) -> None:
    """Results belong to their instruction, region arguments to their region, and every
    operand is a value of the same program."""
    mine = _objects(program)
    for func in program.functions:
        assert all(a.owner is func for a in func.args)
        for inst in func.walk():
            assert all(r.owner is inst for r in inst.results)
            assert all(region.parent is inst for region in inst.regions)
            assert all(id(v) in mine for v in inst.operand_values()), inst.name


def _check(program: Program) -> None:
    text = str(program)
    copy = clone_program(program)
    assert first_difference(program, copy) is None
    assert str(copy) == text
    assert not _objects(program) & _objects(copy)
    _owners_consistent(copy)


@pytest.mark.parametrize("path", INPUTS, ids=lambda p: p.name)
def test_corpus_clones(path: Path) -> None:
    _check(tensorlang.parse(path.read_text(), path.name))


@settings(max_examples=100, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(programs())
def test_random_programs_clone(program: Program) -> None:
    _check(program)


def test_passes_on_the_copy_leave_the_original() -> None:
    program = tensorlang.parse(INPUTS[0].read_text(), INPUTS[0].name)
    text = str(program)
    copy = clone_program(program)
    run_pipeline(copy, DEFAULT_PIPELINE + ",check-bounds{guards=true}")
    copy.functions[0].body.instructions.clear()
    assert str(program) == text


def test_mutable_attributes_are_copied() -> None:
    program = tensorlang.parse(INPUTS[0].read_text(), INPUTS[0].name)
    inst = next(program.functions[0].walk())
    inst.attrs["note"] = [1, 2]
    copied = next(clone_program(program).functions[0].walk())
    assert copied.attrs["note"] == [1, 2] and copied.attrs["note"] is not inst.attrs["note"]
    assert isinstance(copied, Instruction) and not isinstance(copied, (Value, Function))
