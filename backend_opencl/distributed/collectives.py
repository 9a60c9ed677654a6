"""The collective ops, send and recv of one process, run on the host over a transport.

Each function takes the op, its operands as numpy arrays (tokens are None) and the
:class:`Context`, and returns the op's results.  Process groups follow the spec: the
strategy depends on the op, its ``channel_handle`` and ``use_global_device_ids``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from backend_opencl.distributed import grid as G
from backend_opencl.distributed.reduction import Reducer
from backend_opencl.distributed.transport import PERMUTE_TAG, Transport
from frontend.ir.core import Op
from frontend.ir.types import TensorType, Type
from tensorlang.diagnostics import TlcError


@dataclass
class Context:
    """What a host step needs: the grid, the transport, the device (for reduction
    bodies) and, for send / recv, the ranks that receive on each channel."""

    grid: G.ProcessGrid
    transport: Transport
    device: object = None
    receivers: dict[int, list[int]] = field(default_factory=dict)
    reducers: dict[int, Reducer] = field(default_factory=dict)

    def reducer(self, op: Op) -> Reducer:
        """The (cached) reduction of ``op``'s body."""
        r = self.reducers.get(id(op))
        if r is None:
            r = self.reducers[id(op)] = Reducer(op, self.device)
        return r


def channel_id(op: Op) -> int:
    """The op's ``channel_handle.handle`` (0 when absent)."""
    handle = op.attr("channel_handle")
    return int(handle.get("handle", 0)) if isinstance(handle, dict) else 0


def process_groups(op: Op, grid: G.ProcessGrid) -> list[list[int]]:
    """The op's process groups as lists of ranks (spec, "Collective ops")."""
    kind = op.name.split(".", 1)[1]
    groups = G.id_lists(op.attr("replica_groups"))
    channel = channel_id(op)
    if kind in ("all_to_all", "collective_broadcast"):
        strategy = G.cross_replica if channel <= 0 else G.cross_partition
    elif channel <= 0 and not op.attr("use_global_device_ids", False):
        strategy = G.cross_replica
    elif not op.attr("use_global_device_ids", False):
        strategy = G.cross_replica_and_partition
    else:
        strategy = G.flattened_ids
    return strategy(grid, groups, op.name)


def _group(op: Op, ctx: Context) -> list[int] | None:
    return G.my_group(process_groups(op, ctx.grid), ctx.grid.rank)


def _zeros(op: Op, i: int) -> np.ndarray:
    t = op.result_types[i]
    assert isinstance(t, TensorType)
    return np.zeros(t.static_shape, dtype=t.element.dtype)


def _not_in_group(op: Op, ctx: Context) -> TlcError:
    return TlcError(f"{op.loc}: error: '{op.name}': process {ctx.grid.rank} (replica "
                    f"{ctx.grid.replica_id}, partition {ctx.grid.partition_id}) is in none "
                    "of its process groups")


def all_reduce(op: Op, args: list, ctx: Context) -> list:
    """Every member gets the reduction of the group's operands."""
    group = _group(op, ctx)
    if group is None:
        raise _not_in_group(op, ctx)
    return ctx.reducer(op).allreduce(ctx.transport, group, args)


def collective_reduce(op: Op, args: list, ctx: Context) -> list:
    """The group's first member gets the reduction, the others zeros."""
    group = _group(op, ctx)
    if group is None:
        raise _not_in_group(op, ctx)
    reduced = ctx.reducer(op).allreduce(ctx.transport, group, args)
    if group[0] == ctx.grid.rank:
        return reduced
    return [_zeros(op, i) for i in range(len(reduced))]


def reduce_scatter(op: Op, args: list, ctx: Context) -> list:
    """The reduction split along ``scatter_dimension``; member i keeps part i."""
    group = _group(op, ctx)
    if group is None:
        raise _not_in_group(op, ctx)
    (full,) = ctx.reducer(op).allreduce(ctx.transport, group, args)
    parts = np.split(full, len(group), axis=op.int_attr("scatter_dimension"))
    return [np.ascontiguousarray(parts[group.index(ctx.grid.rank)])]


def all_gather(op: Op, args: list, ctx: Context) -> list:
    """The group's operands concatenated along ``all_gather_dim``."""
    group = _group(op, ctx)
    if group is None:
        raise _not_in_group(op, ctx)
    dim = op.int_attr("all_gather_dim")
    out = []
    for x in args:
        stacked = ctx.transport.allgather(group, x)
        out.append(np.ascontiguousarray(np.concatenate(list(stacked), axis=dim)))
    return out


def all_to_all(op: Op, args: list, ctx: Context) -> list:
    """Split along ``split_dimension``, piece j to member j, concatenate what arrives
    along ``concat_dimension``."""
    group = _group(op, ctx)
    if group is None:
        raise _not_in_group(op, ctx)
    split, concat = op.int_attr("split_dimension"), op.int_attr("concat_dimension")
    count = op.int_attr("split_count")
    if count != len(group):
        raise TlcError(f"{op.loc}: error: '{op.name}': split_count {count} differs from "
                       f"the process group size {len(group)}")
    out = []
    for x in args:
        pieces = np.stack(np.split(x, count, axis=split))
        got = ctx.transport.alltoall(group, pieces)
        out.append(np.ascontiguousarray(np.concatenate(list(got), axis=concat)))
    return out


def collective_broadcast(op: Op, args: list, ctx: Context) -> list:
    """The operands of the group's first member (with ``has_dynamic_root``, of the member
    the root operand names, per result); zeros outside every group."""
    group = _group(op, ctx)
    n = len(op.result_types)
    if group is None:
        return [_zeros(op, i) for i in range(n)]
    roots = [0] * n
    if op.attr("has_dynamic_root"):
        roots = [int(r) for r in np.asarray(args[n]).reshape(-1)]
        if len(roots) != n or any(not 0 <= r < len(group) for r in roots):
            raise TlcError(f"{op.loc}: error: 'stablehlo.collective_broadcast': root "
                           f"indices {roots} outside the process group of {len(group)}")
    return [ctx.transport.bcast(group, x, root) for x, root in zip(args[:n], roots,
                                                                   strict=True)]


def collective_permute(op: Op, args: list, ctx: Context) -> list:
    """Send to the targets of this process, receive from its source (zeros when none)."""
    pairs = G.id_lists(op.attr("source_target_pairs"))
    ranks = G.pairs_to_ranks(ctx.grid, pairs, channel_id(op) > 0, op.name)
    me = ctx.grid.rank
    sends = [(t, args[0]) for s, t in ranks if s == me]
    out = _zeros(op, 0)
    recvs: list[tuple[int | None, np.ndarray]] = [(s, out) for s, t in ranks if t == me]
    ctx.transport.exchange(sends, recvs, PERMUTE_TAG)
    return [out]


def _channel_tag(op: Op) -> int:
    return 2 + channel_id(op) % 30000


def _pair_ranks(op: Op) -> list[tuple[int, int]]:
    return [(p[0], p[1]) for p in G.id_lists(op.attr("source_target_pairs"))]


def send(op: Op, args: list, ctx: Context) -> list:
    """Send the data operands on the op's channel (the receiver: ``source_target_pairs``
    or the one process whose program receives on that channel)."""
    me, channel = ctx.grid.rank, channel_id(op)
    if op.attr("source_target_pairs") is not None:
        targets = [t for s, t in _pair_ranks(op) if s == me]
    else:
        targets = [r for r in ctx.receivers.get(channel, []) if r != me] or \
            ctx.receivers.get(channel, [])
        if len(targets) != 1:
            raise TlcError(f"{op.loc}: error: 'stablehlo.send' on channel {channel}: "
                           f"{len(targets)} processes receive on it; give "
                           "source_target_pairs to say which")
    for x in args:
        if x is not None:
            ctx.transport.exchange([(t, x) for t in targets], [], _channel_tag(op),
                                   wait_sends=False)
    return [None]


def recv(op: Op, args: list, ctx: Context) -> list:
    """Receive the data results from the op's channel (any sender unless
    ``source_target_pairs`` names it); the token last."""
    me = ctx.grid.rank
    source = None
    if op.attr("source_target_pairs") is not None:
        sources = [s for s, t in _pair_ranks(op) if t == me]
        source = sources[0] if sources else None
    out: list[np.ndarray | None] = []
    for i, t in enumerate(op.result_types):
        if isinstance(t, TensorType):
            buf = _zeros(op, i)
            ctx.transport.exchange([], [(source, buf)], _channel_tag(op))
            out.append(buf)
        else:
            out.append(None)
    return out


HOST_OPS: dict[str, Callable[[Op, list, Context], list]] = {
    "stablehlo.all_reduce": all_reduce,
    "stablehlo.collective_reduce": collective_reduce,
    "stablehlo.reduce_scatter": reduce_scatter,
    "stablehlo.all_gather": all_gather,
    "stablehlo.all_to_all": all_to_all,
    "stablehlo.collective_broadcast": collective_broadcast,
    "stablehlo.collective_permute": collective_permute,
    "stablehlo.send": send,
    "stablehlo.recv": recv,
}
"""The host implementation of each op of :data:`segments.HOST_OPS`."""


def run_host_op(op: Op, args: list, ctx: Context) -> list:
    """The results of ``op`` for this process."""
    data = [a for a, v in zip(args, op.operands, strict=True)
            if isinstance(v.type, TensorType)]
    results = HOST_OPS[op.name](op, data, ctx)
    return [r if r is None else _as_result(r, t)
            for r, t in zip(results, op.result_types, strict=True)]


def _as_result(value: object, t: Type) -> np.ndarray:
    """A host op's result as an array of its tensor type ``t`` (a token's is None)."""
    assert isinstance(t, TensorType), t
    return np.asarray(value, dtype=t.element.dtype)
