"""Building OpenCL programs: in-memory and on-disk caches, and build failures as compiler bugs.

``build_program(device, source, options)`` returns a built ``pyopencl.Program``.  A
program is built once per process per (device, source, options). Later processes skip
the OpenCL compiler through a disk cache: the driver's own where it has one (PoCL,
NVIDIA: pyopencl then defers to it), otherwise pyopencl's under :func:`cache_directory`
(whose entries :mod:`backend_opencl.diskcache` checks, marks used and evicts).
When the device's compiler rejects generated code, the source is saved and
:class:`OpenCLBuildError` names the kernels and quotes the build log.
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
import threading
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import pyopencl as cl
from pyopencl.characterize import has_src_build_cache

from backend_opencl import diskcache
from backend_opencl.memo import Memo
from backend_opencl.runtime.errors import DeviceError
from backend_opencl.runtime.opencl import memory
from tensorlang.diagnostics import TlcError

if TYPE_CHECKING:
    from backend_opencl.runtime.opencl.devices import Device

LOG_ENV = "TLC_BUILD_LOG"
"""Set to 1 to print the OpenCL compiler's output (warnings) of every build to stderr."""


class OpenCLBuildError(TlcError):
    """The OpenCL compiler rejected code tlc generated: a bug in tlc, reported as one."""


@dataclass
class BuildStats:
    """Counters for tests and reports: builds done and cache hits in this process."""

    builds: int = 0
    memory_hits: int = 0
    seconds: float = 0.0


STATS = BuildStats()
PROGRAMS_KEPT = 256
"""The most built programs a process keeps in memory (executables hold their own)."""
_PROGRAMS: Memo[tuple[str, str, tuple[str, ...]], cl.Program] = Memo(PROGRAMS_KEPT)
_LOCK = threading.Lock()


def cache_directory() -> str | None:
    """Where pyopencl keeps built binaries: the ``opencl`` folder of
    :mod:`backend_opencl.diskcache`; None when the disk cache is off or not safe (pyopencl
    pickles into it)."""
    folder = diskcache.folder(diskcache.BINARIES)
    return None if folder is None else str(folder)


def _handle(device: Device) -> cl.Device:
    """``device.cl_device`` as pyopencl's calls take it (None only on test fakes, whose
    builds fail inside pyopencl as they always did)."""
    return cast("cl.Device", device.cl_device)


def _binary_entry(device: Device, source: str, options: tuple[str, ...],
                  folder: str | None) -> Path | None:
    """pyopencl's cache entry for this build; None when it keeps none (no folder, or the
    driver caches builds itself: PoCL, NVIDIA) or its key cannot be derived (then the
    entry is neither checked nor marked used)."""
    if folder is None:
        return None
    try:  # _process_build_options (the options pyopencl adds to the key) is private
        if has_src_build_cache(_handle(device)):
            return None
        from pyopencl.cache import get_cache_key  # ~6 ms to import: only where it is used

        options_bytes, _ = cl.Program._process_build_options(device.context, list(options))
        return Path(folder) / get_cache_key(_handle(device), options_bytes, source)
    except (AttributeError, TypeError, cl.Error):
        return None


def build_program(device: Device, source: str, options: tuple[str, ...] = (),
                  kernel_names: tuple[str, ...] = ()) -> cl.Program:
    """The built program for ``source`` on ``device`` (a ``runtime.Device``), cached."""
    key = (device.key, hashlib.sha256(source.encode()).hexdigest(), tuple(options))
    with _LOCK:
        program = _PROGRAMS.get(key)
        if program is not None:
            STATS.memory_hits += 1
            return program
        start = time.perf_counter()
        program = _build(device, source, options, kernel_names)
        STATS.builds += 1
        STATS.seconds += time.perf_counter() - start
        _PROGRAMS[key] = program
        return program


_WARMED: set[str] = set()


def warm_up(device: Device, text: str) -> threading.Thread | None:
    """Start PoCL's compiler on ``device`` in the background (once per process), so that
    it is ready when the first program a process compiles is built (None: it was, or
    the device is not PoCL).

    A process's first PoCL build that is not in PoCL's cache pays ~0.5 s to set the
    compiler up (the builtin library), on top of its own work: MobileNetV2's program
    1.32 s after nothing, 0.84 s after a 0.56 s build of one line; a failed build or a
    cached one sets nothing up.  So the one line is built in a thread (pyopencl lets go
    of the GIL while the driver builds) while tlc lowers the program ``text``.  The line
    carries a hash of ``text``, since PoCL's cache would answer the same line in every
    process: a compile that is in the cache finds its one-line program there too.
    """
    if not device.is_pocl:
        return None
    with _LOCK:
        if device.key in _WARMED:
            return None
        _WARMED.add(device.key)
    stamp = int(hashlib.sha256(text.encode()).hexdigest()[:15], 16)
    source = f"kernel void tlc_warm_up(global long* a) {{ a[0] = {stamp}L; }}\n"

    def build() -> None:
        try:
            cl.Program(device.context, source).build(devices=[_handle(device)],
                                                     **memory.NO_CACHE)
        except cl.Error:
            pass  # the compile proper reports what is wrong with the driver

    thread = threading.Thread(target=build, name="tlc-warm-up", daemon=True)
    thread.start()
    return thread


def _build(device: Device, source: str, options: tuple[str, ...],
           kernel_names: tuple[str, ...]) -> cl.Program:
    program = cl.Program(device.context, source)
    folder = cache_directory()
    entry = _binary_entry(device, source, options, folder)
    stores = entry is not None and not diskcache.use_binary(entry)
    try:
        with warnings.catch_warnings():
            # Warnings about generated code are tlc's business, not the user's: they are
            # shown with TLC_BUILD_LOG=1, and a failed build quotes the whole log.
            warnings.simplefilter("ignore", cl.CompilerWarning)
            # False, not None: None would be pyopencl's own folder (~/.cache/pyopencl).
            cache: dict[str, Any] = {"cache_dir": folder or False}  # see memory.NO_CACHE
            built = program.build(options=list(options), devices=[_handle(device)], **cache)
    except cl.Error as err:
        if "unknown target CPU" in str(err):
            raise _unknown_cpu(device) from None
        saved = _save_failed_source(source)
        names = ", ".join(kernel_names) or "<unknown>"
        raise OpenCLBuildError(
            f"internal compiler error: the OpenCL compiler of {device.name!r} rejected the "
            f"code tlc generated for kernel(s) {names}.\nThis is a bug in tlc; please report "
            f"it with the saved source.\nsource saved as: {saved}\n"
            f"build options: {' '.join(options) or '(none)'}\nbuild log:\n{err}") from None
    if stores:
        diskcache.stored(diskcache.BINARIES)
    if os.environ.get(LOG_ENV) == "1":
        _print_log(built, device, kernel_names)
    return built


def _unknown_cpu(device: Device) -> DeviceError:
    """The driver's LLVM predates this CPU (PyPI's PoCL 3.0 on AMD Zen 5): it builds nothing."""
    return DeviceError(
        f"error: the OpenCL driver of {device.name!r} cannot compile for this CPU (its LLVM does "
        "not know it: 'unknown target CPU'); choose another driver: Debian's PoCL "
        "(make system-pocl, as root) or Intel's runtime (pip install '.[intel]'), see "
        "docs/devices.md")


def _print_log(program: cl.Program, device: Device, kernel_names: tuple[str, ...]) -> None:
    log = program.get_build_info(_handle(device), cl.program_build_info.LOG).strip()
    if log:
        names = ", ".join(kernel_names) or "<unknown>"
        print(f"tlc: OpenCL build log for {names}:\n{log}", file=sys.stderr)


def _save_failed_source(source: str) -> str:
    digest = hashlib.sha256(source.encode()).hexdigest()[:12]
    path = Path(tempfile.gettempdir()) / f"tlc-build-failure-{digest}.cl"
    path.write_text(source)
    return str(path)


def clear_memory_cache() -> None:
    """Forget built programs of this process (the disk cache stays)."""
    with _LOCK:
        _PROGRAMS.clear()
