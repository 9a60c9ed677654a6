"""``tlc run --profile`` / ``TLC_PROFILE=1`` reports, and the disk cache of lowered
programs (a second process compiles without importing the front end).  Each case runs
in a fresh process: profiling is decided when the device's queue is created."""

from __future__ import annotations

import collections
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

import backend_opencl
from tensorlang.plan import Launch

ROOT = Path(__file__).resolve().parents[2]
MLP = ROOT / "examples" / "mlp.mlir"


def _mlp_inputs(tmp_path: Path) -> tuple[Path, np.ndarray]:
    data = np.load(ROOT / "examples" / "mlp.npz")
    path = tmp_path / "in.npz"
    np.savez(path, *[data[f"in{i}"] for i in range(7)])
    return path, data["out0"]


def _python(code: str, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True,
                          text=True, cwd=ROOT, env={**os.environ, **env}, timeout=300,
                          check=False)


def _launch_counts() -> collections.Counter[str]:
    exe = backend_opencl.compile_stablehlo(MLP.read_text(), filename=str(MLP))
    return collections.Counter(s.kernel for s in exe.plan.steps if isinstance(s, Launch))


def test_tlc_run_profile_names_kernels_and_counts(tmp_path: Path) -> None:
    inputs, _ = _mlp_inputs(tmp_path)
    code = "import sys; from backend_opencl.tools.cli import main; sys.exit(main(sys.argv[1:]))"
    done = _python(code, {"TLC_CACHE_DIR": str(tmp_path)}, "run", str(MLP), "--inputs",
                   str(inputs), "-o", str(tmp_path / "out.npz"), "--profile", "--repeat",
                   "3")
    assert done.returncode == 0, done.stderr
    report = done.stderr
    for name, count in _launch_counts().items():
        line = next(x for x in report.splitlines() if x.split()[:1] == [name])
        assert int(line.split()[1]) == 3 * count, line
    for heading in ("3 call(s)", "launches:", "bytes moved: host->device",
                    "host overhead"):
        assert heading in report


def test_env_switch_prints_the_report_at_exit(tmp_path: Path) -> None:
    code = ("import numpy as np, backend_opencl, sys\n"
            "exe = backend_opencl.compile_stablehlo(open(sys.argv[1]).read())\n"
            "d = np.load(sys.argv[2])\n"
            "exe(*[d[f'in{i}'] for i in range(7)])\n")
    done = _python(code, {"TLC_PROFILE": "1", "TLC_CACHE_DIR": str(tmp_path)}, str(MLP),
                   str(ROOT / "examples" / "mlp.npz"))
    assert done.returncode == 0, done.stderr
    assert "tlc profile: 1 call(s)" in done.stderr
    for name in _launch_counts():
        assert name in done.stderr


def test_second_process_uses_the_lowered_cache(tmp_path: Path) -> None:
    inputs, want = _mlp_inputs(tmp_path)
    code = ("import sys, numpy as np, backend_opencl\n"
            "exe = backend_opencl.compile_stablehlo(open(sys.argv[1]).read(),"
            " filename=sys.argv[1])\n"
            "d = np.load(sys.argv[2])\n"
            "np.save(sys.argv[3], exe(*[d[k] for k in d.files])[0])\n"
            "print('frontend' in sys.modules, 'backend_opencl.emit' in sys.modules)\n")
    env = {"TLC_CACHE_DIR": str(tmp_path)}
    for run, imported in ((1, "True True"), (2, "False False")):
        out = tmp_path / f"out{run}.npy"
        done = _python(code, env, str(MLP), str(inputs), str(out))
        assert done.returncode == 0, done.stderr
        assert done.stdout.split() == imported.split()
        np.testing.assert_allclose(np.load(out), want, rtol=1e-5, atol=1e-5)
    assert len(list((tmp_path / "lowered").glob("*.pickle"))) == 1


def test_cache_off(tmp_path: Path) -> None:
    code = ("import sys, backend_opencl\n"
            "backend_opencl.compile_stablehlo(open(sys.argv[1]).read())\n")
    done = _python(code, {"TLC_CACHE_DIR": "off", "HOME": str(tmp_path)}, str(MLP))
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / ".cache" / "tlc" / "lowered").exists()
