"""Every conformance file parses, verifies and round-trips through the printer."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

import frontend


def _load_corpus():  # the tests are not a package (pytest --import-mode=importlib)
    path = Path(__file__).parent / "corpus.py"
    spec = importlib.util.spec_from_file_location("frontend_test_corpus", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


_corpus = _load_corpus()
ROOT, chunks, files, is_foreign = _corpus.ROOT, _corpus.chunks, _corpus.files, _corpus.is_foreign
signature = _corpus.signature

pytestmark = pytest.mark.skipif(not ROOT.exists(), reason="conformance corpus not present")


def test_whole_corpus_parses_verifies_and_round_trips(
        record_property: Callable[[str, object], None]) -> None:
    """Walk all files (interpret split into chunks); report counts; no failures allowed."""
    total = foreign = ok = 0
    failures: list[str] = []
    for path in files():
        for name, text in chunks(path):
            total += 1
            if is_foreign(text):
                foreign += 1
                continue
            try:
                module = frontend.parse(text, name)
                printed = str(module)
                reparsed = frontend.parse(printed, name + ".printed")
            except Exception as err:  # noqa: BLE001 - collect every failure for the report
                failures.append(f"{name}: {str(err).splitlines()[0]}")
                continue
            if signature(reparsed) != signature(module) or str(reparsed) != printed:
                failures.append(f"{name}: print -> parse does not give the same IR")
                continue
            ok += 1
    record_property("conformance_modules_ok", ok)
    record_property("conformance_modules_total", total)
    print(f"\nconformance: {ok} of {total} modules parse, verify and round-trip; "
          f"{foreign} use foreign dialects")
    assert not failures, "\n".join(failures[:20])
    assert ok > 2700


def test_foreign_dialect_chunks_are_rejected_with_a_diagnostic() -> None:
    """Chunks using interpreter.* ops are refused with a located message."""
    for path in files():
        for name, text in chunks(path):
            if "interpreter.run_parallel" in text:
                with pytest.raises(frontend.CompileError) as err:
                    frontend.parse(text, name)
                assert "unknown operation 'interpreter." in str(err.value)
                return
    pytest.skip("no interpreter chunk found")
