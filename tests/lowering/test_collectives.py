"""Tokens and collectives with one process: the spec's results for a group of one."""

from __future__ import annotations

import numpy as np
import pytest

from tensorlang.diagnostics import CompileError
from tests.lowering.conftest import module, rand, run
from tests.lowering.interpret_files import interpret_failures

_ONE = "replica_groups = dense<[[0]]> : tensor<1x1xi64>"
_ADD = """({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = stablehlo.add %a, %b : tensor<f32>
    stablehlo.return %s : tensor<f32>
  })"""


def _identity(op: str, attrs: str, region: str = "") -> str:
    t = "tensor<4x3xf32>"
    return module(f"(%x: {t}) -> {t}", f"""
  %0 = "stablehlo.{op}"(%x) {region} {{{attrs}}} : ({t}) -> {t}
  %1 = stablehlo.multiply %0, %x : {t}
  return %1 : {t}""")


@pytest.mark.parametrize("op,attrs,region", [
    ("all_reduce", _ONE, _ADD),
    ("all_gather", f"all_gather_dim = 0 : i64, {_ONE}", ""),
    ("reduce_scatter", f"scatter_dimension = 1 : i64, {_ONE}", _ADD),
    ("all_to_all", f"split_dimension = 0 : i64, concat_dimension = 1 : i64, "
                   f"split_count = 1 : i64, {_ONE}", ""),
    ("collective_broadcast", _ONE, ""),
    ("collective_permute", "source_target_pairs = dense<[[0, 0]]> : tensor<1x2xi64>", ""),
])
def test_one_process_collectives_are_identities(op: str, attrs: str, region: str) -> None:
    x = rand((4, 3))
    np.testing.assert_array_equal(run(_identity(op, attrs, region), x)[0], x * x)


def test_collective_permute_without_a_source_gives_zeros() -> None:
    x = rand((4, 3))
    text = _identity("collective_permute",
                     "source_target_pairs = dense<[]> : tensor<0x2xi64>")
    np.testing.assert_array_equal(run(text, x)[0], np.zeros((4, 3), np.float32))


def test_more_than_one_process_is_a_compile_error() -> None:
    text = _identity("all_reduce", "replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>", _ADD)
    with pytest.raises(CompileError, match="all_reduce' across more than one process"):
        run(text, rand((4, 3)))


def test_ids_and_tokens() -> None:
    text = module("(%x: tensor<2xui32>) -> tensor<2xui32>", """
  %t0 = stablehlo.create_token : !stablehlo.token
  %t1 = stablehlo.after_all : !stablehlo.token
  %t2 = stablehlo.after_all %t0, %t1 : !stablehlo.token
  %r = stablehlo.replica_id : tensor<ui32>
  %p = stablehlo.partition_id : tensor<ui32>
  %s = stablehlo.add %r, %p : tensor<ui32>
  %b = stablehlo.broadcast_in_dim %s, dims = [] : (tensor<ui32>) -> tensor<2xui32>
  %0 = stablehlo.add %b, %x : tensor<2xui32>
  return %0 : tensor<2xui32>""")
    x = np.array([5, 9], np.uint32)
    np.testing.assert_array_equal(run(text, x)[0], x)


@pytest.mark.parametrize("name", ["after_all", "optimization_barrier"])
def test_interpret_files(name: str) -> None:
    assert interpret_failures(name) == {}
