"""insert-barrier (lit-style: the RUN/CHECK lines of insert-barrier.tl) and the pass
manager's pipeline parsing."""

from __future__ import annotations

from pathlib import Path

import pytest

import tensorlang
from tensorlang.diagnostics import TlcError
from tensorlang.passes import REGISTRY, parse_pipeline, run_pipeline
from tests.filecheck import check_opt

HERE = Path(__file__).parent


def test_lit() -> None:
    check_opt(HERE / "insert-barrier.tl", "insert-barrier")


def test_idempotent() -> None:
    program = tensorlang.parse((HERE / "insert-barrier.tl").read_text())
    run_pipeline(program, "insert-barrier", verify_each=True)
    once = str(program)
    run_pipeline(program, "insert-barrier,insert-barrier", verify_each=True)
    assert str(program) == once


def test_pipeline_parsing() -> None:
    assert [type(p) for p in parse_pipeline(" insert-barrier , insert-barrier{} ", REGISTRY)] \
        == [REGISTRY["insert-barrier"]] * 2
    assert parse_pipeline("", REGISTRY) == []
    with pytest.raises(TlcError, match="unknown pass 'nope'"):
        parse_pipeline("nope", REGISTRY)
    with pytest.raises(TlcError, match="has no option 'x'"):
        parse_pipeline("insert-barrier{x=1}", REGISTRY)
