"""The ``tlc`` command line: check, compile, opt, run, tune, devices and interpret.

Every user mistake is reported as a diagnostic on stderr with exit status 1 (2 for an
incomplete command line, as argparse does), never a traceback; an exception that is not
a :class:`TlcError` is a bug in tlc, reported as an internal error (exit status 3).
Files ending in ``.mlir`` are StableHLO, everything else is tensor language.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from backend_opencl.tools.files import read_input_arrays, read_text, save_arrays, writing
from tensorlang.diagnostics import TlcError

if TYPE_CHECKING:
    import numpy as np

    from backend_opencl.tools.run import Phases
    from tensorlang.ir.core import Program


def version() -> str:
    """The installed distribution's version (``tlc --version``), from its metadata."""
    from importlib import metadata

    try:
        return metadata.version("tlc")
    except metadata.PackageNotFoundError:
        return "unknown (not installed)"


def _is_stablehlo(path: str) -> bool:
    return path.endswith(".mlir")


def _load(path: str) -> object:
    """Parse and verify ``path`` as StableHLO or tensor language."""
    text = read_text(path)
    if _is_stablehlo(path):
        import frontend

        return frontend.parse(text, filename=path)
    import tensorlang

    return tensorlang.parse(text, filename=path)


def _kernels(args: argparse.Namespace) -> Program:
    """The tensor-language program of ``args.file``: the file itself, or the kernels a
    StableHLO file's ``--entry`` lowers to (as ``tlc compile --emit tl`` prints them)."""
    from backend_opencl.api import compiler

    return compiler.tensor_language(_load(args.file), args.entry)


def _write(text: str, out: str | None) -> None:
    if out is None or out == "-":
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
        return
    with writing(out):
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
    from backend_opencl.api import compiler

    _write(compiler.emit(program, emit, device=args.device, entry=args.entry,
                       check_bounds=args.check_bounds), args.output)
    return 0


def cmd_devices(args: argparse.Namespace) -> int:
    """``tlc devices``: every OpenCL device found, the chosen one marked, and why."""
    from backend_opencl.runtime import describe_devices

    sys.stdout.write(describe_devices(args.device) + "\n")
    if args.sycl:  # SYCL devices through dpctl (docs/devices.md, "SYCL through dpctl")
        from backend_opencl.runtime.sycl.queue import describe

        sys.stdout.write(describe() + "\n")
    return 0


def cmd_cache(args: argparse.Namespace) -> int:
    """``tlc cache info|clear``: the disk cache's folder, entries, bytes and cap, or
    remove its entries (:mod:`backend_opencl.diskcache`)."""
    from backend_opencl import diskcache

    sys.stdout.write((diskcache.clear() if args.action == "clear" else diskcache.describe())
                     + "\n")
    return 0


def cmd_opt(args: argparse.Namespace) -> int:
    """``tlc opt FILE -p a,b{k=v}``: run passes one at a time (verifying after each) on
    the file's tensor language (a StableHLO file's kernels), print the result."""
    from tensorlang.passes import run_pipeline

    program = _kernels(args)
    run_pipeline(program, args.passes, verify_each=True)
    _write(str(program), args.output)
    return 0


def _to_stderr(line: str) -> None:
    sys.stderr.write(line + "\n")


def cmd_tune(args: argparse.Namespace) -> int:
    """``tlc tune FILE``: time register-block candidates of the file's kernels (a
    StableHLO file's, as ``tlc run`` compiles them) on the device, cache the best."""
    from backend_opencl.tools.tune import tune

    program = _kernels(args)
    try:
        winners = tune(program, device=args.device, groups=args.groups, top=args.top,
                       progress=_to_stderr)
    except OSError as err:  # the cache file: the rest of tuning is device work
        raise TlcError(f"{err.filename}: error: cannot write the tune cache: "
                       f"{err.strerror}") from None
    if not winners:
        sys.stderr.write(f"{args.file}: note: no kernel has a contraction (gemm, gemv, "
                         "ger): nothing to tune\n")
    for name, (rm, rn, *staged) in winners.items():
        sys.stdout.write(f"@{name}: {rm}x{rn}{', staged' if staged and staged[0] else ''}\n")
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    """``tlc run FILE --inputs IN.npz|A.npy,B.npy [-o OUT] [--output-format F]``
    (:func:`run_program`; under MPI, :func:`backend_opencl.tools.distributed.run_cli`)."""
    if args.profile:  # before the device's queue exists: it is made with profiling on
        os.environ["TLC_PROFILE"] = "1"
    if not _is_stablehlo(args.file):
        return run_program(args)
    if args.num_groups is not None:
        raise TlcError("error: --num-groups is for tensor-language kernels; a StableHLO "
                       "program's host plan sets its launches")
    args.entry = args.entry or "main"
    from backend_opencl.distributed import wanted
    from backend_opencl.tools.distributed import run_cli as run_distributed

    if wanted(args.file):  # under mpirun, or several replicas / partitions
        return run_distributed(args)
    return run_program(args)


def run_program(args: argparse.Namespace) -> int:
    """Compile ``args.file``, bind ``--inputs``, run, and write or print the results (a
    tensor-language file: :func:`run_kernel`)."""
    from backend_opencl.tools.run import Phases, parameters_usage

    if not _is_stablehlo(args.file):
        return run_kernel(args)
    phases = Phases(enabled=args.verbose)
    with phases("read", args.file):
        text = read_text(args.file)
    if not args.inputs:  # listed from a parse alone: nothing is compiled
        usage = parameters_usage(text, args.file, args.entry, "no --inputs given")
        if usage:
            raise UsageError(usage)
    inputs = _load_inputs(args.inputs, phases)
    exe = phases.compile(text, args)
    if len(inputs) != len(exe.plan.params):
        raise UsageError(parameters_usage(text, args.file, args.entry,
                                          f"--inputs gave {len(inputs)} arrays"))
    for i in range(args.repeat):
        with phases("run" if i == 0 else f"run {i + 1}"):
            results = exe(*inputs)
    _finish(phases, {f"result{i}": r for i, r in enumerate(results)}, args)
    return 0


def run_kernel(args: argparse.Namespace) -> int:
    """``tlc run FILE.tl``: compile the file, bind ``--inputs`` to the arguments of its
    kernel ``--entry``, launch it ``--num-groups`` work-groups, and write or print the
    arguments it writes (named after them)."""
    import tensorlang
    from backend_opencl.api import compiler
    from backend_opencl.tools import run
    phases = run.Phases(enabled=args.verbose)
    with phases("read", args.file):
        text = read_text(args.file)
    with phases("parse", "tensor language parsed and verified"):
        program = tensorlang.parse(text, filename=args.file)
    func = run.entry_kernel(program, args.entry, args.file)
    values = _load_inputs(args.inputs, phases, numbers=True)
    if len(values) != len(func.args):
        problem = f"--inputs gave {len(values)} arrays" if args.inputs else "no --inputs given"
        raise UsageError(run.kernel_usage(func, args.file, problem))
    with phases("compile", "passes, schedule, OpenCL C, build (cached)"):
        kernel = compiler.compile_program(program, device=args.device,
                                        check_bounds=args.check_bounds).kernels[func.name]
    groups = {} if args.num_groups is None else {"num_groups": args.num_groups}
    for i in range(args.repeat):
        bound = run.kernel_arguments(func, values)  # fresh copies: kernels write in place
        with phases("run" if i == 0 else f"run {i + 1}"):
            kernel(*bound, **groups)
    _finish(phases, run.kernel_results(func, bound, kernel.written), args)
    return 0


def _finish(phases: Phases, results: dict[str, Any], args: argparse.Namespace) -> None:
    """After the runs: the profile, the results, the phases' times."""
    _print_profile()
    with phases("write", args.output or "stdout"):
        _write_results(results, args)
    phases.report()


class UsageError(TlcError):
    """The command line is incomplete (exit status 2, as argparse's own errors)."""


def _load_inputs(spec: str | None, phases: Phases, numbers: bool = False
                 ) -> list[np.ndarray | int | float | complex]:
    """The values of ``--inputs``: comma-separated ``.npy`` files (one array each) and
    ``.npz`` files (their arrays in stored order), in order; with ``numbers``, an entry
    that names no file and reads as a Python number is that number."""
    values: list[np.ndarray | int | float | complex] = []
    paths = [p.strip() for p in (spec or "").split(",") if p.strip()]
    with phases("load", ", ".join(paths)):
        for path in paths:
            number = _number(path) if numbers and not Path(path).exists() else None
            values += [number] if number is not None else read_input_arrays(path)
    return values


def _number(text: str) -> int | float | complex | None:
    """``text`` as a Python int, float or complex number; None when it is none."""
    for kind in (int, float, complex):
        try:
            return kind(text)
        except ValueError:
            pass
    return None


def _write_results(out: dict[str, Any], args: argparse.Namespace) -> None:
    """The named results as an .npz (``-o``'s default), every value as text, or a
    summary (stdout's default)."""
    import numpy as np

    fmt = args.output_format or ("npz" if args.output and args.output != "-" else "summary")
    if fmt == "npz":
        if not args.output or args.output == "-":
            raise UsageError("error: --output-format npz needs -o FILE.npz")
        save_arrays(args.output, out)
        return
    if fmt == "text":
        text = "\n".join(f"{name}: {_type_text(r)}\n"
                         f"{np.array2string(r, threshold=sys.maxsize, floatmode='unique')}"
                         for name, r in out.items())
    else:
        text = "\n".join(f"{name} = {np.array2string(r, threshold=64)}"
                         for name, r in out.items())
    _write(text, args.output)


def _type_text(r: np.ndarray) -> str:
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
    (``backend_opencl/tools/interpret.py``)."""
    from backend_opencl.tools import interpret

    if not _is_stablehlo(args.file):
        raise TlcError(f"{args.file}: error: tlc interpret runs StableHLO test files "
                       "(.mlir); run a tensor-language kernel with tlc run")
    return interpret.command(args, read_text(args.file))


def _check_bounds_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--check-bounds", action="store_true",
                   help="guard every access isl cannot prove in bounds; a violation at run "
                        "time is an error naming the access (file:line:col)")


def _entry_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--entry", metavar="NAME", default="main",
                   help="the StableHLO function lowered to kernels (default: main)")


def _at_least(minimum: int) -> Callable[[str], int]:
    """An argparse ``type``: a whole number of at least ``minimum``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
        return value

    return parse


def _run_options(p: argparse.ArgumentParser) -> None:
    """The options of ``tlc run``."""
    p.add_argument("file")
    p.add_argument("--inputs", metavar="FILES",
                   help="comma-separated .npy files (one array each) and .npz files (their "
                        "arrays in stored order), bound to the parameters in order (a "
                        "kernel's scalar may be a number: 0.5,a.npy); without it, tlc lists "
                        "the parameters")
    p.add_argument("-o", "--output", help="where results go (default: stdout)")
    p.add_argument("--output-format", choices=["npz", "text", "summary"],
                   help="npz (result0.., a kernel's written arguments by name; the default "
                        "with -o), text (every value, shortest exact digits) or summary "
                        "(abbreviated; stdout's default)")
    p.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS,
                   help="print the pipeline's phases and their times to stderr")
    p.add_argument("--entry", metavar="NAME",
                   help="the function to run (StableHLO: default main; tensor language: "
                        "default the file's only kernel)")
    p.add_argument("--num-groups", type=_at_least(0), metavar="N",
                   help="tensor language: work-groups to launch (default: the size of the "
                        "argument modes group_id indexes)")
    p.add_argument("--profile", action="store_true",
                   help="print per-kernel device time, launch counts, bytes moved between "
                        "host and device and host overhead to stderr (as TLC_PROFILE=1)")
    p.add_argument("--repeat", type=_at_least(1), default=1, metavar="N",
                   help="run the program this many times (for --profile)")
    _check_bounds_option(p)


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
        p = sub.add_parser(name, help=help, description=help)
        p.set_defaults(func=func)
        return p

    add("check", cmd_check, "parse and verify a program").add_argument("file")
    p = add("compile", cmd_compile, "compile and print or write the result (a StableHLO "
            "file is lowered to tensor-language kernels first, except for --emit shlo)")
    p.add_argument("file")
    p.add_argument("--emit", choices=["tl", "cl", "shlo", "schedule"])
    p.add_argument("-o", "--output")
    _entry_option(p)
    _check_bounds_option(p)
    p = add("opt", cmd_opt, "run tensor-language passes (a StableHLO file is lowered to "
            "its tensor-language kernels first, as by compile --emit tl)")
    p.add_argument("file")
    p.add_argument("-p", "--passes", default="",
                   help="comma-separated pass pipeline, options in braces: dce,check-bounds"
                        "{guards=true}")
    p.add_argument("-o", "--output")
    _entry_option(p)
    _run_options(add("run", cmd_run, "run a StableHLO program or a tensor-language kernel"))
    p = add("tune", cmd_tune, "autotune register blocks on the device (cached; a StableHLO "
            "file's kernels as tlc run compiles them)")
    p.add_argument("file")
    p.add_argument("--groups", type=_at_least(1), default=2000,
                   help="work-groups per timed launch")
    p.add_argument("--top", type=_at_least(1), default=5,
                   help="candidates of the cost model to time")
    _entry_option(p)
    p = add("devices", cmd_devices, "list OpenCL devices")
    p.add_argument("--sycl", action="store_true",
                   help="also list SYCL devices through dpctl (pip install 'tlc[sycl]')")
    p = add("cache", cmd_cache, "show (info) or empty (clear) tlc's disk cache: lowered "
            "programs, OpenCL binaries, ICD vendor folders (tuned blocks are kept)")
    p.add_argument("action", choices=["info", "clear"])
    p = add("interpret", cmd_interpret, "run the functions of a StableHLO test file and "
            "their check ops (as stablehlo-translate --interpret -split-input-file)")
    p.add_argument("file")
    p.add_argument("--probe-dir", default="probe", help="where interpreter.probe saves "
                   "tensors, with index.csv (default: ./probe; '' saves nothing)")
    p.add_argument("--infeed", help=".npz whose in0, in1, ... stablehlo.infeed takes in turn")
    p.add_argument("--outfeed", help=".npz to write the stablehlo.outfeed tensors to")
    return ap


TRACEBACK_ENV = "TLC_TRACEBACK"
"""Set to 1: an internal error (a bug in tlc) shows its traceback."""


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``tlc`` console script: 0 on success, 1 for a user mistake, 2
    for an incomplete command line, 3 for a bug in tlc, 130 when interrupted."""
    try:
        args = _parser().parse_args(argv)
        code = args.func(args)
        sys.stdout.flush()  # a closed pipe shows here, not at the interpreter's exit
        return code
    except UsageError as err:
        return _report(err, 2)
    except TlcError as err:
        return _report(err, 1)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return _stdout_closed()
    except Exception as err:
        if os.environ.get(TRACEBACK_ENV) == "1":
            raise
        sys.stderr.write(f"tlc: internal error: {type(err).__name__}: {err}\n"
                         f"this is a bug in tlc; {TRACEBACK_ENV}=1 shows the traceback\n")
        return 3


_CONTROL_PICTURES = {c: 0x2400 + c for c in range(32) if chr(c) not in "\n\t"} | {0x7F: 0x2421}
"""Control characters (a binary file's, in a diagnostic's source line) as the visible
symbols of Unicode's Control Pictures block: one character each, so carets still align."""


def _report(err: TlcError, code: int) -> int:
    """Print a diagnostic to stderr; return the exit status ``code``."""
    sys.stderr.write(str(err).translate(_CONTROL_PICTURES) + "\n")
    return code


def _stdout_closed() -> int:
    """Exit quietly when stdout's reader went away (``tlc ... | head``)."""
    try:  # the interpreter's final flush of stdout would fail again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    return 1


if __name__ == "__main__":
    sys.exit(main())
