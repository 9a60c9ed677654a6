"""JAX programs whose lowerings hold what jax emits around a computation: Shardy meshes
(with and without attribute dictionaries), sharding constraints, groups and argument
shardings, host callbacks, donation, memory kinds, custom derivatives, rematerialisation,
named scopes and debug locations.

``tests/jax/test_jax_headers.py`` lowers each with the installed jax and checks that
tlc parses it and runs it (host callbacks with their Python functions). Run as a
script, it writes a few of the lowerings to ``tests/frontend/data/`` for the parser
tests that run without jax::

    .venv/bin/python -m tests.jax.programs
"""

from __future__ import annotations

import contextlib
import functools
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import io_callback
from jax.sharding import Mesh, NamedSharding, SingleDeviceSharding
from jax.sharding import PartitionSpec as P

DATA = Path(__file__).resolve().parents[1] / "frontend" / "data"
X = np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)
MESH = Mesh(np.array(jax.devices()[:1]), ("x",))
MESH_2D = Mesh(np.array(jax.devices()[:1]).reshape(1, 1), ("x", "y"))


@dataclass(frozen=True)
class Program:
    """A function lowered with ``jax.jit(fun, **jit).lower(*args)``.

    ``kind``: "runs" (tlc compiles it and matches jax), "callback" (a host callback at
    the line of ``fun`` holding ``marker``: tlc runs it with jax's Python functions and
    matches jax, and without them reports it at that line) or "parses" (tlc parses it;
    compiling it needs what tlc lacks).
    """

    name: str
    fun: Callable[..., Any]
    args: tuple[Any, ...] = (X,)
    kind: str = "runs"
    jit: dict[str, Any] = field(default_factory=dict)
    marker: str = ""
    context: Callable[[], contextlib.AbstractContextManager[Any]] = contextlib.nullcontext

    def lower(self) -> Any:
        """jax's ``Lowered`` of the program."""
        with self.context():
            return jax.jit(self.fun, **self.jit).lower(*self.args)


def _shard_map() -> Callable[..., Any]:
    """``jax.shard_map`` (``jax.experimental.shard_map`` before jax 0.6)."""
    if hasattr(jax, "shard_map"):
        return jax.shard_map
    from jax.experimental.shard_map import shard_map
    return shard_map


def debug_print(x: Any) -> Any:
    """Prints ``x`` (a host callback) and doubles it."""
    jax.debug.print("x = {x}", x=x)
    return x * 2


def pure_callback(x: Any) -> Any:
    """``sin`` computed by numpy in a pure host callback, plus one."""
    y = jax.pure_callback(np.sin, jax.ShapeDtypeStruct(x.shape, x.dtype), x)
    return y + 1


def io_callback_unordered(x: Any) -> Any:
    """``sin`` computed by numpy in an unordered io_callback, plus one."""
    y = io_callback(np.sin, jax.ShapeDtypeStruct(x.shape, x.dtype), x)
    return y + 1


def debug_print_in_loop(x: Any) -> Any:
    """Three ``tanh`` steps of a fori_loop, each printing its step."""
    def body(i: Any, c: Any) -> Any:
        jax.debug.print("step {i}", i=i)
        return jnp.tanh(c)

    return jax.lax.fori_loop(0, 3, body, x)


def shard_map_psum(x: Any) -> Any:
    """A psum over the one-device mesh's axis, doubled (jax inlines the shard_map)."""
    psum = functools.partial(jax.lax.psum, axis_name="x")
    return _shard_map()(lambda a: psum(a) * 2, mesh=MESH, in_specs=P("x"), out_specs=P())(x)


def shard_map_some_axes(x: Any) -> Any:
    """shard_map over one of two mesh axes: jax adds sharding constraints, one inside
    the all_reduce's reduction."""
    psum = functools.partial(jax.lax.psum, axis_name="x")
    return _shard_map()(lambda a: psum(a) * 2, mesh=MESH_2D, in_specs=P("x"),
                        out_specs=P(), axis_names={"x"})(x)


@jax.custom_vjp
def _sin(x: Any) -> Any:
    return jnp.sin(x)


_sin.defvjp(lambda x: (jnp.sin(x), x), lambda x, g: (g * jnp.cos(x),))


def custom_vjp_grad(x: Any) -> Any:
    """The gradient of a sum of ``sin`` with a custom VJP."""
    return jax.grad(lambda a: _sin(a).sum())(x)


def custom_jvp_grad(x: Any) -> Any:
    """The gradient of a sum of softplus (logaddexp has a custom JVP)."""
    return jax.grad(lambda a: jax.nn.softplus(a).sum())(x)  # logaddexp is a custom_jvp


def remat_grad(x: Any) -> Any:
    """The gradient of a rematerialised ``sin(sin(x))``."""
    return jax.grad(lambda a: jax.checkpoint(lambda b: jnp.sin(jnp.sin(b)))(a).sum())(x)


def named_scopes(x: Any) -> Any:
    """Ops in nested named scopes, then a cond (named locations in the debug text)."""
    with jax.named_scope("outer"), jax.named_scope("inner"):
        y = jnp.tanh(x) + 1
    return jax.lax.cond(y.sum() > 0, jnp.exp, jnp.cos, y)


def sharding_constraint(x: Any) -> Any:
    """``2x + 1`` with a sharding constraint on ``2x`` over the one-device mesh."""
    y = jax.lax.with_sharding_constraint(x * 2, NamedSharding(MESH, P("x")))
    return y + 1


def shard_alike(x: Any, y: Any) -> Any:
    """``2x`` and ``y``, sharded alike (a Shardy sharding group)."""
    from jax.experimental.shard_alike import shard_alike
    return shard_alike(x * 2, y)


def optimization_barrier(x: Any) -> Any:
    """``2x + 1`` with an optimization barrier between."""
    return jax.lax.optimization_barrier(x * 2) + 1


def _explicit_mesh() -> contextlib.AbstractContextManager[Any]:
    """A one-device mesh with explicit axes as the current mesh (jax >= 0.6)."""
    mesh = jax.make_mesh((1,), ("x",), axis_types=(jax.sharding.AxisType.Explicit,))
    use = getattr(jax, "set_mesh", None) or jax.sharding.use_mesh
    return use(mesh)


def reshard(x: Any) -> Any:
    """``2x + 1``, resharded to replicated on the explicit mesh in between."""
    return jax.sharding.reshard(x * 2, P()) + 1


def to_pinned_host(x: Any) -> Any:
    """``2x`` (its program puts the result in pinned host memory)."""
    return x * 2


def typed_key(key: Any, x: Any) -> Any:
    """The key, its data and ``2x``."""
    return key, jax.random.key_data(key), x * 2


@contextlib.contextmanager
def _gspmd() -> Iterator[None]:
    """Lower with GSPMD's ``mhlo.sharding`` annotations instead of Shardy's."""
    old = jax.config.jax_use_shardy_partitioner
    jax.config.update("jax_use_shardy_partitioner", False)
    try:
        yield
    finally:
        jax.config.update("jax_use_shardy_partitioner", old)


def _layouts() -> Iterator[Program]:
    """``mhlo.layout_mode`` and a layout constraint (jax >= 0.6's ``Format``)."""
    try:
        from jax.experimental.layout import Format, Layout, with_layout_constraint
    except ImportError:
        return
    yield Program("auto_layout", lambda a: a * 2, jit={"in_shardings": Format(Layout.AUTO)})
    yield Program("layout_constraint",
                  lambda a: with_layout_constraint(a * 2, Layout((0, 1))) + 1, kind="parses")


def _programs() -> Iterator[Program]:
    sharded = NamedSharding(MESH_2D, P("x"))
    pinned = SingleDeviceSharding(jax.devices()[0], memory_kind="pinned_host")
    yield Program("debug_print", debug_print, kind="callback", marker="jax.debug.print")
    yield Program("pure_callback", pure_callback, kind="callback",
                  marker="jax.pure_callback")
    yield Program("io_callback", io_callback_unordered, kind="callback", marker="io_callback(")
    yield Program("debug_print_in_loop", debug_print_in_loop, kind="callback",
                  marker="jax.debug.print")
    yield Program("shard_map_psum", shard_map_psum)
    yield Program("shard_map_some_axes", shard_map_some_axes)
    yield Program("custom_vjp_grad", custom_vjp_grad)
    yield Program("custom_jvp_grad", custom_jvp_grad)
    yield Program("remat_grad", remat_grad)
    yield Program("named_scopes", named_scopes)
    yield Program("donate", lambda a, b: (a + b, a * b), (X, X + 1),
                  jit={"donate_argnums": 0})
    yield Program("in_out_shardings", lambda a: a * 2,
                  jit={"in_shardings": sharded, "out_shardings": sharded})
    yield Program("sharding_constraint", sharding_constraint)
    yield Program("shard_alike", shard_alike, (X, X + 1))
    yield Program("optimization_barrier", optimization_barrier)
    yield Program("typed_key", typed_key, (jax.random.key(0), X))
    if hasattr(jax.sharding, "reshard"):
        yield Program("reshard", reshard, context=_explicit_mesh)
    yield Program("memory_kind", to_pinned_host, kind="parses",
                  jit={"out_shardings": pinned})
    yield Program("gspmd_sharding", sharding_constraint, kind="parses",
                  jit={"in_shardings": NamedSharding(MESH, P("x"))}, context=_gspmd)
    yield from _layouts()


PROGRAMS = {p.name: p for p in _programs()}

# The lowerings kept under tests/frontend/data (jax_<name>.mlir), with debug locations.
SAVED = ("debug_print", "shard_map_some_axes", "sharding_constraint", "shard_alike",
         "donate", "in_out_shardings", "typed_key", "memory_kind", "named_scopes",
         "gspmd_sharding", "auto_layout")


def save(names: tuple[str, ...] = SAVED, folder: Path = DATA) -> list[Path]:
    """Write ``jax_<name>.mlir`` for each program: its lowering with debug locations
    (file names reduced to the base name), under a comment naming the jax version."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name in names:
        text = PROGRAMS[name].lower().as_text(debug_info=True)
        text = text.replace(f'"{Path(__file__).resolve()}"', f'"{Path(__file__).name}"')
        path = folder / f"jax_{name}.mlir"
        path.write_text(f"// jax {jax.__version__}: program {name} of tests/jax/programs.py, "
                        f"jax.jit(f).lower(...).as_text(debug_info=True)\n{text}")
        paths.append(path)
    return paths


if __name__ == "__main__":
    for written in save(tuple(sys.argv[1:]) or SAVED):
        print(written)
