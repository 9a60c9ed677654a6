"""Which OpenCL drivers (ICDs) a process loads, decided before OpenCL is first used.

pyopencl's wheels ship their own ICD loader (a patched ocl-icd).  It reads the system's
vendor folder (``$OCL_ICD_VENDORS`` when that names a folder, else ``$OPENCL_VENDOR_PATH``,
else ``/etc/OpenCL/vendors``) *and* every ``.icd`` in ``$PYOPENCL_HOME/.libs``, where
``pip install pocl-binary-distribution`` puts PyPI's PoCL (``pocl.icd`` naming the bundled
``libpocl-<hash>.so``).  ``$OCL_ICD_VENDORS`` naming one file loads that ICD alone.

Two PoCLs in one process conflict (spurious ``CL_OUT_OF_RESOURCES``), so before the first
platform query :func:`prepare_loader` either hides the bundled folder (``PYOPENCL_HOME``
pointed elsewhere) when a system PoCL is installed, or, when PyPI's PoCL is asked for,
names its ``.icd`` alone in ``OCL_ICD_VENDORS``.  The loader reads both variables once,
at its first call, so they are restored right after.  Nothing here imports pyopencl.

Intel's oneAPI OpenCL CPU runtime installed by pip (``pip install 'tlc[intel]'``:
``intel-opencl-rt``) puts ``libintelocl.so`` in ``<prefix>/lib``, but its own ``.icd`` names
a build path that does not exist.  Unless the vendor folder already names a working
``libintelocl.so`` (or the user named a folder with ``OCL_ICD_VENDORS``),
:func:`prepare_loader` writes a tlc-owned vendor folder (the system's ``.icd`` files plus
one naming the pip-installed library, in the ``vendors`` folder of tlc's cache, see
:mod:`backend_opencl.diskcache`) and points ``OCL_ICD_VENDORS`` at it.  Intel's runtime
and one PoCL coexist in a process.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import os
import sys
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass, replace
from pathlib import Path

from backend_opencl import diskcache

SYSTEM_VENDORS = "/etc/OpenCL/vendors"
INTEL_LIBRARY = "libintelocl.so"
#: The distributions of Intel's CPU runtime (the optional extra ``intel``).
INTEL_DISTS = ("intel-opencl-rt", "intel-cmplr-lib-rt")


@dataclass(frozen=True)
class Icd:
    """One ``.icd`` file: the driver library it names and whether a wheel ships it."""

    path: str
    library: str
    bundled: bool  #: shipped inside pyopencl's wheel folder (PyPI's PoCL), not the system's

    @property
    def is_pocl(self) -> bool:
        """Whether the driver is a PoCL."""
        return "pocl" in Path(self.library).name.lower()

    @property
    def is_intel_cpu(self) -> bool:
        """Whether the driver is Intel's OpenCL CPU runtime."""
        return Path(self.library).name.startswith("libintelocl")


@dataclass(frozen=True)
class LoaderPlan:
    """What :func:`prepare_loader` did to the environment, for ``tlc devices`` to explain."""

    mode: str  #: "pypi" | "system" | "user" | "all"
    loaded: tuple[Icd, ...]
    hidden: tuple[Icd, ...]
    note: str
    vendor_dir: str = ""  #: the tlc-owned vendor folder named by OCL_ICD_VENDORS, if any


def describe(entry: Icd) -> str:
    """One line about an ICD: whose it is, its file and the library it names."""
    if entry.bundled and entry.is_pocl:
        owner = f"PyPI's PoCL (pocl-binary-distribution {_version('pocl-binary-distribution')})"
    elif entry.is_intel_cpu and is_wheel_library(entry.library):
        owner = f"Intel's OpenCL CPU runtime (intel-opencl-rt {_version(INTEL_DISTS[0])})"
    else:
        owner = "system driver"
    return f"{owner}: {entry.path} -> {entry.library}"


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "?"


def pyopencl_dir() -> Path | None:
    """pyopencl's package folder, found without importing it."""
    spec = importlib.util.find_spec("pyopencl")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def bundled_icds() -> list[Icd]:
    """The ICDs in pyopencl's wheel folder (PyPI's PoCL)."""
    root = pyopencl_dir()
    return _read_folder(root / ".libs", bundled=True) if root is not None else []


def system_vendor_dir(env: Mapping[str, str] | None = None) -> str:
    """The vendor folder the loader reads (see the module docstring)."""
    env = os.environ if env is None else env
    user = env.get("OCL_ICD_VENDORS", "")
    if user and os.path.isdir(user):
        return user
    return env.get("OPENCL_VENDOR_PATH", "") or SYSTEM_VENDORS


def system_icds() -> list[Icd]:
    """The ICDs in the system's vendor folder."""
    return _read_folder(Path(system_vendor_dir()), bundled=False)


def _read_folder(folder: Path, bundled: bool) -> list[Icd]:
    try:
        files = sorted(folder.glob("*.icd"))
    except OSError:
        return []
    icds = []
    for f in files:
        try:
            library = f.read_text().strip().splitlines()[0].strip()
        except (OSError, IndexError, UnicodeDecodeError):
            continue
        icds.append(Icd(str(f), library, bundled))
    return icds


AFFINITY_ENV = "POCL_AFFINITY"
"""PoCL's switch (read when its CPU device starts: at the first device query on PoCL 3.1)
pinning its worker thread ``i`` to CPU ``i``."""


def pin_pocl_workers(env: MutableMapping[str, str] | None = None,
                     allowed: set[int] | None = None, cpus: int | None = None) -> bool:
    """Ask PoCL to pin its worker threads (``POCL_AFFINITY=1``) unless the user set the
    variable or this process may not run on every CPU (a cpuset or ``taskset``: PoCL
    would pin workers to CPUs outside it).  Unpinned, back-to-back kernels often find
    both workers on one core: a 3x3 convolution took 0.42 instead of 0.25 ms a call on a
    2-core VM, a 256^3 matmul 0.17 instead of 0.12 (docs/performance.md)."""
    env = os.environ if env is None else env
    if AFFINITY_ENV in env:
        return False
    if allowed is None and hasattr(os, "sched_getaffinity"):  # Linux
        allowed = os.sched_getaffinity(0)
    cpus = os.cpu_count() if cpus is None else cpus
    if cpus is None or allowed is None or allowed != set(range(cpus)):
        return False
    env[AFFINITY_ENV] = "1"
    return True


def thread_ids() -> set[int]:
    """This process's thread ids (Linux's ``/proc/self/task``); empty where there is none."""
    try:
        return {int(name) for name in os.listdir("/proc/self/task")}
    except OSError:
        return set()


def batch_workers(before: set[int]) -> int:
    """Give the threads started since ``before`` (PoCL's workers, which its device query
    starts) Linux's ``SCHED_BATCH`` policy; how many took it.  Pinned, a woken worker
    otherwise preempts the calling thread on its core (inside ``clSetUserEventStatus``,
    while it opens a call's gate): a one-kernel call waited ~35 instead of ~10 us.  A
    batch thread never preempts on waking; its share of the CPU is unchanged."""
    policy = getattr(os, "SCHED_BATCH", None)
    if policy is None:
        return 0
    done = 0
    for tid in thread_ids() - before:
        try:
            os.sched_setscheduler(tid, policy, os.sched_param(0))
            done += 1
        except OSError:  # gone already, or not ours to change
            pass
    return done


def pinned_by_tlc(old: Mapping[str, str | None]) -> bool:
    """Whether :func:`prepare_loader` (whose old values are ``old``) set
    ``POCL_AFFINITY`` (not the user)."""
    return old.get(AFFINITY_ENV) is None and os.environ.get(AFFINITY_ENV) == "1"


def prepare_loader(want_pypi: bool) -> tuple[LoaderPlan, dict[str, str | None]]:
    """Set the loader's variables for this process; returns the plan and the old values.

    Call it after ``import pyopencl`` (which sets ``PYOPENCL_HOME``) and before the first
    platform query; pass the old values to :func:`restore_env` after that query and the
    platforms' device queries (Debian's PoCL 3.1 starts its CPU device, whose worker
    threads read ``POCL_AFFINITY``, at the device query).
    """
    system, bundled = system_icds(), bundled_icds()
    old = {k: os.environ.get(k) for k in ("OCL_ICD_VENDORS", "PYOPENCL_HOME", AFFINITY_ENV)}
    pin_pocl_workers()
    if want_pypi:
        return _pypi_only(system, bundled), old
    if os.environ.get("OCL_ICD_VENDORS") and not os.path.isdir(os.environ["OCL_ICD_VENDORS"]):
        note = f"OCL_ICD_VENDORS={os.environ['OCL_ICD_VENDORS']} (set by the user)"
        return LoaderPlan("user", (), (), note), old
    system, vendor_dir = _with_pip_intel(system)
    if vendor_dir:
        os.environ["OCL_ICD_VENDORS"] = vendor_dir
    if bundled and any(icd.is_pocl for icd in system):
        os.environ["PYOPENCL_HOME"] = str(Path(str(pyopencl_dir())) / "no-bundled-icds")
        note = (
            "PyPI's PoCL is not loaded: a system PoCL is installed and two PoCLs in one "
            "process conflict; start with TLC_DEVICE=pypi (or --device pypi) to use it"
        )
        return LoaderPlan("system", tuple(system), tuple(bundled), note, vendor_dir), old
    return LoaderPlan("all", tuple(system + bundled), (), "", vendor_dir), old


def _pypi_only(system: list[Icd], bundled: list[Icd]) -> LoaderPlan:
    pocl = [icd for icd in bundled if icd.is_pocl]
    if not pocl:
        return LoaderPlan(
            "pypi",
            (),
            tuple(system),
            "PyPI's PoCL is not installed (`pip install pocl-binary-distribution`)",
        )
    os.environ["OCL_ICD_VENDORS"] = pocl[0].path
    os.environ.setdefault(KERNEL_CACHE_ENV, "0")
    note = "only PyPI's PoCL is loaded (device spec 'pypi'); system drivers are hidden"
    return LoaderPlan("pypi", (pocl[0],), tuple(system), note)


KERNEL_CACHE_ENV = "POCL_KERNEL_CACHE"
"""PoCL's switch of its kernel cache, which tlc turns off for PyPI's PoCL 3.0 unless the
user set it: a build answered from that cache (another process's, of the same source)
lacks its kernels (``clCreateKernel``: ``INVALID_KERNEL_NAME``) and the process aborts
when it releases its context (seen on AMD Zen 4)."""


def pip_intel_library() -> str | None:
    """``libintelocl.so`` installed by pip (``intel-opencl-rt``) in this prefix, if any."""
    candidates = [Path(sys.prefix) / "lib" / INTEL_LIBRARY]
    try:
        files = importlib.metadata.distribution(INTEL_DISTS[0]).files or []
        candidates += [Path(str(f.locate())) for f in files if f.name == INTEL_LIBRARY]
    except importlib.metadata.PackageNotFoundError:
        pass
    return next((str(p.resolve()) for p in candidates if p.is_file()), None)


def _with_pip_intel(system: list[Icd]) -> tuple[list[Icd], str]:
    """The system ICDs plus pip's Intel runtime, and the vendor folder naming them all.

    ("" when Intel's runtime is not pip-installed, the user named a vendor folder, or the
    vendor folder already loads a working ``libintelocl.so``; then nothing changes.)
    """
    library = pip_intel_library()
    registered = any(i.is_intel_cpu and _loadable(i.library) for i in system)
    if library is None or registered or os.environ.get("OCL_ICD_VENDORS"):
        return system, ""
    intel = Icd("", library, bundled=False)
    entries = [i for i in system if not i.is_intel_cpu] + [intel]
    folder = _write_vendor_dir(entries)
    if folder is None:
        return system, ""
    return [replace(i, path=str(Path(folder) / _icd_name(i))) for i in entries], folder


def _loadable(library: str) -> bool:
    """Whether a library named in an ``.icd`` exists (a bare name is trusted)."""
    return os.sep not in library or os.path.isfile(library)


def _icd_name(entry: Icd) -> str:
    return "tlc-intel-cpu.icd" if entry.is_intel_cpu and not entry.path else Path(entry.path).name


def _write_vendor_dir(entries: list[Icd]) -> str | None:
    """A folder of ``.icd`` files naming ``entries``' libraries (named by its contents).
    A file holding anything but what tlc writes (damaged, or left by another version) is
    rewritten, and other ``.icd`` files are removed: the loader would load them too."""
    lines = {_icd_name(i): (i.library + "\n").encode() for i in entries}
    digest = hashlib.sha256(repr(sorted(lines.items())).encode()).hexdigest()[:12]
    folder = diskcache.vendor_folder(digest)
    if folder is None or not all(diskcache.ensure_content(folder / name, text)
                                 for name, text in lines.items()):
        return None
    for stray in folder.glob("*.icd"):
        if stray.name not in lines:
            stray.unlink(missing_ok=True)
    return str(folder)


def driver_specs() -> list[str]:
    """A device spec per installed CPU driver, for benchmarks that loop over drivers:
    ``pocl`` (a system PoCL), ``intel`` (Intel's CPU runtime), ``pypi`` (PyPI's PoCL).
    Each needs its own process (``TLC_DEVICE=<spec>``): the two PoCLs never share one."""
    system = system_icds()
    specs = ["pocl"] if any(i.is_pocl for i in system) else []
    if pip_intel_library() or any(i.is_intel_cpu and _loadable(i.library) for i in system):
        specs.append("intel")
    if any(i.is_pocl for i in bundled_icds()):
        specs.append("pypi")
    return specs


LOADER_ENV: dict[str, str | None] = {}
"""The loader's variables as its first platform query read them (None: unset), recorded
by :func:`restore_env`: a helper process that must load the same drivers sets them
(:mod:`backend_opencl.runtime.opencl.prewarm`)."""


def restore_env(old: dict[str, str | None]) -> None:
    """Put back the variables :func:`prepare_loader` changed (the loader has read them)."""
    LOADER_ENV.update({key: os.environ.get(key) for key in old})
    set_env(old)


def set_env(values: Mapping[str, str | None]) -> None:
    """Set each variable of ``values`` in this process's environment (None: unset it)."""
    for key, value in values.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


def is_wheel_library(path: str) -> bool:
    """Whether a driver library was installed by pip (PyPI's PoCL, Intel's CPU runtime in
    ``<prefix>/lib``), not by the system."""
    root = pyopencl_dir()
    if root is not None and path.startswith(os.path.realpath(root / ".libs") + os.sep):
        return True
    if Path(path).name.startswith("libintelocl") and sys.prefix != sys.base_prefix:
        prefix_lib = os.path.realpath(Path(sys.prefix) / "lib") + os.sep
        if os.path.realpath(path).startswith(prefix_lib):
            return True
    return any(part in ("site-packages", "dist-packages") for part in Path(path).parts)
