"""The device choice as a pure function over plain records, so that it can be tested.

Order: the user's spec (``--device``, the API's ``device=``, else ``$TLC_DEVICE``) first;
then GPUs; then the CPU drivers by measured merit (docs/devices.md): a system PoCL 3.1 or
later (builtins inlined), Intel's OpenCL CPU runtime (``pip install 'tlc[intel]'`` or
oneAPI's), other system CPU drivers (older PoCLs, unknown vendors), PyPI's PoCL; then
anything else (accelerators, custom devices, and checkers such as Oclgrind).  Ties keep
the order in which the OpenCL loader lists the devices.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from backend_opencl.runtime.errors import DeviceError

#: Environment variable naming the device when no spec is given in the call.
ENV_VAR = "TLC_DEVICE"

#: The spec that asks for PyPI's PoCL (it must be given before OpenCL is first loaded).
PYPI_SPEC = "pypi"

#: Platforms that check kernels rather than run them fast: chosen only when asked for.
CHECKERS = ("oclgrind",)

INSTALL_HINT = (
    "install an OpenCL driver: `pip install pocl-binary-distribution` (CPU, no root), "
    "`apt-get install pocl-opencl-icd` (Debian/Ubuntu, root; faster builtins), "
    "or your GPU vendor's OpenCL driver"
)


@dataclass(frozen=True)
class Candidate:
    """What the ranking needs to know about one device."""

    label: str  #: "platform [driver]: device", what specs are matched against
    kind: str  #: "gpu" | "cpu" | "accelerator" | "other"
    is_pocl: bool
    is_system_driver: bool
    version: str = ""  #: driver version, quoted in the reason


#: Tiers of the automatic order (lower is better).
GPU, INLINED_POCL, INTEL_CPU, SYSTEM_CPU, PYPI_POCL, OTHER = range(6)


def is_intel_cpu(c: Candidate) -> bool:
    """Whether ``c`` is Intel's OpenCL CPU runtime (platform "Intel(R) OpenCL")."""
    return c.kind == "cpu" and c.label.lower().startswith("intel(r) opencl")


def tier(c: Candidate) -> int:
    """The rank of a candidate in the automatic order (lower is better)."""
    if c.label.lower().startswith(CHECKERS):
        return OTHER
    if c.kind == "gpu":
        return GPU
    if c.kind != "cpu":
        return OTHER
    if c.is_pocl:
        if not c.is_system_driver:
            return PYPI_POCL
        return INLINED_POCL if _version(c.version) >= (3, 1) else SYSTEM_CPU
    return INTEL_CPU if is_intel_cpu(c) else SYSTEM_CPU


def tier_reason(c: Candidate) -> str:
    """Why the automatic order picked ``c``."""
    name = f"PoCL {c.version}" if c.is_pocl else c.label.split(":")[0].split(" [")[0]
    return {
        GPU: "first GPU",
        INLINED_POCL: f"system CPU driver ({name}, builtins inlined)",
        INTEL_CPU: f"Intel's OpenCL CPU runtime (driver {c.version})",
        SYSTEM_CPU: f"system CPU driver ({name})",
        PYPI_POCL: f"PyPI's PoCL ({name}; no GPU or system CPU driver found — as root, "
        "`make system-pocl` installs Debian's PoCL, whose builtins are much faster)",
        OTHER: "no GPU or CPU driver found; first other device (an accelerator or checker)",
    }[tier(c)]


def _version(text: str) -> tuple[int, ...]:
    """The leading numbers of a version string: "3.1+debian" -> (3, 1)."""
    numbers = []
    for part in text.replace("-", ".").replace("+", ".").split("."):
        if not part.isdigit():
            break
        numbers.append(int(part))
    return tuple(numbers)


def best(candidates: Sequence[Candidate], among: Sequence[int] | None = None) -> int:
    """Index of the best-ranked candidate (first in list order among equals)."""
    pool = range(len(candidates)) if among is None else among
    return min(pool, key=lambda i: (tier(candidates[i]), i))


def choose(
    candidates: Sequence[Candidate],
    spec: str | int | None = None,
    env: Mapping[str, str] | None = None,
) -> tuple[int, str]:
    """The index of the device to use and why ("chosen: ...").

    ``spec`` (an index, or text matched case-insensitively against the labels; the
    devices of a platform it names before devices whose names hold it) wins; then
    ``env[TLC_DEVICE]``; then the automatic order.  Raises :class:`DeviceError` when
    there is no device or the spec matches none.
    """
    if not candidates:
        raise DeviceError(f"error: no OpenCL device found; {INSTALL_HINT}")
    if spec is not None and str(spec).strip():
        return _by_spec(candidates, spec, f"requested {str(spec)!r}")
    text = (env or {}).get(ENV_VAR, "").strip()
    if text:
        return _by_spec(candidates, text, f"{ENV_VAR}={text}")
    i = best(candidates)
    return i, f"chosen: {tier_reason(candidates[i])}"


def _by_spec(candidates: Sequence[Candidate], spec: str | int, origin: str) -> tuple[int, str]:
    text = str(spec).strip()
    if isinstance(spec, int) or text.isdigit():
        i = int(text)
        if 0 <= i < len(candidates):
            return i, f"chosen: {origin}"
        raise DeviceError(_no_match(candidates, f"{origin}: no device has index {i}"))
    hits = [i for i, c in enumerate(candidates) if _matches(c, text)]
    if not hits:
        raise DeviceError(_no_match(candidates, f"{origin} matches no device"))
    # A spec naming a platform picks its devices over devices whose names hold it: on an
    # Intel CPU, PoCL's device is "...Intel(R) Xeon(R)..." and "intel" means Intel's runtime.
    hits = [i for i in hits if _matches_platform(candidates[i], text)] or hits
    i = best(candidates, hits)
    extra = f" ({len(hits)} devices match; took the best ranked)" if len(hits) > 1 else ""
    return i, f"chosen: {origin}{extra}"


def _matches(c: Candidate, text: str) -> bool:
    low = text.lower()
    if low == PYPI_SPEC:
        return c.is_pocl and not c.is_system_driver
    return low in c.label.lower()


def _matches_platform(c: Candidate, text: str) -> bool:
    """Whether ``text`` is in ``c``'s platform and driver ("platform [driver]"), the part
    of its label before the device's name."""
    return text.lower() in c.label.split(": ", 1)[0].lower()


def _no_match(candidates: Sequence[Candidate], what: str) -> str:
    lines = [f"error: {what}; a device is an index or text matched against these:"]
    lines += [f"  {i}: {c.label}" for i, c in enumerate(candidates)]
    return "\n".join(lines)
