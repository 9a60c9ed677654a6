"""Progress of long compiles on stderr: the phase, kernels done of total, seconds so far.

A compile (:func:`compiling`, entered by ``compile_stablehlo`` and ``compile``, so by the
CLI and by ``tlc.jax.jit`` too) says nothing for its first :data:`DELAY_S` seconds; after
that a helper thread redraws one line on stderr every :data:`REDRAW_S` with what the
compile is doing (``tlc: compiling model.mlir: generate 14/40 kernels, 3.2 s``), and
the line is cleared when the compile ends.  The phases report themselves through
:func:`phase` from wherever they run; a compile inside another (a StableHLO program's
kernels) reports on the outer one's line.

``TLC_PROGRESS=0`` turns it off, ``TLC_PROGRESS=1`` turns it on when stderr is not a
terminal too (then each redraw is a line of its own); by default it shows on terminals
only.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

ENV = "TLC_PROGRESS"
DELAY_S = 2.0
"""How long a compile runs before its progress shows."""
REDRAW_S = 0.25
"""How often the line is redrawn."""


@dataclass
class _Compile:
    """One compile in progress: what it compiles and the phase it is in."""

    what: str
    start: float = field(default_factory=time.perf_counter)
    phase: str = "start"
    done: int = 0
    total: int = 0

    def line(self) -> str:
        """The progress line: ``tlc: compiling WHAT: PHASE [DONE/TOTAL kernels], S s``."""
        count = f" {self.done}/{self.total} kernels" if self.total else ""
        return (f"tlc: compiling {self.what}: {self.phase}{count}, "
                f"{time.perf_counter() - self.start:.1f} s")


class _Display:
    """The one progress line of a process and the thread that redraws it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stack: list[_Compile] = []
        self._shown = 0  # the width of the line on a terminal (0: nothing shown)
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    def push(self, job: _Compile) -> None:
        """Start showing ``job`` (after the delay)."""
        with self._lock:
            self._stack.append(job)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="tlc-progress",
                                                daemon=True)
                self._thread.start()
        self._wake.set()

    def pop(self, job: _Compile) -> None:
        """Stop showing ``job``; clear the line when no compile is left."""
        with self._lock:
            self._stack.remove(job)
            if not self._stack:
                self._clear()

    def current(self) -> _Compile | None:
        """The innermost compile in progress."""
        with self._lock:
            return self._stack[-1] if self._stack else None

    def _run(self) -> None:
        while True:
            self._wake.wait()
            time.sleep(REDRAW_S)
            with self._lock:
                if not self._stack:
                    self._wake.clear()
                    continue
                job = self._stack[-1]
                if time.perf_counter() - self._stack[0].start >= DELAY_S:
                    self._draw(job.line())

    def _draw(self, line: str) -> None:
        try:
            if _terminal():
                sys.stderr.write("\r" + line.ljust(self._shown))
                self._shown = len(line)
            else:
                sys.stderr.write(line + "\n")
            sys.stderr.flush()
        except (OSError, ValueError):  # stderr closed: nothing to show
            pass

    def _clear(self) -> None:
        if self._shown:
            with contextlib.suppress(OSError, ValueError):
                sys.stderr.write("\r" + " " * self._shown + "\r")
                sys.stderr.flush()
            self._shown = 0


_DISPLAY = _Display()


def _terminal() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def wanted() -> bool:
    """Whether compiles show progress: ``$TLC_PROGRESS``, else whether stderr is a
    terminal."""
    setting = os.environ.get(ENV, "").strip()
    return setting == "1" if setting in ("0", "1") else _terminal()


@contextlib.contextmanager
def compiling(what: str) -> Iterator[None]:
    """Show the progress of the compile of ``what`` (a file name) while the block runs,
    once it has taken :data:`DELAY_S` (nothing when :func:`wanted` says no)."""
    if not wanted() or _DISPLAY.current() is not None:  # a nested compile: its phases
        yield                                           # show on the outer one's line
        return
    job = _Compile(what)
    _DISPLAY.push(job)
    try:
        yield
    finally:
        _DISPLAY.pop(job)


def phase(name: str, done: int = 0, total: int = 0) -> None:
    """Report the phase the current compile is in (``done`` of ``total`` kernels when
    given); nothing when no compile shows progress."""
    job = _DISPLAY.current()
    if job is not None:
        job.phase, job.done, job.total = name, done, total
