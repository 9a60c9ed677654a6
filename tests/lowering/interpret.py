"""Run a file of the StableHLO interpret suite: every function's check.* ops become
results (frontend.lower.checks) that are compared here with their expected values."""

from __future__ import annotations

import numpy as np

import frontend
from backend_opencl.driver import compile_lowered
from frontend.lower import lower_function


def run_file(text: str, filename: str) -> dict[str, str | None]:
    """Function name -> None when all its checks pass, else the reason."""
    module = frontend.parse(text, filename=filename)
    outcome: dict[str, str | None] = {}
    for part in module.parts or [module]:
        for func in part.funcs:
            if func.body is None or func.visibility == "private" or func.args:
                continue
            name = func.name.strip('"')
            try:
                outcome[name] = _run_func(text, filename, part, name)
            except Exception as err:  # a failure of this function, with its reason
                outcome[name] = f"{type(err).__name__}: {str(err).splitlines()[0][:200]}"
    return outcome


def _run_func(text: str, filename: str, part: object, name: str) -> str | None:
    lowered = lower_function(part, name)  # type: ignore[arg-type]
    exe = compile_lowered(lowered)
    got = exe()[len(lowered.func.result_types):]
    i = 0
    for i, check in enumerate(lowered.checks):
        if check.kind == "value":  # type: ignore[attr-defined]
            continue
        want = check.expected if check.expected is not None else got[i + 1]  # type: ignore
        why = compare(check.kind, got[i], np.asarray(want), check.tolerance)  # type: ignore
        if why:
            return f"check {i}: {why}"
    return None


def compare(kind: str, got: np.ndarray, want: np.ndarray, tol: float | None) -> str | None:
    """None when ``got`` matches ``want`` under the check ``kind``."""
    if got.shape != want.shape:
        return f"shape {got.shape} != {want.shape}"
    if kind == "close" and got.dtype.kind == "f" and got.dtype == want.dtype:
        return _ulps(got, want, 3 if tol is None else int(tol))
    wide = np.complex128 if np.iscomplexobj(got) or np.iscomplexobj(want) else np.float64
    g, w = got.astype(wide), want.astype(wide)
    with np.errstate(invalid="ignore", over="ignore"):
        return _compare(kind, g, w, tol)


def _compare(kind: str, g: np.ndarray, w: np.ndarray, tol: float | None) -> str | None:
    nan = np.isnan(g) & np.isnan(w)
    if kind == "eq":
        bad = ~((g == w) | nan)
    else:
        limit = tol if tol is not None else 1e-4
        scale = 1.0 if kind == "almost_eq" else np.maximum(1.0, np.abs(w))
        bad = ~((np.abs(g - w) <= limit * scale) | nan | (g == w))
    return None if not bad.any() else f"{int(bad.sum())} of {bad.size} elements differ"


def _ulps(got: np.ndarray, want: np.ndarray, limit: int) -> str | None:
    """Elements further apart than ``limit`` units in the last place."""
    bits = {2: np.int16, 4: np.int32, 8: np.int64}[got.dtype.itemsize]
    g, w = (np.ascontiguousarray(a).view(bits).astype(np.int64) for a in (got, want))
    top = np.int64(1) << (got.dtype.itemsize * 8 - 1)
    g, w = (np.where(a < 0, -(a & (top - 1)), a) for a in (g, w))
    both_nan = np.isnan(got.astype(np.float64)) & np.isnan(want.astype(np.float64))
    bad = (np.abs(g - w) > limit) & ~both_nan
    return None if not bad.any() else f"{int(bad.sum())} elements more than {limit} ULP apart"
