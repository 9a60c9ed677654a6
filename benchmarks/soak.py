"""Soak test: many calls and many distinct compiles in one process, with bounded growth.

Run ``.venv/bin/python benchmarks/soak.py`` (``--calls N --compiles M`` to change the
counts; defaults 100,000 and 1,000).  In one process it

1. calls two small compiled StableHLO programs ``--calls`` times in all, alternating: an
   element-wise one (run as prepared frames) and a counted ``while`` over a 5,000-element
   carry (run step by step on the host), each result checked against numpy every 1,000
   calls (a check of every call would time numpy, not tlc);
2. compiles ``--compiles`` distinct programs (each a different constant, so every one is
   lowered and built anew; the disk caches point at a fresh temporary folder) and calls
   each once, checking its result.

It prints the resident set size, open file descriptors, Python objects and threads at
the start and after each phase's warm-up, at checkpoints and at the end, and exits 1 when
a phase grows beyond its bound after its warm-up: :data:`CALL_GROWTH_MB` over the calls
(nothing may be kept per call), :data:`COMPILE_GROWTH_MB` over the compiles (in-memory
caches are bounded; see ``docs/performance.md``, "Soak"), and any file descriptor.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

CALL_GROWTH_MB = 8.0
"""The most the resident set may grow over the calls after their warm-up."""
COMPILE_GROWTH_MB = 96.0
"""The most the resident set may grow over the distinct compiles after their warm-up (the
in-memory caches fill to their caps during it)."""

ELEMENTWISE = """
func.func public @main(%x: tensor<64x16xf32>, %y: tensor<64x16xf32>) -> tensor<64x16xf32> {
  %t = stablehlo.tanh %x : tensor<64x16xf32>
  %c = stablehlo.constant dense<SCALE> : tensor<64x16xf32>
  %m = stablehlo.multiply %t, %c : tensor<64x16xf32>
  %r = stablehlo.add %m, %y : tensor<64x16xf32>
  func.return %r : tensor<64x16xf32>
}
"""

HOST_LOOP = """
func.func public @main(%a: tensor<5000xf32>, %n: tensor<i32>) -> tensor<5000xf32> {
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %0:2 = stablehlo.while(%i = %c0, %x = %a) : tensor<i32>, tensor<5000xf32>
   cond {
    %p = stablehlo.compare LT, %i, %n, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  } do {
    %one = stablehlo.constant dense<1> : tensor<i32>
    %j = stablehlo.add %i, %one : tensor<i32>
    %y = stablehlo.add %x, %a : tensor<5000xf32>
    stablehlo.return %j, %y : tensor<i32>, tensor<5000xf32>
  }
  func.return %0#1 : tensor<5000xf32>
}
"""


@dataclass(frozen=True)
class Sample:
    """What the process holds at one moment."""

    label: str
    rss_mb: float
    fds: int
    objects: int
    threads: int

    def row(self) -> str:
        """One line of the report."""
        return (f"{self.label:<28} {self.rss_mb:9.1f} MB {self.fds:5d} fds "
                f"{self.objects:9d} objects {self.threads:3d} threads")


def sample(label: str) -> Sample:
    """The process's resident set, open descriptors, Python objects and threads now."""
    gc.collect()
    with open("/proc/self/statm") as f:
        rss_pages = int(f.read().split()[1])
    return Sample(label, rss_pages * os.sysconf("SC_PAGE_SIZE") / 2**20,
                  len(os.listdir("/proc/self/fd")), len(gc.get_objects()),
                  threading.active_count())


def report(s: Sample) -> Sample:
    """Print ``s`` and return it."""
    print(s.row(), flush=True)
    return s


def soak_calls(calls: int) -> tuple[Sample, Sample]:
    """Call the two programs ``calls`` times in all; the samples after warm-up and at
    the end."""
    import backend_opencl

    rng = np.random.default_rng(0)
    flat = backend_opencl.compile_stablehlo(ELEMENTWISE.replace("SCALE", "2.5"))
    loop = backend_opencl.compile_stablehlo(HOST_LOOP)
    x, y = (rng.standard_normal((64, 16)).astype(np.float32) for _ in range(2))
    a = rng.standard_normal(5000).astype(np.float32)
    want_flat = np.tanh(x) * np.float32(2.5) + y
    warm = calls // 10
    start = time.perf_counter()
    after_warm = None
    for i in range(calls):
        if i == warm:
            after_warm = report(sample(f"calls: {i:,} (warm)"))
        if i % 2 == 0:
            (got,) = flat(x, y)
            if i % 1000 == 0:
                np.testing.assert_allclose(got, want_flat, rtol=1e-5, atol=1e-5)
        else:
            n = 1 + (i // 2) % 4
            (got,) = loop(a, np.int32(n))
            if i % 1000 == 1:
                np.testing.assert_allclose(got, (n + 1) * a, rtol=1e-5, atol=1e-5)
        if i and i % (calls // 5) == 0:
            report(sample(f"calls: {i:,}"))
    seconds = time.perf_counter() - start
    end = report(sample(f"calls: {calls:,} ({seconds:.1f} s)"))
    assert after_warm is not None
    return after_warm, end


def soak_compiles(compiles: int) -> tuple[Sample, Sample]:
    """Compile and call ``compiles`` distinct programs; the samples after warm-up and at
    the end."""
    import backend_opencl

    rng = np.random.default_rng(1)
    x, y = (rng.standard_normal((64, 16)).astype(np.float32) for _ in range(2))
    warm = compiles // 4
    start = time.perf_counter()
    after_warm = None
    for i in range(compiles):
        if i == warm:
            after_warm = report(sample(f"compiles: {i:,} (warm)"))
        scale = 1.0 + i / 1024
        exe = backend_opencl.compile_stablehlo(ELEMENTWISE.replace("SCALE", repr(scale)))
        (got,) = exe(x, y)
        np.testing.assert_allclose(got, np.tanh(x) * np.float32(scale) + y,
                                   rtol=1e-5, atol=1e-5)
        del exe
        if i and i % (compiles // 5) == 0:
            report(sample(f"compiles: {i:,}"))
    seconds = time.perf_counter() - start
    end = report(sample(f"compiles: {compiles:,} ({seconds:.1f} s)"))
    assert after_warm is not None
    return after_warm, end


def growth(phase: str, first: Sample, last: Sample, bound_mb: float) -> list[str]:
    """What grew beyond its bound between ``first`` and ``last``."""
    problems = []
    grew = last.rss_mb - first.rss_mb
    print(f"{phase}: resident set {grew:+.1f} MB (bound {bound_mb:.0f}), "
          f"fds {last.fds - first.fds:+d}, objects {last.objects - first.objects:+d}, "
          f"threads {last.threads - first.threads:+d}")
    if grew > bound_mb:
        problems.append(f"{phase}: the resident set grew {grew:.1f} MB")
    if last.fds > first.fds:
        problems.append(f"{phase}: {last.fds - first.fds} file descriptors more")
    if last.threads > first.threads:
        problems.append(f"{phase}: {last.threads - first.threads} threads more")
    return problems


def main() -> int:
    """Run both phases and report; exit status 1 on unbounded growth."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=100_000)
    ap.add_argument("--compiles", type=int, default=1_000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="tlc-soak-") as folder:
        os.environ["TLC_CACHE_DIR"] = folder
        os.environ.setdefault("POCL_CACHE_DIR", str(Path(folder) / "pocl"))
        from backend_opencl.runtime import get_device

        print(f"device: {get_device().label}")
        report(sample("start"))
        problems = growth("calls", *soak_calls(args.calls), CALL_GROWTH_MB)
        problems += growth("compiles", *soak_compiles(args.compiles), COMPILE_GROWTH_MB)
    for line in problems:
        print(f"error: {line}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
