"""``python -m backend_opencl.distributed.worker FOLDER``: one MPI rank of a job.

The job (``FOLDER/job.pickle``, written by :func:`launch.run_job`) holds the cases — each
a module's text, the grid of function names ``programs[replica][partition]`` and the flat
inputs (each rank takes as many as its function has arguments, in rank order) — and the
device.  Case k runs on the first ``n_k`` ranks; the rank writes its results (None for the
cases it sits out) to ``FOLDER/out.RANK.pickle``.  An error is printed with the rank's
coordinates, written to ``FOLDER/error.RANK.txt`` and aborts the whole job.
"""

from __future__ import annotations

import pickle
import sys
from pathlib import Path

from backend_opencl.distributed.transport import MpiTransport


def main(folder: str) -> int:
    """Run this rank's part of the job in ``folder``."""
    transport = MpiTransport()
    rank = transport.rank
    try:
        job = pickle.loads((Path(folder) / "job.pickle").read_bytes())
        from backend_opencl.distributed import run_cases

        results = run_cases(job["cases"], transport, device=job.get("device"))
        (Path(folder) / f"out.{rank}.pickle").write_bytes(pickle.dumps(results))
        return 0
    except BaseException as err:  # noqa: B036 -- any failure must stop every rank
        from backend_opencl.distributed import describe_failure

        message = describe_failure(err, transport)
        sys.stderr.write(message + "\n")
        sys.stderr.flush()
        # MPI_Abort may kill the launcher before it forwards the line above: the file
        # is what run_job reports
        (Path(folder) / f"error.{rank}.txt").write_text(message)
        transport.abort(1)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
