"""Cutting a function into device segments and host steps (no MPI, no device)."""

from __future__ import annotations

import pytest

import frontend
from backend_opencl.distributed.grid import ProcessGrid
from backend_opencl.distributed.segments import ControlStep, DeviceStep, HostStep, segment
from tensorlang.diagnostics import TlcError

TEXT = """
func.func @f(%x: tensor<4xf32>, %t: !stablehlo.token) -> (tensor<4xf32>, !stablehlo.token) {
  %e = stablehlo.exponential %x : tensor<4xf32>
  %dead = stablehlo.negate %x : tensor<4xf32>
  %s = "stablehlo.all_reduce"(%e) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %r = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %r : tensor<f32>
  }) {replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>} : (tensor<4xf32>) -> tensor<4xf32>
  %id = stablehlo.partition_id : tensor<ui32>
  %f = stablehlo.convert %id : (tensor<ui32>) -> tensor<f32>
  %b = stablehlo.broadcast_in_dim %f, dims = [] : (tensor<f32>) -> tensor<4xf32>
  %o = stablehlo.add %s, %b : tensor<4xf32>
  %t2 = "stablehlo.send"(%o, %t) {channel_handle = #stablehlo.channel_handle<handle = 1,
      type = 1>, is_host_transfer = false} : (tensor<4xf32>, !stablehlo.token) -> !stablehlo.token
  return %o, %t2 : tensor<4xf32>, !stablehlo.token
}
"""


def _steps(text: str, grid: ProcessGrid) -> list[object]:
    return segment(frontend.parse(text), "f", grid).steps


def test_runs_between_collectives_become_segments_and_dead_ops_vanish() -> None:
    steps = _steps(TEXT, ProcessGrid(1, 2, rank=1))
    kinds = [type(s).__name__ for s in steps]
    assert kinds == ["DeviceStep", "HostStep", "DeviceStep", "HostStep"]
    first, _, second, _ = steps
    assert isinstance(first, DeviceStep) and "negate" not in first.text
    assert isinstance(second, DeviceStep)
    assert "partition_id" not in second.text and "dense<1> : tensor<ui32>" in second.text
    assert [h.op.name for h in steps if isinstance(h, HostStep)] == [
        "stablehlo.all_reduce", "stablehlo.send"]


def test_a_loop_holding_a_collective_is_a_host_control_step() -> None:
    text = """
func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c = stablehlo.constant dense<0> : tensor<i32>
  %r:2 = stablehlo.while(%i = %c, %v = %x) : tensor<i32>, tensor<4xf32>
   cond {
    %p = stablehlo.compare LT, %i, %c, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  } do {
    %s = "stablehlo.collective_permute"(%v) {source_target_pairs = dense<[[0, 0]]>
        : tensor<1x2xi64>} : (tensor<4xf32>) -> tensor<4xf32>
    stablehlo.return %i, %s : tensor<i32>, tensor<4xf32>
  }
  return %r#1 : tensor<4xf32>
}
"""
    steps = _steps(text, ProcessGrid(1, 1))
    loop = next(s for s in steps if isinstance(s, ControlStep))
    cond, body = loop.regions
    assert [type(s).__name__ for s in body.steps] == ["HostStep"]
    assert [type(s).__name__ for s in cond.steps] == ["DeviceStep"]


def test_a_collective_in_a_reduction_body_is_a_clear_error() -> None:
    text = """
func.func @f(%x: tensor<4xf32>) -> tensor<f32> {
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %r = stablehlo.reduce(%x init: %z) across dimensions = [0]
      : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
   reducer(%a: tensor<f32>, %b: tensor<f32>) {
    %s = "stablehlo.all_reduce"(%a) ({
      ^bb0(%p: tensor<f32>, %q: tensor<f32>):
        %t = stablehlo.add %p, %q : tensor<f32>
        stablehlo.return %t : tensor<f32>
    }) {replica_groups = dense<[[0]]> : tensor<1x1xi64>} : (tensor<f32>) -> tensor<f32>
    %u = stablehlo.add %s, %b : tensor<f32>
    stablehlo.return %u : tensor<f32>
  }
  return %r : tensor<f32>
}
"""
    with pytest.raises(TlcError, match="inside 'stablehlo.reduce'"):
        _steps(text, ProcessGrid(1, 1))
