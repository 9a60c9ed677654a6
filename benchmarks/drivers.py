"""``--driver``: run a benchmark once per installed OpenCL driver, each in its own process.

The OpenCL loader decides which drivers a process sees once, and two PoCLs never share a
process (docs/devices.md), so every driver gets a fresh process with ``TLC_DEVICE=<spec>``.
A driver that cannot build a kernel here (PyPI's PoCL 3.0 on a CPU its LLVM does not
know) is reported with the reason instead of run.  After the runs, one row per driver:
the figures the benchmark's ``summary`` picks from its output, or why it did not run.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Sequence

HELP = ("run once per OpenCL driver, each in its own process: comma-separated device specs "
        "(pocl, intel, pypi, ...) or 'all' (every installed CPU driver); then a row per driver")

Summary = Callable[[list[str]], list[tuple[str, str]]]
"""A run's output lines -> (column, value) cells of its driver's row."""

_PROBE = """
import backend_opencl
backend_opencl.compile('''func @k(%a: memref<f32x4>) {
  foreach %i = 0, 4 {
    store 1.0, %a[%i] : memref<f32x4>
  }
}''')
from backend_opencl.runtime import get_device
print(get_device().label)
"""


def without_driver(argv: list[str]) -> list[str]:
    """``argv`` less its ``--driver X`` / ``--driver=X`` options."""
    out, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--driver":
            skip = True
        elif not arg.startswith("--driver="):
            out.append(arg)
    return out


def probe(spec: str) -> tuple[str, str]:
    """(device label, '') when driver ``spec`` builds and loads a tlc kernel, else ('', the
    reason: the error's last line)."""
    env = {**os.environ, "TLC_DEVICE": spec}
    try:
        done = subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True,
                              text=True, timeout=300)
    except subprocess.TimeoutExpired:
        return "", "no kernel built in 300 s"
    if done.returncode == 0:
        return done.stdout.strip().splitlines()[-1], ""
    lines = [line for line in done.stderr.strip().splitlines() if line.strip()]
    return "", (lines[-1] if lines else f"exit status {done.returncode}").removeprefix(
        "backend_opencl.runtime.errors.DeviceError: ")


def run_per_driver(script: str, driver: str, argv: list[str],
                   summary: Summary | None = None) -> int:
    """Run ``script`` with ``argv`` (less ``--driver``) once per driver, then print a row per
    driver (``summary``'s cells); the worst status."""
    from backend_opencl.runtime.icd import driver_specs

    specs = driver_specs() if driver == "all" else [d for d in driver.split(",") if d]
    status = 0
    rows: list[tuple[str, str, list[tuple[str, str]], str]] = []
    for spec in specs:
        label, why = probe(spec)
        if why:
            print(f"== driver {spec} (TLC_DEVICE={spec}): unavailable: {why}", flush=True)
            rows.append((spec, "", [], why))
            continue
        print(f"== driver {spec} (TLC_DEVICE={spec}): {label}", flush=True)
        code, lines = _run(script, spec, without_driver(argv))
        status = max(status, code)
        cells = summary(lines) if summary else []
        rows.append((spec, label, cells, "" if code == 0 else f"exit status {code}"))
    print()
    print("\n".join(table(rows)))
    return status


def _run(script: str, spec: str, argv: list[str]) -> tuple[int, list[str]]:
    """Run ``script`` on driver ``spec``, echoing its output; (status, output lines)."""
    env = {**os.environ, "TLC_DEVICE": spec}
    with subprocess.Popen([sys.executable, script, *argv], env=env, stdout=subprocess.PIPE,
                          text=True) as proc:
        assert proc.stdout is not None
        lines = []
        for line in proc.stdout:
            sys.stdout.write(line)
            sys.stdout.flush()
            lines.append(line.rstrip("\n"))
    return proc.returncode, lines


def table(rows: Sequence[tuple[str, str, list[tuple[str, str]], str]]) -> list[str]:
    """A markdown table, one row per driver: spec, device, the summary's columns, a note."""
    columns: list[str] = []
    for _, _, cells, _ in rows:
        columns += [name for name, _ in cells if name not in columns]
    lines = ["| driver | device | " + " | ".join([*columns, "note"]) + " |",
             "|---|---|" + "---|" * (len(columns) + 1)]
    for spec, label, cells, note in rows:
        values = dict(cells)
        row = [spec, label or "-", *(values.get(c, "-") for c in columns), note or ""]
        lines.append("| " + " | ".join(row) + " |")
    return lines


def gemm_summary(lines: list[str]) -> list[tuple[str, str]]:
    """A driver's row of ``batched_gemm.py``: GFLOP/s per shape, type and transpose (and
    batch, when several), strided / group layouts."""
    found: dict[str, dict[str, str]] = {}
    batches = set()
    for text in lines:
        parts = text.split()
        if len(parts) > 5 and "x" in parts[0] and parts[4] in ("strided", "group"):
            shape, t, trans, batch, layout, gflops = parts[:6]
            batches.add(batch)
            key = " ".join([shape, t] + ([trans] if trans != "n.n" else []) + [f"@{batch}"])
            found.setdefault(key, {})[layout] = gflops
    cells = []
    for key, layouts in found.items():
        name = key if len(batches) > 1 else key.rsplit(" @", 1)[0]
        cells.append((f"{name} GFLOP/s", " / ".join(layouts.get(x, "-")
                                                     for x in ("strided", "group"))))
    return cells
