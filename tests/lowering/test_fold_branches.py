"""Branches decided when compiling (``frontend/lower/families/control/fold_branches.py``):
an ``if``/``case`` whose predicate only depends on constants becomes the ops of its
branch taken (no host branch, no read-back), for every kind of predicate the folder
evaluates; predicates it must not evaluate keep their branch on the host.  Results
against numpy."""

from __future__ import annotations

import numpy as np
import pytest

import backend_opencl
import frontend
from frontend.ir.core import walk
from frontend.lower import lower_function
from frontend.lower.core.inline import inline_calls
from frontend.lower.families.control.fold_branches import fold_constant_branches
from tensorlang.plan import Callback, Case, If, Step, While
from tests.lowering.conftest import module, rand

V = "tensor<6xf32>"


def _host_branches(steps: tuple[Step, ...]) -> int:
    """How many ``If``/``Case`` steps the plan has (nested ones too)."""
    n = 0
    for s in steps:
        if isinstance(s, (If, Case)):
            n += 1 + sum(_host_branches(b) for b in
                         ((s.then, s.otherwise) if isinstance(s, If) else s.branches))
        elif isinstance(s, While):
            n += _host_branches(s.cond) + _host_branches(s.body)
    return n


def _case(index_ops: str, index: str = "%k") -> str:
    """A three-way case on ``index`` (computed by ``index_ops``) over parameter %a."""
    return module(f"(%a: {V}) -> {V}", f"""
{index_ops}
  %r = "stablehlo.case"({index}) ({{
    %y = stablehlo.negate %a : {V}
    stablehlo.return %y : {V}
  }}, {{
    %y = stablehlo.exponential %a : {V}
    stablehlo.return %y : {V}
  }}, {{
    %y = stablehlo.cosine %a : {V}
    stablehlo.return %y : {V}
  }}) : (tensor<i32>) -> {V}
  return %r : {V}""")


BRANCHES = (np.negative, np.exp, np.cos)

# (index ops, the branch they pick): each a predicate kind the folder evaluates
FOLDED = {
    "literal": ("  %k = stablehlo.constant dense<1> : tensor<i32>", 1),
    "out of range": ("  %k = stablehlo.constant dense<9> : tensor<i32>", 2),
    "negative": ("  %k = stablehlo.constant dense<-1> : tensor<i32>", 2),
    # diffrax's t0 == t1 test: compare, reduce(or) over no dims, convert
    "compare": ("""  %t0 = stablehlo.constant dense<0.0> : tensor<f32>
  %t1 = stablehlo.constant dense<1.0> : tensor<f32>
  %e = stablehlo.compare EQ, %t0, %t1, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
  %f = stablehlo.constant dense<false> : tensor<i1>
  %o = stablehlo.reduce(%e init: %f) applies stablehlo.or across dimensions = []
       : (tensor<i1>, tensor<i1>) -> tensor<i1>
  %k = stablehlo.convert %o : (tensor<i1>) -> tensor<i32>""", 0),
    # equinox's check that linspace(0, 1, 11) increases: iota, divide, slices, any()
    "linspace": ("""  %i = stablehlo.iota dim = 0 : tensor<11xf32>
  %ten = stablehlo.constant dense<10.0> : tensor<11xf32>
  %t = stablehlo.divide %i, %ten : tensor<11xf32>
  %hi = stablehlo.slice %t [1:11] : (tensor<11xf32>) -> tensor<10xf32>
  %lo = stablehlo.slice %t [0:10] : (tensor<11xf32>) -> tensor<10xf32>
  %bad = stablehlo.compare LT, %hi, %lo, FLOAT : (tensor<10xf32>, tensor<10xf32>)
         -> tensor<10xi1>
  %f = stablehlo.constant dense<false> : tensor<i1>
  %any = stablehlo.reduce(%bad init: %f) applies stablehlo.or across dimensions = [0]
         : (tensor<10xi1>, tensor<i1>) -> tensor<i1>
  %k = stablehlo.convert %any : (tensor<i1>) -> tensor<i32>""", 0),
    # integer arithmetic, select, broadcast, max-reduce
    "integers": ("""  %i = stablehlo.iota dim = 0 : tensor<4xi32>
  %three = stablehlo.constant dense<3> : tensor<i32>
  %b = stablehlo.broadcast_in_dim %three, dims = [] : (tensor<i32>) -> tensor<4xi32>
  %d = stablehlo.subtract %i, %b : tensor<4xi32>
  %q = stablehlo.divide %d, %b : tensor<4xi32>
  %neg = stablehlo.compare LT, %d, %q, SIGNED : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
  %s = stablehlo.select %neg, %i, %d : tensor<4xi1>, tensor<4xi32>
  %lo = stablehlo.constant dense<-2147483648> : tensor<i32>
  %k = stablehlo.reduce(%s init: %lo) applies stablehlo.maximum across dimensions = [0]
       : (tensor<4xi32>, tensor<i32>) -> tensor<i32>""", 2),
    "unsigned": ("""  %m = stablehlo.constant dense<4294967295> : tensor<ui32>
  %one = stablehlo.constant dense<1> : tensor<ui32>
  %gt = stablehlo.compare GT, %m, %one, UNSIGNED : (tensor<ui32>, tensor<ui32>) -> tensor<i1>
  %k = stablehlo.convert %gt : (tensor<i1>) -> tensor<i32>""", 1),
}


@pytest.mark.parametrize("kind", FOLDED)
def test_a_constant_predicate_decides_the_case_when_compiling(kind: str) -> None:
    ops, branch = FOLDED[kind]
    text = _case(ops)
    plan = lower_function(frontend.parse(text)).plan
    assert _host_branches(plan.steps) == 0
    a = rand((6,))
    (out,) = backend_opencl.compile_stablehlo(text)(a)
    np.testing.assert_allclose(out, BRANCHES[branch](a), rtol=1e-5, atol=1e-6)


KEPT = {
    # a float sum's value depends on its order: not folded
    "float sum": """  %x = stablehlo.constant dense<[0.1, 0.2, 0.3]> : tensor<3xf32>
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %s = stablehlo.reduce(%x init: %z) applies stablehlo.add across dimensions = [0]
       : (tensor<3xf32>, tensor<f32>) -> tensor<f32>
  %k = stablehlo.convert %s : (tensor<f32>) -> tensor<i32>""",
    # float to integer conversion: not folded
    "float to int": """  %x = stablehlo.constant dense<1.5> : tensor<f32>
  %k = stablehlo.convert %x : (tensor<f32>) -> tensor<i32>""",
    # integer division by zero: the device's own result
    "division by zero": """  %x = stablehlo.constant dense<7> : tensor<i32>
  %z = stablehlo.constant dense<0> : tensor<i32>
  %k = stablehlo.divide %x, %z : tensor<i32>""",
}


@pytest.mark.parametrize("kind", KEPT)
def test_predicates_not_folded_keep_their_host_branch(kind: str) -> None:
    text = _case(KEPT[kind])
    plan = lower_function(frontend.parse(text)).plan
    assert _host_branches(plan.steps) == 1
    a = rand((6,))
    (out,) = backend_opencl.compile_stablehlo(text)(a)
    assert any(np.allclose(out, f(a), rtol=1e-5, atol=1e-6) for f in BRANCHES)


def test_a_parameter_index_stays_a_host_branch() -> None:
    text = module(f"(%k: tensor<i32>, %a: {V}) -> {V}", f"""
  %r = "stablehlo.case"(%k) ({{
    %y = stablehlo.negate %a : {V}
    stablehlo.return %y : {V}
  }}, {{
    %y = stablehlo.exponential %a : {V}
    stablehlo.return %y : {V}
  }}) : (tensor<i32>) -> {V}
  return %r : {V}""")
    assert _host_branches(lower_function(frontend.parse(text)).plan.steps) == 1
    exe, a = backend_opencl.compile_stablehlo(text), rand((6,))
    np.testing.assert_allclose(exe(np.int32(1), a)[0], np.exp(a), rtol=1e-5)
    np.testing.assert_allclose(exe(np.int32(0), a)[0], -a)


ERROR_IF = module(f"(%a: {V}) -> {V}", f"""
  %t = stablehlo.constant dense<[0.0, 0.5, 1.0]> : tensor<3xf32>
  %lo = stablehlo.slice %t [0:2] : (tensor<3xf32>) -> tensor<2xf32>
  %hi = stablehlo.slice %t [1:3] : (tensor<3xf32>) -> tensor<2xf32>
  %bad = stablehlo.compare GE, %lo, %hi, FLOAT : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xi1>
  %f = stablehlo.constant dense<false> : tensor<i1>
  %any = stablehlo.reduce(%bad init: %f) applies stablehlo.or across dimensions = [0]
         : (tensor<2xi1>, tensor<i1>) -> tensor<i1>
  %p = stablehlo.not %any : tensor<i1>
  %r = "stablehlo.if"(%p) ({{
    %y = stablehlo.sine %a : {V}
    stablehlo.return %y : {V}
  }}, {{
    %y = stablehlo.custom_call @xla_ffi_python_cpu_callback(%a)
         {{mhlo.backend_config = {{index = 0 : ui64}}}} : ({V}) -> {V}
    stablehlo.return %y : {V}
  }}) : (tensor<i1>) -> {V}
  %z = stablehlo.multiply %r, %a : {V}
  return %z : {V}""")


def test_an_error_check_on_constants_leaves_no_callback() -> None:
    """equinox's ``error_if`` on static values: the check passes when compiling, so
    the callback raising the error is gone from the plan and never called."""
    plan = lower_function(frontend.parse(ERROR_IF), host_callbacks=1).plan
    assert _host_branches(plan.steps) == 0
    assert not any(isinstance(s, Callback) for s in plan.steps)
    calls: list[np.ndarray] = []
    exe = backend_opencl.compile_stablehlo(ERROR_IF, host_callbacks=[calls.append])
    a = rand((6,))
    np.testing.assert_allclose(exe(a)[0], np.sin(a) * a, rtol=1e-5, atol=1e-6)
    assert calls == []


def test_a_branch_in_a_loop_body_on_a_loop_value_is_kept() -> None:
    """Inside a loop the predicate depends on the iteration: not folded; a constant one
    in the same body is."""
    text = module(f"(%a: {V}) -> {V}", f"""
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %0:2 = stablehlo.while(%i = %c0, %v = %a) : tensor<i32>, {V}
   cond {{
    %n = stablehlo.constant dense<4> : tensor<i32>
    %p = stablehlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  }} do {{
    %two = stablehlo.constant dense<2> : tensor<i32>
    %r = stablehlo.remainder %i, %two : tensor<i32>
    %b = "stablehlo.case"(%r) ({{
      %y = stablehlo.sine %v : {V}
      stablehlo.return %y : {V}
    }}, {{
      %one = stablehlo.constant dense<1> : tensor<i32>
      %y = "stablehlo.case"(%one) ({{
        %w = stablehlo.negate %v : {V}
        stablehlo.return %w : {V}
      }}, {{
        %w = stablehlo.cosine %v : {V}
        stablehlo.return %w : {V}
      }}) : (tensor<i32>) -> {V}
      stablehlo.return %y : {V}
    }}) : (tensor<i32>) -> {V}
    %one = stablehlo.constant dense<1> : tensor<i32>
    %j = stablehlo.add %i, %one : tensor<i32>
    stablehlo.return %j, %b : tensor<i32>, {V}
  }}
  return %0#1 : {V}""")
    a = rand((6,))
    want = a.copy()
    for i in range(4):
        want = np.sin(want) if i % 2 == 0 else np.cos(want)
    (out,) = backend_opencl.compile_stablehlo(text)(a)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)
    parsed = frontend.parse(text)
    main = parsed.func("main")
    assert main is not None
    region = fold_constant_branches(inline_calls(parsed, main))
    cases = [o for o in walk(region) if o.name == "stablehlo.case"]
    assert len(cases) == 1  # the inner constant case is gone, the outer kept
