"""Golden-text checks shared by the test folders: run the ``tlc`` CLI in-process and match
its output (or any text) against a file's ``; CHECK`` lines with the ``filecheck``
package."""

from __future__ import annotations

import io
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

from backend_opencl.tools.cli import main

FILECHECK = Path(sys.executable).parent / "filecheck"


def tlc(*args: str) -> tuple[int, str, str]:
    """Run ``tlc ARGS`` in this process: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def check_text(path: Path, text: str, prefix: str = "CHECK") -> None:
    """Assert that ``text`` matches the ``prefix`` lines of ``path``."""
    result = subprocess.run([str(FILECHECK), "--check-prefix", prefix, str(path)],
                            input=text, text=True, capture_output=True, check=False)
    assert result.returncode == 0, result.stderr + "\n" + text


def check_opt(path: Path, passes: str) -> None:
    """``tlc opt PATH -p PASSES`` matches the CHECK lines of ``path``."""
    code, printed, err = tlc("opt", str(path), "-p", passes)
    assert code == 0, err
    check_text(path, printed)
