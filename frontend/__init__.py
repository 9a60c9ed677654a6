"""StableHLO front end: parser, typed IR, verifier, printer and lowering to the tensor language.

Public API::

    module = frontend.parse(mlir_text, filename="m.mlir")   # verified StableHLO module
    print(module)                                            # canonical pretty StableHLO

A file split with ``// -----`` lines gives a module whose ``parts`` are the chunks.
"""

from __future__ import annotations

import re

from frontend.ir.core import Module
from frontend.syntax import printer as _printer  # noqa: F401  (str(module) prints with it)
from tensorlang.diagnostics import CompileError, Source

__all__ = ["parse", "parse_unverified", "Module", "CompileError"]

_SPLIT = re.compile(r"^// -----.*$", re.MULTILINE)


def parse(text: str, filename: str = "<string>") -> Module:
    """Parse and verify StableHLO text; raises :class:`CompileError` on any mistake."""
    from frontend.verify import verify_module

    module = parse_unverified(text, filename)
    for part in module.parts or [module]:
        verify_module(part)
    return module


def parse_unverified(text: str, filename: str = "<string>") -> Module:
    """Parse without running the verifier (syntax and SSA checks only)."""
    from frontend.syntax.parser import Parser

    source = Source(filename, text)
    bounds = [m.start() for m in _SPLIT.finditer(text)]
    if not bounds:
        return Parser(text, filename, source=source).parse_top()
    starts = [0] + [text.index("\n", b) + 1 if "\n" in text[b:] else len(text)
                    for b in bounds]
    stops = bounds + [len(text)]
    parts = [Parser(text, filename, a, b, source).parse_top()
             for a, b in zip(starts, stops, strict=True)]
    return Module(None, {}, [], parts[0].loc, parts=parts, explicit=False)
