"""Where the time of a program goes: ``TLC_PROFILE=1`` or ``tlc run --profile``.

When profiling is on (decided before the device's queue is created: the queue then has
``CL_QUEUE_PROFILING_ENABLE``, which it otherwise lacks), every launch records its
OpenCL event under the kernel's name, transfers between host and device count their
bytes, and every call of an executable (or of a kernel of the launch API) its wall time.
:func:`report` prints per-kernel device time and launch counts, the bytes moved, and the
host overhead: wall time minus the kernels' device time, in all and per warm call (the
first call also builds each kernel for its work-group size, milliseconds on PoCL).
With ``TLC_PROFILE=1`` the report goes to stderr when the process exits.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

ENV = "TLC_PROFILE"


def enabled() -> bool:
    """Whether this process profiles (``TLC_PROFILE=1``)."""
    return os.environ.get(ENV) == "1"


@dataclass
class KernelTime:
    """One kernel's launches and their summed device time."""

    launches: int = 0
    device_ns: int = 0


@dataclass
class Profile:
    """Counters of one process (thread-safe)."""

    kernels: dict[str, KernelTime] = field(default_factory=dict)
    to_device: int = 0  #: bytes copied host -> device
    to_host: int = 0  #: bytes copied device -> host
    calls: int = 0
    wall_s: float = 0.0
    device_s: float = 0.0  #: kernel device time of the recorded calls' launches
    first_wall_s: float = 0.0  #: the first call's wall time (it builds kernels, frames)
    first_device_s: float = 0.0
    pending: list[tuple[str, object]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def launch(self, name: str, event: object) -> None:
        """Record a launch of kernel ``name`` and its event."""
        with self.lock:
            self.pending.append((name, event))

    def moved(self, to_device: int = 0, to_host: int = 0) -> None:
        """Count bytes copied between host and device."""
        with self.lock:
            self.to_device += to_device
            self.to_host += to_host

    def call(self, wall_s: float) -> None:
        """Record one finished call (all its launches have completed)."""
        with self.lock:
            pending, self.pending = self.pending, []
        device_s = sum(self._settle(name, event) for name, event in pending) / 1e9
        with self.lock:
            if not self.calls:
                self.first_wall_s, self.first_device_s = wall_s, device_s
            self.calls += 1
            self.wall_s += wall_s
            self.device_s += device_s

    def _settle(self, name: str, event: object) -> int:
        """Add a finished launch's device time to its kernel's; return it (ns).  ``event``
        is the runtime's (a ``pyopencl.Event`` or a SYCL event): its ``profile``."""
        try:
            times = getattr(event, "profile")  # noqa: B009 (any runtime's event)
            ns = int(times.end) - int(times.start)
        except Exception:  # noqa: BLE001 (a queue without profiling, or an unfinished event)
            ns = 0
        with self.lock:
            stat = self.kernels.setdefault(name, KernelTime())
            stat.launches += 1
            stat.device_ns += ns
        return ns

    def report(self) -> str:
        """The table: kernels by device time, then launches, bytes and host overhead."""
        with self.lock:
            pending, self.pending = self.pending, []
        for name, event in pending:
            self._settle(name, event)
        device_s = sum(k.device_ns for k in self.kernels.values()) / 1e9
        lines = [f"tlc profile: {self.calls} call(s), wall {self.wall_s * 1e3:.3f} ms",
                 f"{'kernel':<40} {'launches':>9} {'device ms':>10} {'us/launch':>10}"]
        for name, k in sorted(self.kernels.items(), key=lambda kv: -kv[1].device_ns):
            per = k.device_ns / k.launches / 1e3 if k.launches else 0.0
            lines.append(f"{name:<40} {k.launches:>9} {k.device_ns / 1e6:>10.3f} {per:>10.1f}")
        launches = sum(k.launches for k in self.kernels.values())
        lines += [f"launches: {launches}; kernel device time {device_s * 1e3:.3f} ms",
                  f"bytes moved: host->device {self.to_device}, device->host {self.to_host}",
                  f"host overhead (wall - kernel device time): "
                  f"{(self.wall_s - self.device_s) * 1e3:.3f} ms over {self.calls} call(s)"]
        if self.calls > 1:
            warm = (self.wall_s - self.first_wall_s) - (self.device_s - self.first_device_s)
            lines.append(f"  warm calls: {warm / (self.calls - 1) * 1e6:.1f} us per call; "
                         f"the first call: {self.first_wall_s * 1e3:.3f} ms (it builds the "
                         "kernels for their work-group sizes)")
        return "\n".join(lines)

    def reset(self) -> None:
        """Forget everything recorded."""
        with self.lock:
            self.kernels.clear()
            self.pending.clear()
            self.to_device = self.to_host = self.calls = 0
            self.wall_s = self.device_s = self.first_wall_s = self.first_device_s = 0.0


PROFILE = Profile()
_REGISTERED: list[bool] = []


def queue_properties(cl: ModuleType) -> Any:
    """The properties of a new command queue: profiling when this process profiles (and
    then the report is printed at exit); a bit mask as pyopencl takes it (its annotation
    asks for the flag type, whose values cannot be combined)."""
    if not enabled():
        return 0
    if not _REGISTERED:
        _REGISTERED.append(True)
        atexit.register(_print_at_exit)
    return int(cl.command_queue_properties.PROFILING_ENABLE)


def _print_at_exit() -> None:
    if PROFILE.calls or PROFILE.kernels or PROFILE.pending:
        print(PROFILE.report(), file=sys.stderr)


def report() -> str:
    """The process's profile so far (see :class:`Profile`)."""
    return PROFILE.report()
