"""insert-barrier (lit-style: the RUN/CHECK lines of insert-barrier.tl) and the pass
manager's pipeline parsing."""

from __future__ import annotations

import io
import subprocess
import sys
from contextlib import redirect_stdout
from pathlib import Path

import pytest

import tensorlang
from backend_opencl.cli import main
from tensorlang.diagnostics import TlcError
from tensorlang.passes import REGISTRY, parse_pipeline, run_pipeline

HERE = Path(__file__).parent
FILECHECK = Path(sys.executable).parent / "filecheck"


def _tlc(*args: str) -> str:
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(list(args)) == 0
    return out.getvalue()


@pytest.mark.parametrize("name", ["insert-barrier.tl"])
def test_lit(name: str) -> None:
    path = HERE / name
    printed = _tlc("opt", str(path), "-p", "insert-barrier")
    result = subprocess.run([str(FILECHECK), str(path)], input=printed, text=True,
                            capture_output=True, check=False)
    assert result.returncode == 0, result.stderr + "\n" + printed


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
