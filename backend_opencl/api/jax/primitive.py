"""``tlc.jax.jit`` functions inside jax's transformations: the ``tlc_call`` primitive.

A ``tlc.jax.jit`` function called with jax tracers (inside ``jax.jit``, ``grad``,
``vmap``, ``eval_shape`` ...) binds ``tlc_call`` with a :class:`Callee`: the function on
flat arrays, for one signature. Each rule makes a new jax function from the callee's and
binds ``tlc_call`` again with it, so that tlc compiles every transformed function and
rules compose to any depth:

- abstract evaluation: jax's trace of the function (kept per input types);
- batching: ``jax.vmap`` of the function over the batched axes (results batched on 0);
- JVP: the function itself on the primals, and a *linear* callee on the primals and the
  nonzero tangents (``jax.jvp``'s tangents of the inexact results);
- transposition, where jax takes a callee to be linear in some arguments (that linear
  callee under ``grad``, ``vjp``, ``linearize``; any callee under ``linear_transpose``):
  ``jax.vjp`` of the function in those arguments, at zeros for them, given the others;
- concrete arguments (a rule's application outside any trace): tlc runs the callee;
- lowering inside ``jax.jit``: a host callback into tlc's executable, which is compiled
  while jax lowers (a compile error is raised there, not in the callback); while jax
  lowers a program *for tlc*, the callee is inlined instead.

A derivative binds the primal function and the linear one separately, so a forward pass
runs twice under ``grad`` (once for the value, once inside the VJP), as for any opaque
call. What cannot work raises :class:`JaxCompileError` at the user's line: a collective
over a named axis of an enclosing ``vmap``/``shard_map``, and ``jax.export`` (a host
callback is not serializable). Importing this module imports jax and registers the
primitive.
"""

from __future__ import annotations

import inspect
import os
import sysconfig
import threading
from collections.abc import Callable, Hashable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import jax
import jax.numpy as jnp
import numpy as np
from jax.core import AbstractValue, ShapedArray
from jax.extend.core import Primitive, primal_dtype_to_tangent_dtype
from jax.extend.mlir import ir
from jax.interpreters import ad, batching, mlir

from backend_opencl.api.jax.aot import Compiled, Lowered
from backend_opencl.api.jax.common import (
    JaxCompileError,
    JitFunction,
    Signature,
    inlining_tlc,
    is_key,
    is_key_leaf,
    jax_loc,
    lowering_for_tlc,
    wrap_key,
)
from tensorlang.diagnostics import Loc

if TYPE_CHECKING:
    from jax.tree_util import PyTreeDef

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., object])

tlc_call_p = Primitive("tlc_call")
tlc_call_p.multiple_results = True


def _aval_key(aval: ShapedArray) -> Hashable:
    """What a callee's program depends on of one input."""
    return tuple(aval.shape), np.dtype(aval.dtype), bool(getattr(aval, "weak_type", False))


def _spec(aval: ShapedArray) -> jax.ShapeDtypeStruct:
    """``aval`` as a ``jax.ShapeDtypeStruct`` (weak type kept)."""
    return jax.ShapeDtypeStruct(aval.shape, aval.dtype,
                                weak_type=bool(getattr(aval, "weak_type", False)))


def _inexact(dtype: jax.typing.DTypeLike) -> bool:
    """Whether values of ``dtype`` have tangents (float0 ones do not count)."""
    return bool(jnp.issubdtype(dtype, jnp.inexact))


def _zeros(aval: ShapedArray, tangent: bool = False) -> jax.Array | np.ndarray:
    """Zeros of ``aval`` (its tangent type with ``tangent``: float0 for integers)."""
    dtype = primal_dtype_to_tangent_dtype(aval.dtype) if tangent else aval.dtype
    if dtype == jax.dtypes.float0:
        return np.zeros(aval.shape, dtype)
    return jnp.zeros(aval.shape, dtype)


def _named(fun: F, name: str) -> F:
    """``fun`` named ``name`` in tlc's messages (``<jax vmap(f)>``)."""
    fun.__qualname__ = fun.__name__ = name
    return fun


class Callee:
    """A jax function of flat arrays returning a list of arrays, compiled by tlc: the
    ``callee`` parameter of ``tlc_call``. One per signature of a ``tlc.jax.jit`` function,
    and one per transformation of a callee (kept, so jax's tracing caches see the same
    parameter again)."""

    def __init__(self, fun: Callable[..., list[jax.Array]], name: str, device: object,
                 check_bounds: bool, jit: Callable[..., JitFunction]) -> None:
        """``jit``: how a function becomes a ``tlc.jax.jit`` function (the bridge's
        ``Jitted``, passed in: this module does not import the bridge)."""
        self.fun = _named(fun, name)
        self.jit = jit
        self.name = name
        self.device = device
        self.check_bounds = check_bounds
        self._traces: dict[Hashable, jax.stages.Traced] = {}
        self._compiled: dict[Hashable, Compiled] = {}
        self._derived: dict[Hashable, Callee] = {}
        self._jitted: JitFunction | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        """How jaxprs print the parameter: ``callee=<tlc vmap(f)>``."""
        return f"<tlc {self.name}>"

    @property
    def jitted(self) -> JitFunction:
        """The function as a ``tlc.jax.jit`` function (compiled per signature)."""
        if self._jitted is None:
            self._jitted = self.jit(self.fun, device=self.device, check_bounds=self.check_bounds)
        return self._jitted

    def trace(self, avals: Sequence[ShapedArray]) -> jax.stages.Traced:
        """jax's trace of the function for inputs of types ``avals`` (``jax.stages.
        Traced``), kept: the lowering inside ``jax.jit`` lowers this one, whose ops have
        their lines in ``f`` (a trace made while jax lowers an enclosing program would
        have the line of the call)."""
        key = tuple(_aval_key(a) for a in avals)
        traced = self._traces.get(key)
        if traced is None:
            traced = self.jitted.jax_jitted.trace(*[_spec(a) for a in avals])
            self._check_axes(traced.jaxpr.effects)
            self._traces[key] = traced
        return traced

    def _check_axes(self, effects: Any) -> None:  # Any: jax's effects of a named axis
        """A JaxCompileError where the function uses a named axis of an enclosing
        transformation (``psum(x, "i")`` under ``vmap(..., axis_name="i")`` or
        ``shard_map``): tlc compiles it apart from that transformation."""
        # jax records such a use as a NamedAxisEffect, which it does not export
        names = sorted(repr(e.name) for e in effects if type(e).__name__ == "NamedAxisEffect")
        if names:
            raise JaxCompileError.at(
                _user_loc(), f"{self.name} uses the named axis {', '.join(names)} of an "
                f"enclosing transformation, which tlc cannot compile: a tlc.jax.jit function "
                f"is compiled apart from the transformations around it (apply the collective "
                f"outside it)")

    def compiled(self, avals: Sequence[ShapedArray]) -> Compiled:
        """tlc's executable for inputs of types ``avals`` (``aot.Compiled``)."""
        key = tuple(_aval_key(a) for a in avals)
        compiled = self._compiled.get(key)
        if compiled is None:
            with inlining_tlc():
                lowered = self.trace(avals).lower()
            _, signature = self.jitted.signature(tuple(_spec(a) for a in avals), {})
            compiled = Lowered(self.jitted, signature, lowered).compile()
            self._compiled[key] = compiled
        return compiled

    def derived(self, how: Hashable, make: Callable[[], Callable[..., list[jax.Array]]],
                name: str) -> Callee:
        """The callee of a transformation of this one (``how`` names it), made once."""
        with self._lock:
            callee = self._derived.get(how)
            if callee is None:
                callee = Callee(make(), f"{name}({self.name})", self.device,
                                self.check_bounds, self.jit)
                self._derived[how] = callee
        return callee

    def batched(self, dims: tuple[int | None, ...]) -> Callee:
        """This function vmapped over axes ``dims`` of its inputs (None: not batched)."""
        return self.derived(("vmap", dims), lambda: lambda *xs: jax.vmap(
            self.fun, in_axes=dims, out_axes=0)(*xs), "vmap")

    def linear(self, nonzero: tuple[bool, ...]) -> Callee:
        """The tangents of the inexact results, from the primals and the tangents of the
        ``nonzero`` inputs (the others' are zero): linear in those tangents."""
        def jvp(*args: jax.Array) -> list[jax.Array]:
            primals = args[:len(nonzero)]
            zeros = [_zeros(jax.typeof(p), tangent=True) for p in _select(nonzero, primals, False)]
            outs, tans = jax.jvp(self.fun, primals,
                                 tuple(_merge(nonzero, args[len(nonzero):], zeros)))
            return _select([_inexact(o.dtype) for o in outs], tans)

        return self.derived(("jvp", nonzero), lambda: jvp, "jvp")

    def transposed(self, linear: tuple[bool, ...], avals: tuple[ShapedArray, ...],
                   present: tuple[bool, ...]) -> Callee:
        """The transpose in the ``linear`` inputs (of types ``avals``): the other inputs
        and the cotangents of the ``present`` results (the others' are zero) in, the
        linear inputs' cotangents out. ``jax.vjp`` at zeros for the linear inputs: exact
        for a function linear in them, as jax's transposition requires."""
        def vjp(*args: jax.Array) -> list[jax.Array]:
            known = args[:linear.count(False)]
            outs, pullback = jax.vjp(lambda *xs: self.fun(*_merge(linear, xs, known)),
                                     *[_zeros(a) for a in avals])
            zeros = [_zeros(jax.typeof(o), tangent=True) for o in _select(present, outs, False)]
            return list(pullback(_merge(present, args[len(known):], zeros)))

        return self.derived(("vjp", linear, tuple(_aval_key(a) for a in avals), present),
                            lambda: vjp, "transpose")


def _user_loc() -> Loc | None:
    """The innermost line of the Python stack outside jax, tlc and the standard library
    (the user's line that applied the transformation), or None."""
    internal = (os.path.dirname(jax.__file__), os.path.dirname(__file__),
                sysconfig.get_paths()["stdlib"], "<")
    frame = inspect.currentframe()
    while frame is not None and frame.f_code.co_filename.startswith(internal):
        frame = frame.f_back
    if frame is None:
        return None
    where = inspect.getframeinfo(frame, context=0).positions
    if where is None:  # no column information (python -X no_debug_ranges)
        return jax_loc(frame.f_code.co_filename, frame.f_lineno, 0, None)
    one_line = where.end_lineno == where.lineno and where.end_col_offset is not None
    return jax_loc(frame.f_code.co_filename, where.lineno or frame.f_lineno,
                where.col_offset or 0, str(where.end_col_offset) if one_line else None)


def _select(mask: Sequence[bool], items: Sequence[T], want: bool = True) -> list[T]:
    """The items where ``mask`` is ``want``."""
    return [x for x, m in zip(items, mask, strict=True) if m == want]


def _merge(mask: Sequence[bool], yes: Sequence[T], no: Sequence[T]) -> list[T]:
    """The items of ``yes`` where ``mask`` holds and of ``no`` elsewhere, in order."""
    yes_it, no_it = iter(yes), iter(no)
    return [next(yes_it) if m else next(no_it) for m in mask]


class Traced:
    """One signature of a ``tlc.jax.jit`` function, called with tracers: typed keys go in
    as their data, the leaves through ``tlc_call``, the results back into ``f``'s output
    pytree (keys wrapped again)."""

    def __init__(self, jitted: JitFunction, key: Signature) -> None:
        self.key_args = {i: k[1] for i, k in enumerate(key.leaves)
                         if is_key_leaf(k)}
        self.out_tree: PyTreeDef | None = None
        self.key_results: dict[int, object] = {}
        self.callee = Callee(self._flat(jitted, key), jitted.name, jitted.device,
                             jitted.check_bounds, type(jitted))

    def _flat(self, jitted: JitFunction, key: Signature) -> Callable[..., list[jax.Array]]:
        """``f`` on the signature's leaves (key data for keys); tracing it records the
        output pytree."""
        def flat(*data: jax.Array) -> list[jax.Array]:
            leaves = [wrap_key(x, self.key_args[i]) if i in self.key_args else x
                      for i, x in enumerate(data)]
            args, kwargs = jitted.arguments(key, leaves)
            outs, self.out_tree = jax.tree_util.tree_flatten(jitted.fun(*args, **kwargs))
            self.key_results = {i: o.dtype for i, o in enumerate(outs) if is_key(o.dtype)}
            return [jax.random.key_data(o) if i in self.key_results else o
                    for i, o in enumerate(outs)]

        return flat

    def __call__(self, leaves: list[Any]) -> object:  # Any: tracers (key_data takes arrays)
        """The call on these leaves: ``f``'s output pytree."""
        data = [jax.random.key_data(x) if i in self.key_args else x
                for i, x in enumerate(leaves)]
        self.callee.trace([jax.typeof(x) for x in data])  # records the output pytree
        outs = tlc_call_p.bind(*data, callee=self.callee)
        outs = [wrap_key(o, self.key_results[i]) if i in self.key_results else o
                for i, o in enumerate(outs)]
        return jax.tree_util.tree_unflatten(self.out_tree, outs)


# -- the rules -----------------------------------------------------------------------------


def _impl(*args: jax.Array, callee: Callee) -> list[jax.Array]:
    """Concrete arguments: tlc runs the callee (jax arrays out, as jax's own ops give)."""
    return [jnp.asarray(o) for o in callee.jitted(*args)]


def _abstract_eval(*avals: ShapedArray, callee: Callee) -> list[ShapedArray]:
    """The result types, from jax's trace of the callee."""
    return callee.trace(avals).jaxpr.out_avals


def _batch(args: Sequence[jax.Array], dims: Sequence[int | None], *, callee: Callee
           ) -> tuple[list[jax.Array], list[int]]:
    """The callee vmapped over the batched arguments' axes, its results batched on 0."""
    dims = tuple(dims)  # an int or None (not batched) per argument
    outs = tlc_call_p.bind(*args, callee=callee.batched(dims))
    return outs, [0] * len(outs)


def _jvp(primals: Sequence[jax.Array], tangents: Sequence[Any], *,
         callee: Callee) -> tuple[list[jax.Array], list[jax.Array | ad.Zero]]:
    """The callee on the primals, and its linear callee on the primals and the nonzero
    tangents (symbolic zeros for the other results)."""
    outs = tlc_call_p.bind(*primals, callee=callee)
    nonzero = tuple(type(t) is not ad.Zero and _inexact(t.dtype) for t in tangents)
    inexact = [_inexact(o.dtype) for o in outs]
    if not (any(nonzero) and any(inexact)):
        return outs, [_zero_tangent(o) for o in outs]
    tans = tlc_call_p.bind(*primals, *_select(nonzero, tangents),
                           callee=callee.linear(nonzero))
    return outs, _merge(inexact, tans, [_zero_tangent(o) for o in _select(inexact, outs, False)])


def _zero_tangent(x: jax.Array) -> ad.Zero:
    """The symbolic zero tangent of ``x``."""
    return ad.Zero(jax.typeof(x).to_tangent_aval())


def _transpose(cts: Sequence[Any], *args: jax.Array | ad.UndefinedPrimal,
               callee: Callee) -> list[jax.Array | ad.Zero | None]:
    """The cotangents of the arguments jax takes the callee to be linear in (None for
    the others), from the results' cotangents."""
    linear = tuple(ad.is_undefined_primal(x) for x in args)
    avals = tuple(x.aval for x in _select(linear, args))
    present = tuple(type(ct) is not ad.Zero and _inexact(ct.dtype) for ct in cts)
    if not any(present):
        return [ad.Zero(x.aval) if lin else None for x, lin in zip(args, linear, strict=True)]
    known = _select(linear, args, False)
    grads = tlc_call_p.bind(*known, *_select(present, cts),
                            callee=callee.transposed(linear, avals, present))
    return _merge(linear, grads, [None] * len(known))


def _shaped(avals: Sequence[AbstractValue]) -> list[ShapedArray]:
    """The types of ``tlc_call``'s operands or results: arrays, each a ShapedArray."""
    shaped = [a for a in avals if isinstance(a, ShapedArray)]
    assert len(shaped) == len(avals), avals
    return shaped


def _lower(ctx: mlir.LoweringRuleContext, *args: ir.Value, callee: Callee
           ) -> Sequence[ir.Value | Sequence[ir.Value]]:
    """Inside ``jax.jit``: a host callback into tlc's executable, compiled now."""
    if lowering_for_tlc():
        return mlir.lower_fun(callee.fun, multiple_results=True)(ctx, *args)
    if ctx.module_context.lowering_parameters.for_export:
        raise JaxCompileError.at(_user_loc(), f"jax.export cannot serialize {callee.name}: "
                                 f"tlc runs it through a host callback (export the function "
                                 f"without tlc.jax.jit)")
    avals_in = _shaped(ctx.avals_in)
    compiled = callee.compiled(avals_in)

    def run(*arrays: np.ndarray) -> list[np.ndarray]:
        return compiled._call_leaves(list(arrays))

    # emit_python_callback, not pure_callback: that would device_put the numpy arguments
    # XLA gives (~150 us a call)
    results, _, _ = mlir.emit_python_callback(
        ctx, run, None, list(args), avals_in, _shaped(ctx.avals_out), has_side_effect=False,
        returns_token=False)
    return results


tlc_call_p.def_impl(_impl)
tlc_call_p.def_abstract_eval(_abstract_eval)
batching.primitive_batchers[tlc_call_p] = _batch
ad.primitive_jvps[tlc_call_p] = _jvp
ad.primitive_transposes[tlc_call_p] = _transpose
mlir.register_lowering(tlc_call_p, _lower)
