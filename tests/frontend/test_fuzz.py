"""Random mutations of conformance files never produce a traceback: every input is
either accepted (and printable) or rejected with a located CompileError."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import frontend
from frontend import CompileError


def _load_corpus():  # the tests are not a package (pytest --import-mode=importlib)
    path = Path(__file__).parent / "corpus.py"
    spec = importlib.util.spec_from_file_location("frontend_test_corpus_fuzz", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


_corpus = _load_corpus()
_SMALL = [p for p in _corpus.files() if p.stat().st_size < 6000] if _corpus.ROOT.exists() else []
_SEEDS = _SMALL[::7][:300]
_TOKENS = ["%0", "%arg0", "%0#1", ":", ",", "(", ")", "{", "}", "[", "]", "<", ">", "->", "=",
           "tensor<2x?xf32>", "tensor<i1>", "f32", "i64", "dense<1>", 'dense<"0x01">',
           "dense<[1, 2]>", "0x7F", "-1", "1.5e3", "stablehlo.add", "stablehlo.reduce",
           '"stablehlo.gather"', "^bb0", "@main", "#stablehlo<comparison_direction LT>",
           "array<i64: 1>", "!stablehlo.token", "complex<f32>", "loc(#loc1)", "// -----\n",
           "dims = [0]", "\n", "x", "?", '"', "\\", "#loc1 = loc(unknown)\n"]


@st.composite
def mutated(draw: st.DrawFn) -> str:
    """A conformance file with a few random edits (deletions, insertions, swaps, cuts)."""
    text = draw(st.sampled_from(_SEEDS)).read_text()
    for _ in range(draw(st.integers(1, 4))):
        n = len(text)
        i = draw(st.integers(0, max(n - 1, 0)))
        j = min(n, i + draw(st.integers(0, 40)))
        kind = draw(st.sampled_from(["delete", "insert", "replace", "truncate", "duplicate"]))
        if kind == "delete":
            text = text[:i] + text[j:]
        elif kind == "insert":
            text = text[:i] + draw(st.sampled_from(_TOKENS)) + text[i:]
        elif kind == "replace":
            text = text[:i] + draw(st.sampled_from(_TOKENS)) + text[j:]
        elif kind == "truncate":
            text = text[:i]
        else:
            text = text[:j] + text[i:j] + text[j:]
    return text


@pytest.mark.skipif(not _SEEDS, reason="conformance corpus not present")
@settings(max_examples=400, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(mutated())
def test_mutations_are_accepted_or_diagnosed(text: str) -> None:
    """No exception other than CompileError; errors name a file:line:col."""
    try:
        module = frontend.parse(text, "fuzz.mlir")
    except CompileError as err:
        assert str(err).startswith("fuzz.mlir")
        return
    printed = str(module)
    assert str(frontend.parse(printed, "printed.mlir")) == printed
