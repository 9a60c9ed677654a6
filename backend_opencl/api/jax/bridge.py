"""Run JAX functions with tlc: ``tlc.jax.jit(f)`` (also ``backend_opencl.api.jax.bridge.jit``).

``jit(f, static_argnums=..., static_argnames=..., donate_argnums=..., device=...)``
returns a callable that, like ``jax.jit``, specialises ``f`` per signature: the pytree
structure of the dynamic arguments, each leaf's shape, dtype and weak type, and the static
arguments' values. For a new signature it lowers ``f`` with jax to StableHLO and compiles
that with :func:`backend_opencl.compile_stablehlo` (kept in memory per signature, and on
disk by the compile cache, so a second process skips tlc's lowering and code generation;
jax still traces ``f`` once per process and signature). ``.lower(*args)`` and
``.compile()`` do the same ahead of time (:mod:`backend_opencl.api.jax.aot`).

Called with jax tracers (inside ``jax.jit``, ``grad``, ``vmap``, ``eval_shape`` ...) it
is one application of the ``tlc_call`` primitive, whose rules compile the transformed
function with tlc (:mod:`backend_opencl.api.jax.primitive`).

Arguments may be jax arrays, numpy arrays, Python scalars, typed PRNG keys
(``jax.random.key``: passed as their ``key_data``, as jax lowers them) or tlc's own
results.  Results come in the pytree structure ``f`` returns (typed keys: keys again),
as **numpy arrays** after a wait for the device by default.  With ``device_results``
(per function, or for all with :func:`set_device_results` or ``TLC_DEVICE_RESULTS=1``)
a call returns as soon as its commands are queued, and its results are
:class:`~backend_opencl.runtime.opencl.device_array.DeviceArray` s that stay on the device: the next
tlc call takes them without a copy, and ``np.asarray``, ``__array__``, DLPack and
``block_until_ready()`` wait for them (jax's asynchronous dispatch).  ``jnp.asarray``
turns either into jax arrays.

Host callbacks (``jax.debug.print``, ``jax.pure_callback``, ``io_callback``) run: the
Python functions jax keeps beside its lowering are passed to the compiler, and the
executable calls them in program order (an exception one raises reaches the caller as it
is).  The tokens an ordered effect threads through the program are passed and dropped
here, unseen by the caller.

A program tlc cannot parse or compile raises :class:`JaxCompileError` (a
``CompileError``) at the line of ``f`` that produced the op, naming it, with a note at
the StableHLO line (at that line alone when jax recorded no Python line).  jax is
imported only when a function is wrapped: ``pip install 'tlc[jax]'``.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import os
import re
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import jax

    from backend_opencl.api.jax.aot import Lowered
    from backend_opencl.api.jax.primitive import Traced
    from backend_opencl.exec.executable import Executable

from backend_opencl.api.jax.common import (
    Entry,
    JaxCompileError,
    Signature,
    host_callbacks,
    inlining_tlc,
    is_key,
    is_key_leaf,
    jax_loc,
    jax_module,
    leaf_key,
    lowering_for_tlc,
    wrap_key,
)
from backend_opencl.runtime.opencl.device_array import DeviceArray
from tensorlang.diagnostics import CompileError, Diagnostic, Loc, TlcError, note

DEVICE_RESULTS_ENV = "TLC_DEVICE_RESULTS"
"""Set to 1 to make ``device_results`` the default of every ``tlc.jax.jit`` function."""

_device_results_default = os.environ.get(DEVICE_RESULTS_ENV) == "1"


def set_device_results(enabled: bool) -> bool:
    """Make ``device_results`` (see :func:`jit`) the default of the functions that do
    not choose (those made before too); return the previous default."""
    global _device_results_default
    previous, _device_results_default = _device_results_default, bool(enabled)
    return previous


def jit(fun: Callable[..., object] | None = None, *, static_argnums: int | Sequence[int] = (),
        static_argnames: str | Sequence[str] = (),
        donate_argnums: int | Sequence[int] | None = None,
        donate_argnames: str | Sequence[str] | None = None, device: object = None,
        check_bounds: bool = False, device_results: bool | None = None) -> Any:
    """``jax.jit``'s spelling for tlc: ``f`` compiled by tlc for ``device`` (an OpenCL
    device: index or name part, as ``tlc devices`` shows; default as ``tlc`` chooses).

    Usable as ``jit(f, ...)``, ``@jit`` or ``@functools.partial(jit, static_argnums=1)``.
    ``check_bounds`` compiles run-time bounds guards into the kernels. Donation
    (``donate_argnums``, ``donate_argnames``) is a hint, as jax allows: the lowering marks
    the donated parameters, and tlc neither reuses nor invalidates their arrays.
    ``device_results``: return :class:`DeviceArray` s without waiting for the device
    (None: as :func:`set_device_results` says, by default numpy arrays after a wait).
    """
    options: dict[str, Any] = {"static_argnums": static_argnums, "static_argnames": static_argnames,
               "donate_argnums": donate_argnums, "donate_argnames": donate_argnames,
               "device": device, "check_bounds": check_bounds,
               "device_results": device_results}
    if fun is None:
        return functools.partial(jit, **options)
    return Jitted(fun, **options)


class Jitted:
    """A JAX function compiled by tlc per signature; call it like the function."""

    def __init__(self, fun: Callable[..., object], *, static_argnums: int | Sequence[int] = (),
                 static_argnames: str | Sequence[str] = (),
                 donate_argnums: int | Sequence[int] | None = None,
                 donate_argnames: str | Sequence[str] | None = None, device: object = None,
                 check_bounds: bool = False, device_results: bool | None = None) -> None:
        jax = jax_module()
        functools.update_wrapper(self, fun)
        self.fun = fun
        self.device = device
        self.check_bounds = check_bounds
        self.device_results = device_results
        """Whether calls return device arrays without waiting (None: the default,
        :func:`set_device_results`)."""
        self._nums, self._names = _static_args(fun, static_argnums, static_argnames)
        self._jitted = jax.jit(fun, static_argnums=self._nums, static_argnames=self._names,
                               donate_argnums=donate_argnums,
                               donate_argnames=donate_argnames,
                               keep_unused=True)  # every leaf stays a parameter
        self._tracer = jax.core.Tracer
        self._cache: dict[Signature, Entry] = {}
        self._fast: dict[tuple[object, ...], Entry] = {}
        """Entries of calls with only numpy or tlc arrays as positional arguments, by
        :func:`_array_key` (no pytree flattening)."""
        self._traced: dict[Signature, Traced] = {}
        self._quick: _Quick | None = None
        """The last signature called with arrays as its only arguments, where its
        executable has a short way (:attr:`Executable.quick`) and jax's view adds nothing
        to it (no tokens or typed keys): tried first by a call with positional arguments
        only, when results stay on the device."""
        self._lock = threading.Lock()

    def __call__(self, *args: object, **kwargs: object) -> Any:
        quick = self._quick
        if quick is not None and not kwargs:
            dispatching = self.device_results
            if dispatching or dispatching is None and _device_results_default:
                results = quick.run(args)
                if results is not None:
                    return results[0] if quick.single \
                        else jax_module().tree_util.tree_unflatten(quick.out_tree, results)
        fast = None if kwargs or self._nums else _array_key(args)
        if fast is not None:
            entry = self._fast.get(fast)
            if entry is not None:
                return self._run_arrays(entry, args)
        leaves, key = self.signature(args, kwargs)
        if any(isinstance(x, self._tracer) for x in leaves):
            return self._call_traced(leaves, key)
        entry = self._cache.get(key) or self.entry(key, lambda: self._lower(args, kwargs))
        if fast is not None:
            self._fast[fast] = entry
            return self._run_arrays(entry, args)
        return self.run_entry(entry, leaves)

    def _run_arrays(self, entry: Entry, args: tuple[object, ...]) -> object:
        """:meth:`run_entry` of a call whose arguments are all arrays (each a leaf), after
        which ``entry``'s short way serves the next such calls: only they have the same
        leaves as their arguments (a tuple of two arrays and two arrays do not)."""
        result = self.run_entry(entry, list(args))
        if self._quick is None or self._quick.exe is not entry.exe:
            self._quick = _Quick.of(entry)
        return result

    def lower(self, *args: object, **kwargs: object) -> Lowered:
        """The lowering for these arguments (arrays or ``jax.ShapeDtypeStruct``), as
        :class:`backend_opencl.api.jax.aot.Lowered`: ``as_text()`` is the StableHLO tlc
        compiles, ``compile()`` tlc's executable."""
        from backend_opencl.api.jax.aot import Lowered

        _, key = self.signature(args, kwargs)
        return Lowered(self, key, self._lower(args, kwargs))

    @property
    def jax_jitted(self) -> jax.stages.Wrapped:
        """``jax.jit`` of the function (what jax traces and lowers)."""
        return self._jitted

    @property
    def name(self) -> str:
        """The wrapped function's name, for messages."""
        return getattr(self.fun, "__qualname__", None) or type(self.fun).__name__

    @property
    def signatures(self) -> int:
        """How many signatures have been compiled (each new one traces ``f`` again)."""
        return len(self._cache)

    def signature(self, args: tuple[object, ...], kwargs: dict[str, object]
                   ) -> tuple[list[object], Signature]:
        """The dynamic leaves and the cache key of a call."""
        nums = {i if i >= 0 else len(args) + i for i in self._nums}
        dynamic = tuple(a for i, a in enumerate(args) if i not in nums)
        dyn_kwargs = {k: v for k, v in kwargs.items() if k not in self._names}
        static: tuple[tuple[int | str, object], ...] = tuple(
            (i, a) for i, a in enumerate(args) if i in nums)
        static += tuple(sorted((k, v) for k, v in kwargs.items() if k in self._names))
        leaves, tree = jax_module().tree_util.tree_flatten((dynamic, dyn_kwargs))
        key = Signature(tree, tuple(leaf_key(x) for x in leaves), static)
        try:
            hash(key)
        except TypeError:
            raise TlcError(f"error: {self.name}: static arguments must be hashable, got "
                           f"{', '.join(type(v).__name__ for _, v in static)}") from None
        return leaves, key

    def arguments(self, key: Signature, leaves: Sequence[object]
                   ) -> tuple[tuple[object, ...], dict[str, object]]:
        """The positional and keyword arguments of a call again, from its dynamic leaves
        and the static values in ``key``."""
        dynamic, kwargs = jax_module().tree_util.tree_unflatten(key.tree, leaves)
        args = list(dynamic)
        for where, value in key.static:  # positions ascending, then names
            if isinstance(where, int):
                args.insert(where, value)
            else:
                kwargs[where] = value
        return tuple(args), kwargs

    def run_entry(self, entry: Entry, leaves: list[object]) -> object:
        """Run a compiled signature on a call's dynamic leaves; its results' pytree."""
        for i in entry.key_args:
            leaves[i] = jax_module().random.key_data(leaves[i])
        tokens, exe = entry.tokens, entry.exe
        arrays = [_as_array(x, dtype) for x, dtype in zip(leaves, exe.arg_dtypes[tokens:],
                                                          strict=True)]
        device = self.device_results
        if device is None:
            device = _device_results_default
        results: tuple[object, ...]
        if not device:
            results = exe(*[None] * tokens, *arrays)
        elif hasattr(exe, "dispatch"):
            results = exe.dispatch(*[None] * tokens, *arrays)
        else:  # an executor that always waits (SYCL's): its results as device arrays
            results = tuple(None if r is None else DeviceArray.of_host(r)
                            for r in exe(*[None] * tokens, *arrays))
        outs = list(results[tokens:tokens + entry.results])
        for i, dtype in entry.key_results:
            outs[i] = wrap_key(np.asarray(outs[i]), dtype)
        return jax_module().tree_util.tree_unflatten(entry.out_tree, outs)

    def _call_traced(self, leaves: list[object], key: Signature) -> object:
        """A call with jax tracers among the leaves: one ``tlc_call`` (or ``f`` itself
        while jax lowers a program for tlc, which then compiles the whole)."""
        from backend_opencl.api.jax import primitive

        if lowering_for_tlc():
            args, kwargs = self.arguments(key, leaves)
            return self.fun(*args, **kwargs)
        traced = self._traced.get(key)
        if traced is None:
            traced = self._traced.setdefault(key, primitive.Traced(self, key))
        return traced(leaves)

    def _lower(self, args: tuple[object, ...], kwargs: dict[str, object]) -> jax.stages.Lowered:
        """jax's ``Lowered`` of ``f`` for a call's arguments."""
        jax = jax_module()
        args, kwargs = jax.tree_util.tree_map(
            lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype) if type(x) is DeviceArray else x,
            (args, kwargs))  # jax abstracts only its own types
        with inlining_tlc():
            return self._jitted.lower(*args, **kwargs)

    def entry(self, key: Signature, lower: Callable[[], jax.stages.Lowered]) -> Entry:
        """The compiled signature ``key``, compiling ``lower()`` the first time."""
        entry = self._cache.get(key)
        if entry is None:
            with self._lock:
                entry = self._cache.get(key) or self._compile(lower(), key)
                self._cache[key] = entry
        return entry

    def _compile(self, lowered: Any, key: Signature) -> Entry:
        # not jax.stages.Lowered: its out_tree is jaxlib's PyTreeDef, which mypy cannot follow
        """Compile jax's lowering with tlc (the disk cache may answer)."""
        import backend_opencl

        name = f"<jax {self.name}>"
        callbacks = host_callbacks(lowered)
        try:
            exe = backend_opencl.compile_stablehlo(lowered.as_text(), device=self.device,
                                                   filename=name,
                                                   check_bounds=self.check_bounds,
                                                   host_callbacks=callbacks)
        except CompileError as err:
            raise _located(err, lowered, name, self.device, callbacks) from None
        if lowered.in_tree != key.tree:
            raise TlcError(f"error: {name}: jax flattened the arguments as {lowered.in_tree}, "
                           f"not as {key.tree}")
        tokens = _leading_tokens(exe.arg_dtypes)
        if len(exe.arg_dtypes) - tokens != len(key.leaves) \
                or _leading_tokens(exe.result_dtypes) < tokens:
            raise TlcError(f"error: {name}: jax lowered {len(exe.arg_dtypes)} parameters "
                           f"({tokens} leading tokens) for {len(key.leaves)} argument leaves")
        outs = jax_module().tree_util.tree_leaves(lowered.out_info)
        return Entry(exe, lowered.out_tree, lowered.out_tree.num_leaves,
                      tuple(i for i, k in enumerate(key.leaves) if is_key_leaf(k)),
                      tuple((i, o.dtype) for i, o in enumerate(outs) if is_key(o.dtype)),
                      tokens)


@dataclasses.dataclass(frozen=True)
class _Quick:
    """A signature's short way through a call that does not wait (see
    ``JaxFunction._quick``)."""

    exe: Executable
    run: Callable[[Sequence[object]], tuple[object, ...] | None]
    """The executable's short way: its results, or None for a call it does not take."""
    out_tree: Any  # jaxlib's PyTreeDef, which mypy cannot follow
    single: bool
    """Whether the result is one array (no pytree to rebuild)."""

    @classmethod
    def of(cls, entry: Entry) -> _Quick | None:
        """The short way of ``entry`` (a signature of array arguments only), where it has
        one and jax's view adds nothing."""
        exe = entry.exe
        if entry.tokens or entry.key_args or entry.key_results \
                or entry.results != len(exe.result_dtypes):
            return None
        run = getattr(exe, "quick", None)  # an executor that always waits has none
        if run is None:
            return None
        tree = entry.out_tree
        return cls(exe, run, tree, tree.num_nodes == 1 and tree.num_leaves == 1)


def _leading_tokens(dtypes: Sequence[object]) -> int:
    """How many of the dtypes (an executable's parameters or results) are tokens (None)
    before the first array: jax puts the tokens of ordered effects first."""
    return next((i for i, d in enumerate(dtypes) if d is not None), len(dtypes))


def _static_args(fun: Callable[..., object], nums: int | Sequence[int],
                 names: str | Sequence[str]) -> tuple[tuple[int, ...], tuple[str, ...]]:
    """Static positions and names, each completed from the other through ``fun``'s
    signature (as ``jax.jit`` does)."""
    nums = (nums,) if isinstance(nums, int) else tuple(nums)
    names = (names,) if isinstance(names, str) else tuple(names)
    try:
        params = list(inspect.signature(fun).parameters.values())
    except (TypeError, ValueError):
        return nums, names
    positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY,
                                                        p.POSITIONAL_OR_KEYWORD)]
    by_name = {p.name for p in params if p.kind != p.POSITIONAL_ONLY}
    names += tuple(positional[i] for i in nums
                   if -len(positional) <= i < len(positional) and positional[i] in by_name
                   and positional[i] not in names)
    nums += tuple(positional.index(n) for n in names
                  if n in positional and positional.index(n) not in nums)
    return nums, names


_ARRAYS = (np.ndarray, DeviceArray)


def _array_key(args: tuple[Any, ...]) -> tuple[object, ...] | None:
    """The signature of a call whose arguments are all numpy or tlc arrays (each a leaf,
    of no weak type): their shapes and dtypes; None for any other call."""
    key = []
    for a in args:
        if type(a) not in _ARRAYS:
            return None
        key.append((a.shape, a.dtype))
    return tuple(key)


def _as_array(x: object, dtype: np.dtype | None) -> np.ndarray | DeviceArray:
    """Leaf ``x`` as a numpy array of the parameter's dtype (jax's canonical dtype: float64
    numpy arrays become float32 unless jax_enable_x64 is set, as under ``jax.jit``; the
    executable's dtype of a leaf is never None, a token's, as jax puts tokens first)."""
    if type(x) is DeviceArray and x.dtype == dtype:
        return x  # bound as it stands (on its device, or its host copy)
    arr = np.asarray(x)
    return arr if arr.dtype == dtype else arr.astype(dtype)


# -- locating an unsupported op in the Python source -------------------------------------------

_LOC_DEF = re.compile(r"^(#loc\d*) = loc\((.*)\)\s*$", re.M)
_FILE_LOC = re.compile(r'^"((?:[^"\\]|\\.)*)":(\d+):(\d+)(?: to (?:\d+)?:(\d+))?')
_NAMED = re.compile(r'^"((?:[^"\\]|\\.)*)"\((.*)\)$')
_CALLSITE = re.compile(r"^callsite\((#loc\d*) at (#loc\d*)\)$")
_OP_LOC = re.compile(r"loc\((#loc\d*)\)\s*$")


def _located(err: CompileError, lowered: jax.stages.Lowered, name: str, device: object,
             callbacks: Sequence[Callable[..., object]]) -> JaxCompileError:
    """``err`` (a parse or compile error) again, at the Python line of the op it is about
    (compiling the lowering with debug locations, and the same host callbacks); at the
    StableHLO line where jax recorded none."""
    import backend_opencl

    text = lowered.as_text(debug_info=True)
    try:
        backend_opencl.compile_stablehlo(text, device=device, filename=name,
                                         host_callbacks=callbacks)
    except CompileError as again:
        first = again.first
        found = _python_loc(text, first.loc.line if first.loc else 0)
        if found is not None:
            op_name, loc = found
            message = first.message + (f" (jax: {op_name})" if op_name else "")
            where = note(first.loc, "the op in the StableHLO jax produced")
            return JaxCompileError([Diagnostic(first.severity, loc, message, (where,)),
                                    *again.diagnostics[1:]])
    return JaxCompileError(err.diagnostics)


def _python_loc(text: str, line: int) -> tuple[str, Loc] | None:
    """The jax op name and the innermost Python location of the op on StableHLO ``line``;
    an op of a private function (``jnp.linalg`` helpers, ``lax`` sub-jaxprs) is placed at
    the call of that function."""
    lines = text.split("\n")
    table = dict(_LOC_DEF.findall(text))
    for _ in range(16):  # nested calls are shallow; this bounds a malformed text
        found = _OP_LOC.search(lines[line - 1]) if 1 <= line <= len(lines) else None
        op_name, loc = _resolve(table, found.group(1)) if found else ("", None)
        if loc is not None:
            return op_name, loc
        line = _call_site(lines, line)
        if line == 0:
            return None
    return None


def _resolve(table: dict[str, str], ref: str) -> tuple[str, Loc | None]:
    """The jax op name (``jit(f)/add``) and Python location behind location ``ref``."""
    op_name = ""
    for _ in range(64):  # alias chains are short; this bounds a malformed one
        body = table.get(ref, "")
        if m := _CALLSITE.match(body):
            ref = m.group(1)
        elif m := _NAMED.match(body):
            op_name = op_name or (m.group(1) if "/" in m.group(1) else "")
            ref = m.group(2)
        elif m := _FILE_LOC.match(body):
            return op_name, jax_loc(m.group(1), int(m.group(2)), int(m.group(3)), m.group(4))
        else:
            break
    return op_name, None


def _call_site(lines: list[str], line: int) -> int:
    """The 1-based line calling the function around ``line`` (0: none, or ``@main``)."""
    for row in range(line - 1, -1, -1):
        m = re.search(r"func\.func (?:\w+ )?@([\w.$-]+)\(", lines[row])
        if m is None:
            continue
        if m.group(1) == "main":
            return 0
        call = re.compile(rf"call @{re.escape(m.group(1))}\(")
        return next((i + 1 for i, text in enumerate(lines) if call.search(text)), 0)
    return 0
