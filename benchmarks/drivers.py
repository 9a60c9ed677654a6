"""``--driver``: run a benchmark once per installed OpenCL driver, each in its own process.

The OpenCL loader decides which drivers a process sees once, and two PoCLs never share a
process (docs/devices.md), so every driver gets a fresh process with ``TLC_DEVICE=<spec>``.
"""

from __future__ import annotations

import os
import subprocess
import sys

HELP = ("run once per OpenCL driver, each in its own process: comma-separated device specs "
        "(pocl, intel, pypi, ...) or 'all' (every installed CPU driver)")


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


def run_per_driver(script: str, driver: str, argv: list[str]) -> int:
    """Run ``script`` with ``argv`` (less ``--driver``) once per driver; the worst status."""
    from backend_opencl.runtime.icd import driver_specs

    specs = driver_specs() if driver == "all" else [d for d in driver.split(",") if d]
    status = 0
    for spec in specs:
        print(f"== driver {spec} (TLC_DEVICE={spec})", flush=True)
        env = {**os.environ, "TLC_DEVICE": spec}
        done = subprocess.run([sys.executable, script, *without_driver(argv)], env=env)
        status = max(status, done.returncode)
    return status
