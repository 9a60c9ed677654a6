"""What the JAX bridge's modules share: the error type, jax imported on demand, the
signature of a call and its compiled entry, typed PRNG keys and jax's locations.

:mod:`.bridge` (``tlc.jax.jit``), :mod:`.primitive` (``tlc_call`` under jax's transforms)
and :mod:`.aot` (``lower``/``compile``) import this module; the bridge imports the other
two, which never import it back (they receive the ``Jitted`` function they work on).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import linecache
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, TypeGuard, cast

import numpy as np

from backend_opencl.runtime.opencl.device_array import DeviceArray
from tensorlang.diagnostics import CompileError, Loc, Source, TlcError

if TYPE_CHECKING:
    import jax
    from jax.tree_util import PyTreeDef

    from backend_opencl.exec.executable import Executable


class JaxCompileError(CompileError):
    """tlc cannot compile the StableHLO of a JAX function: the first diagnostic is at the
    Python line that produced the op (when jax recorded it), the op named in the message."""


def jax_module() -> ModuleType:
    """The jax module (TlcError naming the extra when it is not installed)."""
    try:
        import jax
    except ImportError:
        raise TlcError("error: tlc.jax needs jax; install it with: pip install 'tlc[jax]'") \
            from None
    return jax


class Signature(NamedTuple):
    """What a compiled program depends on: the dynamic arguments' pytree structure, each
    leaf's :func:`leaf_key`, and the static arguments (position or name, value)."""

    tree: PyTreeDef
    leaves: tuple[Hashable, ...]
    static: tuple[tuple[int | str, Hashable], ...]


@dataclass(frozen=True)
class Entry:
    """One compiled signature: the executable, how its results nest, which argument and
    result leaves are typed PRNG keys (the program takes and gives their data), and how
    many tokens (of ordered effects) come before the arguments and the results."""

    exe: Executable
    out_tree: PyTreeDef
    results: int
    key_args: tuple[int, ...] = ()
    key_results: tuple[tuple[int, object], ...] = ()  # (leaf, key dtype)
    tokens: int = 0


_LOWERING_FOR_TLC: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "tlc_jax_lowering", default=False)


def lowering_for_tlc() -> bool:
    """Whether jax is lowering a function for tlc now (a ``tlc.jax.jit`` function called
    inside it is then inlined: tlc compiles the whole program)."""
    return _LOWERING_FOR_TLC.get()


@contextlib.contextmanager
def inlining_tlc() -> Iterator[None]:
    """While jax lowers a function for tlc (see :func:`lowering_for_tlc`)."""
    token = _LOWERING_FOR_TLC.set(True)
    try:
        yield
    finally:
        _LOWERING_FOR_TLC.reset(token)


_SCALARS = (bool, int, float, complex)


@functools.cache
def _jax_array_type() -> type:
    """The type of jax's concrete arrays (what ``jax.device_put`` returns)."""
    return type(jax_module().numpy.zeros(()))


def leaf_key(x: object) -> Hashable:
    """What of an argument leaf the compiled program depends on (a few hundred ns: it is
    computed for every leaf of every call); a typed PRNG key keeps its key dtype, which
    names its implementation."""
    if isinstance(x, (np.ndarray, DeviceArray)):
        return x.shape, x.dtype, False
    if type(x) is _jax_array_type():  # the common leaf of jax users: read off its aval
        aval = cast("jax.Array", x).aval  # (its shape and dtype properties cost more)
        if isinstance(aval.dtype, np.dtype):  # not a typed key's
            return aval.shape, aval.dtype, aval.weak_type
    if isinstance(x, _SCALARS):
        return cast(Hashable, type(x))  # a type is hashable; typeshed does not say so
    shape, dtype = getattr(x, "shape", None), getattr(x, "dtype", None)
    if shape is None or dtype is None:
        arr = np.asarray(x)
        shape, dtype = arr.shape, arr.dtype
    elif is_key(dtype):
        return tuple(shape), dtype, False
    try:
        dtype = np.dtype(dtype)
    except TypeError:
        raise TlcError(f"error: tlc.jax cannot take an argument of type {type(x).__name__} "
                       f"with dtype {dtype}") from None
    return tuple(shape), dtype, bool(getattr(x, "weak_type", False))


def is_key(dtype: object) -> bool:
    """Whether ``dtype`` is a typed PRNG key's (``key<fry>``: not a numpy dtype)."""
    if isinstance(dtype, np.dtype):
        return False
    jax = jax_module()
    try:
        return bool(jax.dtypes.issubdtype(dtype, jax.dtypes.prng_key))
    except TypeError:  # not a dtype at all: leaf_key reports it
        return False


def is_key_leaf(leaf_key: Hashable) -> TypeGuard[tuple[Hashable, ...]]:
    """Whether a leaf's signature (:func:`leaf_key`) is a typed PRNG key's."""
    return isinstance(leaf_key, tuple) and is_key(leaf_key[1])


def wrap_key(data: np.ndarray | jax.Array, dtype: object) -> jax.Array:
    """Key data the program returned, as a typed key of ``dtype`` again."""
    impl = getattr(dtype, "_impl", None)  # jax has no public way from dtype to impl
    if impl is None:
        raise TlcError(f"error: tlc.jax cannot return a {dtype} key with this jax; return "
                       f"jax.random.key_data(key) instead")
    return jax_module().random.wrap_key_data(data, impl=impl)


def jax_loc(file: str, row: int, col: int, end: str | None) -> Loc:
    """A diagnostic location from jax's (0-based, end-exclusive) columns."""
    end_col = int(end) + 1 if end else 0
    return Loc(file, row, col + 1, row if end else 0, end_col,
               source=Source(file, "".join(linecache.getlines(file))))


def host_callbacks(lowered: object) -> list[Callable[..., object]]:
    """The Python functions of jax's lowering's host callbacks, which its custom calls
    name by index: jax keeps them beside the text for its own compile
    (``compile_args["host_callbacks"]`` of the lowering; no public attribute). None
    found: an empty list, so a callback is a CompileError at its line."""
    args = getattr(getattr(lowered, "_lowering", None), "compile_args", None)
    return list(args.get("host_callbacks", ())) if isinstance(args, dict) else []


class JitFunction(Protocol):
    """What :mod:`.primitive` and :mod:`.aot` use of a ``tlc.jax.jit`` function
    (:class:`backend_opencl.api.jax.bridge.Jitted`)."""

    fun: Callable[..., object]
    device: object
    check_bounds: bool

    @property
    def jax_jitted(self) -> jax.stages.Wrapped:
        """``jax.jit`` of the function (what jax traces and lowers)."""

    @property
    def name(self) -> str:
        """The function's name, for diagnostics."""

    def signature(self, args: tuple[object, ...], kwargs: dict[str, object]
                  ) -> tuple[list[object], Signature]:
        """A call's dynamic leaves and its signature."""

    def arguments(self, key: Signature, leaves: Sequence[object]
                  ) -> tuple[tuple[object, ...], dict[str, object]]:
        """The positional and keyword arguments of ``f`` for a signature's leaves."""

    def entry(self, key: Signature, lower: Callable[[], jax.stages.Lowered]) -> Entry:
        """The compiled entry of a signature (compiled from ``lower()`` once)."""

    def run_entry(self, entry: Entry, leaves: list[object]) -> object:
        """A compiled entry called on a call's leaves: ``f``'s output pytree."""

    def __call__(self, *args: object, **kwargs: object) -> Any:
        """``f`` compiled by tlc, called."""
