"""Two questions pyopencl cannot answer, asked of a driver through its ICD dispatch table.

Every object an ICD loader hands out starts with a pointer to its driver's dispatch table
(``cl_icd_dispatch``, cl_khr_icd), whose entries are, in order, ``clGetPlatformIDs``,
``clGetPlatformInfo``, ``clGetDeviceIDs``, ``clGetDeviceInfo``, ...  From it we learn which
shared library implements a device (``dladdr``) and can query device properties that
pyopencl does not know (``CL_DEVICE_SUB_GROUP_SIZES_INTEL``).  Both are read-only.
"""

from __future__ import annotations

import ctypes
import os
import sys

CL_DEVICE_SUB_GROUP_SIZES_INTEL = 0x4108
_GET_DEVICE_INFO = 3  # index of clGetDeviceInfo in cl_icd_dispatch
_GetDeviceInfo = ctypes.CFUNCTYPE(
    ctypes.c_int32,
    ctypes.c_void_p,
    ctypes.c_uint32,
    ctypes.c_size_t,
    ctypes.c_void_p,
    ctypes.POINTER(ctypes.c_size_t),
)


def _entry(handle: int, index: int) -> int | None:
    """Entry ``index`` of the dispatch table of an OpenCL handle (None if unreadable)."""
    if not handle:
        return None
    table = ctypes.c_void_p.from_address(handle).value
    return (
        ctypes.c_void_p.from_address(table + index * ctypes.sizeof(ctypes.c_void_p)).value
        if table
        else None
    )


class _DlInfo(ctypes.Structure):
    _fields_ = [
        ("dli_fname", ctypes.c_char_p),
        ("dli_fbase", ctypes.c_void_p),
        ("dli_sname", ctypes.c_char_p),
        ("dli_saddr", ctypes.c_void_p),
    ]


def library_of(handle: int) -> str | None:
    """The shared library implementing an OpenCL platform or device handle, if known."""
    if sys.platform == "win32":
        return None
    try:
        func = _entry(handle, 0)
        libc = ctypes.CDLL(None)
        libc.dladdr.argtypes = [ctypes.c_void_p, ctypes.POINTER(_DlInfo)]
        info = _DlInfo()
        if not func or not libc.dladdr(func, ctypes.byref(info)) or not info.dli_fname:
            return None
        return os.path.realpath(info.dli_fname.decode(errors="replace"))
    except (OSError, AttributeError, ValueError):
        return None


def device_size_array(handle: int, param: int) -> tuple[int, ...]:
    """A ``size_t[]`` device property straight from the driver (() when it has none)."""
    func = _entry(handle, _GET_DEVICE_INFO)
    if not func:
        return ()
    get_info = _GetDeviceInfo(func)
    size = ctypes.c_size_t(0)
    if get_info(handle, param, 0, None, ctypes.byref(size)) != 0 or not size.value:
        return ()
    values = (ctypes.c_size_t * (size.value // ctypes.sizeof(ctypes.c_size_t)))()
    if get_info(handle, param, ctypes.sizeof(values), values, None) != 0:
        return ()
    return tuple(int(v) for v in values)
