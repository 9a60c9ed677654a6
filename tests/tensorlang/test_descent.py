"""The recursive-descent reader builds lark's very tree, and never takes what lark rejects."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from lark import Token, Tree
from lark.exceptions import UnexpectedInput

from tensorlang.syntax import descent
from tensorlang.syntax.descent import NotRead, read_tree
from tensorlang.syntax.parser import _lark

ROOT = Path(__file__).resolve().parents[2]
CORPUS = sorted(p for p in ROOT.glob("**/*.tl") if ".venv" not in p.parts)
POSITIONS = ("line", "column", "start_pos", "end_line", "end_column", "end_pos")

EVERY_RULE = """\
; a comment
func @f() work_group_size(4, 1) subgroup_size(8) {
  %a, %b = for %i = 0, 4, 2 : i32 init(%x = 1.5, %y = -2) -> (f32, i64) {
    %s = arith.add %x, 0x1.8p1 : f32  ; trailing comment
    yield %s, %y : f32, i64
  }
  %n, %m = for %j = 0, 4 init() -> () { yield : }
  %c = if true -> () { yield : }
  if false { barrier.global.local } else { barrier }
  %z = constant [1.0, -inf] -> c64
  %w = constant nan : f64
  %q = complex %w, %w : c64
  parallel { %g = group_id }
  yield :
}
func @g(%x: memref<f32x4x?,strided<1,?>,local>, %y: group<memref<f32x4>, offset: 3>,
        %v: memref<f64x8x8,global>, %u: memref<f32,strided<>>, %k: index) {
  %z = subview %x[:, 1:%k, 2] : memref<f32x4x?,strided<1,?>,local>
  %e = expand %v[0 -> 2x%k x4] : memref<f64x8x8,global>
  %f = fuse %v[0, 1] : memref<f64x8x8,global>
  %s = size %x[1] : memref<f32x4x?,strided<1,?>,local>
  %t = alloca -> memref<f32x16x8>
  %l = load %u[] : memref<f32,strided<>>
  store %l, %t[0, %k] : memref<f32x16x8,local>
  gemm.n.t, 1.0, %v, %v, 0, %v : f64, memref<f64x8x8>, memref<f64x8x8>, f64, memref<f64x8x8>
  hadamard.atomic 1, %v, %v, 1, %v : f64, memref<f64x8x8>, memref<f64x8x8>, f64, memref<f64x8x8>
  foreach (%i, %j) = (0, 0), (%k, 4) : index { %c = cmp.lt %i, %j : index }
  foreach %i = 0, %k { %r = math.exp %l : f32 }
  %o = cast %l : f32 -> f64
  %p = bitcast %l : f32 -> i32
  %h = select true, %l, 2.0 : f32
  lifetime_stop %t
}
"""


def same(mine: object, ref: object, path: str = "start") -> None:
    """``mine`` and ``ref`` are equal trees, positions included."""
    if isinstance(ref, Tree):
        assert isinstance(mine, Tree) and mine.data == ref.data, path
        assert mine.meta.empty == ref.meta.empty, path
        if not ref.meta.empty:
            for field in POSITIONS:
                assert getattr(mine.meta, field) == getattr(ref.meta, field), (path, field)
        assert len(mine.children) == len(ref.children), path
        for i, (a, b) in enumerate(zip(mine.children, ref.children, strict=True)):
            same(a, b, f"{path}/{ref.data}[{i}]")
    elif isinstance(ref, Token):
        assert isinstance(mine, Token) and (mine.type, str(mine)) == (ref.type, str(ref)), path
        for field in POSITIONS:
            assert getattr(mine, field) == getattr(ref, field), (path, field)
    else:
        assert mine is None and ref is None, path


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: str(p.relative_to(ROOT)))
def test_corpus_reads_as_lark_parses(path: Path) -> None:
    text = path.read_text()
    same(read_tree(text), _lark().parse(text))


@pytest.mark.parametrize("text", [EVERY_RULE, EVERY_RULE.replace("\n", "\r\n").replace("  ", "\t"),
                                  "", " ; only a comment\n"], ids=["lf", "crlf-tabs", "empty",
                                                                    "comment"])
def test_every_rule_reads_as_lark_parses(text: str) -> None:
    same(read_tree(text), _lark().parse(text))


def test_lowered_kernels_read_as_lark_parses() -> None:
    import frontend
    from backend_opencl.api.compiler import tensor_language

    for name in ("cnn.mlir", "transformer_block.mlir"):
        module = frontend.parse((ROOT / "examples" / name).read_text(), filename=name)
        text = str(tensor_language(module))
        same(read_tree(text), _lark().parse(text))


def mutants(texts: list[str], count: int) -> list[str]:
    """``count`` texts each with a few characters deleted, inserted or copied."""
    rng = random.Random(7)
    pieces = [*",:()[]{}x%=<>?.-+ 09\n;", "->", "f32", "memref<", "%a", "x1", "@f", "init"]
    found = []
    for _ in range(count):
        text = rng.choice(texts)
        at, kind = rng.randrange(len(text)), rng.random()
        if kind < 0.4:
            found.append(text[:at] + text[at + rng.randint(1, 3):])
        elif kind < 0.8:
            found.append(text[:at] + rng.choice(pieces) + text[at:])
        else:
            start = rng.randrange(len(text))
            found.append(text[:at] + text[start:start + rng.randint(1, 8)] + text[at:])
    return found


def test_never_takes_what_lark_rejects() -> None:
    texts = [EVERY_RULE, *(p.read_text() for p in CORPUS if p.stat().st_size < 4000)]
    read = 0
    for text in mutants(texts, 3000):
        try:
            mine = read_tree(text)
        except NotRead:
            continue
        try:
            ref = _lark().parse(text)
        except UnexpectedInput:
            pytest.fail(f"the reader took text lark rejects:\n{text}")
        same(mine, ref)
        read += 1
    assert read > 100  # some mutants stay valid (white space, digits)


def test_deep_nesting_is_left_to_lark() -> None:
    depth = descent.MAX_REGION_DEPTH + 1
    text = "func @k() {\n" + "parallel {\n" * depth + "}\n" * depth + "}\n"
    with pytest.raises(NotRead):
        read_tree(text)
    assert _lark().parse(text) is not None
