"""Starting ranks: finding ``mpiexec`` and running a job as N MPI processes.

A job is pickled into a temporary folder; ``mpiexec -n N python -m
backend_opencl.distributed.worker FOLDER`` runs it, and every rank writes its results
to ``FOLDER/out.RANK.pickle``.  A failing rank prints its error and aborts the MPI job,
so no rank is left waiting; a job that does not finish in time is killed.
"""

from __future__ import annotations

import importlib.util
import os
import pickle
import shutil
import signal
import subprocess
import sys
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

from backend_opencl.distributed.transport import MPI_ENV
from tensorlang.diagnostics import TlcError

MPIEXEC_ENV = "TLC_MPIEXEC"
"""Environment variable naming the ``mpiexec`` to use, a path or a name on PATH (default:
the one beside Python, then ``mpiexec`` / ``mpirun`` on PATH)."""


def find_mpiexec() -> str | None:
    """The ``mpiexec`` to start ranks with, or None."""
    configured = os.environ.get(MPIEXEC_ENV)
    if configured:
        return shutil.which(configured)
    beside = Path(sys.executable).parent
    for name in ("mpiexec", "mpirun"):
        if (beside / name).exists():
            return str(beside / name)
    return shutil.which("mpiexec") or shutil.which("mpirun")


@cache
def _is_open_mpi(mpiexec: str) -> bool:
    try:
        out = subprocess.run([mpiexec, "--version"], capture_output=True, text=True,
                             timeout=20).stdout
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "Open MPI" in out or "OpenRTE" in out


def mpiexec_command(n: int, argv: list[str], mpiexec: str | None = None) -> list[str]:
    """``mpiexec -n N argv...`` with the flags Open MPI needs (root, more ranks than
    cores)."""
    mpiexec = mpiexec or find_mpiexec()
    if mpiexec is None:
        raise TlcError("error: running on several processes needs an MPI launcher "
                       "(mpiexec): pip install 'tlc[mpi]', or install Open MPI / MPICH")
    cmd = [mpiexec, "-n", str(n)]
    if _is_open_mpi(mpiexec):
        cmd += ["--oversubscribe"] + (["--allow-run-as-root"] if os.geteuid() == 0 else [])
    return cmd + argv


def child_environment(ranks: int = 1) -> dict[str, str]:
    """This environment without the variables of an enclosing MPI job (a nested launch
    would join it), with Open MPI allowed to run as root and, for ``ranks`` local ranks,
    PoCL's CPU driver given a share of the cores each (unless POCL_CPU_MAX_CU_COUNT is
    set): ranks that each start a thread per core fight over the cores.  Their workers
    stay unpinned (unless POCL_AFFINITY is set): PoCL pins worker ``i`` to CPU ``i`` in
    every process, so ranks of one worker each would all run on CPU 0."""
    env = {k: v for k, v in os.environ.items()
           if k not in MPI_ENV and not k.startswith(("PMI_", "PMIX_", "OMPI_", "HYDRA_"))}
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    if ranks > 1:
        env.setdefault("POCL_CPU_MAX_CU_COUNT", str(max(1, (os.cpu_count() or 1) // ranks)))
        env.setdefault("POCL_AFFINITY", "0")
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
    return env


def run_job(job: dict[str, Any], n: int, timeout_s: float) -> list[Any]:
    """Run ``job`` (see :mod:`backend_opencl.distributed.worker`) on ``n`` ranks; the
    per-rank results in rank order."""
    if importlib.util.find_spec("mpi4py") is None:
        raise TlcError(f"error: running {n} processes needs mpi4py and an MPI library: "
                       "pip install 'tlc[mpi]' (or make mpi)")
    with tempfile.TemporaryDirectory(prefix="tlc-mpi-") as folder:
        (Path(folder) / "job.pickle").write_bytes(pickle.dumps(job))
        cmd = mpiexec_command(n, [sys.executable, "-m", "backend_opencl.distributed.worker",
                                  folder])
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, env=child_environment(n), start_new_session=True)
        try:
            output, _ = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise TlcError(f"error: {n} MPI processes did not finish within "
                           f"{timeout_s:g} s (killed)") from None
        output = _without_abort_noise(output or "")
        if proc.returncode != 0:
            output += _unforwarded_errors(Path(folder), output)
        if output:  # the ranks' own messages; errors go to stderr
            stream = sys.stdout if proc.returncode == 0 else sys.stderr
            stream.write(output)
        results = []
        for rank in range(n):
            path = Path(folder) / f"out.{rank}.pickle"
            if proc.returncode != 0 or not path.exists():
                raise TlcError(f"error: the run on {n} MPI processes failed (exit status "
                               f"{proc.returncode}); see the ranks' messages above")
            results.append(pickle.loads(path.read_bytes()))
        return results


def _unforwarded_errors(folder: Path, output: str) -> str:
    """The failing ranks' messages (``error.RANK.txt``, :mod:`.worker`) that the
    launcher's output lacks: MPI_Abort may kill it before it forwards them."""
    messages = [path.read_text() for path in sorted(folder.glob("error.*.txt"))]
    return "".join(f"{m}\n" for m in messages if m and m not in output)


def _without_abort_noise(output: str) -> str:
    """The ranks' output without the launcher's repeated abort banners."""
    keep = [line for line in output.splitlines(keepends=True)
            if not line.startswith(("Abort(", "[cli_", "application called MPI_Abort"))]
    return "".join(keep)
