"""Rendering of diagnostics: file:line:col, severity, message, source line, caret, notes."""

from __future__ import annotations

from tensorlang.diagnostics import CompileError, Loc, Source, note

SRC = Source("k.tl", "func @f() {\n  %x = group_id\n  %y = arith.add %x, %z : index\n}\n")


def test_error_with_source_line_and_caret() -> None:
    err = CompileError.at(Loc("k.tl", 3, 22, 3, 24, SRC), "undefined value %z")
    assert str(err).splitlines() == [
        "k.tl:3:22: error: undefined value %z",
        "  %y = arith.add %x, %z : index",
        "                     ^~",
    ]


def test_note_follows_error() -> None:
    err = CompileError.at(Loc("k.tl", 3, 18, source=SRC), "bad operand",
                          note(Loc("k.tl", 2, 3, source=SRC), "value defined here"))
    lines = str(err).splitlines()
    assert lines[0] == "k.tl:3:18: error: bad operand"
    assert lines[3] == "k.tl:2:3: note: value defined here"
    assert lines[5] == "  ^"
    assert err.first.loc is not None and (err.first.loc.line, err.first.loc.col) == (3, 18)


def test_error_without_location_or_source() -> None:
    assert str(CompileError.at(None, "no kernel")) == "error: no kernel"
    assert str(CompileError.at(Loc("m.mlir", 4, 2), "bad")) == "m.mlir:4:2: error: bad"
