"""Moving bytes between processes: MPI (mpi4py) for several, a local stand-in for one.

mpi4py is imported only here.  Arrays travel as raw bytes (any dtype, bfloat16 and
bool included); a sub-communicator per process group is made once, with
``MPI_Comm_create_group`` (collective over the group's members only, so processes
running other programs never have to take part).
"""

from __future__ import annotations

import os
from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np

from tensorlang.diagnostics import TlcError

if TYPE_CHECKING:
    from mpi4py import MPI

MPI_ENV = ("PMI_SIZE", "PMI_RANK", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS")
"""Environment variables an MPI launcher (MPICH's hydra, Open MPI) sets in its ranks."""

PERMUTE_TAG = 1
"""The MPI tag of ``collective_permute`` messages (send / recv use 2 + channel id)."""


def under_mpi_launcher() -> bool:
    """True when this process was started by ``mpirun`` / ``mpiexec``."""
    return any(name in os.environ for name in MPI_ENV)


def mpi() -> ModuleType:
    """The ``mpi4py.MPI`` module (initialises MPI); a TlcError when it is missing."""
    try:
        from mpi4py import MPI
    except ImportError as err:
        raise TlcError("error: running on several processes needs mpi4py and an MPI "
                       "library: pip install 'tlc[mpi]' (mpi4py and MPICH from PyPI) "
                       f"({err})") from None
    return MPI


def as_bytes(x: np.ndarray) -> np.ndarray:
    """The bytes of ``x`` (C order) as a flat uint8 array."""
    return np.ascontiguousarray(x).reshape(-1).view(np.uint8)


def from_bytes(buf: np.ndarray, dtype: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
    """The array of ``dtype`` and ``shape`` in ``buf``."""
    return buf.view(dtype).reshape(shape)


class Transport:
    """Collective and point-to-point transfers; ``group`` is a list of world ranks, and
    this process is in it."""

    rank: int
    size: int
    bytes_moved: int = 0

    def allgather(self, group: list[int], x: np.ndarray) -> np.ndarray:
        """Every member's ``x`` stacked in group order: shape ``(len(group),) + x.shape``."""
        raise NotImplementedError

    def allreduce(self, group: list[int], x: np.ndarray, op: str) -> np.ndarray | None:
        """MPI's reduction ``op`` ('SUM', 'PROD', 'MAX', ...) of ``x`` over the group, or
        None when MPI cannot reduce this dtype (the caller gathers and reduces itself)."""
        return None

    def alltoall(self, group: list[int], pieces: np.ndarray) -> np.ndarray:
        """``pieces[j]`` goes to member j; the result's row i came from member i."""
        raise NotImplementedError

    def bcast(self, group: list[int], x: np.ndarray, root: int = 0) -> np.ndarray:
        """Member ``root``'s ``x`` on every member."""
        raise NotImplementedError

    def exchange(self, sends: list[tuple[int, np.ndarray]],
                 recvs: list[tuple[int | None, np.ndarray]], tag: int,
                 wait_sends: bool = True) -> None:
        """Send each ``(rank, array)`` and receive into each ``(rank, buffer)`` (rank None:
        any sender) on ``tag``; the sends complete now or at :meth:`finish`."""
        raise NotImplementedError

    def finish(self) -> None:
        """Wait for sends still in flight."""

    def abort(self, code: int = 1) -> None:
        """Stop every process (a failing rank must not leave the others waiting)."""
        raise SystemExit(code)


class LocalTransport(Transport):
    """One process: every group is ``[0]``; messages to oneself wait in a mailbox."""

    def __init__(self) -> None:
        self.rank, self.size = 0, 1
        self.mailbox: dict[int, list[np.ndarray]] = {}

    def allgather(self, group: list[int], x: np.ndarray) -> np.ndarray:
        """Just ``x`` (with a leading axis of 1)."""
        return np.ascontiguousarray(x)[None]

    def alltoall(self, group: list[int], pieces: np.ndarray) -> np.ndarray:
        """The pieces themselves."""
        return pieces

    def bcast(self, group: list[int], x: np.ndarray, root: int = 0) -> np.ndarray:
        """``x`` itself."""
        return x

    def exchange(self, sends: list[tuple[int, np.ndarray]],
                 recvs: list[tuple[int | None, np.ndarray]], tag: int,
                 wait_sends: bool = True) -> None:
        """Messages to this process only."""
        for _, x in sends:
            self.mailbox.setdefault(tag, []).append(np.array(x, copy=True))
        for _, buf in recvs:
            queue = self.mailbox.get(tag)
            if not queue:
                raise TlcError(f"error: a receive on tag {tag} has no matching send (one "
                               "process)")
            buf[...] = queue.pop(0).reshape(buf.shape)


_MPI_DTYPES = frozenset("f4 f8 i1 i2 i4 i8 u1 u2 u4 u8 c8 c16".split())


class MpiTransport(Transport):
    """Transfers over an MPI communicator (``MPI.COMM_WORLD`` by default)."""

    def __init__(self, comm: MPI.Intracomm | None = None) -> None:
        self.MPI = mpi()
        self.world: MPI.Intracomm = comm if comm is not None else self.MPI.COMM_WORLD
        self.rank, self.size = self.world.Get_rank(), self.world.Get_size()
        self.comms: dict[tuple[int, ...], MPI.Intracomm] = {}
        self.pending: list[tuple[MPI.Request, np.ndarray]] = []

    def first(self, n: int) -> MpiTransport:
        """A transport over ranks ``0..n-1`` of this one (collective over those ranks;
        this one itself when ``n`` is its size)."""
        if n == self.size:
            return self
        sub = MpiTransport(self._comm(list(range(n))))
        sub.bytes_moved = 0
        return sub

    def _comm(self, group: list[int]) -> MPI.Intracomm:
        key = tuple(group)
        comm = self.comms.get(key)
        if comm is None:
            members = self.world.Get_group().Incl(list(group))
            comm = self.comms[key] = self.world.Create_group(members)
            members.Free()
        return comm

    def allgather(self, group: list[int], x: np.ndarray) -> np.ndarray:
        """``MPI_Allgather`` of the bytes of ``x``."""
        send = as_bytes(x)
        recv = np.empty(len(group) * send.size, dtype=np.uint8)
        if send.size:
            self._comm(group).Allgather(send, recv)
        self.bytes_moved += recv.size
        return from_bytes(recv, x.dtype, (len(group),) + x.shape)

    def allreduce(self, group: list[int], x: np.ndarray, op: str) -> np.ndarray | None:
        """``MPI_Allreduce`` where MPI knows the dtype."""
        if x.dtype.str[1:] not in _MPI_DTYPES:
            return None
        x = np.ascontiguousarray(x)
        out = np.empty_like(x)
        if x.size:
            self._comm(group).Allreduce(x, out, op=getattr(self.MPI, op))
        self.bytes_moved += x.nbytes
        return out

    def alltoall(self, group: list[int], pieces: np.ndarray) -> np.ndarray:
        """``MPI_Alltoall`` of equal pieces."""
        send = as_bytes(pieces)
        recv = np.empty_like(send)
        if send.size:
            self._comm(group).Alltoall(send, recv)
        self.bytes_moved += send.size
        return from_bytes(recv, pieces.dtype, pieces.shape)

    def bcast(self, group: list[int], x: np.ndarray, root: int = 0) -> np.ndarray:
        """``MPI_Bcast`` from member ``root``."""
        buf = np.array(as_bytes(x), copy=True)
        if buf.size:
            self._comm(group).Bcast(buf, root=root)
        self.bytes_moved += buf.size
        return from_bytes(buf, x.dtype, x.shape)

    def exchange(self, sends: list[tuple[int, np.ndarray]],
                 recvs: list[tuple[int | None, np.ndarray]], tag: int,
                 wait_sends: bool = True) -> None:
        """Non-blocking sends and receives on the world communicator, then a wait."""
        any_source = self.MPI.ANY_SOURCE
        reqs = [self.world.Irecv(as_bytes(buf), source=any_source if r is None else r,
                                 tag=tag) for r, buf in recvs]
        send_reqs = []
        for r, x in sends:
            data = as_bytes(x).copy()
            send_reqs.append((self.world.Isend(data, dest=r, tag=tag), data))
            self.bytes_moved += data.size
        self.MPI.Request.Waitall(reqs)
        if wait_sends:
            self.MPI.Request.Waitall([q for q, _ in send_reqs])
        else:
            self.pending += send_reqs

    def finish(self) -> None:
        """Wait for the sends of ``send`` ops."""
        self.MPI.Request.Waitall([q for q, _ in self.pending])
        self.pending.clear()

    def abort(self, code: int = 1) -> None:
        """``MPI_Abort`` on the world communicator."""
        self.world.Abort(code)
