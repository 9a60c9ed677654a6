"""Property tests: random programs round-trip; mutated sources fail only with CompileError."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tensorlang
from tensorlang.ir.compare import first_difference
from tensorlang.syntax.parser import parse_program
from tests.tensorlang.strategies import programs

INPUTS = sorted((Path(__file__).parent / "inputs").glob("*.tl"))
_SETTINGS = settings(max_examples=200, deadline=None,
                     suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@_SETTINGS
@given(programs())
def test_random_programs_round_trip(program: tensorlang.Program) -> None:
    text = str(program)
    parsed = tensorlang.parse(text, "random.tl", check=False)
    assert first_difference(program, parsed) is None, text
    assert str(parsed) == text


_CHARS = st.sampled_from(list("%@:,.;=<>[]{}()x?-+0123456789 \n\tabcdefgilmnoprstuvyz_\"$"
                              "\x00\x0c\r\u2028é∑"))


@st.composite
def _mutations(draw: st.DrawFn) -> str:
    text = INPUTS[draw(st.integers(0, len(INPUTS) - 1))].read_text()
    for _ in range(draw(st.integers(1, 4))):
        pos = draw(st.integers(0, len(text)))
        action = draw(st.sampled_from(["insert", "delete", "replace"]))
        char = draw(_CHARS)
        if action == "insert":
            text = text[:pos] + char + text[pos:]
        elif action == "delete":
            text = text[:pos] + text[pos + 1:]
        else:
            text = text[:pos] + char + text[pos + 1:]
    return text


@_SETTINGS
@given(_mutations())
def test_mutated_sources_fail_cleanly(text: str) -> None:
    try:
        program = tensorlang.parse(text, "mutated.tl")
    except tensorlang.CompileError as error:
        rendered = str(error)
        assert rendered.startswith("mutated.tl:"), rendered
        assert ": error: " in rendered.splitlines()[0]
        assert "Traceback" not in rendered
        return
    reparsed = tensorlang.parse(str(program), "printed.tl")
    assert first_difference(program, reparsed) is None


@pytest.mark.parametrize("path", INPUTS, ids=lambda p: p.name)
def test_every_prefix_of_a_corpus_file_fails_cleanly(path: Path) -> None:
    text = path.read_text()
    for end in range(0, len(text), 7):
        try:
            parse_program(text[:end], "prefix.tl")
        except tensorlang.CompileError:
            pass
