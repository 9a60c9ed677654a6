"""The pass manager: pass base class, pipeline text parsing and running with verification.

A pipeline is written ``a,b{key=value,other=1}``: pass names from the registry, each
with optional options that become the pass dataclass's fields.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import ClassVar

from tensorlang.diagnostics import TlcError
from tensorlang.ir.core import Program


@dataclass(frozen=True)
class Pass:
    """A program transformation; dataclass fields are its options."""

    name: ClassVar[str] = ""

    def run(self, program: Program) -> None:
        """Transform ``program`` in place."""
        raise NotImplementedError


_ITEM = re.compile(r"\s*([A-Za-z0-9_\-]+)\s*(?:\{([^}]*)\})?\s*(?:,|$)")


def parse_pipeline(spec: str, registry: dict[str, type[Pass]]) -> list[Pass]:
    """Instantiate the passes named in ``spec``."""
    passes, pos = [], 0
    spec = spec.strip()
    while pos < len(spec):
        match = _ITEM.match(spec, pos)
        if match is None or match.end() == pos:
            raise TlcError(f"error: cannot parse pass pipeline at {spec[pos:]!r}")
        passes.append(_make(match.group(1), match.group(2) or "", registry))
        pos = match.end()
    return passes


def _make(name: str, options: str, registry: dict[str, type[Pass]]) -> Pass:
    cls = registry.get(name)
    if cls is None:
        known = ", ".join(sorted(registry))
        raise TlcError(f"error: unknown pass {name!r} (known passes: {known})")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    kwargs: dict[str, object] = {}
    for item in filter(None, (o.strip() for o in options.split(","))):
        key, _, value = item.partition("=")
        key = key.strip()
        if key not in fields:
            raise TlcError(f"error: pass {name!r} has no option {key!r}")
        kwargs[key] = _convert(value.strip(), fields[key].type)
    return cls(**kwargs)


def _convert(text: str, annotation: object) -> object:
    kind = str(annotation)
    if "bool" in kind:
        return text.lower() in ("1", "true", "yes", "on", "")
    if "int" in kind:
        return int(text)
    return text


def run_passes(program: Program, passes: list[Pass], verify_each: bool) -> None:
    """Run ``passes`` in order, verifying before and after each when ``verify_each``."""
    from tensorlang import verify_program

    if verify_each:
        verify_program(program)
    for p in passes:
        p.run(program)
        if verify_each:
            verify_program(program)
