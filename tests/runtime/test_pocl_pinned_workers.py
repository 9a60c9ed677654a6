"""PoCL's worker threads are pinned one to a CPU once tlc has chosen its device, and do
not preempt the calling thread when they wake.

Debian's PoCL 3.1 starts its CPU device, and the worker threads that read
``POCL_AFFINITY``, at the device query, not at the platform query: tlc must keep the
variable set until then (unpinned, both workers often ran on one core, and a 256^3
matmul's eight work-groups took 292 instead of 157 us).  Pinned, the worker on the
caller's core preempted it inside ``clSetUserEventStatus`` (a one-kernel call 50
instead of 33 us) until the workers took ``SCHED_BATCH``."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

PROBE = textwrap.dedent("""
    import glob, os
    from backend_opencl.runtime.opencl import devices
    device = devices.get_device()
    print("pocl" if device.is_pocl and device.kind == "cpu" else "other")
    print(os.environ.get("POCL_AFFINITY", "unset"))
    for task in glob.glob("/proc/self/task/*"):
        for line in open(task + "/status"):
            if line.startswith("Cpus_allowed_list:"):
                policy = os.sched_getscheduler(int(task.rsplit("/", 1)[1]))
                print(line.split()[-1] + ":" + str(policy))
""")


def _may_pin() -> bool:
    """PoCL pins its workers for tlc only where tlc asks it to (icd.pin_pocl_workers)."""
    cpus = os.cpu_count() or 1
    return sys.platform.startswith("linux") and cpus >= 2 \
        and "POCL_AFFINITY" not in os.environ \
        and os.sched_getaffinity(0) == set(range(cpus))


@pytest.mark.skipif(not _may_pin(), reason="tlc pins PoCL's workers only on Linux, with "
                    "every CPU allowed and POCL_AFFINITY unset")
def test_pocl_workers_are_pinned_to_distinct_cpus() -> None:
    env = {k: v for k, v in os.environ.items() if k != "POCL_AFFINITY"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True,
                         text=True, timeout=120, check=True).stdout.split()
    if out[0] != "pocl":
        pytest.skip("the default device is not PoCL's CPU device")
    assert out[1] == "unset"  # set for PoCL's start only: children do not inherit it
    threads = [line.split(":") for line in out[2:]]
    pinned = {cpus for cpus, _ in threads if cpus.isdigit()}
    assert len(pinned) >= 2, f"worker threads' CPUs: {out[2:]}"
    assert all(int(policy) == os.SCHED_BATCH for cpus, policy in threads if cpus.isdigit())
