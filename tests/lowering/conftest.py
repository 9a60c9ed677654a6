"""Helpers for the StableHLO lowering tests: compile and run with poisoned buffers."""

from __future__ import annotations

import numpy as np
import pytest

from backend_opencl.exec import executable


@pytest.fixture(autouse=True)
def poison(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every buffer starts as 0xFF bytes, so elements a kernel forgets to write show up."""
    monkeypatch.setattr(executable, "POISON", True)


@pytest.fixture
def uncached(monkeypatch: pytest.MonkeyPatch) -> None:
    """No compiled program reused: none from memory (one compiled with other limits or
    passes), none from the disk cache (its key does not see monkeypatched limits)."""
    from backend_opencl.api import compiler

    monkeypatch.setattr(compiler, "_EXECUTABLES", {})
    monkeypatch.setenv("TLC_CACHE_DIR", "off")


def run(text: str, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
    """Compile ``text`` (a module with @main) and run it on ``arrays``."""
    import backend_opencl

    return backend_opencl.compile_stablehlo(text)(*arrays)


def module(signature: str, body: str) -> str:
    """A module with ``func.func public @main<signature> { body }``."""
    return f"func.func public @main{signature} {{\n{body}\n}}\n"


RNG = np.random.default_rng(5)


def rand(shape: tuple[int, ...], dtype: type = np.float32) -> np.ndarray:
    """Random data of ``dtype``."""
    if np.issubdtype(dtype, np.integer):
        return RNG.integers(-50, 50, size=shape).astype(dtype)
    return RNG.standard_normal(shape).astype(dtype)


def reduce_module(shape: tuple[int, ...], dims: list[int], t: str, body: str, init: str) -> str:
    """A module reducing its one argument over ``dims`` with ``stablehlo.<body>`` from ``init``."""
    ty = "tensor<" + "x".join(map(str, shape)) + f"x{t}>"
    out = [n for d, n in enumerate(shape) if d not in dims]
    oty = "tensor<" + "".join(f"{n}x" for n in out) + f"{t}>"
    return module(f"(%a: {ty}) -> {oty}", f"""
  %z = stablehlo.constant dense<{init}> : tensor<{t}>
  %0 = stablehlo.reduce(%a init: %z) applies stablehlo.{body} across dimensions = {dims}
      : ({ty}, tensor<{t}>) -> {oty}
  return %0 : {oty}""")
