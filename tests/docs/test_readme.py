"""Every command and Python example of README.md runs as shown.

Python blocks run in order in the repository root (the JAX ones skip without jax);
shell lines run in a scratch directory that sees the repository's ``examples`` and
``.venv`` (and ``../shared`` beside it, as the repository does); ``make`` lines must name
targets of the Makefile (``make demo`` and ``make test`` run them in CI). A line whose
comment says "exit status N" must exit with N.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BLOCK = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)


def _blocks(language: str) -> list[str]:
    text = (ROOT / "README.md").read_text()
    return [body for lang, body in BLOCK.findall(text) if lang == language]


def _commands() -> list[str]:
    return [line for block in _blocks("sh") for line in block.splitlines()
            if line.strip() and not line.lstrip().startswith("#")]


def test_readme_has_the_sections_in_order() -> None:
    heads = [line for line in (ROOT / "README.md").read_text().splitlines()
             if line.startswith("## ")]
    order = [heads.index(h) for h in ("## From JAX", "## The tensor language",
                                      "## The command line")]
    assert order == sorted(order) and heads.index("## From JAX") <= 1


@pytest.mark.parametrize("index", range(len(_blocks("python"))))
def test_python_example(index: int, monkeypatch: pytest.MonkeyPatch) -> None:
    source = _blocks("python")[index]
    if "import jax" in source:
        pytest.importorskip("jax")
    monkeypatch.chdir(ROOT)
    exec(compile(source, f"README.md python block {index}", "exec"), {})


def test_make_lines_name_makefile_targets() -> None:
    targets = set(re.findall(r"^([\w-]+):", (ROOT / "Makefile").read_text(), re.M))
    lines = [c for c in _commands() if c.startswith("make ")]
    assert lines
    for line in lines:
        assert line.split()[1] in targets, line


def test_shell_commands(tmp_path: Path) -> None:
    """The tlc commands, in order (later ones use files earlier ones wrote)."""
    work = tmp_path / "repo"
    work.mkdir()
    (work / "examples").symlink_to(ROOT / "examples")
    (work / ".venv").symlink_to(Path(sys.prefix))
    shared = ROOT.parent / "shared"
    if shared.is_dir():
        (tmp_path / "shared").symlink_to(shared)
    env = {**os.environ, "TLC_TUNE_CACHE": str(tmp_path / "tune.json")}
    for line in (c for c in _commands() if not c.startswith("make ")):
        command, _, comment = line.partition("  #")
        if "../shared/" in command and not shared.is_dir():
            continue  # the conformance suites are not beside this checkout
        expected = int(m.group(1)) if (m := re.search(r"exit status (\d)", comment)) else 0
        done = subprocess.run(command, shell=True, cwd=work, env=env, text=True,
                              capture_output=True, timeout=300)
        assert done.returncode == expected, f"{command}\n{done.stderr}"
        assert "Traceback" not in done.stderr, command
    assert (work / "out.npz").is_file() and (work / "kernel.cl").is_file()
