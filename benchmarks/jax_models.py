"""Benchmark: real JAX models (flax, haiku, equinox, optax, keras, diffrax) through
``tlc.jax.jit`` side by side with ``jax.jit`` (XLA CPU).

Run ``.venv/bin/python benchmarks/jax_models.py`` (``make bench-models`` installs the
``models`` extra first).  For every model of :mod:`models` (built from the library's own
layers, randomly initialised; a pure function ``fn(params, *inputs)``):

- **correct?** ``tlc.jax.jit(fn)(*args)`` against ``jax.jit(fn)(*args)``, every output
  leaf: NaNs and infinities in the same places, integers exact, and the largest error
  relative to the output's largest magnitude within the model's tolerance (1e-4 for f32
  by default; more where the op mix amplifies rounding: Adam's first step, adaptive ODE
  steps);
- **per call**: both warm, then called in turn (round-robin) in one process, with numpy
  arrays in and with jax arrays in (four runners interleaved, so machine noise hits all
  alike); a time is the median of the rounds.  tlc returns numpy arrays; XLA's results
  are waited for (``jax.block_until_ready``);
- **first call** (unless ``--no-compile-times``): the trace, compile and first run of
  ``tlc.jax.jit(fn)`` and of ``jax.jit(fn)``, each in a fresh process after the model is
  built and the device initialised: *cold* with tlc's and PoCL's disk caches in an empty
  temporary folder (``TLC_CACHE_DIR``, ``POCL_CACHE_DIR``) and jax's persistent cache
  off, then *warm*: tlc again in a fresh process with the disk caches the cold one filled
  (jax still traces; tlc's lowering and the OpenCL build come from disk).  Each runs
  ``f.lower(*args)`` (jax's trace and lowering, timed apart), ``.compile()`` and the
  compiled call; *warm past trace* is the warm call without jax's trace, what tlc itself
  takes.

A model whose build or tlc compile fails is an ERROR row with the first line of the
error (the run goes on), a wrong one a WRONG row; neither is timed.  Printed: the table
and a summary (geometric means of tlc/XLA, the worst models, first-call figures,
failures).  The exit status is 1 when any model failed.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))
os.environ["KERAS_BACKEND"] = "jax"

from stablehlo_models import geomean, interleaved  # noqa: E402

if TYPE_CHECKING:
    from models.common import Model

FIRST_CALL = "first-call:"
"""The line a first-call subprocess prints its JSON result after."""
LIBRARIES = ("jax", "jaxlib", "flax", "equinox", "dm-haiku", "optax", "keras", "diffrax")
"""The distributions whose versions the table's title names."""
SLOW_RATIO = 1.25
"""Per-call tlc/XLA above this is listed in the summary."""
SLOW_COLD_S = 5.0
"""A cold first call above this many seconds is listed."""
SLOW_WARM_S = 0.1
"""A warm first call above this many seconds is listed."""
QUICK_FIRST_CALLS = 3
"""Models whose first calls ``--quick`` measures (the first ones selected)."""
COLUMNS = ("tlc", "xla", "tlc jax", "xla jax")
"""The per-call runners: numpy arrays in, jax arrays in."""
FIRST_CALLS = ("cold tlc", "cold xla", "warm tlc")
"""The first-call measurements, each in a fresh process."""


@dataclass
class Row:
    """The measurements of one model."""

    name: str
    library: str
    status: str = "ok"
    """ok, WRONG (tlc's result differs) or ERROR (build, compile or run failed)."""
    reason: str = ""
    """Why it is not ok: the first line of the error, or the error against the tolerance."""
    error: float | None = None
    """Largest error relative to the output's largest magnitude."""
    times: dict[str, float] = field(default_factory=dict)
    """Median seconds per call of each of :data:`COLUMNS`."""
    first: dict[str, float | str] = field(default_factory=dict)
    """Seconds of each of :data:`FIRST_CALLS`, or why it is missing."""
    warm_missed: bool = False
    """The warm first call missed tlc's disk cache (marked ``*``)."""
    warm_trace: float | None = None
    """Seconds of jax's trace and lowering within the warm first call."""

    def ratio(self, suffix: str = "") -> float | None:
        """tlc/XLA per call (``suffix`` " jax": with jax arrays in)."""
        tlc, xla = self.times.get("tlc" + suffix), self.times.get("xla" + suffix)
        return None if tlc is None or xla is None else tlc / xla

    def seconds(self, which: str) -> float | None:
        """A first-call time in seconds, None when not measured or failed."""
        value = self.first.get(which)
        return value if isinstance(value, float) else None

    def warm_past_trace(self) -> float | None:
        """The warm first call without jax's trace and lowering: tlc's own part."""
        warm = self.seconds("warm tlc")
        return None if warm is None or self.warm_trace is None else warm - self.warm_trace

    def cold_ratio(self) -> float | None:
        """Cold first call, tlc/XLA."""
        tlc, xla = self.seconds("cold tlc"), self.seconds("cold xla")
        return None if tlc is None or xla is None else tlc / xla


# -- checking --------------------------------------------------------------------------------


def first_line(exc: BaseException) -> str:
    """The exception's type and the first line of its message."""
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0] if lines else ''}"[:240]


def relative_error(got: Any, want: Any) -> float:
    """The largest error of ``got`` against ``want`` (pytrees) relative to each output's
    largest magnitude; inf when structures, shapes, dtypes, non-finite places or integer
    values differ."""
    import jax

    if jax.tree.structure(got) != jax.tree.structure(want):
        return math.inf
    pairs = zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True)
    return max((_leaf_error(np.asarray(g), np.asarray(w)) for g, w in pairs), default=0.0)


def _leaf_error(got: np.ndarray, want: np.ndarray) -> float:
    if got.shape != want.shape or got.dtype != want.dtype:
        return math.inf
    if want.dtype.kind not in "fc":
        return 0.0 if np.array_equal(got, want) else math.inf
    g, w = got.astype(np.complex128), want.astype(np.complex128)
    finite = np.isfinite(w)
    if not np.array_equal(finite, np.isfinite(g)) or \
            not np.array_equal(g[~finite], w[~finite], equal_nan=True):
        return math.inf
    if not finite.any():
        return 0.0
    scale = float(np.max(np.abs(w[finite])))
    diff = float(np.max(np.abs(g[finite] - w[finite])))
    return diff / scale if scale > 0 else diff


@contextmanager
def time_limit(seconds: int) -> Iterator[None]:
    """Raise TimeoutError in this (main) thread after ``seconds`` (0: no limit)."""
    def expire(signum: int, frame: Any) -> None:
        raise TimeoutError(f"over {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


# -- one model in this process ---------------------------------------------------------------


def measure(model: Model, budget: float, max_rounds: int, timeout: int) -> Row:
    """Build the model, check tlc against XLA, time both interleaved."""
    import jax

    import tlc.jax

    row = Row(model.name, model.library)
    try:
        with time_limit(timeout):
            fn, args = model.instantiate()
            xla, fast = jax.jit(fn), tlc.jax.jit(fn)
            want = xla(*args)
            got = fast(*args)
    except Exception as exc:  # a model tlc (or its library) cannot handle is a row, not fatal
        row.status, row.reason = "ERROR", first_line(exc)
        return row
    row.error = relative_error(got, want)
    if not row.error <= model.tol:
        row.status, row.reason = "WRONG", f"error {row.error:.1e} over {model.tol:.0e}"
        return row
    on_device = jax.device_put(args)
    runners = _runners(fast, xla, args, on_device)
    gc.collect()
    row.times = interleaved(runners, budget, max_rounds, min_rounds=5)
    return row


def _runners(fast: Callable[..., Any], xla: Callable[..., Any], args: tuple[Any, ...],
             on_device: tuple[Any, ...]) -> dict[str, Callable[[], Any]]:
    """The four runners of :data:`COLUMNS`."""
    import jax

    return {"tlc": lambda: fast(*args),
            "xla": lambda: jax.block_until_ready(xla(*args)),
            "tlc jax": lambda: fast(*on_device),
            "xla jax": lambda: jax.block_until_ready(xla(*on_device))}


# -- first calls in fresh processes ----------------------------------------------------------


def first_calls(row: Row, timeout: int) -> None:
    """Fill ``row.first``: the cold tlc, cold XLA and warm tlc first calls of the model,
    each in a fresh process, disk caches in a temporary folder (see the module's
    docstring); ``row.warm_missed`` when the warm process stored a lowered program of its
    own, having missed the cache (tlc's sources, whose hash is part of the key, changed
    in between)."""
    from backend_opencl import diskcache

    with tempfile.TemporaryDirectory(prefix="tlc-models-") as folder:
        caches = {"TLC_CACHE_DIR": str(Path(folder, "tlc")),
                  "POCL_CACHE_DIR": str(Path(folder, "pocl"))}
        row.first = {"cold tlc": _subprocess("tlc", row.name, caches, timeout)[0],
                     "cold xla": _subprocess("xla", row.name, caches, timeout)[0]}
        lowered = Path(folder, "tlc", diskcache.LOWERED)
        stored = _entries(lowered)
        row.first["warm tlc"], row.warm_trace = _subprocess("tlc", row.name, caches, timeout)
        row.warm_missed = bool(_entries(lowered) - stored)


def _entries(folder: Path) -> set[str]:
    """The names in ``folder`` (none when it does not exist)."""
    return set(os.listdir(folder)) if folder.is_dir() else set()


def _subprocess(peer: str, name: str, caches: dict[str, str], timeout: int
                ) -> tuple[float | str, float | None]:
    """Seconds of one first call in a fresh process (or why there are none), and of
    jax's trace and lowering within it."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("TLC_TUNE_CACHE", "JAX_COMPILATION_CACHE_DIR", "TLC_PROFILE")}
    env.update(caches, JAX_ENABLE_COMPILATION_CACHE="false", KERAS_BACKEND="jax")
    command = [sys.executable, str(Path(__file__).resolve()), "--first-call", peer, name]
    try:
        done = subprocess.run(command, env=env, capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return f"timeout ({timeout} s)", None
    for text in reversed(done.stdout.splitlines()):
        if text.startswith(FIRST_CALL):
            result = json.loads(text[len(FIRST_CALL):])
            if "seconds" not in result:
                return str(result["error"]), None
            return float(result["seconds"]), float(result["trace"])
    tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
    return f"exit {done.returncode}: {tail[:200]}", None


def child(peer: str, name: str) -> int:
    """``--first-call``: build the model, initialise the device, then time the first call
    of ``tlc.jax.jit`` (peer ``tlc``) or ``jax.jit`` (``xla``); print the result."""
    import jax

    try:
        fn, args = _model(name).instantiate()
        if peer == "tlc":
            import tlc.jax
            from backend_opencl.runtime import get_device

            get_device()
            jitted = tlc.jax.jit(fn)
        else:
            jitted = jax.jit(fn)
        start = time.perf_counter()
        lowered = jitted.lower(*args)
        traced = time.perf_counter()
        jax.block_until_ready(lowered.compile()(*args))
        result: dict[str, Any] = {"seconds": time.perf_counter() - start,
                                  "trace": traced - start}
    except Exception as exc:
        result = {"error": first_line(exc)}
    print(FIRST_CALL + json.dumps(result), flush=True)
    return 0


def _model(name: str) -> Model:
    from models import MODELS

    return next(m for m in MODELS if m.name == name)


# -- the table and summary -------------------------------------------------------------------


def _us(t: float | None) -> str:
    return "-" if t is None else f"{t * 1e6:.0f}"


def _x(r: float | None) -> str:
    return "-" if r is None else f"{r:.2f}"


def _s(value: float | str | None) -> str:
    if value is None:
        return "-"
    return f"{value:.2f}" if isinstance(value, float) else "failed"


HEADER = ("model", "library", "correct?", "max rel err", "tlc us", "xla us", "tlc/xla",
          "tlc us (jax in)", "xla us (jax in)", "tlc/xla (jax in)", "cold tlc s",
          "cold xla s", "warm tlc s", "warm past trace s")
"""The table's columns."""


def header() -> list[str]:
    """The table's header lines."""
    return ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]


def line(row: Row) -> str:
    """One row of the table."""
    correct = "yes" if row.status == "ok" else f"**{row.status}**"
    error = "-" if row.error is None else "inf" if math.isinf(row.error) else f"{row.error:.0e}"
    cells = [row.name, row.library, correct, error,
             _us(row.times.get("tlc")), _us(row.times.get("xla")), _x(row.ratio()),
             _us(row.times.get("tlc jax")), _us(row.times.get("xla jax")),
             _x(row.ratio(" jax")), *(_s(row.first.get(k)) for k in FIRST_CALLS),
             _s(row.warm_past_trace())]
    cells[-2] += "*" if row.warm_missed else ""
    return "| " + " | ".join(cells) + " |"


def _names(rows: Sequence[Row], value: Callable[[Row], float | None], limit: float,
           unit: str) -> str:
    """``count (name value, ...)`` of the rows whose value is over ``limit``, largest
    first."""
    over = sorted(((v, r.name) for r in rows if (v := value(r)) is not None and v > limit),
                  reverse=True)
    return f"{len(over)}" + (" (" + ", ".join(f"{n} {v:.2f}{unit}" for v, n in over) + ")"
                             if over else "")


def summary(rows: Sequence[Row]) -> list[str]:
    """Geometric means, worst models, first-call figures and failures."""
    out = []
    for label, suffix in (("numpy in", ""), ("jax arrays in", " jax")):
        ratios = [r for row in rows if (r := row.ratio(suffix)) is not None]
        if ratios:
            out.append(f"- geometric mean tlc/XLA per call ({label}): "
                       f"**{geomean(ratios):.2f}** over {len(ratios)} models")
    timed = sorted((row for row in rows if row.ratio() is not None),
                   key=lambda row: -(row.ratio() or 0.0))
    if timed:
        out.append("- worst per call: " + ", ".join(f"{r.name} {r.ratio():.2f}x"
                                                    for r in timed[:3]))
        out.append(f"- over {SLOW_RATIO}x XLA per call: "
                   + _names(rows, Row.ratio, SLOW_RATIO, "x"))
    cold = [r for row in rows if (r := row.cold_ratio()) is not None]
    if cold:
        out.append(f"- geometric mean cold first call tlc/XLA: **{geomean(cold):.2f}** over "
                   f"{len(cold)} models")
        out.append(f"- cold tlc first call over {SLOW_COLD_S:.0f} s: "
                   + _names(rows, lambda r: r.seconds("cold tlc"), SLOW_COLD_S, " s"))
        out.append(f"- cold XLA first call over {SLOW_COLD_S:.0f} s: "
                   + _names(rows, lambda r: r.seconds("cold xla"), SLOW_COLD_S, " s"))
        out.append(f"- warm tlc first call over {SLOW_WARM_S} s: "
                   + _names(rows, lambda r: r.seconds("warm tlc"), SLOW_WARM_S, " s"))
        out.append(f"- warm tlc first call past jax's trace over {SLOW_WARM_S} s: "
                   + _names(rows, Row.warm_past_trace, SLOW_WARM_S, " s"))
    missed = [row.name for row in rows if row.warm_missed]
    if missed:
        out.append("- warm first calls that missed tlc's disk cache (*; tlc's sources changed "
                   "between the processes): " + ", ".join(missed))
    bad = [row for row in rows if row.status != "ok"]
    out.append(f"- failures: {len(bad)} of {len(rows)} models"
               + (" (" + ", ".join(f"{r.name} {r.status}" for r in bad) + ")" if bad else ""))
    out += [f"- {row.name}: {row.reason}" for row in bad]
    out += [f"- {row.name}: {k} first call: {v}" for row in rows
            for k, v in row.first.items() if isinstance(v, str)]
    return out


def about(count: int, quick: bool) -> str:
    """The date, device and library versions of the run."""
    from importlib.metadata import PackageNotFoundError, version

    from backend_opencl.runtime import get_device

    def ver(dist: str) -> str:
        try:
            return f"{dist} {version(dist)}"
        except PackageNotFoundError:
            return f"{dist} (not installed)"

    return (f"{time.strftime('%Y-%m-%d')}, {get_device().label}; "
            f"{', '.join(ver(d) for d in LIBRARIES)}; {count} models"
            + (" (--quick)" if quick else ""))


# -- main ------------------------------------------------------------------------------------


def parse(argv: list[str] | None) -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--filter", metavar="RE", help="only models whose name matches")
    parser.add_argument("--quick", action="store_true",
                        help=f"0.3 s of timing per model; first calls of the first "
                             f"{QUICK_FIRST_CALLS} models only")
    parser.add_argument("--no-compile-times", action="store_true",
                        help="skip the first-call subprocesses")
    parser.add_argument("--timeout", type=int, default=900, metavar="S",
                        help="limit of a model's build and compile, and of each first-call "
                             "process (default 900)")
    parser.add_argument("--profile", action="store_true",
                        help="print tlc's per-kernel profile (TLC_PROFILE) after each model "
                             "(its per-call times then include the profiling)")
    parser.add_argument("--markdown", metavar="FILE", help="write the table and summary")
    parser.add_argument("--json", metavar="FILE", help="write every measurement")
    parser.add_argument("--list", action="store_true", help="list the models and exit")
    parser.add_argument("--first-call", nargs=2, metavar=("PEER", "MODEL"),
                        help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print the table."""
    args = parse(argv)
    if args.first_call:
        return child(*args.first_call)
    if args.profile:
        os.environ["TLC_PROFILE"] = "1"  # before the device's queue exists
    from models import MODELS

    models = [m for m in MODELS if not args.filter or re.search(args.filter, m.name)]
    if args.list:
        print("\n".join(f"{m.name:24} {m.library:18} {m.what}" for m in models))
        return 0
    budget, max_rounds = (0.3, 30) if args.quick else (2.0, 300)
    first = 0 if args.no_compile_times else QUICK_FIRST_CALLS if args.quick else len(models)
    title = about(len(models), args.quick)
    print(title, "", *header(), sep="\n", flush=True)
    rows = [_row(m, i < first, budget, max_rounds, args) for i, m in enumerate(models)]
    print("\n" + "\n".join(summary(rows)))
    _write(args, title, rows)
    return 1 if any(row.status != "ok" for row in rows) else 0


def _row(model: Model, first: bool, budget: float, max_rounds: int,
         args: argparse.Namespace) -> Row:
    """Measure one model (and its first calls), print its line."""
    row = measure(model, budget, max_rounds, args.timeout)
    if first and row.status != "ERROR":
        first_calls(row, args.timeout)
    print(line(row), flush=True)
    if args.profile:
        from backend_opencl.runtime import profile

        print(profile.report(), file=sys.stderr, flush=True)
        profile.PROFILE.reset()
    return row


def _write(args: argparse.Namespace, title: str, rows: list[Row]) -> None:
    """The --markdown and --json files."""
    if args.markdown:
        text = [title, "", *header(), *map(line, rows), "", *summary(rows)]
        Path(args.markdown).write_text("\n".join(text) + "\n")
    if args.json:
        data = [{**asdict(r), "error": r.error if r.error is None or math.isfinite(r.error)
                 else None} for r in rows]
        Path(args.json).write_text(json.dumps({"about": title, "quick": args.quick,
                                               "rows": data}, indent=1))


if __name__ == "__main__":
    sys.exit(main())
