"""tlc's Python entry points under the distribution's name.

``tlc.jax.jit(f)`` runs a JAX function with tlc (:mod:`backend_opencl.api.jax.bridge`);
``tlc.__version__`` is the installed version.  The compiler itself lives in ``frontend``,
``tensorlang`` and ``backend_opencl``; this package only re-exports.
"""

from __future__ import annotations

from backend_opencl.tools.cli import version

__version__ = version()
"""The installed distribution's version (``tlc --version``)."""

__all__ = ["__version__"]
