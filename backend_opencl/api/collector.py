"""Python's cyclic garbage collector held off while tlc compiles.

A compile allocates millions of short-lived objects (parse trees, IR, clones made by the
passes), and every 70,000 allocations or so Python's collector runs a full collection
that walks every object of the process.  Beside jax and keras that is millions of
objects: a MobileNetV2 compile spent ~1 s of its 2.9 s in the collector.  What a compile
leaves behind is freed by reference counting; the few cycles wait for the next
collection after it.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_lock = threading.Lock()
_compiles = 0  # compiles in progress, in any thread
_was_enabled = False  # the collector's state before the first of them


@contextmanager
def collector_paused() -> Iterator[None]:
    """No cyclic garbage collection until the last compile running in the process ends;
    then the collector is as it was before the first (nesting and threads allowed)."""
    global _compiles, _was_enabled
    with _lock:
        if _compiles == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _compiles += 1
    try:
        yield
    finally:
        with _lock:
            _compiles -= 1
            if _compiles == 0 and _was_enabled:
                gc.enable()
