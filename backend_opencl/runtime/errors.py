"""Errors of the OpenCL runtime that a user can cause (and fix)."""

from __future__ import annotations

from tensorlang.diagnostics import TlcError


class DeviceError(TlcError):
    """No OpenCL device could be used: none installed, or a ``--device`` spec matched nothing."""
