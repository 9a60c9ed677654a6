"""Each distinct kernel once: kernels equal up to the names of their values share one.

A lowered program often builds the same kernel many times over different buffers: the
steps of an unrolled RNN, the repeated blocks of a CNN.  Each kernel the builder finishes
is keyed by its text with the kernel's name blanked and every local name (parameters,
which are named after their buffers, and the values inside) renamed in order of first
appearance.  Two kernels with the same key are the same function up to a one-to-one
renaming, so their parameters correspond in order: the later one is dropped and its
launches call the first, with its own buffers as arguments (``DistinctKernels.aliases``,
applied to the finished plan by :func:`tensorlang.plan.kernels_renamed`, so a launch
made before its kernel was finished is renamed too).  Kernels keep the names they were
built with (``k<n>_<hint>``, ``n`` counting every kernel built), so a kernel's name does
not depend on whether others before it were merged.  Everything after lowering
(parsing, passes, isl scheduling, OpenCL C, the OpenCL build, PoCL's specialisation of
each kernel at its first launch) then sees each distinct kernel once.

Constants, shapes (memref sizes), element types, strides and work-group sizes are all in
the text, so kernels differing in any of them keep different keys.
"""

from __future__ import annotations

import re

LOCAL_ID = re.compile(r"%(?:[0-9]+|[A-Za-z][A-Za-z0-9_]*)")
"""A local name of the tensor language (the grammar's ``LOCAL_ID``)."""

_HEADER = re.compile(r"func @[A-Za-z0-9_.$]+")


def kernel_key(text: str) -> str:
    """The text of kernel ``text`` (one ``func``) with its name blanked and its local
    names renamed ``%0, %1, ...`` in order of first appearance: equal for kernels equal
    up to a one-to-one renaming."""
    names: dict[str, str] = {}
    body = _HEADER.sub("func @_", text, count=1)
    return LOCAL_ID.sub(lambda m: names.setdefault(m.group(0), f"%{len(names)}"), body)


class DistinctKernels:
    """The distinct kernels of a lowering, in the order they were first built."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        """The text of each distinct kernel."""
        self._names: dict[str, str] = {}  # key -> the name of the kernel with that key
        self.aliases: dict[str, str] = {}
        """The name of each dropped kernel -> the name of the equal kernel kept."""
        self.built = 0
        """How many kernels were offered (duplicates included)."""

    def __len__(self) -> int:
        return len(self.texts)

    def add(self, name: str, text: str) -> str:
        """Offer kernel ``name`` with ``text``: the name its launches must call, ``name``
        itself when it is new, else the name of the equal kernel built before."""
        self.built += 1
        key = kernel_key(text)
        first = self._names.get(key)
        if first is not None:
            self.aliases[name] = first
            return first
        self._names[key] = name
        self.texts.append(text)
        return name
