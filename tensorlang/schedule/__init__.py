"""Polyhedral scheduling with islpy (the only package that imports islpy).

Iteration spaces become loops here: collectives and foreach loops are described as
parametric isl sets with access relations (:mod:`.domains`), tiled onto the work-group
with register blocks per work-item (:mod:`.tiling`), and turned into a small,
language-neutral loop tree (:mod:`.loops`) by isl's AST generator (:mod:`.astgen`).
Dependences between collectives (:mod:`.deps`) decide barriers and fusion, and
:mod:`.bounds` proves accesses in or out of bounds.
"""

from tensorlang.schedule.loops import Block, Call, For, If, Node

__all__ = ["Block", "Call", "For", "If", "Node"]
