"""Every tensor-language example of docs/language.md compiles, and together they show
every instruction of the op table.

The document's fenced blocks each name their language. ``tl`` blocks are whole programs:
each is parsed, verified and compiled for the default OpenCL device with
``backend_opencl.compile`` (passes, scheduling, OpenCL C, the device's build), and must
print back as a program that parses to the same text. ``tl-partial`` marks an excerpt
(a piece of a function, shown for its syntax) and ``tl-error`` a program the verifier
must reject; ``text``, ``abnf``, ``python`` and ``sh`` blocks are not tensor language.
A block without a language fails the test, so no example escapes the check.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import backend_opencl
import tensorlang
from tensorlang.diagnostics import CompileError
from tensorlang.ir.ops import OPS

DOC = Path(__file__).resolve().parents[2] / "docs" / "language.md"
FENCE = re.compile(r"^```([\w-]*)\n(.*?)^```", re.M | re.S)
KINDS = {"tl", "tl-partial", "tl-error", "text", "abnf", "python", "sh"}


def blocks(kind: str | None = None) -> list[str]:
    """The bodies of the fenced blocks of language ``kind`` (all, for None)."""
    found = FENCE.findall(DOC.read_text())
    return [body for lang, body in found if kind is None or lang == kind]


def test_every_block_names_a_known_language() -> None:
    langs = [lang for lang, _ in FENCE.findall(DOC.read_text())]
    assert langs, "no fenced blocks found"
    assert set(langs) <= KINDS, f"unmarked or unknown blocks: {set(langs) - KINDS}"


@pytest.mark.parametrize("index", range(len(blocks("tl"))))
def test_example_compiles(index: int) -> None:
    text = blocks("tl")[index]
    program = tensorlang.parse(text, filename=f"language.md example {index}")
    printed = str(program)
    assert str(tensorlang.parse(printed, filename="printed")) == printed
    module = backend_opencl.compile(program)
    for func in program.functions:
        assert hasattr(module, func.name), func.name


@pytest.mark.parametrize("index", range(len(blocks("tl-error"))))
def test_error_example_is_rejected(index: int) -> None:
    with pytest.raises(CompileError):
        tensorlang.parse(blocks("tl-error")[index], filename=f"error example {index}")


def _keyword(name: str) -> re.Pattern[str]:
    """How instruction ``name`` is spelled in a program."""
    if name == "foreach_nd":
        return re.compile(r"\bforeach \(")
    return re.compile(rf"(?<![\w.%@]){name}(?![\w])")


@pytest.mark.parametrize("name", sorted(OPS))
def test_every_instruction_has_a_compiled_example(name: str) -> None:
    assert any(_keyword(name).search(text) for text in blocks("tl")), \
        f"docs/language.md has no compiled example of {name}"


def test_every_instruction_has_a_section() -> None:
    heads = re.findall(r"^#{3,4} (.*)$", DOC.read_text(), re.M)
    named = {word for head in heads for word in re.findall(r"`(\w+)", head)}
    missing = {name for name in OPS if name not in named and name != "foreach_nd"}
    assert not missing, f"no section heading names {sorted(missing)}"


@pytest.mark.parametrize("index", range(len(blocks("python"))))
def test_python_example(index: int) -> None:
    exec(compile(blocks("python")[index], f"language.md python block {index}", "exec"), {})
