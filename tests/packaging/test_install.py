"""``pip install .`` (not editable) ships every subpackage and the grammar files, and the
installed ``tlc`` command runs from any directory."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("frontend", "tensorlang", "backend_opencl", "tlc")
OFFLINE = ("No matching distribution", "Could not find a version", "NewConnectionError",
           "Network is unreachable", "Temporary failure in name resolution")


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project installed with ``pip install --target`` from a copy of its sources
    (the dependencies are this interpreter's)."""
    tmp = tmp_path_factory.mktemp("install")
    src = tmp / "src"
    for name in PACKAGES:
        shutil.copytree(ROOT / name, src / name,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    site = tmp / "site"
    done = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                           "--disable-pip-version-check", "--target", str(site), str(src)],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONWARNINGS": "ignore"})
    if done.returncode and any(s in done.stdout + done.stderr for s in OFFLINE):
        pytest.skip("pip cannot fetch the build backend (offline)")
    assert done.returncode == 0, done.stdout + done.stderr
    return site


def _tlc(site: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(site)}
    return subprocess.run([str(site / "bin" / "tlc"), *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def test_every_package_and_grammar_is_installed(installed: Path) -> None:
    for name in PACKAGES:
        source = {p.relative_to(ROOT) for p in (ROOT / name).rglob("*.py")}
        shipped = {p.relative_to(installed) for p in (installed / name).rglob("*.py")}
        assert source <= shipped, sorted(map(str, source - shipped))
    grammars = {p.relative_to(ROOT) for name in PACKAGES for p in (ROOT / name).rglob("*.lark")}
    assert grammars and all((installed / g).is_file() for g in grammars)


def test_installed_command_runs_from_another_directory(installed: Path,
                                                       tmp_path: Path) -> None:
    version = _tlc(installed, tmp_path, "--version")
    assert version.returncode == 0 and version.stdout.startswith("tlc "), version.stderr
    kernel = tmp_path / "k.tl"
    shutil.copy(ROOT / "examples" / "fused_kernel.tl", kernel)
    checked = _tlc(installed, tmp_path, "compile", "k.tl", "--emit", "tl")
    assert checked.returncode == 0, checked.stderr
    where = subprocess.run([sys.executable, "-c", "import backend_opencl, tlc.jax; "
                            "print(backend_opencl.__file__)"], cwd=tmp_path,
                           env={**os.environ, "PYTHONPATH": str(installed)},
                           capture_output=True, text=True, timeout=120)
    assert where.stdout.startswith(str(installed)), where.stderr
