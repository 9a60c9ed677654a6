"""Four processes at once on one fresh disk cache (``TLC_CACHE_DIR``): each compiles and
runs the examples (the same programs in every process) and a program of its own,
compiles and runs a tensor-language kernel and runs ``tlc tune`` on another, for several
rounds, with the in-memory caches emptied between rounds so that every round goes to
the disk.  Every result is checked; afterwards the cache holds no temporary file and
every entry loads.  Where Intel's CPU runtime is loaded, two of the processes use it, so
that pyopencl's binary cache is shared too.

Run as a module (``python -m tests.runtime.test_cache_processes``), this file is one of
those processes.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np

from tests.kernels import AXPY, TINY_GEMM

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ("mlp", "cnn", "transformer_block")
PROCESSES = 4
ROUNDS = 3
CAP_SHARE = 0.8
"""The cap, as a share of what the examples store (lowered programs and, where Intel's
runtime takes part, pyopencl's binaries; measured by :func:`references` on this machine:
their sizes depend on the kernels chosen for its vector width): under what the rounds
store, so processes evict while others read."""
OWN = """func.func public @main(%a: tensor<{n}x8xf32>, %b: tensor<{n}x8xf32>)
    -> tensor<{n}x8xf32> {{
  %0 = stablehlo.multiply %a, %b : tensor<{n}x8xf32>
  %1 = stablehlo.add %0, %a : tensor<{n}x8xf32>
  return %1 : tensor<{n}x8xf32>
}}"""


def _close(got: np.ndarray, want: np.ndarray, what: str) -> None:
    scale = float(np.max(np.abs(want))) or 1.0
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * scale, err_msg=what)


def _random_inputs(exe: Any, rng: np.random.Generator) -> list[np.ndarray]:
    shapes = [exe.plan.buffer(bid).shape for bid in exe.plan.params]
    return [rng.standard_normal(shape).astype(dtype)
            for shape, dtype in zip(shapes, exe.arg_dtypes, strict=True)]


def references(device: Any, path: Path) -> None:
    """Random inputs of the examples and their results, compiled fresh (in the disk cache
    the caller points at: none of its entries exists yet), saved to ``path``."""
    import backend_opencl

    rng = np.random.default_rng(11)
    arrays = {}
    for name in EXAMPLES:
        text = (ROOT / "examples" / f"{name}.mlir").read_text()
        exe = backend_opencl.compile_stablehlo(text, device=device,
                                               filename=f"<reference {name}>")
        inputs = _random_inputs(exe, rng)
        arrays |= {f"{name}/in{i}": a for i, a in enumerate(inputs)}
        arrays |= {f"{name}/out{i}": a for i, a in enumerate(exe(*inputs))}
    np.savez(path, **arrays)


# One process (run as a script): index, data file, tune kernel file.

def _examples(data: Any) -> None:
    import backend_opencl

    for name in EXAMPLES:
        path = ROOT / "examples" / f"{name}.mlir"
        exe = backend_opencl.compile_stablehlo(path.read_text(), filename=str(path))
        count = sum(k.startswith(f"{name}/in") for k in data.files)
        outs = exe(*[data[f"{name}/in{i}"] for i in range(count)])
        for i, got in enumerate(outs):
            _close(got, data[f"{name}/out{i}"], f"{name} result {i}")


def _own(index: int, rng: np.random.Generator) -> None:
    import backend_opencl

    n = 2 + index
    exe = backend_opencl.compile_stablehlo(OWN.format(n=n), filename=f"<own {index}>")
    a, b = (rng.standard_normal((n, 8)).astype(np.float32) for _ in range(2))
    _close(exe(a, b)[0], a * b + a, f"own program {index}")


def _kernel(rng: np.random.Generator) -> None:
    import backend_opencl

    module = backend_opencl.compile(AXPY)
    x, y0 = (rng.standard_normal(1000).astype(np.float32) for _ in range(2))
    alpha = np.float32(rng.uniform(0.5, 2.0))
    y = y0.copy()
    module.axpy(alpha, x, y)
    _close(y, alpha * x + y0, "axpy")


def _tune(kernel_file: str) -> None:
    from backend_opencl.tools.cli import main

    assert main(["tune", kernel_file, "--groups", "4", "--top", "2"]) == 0


def worker(index: int, data_file: str, kernel_file: str) -> None:
    """Several rounds of every task, in an order of its own; in-memory caches emptied
    between rounds."""
    from backend_opencl.api import compiler
    from backend_opencl.runtime.opencl import build

    data = np.load(data_file)
    rng = np.random.default_rng(100 + index)
    tasks = [lambda: _examples(data), lambda: _own(index, rng), lambda: _kernel(rng),
             lambda: _tune(kernel_file)]
    for round_ in range(ROUNDS):
        for k in range(len(tasks)):
            tasks[(k + index + round_) % len(tasks)]()
        compiler._EXECUTABLES.clear()
        build.clear_memory_cache()
    from backend_opencl import diskcache

    print(f"worker {index}: {ROUNDS} rounds checked;", json.dumps(
        {f"{kind} {event}": n for (kind, event), n in diskcache.STATS.items()}))


# The test.

def _intel() -> Any:
    from backend_opencl.runtime import list_devices

    return next((d for d in list_devices() if d.platform_name.startswith("Intel(R) OpenCL")),
                None)


def _start(index: int, env: dict[str, str], data: Path, kernel: Path) -> subprocess.Popen:
    argv = [sys.executable, "-m", "tests.runtime.test_cache_processes", str(index), str(data),
            str(kernel)]
    return subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _check_folder(cache: Path) -> None:
    """No temporary file or lock left; every entry whole; folders private."""
    from backend_opencl import diskcache
    from tensorlang.plan import Plan

    assert not [p for p in cache.rglob("*") if p.name.endswith(".tmp") or p.name == "lock"]
    lowered = list((cache / diskcache.LOWERED).glob("*.pickle"))
    assert lowered
    for path in lowered:
        (tag, _), payload = diskcache.read_parts(path.read_bytes())
        assert isinstance(tag, str) and isinstance(payload[0], Plan), path
    for entry in (cache / diskcache.BINARIES).iterdir():
        diskcache.safe_loads((entry / "info").read_bytes(), diskcache.PYOPENCL_INFO)
        assert (entry / "binary").stat().st_size > 0
    tuned = json.loads((cache / diskcache.TUNE_FILE).read_text())
    assert tuned and all(len(v) in (2, 3) for v in tuned.values())
    for folder in (cache, cache / diskcache.LOWERED, cache / diskcache.BINARIES):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700


def test_processes_share_one_cache(tmp_path: Path, monkeypatch: Any) -> None:
    from backend_opencl import diskcache
    from backend_opencl.api import compiler
    sizing = tmp_path / "sizing"
    monkeypatch.setenv(diskcache.DIR_ENV, str(sizing))
    monkeypatch.setattr(compiler, "_EXECUTABLES", {})
    intel = _intel()
    devices = {"default": None} | ({"intel": intel} if intel is not None else {})
    for label, device in devices.items():
        references(device, tmp_path / f"{label}.npz")
    stored = sum(e.size for kind in (diskcache.LOWERED, diskcache.BINARIES)
                 for e in diskcache.entries(kind, sizing))
    cap = str(int(CAP_SHARE * stored))
    kernel = tmp_path / "tiny.tl"
    kernel.write_text(TINY_GEMM)
    cache = tmp_path / "cache"
    base = {k: v for k, v in os.environ.items()
            if k not in ("TLC_DEVICE", "OCL_ICD_VENDORS", diskcache.TUNE_ENV,
                         diskcache.MAX_ENV)}
    start = time.perf_counter()
    running = []
    for index in range(PROCESSES):
        label = "intel" if intel is not None and index >= PROCESSES // 2 else "default"
        env = {**base, diskcache.DIR_ENV: str(cache), diskcache.MAX_ENV: cap}
        if label == "intel":
            env["TLC_DEVICE"] = "intel"
        running.append(_start(index, env, tmp_path / f"{label}.npz", kernel))
    counts: Counter[str] = Counter()
    for index, process in enumerate(running):
        out, err = process.communicate(timeout=300)
        assert process.returncode == 0, f"worker {index}:\n{err}"
        done = f"worker {index}: {ROUNDS} rounds checked; "
        assert done in out, out
        counts.update(json.loads(out[out.index(done) + len(done):].splitlines()[0]))
    print(f"{PROCESSES} processes x {ROUNDS} rounds: {time.perf_counter() - start:.1f} s")
    print(dict(counts))
    assert counts["lowered hits"] and counts["lowered evicted"], counts
    assert counts["opencl hits"] or intel is None, counts
    _check_folder(cache)


if __name__ == "__main__":
    worker(int(sys.argv[1]), sys.argv[2], sys.argv[3])
