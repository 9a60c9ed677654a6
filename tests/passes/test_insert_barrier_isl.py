"""insert-barrier on isl footprints: a barrier is omitted where isl proves two collectives
touch disjoint elements of one array, and kept where it cannot."""

from __future__ import annotations

import pytest

import tensorlang
from tensorlang.passes import run_pipeline

H = "memref<f32x8x16,strided<1,16>>"
A = "memref<f32x8x16>"


def _barriers(body: str) -> int:
    text = f"""func @f(%A: {A}, %B: memref<f32x16x16>, %C: memref<f32x16x16>, %i: index,
                %j: index) {{
  %one = constant 1.0 : f32
  %zero = constant 0.0 : f32
  %c0 = constant 0 : index
  %c8 = constant 8 : index
{body}
}}"""
    program = tensorlang.parse(text)
    run_pipeline(program, "insert-barrier", verify_each=True)
    return str(program).count("barrier")


def _half(name: str, offset: str, of: str = "%C") -> str:
    return f"  %{name} = subview {of}[{offset}:8, :] : memref<f32x16x16>"


def _axpby(out: str, src: str = "%A", src_t: str = A) -> str:
    return f"  axpby.n %one, {src}, %one, {out} : f32, {src_t}, f32, {H}"


def test_disjoint_halves_need_no_barrier() -> None:
    # Two updates write the two halves of C: write after write on one array, disjoint data.
    assert _barriers("\n".join([_half("x", "0"), _half("y", "8"), _axpby("%x"),
                                _axpby("%y")])) == 0


def test_same_half_keeps_the_barrier() -> None:
    assert _barriers("\n".join([_half("x", "0"), _half("y", "0"), _axpby("%x"),
                                _axpby("%y")])) == 1


def test_overlapping_rows_keep_the_barrier() -> None:
    assert _barriers("\n".join([_half("x", "0"), _half("y", "7"), _axpby("%x"),
                                _axpby("%y")])) == 1


def test_dynamic_offsets_proven_disjoint() -> None:
    # C[%i:8] and C[%i+8:8] never overlap, whatever %i is.
    body = ["  %k = arith.add %i, %c8 : index", _half("x", "%i"), _half("y", "%k"),
            _axpby("%x"), _axpby("%y")]
    assert _barriers("\n".join(body)) == 0


def test_unrelated_dynamic_offsets_keep_the_barrier() -> None:
    body = [_half("x", "%i"), _half("y", "%j"), _axpby("%x"), _axpby("%y")]
    assert _barriers("\n".join(body)) == 1


def test_gemm_reading_the_other_half_needs_no_barrier() -> None:
    # The gemm reads the bottom half of C while the axpby wrote the top half.
    gemm = (f"  gemm.n.n %one, %y, %B, %one, %A : f32, {H}, memref<f32x16x16>, f32, {A}")
    body = [_half("x", "0"), _half("y", "8"), _half("b", "0", "%B"), _axpby("%x", "%b", H),
            gemm]
    assert _barriers("\n".join(body)) == 0


def test_gemm_reading_the_written_half_keeps_the_barrier() -> None:
    gemm = (f"  gemm.n.n %one, %x, %B, %one, %A : f32, {H}, memref<f32x16x16>, f32, {A}")
    assert _barriers("\n".join([_half("x", "0"), _axpby("%x"), gemm])) == 1


def test_beta_zero_does_not_read_the_output() -> None:
    # Write after write on the same elements still needs the barrier (order of stores).
    body = [_half("x", "0"), _axpby("%x"),
            f"  axpby.n %one, %A, %zero, %x : f32, {A}, f32, {H}"]
    assert _barriers("\n".join(body)) == 1


@pytest.mark.parametrize("offset", ["%c0", "%j", "%l"])
def test_loop_carried_dependences_are_kept(offset: str) -> None:
    # Iteration l writes column l; the next iteration reads a column that an earlier
    # iteration may have written (even "column l", which the loop variable changes).
    body = f"""  %n = constant 2 : index
  for %l = %c0, %n : index {{
    %x = subview %C[0:16, %l] : memref<f32x16x16>
    %y = subview %C[0:16, {offset}] : memref<f32x16x16>
    %z = subview %B[0:16, %l] : memref<f32x16x16>
    axpby.n %one, %y, %zero, %z : f32, memref<f32x16>, f32, memref<f32x16>
    axpby.n %one, %z, %one, %x : f32, memref<f32x16>, f32, memref<f32x16>
  }}"""
    assert _barriers(body) >= 2
