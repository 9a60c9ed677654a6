"""The facts about a ``pyopencl.Device`` that :class:`~.devices.Device` records."""

from __future__ import annotations

from collections.abc import Sequence
from types import ModuleType
from typing import Protocol, TypedDict

from backend_opencl.runtime.dispatch import CL_DEVICE_SUB_GROUP_SIZES_INTEL, device_size_array

_VECTOR_TYPES = ("char", "short", "int", "long", "half", "float", "double")
_SVM_COARSE, _SVM_FINE = 1, 2  # CL_DEVICE_SVM_COARSE_GRAIN_BUFFER, ..._FINE_GRAIN_BUFFER


class ClDevice(Protocol):
    """The properties of a ``pyopencl.Device`` read here (the optional ones through
    :func:`_get`); pyopencl is imported only under ``runtime/opencl/``."""

    @property
    def extensions(self) -> str:
        """The extension names, space-separated."""

    @property
    def type(self) -> int:
        """The ``CL_DEVICE_TYPE`` bits."""

    @property
    def max_work_group_size(self) -> int:
        """The most work-items of a work-group."""

    @property
    def max_work_item_sizes(self) -> Sequence[int]:
        """The most work-items in each dimension."""

    @property
    def local_mem_size(self) -> int:
        """Local memory in bytes."""

    @property
    def int_ptr(self) -> int:
        """The ``cl_device_id`` as an integer (for ICD dispatch queries)."""


class DeviceFacts(TypedDict):
    """The facts :func:`device_facts` reads (keyword arguments of :class:`~.devices.Device`)."""

    kind: str
    max_work_group_size: int
    max_work_item_sizes: tuple[int, ...]
    local_mem_size: int
    has_fp64: bool
    has_svm: bool
    has_svm_fine_grain: bool
    subgroup_sizes: tuple[int, ...]
    preferred_vector_width: dict[str, int]
    extensions: frozenset[str]


def device_facts(cl: ModuleType, d: ClDevice) -> DeviceFacts:
    """Keyword arguments of :class:`~.devices.Device` read from the pyopencl device ``d``."""
    extensions = frozenset(d.extensions.split())
    svm = _get(d, "svm_capabilities", 0)
    return {
        "kind": _kind(cl, d.type),
        "max_work_group_size": int(d.max_work_group_size),
        "max_work_item_sizes": tuple(int(n) for n in d.max_work_item_sizes),
        "local_mem_size": int(d.local_mem_size),
        "has_fp64": "cl_khr_fp64" in extensions or bool(_get(d, "double_fp_config", 0)),
        "has_svm": bool(svm & (_SVM_COARSE | _SVM_FINE)),
        "has_svm_fine_grain": bool(svm & _SVM_FINE),
        "subgroup_sizes": _subgroup_sizes(d, extensions),
        "preferred_vector_width": {
            t: int(_get(d, f"preferred_vector_width_{t}", 0)) for t in _VECTOR_TYPES
        },
        "extensions": extensions,
    }


def _kind(cl: ModuleType, bits: int) -> str:
    if bits & cl.device_type.GPU:
        return "gpu"
    if bits & cl.device_type.CPU:
        return "cpu"
    return "accelerator"


def _subgroup_sizes(d: ClDevice, extensions: frozenset[str]) -> tuple[int, ...]:
    if "cl_intel_subgroups" in extensions:
        return device_size_array(d.int_ptr, CL_DEVICE_SUB_GROUP_SIZES_INTEL)
    if "cl_khr_subgroups" not in extensions:
        return ()
    for attr in ("warp_size_nv", "wavefront_width_amd"):
        size = _get(d, attr, 0)
        if size:
            return (int(size),)
    return ()


def _get(d: ClDevice, attr: str, default: int) -> int:
    """An optional integer device property (``default`` when the driver does not answer)."""
    try:
        return getattr(d, attr)
    except Exception:  # pyopencl raises LogicError / AttributeError for unknown properties
        return default
