"""Host step functions of the plan executor (:mod:`backend_opencl.exec.executable`).

A step function runs one plan step (:mod:`tensorlang.plan`) on a run object
(:class:`Run`: its buffers for one call; the executor's, or a prepared frame of the
OpenCL runtime, :mod:`backend_opencl.runtime.opencl.frames`).  What they share lives
here: host control flow (``While``, ``If``, ``Case``; predicates read back through
``run.scalar``), counted loops, host callbacks (``Callback``: arguments read back through
``run.read``, results written through ``run.write``), which launches may bind their
buffers straight to the kernel, which buffers a plan writes, and the checks of a call's
arguments.

A counted ``While`` (:class:`tensorlang.plan.TripCount`) reads its start and limit once,
when they live in buffers, computes the number of iterations and enqueues the body that
many times without waiting; its condition is never evaluated.  When the counter would
wrap around the loop runs as a plain ``While`` instead.

A host callback runs in program order: its arguments are read once every command before
it has run (each read waits for them), the Python function is called on numpy arrays
(None for a token), and what it returns is checked (one entry per result, of the
result's shape and dtype: :class:`CallbackError` otherwise) and written into the result
buffers before any later command runs.  An exception the function raises propagates
unchanged; the executor waits for the queue before it reaches the caller.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, Self, SupportsInt, TypeVar

import numpy as np

from backend_opencl.exec.arguments import NUMPY_DTYPES, LaunchFacts
from tensorlang.diagnostics import CallbackError, LaunchError
from tensorlang.ir.types import MemRefType
from tensorlang.plan import (
    Bound,
    Callback,
    Case,
    Copy,
    Free,
    If,
    Launch,
    Plan,
    Step,
    TripCount,
    While,
    decider,
    nested,
    step_buffers,
    taken,
)

if TYPE_CHECKING:
    from backend_opencl.exec.module import KernelTable


class Run(Protocol):
    """What step functions need of an executor's run."""

    def steps(self, steps: tuple[Callable[[Self], None], ...]) -> None:
        """Run step functions in order."""

    def scalar(self, bid: int) -> SupportsInt:
        """The one element of buffer ``bid`` (waits for what writes it)."""

    def read(self, bid: int) -> np.ndarray:
        """Buffer ``bid``'s elements, flat, of its storage dtype: a copy made once every
        command before has run."""

    def write(self, bid: int, flat: np.ndarray) -> None:
        """Make buffer ``bid`` hold ``flat`` (its storage dtype) for the commands after
        (once the commands before no longer use it)."""

    def free(self, bids: tuple[int, ...]) -> None:
        """Return buffers to the run's pool."""


RunT = TypeVar("RunT", bound=Run)
StepFn = Callable[[RunT], None]
"""A step function on runs of type ``RunT`` (an executor's own runs, or any :class:`Run`)."""
Resolve = Callable[[Step], StepFn[RunT]]


def control_step(step: Step, resolve: Resolve[RunT]) -> StepFn[RunT] | None:
    """The step function of a ``Free``, ``While``, ``If`` or ``Case`` step, resolving the
    steps inside with ``resolve`` (None for any other step: the executor's own)."""
    def steps(inner: tuple[Step, ...]) -> tuple[StepFn[RunT], ...]:
        return tuple(resolve(s) for s in inner)

    if isinstance(step, Free):
        bids = step.buffers
        return lambda run: run.free(bids)
    if isinstance(step, While):
        body = steps(step.body)
        loop = while_loop(steps(step.cond), step.pred, body)
        return loop if step.trips is None else counted(step.trips, body, loop)
    if isinstance(step, (If, Case)):
        return branch(step, tuple(steps(b) for b in nested(step)))
    return None


def while_loop(cond: tuple[StepFn[RunT], ...], pred: int, body: tuple[StepFn[RunT], ...]
               ) -> StepFn[RunT]:
    """A host ``while``: the condition's steps, then the body while ``pred`` holds."""
    def run_while(run: RunT) -> None:
        run.steps(cond)
        while run.scalar(pred):
            run.steps(body)
            run.steps(cond)
    return run_while


def branch(step: If | Case, branches: tuple[tuple[StepFn[RunT], ...], ...]) -> StepFn[RunT]:
    """A host ``if`` or ``case``: the branch its predicate or index takes
    (:func:`tensorlang.plan.taken`)."""
    pred = decider(step)

    def run_branch(run: RunT) -> None:
        run.steps(branches[taken(step, run.scalar(pred))])
    return run_branch


def counted(trips: TripCount, body: tuple[StepFn[RunT], ...], fallback: StepFn[RunT]
            ) -> StepFn[RunT]:
    """The step function of a counted loop (``fallback`` runs it as a plain while)."""
    def run_counted(run: RunT) -> None:
        n = trips.count(_value(run, trips.start), _value(run, trips.limit))
        if n is None:
            fallback(run)
            return
        for _ in range(n):
            for step in body:
                step(run)
    return run_counted


def _value(run: Run, bound: Bound) -> int:
    return bound.value if bound.buffer is None else int(run.scalar(bound.buffer))


class _Host(NamedTuple):
    """A callback's argument or result: its buffer, shape, dtype and storage dtype."""

    buffer: int
    shape: tuple[int, ...]
    dtype: np.dtype
    storage: np.dtype


def callback(step: Callback, plan: Plan, storage: Sequence[np.dtype],
             functions: Sequence[Callable[..., object]], name: str) -> StepFn[Run]:
    """The step function of a host callback of executable ``@name`` (``storage``: the
    buffers' numpy dtypes; ``functions``: the executable's host callbacks, looked up when
    the step runs)."""
    index = step.index
    args, results = (tuple(None if v is None else
                           _Host(v.buffer, plan.buffer(v.buffer).shape, np.dtype(v.dtype),
                                 storage[v.buffer]) for v in values)
                     for values in (step.args, step.results))

    def run_callback(run: Run) -> None:
        function = functions[index]
        returned = function(*[None if a is None else run.read(a.buffer).reshape(a.shape)
                              .astype(a.dtype, copy=False) for a in args])
        what = f"@{name}: host callback {index} ({_name(function)})"
        for r, value in zip(results, _returned(what, returned, results), strict=True):
            if r is not None and value is not None:
                run.write(r.buffer, value.astype(r.storage, copy=False).reshape(-1))
    return run_callback


def _returned(what: str, returned: Any, results: tuple[_Host | None, ...]
              ) -> list[np.ndarray | None]:
    """What a callback returned, as one array per result (None for a token), or a
    CallbackError naming the callback (``what``) and the first mismatch."""
    if returned is None and not results:
        return []
    try:
        values = list(returned)
    except TypeError:
        raise CallbackError(f"{what} returned a {type(returned).__name__}; it must return "
                            f"a sequence of {len(results)} arrays") from None
    if len(values) != len(results):
        raise CallbackError(f"{what} returned {len(values)} values; the program takes "
                            f"{len(results)}")
    out: list[np.ndarray | None] = []
    for i, (value, r) in enumerate(zip(values, results, strict=True)):
        if r is None:
            out.append(None)
            continue
        arr = np.asarray(value)
        if arr.shape != r.shape or arr.dtype != r.dtype:
            raise CallbackError(f"{what}: result {i} is a {arr.dtype.name}{list(arr.shape)} "
                                f"array; the program takes {r.dtype.name}{list(r.shape)}")
        out.append(arr)
    return out


def _name(function: Callable[..., object]) -> str:
    """A callback's name for messages."""
    return getattr(function, "__qualname__", None) or type(function).__name__


def takes_flat_buffers(info: LaunchFacts, args: tuple[int, ...], plan: Plan,
                       storage: Sequence[np.dtype]) -> bool:
    """True when a kernel (``info``: its ABI and guards) takes exactly the plan buffers
    ``args`` as flat memrefs of their storage dtype and size (one pointer parameter each)
    and has no bounds guards: its launches may bind the buffers straight."""
    if info.guards or len(info.abi) != len(args):
        return False
    for arg, bid in zip(info.abi, args, strict=True):
        t, b = arg.type, plan.buffer(bid)
        if not isinstance(t, MemRefType) or len(arg.params) != 1 or t.order != 1 \
                or t.shape[0] != max(b.size, 1) \
                or np.dtype(NUMPY_DTYPES[t.element.name]) != storage[bid]:
            return False
    return True


def written_buffers(steps: tuple[Step, ...], module: KernelTable | None) -> frozenset[int]:
    """The buffers some step writes: a kernel's written arguments (``module``'s kernels
    know them; None: a plan without kernels), a copy's target, and every buffer of a step
    kind not known here."""
    out: set[int] = set()
    for step in steps:
        if isinstance(step, Launch):
            assert module is not None, "a plan that launches kernels has a module"
            written = module.kernels[step.kernel].written
            out |= {b for i, b in enumerate(step.args) if i in written}
        elif isinstance(step, Copy):
            out.add(step.dst)
        elif isinstance(step, (While, If, Case)):
            for inner in nested(step):
                out |= written_buffers(inner, module)
        elif isinstance(step, Callback):
            out |= {r.buffer for r in step.results if r is not None}
        elif not isinstance(step, Free):
            out |= step_buffers(step)
    return frozenset(out)


def check_argument_count(name: str, arrays: Sequence[object], params: Sequence[object]) -> None:
    """LaunchError unless executable ``@name`` got one argument per parameter."""
    if len(arrays) != len(params):
        raise LaunchError(f"@{name}: expected {len(params)} arguments, got {len(arrays)}")


def token_argument(name: str, i: int, arg: object) -> None:
    """A token parameter's argument (``i`` of ``@name``): None, since a token has no
    data; LaunchError otherwise."""
    if arg is not None:
        raise LaunchError(f"@{name}: argument {i} is a token (!stablehlo.token): pass None, "
                          f"got {type(arg).__name__}")


def checked_array(name: str, i: int, arr: Any, dtype: np.dtype,
                  shape: tuple[int, ...]) -> object:
    """Argument ``i`` of ``@name`` (a numpy or device array) once its dtype and shape
    are the parameter's; a numpy array of the other byte order is converted (inputs are
    only read).  LaunchError naming the argument otherwise."""
    if isinstance(arr, np.ndarray) and arr.dtype != dtype \
            and arr.dtype.newbyteorder("=") == dtype:
        arr = arr.astype(dtype)
    if arr.dtype != dtype:
        raise LaunchError(f"@{name}: argument {i} must have dtype {dtype.name}, "
                          f"got {arr.dtype.name}")
    if tuple(arr.shape) != shape:
        raise LaunchError(f"@{name}: argument {i} must have shape {shape}, "
                          f"got {tuple(arr.shape)}")
    return arr
