"""Register blocks ``tlc tune`` measured, as compiles read them (:func:`cached_target`).

The cache is ``$TLC_TUNE_CACHE`` (default ``tune.json`` in tlc's cache folder,
:mod:`backend_opencl.diskcache`), keyed by device, kernel name and a hash of the kernel's
text; :mod:`backend_opencl.tools.tune` measures and writes it.  Kernels never tuned use
the cost model.
"""

from __future__ import annotations

import hashlib
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from backend_opencl import diskcache
from tensorlang.ir.core import Function, Program
from tensorlang.syntax.printer import print_function

if TYPE_CHECKING:  # the code generator is not imported for a cache hit
    from backend_opencl.emit.target import Target
    from backend_opencl.runtime.opencl.devices import Device


def cache_path() -> Path | None:
    """Where tuned blocks are stored: ``$TLC_TUNE_CACHE``, default ``tune.json`` in tlc's
    cache folder (None: ``TLC_CACHE_DIR=off`` and no ``TLC_TUNE_CACHE``)."""
    return diskcache.tune_file()


Choice = tuple[int, ...]
"""(RM, RN) or (RM, RN, staged) where staging was a candidate."""


def load() -> dict[str, list[int]]:
    """The cached choices; what is not a choice (a damaged or foreign file) is dropped."""
    path = cache_path()
    found = diskcache.read_json(path) if path is not None else None
    if not isinstance(found, dict):
        return {}
    return {key: value for key, value in found.items() if is_choice(value)}


def is_choice(value: object) -> bool:
    """``[RM, RN]`` or ``[RM, RN, staged]``: positive blocks, staged 0 or 1."""
    return (isinstance(value, list) and len(value) in (2, 3)
            and all(type(v) is int for v in value) and value[0] > 0 and value[1] > 0
            and value[2:] in ([], [0], [1]))


def kernel_key(device: Device, func: Function) -> str:
    """The cache key of kernel ``func`` on ``device``: its name and a hash of its text."""
    text = print_function(func)  # the text of Program([func]), without copying it
    return f"{device.key}|{func.name}|{hashlib.sha256(text.encode()).hexdigest()[:16]}"


def cached_target(program: Program, device: Device, target: Target) -> Target:
    """``target`` with the cached register blocks of ``program``'s kernels on ``device``."""
    cache = load()
    if not cache:
        return target
    keys = {f.name: kernel_key(device, f) for f in program.functions}
    found = {name: cache[key] for name, key in keys.items() if key in cache}
    if not found:
        return target
    blocks = tuple((name, entry[0], entry[1]) for name, entry in found.items())
    staged = tuple((name, bool(entry[2])) for name, entry in found.items() if len(entry) > 2)
    return replace(target, register_blocks=blocks, staged_kernels=staged)
