"""Scaling over MPI ranks on this machine (docs/distributed.md): a data-parallel MLP
training step (gradients all-reduced) and a tensor-parallel matmul (column shards
all-gathered) on 1, 2 and 4 ranks, against the MPI ping-pong bandwidth measured in the
same run.

    .venv/bin/python benchmarks/mpi_scaling.py [--ranks 1,2,4] [--steps 20] [--quick]

The driver starts ``mpiexec -n N`` of this file with ``--rank-job`` for each N; rank 0
prints one JSON line per measurement, the driver a table.  Strong scaling: the global
batch (data-parallel) and the matrix (tensor-parallel) stay the same, each rank gets
1/N of it.  Not a test: nothing is asserted about time.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

ADD = """({
  ^bb0(%l: tensor<f32>, %r: tensor<f32>):
    %s = stablehlo.add %l, %r : tensor<f32>
    stablehlo.return %s : tensor<f32>
})"""


def mlp_step(n: int, batch: int, d: int, h: int, o: int) -> str:
    """One SGD step of a 2-layer ReLU MLP on this rank's ``batch / n`` rows; the weight
    gradients are summed over the ``n`` replicas with one all_reduce."""
    b = batch // n
    f = "xf32>"
    ids = ", ".join(map(str, range(n)))
    return f"""
module @dp attributes {{mhlo.num_replicas = {n} : i32, mhlo.num_partitions = 1 : i32}} {{
  func.func @main(%x: tensor<{b}x{d}{f}, %y: tensor<{b}x{o}{f}, %w1: tensor<{d}x{h}{f},
                  %w2: tensor<{h}x{o}{f}) -> (tensor<{d}x{h}{f}, tensor<{h}x{o}{f}) {{
    %a = stablehlo.dot_general %x, %w1, contracting_dims = [1] x [0]
        : (tensor<{b}x{d}{f}, tensor<{d}x{h}{f}) -> tensor<{b}x{h}{f}
    %z = stablehlo.constant dense<0.0> : tensor<{b}x{h}{f}
    %hh = stablehlo.maximum %a, %z : tensor<{b}x{h}{f}
    %p = stablehlo.dot_general %hh, %w2, contracting_dims = [1] x [0]
        : (tensor<{b}x{h}{f}, tensor<{h}x{o}{f}) -> tensor<{b}x{o}{f}
    %dp = stablehlo.subtract %p, %y : tensor<{b}x{o}{f}
    %gw2 = stablehlo.dot_general %hh, %dp, contracting_dims = [0] x [0]
        : (tensor<{b}x{h}{f}, tensor<{b}x{o}{f}) -> tensor<{h}x{o}{f}
    %dh0 = stablehlo.dot_general %dp, %w2, contracting_dims = [1] x [1]
        : (tensor<{b}x{o}{f}, tensor<{h}x{o}{f}) -> tensor<{b}x{h}{f}
    %m = stablehlo.compare GT, %a, %z, FLOAT : (tensor<{b}x{h}{f}, tensor<{b}x{h}{f})
        -> tensor<{b}x{h}xi1>
    %dh = stablehlo.select %m, %dh0, %z : tensor<{b}x{h}xi1>, tensor<{b}x{h}{f}
    %gw1 = stablehlo.dot_general %x, %dh, contracting_dims = [0] x [0]
        : (tensor<{b}x{d}{f}, tensor<{b}x{h}{f}) -> tensor<{d}x{h}{f}
    %g:2 = "stablehlo.all_reduce"(%gw1, %gw2) {ADD} {{
        replica_groups = dense<[[{ids}]]> : tensor<1x{n}xi64>}}
        : (tensor<{d}x{h}{f}, tensor<{h}x{o}{f}) -> (tensor<{d}x{h}{f}, tensor<{h}x{o}{f})
    %lr1 = stablehlo.constant dense<0.001> : tensor<{d}x{h}{f}
    %lr2 = stablehlo.constant dense<0.001> : tensor<{h}x{o}{f}
    %u1 = stablehlo.multiply %lr1, %g#0 : tensor<{d}x{h}{f}
    %u2 = stablehlo.multiply %lr2, %g#1 : tensor<{h}x{o}{f}
    %w1n = stablehlo.subtract %w1, %u1 : tensor<{d}x{h}{f}
    %w2n = stablehlo.subtract %w2, %u2 : tensor<{h}x{o}{f}
    return %w1n, %w2n : tensor<{d}x{h}{f}, tensor<{h}x{o}{f}
  }}
}}
"""


def tp_matmul(n: int, m: int, k: int, cols: int) -> str:
    """``x @ w`` with ``w``'s columns split over ``n`` partitions; the column blocks are
    all-gathered so every rank holds the whole product."""
    c = cols // n
    ids = ", ".join(map(str, range(n)))
    return f"""
module @tp attributes {{mhlo.num_replicas = 1 : i32, mhlo.num_partitions = {n} : i32}} {{
  func.func @main(%x: tensor<{m}x{k}xf32>, %w: tensor<{k}x{c}xf32>) -> tensor<{m}x{cols}xf32> {{
    %y = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0]
        : (tensor<{m}x{k}xf32>, tensor<{k}x{c}xf32>) -> tensor<{m}x{c}xf32>
    %g = "stablehlo.all_gather"(%y) {{all_gather_dim = 1 : i64,
        replica_groups = dense<[[{ids}]]> : tensor<1x{n}xi64>,
        channel_handle = #stablehlo.channel_handle<handle = 1, type = 1>,
        use_global_device_ids}} : (tensor<{m}x{c}xf32>) -> tensor<{m}x{cols}xf32>
    return %g : tensor<{m}x{cols}xf32>
  }}
}}
"""


# -- one rank ------------------------------------------------------------------------------
def _ping_pong(comm: object, size: int, reps: int) -> float | None:
    """Bytes per second between ranks 0 and 1 (None on one rank)."""
    from mpi4py import MPI

    if comm.size < 2:
        return None
    buf = np.ones(size, dtype=np.uint8)
    times = []
    for _ in range(3):
        comm.Barrier()
        start = MPI.Wtime()
        for _ in range(reps):
            if comm.rank == 0:
                comm.Send(buf, dest=1)
                comm.Recv(buf, source=1)
            elif comm.rank == 1:
                comm.Recv(buf, source=0)
                comm.Send(buf, dest=0)
        times.append(MPI.Wtime() - start)
    return 2 * size * reps / min(times)


def _time_program(exe: object, inputs: list[np.ndarray], steps: int, comm: object
                  ) -> dict[str, float]:
    """Median step time and, per step, collective time and bytes this rank moved."""
    exe(*inputs)  # warm: builds, first transfers
    exe.stats.update(segments_s=0.0, collectives_s=0.0)
    moved0 = exe.ctx.transport.bytes_moved
    times = []
    for _ in range(steps):
        comm.Barrier()
        start = time.perf_counter()
        exe(*inputs)
        times.append(time.perf_counter() - start)
    slowest = comm.allreduce(statistics.median(times), op=_mpi_max())
    return {"step_ms": slowest * 1e3,
            "collective_ms": exe.stats["collectives_s"] / steps * 1e3,
            "bytes_per_step": (exe.ctx.transport.bytes_moved - moved0) / steps}


def _mpi_max() -> object:
    from mpi4py import MPI

    return MPI.MAX


def rank_job(args: argparse.Namespace) -> None:
    """Measure everything on this MPI world; rank 0 prints JSON lines."""
    from mpi4py import MPI

    from backend_opencl import distributed

    comm = MPI.COMM_WORLD
    n, rank = comm.size, comm.rank
    rng = np.random.default_rng(rank)
    out: list[dict[str, object]] = []
    for size in (8, 1 << 20, 16 << 20):
        bw = _ping_pong(comm, size, 5 if size > 1 << 20 else 50)
        if bw is not None:
            out.append({"what": "ping-pong", "bytes": size, "GB/s": bw / 1e9})
    batch, d, h, o = (256, 128, 256, 32) if args.quick else (1024, 256, 512, 64)
    exe = distributed.compile_stablehlo(mlp_step(n, batch, d, h, o))
    b = batch // n
    inputs = [rng.standard_normal(s).astype(np.float32) for s in ((b, d), (b, o))]
    w_rng = np.random.default_rng(99)  # the same weights on every replica
    inputs += [w_rng.standard_normal(s).astype(np.float32) * 0.05 for s in ((d, h), (h, o))]
    out.append({"what": "dp-mlp-step", "batch": batch, **_time_program(
        exe, inputs, args.steps, comm)})
    m = 256 if args.quick else 512
    exe = distributed.compile_stablehlo(tp_matmul(n, m, m, m))
    x = np.random.default_rng(5).standard_normal((m, m)).astype(np.float32)
    w = rng.standard_normal((m, m // n)).astype(np.float32)
    out.append({"what": "tp-matmul", "m": m, **_time_program(exe, [x, w], args.steps, comm)})
    if rank == 0:
        for row in out:
            print(json.dumps({"ranks": n, **row}), flush=True)


# -- driver --------------------------------------------------------------------------------
def _best(rows: list[dict[str, object]]) -> list[dict[str, object]]:
    """One row per measurement and rank count: the fastest step (highest bandwidth)."""
    best: dict[tuple[object, ...], dict[str, object]] = {}
    for r in rows:
        key = (r["what"], r["ranks"], r.get("bytes"))
        old = best.get(key)
        better = (r["step_ms"] < old["step_ms"]) if old and "step_ms" in r else \
            (old is None or r["GB/s"] > old["GB/s"])
        if old is None or better:
            best[key] = r
    return list(best.values())


def _table(rows: list[dict[str, object]]) -> str:
    rows = _best(rows)
    bw = {r["ranks"]: r["GB/s"] for r in rows if r["what"] == "ping-pong"
          and r["bytes"] == 16 << 20}
    base = {r["what"]: r["step_ms"] for r in rows if r["ranks"] == 1 and "step_ms" in r}
    lines = ["| program | ranks | step ms | vs 1 rank | collective ms | MB moved/rank/step "
             "| collective GB/s | ping-pong GB/s (16 MiB) |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "step_ms" not in r:
            continue
        mb = r["bytes_per_step"] / 1e6
        rate = r["bytes_per_step"] / (r["collective_ms"] / 1e3) / 1e9 if r["collective_ms"] \
            else 0.0
        ping = bw.get(r["ranks"])
        lines.append(f"| {r['what']} | {r['ranks']} | {r['step_ms']:.2f} | "
                     f"{base.get(r['what'], r['step_ms']) / r['step_ms']:.2f}x | "
                     f"{r['collective_ms']:.2f} | {mb:.2f} | {rate:.2f} | "
                     f"{'-' if ping is None else f'{ping:.2f}'} |")
    lat = [r for r in rows if r["what"] == "ping-pong" and r["bytes"] == 8]
    for r in lat:
        lines.append(f"\nping-pong 8 B on {r['ranks']} ranks: "
                     f"{8 * 2 / (r['GB/s'] * 1e9) * 1e6 / 2:.1f} µs one way")
    return "\n".join(lines)


def main() -> int:
    """Run the rank jobs for each count and print the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", default="1,2,4")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--quick", action="store_true", help="smaller sizes, fewer steps")
    ap.add_argument("--repeat", type=int, default=2,
                    help="rounds over the rank counts; the table keeps each row's best")
    ap.add_argument("--rank-job", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.rank_job:
        rank_job(args)
        return 0
    from backend_opencl.distributed.launch import child_environment, mpiexec_command

    rows = []
    counts = [int(x) for x in args.ranks.split(",")]
    for n in [n for _ in range(args.repeat) for n in counts]:  # interleaved repeats
        cmd = mpiexec_command(n, [sys.executable, __file__, "--rank-job", "--steps",
                                  str(args.steps if not args.quick else 5)]
                              + (["--quick"] if args.quick else []))
        done = subprocess.run(cmd, capture_output=True, text=True, env=child_environment(n))
        if done.returncode != 0:
            print(done.stdout + done.stderr, file=sys.stderr)
            return 1
        rows += [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
        print(f"{n} rank(s) done", file=sys.stderr)
    print(_table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
