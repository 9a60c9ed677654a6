"""Host callbacks without jax: ``stablehlo.custom_call @xla_ffi_python_cpu_callback``
compiled with Python functions (``compile_stablehlo(..., host_callbacks=...)``), as
``tlc.jax.jit`` compiles jax's (tests/jax/test_callbacks.py runs jax's own): arguments read
back after the commands writing them, results written before the commands reading them,
in program order, inside host loops and branches; tokens; mismatched results; exceptions.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest

import backend_opencl
import frontend
from backend_opencl.api import compiler
from backend_opencl.tools import cli
from frontend.lower import lower_function
from tensorlang.diagnostics import CallbackError, CompileError, LaunchError
from tensorlang.plan import Callback, Copy, HostValue, While, renamed, with_frees
from tests.lowering.conftest import module, rand

DATA = Path(__file__).resolve().parents[1] / "frontend" / "data"
CALL = "stablehlo.custom_call @xla_ffi_python_cpu_callback"


def _call(operands: str, types: str, index: int = 0) -> str:
    """A host callback of ``index`` on ``operands`` typed ``types``."""
    return f"{CALL}({operands}) {{mhlo.backend_config = {{index = {index} : ui64}}}} : {types}"


def _compile(text: str, *functions: Any) -> Any:
    return backend_opencl.compile_stablehlo(text, host_callbacks=list(functions))


SCALE = module("(%a: tensor<4x3xf32>) -> tensor<4x3xf32>", f"""
  %e = stablehlo.exponential %a : tensor<4x3xf32>
  %0 = {_call("%e", "(tensor<4x3xf32>) -> tensor<4x3xf32>")}
  %1 = stablehlo.add %0, %a : tensor<4x3xf32>
  return %1 : tensor<4x3xf32>""")


def test_callback_reads_what_kernels_wrote_and_its_result_is_used() -> None:
    """The argument is the kernel's result (read after it ran); the result feeds the add."""
    seen: list[np.ndarray] = []

    def triple(e: np.ndarray) -> tuple[np.ndarray]:
        seen.append(e)
        return (e * 3,)

    a = rand((4, 3))
    (out,) = _compile(SCALE, triple)(a)
    assert seen[0].dtype == np.float32 and seen[0].shape == (4, 3)
    np.testing.assert_allclose(seen[0], np.exp(a), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out, 3 * np.exp(a) + a, rtol=1e-5, atol=1e-6)


def test_saved_jax_lowering_calls_its_function() -> None:
    """jax's lowering of ``jax.debug.print`` (saved with debug locations): the callback
    gets the parameter and returns nothing; the program's result is unchanged."""
    text = (DATA / "jax_debug_print.mlir").read_text()
    seen: list[np.ndarray] = []
    exe = _compile(text, lambda x: seen.append(x.copy()))
    x = rand((4, 3))
    for k in range(3):
        (out,) = exe(x + k)
        np.testing.assert_array_equal(out, (x + k) * 2)
        np.testing.assert_array_equal(seen[k], x + k)


def test_without_functions_a_callback_is_a_located_error() -> None:
    """compile_stablehlo without host_callbacks, the CLI, and too few functions: a
    CompileError at the custom_call's line."""
    with pytest.raises(CompileError, match="host callbacks need the Python functions: "
                       "compile through tlc.jax.jit") as info:
        backend_opencl.compile_stablehlo(SCALE, filename="s.mlir")
    assert (info.value.first.loc.file, info.value.first.loc.line) == ("s.mlir", 4)
    with pytest.raises(CompileError, match="host callback 0 is not among the 0 Python"):
        _compile(SCALE)
    with pytest.raises(CompileError, match="host callbacks need the Python functions"):
        compiler.emit(frontend.parse(SCALE), "tl")


def test_cli_reports_the_callback(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "cb.mlir"
    path.write_text(SCALE)
    assert cli.main(["compile", str(path), "--emit", "tl"]) == 1
    err = capsys.readouterr().err
    assert f"{path}:4:" in err and "host callbacks need the Python functions" in err


def test_other_custom_calls_are_not_supported() -> None:
    text = module("(%a: tensor<3xf32>) -> tensor<3xf32>", """
  %0 = stablehlo.custom_call @my_kernel(%a) : (tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>""")
    with pytest.raises(CompileError,
                       match="'stablehlo.custom_call' @my_kernel is not supported yet"):
        _compile(text, np.sin)


LOOP = module("(%a: tensor<3xf32>) -> (tensor<i32>, tensor<3xf32>)", f"""
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %0:2 = stablehlo.while(%i = %c0, %x = %a) : tensor<i32>, tensor<3xf32>
   cond {{
    %n = stablehlo.constant dense<4> : tensor<i32>
    %p = stablehlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  }} do {{
    %one = stablehlo.constant dense<1> : tensor<i32>
    %j = stablehlo.add %i, %one : tensor<i32>
    %s = stablehlo.sine %x : tensor<3xf32>
    %y = {_call("%i, %s", "(tensor<i32>, tensor<3xf32>) -> tensor<3xf32>")}
    %z = stablehlo.add %y, %x : tensor<3xf32>
    stablehlo.return %j, %z : tensor<i32>, tensor<3xf32>
  }}
  return %0#0, %0#1 : tensor<i32>, tensor<3xf32>""")


def test_callback_in_a_loop_runs_every_iteration_in_order() -> None:
    """A small loop of elemental ops would run as one kernel: with a callback inside it
    stays a host loop, the callback called once per iteration with that iteration's
    values."""
    steps = lower_function(frontend.parse(LOOP), host_callbacks=1).plan.steps
    (loop,) = [s for s in steps if isinstance(s, While)]
    assert any(isinstance(s, Callback) for s in loop.body)
    calls: list[tuple[int, np.ndarray]] = []

    def step(i: np.ndarray, s: np.ndarray) -> list[np.ndarray]:
        calls.append((int(i), s))
        return [s * np.float32(i + 1)]

    a = rand((3,))
    i, x = _compile(LOOP, step)(a)
    want = a.copy()
    for k in range(4):
        np.testing.assert_allclose(calls[k][1], np.sin(want), rtol=1e-5, atol=1e-6)
        want = np.sin(want) * np.float32(k + 1) + want
    assert [k for k, _ in calls] == [0, 1, 2, 3] and int(i) == 4
    np.testing.assert_allclose(x, want, rtol=1e-5, atol=1e-6)


def test_callback_without_arguments_waits_before_writing() -> None:
    """A callback of no operands in a loop: its result buffer is still read by the last
    iteration's add when it is written again (a late device, TLC_STRESS, shows a write
    that does not wait for it)."""
    text = module("(%a: tensor<256xf32>) -> tensor<256xf32>", f"""
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %0:2 = stablehlo.while(%i = %c0, %x = %a) : tensor<i32>, tensor<256xf32>
   cond {{
    %n = stablehlo.constant dense<6> : tensor<i32>
    %p = stablehlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  }} do {{
    %one = stablehlo.constant dense<1> : tensor<i32>
    %j = stablehlo.add %i, %one : tensor<i32>
    %y = {_call("", "() -> tensor<256xf32>")}
    %z = stablehlo.add %x, %y : tensor<256xf32>
    stablehlo.return %j, %z : tensor<i32>, tensor<256xf32>
  }}
  return %0#1 : tensor<256xf32>""")
    terms = [rand((256,)) for _ in range(6)]
    a = rand((256,))
    supply = iter(terms * 3)
    exe = _compile(text, lambda: [next(supply)])
    for _ in range(3):
        np.testing.assert_allclose(exe(a)[0], a + sum(terms), rtol=1e-5, atol=1e-5)


def test_callback_in_a_branch_runs_only_when_taken() -> None:
    text = module("(%k: tensor<i32>, %a: tensor<5xf32>) -> tensor<5xf32>", f"""
  %0 = "stablehlo.case"(%k) ({{
    %n = stablehlo.negate %a : tensor<5xf32>
    stablehlo.return %n : tensor<5xf32>
  }}, {{
    %c = {_call("%a", "(tensor<5xf32>) -> tensor<5xf32>")}
    stablehlo.return %c : tensor<5xf32>
  }}) : (tensor<i32>) -> tensor<5xf32>
  return %0 : tensor<5xf32>""")
    calls: list[np.ndarray] = []
    exe = _compile(text, lambda a: (calls.append(a) or [np.cos(a)]))
    a = rand((5,))
    np.testing.assert_allclose(exe(np.int32(0), a)[0], -a)
    assert calls == []
    np.testing.assert_allclose(exe(np.int32(1), a)[0], np.cos(a), rtol=1e-5, atol=1e-6)
    last = exe(np.int32(7), a)[0]  # out of range: the last branch
    np.testing.assert_allclose(last, np.cos(a), rtol=1e-5, atol=1e-6)
    assert len(calls) == 2


TOKENS = module("(%t: !stablehlo.token, %a: tensor<2x2xf32>) -> (!stablehlo.token, "
                "tensor<2x2xf32>)", f"""
  %0:2 = {_call("%t, %a", "(!stablehlo.token, tensor<2x2xf32>) -> "
                "(!stablehlo.token, tensor<2x2xf32>)")}
  %1 = stablehlo.after_all %0#0 : !stablehlo.token
  %2 = stablehlo.multiply %0#1, %a : tensor<2x2xf32>
  return %1, %2 : !stablehlo.token, tensor<2x2xf32>""")


def test_tokens_are_none_in_and_out() -> None:
    """An ordered callback's token: the function gets None for it and its entry is
    ignored; the executable takes and returns None for a token parameter and result."""
    got: list[Any] = []

    def ordered(token: Any, a: np.ndarray) -> tuple[Any, np.ndarray]:
        got.append(token)
        return "ignored", a + 1

    exe = _compile(TOKENS, ordered)
    assert exe.arg_dtypes[0] is None and exe.result_dtypes[0] is None
    a = rand((2, 2))
    token, out = exe(None, a)
    assert token is None and got == [None]
    np.testing.assert_allclose(out, (a + 1) * a, rtol=1e-5, atol=1e-6)
    with pytest.raises(LaunchError, match=r"argument 0 is a token \(!stablehlo.token\): "
                       "pass None, got ndarray"):
        exe(np.zeros(0, bool), a)


def test_token_carried_through_a_loop_is_never_copied() -> None:
    text = module("(%t: !stablehlo.token, %a: tensor<3xf32>) -> (!stablehlo.token, "
                  "tensor<3xf32>)", f"""
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %0:3 = stablehlo.while(%i = %c0, %u = %t, %x = %a)
      : tensor<i32>, !stablehlo.token, tensor<3xf32>
   cond {{
    %n = stablehlo.constant dense<3> : tensor<i32>
    %p = stablehlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  }} do {{
    %one = stablehlo.constant dense<1> : tensor<i32>
    %j = stablehlo.add %i, %one : tensor<i32>
    %r:2 = {_call("%u, %x", "(!stablehlo.token, tensor<3xf32>) -> "
                  "(!stablehlo.token, tensor<3xf32>)")}
    stablehlo.return %j, %r#0, %r#1 : tensor<i32>, !stablehlo.token, tensor<3xf32>
  }}
  return %0#1, %0#2 : !stablehlo.token, tensor<3xf32>""")
    plan = lower_function(frontend.parse(text), host_callbacks=1).plan
    token = plan.params[0]
    assert plan.buffer(token).size == 0 and plan.results[0] == token

    def copies(steps: Any) -> list[Copy]:
        return [c for s in steps for c in ([s] if isinstance(s, Copy) else
                                           copies(s.body) if isinstance(s, While) else [])]
    assert all(token not in (c.src, c.dst) for c in copies(plan.steps))
    a = rand((3,))
    _, out = _compile(text, lambda t, x: (None, x * 2))(None, a)
    np.testing.assert_allclose(out, 8 * a)


@pytest.mark.parametrize("returned,message", [
    (lambda a: (a, a), "returned 2 values; the program takes 1"),
    (lambda a: (a[:2],), r"result 0 is a float32\[2, 3\] array; the program takes "
                         r"float32\[4, 3\]"),
    (lambda a: (a.astype(np.float64),), "result 0 is a float64"),
    (lambda a: 3.0, "returned a float; it must return a sequence of 1 arrays"),
])
def test_mismatched_results_are_a_callback_error(returned: Any, message: str) -> None:
    """A result of another count, shape or dtype: a CallbackError naming the callback;
    the executable runs again afterwards."""
    calls = []

    def function(e: np.ndarray) -> Any:
        calls.append(e)
        return returned(e) if len(calls) == 1 else (e * 3,)

    exe = _compile(SCALE, function)
    a = rand((4, 3))
    with pytest.raises(CallbackError, match=rf"@main: host callback 0 \(.*\.function\):? "
                       rf"{message}"):
        exe(a)
    np.testing.assert_allclose(exe(a)[0], 3 * np.exp(a) + a, rtol=1e-5, atol=1e-6)


def test_an_exception_in_a_callback_reaches_the_caller() -> None:
    """The function's own exception, after the queue is drained; the next call runs."""
    class Stop(Exception):
        pass

    def fails(e: np.ndarray) -> tuple[np.ndarray]:
        if (e > 1).any():
            raise Stop("too big")
        return (e,)

    exe = _compile(SCALE, fails)
    with pytest.raises(Stop, match="too big"):
        exe(np.ones((4, 3), np.float32))
    a = -np.abs(rand((4, 3)))
    np.testing.assert_allclose(exe(a)[0], np.exp(a) + a, rtol=1e-5, atol=1e-6)


def test_element_types_as_jax_declares_them() -> None:
    """bool, bf16 and 4-bit integers (stored in bytes) reach the function as numpy's
    (ml_dtypes') types, and its results are stored back."""
    text = module("(%p: tensor<3xi1>, %h: tensor<3xbf16>, %q: tensor<3xi4>) -> "
                  "(tensor<3xi4>, tensor<3xbf16>)", f"""
  %0:2 = {_call("%p, %h, %q", "(tensor<3xi1>, tensor<3xbf16>, tensor<3xi4>) -> "
                "(tensor<3xi4>, tensor<3xbf16>)")}
  return %0#0, %0#1 : tensor<3xi4>, tensor<3xbf16>""")

    def swap(p: np.ndarray, h: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        assert (p.dtype, h.dtype, q.dtype) == (np.bool_, ml_dtypes.bfloat16, ml_dtypes.int4)
        return np.where(p, q, -q).astype(ml_dtypes.int4), (h * 2).astype(ml_dtypes.bfloat16)

    p = np.array([True, False, True])
    h = np.array([1.5, -2.25, 3], ml_dtypes.bfloat16)
    q = np.array([3, -7, 5], ml_dtypes.int4)
    q2, h2 = _compile(text, swap)(p, h, q)
    np.testing.assert_array_equal(q2.astype(int), [3, 7, 5])
    np.testing.assert_array_equal(h2.astype(float), [3, -4.5, 6])


def test_large_result_and_argument_in_place() -> None:
    """A callback result that is the program's result (written into the result array
    bound in place on CPU devices) and a large argument read from the caller's memory."""
    text = module("(%a: tensor<128x256xf32>) -> tensor<128x256xf32>", f"""
  %0 = {_call("%a", "(tensor<128x256xf32>) -> tensor<128x256xf32>")}
  return %0 : tensor<128x256xf32>""")
    a = rand((128, 256))
    exe = _compile(text, lambda x: (x[::-1] * 2,))
    for _ in range(2):
        np.testing.assert_array_equal(exe(a)[0], a[::-1] * 2)


def test_plan_helpers_know_callback_buffers() -> None:
    step = Callback(0, (HostValue(1, "float32"), None), (None, HostValue(2, "int32")))
    assert step.buffers == {1, 2}
    assert renamed([step], {1: 5, 2: 6}) == (Callback(0, (HostValue(5, "float32"), None),
                                                      (None, HostValue(6, "int32"))),)
    freed = with_frees([step], keep={2})
    assert freed[1].buffers == (1,)
