"""``tlc interpret FILE.mlir``: the counterpart of ``stablehlo-translate --interpret
-split-input-file``.

Every module of the file (split on ``// -----``) is parsed, and each of its public
functions without arguments is compiled and run on the OpenCL device.  Its ``check.*``
ops (:mod:`frontend.lower.families.checks`) and the interpreter's own ops
(:mod:`frontend.lower.families.interpreter_ops`) come back as extra results and are evaluated
here, in program order:

* ``check.expect_*``: compared with the expected value (a failing check fails the
  function);
* ``interpreter.print``: the tensor is printed (the reference interpreter's layout);
* ``interpreter.probe``: the tensor is saved as ``<probe_dir>/<id>_<iteration>.npy``
  (``probe_dir`` defaults to ``./probe``; ``/`` and other characters outside
  ``[A-Za-z0-9_.-]`` in the id become ``_``) and listed in ``<probe_dir>/index.csv``
  (``probe_id,iteration,file,type``); ``check.expect_serialized_eq`` compares with it.
  A probe inside a loop body saves every iteration (up to
  ``frontend.lower.families.interpreter_ops.PROBE_ITERATIONS``);
* ``stablehlo.outfeed``: the tensors are collected (``--outfeed OUT.npz`` writes them as
  ``out0, out1, ...``); ``stablehlo.infeed`` takes ``in0, in1, ...`` of ``--infeed``.

A function calling ``interpreter.run_parallel`` is evaluated op by op on the host
(constants, tokens, the parallel run, checks).  A run of one program (1 replica, 1
partition) happens here; more processes run through
``backend_opencl.distributed.run_parallel`` (MPI), and without it the function fails with
"needs MPI: ...".  One line per function is printed (``PASS name`` / ``FAIL name:
reason``); the exit status is 1 when any function failed.
"""

from __future__ import annotations

import argparse
import csv
import re
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np

import frontend
from frontend.ir.attrs import DenseElementsAttr
from frontend.ir.core import Func, Module, Op
from frontend.ir.types import TensorType
from tensorlang.diagnostics import TlcError

if TYPE_CHECKING:
    from frontend.ir.core import Value

Outcome = dict[str, str | None]
"""Function name -> None when it passed, else the reason."""


@dataclass
class Session:
    """What one interpretation run shares across functions: options and collected data."""

    probe_dir: Path | None = None
    infeed: list[np.ndarray] = field(default_factory=list)
    outfeed: list[np.ndarray] = field(default_factory=list)
    probes: dict[str, list[np.ndarray]] = field(default_factory=dict)
    write: Callable[[str], None] = print
    device: object = None
    indexed: bool = False


def run_file(text: str, filename: str, session: Session | None = None) -> Outcome:
    """Run every argument-less public function of every module of ``text``."""
    session = session or Session(write=lambda _: None)
    module = frontend.parse(text, filename=filename)
    outcome: Outcome = {}
    for part in module.parts or [module]:
        for func in part.funcs:
            if func.body is None or func.visibility == "private" or func.args:
                continue
            name = func.name.strip('"')
            try:
                outcome[name] = run_function(part, func, session)
            except Exception as err:  # a failure of this function, with its reason
                outcome[name] = f"{type(err).__name__}: {str(err).splitlines()[0][:200]}"
    return outcome


def run_function(part: Module, func: Func, session: Session) -> str | None:
    """Run one function; None when all its checks pass, else the first failure."""
    if any(op.name == "interpreter.run_parallel" for op in _ops(func)):
        return _run_driver(part, func, session)
    from frontend.lower.families.interpreter_ops import infeed_queue

    with infeed_queue(session.infeed):
        _, records = _compile_and_run(part, func.name.strip('"'), [], session)
    return _evaluate(records, session)


def _compile_and_run(part: Module, name: str, inputs: Sequence[object],
                     session: Session) -> tuple[list[Any], list[tuple[Any, Any]]]:
    """The function's own results and its (record, value) pairs."""
    from backend_opencl.api.compiler import compile_lowered
    from frontend.lower import lower_function

    lowered = lower_function(part, name)
    exe = compile_lowered(lowered, device=session.device)
    got: list[Any] = list(exe(*inputs))  # arrays, None for a token (Any: see below)
    n = len(lowered.func.result_types)
    # the lowering's check descriptors (Check or Record: object to it) and their values
    return got[:n], list(zip(lowered.checks, got[n:], strict=True))


def _evaluate(records: list[tuple[Any, Any]], session: Session) -> str | None:
    """Evaluate the records of a run in order; the first failure's reason."""
    for i, (rec, value) in enumerate(records):
        kind = rec.kind
        if kind == "value":
            continue
        if kind == "print":
            session.write(format_tensor(value))
        elif kind == "probe":
            count = int(np.asarray(records[i + 1][1]).reshape(-1)[0])
            for slot in range(min(count, rec.iteration)):
                save_probe(session, rec.name, value[slot])
        elif kind == "outfeed":
            session.outfeed.append(value)
        elif kind == "serialized":
            why = _serialized(session, rec, value)
            if why:
                return f"check {i}: {why}"
        else:
            want = rec.expected if rec.expected is not None else records[i + 1][1]
            why = compare(kind, value, np.asarray(want), rec.tolerance)
            if why:
                return f"check {i}: {why}"
    return None


# -- probes --------------------------------------------------------------------------------

def _probe_file(probe_id: str, iteration: int) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", probe_id) + f"_{iteration}.npy"


def save_probe(session: Session, probe_id: str, value: np.ndarray) -> None:
    """Keep the probed tensor and, with a probe folder, save it and index it."""
    seen = session.probes.setdefault(probe_id, [])
    seen.append(np.array(value))
    if session.probe_dir is None:
        return
    session.probe_dir.mkdir(parents=True, exist_ok=True)
    name = _probe_file(probe_id, len(seen) - 1)
    np.save(session.probe_dir / name, value)
    index = session.probe_dir / "index.csv"
    fresh = not session.indexed  # a new session starts a new index
    session.indexed = True
    with index.open("w" if fresh else "a", newline="") as f:
        w = csv.writer(f)
        if fresh:
            w.writerow(["probe_id", "iteration", "file", "type"])
        w.writerow([probe_id, len(seen) - 1, name, f"{value.dtype}{list(value.shape)}"])


def _serialized(session: Session, rec: Any, value: np.ndarray) -> str | None:
    seen = session.probes.get(rec.name, [])
    if rec.iteration >= len(seen):
        return (f"probe '{rec.name}' has no iteration {rec.iteration} (recorded: "
                f"{len(seen)})")
    return compare("eq", value, seen[rec.iteration], None)


# -- functions calling interpreter.run_parallel -------------------------------------------

def _run_driver(part: Module, func: Func, session: Session) -> str | None:
    """Evaluate ``func`` op by op: constants, tokens, run_parallel and checks."""
    env: dict[Value, np.ndarray | None] = {}
    for op in _ops(func):
        if op.name == "stablehlo.constant":
            env[op.result] = np.asarray(op.attr_of("value", DenseElementsAttr).array)
        elif op.name in ("stablehlo.after_all", "stablehlo.create_token"):
            env[op.result] = None
        elif op.name == "interpreter.run_parallel":
            outs = _run_parallel(part, op, [env[v] for v in op.operands], session)
            env.update(zip(op.results, outs, strict=True))
        elif op.name.startswith("check."):
            why = _host_check(op, env)
            if why:
                return why
        elif op.name == "func.return":
            break
        else:
            return (f"'{op.name}' in a function calling interpreter.run_parallel is not "
                    "supported (only constants, tokens and checks)")
    return None


def _host_check(op: Op, env: dict[Value, np.ndarray | None]) -> str | None:
    kind = op.name.split("expect_")[1].removesuffix("_const")
    got = np.asarray(env[op.operands[0]])
    if "expected" in op.attrs:
        want = np.asarray(op.attr_of("expected", DenseElementsAttr).array)
    else:
        want = np.asarray(env[op.operands[1]])
    tol = op.attr("tolerance", op.attr("max_ulp_difference"))
    why = compare(kind, got, want, None if tol is None else float(cast(float, tol)))
    return f"{op.name} at {op.loc}: {why}" if why else None


def _ops(func: Func) -> list[Op]:
    """The ops of a function with a body (the functions a test file runs have one)."""
    assert func.body is not None, func.name
    return func.body.block.ops


def _programs(op: Op) -> list[list[str]]:
    """The process grid of ``interpreter.run_parallel``: function names by row."""
    rows = op.attr("programs")
    assert isinstance(rows, list), rows  # the verifier checked an array of arrays
    programs = []
    for row in rows:
        assert isinstance(row, list), row
        programs.append([str(p) for p in row])
    return programs


def _run_parallel(part: Module, op: Op, inputs: list[object], session: Session
                  ) -> list[np.ndarray | None]:
    """The results of ``interpreter.run_parallel`` (None for tokens)."""
    programs = _programs(op)
    names = op.attr("infeed") or []
    assert isinstance(names, list), names  # the verifier checked an array of symbols
    infeed = [_call_queue(part, str(name), session) for name in names]
    if len(programs) == 1 and len(programs[0]) == 1:
        return _run_one(part, programs[0][0], inputs, infeed, session)
    try:
        from backend_opencl.distributed import run_parallel
    except ImportError as err:
        n = len(programs) * len(programs[0])
        raise TlcError(f"needs MPI: interpreter.run_parallel of {len(programs)} replica(s) x "
                       f"{len(programs[0])} partition(s) runs {n} processes "
                       f"(backend_opencl.distributed is not available: {err})") from None
    return list(run_parallel(str(part), programs, inputs, device=session.device,
                             infeed=[a for q in infeed for a in q]))


def _call_queue(part: Module, name: str, session: Session) -> list[np.ndarray]:
    """The results of an argument-less infeed queue function."""
    results, _ = _compile_and_run(part, name.lstrip("@"), [], session)
    return results


def _run_one(part: Module, name: str, inputs: list[object], infeed: list[list[np.ndarray]],
             session: Session) -> list[np.ndarray | None]:
    """One process, here: a wrapper without token parameters or results calls ``name``."""
    from frontend.lower.families.interpreter_ops import infeed_queue

    name = name.lstrip("@")
    callee = part.func(name)
    if callee is None:
        raise TlcError(f"interpreter.run_parallel: no function @{name}")
    text = _with_wrapper(str(part), callee)
    wrapped = frontend.parse(text, filename="<run_parallel>")
    wrapped = wrapped.parts[0] if wrapped.parts else wrapped
    tensors = [x for x, t in zip(inputs, callee.arg_types, strict=True)
               if isinstance(t, TensorType)]
    with infeed_queue([a for q in infeed for a in q] or session.infeed):
        results, records = _compile_and_run(wrapped, _WRAPPER, tensors, session)
    why = _evaluate(records, session)
    if why:
        raise TlcError(f"in @{name}: {why}")
    it = iter(results)
    return [next(it) if isinstance(t, TensorType) else None for t in callee.result_types]


_WRAPPER = "__tlc_run_parallel_one"


def _with_wrapper(module_text: str, callee: Func) -> str:
    """``module_text`` plus a function that calls ``callee`` with fresh tokens and
    returns its tensor results."""
    params, args, lines = [], [], []
    for i, t in enumerate(callee.arg_types):
        if isinstance(t, TensorType):
            params.append(f"%a{i}: {t}")
            args.append(f"%a{i}")
        else:
            lines.append(f"  %t{i} = stablehlo.after_all : !stablehlo.token")
            args.append(f"%t{i}")
    outs = [(i, t) for i, t in enumerate(callee.result_types) if isinstance(t, TensorType)]
    types_in = ", ".join(map(str, callee.arg_types))
    types_out = ", ".join(map(str, callee.result_types))
    n = len(callee.result_types)
    head = f"%r:{n} = " if n > 1 else ("%r = " if n == 1 else "")
    lines.append(f"  {head}func.call @{callee.name}({', '.join(args)}) : ({types_in}) -> "
                 f"({types_out})")
    refs = [f"%r#{i}" if n > 1 else "%r" for i, _ in outs]
    ret = f"  func.return {', '.join(refs)} : {', '.join(str(t) for _, t in outs)}" if outs \
        else "  func.return"
    wrapper = (f"func.func @{_WRAPPER}({', '.join(params)}) -> "
               f"({', '.join(str(t) for _, t in outs)}) {{\n" + "\n".join(lines) +
               f"\n{ret}\n}}\n")
    body = module_text.rstrip()
    if body.startswith("module") and body.endswith("}"):
        return body[:-1] + wrapper + "}\n"
    return body + "\n" + wrapper


# -- comparison and printing ---------------------------------------------------------------

def compare(kind: str, got: np.ndarray, want: np.ndarray, tol: float | None) -> str | None:
    """None when ``got`` matches ``want`` under the check ``kind`` (eq, almost_eq, close)."""
    got, want = np.asarray(got), np.asarray(want)
    if got.shape != want.shape:
        return f"shape {got.shape} != {want.shape}"
    if kind == "close" and got.dtype.kind == "f" and got.dtype == want.dtype:
        return _ulps(got, want, 3 if tol is None else int(tol))
    wide = np.complex128 if np.iscomplexobj(got) or np.iscomplexobj(want) else np.float64
    g, w = got.astype(wide), want.astype(wide)
    with np.errstate(invalid="ignore", over="ignore"):
        return _compare(kind, g, w, tol)


def _compare(kind: str, g: np.ndarray, w: np.ndarray, tol: float | None) -> str | None:
    nan = np.isnan(g) & np.isnan(w)
    if kind == "eq":
        bad = ~((g == w) | nan)
    else:
        limit = tol if tol is not None else 1e-4
        scale = 1.0 if kind == "almost_eq" else np.maximum(1.0, np.abs(w))
        bad = ~((np.abs(g - w) <= limit * scale) | nan | (g == w))
    return None if not bad.any() else f"{int(bad.sum())} of {bad.size} elements differ"


def _ulps(got: np.ndarray, want: np.ndarray, limit: int) -> str | None:
    """Elements further apart than ``limit`` units in the last place."""
    bits = {2: np.int16, 4: np.int32, 8: np.int64}[got.dtype.itemsize]
    g, w = (np.ascontiguousarray(a).view(bits).astype(np.int64) for a in (got, want))
    top = np.int64(1) << (got.dtype.itemsize * 8 - 1)
    g, w = (np.where(a < 0, -(a & (top - 1)), a) for a in (g, w))
    both_nan = np.isnan(got.astype(np.float64)) & np.isnan(want.astype(np.float64))
    bad = (np.abs(g - w) > limit) & ~both_nan
    return None if not bad.any() else f"{int(bad.sum())} elements more than {limit} ULP apart"


def format_tensor(value: np.ndarray) -> str:
    """The reference interpreter's layout: ``tensor<2x2xi8> {`` nested rows ``}``."""
    a = np.asarray(value)
    head = f"tensor<{''.join(f'{d}x' for d in a.shape)}{_type_name(a.dtype)}>"
    if a.ndim == 0:
        return f"{head} {{{_scalar(a.item(), a.dtype)}}}"
    return f"{head} {{\n{_rows(a, 1)}\n}}"


def _rows(a: np.ndarray, depth: int) -> str:
    pad = "  " * depth
    if a.ndim == 1:
        return pad + "[" + ", ".join(_scalar(x.item(), a.dtype) for x in a) + "]"
    if a.shape[0] == 0:
        return pad + "[]"
    inner = ",\n".join(_rows(x, depth + 1) for x in a)
    return f"{pad}[\n{inner}\n{pad}]"


def _scalar(x: object, dtype: np.dtype) -> str:
    if dtype == np.bool_:
        return "true" if x else "false"
    if isinstance(x, complex):
        return f"({x.real:e}, {x.imag:e})"
    if isinstance(x, float):
        return f"{x:e}"
    return str(x)


def _type_name(dtype: np.dtype) -> str:
    names = {"bool": "i1", "float16": "f16", "float32": "f32", "float64": "f64",
             "bfloat16": "bf16", "complex64": "complex<f32>", "complex128": "complex<f64>"}
    name = str(dtype)
    if name in names:
        return names[name]
    if name.startswith("uint"):
        return "ui" + name[4:]
    if name.startswith("int"):
        return "i" + name[3:]
    return name


# -- the command ---------------------------------------------------------------------------

def main(path: str, text: str, *, probe_dir: str | None = "probe", infeed: str | None = None,
         outfeed: str | None = None, device: object = None,
         write: Callable[[str], None] = print) -> int:
    """Interpret ``text`` (read from ``path``); print a line per function; 0 when all pass."""
    session = Session(Path(probe_dir) if probe_dir else None, write=write, device=device)
    if infeed:
        session.infeed = _load_npz(infeed)
    outcome = run_file(text, path, session)
    for name, why in outcome.items():
        write(f"PASS {name}" if why is None else f"FAIL {name}: {why}")
    failed = sum(why is not None for why in outcome.values())
    write(f"{len(outcome) - failed} passed, {failed} failed")
    if outfeed:
        from backend_opencl.tools.files import save_arrays

        save_arrays(outfeed, {f"out{i}": a for i, a in enumerate(session.outfeed)})
    return 1 if failed else 0


def command(args: argparse.Namespace, text: str) -> int:
    """The ``tlc interpret`` subcommand (its options are set up in ``cli.py``)."""
    return main(args.file, text, probe_dir=args.probe_dir or None, infeed=args.infeed,
                outfeed=args.outfeed, device=args.device)


def _load_npz(path: str) -> list[np.ndarray]:
    try:
        data = np.load(path)
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as err:
        raise TlcError(f"{path}: error: cannot read the infeed arrays: {err}") from None
    if isinstance(data, np.ndarray):
        raise TlcError(f"{path}: error: the infeed file is an .npy array, not an .npz archive "
                       "(np.savez('in.npz', in0=a, in1=b, ...))")
    keys = sorted((k for k in data.files if re.fullmatch(r"in\d+", k)), key=lambda k: int(k[2:]))
    if not keys:
        raise TlcError(f"{path}: error: the infeed file has no arrays named in0, in1, ...")
    return [data[k] for k in keys]
