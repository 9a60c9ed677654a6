"""Shared by tests/distributed: whether MPI can run here, and a skip marker."""

from __future__ import annotations

import importlib.util

import pytest

from backend_opencl.distributed.launch import find_mpiexec


def mpi_available() -> bool:
    """mpi4py importable and an mpiexec found."""
    return importlib.util.find_spec("mpi4py") is not None and find_mpiexec() is not None


needs_mpi = pytest.mark.skipif(not mpi_available(),
                               reason="needs mpi4py and mpiexec (make mpi)")
