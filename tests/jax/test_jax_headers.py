"""What jax emits around a computation (tests/jax/programs.py), lowered by the installed
jax: tlc parses all of it, with and without debug locations, prints it back, and runs
the programs it supports like jax; host callbacks run with jax's Python functions, and
without them fail in lowering, reported at the user's line.

Skipped when jax is not installed; tests/frontend/test_jax_headers.py parses saved
lowerings without it.
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np
import pytest

jax = pytest.importorskip("jax")
tlc_jax = pytest.importorskip("tlc.jax")

import backend_opencl  # noqa: E402
import frontend  # noqa: E402
from backend_opencl.api.jax import bridge  # noqa: E402
from tests.frontend import corpus  # noqa: E402
from tests.jax import programs  # noqa: E402
from tests.jax.programs import PROGRAMS  # noqa: E402


def _names(kind: str) -> list[str]:
    return [name for name, p in PROGRAMS.items() if p.kind == kind]


def _data(tree: Any) -> list[np.ndarray]:
    """The leaves as numpy arrays, typed PRNG keys as their data (what the program
    takes and gives for them)."""
    return [np.asarray(jax.random.key_data(x)
                       if jax.dtypes.issubdtype(x.dtype, jax.dtypes.prng_key) else x)
            for x in jax.tree_util.tree_leaves(tree)]


@pytest.mark.parametrize("debug", [False, True], ids=["plain", "debug_info"])
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_tlc_parses_what_jax_emits(name: str, debug: bool) -> None:
    """Every lowering parses, verifies, and prints back to text that parses to the
    same IR."""
    text = PROGRAMS[name].lower().as_text(debug_info=debug)
    module = frontend.parse(text, filename=f"<jax {name}>")
    again = frontend.parse(str(module), filename="printed.mlir")
    assert corpus.signature(again) == corpus.signature(module)


@pytest.mark.parametrize("name", _names("runs"))
def test_programs_run_like_jax(name: str) -> None:
    """tlc compiles jax's text, annotations included, and computes what jax does."""
    program = PROGRAMS[name]
    exe = backend_opencl.compile_stablehlo(program.lower().as_text(), filename=name)
    with program.context():
        want = jax.jit(program.fun, **program.jit)(*program.args)
    got = exe(*_data(program.args))
    for g, w in zip(got, _data(want), strict=True):
        np.testing.assert_allclose(g, w, rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("name", _names("callback"))
def test_host_callbacks_run_like_jax(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    """With the Python functions jax keeps beside the lowering, tlc computes and prints
    what jax does."""
    program = PROGRAMS[name]
    lowered = program.lower()
    exe = backend_opencl.compile_stablehlo(lowered.as_text(), filename=name,
                                           host_callbacks=tlc_jax.host_callbacks(lowered))
    want = jax.block_until_ready(jax.jit(program.fun)(*program.args))
    jax.effects_barrier()
    printed = capsys.readouterr().out
    got = exe(*_data(program.args))
    for g, w in zip(got, _data(want), strict=True):
        np.testing.assert_allclose(g, w, rtol=2e-6, atol=2e-6)
    assert capsys.readouterr().out == printed


@pytest.mark.parametrize("name", _names("callback"))
def test_host_callbacks_without_functions_are_reported_at_the_users_line(
        name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the Python functions (as with a jax keeping them elsewhere) a callback
    fails in lowering, as an unsupported op does: a JaxCompileError at the line of the
    function that calls back."""
    program = PROGRAMS[name]
    lines, first = inspect.getsourcelines(program.fun)
    line = first + next(i for i, text in enumerate(lines) if program.marker in text)
    monkeypatch.setattr(bridge, "host_callbacks", lambda lowered: [])
    with pytest.raises(tlc_jax.JaxCompileError) as info:
        tlc_jax.jit(program.fun)(*program.args)
    diagnostic = info.value.first
    assert (diagnostic.loc.file, diagnostic.loc.line) == (programs.__file__, line)
    assert diagnostic.message.startswith("host callback 0 is not among the 0 Python")
    assert "the op in the StableHLO jax produced" in str(info.value)
