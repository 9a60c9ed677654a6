"""The ``tlc`` command line never shows a traceback: every subcommand on StableHLO and
tensor-language files that are valid, empty, binary, not UTF-8, truncated, missing or a
directory, and on bad options, ends with exit status 0, 1 (a user mistake, with a
diagnostic) or 2 (an incomplete command line); a bug in tlc is an internal error (3)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from backend_opencl.tools import cli

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
TLC = Path(sys.executable).with_name("tlc")

KINDS = ["valid", "empty", "random", "nul", "not-utf8", "truncated", "missing", "directory"]
COMMANDS = [["check"], ["compile"], ["compile", "--emit", "tl"], ["compile", "--emit", "cl"],
            ["compile", "--emit", "shlo"], ["compile", "--emit", "schedule"], ["opt"],
            ["opt", "-p", "dce,insert-barrier"], ["run"], ["tune", "--top", "1", "--groups", "2"],
            ["interpret"]]


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Each kind of file with each suffix (``valid.mlir`` is examples/mlp.mlir,
    ``valid.tl`` examples/fused_kernel.tl), and broken ``--inputs`` files."""
    folder = tmp_path_factory.mktemp("files")
    noise = np.random.default_rng(0).bytes(256)
    for suffix, example in ((".mlir", "mlp.mlir"), (".tl", "fused_kernel.tl")):
        text = (EXAMPLES / example).read_bytes()
        contents = {"valid": text, "empty": b"", "random": noise, "nul": b"\0" * 64,
                    "not-utf8": b"func @f(\xff\xfe) {\n}\n", "truncated": text[:len(text) // 2]}
        for kind, data in contents.items():
            (folder / f"{kind}{suffix}").write_bytes(data)
        (folder / f"directory{suffix}").mkdir()
    (folder / "junk.npy").write_bytes(noise)
    (folder / "junk.npz").write_bytes(b"PK\3\4" + noise)
    np.save(folder / "one.npy", np.ones(3, np.float32))
    return folder


def tlc(*argv: str) -> tuple[int, str, str]:
    """``tlc argv`` in this process: exit status, stdout, stderr."""
    import io
    from contextlib import redirect_stderr, redirect_stdout

    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            code = cli.main(list(argv))
        except SystemExit as done:  # argparse: --help, --version, a bad command line
            code = done.code if isinstance(done.code, int) else 1
    return code, out.getvalue(), err.getvalue()


def assert_no_crash(code: int, out: str, err: str) -> None:
    """Exit status 0, 1 or 2, no traceback, no internal error, a diagnostic on failure."""
    assert code in (0, 1, 2), (code, err)
    assert "Traceback" not in out + err and "internal error" not in err, err
    if code:
        assert "error" in err, err


@pytest.fixture(autouse=True)
def _scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run in a scratch directory (interpret's probes) with a scratch tune cache."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TLC_TUNE_CACHE", str(tmp_path / "tune.json"))


@pytest.mark.parametrize("suffix", [".mlir", ".tl"])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_every_command_on_every_kind_of_file(files: Path, command: list[str], kind: str,
                                             suffix: str) -> None:
    code, out, err = tlc(*command[:1], str(files / f"{kind}{suffix}"), *command[1:])
    assert_no_crash(code, out, err)
    if kind != "valid" and kind != "empty":
        assert code == 1 and f"{kind}{suffix}" in err


@pytest.mark.parametrize("kind", ["random", "nul", "not-utf8", "truncated"])
@pytest.mark.parametrize("suffix", [".mlir", ".tl"])
def test_broken_files_get_a_located_diagnostic(files: Path, kind: str, suffix: str) -> None:
    """file:line:col: error: and, where the source line is shown, a caret; the control
    characters of a binary file are shown as visible symbols."""
    path = files / f"{kind}{suffix}"
    code, _, err = tlc("check", str(path))
    assert code == 1 and err.startswith(f"{path}:") and ": error: " in err
    assert err.split(":")[1].isdigit() and err.split(":")[2].isdigit()
    assert "\0" not in err
    if kind in ("nul", "truncated"):
        assert "^" in err


def test_missing_files_and_directories_are_named(files: Path) -> None:
    code, _, err = tlc("run", str(files / "missing.tl"))
    assert code == 1 and err == f"{files / 'missing.tl'}: error: cannot read file: No such " \
                                "file or directory\n"
    code, _, err = tlc("check", str(files / "directory.mlir"))
    assert code == 1 and "cannot read file: Is a directory" in err


def bad_command_lines(files: Path) -> list[tuple[list[str], int]]:
    """Bad options and their exit status."""
    mlir, tl, out = str(files / "valid.mlir"), str(files / "valid.tl"), str(files / "o")
    return [
        (["--bogus"], 2), (["check"], 2), (["nosuch", tl], 2),
        (["compile", mlir, "--emit", "x"], 2),
        (["opt", tl, "-p", "nosuch"], 1), (["opt", mlir, "-p", "nosuch"], 1),
        (["opt", tl, "-p", "dce{"], 1), (["opt", tl, "-p", "dce{x=1}"], 1),
        (["opt", tl, "-p", ",,"], 1),
        (["run", mlir, "--repeat", "-1"], 2), (["run", mlir, "--repeat", "x"], 2),
        (["run", tl, "--num-groups", "-1"], 2), (["run", tl, "--num-groups", "many"], 2),
        (["tune", tl, "--top", "0"], 2), (["tune", tl, "--groups", "-3"], 2),
        (["run", mlir, "--inputs", str(files / "absent.npz")], 1),
        (["run", mlir, "--inputs", str(files / "junk.npz")], 1),
        (["run", mlir, "--inputs", str(files / "junk.npy")], 1),
        (["run", mlir, "--inputs", str(files / "directory.tl")], 1),
        (["run", mlir, "--inputs", str(files / "one.npy")], 2),
        (["run", tl, "--inputs", str(files / "one.npy")], 2),
        (["run", tl, "--inputs", ",".join([str(files / "one.npy")] * 5)], 1),
        (["run", tl, "--inputs", "1,2,3,4,5"], 1),
        (["run", tl, "--entry", "nosuch"], 1), (["run", mlir, "--entry", "nosuch"], 1),
        (["run", mlir, "--num-groups", "2", "--inputs", str(files / "one.npy")], 1),
        (["run", mlir, "--inputs", str(EXAMPLES / "mlp.npz"), "--output-format", "npz"], 2),
        (["--device", "no-such-device", "run", tl, "--inputs", "1,2,3,4,5"], 1),
        (["--device", "no-such-device", "compile", mlir, "--emit", "cl"], 1),
        (["--device", "999", "devices"], 1),
        (["compile", tl, "-o", str(files / "directory.tl")], 1),
        (["compile", tl, "-o", str(files / "absent" / "k.cl")], 1),
        (["interpret", tl], 1), (["interpret", mlir, "--infeed", str(files / "junk.npz")], 1),
        (["interpret", mlir, "--infeed", str(files / "one.npy")], 1),
        (["interpret", mlir, "--outfeed", str(files / "absent" / "o.npz")], 1),
        (["compile", mlir, "--emit", "tl", "--entry", "nosuch"], 1),
        (["compile", tl, "--emit", "shlo"], 1),
        (["tune", mlir, "--entry", "nosuch"], 1),
        (["run", tl, "-o", out, "--inputs", "1,2,3,4,5"], 1),
        (["cache"], 2), (["cache", "bogus"], 2), (["cache", "info", tl], 2),
    ]


def test_bad_command_lines(files: Path) -> None:
    for argv, status in bad_command_lines(files):
        code, out, err = tlc(*argv)
        assert_no_crash(code, out, err)
        assert code == status, (argv, err)


@pytest.mark.parametrize("argv", [["--help"], ["--version"]] + [
    [name, "--help"] for name in ("check", "compile", "opt", "run", "tune", "devices",
                                  "cache", "interpret")])
def test_help_and_version(argv: list[str]) -> None:
    code, out, err = tlc(*argv)
    assert code == 0 and out and not err


def test_opt_and_tune_help_say_stablehlo_is_lowered_first() -> None:
    for name in ("opt", "tune"):
        _, out, _ = tlc(name, "--help")
        assert "StableHLO" in out


def test_devices() -> None:
    assert_no_crash(*tlc("devices"))


def test_a_bug_in_tlc_is_an_internal_error(monkeypatch: pytest.MonkeyPatch,
                                           files: Path) -> None:
    """Not a TlcError: one line naming it, how to see the traceback, exit status 3."""
    def broken(args: object) -> int:
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr(cli, "cmd_check", broken)
    code, out, err = tlc("check", str(files / "valid.tl"))
    assert code == 3 and out == ""
    assert err.splitlines() == ["tlc: internal error: ZeroDivisionError: division by zero",
                                "this is a bug in tlc; TLC_TRACEBACK=1 shows the traceback"]
    monkeypatch.setenv("TLC_TRACEBACK", "1")
    with pytest.raises(ZeroDivisionError):
        cli.main(["check", str(files / "valid.tl")])


def _console(*argv: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "TLC_TRACEBACK"}
    return subprocess.run([str(TLC), *argv], capture_output=True, text=True, env=env,
                          timeout=120, **kwargs)  # type: ignore[call-overload]


def test_console_script(files: Path) -> None:
    """The installed ``tlc``: the cases of the issue, and a file of NUL bytes."""
    mlir, tl = str(files / "valid.mlir"), str(files / "valid.tl")
    for argv, status in [(["opt", mlir, "-p", "dce"], 0), (["run", tl], 2),
                         (["check", str(files / "nul.tl")], 1), (["run", mlir, "--repeat", "x"], 2),
                         (["--version"], 0)]:
        done = _console(*argv)
        assert done.returncode == status, (argv, done.stderr)
        assert "Traceback" not in done.stderr and "internal error" not in done.stderr


def test_a_closed_stdout_is_quiet(files: Path) -> None:
    """``tlc ... | true`` (the reader is gone before tlc writes): no BrokenPipeError,
    nothing on stderr, exit status 1."""
    command = f"'{TLC}' compile '{files / 'valid.mlir'}' --emit tl | true; exit ${{PIPESTATUS[0]}}"
    done = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stderr) == (1, "")
