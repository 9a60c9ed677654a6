"""Results that stay on the device: :class:`DeviceArray`.

A call in asynchronous mode (:meth:`backend_opencl.exec.executable.Executable.dispatch`,
``tlc.jax.jit(f, device_results=True)``) enqueues its commands and returns at once: each result is a
``DeviceArray`` over the buffer the kernels write, with the event of the call's last
command.  Reading it (``np.asarray``, ``__array__``, ``__dlpack__``, ``item``,
``tolist``, indexing) waits for that event and copies the elements to the host once;
``block_until_ready()`` only waits.  Passed to the next call of an executable on the same
OpenCL context, it is bound as it stands (the queue is in order, so its commands run
before the reads of the next call): a chain of calls never round-trips through numpy.

A result in memory of a prepared frame (:mod:`backend_opencl.runtime.opencl.frames`) holds a
:class:`FrameLease`: the frame goes back to its executable only once every result over
its memory has been read or dropped, so no later call overwrites a result that is still
in use.  A ``DeviceArray`` is immutable, as jax's arrays are; several threads may read
one.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pyopencl as cl
from numpy.typing import DTypeLike

from backend_opencl.runtime.opencl import buffers, launch

_LOCKS = threading.Lock()
"""Held while an array makes its read lock."""

DLPACK_CPU = 1
"""DLPack's device type of host memory (``kDLCPU``): a read result lives there."""


class FrameLease:
    """Holds a frame off its executable's free list while results over its memory live:
    ``give(frame)`` (the frame's return) runs once the last holder drops the lease."""

    __slots__ = ("_give", "_frame")

    def __init__(self, give: Callable[[Any], None], frame: object) -> None:
        self._give: Callable[[Any], None] | None = give
        self._frame = frame

    def __del__(self) -> None:
        give, self._give = self._give, None
        if give is not None:
            try:
                give(self._frame)
            except Exception:  # interpreter shutdown: the frames may be gone already
                pass


class DeviceArray:
    """A result of a tlc call that stays on the device until read (see the module
    docstring).  ``shape``, ``dtype``, ``ndim``, ``size`` and ``nbytes`` never wait."""

    __array_priority__ = 100  # numpy defers binary operators to ours
    __slots__ = ("shape", "dtype", "storage", "_buffer", "_event", "_queue", "_spin",
                 "_lease", "_submit", "_host", "_lock", "__weakref__")

    def __init__(self, buffer: buffers.PlanMemory | None, shape: tuple[int, ...],
                 dtype: np.dtype, storage: np.dtype, event: cl.Event | None = None,
                 queue: cl.CommandQueue | None = None,
                 spin: launch.Spin | None = None, lease: FrameLease | None = None,
                 submit: Callable[[], None] | None = None) -> None:
        """``buffer``: the flat device or host array (:class:`buffers.HostArray`) of
        ``storage`` dtype holding the elements from its start; ``event``: the command
        after which it holds them (None: it does); ``lease``: kept while the buffer is;
        ``submit``: called before waiting for ``event`` (a held queue's ``open``,
        :mod:`.held`)."""
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        self.storage = np.dtype(storage)
        """The dtype of the elements on the device (the dtype a kernel parameter binds)."""
        self._buffer = buffer
        self._event = event
        self._queue = queue
        self._spin = spin
        self._lease = lease
        self._submit = submit
        self._host: np.ndarray | None = None
        self._lock: threading.Lock | None = None  # made by the first read (calls are hot)

    @classmethod
    def of_host(cls, host: np.ndarray) -> DeviceArray:
        """A result that is already in host memory (a synchronous executor's)."""
        arr = cls(None, host.shape, host.dtype, host.dtype)
        arr._host = host
        host.flags.writeable = False
        return arr

    # -- what the next call binds -------------------------------------------------------

    @property
    def buffer(self) -> buffers.PlanMemory | None:
        """The device buffer while the elements are only on the device (None once read:
        then :meth:`host` has them)."""
        return self._buffer

    def borrow(self, queue: cl.CommandQueue | None = None
               ) -> tuple[buffers.PlanMemory, FrameLease | None] | None:
        """The device buffer while the elements are only there (and on ``queue``, when
        given), with the lease that keeps a frame from reusing it: a call that binds the
        buffer holds both until its commands have run, as a read in another thread may
        drop the array's own hold meanwhile.  None once read (or on another queue)."""
        if queue is not None and self._queue is not queue:
            return None
        lease = self._lease  # first: a read drops the buffer, then the lease
        buffer = self._buffer
        return None if buffer is None else (buffer, lease)

    @property
    def context(self) -> cl.Context | None:
        """The OpenCL context of the buffer (None once read)."""
        buffer = self._buffer
        if buffer is None:
            return None
        return getattr(buffer, "context", None) or buffers.memory_of(buffer).context

    def host(self) -> np.ndarray:
        """The elements in host memory, read-only (waits for the device the first time)."""
        host = self._host
        if host is None:
            with self._read_lock():
                host = self._host
                if host is None:
                    host = self._host = self._read()
        return host

    def _read_lock(self) -> threading.Lock:
        """The lock that makes concurrent first reads read once."""
        lock = self._lock
        if lock is None:
            with _LOCKS:
                lock = self._lock
                if lock is None:
                    lock = self._lock = threading.Lock()
        return lock

    def _read(self) -> np.ndarray:
        """Wait for the elements and copy them out of the device buffer, then let the
        buffer (and its frame) go."""
        buffer, size = self._buffer, self.size
        assert buffer is not None  # an array of host memory has its elements already
        self.block_until_ready()
        if isinstance(buffer, buffers.HostArray):
            flat = buffer.host[:size].copy()
        else:
            flat = buffers.download(buffer, size)
        host = flat.reshape(self.shape).astype(self.dtype, copy=False)
        host.flags.writeable = False
        self._buffer = None
        self._lease = None  # after the buffer (see borrow)
        return host

    # -- waiting --------------------------------------------------------------------------

    def block_until_ready(self) -> DeviceArray:
        """Wait until the device has computed the elements; return this array."""
        event = self._event
        if event is not None:
            assert self._queue is not None  # an array with an event has its queue
            if self._submit is not None:
                self._submit()
            launch.finish(self._queue, event, self._spin)
            self._event = None
        return self

    def is_ready(self) -> bool:
        """Whether the elements are computed (never waits)."""
        event = self._event
        if event is None:
            return True
        if self._submit is not None:
            self._submit()  # polling must see progress
        return launch.complete(event)

    # -- numpy, DLPack and Python conversions ---------------------------------------------

    def __array__(self, dtype: DTypeLike | None = None, copy: bool | None = None) -> np.ndarray:
        host = self.host()
        if dtype is not None and np.dtype(dtype) != host.dtype:
            return host.astype(dtype)
        return host.copy() if copy else host

    def __dlpack__(self, *, stream: None = None, max_version: tuple[int, int] | None = None,
                   dl_device: tuple[int, int] | None = None, copy: bool | None = None
                   ) -> object:
        """The elements as a DLPack capsule of host memory (read first)."""
        kwargs = {} if max_version is None else {"max_version": max_version}
        return self.host().__dlpack__(stream=stream, dl_device=dl_device, copy=copy,
                                      **kwargs)

    def __dlpack_device__(self) -> tuple[int, int]:
        return DLPACK_CPU, 0

    @property
    def ndim(self) -> int:
        """The number of dimensions."""
        return len(self.shape)

    @property
    def size(self) -> int:
        """The number of elements."""
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def nbytes(self) -> int:
        """The size of the elements in bytes."""
        return self.size * self.dtype.itemsize

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d tlc array")
        return self.shape[0]

    def __getitem__(self, index: Any) -> object:  # Any: whatever numpy's indexing takes
        return self.host()[index]

    def __iter__(self) -> Iterator[object]:
        return iter(self.host())

    def item(self) -> object:
        """The only element as a Python scalar."""
        return self.host().item()

    def tolist(self) -> object:
        """The elements as nested Python lists."""
        return self.host().tolist()

    def __float__(self) -> float:
        return float(self.host())

    def __int__(self) -> int:
        return int(self.host())

    def __bool__(self) -> bool:
        return bool(self.host())

    def __repr__(self) -> str:
        if self._host is None and not self.is_ready():
            return f"tlc.DeviceArray(shape={self.shape}, dtype={self.dtype.name}, pending)"
        return f"tlc.DeviceArray({np.array2string(self.host(), separator=', ')}, " \
               f"dtype={self.dtype.name})"


def _binary(name: str) -> Callable[[DeviceArray, object], object]:
    """Operator ``name`` on the host elements (as numpy computes it)."""
    def op(self: DeviceArray, other: object) -> object:
        if isinstance(other, DeviceArray):
            other = other.host()
        return getattr(self.host(), name)(other)
    op.__name__ = name
    op.__doc__ = f"``{name}`` of the elements read back (a numpy result)."
    return op


for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and",
              "or", "xor", "lt", "le", "gt", "ge", "eq", "ne"):
    for _dunder in (f"__{_name}__", f"__r{_name}__"):
        if hasattr(np.ndarray, _dunder):
            setattr(DeviceArray, _dunder, _binary(_dunder))
for _unary in ("__neg__", "__pos__", "__abs__", "__invert__"):
    setattr(DeviceArray, _unary, (lambda n: lambda self: getattr(self.host(), n)())(_unary))
setattr(DeviceArray, "__hash__", None)  # noqa: B010 (__eq__ is element-wise: unhashable, as numpy)
