"""What a kernel's launch requires, as plain data the host checks before it runs.

:mod:`tensorlang.schedule.launch` finds these with isl; they are kept here, apart from
it, because compiled modules carry them (in memory and in tlc's disk cache), and
loading a cached module must not import islpy.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Quantity:
    """A value the host knows at launch.

    ``kind``: ``size`` (mode ``mode`` of memref argument ``arg``), ``scalar`` (integer
    argument ``arg``), ``groups`` (``num_groups``), ``members`` (the member count of group
    argument ``arg``), ``group_id`` (every work-group id) or ``msize`` (mode ``mode`` of
    the member of group ``arg`` that work-group ``group_id`` loads).
    """

    kind: str
    arg: int = -1
    mode: int = -1


@dataclass(frozen=True)
class Form:
    """``sum(coefficient * quantity) + constant``, compared with 0 (``>= 0`` or ``== 0``)."""

    terms: tuple[tuple[Quantity, int], ...]
    constant: int
    equality: bool


@dataclass(frozen=True)
class LaunchCheck:
    """A launch is invalid when every form of one of ``violations`` holds.

    ``arg``/``mode``: the argument (and mode, -1 for none) the message names first;
    ``what``: the instruction and its source location.
    """

    arg: int
    mode: int
    what: str
    violations: tuple[tuple[Form, ...], ...]
    kind: str = "access"
    """``access`` (of a memref), ``member`` (a group's member index) or ``sizes``."""


@dataclass(frozen=True)
class GroupCount:
    """Where a launch's number of work-groups comes from when the caller omits it.

    ``modes``: the argument modes (``size``) and group member counts (``members``) that
    ``group_id`` indexes directly (``subview %D[:, %g]``, ``load %A[%g]``, ``load``/
    ``store`` at ``%g``): each needs one work-group per entry, so their sizes, when they
    agree, are the count.  ``uses_groups``: the kernel reads ``group_id`` or
    ``group_size`` at all (without, one work-group computes everything).
    """

    modes: tuple[Quantity, ...]
    uses_groups: bool
