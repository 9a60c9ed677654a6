"""Starting ranks: the launcher command (Open MPI's extra flags) and the environment of
spawned ranks (no MPI needed)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from backend_opencl.distributed import launch


def _fake_mpiexec(tmp_path: Path, banner: str) -> str:
    path = tmp_path / "mpiexec"
    path.write_text(f"#!/bin/sh\necho '{banner}'\n")
    path.chmod(0o755)
    return str(path)


def test_open_mpi_gets_oversubscribe_and_root_flags(tmp_path: Path) -> None:
    fake = _fake_mpiexec(tmp_path, "mpiexec (Open MPI) 4.1.4")
    cmd = launch.mpiexec_command(4, ["python", "x.py"], fake)
    assert cmd[:3] == [fake, "-n", "4"] and "--oversubscribe" in cmd
    assert ("--allow-run-as-root" in cmd) == (os.geteuid() == 0)
    assert cmd[-2:] == ["python", "x.py"]


def test_mpich_gets_no_extra_flags(tmp_path: Path) -> None:
    fake = _fake_mpiexec(tmp_path, "HYDRA build details:")
    assert launch.mpiexec_command(2, ["a"], fake) == [fake, "-n", "2", "a"]


def test_spawned_ranks_leave_the_enclosing_mpi_job(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PMI_RANK", "3")
    monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", "8")
    monkeypatch.delenv("POCL_CPU_MAX_CU_COUNT", raising=False)
    monkeypatch.delenv("POCL_AFFINITY", raising=False)
    env = launch.child_environment(ranks=2)
    assert "PMI_RANK" not in env and "OMPI_COMM_WORLD_SIZE" not in env
    assert env["OMPI_ALLOW_RUN_AS_ROOT"] == "1"
    assert int(env["POCL_CPU_MAX_CU_COUNT"]) >= 1
    assert env["POCL_AFFINITY"] == "0"  # every rank's worker 0 would be pinned to CPU 0


def test_tlc_mpiexec_names_the_launcher(tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    fake = _fake_mpiexec(tmp_path, "HYDRA")
    monkeypatch.setenv(launch.MPIEXEC_ENV, fake)
    assert launch.find_mpiexec() == fake
    monkeypatch.setenv(launch.MPIEXEC_ENV, str(tmp_path / "absent"))
    assert launch.find_mpiexec() is None


def test_device_placeholders_pick_the_local_rank(monkeypatch: pytest.MonkeyPatch) -> None:
    from backend_opencl.distributed.grid import ProcessGrid
    from backend_opencl.tools.distributed import rank_device
    from tensorlang.diagnostics import TlcError

    grid = ProcessGrid(4, 1, rank=3)
    monkeypatch.setenv("MPI_LOCALRANKID", "1")
    assert rank_device("{local_rank}", grid) == "1"
    assert rank_device("gpu {rank}", grid) == "gpu 3"
    assert rank_device("pocl", grid) == "pocl" and rank_device(None, grid) is None
    with pytest.raises(TlcError, match="bad placeholder"):
        rank_device("{node}", grid)


def test_a_rank_message_the_launcher_lost_is_reported(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    """MPI_Abort may kill the launcher before it forwards the failing rank's line: the
    rank's ``error.RANK.txt`` is reported instead (a launcher that forwards nothing)."""
    from tensorlang.diagnostics import TlcError

    pytest.importorskip("mpi4py")
    fake = tmp_path / "mpiexec"
    fake.write_text("#!/bin/sh\n"
                    "for last; do :; done\n"  # the job folder is the last argument
                    "printf 'rank 1 of 2: error: lost' > \"$last/error.1.txt\"\n"
                    "echo 'application called MPI_Abort(MPI_COMM_WORLD, 1) - process 1'\n"
                    "exit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv(launch.MPIEXEC_ENV, str(fake))
    with pytest.raises(TlcError, match="failed"):
        launch.run_job({"cases": []}, 2, timeout_s=60)
    err = capsys.readouterr().err
    assert "rank 1 of 2: error: lost" in err and "MPI_Abort" not in err
