"""Benchmark: whole StableHLO programs, tlc side by side with XLA CPU (jax) and IREE.

Run ``.venv/bin/python benchmarks/stablehlo_models.py`` (``make bench`` installs the
``bench`` extra first: jax, iree-base-compiler, iree-base-runtime).  Tried as a new user
would: numpy arrays in, numpy arrays out.  For every program of :mod:`programs` (the
three JAX-exported examples and ~30 JAX functions) the StableHLO text is compiled by

- tlc: ``backend_opencl.compile_stablehlo(text)``, called as ``exe(*arrays)``;
- XLA CPU: ``jax.jit(f)`` called on the numpy arrays, results through ``np.asarray``;
- IREE llvm-cpu: ``iree.compiler.compile_str(text, target_backends=["llvm-cpu"])`` with
  ``--iree-llvmcpu-target-cpu=host``, run through ``iree.runtime``, results to numpy.

A peer that is not installed, or fails on a program, is skipped with a note.  tlc's
results are checked against XLA's (a wrong result is a FAIL row and is not timed).
Timing is interleaved round-robin in one process (tlc, XLA, IREE, tlc, ...), so machine
noise hits every peer alike; a time is the median of the warm calls.  Printed per
program: times, tlc/XLA, tlc/IREE, tlc/best peer, tlc's compile time (lowering and the
first call, which builds the OpenCL program or finds it in the disk cache); then the
geometric mean of tlc/best and the worst program.  Ratios < 1: tlc is faster.

Without jax (or with ``--numpy``) it runs the three examples against numpy versions of
the models, checked against the JAX outputs stored in ``examples/*.npz``.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import re
import statistics
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

HERE = Path(__file__).resolve().parent
EXAMPLES = HERE.parent / "examples"
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import backend_opencl  # noqa: E402

Arrays = tuple[np.ndarray, ...]
Runner = Callable[[], Arrays]

TOLERANCE = {"f": 2e-4, "c": 2e-4, "f2": 1e-2, "bfloat16": 3e-2}
"""Largest error relative to max(1, max |reference|), by dtype kind (ints: exact)."""


@dataclass(frozen=True)
class Case:
    """A program to run: its name, StableHLO text, inputs and how to run it in each peer."""

    name: str
    text: str
    args: Arrays
    tol: float | None = None
    fn: Callable[..., Any] | None = None
    """The JAX function (XLA peer) or numpy function (numpy peer)."""
    want: Arrays | None = None
    """Reference outputs when no peer provides them (the numpy mode: JAX's stored outputs)."""
    target: bool = True
    """In issue #11's target set (its geometric mean is printed apart)."""


@dataclass
class Row:
    """The measurements of one program."""

    name: str
    target: bool = True
    status: str = "ok"
    """ok, FAIL (wrong result), ERROR (tlc could not compile or run it)."""
    error: float | None = None
    times: dict[str, float] = field(default_factory=dict)
    compile_s: float | None = None
    notes: list[str] = field(default_factory=list)

    def ratio(self, peer: str) -> float | None:
        """tlc time / ``peer`` time, None when either is missing."""
        if "tlc" not in self.times or peer not in self.times:
            return None
        return self.times["tlc"] / self.times[peer]

    def best_ratio(self, peers: Sequence[str]) -> float | None:
        """tlc time / the fastest peer's time."""
        have = [self.times[p] for p in peers if p in self.times]
        if "tlc" not in self.times or not have:
            return None
        return self.times["tlc"] / min(have)


# -- peers -----------------------------------------------------------------------------------


class Peer:
    """A compiler to compare with: ``prepare`` returns a runner or raises to skip."""

    name = ""

    def prepare(self, case: Case) -> Runner:
        """A callable running ``case`` on its numpy inputs and returning numpy outputs."""
        raise NotImplementedError


class Tlc(Peer):
    """tlc: ``compile_stablehlo`` and a call on numpy arrays."""

    name = "tlc"

    def __init__(self, tracebacks: bool = False) -> None:
        self.compile_s = 0.0
        self.tracebacks = tracebacks

    def prepare(self, case: Case) -> Runner:
        """Compile; the first call (which builds the OpenCL program) counts as compile."""
        start = time.perf_counter()
        exe = backend_opencl.compile_stablehlo(case.text, filename=f"{case.name}.mlir")
        exe(*case.args)
        self.compile_s = time.perf_counter() - start
        return lambda: exe(*case.args)


class Xla(Peer):
    """XLA CPU through ``jax.jit``."""

    name = "xla"

    def __init__(self) -> None:
        import jax

        self.jax = jax

    def prepare(self, case: Case) -> Runner:
        """jit the JAX function; leaves of the result converted with np.asarray."""
        if case.fn is None:
            raise ValueError("no JAX function")
        jitted = self.jax.jit(case.fn)
        leaves = self.jax.tree_util.tree_leaves
        return lambda: tuple(np.asarray(o) for o in leaves(jitted(*case.args)))


class Iree(Peer):
    """IREE llvm-cpu for the host CPU, through ``iree.runtime``."""

    name = "iree"

    def __init__(self) -> None:
        import iree.compiler
        import iree.runtime

        self.compiler = iree.compiler
        self.runtime = iree.runtime
        self.config = iree.runtime.Config("local-task")

    def prepare(self, case: Case) -> Runner:
        """Compile the StableHLO text and load it into a fresh context."""
        vmfb = self.compiler.compile_str(
            case.text, target_backends=["llvm-cpu"], input_type="stablehlo",
            extra_args=["--iree-llvmcpu-target-cpu=host"])
        ctx = self.runtime.SystemContext(config=self.config)
        module = self.runtime.VmModule.copy_buffer(ctx.instance, vmfb)
        ctx.add_vm_module(module)
        main = ctx.modules[module.name]["main"]

        def run() -> Arrays:
            outs = main(*case.args)
            outs = outs if isinstance(outs, (list, tuple)) else (outs,)
            return tuple(np.asarray(o.to_host()) for o in outs)

        return run


class Numpy(Peer):
    """The example models written in numpy (no jax needed)."""

    name = "numpy"

    def prepare(self, case: Case) -> Runner:
        """Call the numpy version of the model."""
        if case.fn is None:
            raise ValueError("no numpy version")
        fn = case.fn
        return lambda: (fn(*case.args),)


def _peer(cls: type[Peer]) -> Peer | None:
    try:
        return cls()
    except ImportError as exc:
        print(f"note: {cls.name} skipped: {exc}")
        return None


# -- the numpy versions of the examples ------------------------------------------------------


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def np_mlp(x, w1, b1, w2, b2, w3, b3):  # type: ignore[no-untyped-def]
    """examples/mlp: two ReLU layers and a softmax head."""
    h = np.maximum(x @ w1 + b1, 0)
    h = np.maximum(h @ w2 + b2, 0)
    return _softmax(h @ w3 + b3)


def _rms(x: np.ndarray, g: np.ndarray) -> np.ndarray:
    return x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + np.float32(1e-6)) * g


def np_transformer_block(x, wq, wk, wv, wo, g1, w1, w2, g2):  # type: ignore[no-untyped-def]
    """examples/transformer_block: RMS norm, causal attention, GELU (tanh) MLP."""
    h = _rms(x, g1)
    q, k, v = h @ wq, h @ wk, h @ wv
    s = q @ k.transpose(0, 2, 1) / np.sqrt(np.float32(x.shape[-1]))
    mask = np.tril(np.ones((x.shape[1], x.shape[1]), bool))
    s = np.where(mask, s, np.float32(-1e9))
    y = x + (_softmax(s) @ v) @ wo
    u = _rms(y, g2) @ w1
    gelu = u * (0.5 * (1 + np.tanh(np.float32(0.7978846) * (u + np.float32(0.044715) * u ** 3))))
    return y + gelu @ w2


def _conv_nhwc(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    kh, kw = w.shape[:2]
    xp = np.pad(x, ((0, 0), (kh // 2, kh // 2), (kw // 2, kw // 2), (0, 0)))
    win = sliding_window_view(xp, (kh, kw), axis=(1, 2))  # b, h, w, c, kh, kw
    return np.tensordot(win, w, axes=([4, 5, 3], [0, 1, 2]))


def _pool(x: np.ndarray) -> np.ndarray:
    b, h, w, c = x.shape
    return x.reshape(b, h // 2, 2, w // 2, 2, c).max(axis=(2, 4))


def np_cnn(x, k1, b1, k2, b2, w, b):  # type: ignore[no-untyped-def]
    """examples/cnn: two conv + ReLU + 2x2 max-pool stages and a dense layer."""
    h = _pool(np.maximum(_conv_nhwc(x, k1) + b1, 0))
    h = _pool(np.maximum(_conv_nhwc(h, k2) + b2, 0))
    return h.reshape(h.shape[0], -1) @ w + b


NUMPY_MODELS = {"mlp": np_mlp, "transformer_block": np_transformer_block, "cnn": np_cnn}


def numpy_cases() -> list[Case]:
    """The three examples with their numpy versions and JAX's stored outputs."""
    cases = []
    for name, fn in NUMPY_MODELS.items():
        data = np.load(EXAMPLES / f"{name}.npz")
        count = sum(k.startswith("in") for k in data.files)
        cases.append(Case(f"ex_{name}", (EXAMPLES / f"{name}.mlir").read_text(),
                          tuple(data[f"in{i}"] for i in range(count)), fn=fn,
                          want=(data["out0"],)))
    return cases


def jax_cases() -> list[Case]:
    """The program set of :mod:`programs`, exported now."""
    import programs

    cases = []
    for prog in programs.PROGRAMS:
        args = prog.inputs()
        cases.append(Case(prog.name, prog.text(args), args, prog.tol, prog.fn,
                          target=prog.target))
    return cases


# -- checking and timing ---------------------------------------------------------------------


def _tolerance(dtype: np.dtype) -> float:
    if dtype.kind in "biu":
        return 0.0
    return TOLERANCE.get(dtype.name, TOLERANCE.get(f"{dtype.kind}{dtype.itemsize}",
                                                   TOLERANCE.get(dtype.kind, 2e-4)))


def compare(got: Arrays, want: Arrays, tol: float | None) -> tuple[float, str | None]:
    """The largest relative error of ``got`` against ``want``, and why it fails (or None)."""
    if len(got) != len(want):
        return math.inf, f"{len(got)} outputs, expected {len(want)}"
    worst = 0.0
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        err, why = _compare_one(g, w, tol if tol is not None else _tolerance(w.dtype))
        if why:
            return err, f"output {i}: {why}"
        worst = max(worst, err)
    return worst, None


def _compare_one(got: np.ndarray, want: np.ndarray, tol: float) -> tuple[float, str | None]:
    if got.shape != want.shape or got.dtype != want.dtype:
        return math.inf, f"{got.dtype}{list(got.shape)}, expected {want.dtype}{list(want.shape)}"
    wide = np.complex128 if want.dtype.kind == "c" else np.float64
    g, w = got.astype(wide), want.astype(wide)
    finite = np.isfinite(w)
    if not np.array_equal(finite, np.isfinite(g)) or \
            not np.array_equal(g[~finite], w[~finite], equal_nan=True):
        return math.inf, "NaNs or infinities differ"
    if not finite.any():
        return 0.0, None
    scale = max(1.0, float(np.max(np.abs(w[finite]))))
    err = float(np.max(np.abs(g[finite] - w[finite]))) / scale
    return err, (f"({want.dtype}) error {err:.2e}" if err > tol else None)


WARMUP_S = 0.5
"""Seconds of round-robin calls before any is timed.  Per-call times settle only after a
while of calls on the 2-core VM (mlp_haiku through tlc: ~780 us a call over its first 500
calls, ~470 after; XLA's less so): a 0.3 s ``--quick`` budget measured that start alone."""


def interleaved(runners: dict[str, Runner], budget: float, max_rounds: int,
                min_rounds: int = 3) -> dict[str, float]:
    """Median seconds per call of each runner, called in turn (round-robin) after a warm-up
    of :data:`WARMUP_S` of the same round-robin calls.

    Each timed call follows an untimed call of the same runner: XLA's and OpenBLAS's
    worker threads spin on after their call returns, so a call right after another
    peer's shares the cores with them (mlp_haiku through tlc, alternating with XLA call
    by call: 510-800 us a call, 466 alone), as ``gemm_peak.py`` found for large
    products; the untimed call lets the previous peer's threads go idle."""
    start = time.perf_counter()
    while True:
        for run in runners.values():
            run()
        if time.perf_counter() - start >= WARMUP_S:
            break
    times: dict[str, list[float]] = {name: [] for name in runners}
    start = time.perf_counter()
    rounds = 0
    while rounds < min_rounds or (rounds < max_rounds and time.perf_counter() - start < budget):
        for name, run in runners.items():
            run()
            t0 = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - t0)
        rounds += 1
    return {name: statistics.median(ts) for name, ts in times.items()}


def _why(exc: BaseException) -> str:
    """A one-line reason from an exception (the first line of its message)."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:200]


def measure(case: Case, tlc: Tlc, peers: list[Peer], budget: float, max_rounds: int) -> Row:
    """Prepare every peer, check tlc against the reference, time them interleaved."""
    row = Row(case.name, case.target)
    runners, results = _prepare_peers(case, peers, row)
    want = case.want if case.want is not None else results.get("xla", results.get("numpy"))
    runner = _prepare_tlc(case, tlc, want, row)
    if runner is not None:
        runners = {"tlc": runner, **runners}
    if want is not None and "iree" in results:
        _, why = compare(results["iree"], want, case.tol)
        if why:
            row.notes.append(f"iree differs from xla: {why}")
    if runners:
        gc.collect()
        row.times = interleaved(runners, budget, max_rounds)
    return row


def _prepare_peers(case: Case, peers: list[Peer],
                   row: Row) -> tuple[dict[str, Runner], dict[str, Arrays]]:
    """The runners of the peers that handle ``case`` and their first results."""
    runners: dict[str, Runner] = {}
    results: dict[str, Arrays] = {}
    for peer in peers:
        try:
            run = peer.prepare(case)
            results[peer.name] = run()
            runners[peer.name] = run
        except Exception as exc:  # a peer that fails on a program is skipped, not fatal
            row.notes.append(f"{peer.name} skipped: {_why(exc)}")
    return runners, results


def _prepare_tlc(case: Case, tlc: Tlc, want: Arrays | None, row: Row) -> Runner | None:
    """tlc's runner when it compiles, runs and matches ``want``; else None and the row says
    why (ERROR or FAIL)."""
    try:
        runner = tlc.prepare(case)
        row.compile_s = tlc.compile_s
        got = runner()
    except Exception as exc:
        row.status = "ERROR"
        row.notes.insert(0, f"tlc: {_why(exc)}")
        if tlc.tracebacks:
            traceback.print_exc()
        return None
    if want is None:
        row.notes.append("tlc unchecked: no peer gave a reference")
        return runner
    row.error, why = compare(got, want, case.tol)
    if why:
        row.status = "FAIL"
        row.notes.insert(0, f"tlc wrong: {why}")
        return None
    return runner


# -- the table -------------------------------------------------------------------------------


def _ms(t: float | None) -> str:
    return "-" if t is None else f"{t * 1e3:.3f}"


def _x(r: float | None) -> str:
    return "-" if r is None else f"{r:.2f}"


def header(peers: Sequence[str]) -> list[str]:
    """The table's header lines."""
    cols = ["program", "check", "tlc ms", *(f"{p} ms" for p in peers),
            *(f"tlc/{p}" for p in peers), "tlc/best", "tlc compile s"]
    return ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]


def line(row: Row, peers: Sequence[str], worst: bool = False) -> str:
    """One row of the table."""
    check = row.status if row.status != "ok" else \
        "unchecked" if row.error is None else f"ok {row.error:.0e}"
    best = _x(row.best_ratio(peers))
    cols = [row.name, check if row.status == "ok" else f"**{check}**",
            _ms(row.times.get("tlc")), *(_ms(row.times.get(p)) for p in peers),
            *(_x(row.ratio(p)) for p in peers), f"**{best}** (worst)" if worst else best,
            "-" if row.compile_s is None else f"{row.compile_s:.2f}"]
    return "| " + " | ".join(cols) + " |"


def geomean(values: list[float]) -> float:
    """Geometric mean."""
    return math.exp(sum(math.log(v) for v in values) / len(values))


def summary(rows: list[Row], peers: Sequence[str]) -> list[str]:
    """The geometric means, the worst program, failures and notes."""
    out = []
    for label, key in [(f"tlc/{p}", p) for p in peers] + [("tlc/best", None)]:
        ratios = [r for row in rows
                  if (r := row.best_ratio(peers) if key is None else row.ratio(key)) is not None]
        if ratios:
            out.append(f"- geometric mean {label}: **{geomean(ratios):.2f}** "
                       f"over {len(ratios)} programs")
    target = [r for row in rows if row.target and (r := row.best_ratio(peers)) is not None]
    if target and len(target) < len(rows):
        out.append(f"- geometric mean tlc/best on issue #11's target set: "
                   f"**{geomean(target):.2f}** over {len(target)} programs ("
                   + ", ".join(row.name for row in rows if row.target) + ")")
    worst = _worst(rows, peers)
    if worst is not None:
        out.append(f"- worst: {worst.name} ({worst.best_ratio(peers):.2f}x the best peer)")
        over = [row.name for row in rows if (row.best_ratio(peers) or 0.0) > 2.0]
        out.append(f"- over 2x the best peer: {len(over)} of {len(rows)}"
                   + (f" ({', '.join(over)})" if over else ""))
    bad = [row for row in rows if row.status != "ok"]
    if bad:
        out.append(f"- **{len(bad)} tlc failures**: " + ", ".join(r.name for r in bad))
    out += [f"- {row.name}: {note}" for row in rows for note in row.notes]
    return out


def _worst(rows: list[Row], peers: Sequence[str]) -> Row | None:
    timed = [row for row in rows if row.best_ratio(peers) is not None]
    return max(timed, key=lambda row: row.best_ratio(peers) or 0.0) if timed else None


def markdown(rows: list[Row], peers: Sequence[str], about: str) -> str:
    """The whole table and summary as markdown, after the line ``about``."""
    worst = _worst(rows, peers)
    lines = [about, ""] + header(peers) + [line(row, peers, row is worst) for row in rows]
    return "\n".join(lines + [""] + summary(rows, peers)) + "\n"


# -- main ------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    parser.add_argument("--filter", metavar="RE", help="only programs whose name matches")
    parser.add_argument("--numpy", action="store_true",
                        help="the three examples against numpy (no jax or IREE needed)")
    parser.add_argument("--no-iree", action="store_true", help="skip IREE")
    parser.add_argument("--markdown", metavar="FILE", help="write the table to FILE")
    parser.add_argument("--json", metavar="FILE", help="write the measurements to FILE")
    parser.add_argument("--traceback", action="store_true", help="print tlc's tracebacks")
    parser.add_argument("--driver", default="", help="run once per OpenCL driver, each in its "
                        "own process: device specs (pocl,intel,pypi) or 'all'; then a row "
                        "per driver")
    args = parser.parse_args(argv)
    if args.driver:  # benchmarks/drivers.py
        from drivers import run_per_driver

        return run_per_driver(__file__, args.driver, sys.argv[1:] if argv is None else argv,
                              driver_summary)
    budget, max_rounds = (0.3, 30) if args.quick else (2.0, 300)

    peers: list[Peer] = []
    if not args.numpy:
        xla = _peer(Xla)
        if xla is None:
            print("note: jax is not installed: running the numpy comparison (--numpy)")
        else:
            peers = [xla] + ([] if args.no_iree else [p for p in [_peer(Iree)] if p])
    if not peers:
        peers = [Numpy()]
    cases = numpy_cases() if isinstance(peers[0], Numpy) else jax_cases()
    if args.filter:
        cases = [c for c in cases if re.search(args.filter, c.name)]
    names = [p.name for p in peers]
    about = (f"{time.strftime('%Y-%m-%d')}, {_device()}; {_versions(names)}; "
             f"{len(cases)} programs{' (--quick)' if args.quick else ''}")
    print(about, flush=True)
    print("\n".join(header(names)), flush=True)
    rows = []
    tlc = Tlc(args.traceback)
    for case in cases:
        rows.append(measure(case, tlc, peers, budget, max_rounds))
        print(line(rows[-1], names), flush=True)
    print()
    print("\n".join(summary(rows, names)))
    if args.markdown:
        Path(args.markdown).write_text(markdown(rows, names, about))
    if args.json:
        Path(args.json).write_text(json.dumps(
            {"about": about, "peers": names, "quick": args.quick,
             "rows": [_jsonable(row) for row in rows]}, indent=1))
    return 1 if any(row.status != "ok" for row in rows) else 0


DRIVER_PROGRAMS = 12
"""A driver's row lists each program's tlc time and tlc/best up to this many programs."""


def driver_summary(lines: list[str]) -> list[tuple[str, str]]:
    """A driver's row (``--driver``) from one run's printed table and summary: the
    geometric means, the worst program, failures and, for a few programs, each one's tlc
    time and tlc/best."""
    cells = []
    for text in lines:
        if text.startswith("- geometric mean "):
            label, _, rest = text[len("- geometric mean "):].partition(": **")
            value, _, count = rest.partition("** over ")
            label = "target set tlc/best" if "target set" in label else label
            cells.append((f"{label} (geomean)", f"{value} ({count.split()[0]})"))
        elif text.startswith("- worst: "):
            cells.append(("worst", text[len("- worst: "):]))
        elif "tlc failures**" in text:
            cells.append(("failures", text.split("**: ")[-1]))
    table = [t.strip("|").split("|") for t in lines if t.startswith("| ")]
    if table and len(table) - 1 <= DRIVER_PROGRAMS:
        head = [c.strip() for c in table[0]]
        for row in table[1:]:
            col = dict(zip(head, (c.strip() for c in row), strict=False))
            cells.append((col["program"], f"{col['tlc ms']} ms, {col['tlc/best']}x"))
    return cells


def _jsonable(row: Row) -> dict[str, Any]:
    data = vars(row).copy()
    if data["error"] is not None and not math.isfinite(data["error"]):
        data["error"] = None
    return data


def _versions(peers: Sequence[str]) -> str:
    from importlib.metadata import PackageNotFoundError, version

    dists = {"xla": "jaxlib", "iree": "iree-base-runtime", "numpy": "numpy"}
    parts = []
    for peer in peers:
        try:
            parts.append(f"{peer} ({dists[peer]} {version(dists[peer])})")
        except PackageNotFoundError:
            parts.append(peer)
    return "peers: " + ", ".join(parts)


def _device() -> str:
    try:
        from backend_opencl.runtime.opencl import devices

        return devices.get_device().label
    except Exception:
        return "default OpenCL device"


if __name__ == "__main__":
    sys.exit(main())
