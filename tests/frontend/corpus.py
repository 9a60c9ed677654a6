"""The StableHLO conformance corpus: files and ``// -----`` chunks, with exclusions."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / ".." / "shared" / "conformance" / "stablehlo"
SPLIT = re.compile(r"^// -----.*$", re.MULTILINE)
# Chunks left out of the whole-corpus walk: none since issue 14 (the reference
# interpreter's own ops and stablehlo.collective_reduce are parsed and verified).
FOREIGN: tuple[str, ...] = ()
# Files that break a spec rule (the upstream verifier does not check it); they must be
# rejected with this message, and still parse and round-trip unverified.
OUT_OF_SPEC = {
    "conv_general_dilated_1d_stride_2_even_dynamic.mlir":
        "'stablehlo.dynamic_conv' (C2): window_strides must have 1 entries, got 2",
    "conv_general_dilated_1d_stride_2_odd_dynamic.mlir":
        "'stablehlo.dynamic_conv' (C2): window_strides must have 1 entries, got 2",
}


def files() -> list[Path]:
    """Every .mlir file under testdata, interpret and dynamic-parse-only."""
    out: list[Path] = []
    for sub in ("testdata", "interpret", "dynamic-parse-only"):
        out += sorted((ROOT / sub).rglob("*.mlir"))
    return out


def chunks(path: Path) -> list[tuple[str, str]]:
    """``(name, text)`` per split chunk; earlier lines are blanked so line numbers hold."""
    text = path.read_text()
    marks = [m.start() for m in SPLIT.finditer(text)]
    if not marks:
        return [(str(path), text)]
    bounds = [0] + [text.index("\n", m) + 1 for m in marks] + [len(text)]
    out = []
    for i in range(len(bounds) - 1):
        a, b = bounds[i], bounds[i + 1]
        body = text[a:b]
        body = SPLIT.sub("", body)
        out.append((f"{path}#{i}", "\n" * text.count("\n", 0, a) + body))
    return out


def is_foreign(text: str) -> bool:
    """True when a chunk uses ops outside StableHLO, CHLO, func and check."""
    return any(f in text for f in FOREIGN)


def signature(module: object) -> tuple:
    """Everything the IR holds, as nested tuples (values by definition order, not name)."""
    ids: dict[int, int] = {}

    def val(v: object) -> int:
        return ids.setdefault(id(v), len(ids))

    def region(r: object) -> tuple:
        out = []
        for b in r.blocks:  # type: ignore[attr-defined]
            args = tuple((val(a), str(a.type)) for a in b.args)
            out.append((args, tuple(op(o) for o in b.ops)))
        return tuple(out)

    def op(o: object) -> tuple:
        operands = tuple(val(v) for v in o.operands)  # type: ignore[attr-defined]
        regions = tuple(region(r) for r in o.regions)  # type: ignore[attr-defined]
        results = tuple((val(v), str(v.type)) for v in o.results)  # type: ignore[attr-defined]
        attrs = tuple(sorted(o.attrs.items()))  # type: ignore[attr-defined]
        return (o.name, operands, attrs, regions, results)  # type: ignore[attr-defined]

    def func(f: object) -> tuple:
        body = region(f.body) if f.body else None  # type: ignore[attr-defined]
        return (f.name, f.visibility, tuple(map(str, f.arg_types)),  # type: ignore[attr-defined]
                f.arg_attrs, tuple(map(str, f.result_types)), f.result_attrs,  # type: ignore[attr-defined]
                tuple(sorted(f.attrs.items())), body,  # type: ignore[attr-defined]
                tuple(map(str, f.arg_locs)), str(f.src_loc))  # type: ignore[attr-defined]

    parts = module.parts or [module]  # type: ignore[attr-defined]
    return tuple((p.name, tuple(sorted(p.attrs.items())), tuple(func(f) for f in p.funcs),
                  tuple(map(str, p.decls)), str(p.src_loc))
                 for p in parts)
