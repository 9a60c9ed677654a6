"""Benchmark: parse (and separately verify and print) the 2,325 StableHLO testdata files.

Run ``.venv/bin/python benchmarks/parse_stablehlo.py``; prints the time on one core.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / ".." / "shared" / "conformance" / "stablehlo"


def main() -> int:
    """Time parse_unverified, parse (with verification) and printing over testdata."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    import frontend

    files = sorted((ROOT / "testdata").glob("*.mlir"))
    texts = [(str(p), p.read_text()) for p in files]
    size = sum(len(t) for _, t in texts)
    t0 = time.perf_counter()
    for name, text in texts:
        frontend.parse_unverified(text, name)
    t1 = time.perf_counter()
    modules = [frontend.parse(text, name) for name, text in texts]
    t2 = time.perf_counter()
    for m in modules:
        str(m)
    t3 = time.perf_counter()
    print(f"{len(texts)} files, {size / 1e6:.2f} MB")
    print(f"parse:           {t1 - t0:6.2f} s  ({size / 1e6 / (t1 - t0):.2f} MB/s)")
    print(f"parse + verify:  {t2 - t1:6.2f} s")
    print(f"print:           {t3 - t2:6.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
