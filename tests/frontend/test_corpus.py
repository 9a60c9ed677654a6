"""Every conformance file parses, verifies and round-trips through the printer."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

import frontend
from tests.frontend import corpus

ROOT, chunks, files, is_foreign = corpus.ROOT, corpus.chunks, corpus.files, corpus.is_foreign
OUT_OF_SPEC = corpus.OUT_OF_SPEC
signature = corpus.signature

pytestmark = pytest.mark.skipif(not ROOT.exists(), reason="conformance corpus not present")


def test_whole_corpus_parses_verifies_and_round_trips(
        record_property: Callable[[str, object], None]) -> None:
    """Walk all files (interpret split into chunks); report counts; no failures allowed."""
    total = foreign = ok = rejected = 0
    failures: list[str] = []
    for path in files():
        for name, text in chunks(path):
            total += 1
            if is_foreign(text):
                foreign += 1
                continue
            if path.name in OUT_OF_SPEC:
                rejected += 1
                failures += _check_out_of_spec(name, text, OUT_OF_SPEC[path.name])
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
          f"{foreign} use foreign dialects; {rejected} break a spec rule")
    assert not failures, "\n".join(failures[:20])
    assert ok > 2700


def _check_out_of_spec(name: str, text: str, message: str) -> list[str]:
    """The module is rejected with ``message`` but parses and round-trips unverified."""
    try:
        frontend.parse(text, name)
    except frontend.CompileError as err:
        if message not in str(err):
            return [f"{name}: expected '{message}', got {str(err).splitlines()[0]}"]
    else:
        return [f"{name}: breaks a spec rule but was accepted"]
    module = frontend.parse_unverified(text, name)
    printed = str(module)
    if str(frontend.parse_unverified(printed, name)) != printed:
        return [f"{name}: print -> parse does not give the same text"]
    return []


def test_interpreter_chunks_parse_and_other_dialects_are_refused() -> None:
    """Chunks using interpreter.* ops parse and verify; an op of an unknown dialect is
    refused with a located message."""
    found = 0
    for path in files():
        for name, text in chunks(path):
            if "interpreter." in text:
                frontend.parse(text, name)
                found += 1
    if not found:
        pytest.skip("no interpreter chunk found")
    text = 'func.func @f() {\n  "mydialect.op"() : () -> ()\n  func.return\n}\n'
    with pytest.raises(frontend.CompileError) as err:
        frontend.parse(text, "x.mlir")
    first = str(err.value).splitlines()[0]
    assert re.match(r"x\.mlir:2:3: error: unknown operation 'mydialect\.op'", first), first
