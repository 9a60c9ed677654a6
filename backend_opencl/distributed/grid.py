"""The StableHLO process grid and the spec's process-group strategies.

A process is a pair ``(replica_id, partition_id)``; its MPI rank is its flattened id
``replica_id * num_partitions + partition_id``.  Every collective splits the grid into
process groups by one of four strategies (spec, "Collective ops"); a group is a list of
ranks in the order the op's semantics use (concatenation order, root first).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tensorlang.diagnostics import TlcError


@dataclass(frozen=True)
class ProcessGrid:
    """``num_replicas`` x ``num_partitions`` processes; ``rank`` is this process."""

    num_replicas: int
    num_partitions: int
    rank: int = 0

    @property
    def size(self) -> int:
        """The number of processes (the MPI world size)."""
        return self.num_replicas * self.num_partitions

    @property
    def replica_id(self) -> int:
        """This process's replica."""
        return self.rank // self.num_partitions

    @property
    def partition_id(self) -> int:
        """This process's partition."""
        return self.rank % self.num_partitions

    def flat(self, replica: int, partition: int) -> int:
        """The rank of process ``(replica, partition)``."""
        return replica * self.num_partitions + partition


def id_lists(groups: object) -> list[list[int]]:
    """A 2-D id attribute (``replica_groups``) as lists, the -1 padding dropped."""
    if groups is None:
        return []
    array = np.asarray(groups, dtype=np.int64)
    if array.size == 0:
        return []
    return [[int(x) for x in row if x >= 0] for row in array.reshape(array.shape[0], -1)]


def _all_if_empty(groups: list[list[int]], count: int) -> list[list[int]]:
    """No groups given means one group of every id."""
    return groups if groups else [list(range(count))]


def _check_ids(groups: list[list[int]], count: int, what: str, op: str) -> None:
    for g in groups:
        for i in g:
            if not 0 <= i < count:
                raise TlcError(f"error: '{op}': {what} id {i} is outside the process grid "
                               f"(0..{count - 1})")


def cross_replica(grid: ProcessGrid, groups: list[list[int]], op: str = "") -> list[list[int]]:
    """Each replica group, once per partition."""
    groups = _all_if_empty(groups, grid.num_replicas)
    _check_ids(groups, grid.num_replicas, "replica", op)
    return [[grid.flat(r, p) for r in g] for g in groups for p in range(grid.num_partitions)]


def cross_partition(grid: ProcessGrid, groups: list[list[int]],
                    op: str = "") -> list[list[int]]:
    """Each partition group, once per replica."""
    groups = _all_if_empty(groups, grid.num_partitions)
    _check_ids(groups, grid.num_partitions, "partition", op)
    return [[grid.flat(r, p) for p in g] for g in groups for r in range(grid.num_replicas)]


def cross_replica_and_partition(grid: ProcessGrid, groups: list[list[int]],
                                op: str = "") -> list[list[int]]:
    """Each replica group times every partition, partition-major."""
    groups = _all_if_empty(groups, grid.num_replicas)
    _check_ids(groups, grid.num_replicas, "replica", op)
    return [[grid.flat(r, p) for p in range(grid.num_partitions) for r in g] for g in groups]


def flattened_ids(grid: ProcessGrid, groups: list[list[int]], op: str = "") -> list[list[int]]:
    """The groups as given, in flattened ids."""
    groups = _all_if_empty(groups, grid.size)
    _check_ids(groups, grid.size, "flattened process", op)
    return [list(g) for g in groups]


def my_group(groups: list[list[int]], rank: int) -> list[int] | None:
    """The group holding ``rank`` (None when it is in none)."""
    return next((g for g in groups if rank in g), None)


def pairs_to_ranks(grid: ProcessGrid, pairs: list[list[int]], cross_partitions: bool,
                   op: str = "") -> list[tuple[int, int]]:
    """``source_target_pairs`` of replica (or partition) ids as (source, target) ranks,
    repeated for every partition (or replica)."""
    count = grid.num_partitions if cross_partitions else grid.num_replicas
    _check_ids(pairs, count, "partition" if cross_partitions else "replica", op)
    out = []
    if cross_partitions:
        for r in range(grid.num_replicas):
            out += [(grid.flat(r, s), grid.flat(r, t)) for s, t in pairs]
    else:
        for p in range(grid.num_partitions):
            out += [(grid.flat(s, p), grid.flat(t, p)) for s, t in pairs]
    return out
