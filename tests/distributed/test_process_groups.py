"""The spec's process-group strategies (stablehlo-spec.md, "Collective ops") and the
choice of strategy per op."""

from __future__ import annotations

import frontend
from backend_opencl.distributed import grid as G
from backend_opencl.distributed.collectives import process_groups

P = G.ProcessGrid


def test_cross_replica_is_the_spec_example() -> None:
    got = G.cross_replica(P(4, 2), [[0, 1], [2, 3]])
    assert got == [[0, 2], [1, 3], [4, 6], [5, 7]]  # [(0,0),(1,0)], [(0,1),(1,1)], ...


def test_cross_partition_is_the_spec_example() -> None:
    got = G.cross_partition(P(4, 2), [[0, 1]])
    assert got == [[0, 1], [2, 3], [4, 5], [6, 7]]


def test_cross_replica_and_partition_is_the_spec_example() -> None:
    got = G.cross_replica_and_partition(P(4, 2), [[0, 1], [2, 3]])
    assert got == [[0, 2, 1, 3], [4, 6, 5, 7]]


def test_flattened_ids_are_ranks() -> None:
    assert G.flattened_ids(P(4, 2), [[0, 1, 2, 3], [4, 5, 6, 7]]) == [[0, 1, 2, 3],
                                                                      [4, 5, 6, 7]]


def test_padding_is_dropped_and_empty_groups_mean_everyone() -> None:
    assert G.id_lists([[0, 1], [2, -1]]) == [[0, 1], [2]]
    assert G.cross_replica(P(3, 1), []) == [[0, 1, 2]]


def test_ranks_know_their_coordinates() -> None:
    g = P(3, 2, rank=5)
    assert (g.replica_id, g.partition_id, g.size) == (2, 1, 6)


def test_permute_pairs_repeat_per_partition_or_replica() -> None:
    assert G.pairs_to_ranks(P(2, 2), [[0, 1]], cross_partitions=False) == [(0, 2), (1, 3)]
    assert G.pairs_to_ranks(P(2, 2), [[0, 1]], cross_partitions=True) == [(0, 1), (2, 3)]


def _op(attrs: str, name: str = "all_reduce") -> object:
    body = ('({\n ^bb0(%a: tensor<f32>, %b: tensor<f32>):\n'
            '  %s = stablehlo.add %a, %b : tensor<f32>\n  stablehlo.return %s : tensor<f32>\n})'
            if name == "all_reduce" else "")
    text = (f'func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {{\n'
            f'  %r = "stablehlo.{name}"(%x) {body} {{{attrs}}} : (tensor<4xf32>) -> '
            f'tensor<4xf32>\n  return %r : tensor<4xf32>\n}}')
    return frontend.parse(text).funcs[0].body.block.ops[0]


def test_channel_and_global_ids_choose_the_strategy() -> None:
    groups = "replica_groups = dense<[[0, 1]]> : tensor<1x2xi64>"
    ch = "channel_handle = #stablehlo.channel_handle<handle = 1, type = 0>"
    grid = P(2, 2)
    assert process_groups(_op(groups), grid) == [[0, 2], [1, 3]]
    assert process_groups(_op(f"{groups}, {ch}"), grid) == [[0, 2, 1, 3]]
    assert process_groups(_op(f"{groups}, {ch}, use_global_device_ids"), grid) == [[0, 1]]
    assert process_groups(_op(f"{groups}, {ch}", "collective_broadcast"),
                          grid) == [[0, 1], [2, 3]]
