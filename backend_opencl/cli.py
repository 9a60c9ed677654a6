"""The ``tlc`` command line: check, compile, run, opt, tune and devices.

Every user mistake is reported as a diagnostic on stderr with exit status 1 (2 for an
incomplete command line, as argparse does), never a traceback.  Files ending in
``.mlir`` are StableHLO, everything else is tensor language.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tensorlang.diagnostics import TlcError


def version() -> str:
    """The installed distribution's version (``tlc --version``), from its metadata."""
    from importlib import metadata

    try:
        return metadata.version("tlc")
    except metadata.PackageNotFoundError:
        return "unknown (not installed)"


def _read(path: str) -> str:
    try:
        data = Path(path).read_bytes()
    except OSError as err:
        raise TlcError(f"{path}: error: cannot read file: {err.strerror}") from None
    try:  # newlines translated as read_text() does
        return data.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")
    except UnicodeDecodeError as err:
        line = data.count(b"\n", 0, err.start) + 1
        col = err.start - (data.rfind(b"\n", 0, err.start) + 1) + 1
        raise TlcError(f"{path}:{line}:{col}: error: the file is not UTF-8 text (byte "
                       f"0x{data[err.start]:02x})") from None


def _is_stablehlo(path: str) -> bool:
    return path.endswith(".mlir")


def _load(path: str) -> object:
    """Parse and verify ``path`` as StableHLO or tensor language."""
    text = _read(path)
    if _is_stablehlo(path):
        import frontend

        return frontend.parse(text, filename=path)
    import tensorlang

    return tensorlang.parse(text, filename=path)


def _write(text: str, out: str | None) -> None:
    if out is None or out == "-":
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
    else:
        Path(out).write_text(text)


def cmd_check(args: argparse.Namespace) -> int:
    """``tlc check FILE``: parse and verify; silent on success."""
    _load(args.file)
    return 0


def cmd_compile(args: argparse.Namespace) -> int:
    """``tlc compile FILE [--emit tl|cl|shlo|schedule] [-o OUT]``."""
    program = _load(args.file)
    emit = args.emit or ("cl" if args.output and args.output.endswith(".cl") else None)
    emit = emit or ("shlo" if _is_stablehlo(args.file) else "tl")
    if emit == "shlo":
        if not _is_stablehlo(args.file):
            raise TlcError(f"{args.file}: error: --emit shlo needs a StableHLO (.mlir) input")
        _write(str(program), args.output)
        return 0
    from backend_opencl import driver

    _write(driver.emit(program, emit, device=args.device, check_bounds=args.check_bounds),
           args.output)
    return 0


def cmd_devices(args: argparse.Namespace) -> int:
    """``tlc devices``: every OpenCL device found, the chosen one marked, and why."""
    from backend_opencl.runtime import describe_devices

    sys.stdout.write(describe_devices(args.device) + "\n")
    if args.sycl:  # SYCL devices through dpctl (docs/devices.md, "SYCL through dpctl")
        from backend_opencl.runtime.sycl import describe

        sys.stdout.write(describe() + "\n")
    return 0


def cmd_opt(args: argparse.Namespace) -> int:
    """``tlc opt FILE -p a,b{k=v}``: run passes one at a time, print the result."""
    from tensorlang.passes import run_pipeline

    program = _load(args.file)
    run_pipeline(program, args.passes, verify_each=True)
    _write(str(program), args.output)
    return 0


def cmd_tune(args: argparse.Namespace) -> int:
    """``tlc tune FILE.tl``: time register-block candidates on the device, cache the best."""
    from backend_opencl.tune import tune

    program = _load(args.file)
    winners = tune(program, device=args.device, groups=args.groups, top=args.top,
                   progress=lambda line: sys.stderr.write(line + "\n"))
    for name, (rm, rn, *staged) in winners.items():
        sys.stdout.write(f"@{name}: {rm}x{rn}{', staged' if staged and staged[0] else ''}\n")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    """``tlc run FILE.mlir --inputs IN.npz|A.npy,B.npy [-o OUT] [--output-format F]``
    (through ``driver.run_cli``, the composition root, which calls :func:`run_program`)."""
    import os

    from backend_opencl import driver

    if args.profile:  # before the device's queue exists: it is made with profiling on
        os.environ["TLC_PROFILE"] = "1"
    from backend_opencl import distributed

    if distributed.wanted(args.file):  # under mpirun, or several replicas / partitions
        return distributed.run_cli(args)
    return driver.run_cli(args)


def run_program(args: argparse.Namespace) -> int:
    """Compile ``args.file``, bind ``--inputs``, run, and write or print the results."""
    from backend_opencl.run_phases import Phases, parameters_usage

    phases = Phases(enabled=args.verbose)
    with phases("read", args.file):
        text = _read(args.file)
    if args.inputs is None:  # listed from a parse alone: nothing is compiled
        usage = parameters_usage(text, args.file, args.entry, "no --inputs given")
        if usage:
            raise UsageError(usage)
    inputs = _load_inputs(args.inputs, phases) if args.inputs else []
    exe = phases.compile(text, args)
    if len(inputs) != len(exe.plan.params):
        raise UsageError(parameters_usage(text, args.file, args.entry,
                                          f"--inputs gave {len(inputs)} arrays"))
    for i in range(max(args.repeat, 1)):
        with phases("run" if i == 0 else f"run {i + 1}"):
            results = exe(*inputs)
    _print_profile()
    with phases("write", args.output or "stdout"):
        _write_results(results, args)
    phases.report()
    return 0


class UsageError(TlcError):
    """The command line is incomplete (exit status 2, as argparse's own errors)."""


def _load_inputs(spec: str, phases: Any) -> list[Any]:
    """The arrays of ``--inputs``: comma-separated ``.npy`` files (one array each) and
    ``.npz`` files (their arrays in stored order), in order."""
    arrays: list[Any] = []
    paths = [p.strip() for p in spec.split(",")]
    with phases("load", ", ".join(paths)):
        for path in paths:
            arrays += read_input_arrays(path)
    return arrays


def read_input_arrays(path: str) -> list[Any]:
    """The array of an ``.npy`` file, or those of an ``.npz`` in stored order; an
    unreadable file is a ``TlcError`` naming it."""
    import numpy as np

    try:
        if path.endswith(".npy"):
            return [np.load(path, allow_pickle=False)]
        with np.load(path, allow_pickle=False) as data:
            if not hasattr(data, "files"):
                raise ValueError("not an .npz archive (name .npy files .npy)")
            return [data[k] for k in data.files]
    except (OSError, ValueError, EOFError) as err:
        reason = err.strerror if isinstance(err, OSError) and err.strerror else err
        raise TlcError(f"{path}: error: cannot read inputs: {reason}") from None


def _write_results(results: Sequence[Any], args: argparse.Namespace) -> None:
    """``result0..`` as an .npz (``-o``'s default), every value as text, or a summary
    (stdout's default)."""
    import numpy as np

    out = {f"result{i}": r for i, r in enumerate(results)}
    fmt = args.output_format or ("npz" if args.output and args.output != "-" else "summary")
    if fmt == "npz":
        if not args.output or args.output == "-":
            raise UsageError("error: --output-format npz needs -o FILE.npz")
        np.savez(args.output, **out)
        return
    if fmt == "text":
        text = "\n".join(f"{name}: {_type_text(r)}\n"
                         f"{np.array2string(r, threshold=sys.maxsize, floatmode='unique')}"
                         for name, r in out.items())
    else:
        text = "\n".join(f"{name} = {np.array2string(r, threshold=64)}"
                         for name, r in out.items())
    _write(text, args.output)


def _type_text(r: Any) -> str:
    """``shape dtype`` of a result, as the argument listing spells it."""
    return f"{'x'.join(map(str, r.shape)) or 'scalar'} {r.dtype}"


def _print_profile() -> None:
    """Print (to stderr) and reset the profile when this process profiles."""
    from backend_opencl.runtime import profile

    if profile.enabled():
        print(profile.report(), file=sys.stderr)
        profile.PROFILE.reset()


def cmd_interpret(args: argparse.Namespace) -> int:
    """``tlc interpret FILE.mlir``: every module's functions and their check ops
    (``backend_opencl/interpret.py``)."""
    from backend_opencl import interpret

    return interpret.command(args, _read(args.file))


def _check_bounds_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--check-bounds", action="store_true",
                   help="guard every access isl cannot prove in bounds; a violation at run "
                        "time is an error naming the access (file:line:col)")


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="tlc", description="Tensor programs to OpenCL C.")
    ap.add_argument("--version", action="version", version=f"tlc {version()}")
    ap.add_argument("-v", "--verbose", action="store_true",
                    help="tlc run: print the pipeline's phases and their times to stderr")
    ap.add_argument("--device", default=None,
                    help="OpenCL device: index, or text matched against platform/device names "
                         "(default: $TLC_DEVICE, then GPUs, system CPU drivers, PyPI's PoCL)")
    sub = ap.add_subparsers(dest="command", required=True)

    Command = Callable[[argparse.Namespace], int]

    def add(name: str, func: Command, help: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help)
        p.set_defaults(func=func)
        return p

    add("check", cmd_check, "parse and verify a program").add_argument("file")
    p = add("compile", cmd_compile, "compile and print or write the result")
    p.add_argument("file")
    p.add_argument("--emit", choices=["tl", "cl", "shlo", "schedule"])
    p.add_argument("-o", "--output")
    _check_bounds_option(p)
    p = add("opt", cmd_opt, "run tensor-language passes")
    p.add_argument("file")
    p.add_argument("-p", "--passes", default="", help="comma-separated pass pipeline")
    p.add_argument("-o", "--output")
    p = add("run", cmd_run, "run a StableHLO program")
    p.add_argument("file")
    p.add_argument("--inputs", metavar="FILES",
                   help="comma-separated .npy files (one array each) and .npz files (their "
                        "arrays in stored order), bound to the parameters in order; without "
                        "it, tlc lists the parameters")
    p.add_argument("-o", "--output", help="where results go (default: stdout)")
    p.add_argument("--output-format", choices=["npz", "text", "summary"],
                   help="npz (result0.. arrays; the default with -o), text (every value, "
                        "shortest exact digits) or summary (abbreviated; stdout's default)")
    p.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS,
                   help="print the pipeline's phases and their times to stderr")
    p.add_argument("--entry", default="main")
    p.add_argument("--profile", action="store_true",
                   help="print per-kernel device time, launch counts, bytes moved between "
                        "host and device and host overhead to stderr (as TLC_PROFILE=1)")
    p.add_argument("--repeat", type=int, default=1,
                   help="run the program this many times (for --profile)")
    _check_bounds_option(p)
    p = add("tune", cmd_tune, "autotune register blocks on the device (cached)")
    p.add_argument("file")
    p.add_argument("--groups", type=int, default=2000, help="work-groups per timed launch")
    p.add_argument("--top", type=int, default=5, help="candidates of the cost model to time")
    p = add("devices", cmd_devices, "list OpenCL devices")
    p.add_argument("--sycl", action="store_true",
                   help="also list SYCL devices through dpctl (pip install 'tlc[sycl]')")
    p = add("interpret", cmd_interpret, "run the functions of a StableHLO test file and "
            "their check ops (as stablehlo-translate --interpret -split-input-file)")
    p.add_argument("file")
    p.add_argument("--probe-dir", default="probe", help="where interpreter.probe saves "
                   "tensors, with index.csv (default: ./probe; '' saves nothing)")
    p.add_argument("--infeed", help=".npz whose in0, in1, ... stablehlo.infeed takes in turn")
    p.add_argument("--outfeed", help=".npz to write the stablehlo.outfeed tensors to")
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``tlc`` console script."""
    args = _parser().parse_args(argv)
    try:
        return args.func(args)
    except UsageError as err:
        sys.stderr.write(f"{err}\n")
        return 2
    except TlcError as err:
        sys.stderr.write(f"{err}\n")
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
