"""Random mutations of conformance files never produce a traceback: every input is
either accepted (and printable) or rejected with a located CompileError."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import frontend
from frontend import CompileError
from tests.frontend import corpus

_SMALL = [p for p in corpus.files() if p.stat().st_size < 6000] if corpus.ROOT.exists() else []
_SEEDS = _SMALL[::7][:300]
_TOKENS = ["%0", "%arg0", "%0#1", ":", ",", "(", ")", "{", "}", "[", "]", "<", ">", "->", "=",
           "tensor<2x?xf32>", "tensor<i1>", "f32", "i64", "dense<1>", 'dense<"0x01">',
           "dense<[1, 2]>", "0x7F", "-1", "1.5e3", "stablehlo.add", "stablehlo.reduce",
           '"stablehlo.gather"', "^bb0", "@main", "#stablehlo<comparison_direction LT>",
           "array<i64: 1>", "!stablehlo.token", "complex<f32>", "loc(#loc1)", "// -----\n",
           "dims = [0]", "\n", "x", "?", '"', "\\", "#loc1 = loc(unknown)\n",
           "!quant.uniform<i8:f32, 0.5:-20>", "!quant.uniform<i8<-8:7>:f32:0, {0.1, 0.2}>",
           "tensor<2x!quant.uniform<ui4:f16:1, {0.5:1, 1.0e9}>>", 'sdy.mesh @m = <["x"=2]>\n',
           '{sdy.sharding = #sdy.sharding<@m, [{"x"}]>}', 'loc("a.py":1:2)']


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


_PAIRS = st.lists(st.tuples(st.floats(width=32), st.integers(-300, 300)), min_size=1,
                  max_size=3)


@st.composite
def quant_types(draw: st.DrawFn) -> str:
    """A tensor of a random ``!quant.uniform`` type, often breaking a rule."""
    storage = draw(st.sampled_from(["i8", "ui8", "i4", "i16", "i1", "ui2", "f32"]))
    bounds = draw(st.one_of(st.none(), st.tuples(st.integers(-300, 300),
                                                 st.integers(-300, 300))))
    if bounds is not None:
        storage += f"<{bounds[0]}:{bounds[1]}>"
    expressed = draw(st.sampled_from(["f32", "f16", "bf16", "f8E4M3FN", "i8"]))
    axis = draw(st.one_of(st.none(), st.integers(-2, 3)))
    pairs = draw(_PAIRS)
    params = ", ".join(f"{s!r}:{z}" for s, z in pairs)
    shape = "x".join(str(d) for d in draw(st.lists(st.integers(1, 3), max_size=3)))
    head = f"{storage}:{expressed}" + ("" if axis is None else f":{axis}")
    body = params if axis is None and len(pairs) == 1 else f"{{{params}}}"
    return f"tensor<{shape}{'x' if shape else ''}!quant.uniform<{head}, {body}>>"


@settings(max_examples=300, deadline=None, derandomize=True)
@given(quant_types())
def test_quantized_types_are_accepted_or_diagnosed(t: str) -> None:
    """Random quantized types parse, or fail with a located diagnostic on line 1."""
    text = f"func.func @main(%a: {t}) -> {t} {{\n  func.return %a : {t}\n}}\n"
    try:
        module = frontend.parse(text, "fuzz.mlir")
    except CompileError as err:
        assert str(err).startswith("fuzz.mlir:1:"), str(err)
        return
    printed = str(module)
    assert str(frontend.parse(printed, "printed.mlir")) == printed
