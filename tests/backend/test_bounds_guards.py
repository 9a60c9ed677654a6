"""Run-time bounds guards (``--check-bounds``): accesses isl cannot prove in bounds are
checked in the kernel; a violation is skipped (nothing is read or written out of bounds)
and raises ``BoundsError`` at the access after the launch; in-bounds runs match numpy.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyopencl.array as cla
import pytest

import backend_opencl
import tensorlang
from backend_opencl.api.compiler import lower
from backend_opencl.runtime import get_device
from tensorlang.diagnostics import BoundsError
from tests.filecheck import check_text, tlc

SOURCE = """\
func @gather(%A: memref<f32x16>, %B: memref<i32x?>, %C: memref<f32x?>) {
  %c0 = constant 0 : index
  %n = size %C[0] : memref<f32x?>
  foreach %i = %c0, %n : index {
    %j32 = load %B[%i] : memref<i32x?>
    %j = cast %j32 : i32 -> index
    %v = load %A[%j] : memref<f32x16>
    store %v, %C[%i] : memref<f32x?>
  }
}

func @scatter(%V: memref<f32x?>, %B: memref<i32x?>, %C: memref<f32x?>) {
  %c0 = constant 0 : index
  %n = size %V[0] : memref<f32x?>
  foreach %i = %c0, %n : index {
    %v = load %V[%i] : memref<f32x?>
    %j32 = load %B[%i] : memref<i32x?>
    %j = cast %j32 : i32 -> index
    store %v, %C[%j] : memref<f32x?>
  }
}

func @window(%A: memref<f32x?>, %o: index, %C: memref<f32x8>) {
  %s = subview %A[%o:8] : memref<f32x?>
  %one = constant 1.0 : f32
  %zero = constant 0.0 : f32
  axpby.n %one, %s, %zero, %C : f32, memref<f32x8>, f32, memref<f32x8>
}

func @column(%A: memref<f32x?x?>, %r: index, %c: index, %C: memref<f32x4>) {
  %s = subview %A[%r:4, %c] : memref<f32x?x?>
  %c0 = constant 0 : index
  %c4 = constant 4 : index
  foreach %i = %c0, %c4 : index {
    %v = load %s[%i] : memref<f32x4>
    store %v, %C[%i] : memref<f32x4>
  }
}

func @reshape(%A: memref<f32x?>, %m: index, %C: memref<f32x4x?>) {
  %e = expand %A[0 -> 4 x %m] : memref<f32x?>
  %one = constant 1.0 : f32
  %zero = constant 0.0 : f32
  axpby.n %one, %e, %zero, %C : f32, memref<f32x4x?>, f32, memref<f32x4x?>
}

func @matmul(%A: memref<f32x?x?>, %B: memref<f32x?x?>, %C: memref<f32x?x?>) {
  %one = constant 1.0 : f32
  %zero = constant 0.0 : f32
  gemm.n.n %one, %A, %B, %zero, %C : f32, memref<f32x?x?>, memref<f32x?x?>, f32, memref<f32x?x?>
}

func @matmul16(%A: memref<f16x?x?>, %B: memref<f16x?x?>, %C: memref<f16x?x?>) {
  %one = constant 1.0 : f16
  %zero = constant 0.0 : f16
  gemm.n.n %one, %A, %B, %zero, %C : f16, memref<f16x?x?>, memref<f16x?x?>, f16, memref<f16x?x?>
}

func @member(%G: group<memref<f32x?>>, %B: memref<i32x?>, %C: memref<f32x?>) {
  %g = group_id
  %a = load %G[%g] : group<memref<f32x?>>
  %c0 = constant 0 : index
  %n = size %C[0] : memref<f32x?>
  foreach %i = %c0, %n : index {
    %j32 = load %B[%i] : memref<i32x?>
    %j = cast %j32 : i32 -> index
    %v = load %a[%j] : memref<f32x?>
    store %v, %C[%i] : memref<f32x?>
  }
}
"""

GOLDEN = Path(__file__).parent / "golden" / "bounds_guards.tl"


def _line_col(text: str, needle: str) -> str:
    """``k.tl:line:col`` of the instruction that ``needle`` starts (after ``%x = ``)."""
    for number, line in enumerate(SOURCE.split("\n"), 1):
        if needle in line:
            return f"k.tl:{number}:{line.index(needle.lstrip()) + 1}"
    raise AssertionError(needle)


@pytest.fixture(scope="module")
def mod() -> Any:
    return backend_opencl.compile(tensorlang.parse(SOURCE, filename="k.tl"),
                                  check_bounds=True)


def _nan(n: int) -> np.ndarray:
    return np.full(n, np.nan, np.float32)


def test_gather_in_bounds_matches_numpy(mod: Any, rng: np.random.Generator) -> None:
    a = rng.standard_normal(16).astype(np.float32)
    idx = rng.integers(0, 16, size=37).astype(np.int32)
    c = _nan(37)
    mod.gather(a, idx, c, num_groups=1)
    np.testing.assert_array_equal(c, a[idx])


def test_gather_out_of_bounds_raises_at_the_load(mod: Any, rng: np.random.Generator) -> None:
    a = rng.standard_normal(16).astype(np.float32)
    idx = rng.integers(0, 16, size=9).astype(np.int32)
    idx[4] = 17
    c = _nan(9)
    with pytest.raises(BoundsError) as err:
        mod.gather(a, idx, c, num_groups=1)
    text = str(err.value)
    head = f"{_line_col(SOURCE, 'load %A[%j]')}: error: out-of-bounds load: index 17 " \
           "not in [0, 16) (%A)"
    assert text.startswith(head), text
    assert "    %v = load %A[%j] : memref<f32x16>\n         ^" in text
    assert "note: in @gather, work-group 0" in text
    keep = np.arange(9) != 4  # the other iterations ran; the skipped load yielded 0
    np.testing.assert_array_equal(c[keep], a[idx[keep]])
    assert c[4] == 0


def test_index_array_shorter_than_output_is_caught(mod: Any) -> None:
    """B's size is not related to C's by the program: reading B[i] is guarded too."""
    a = np.arange(16, dtype=np.float32)
    with pytest.raises(BoundsError, match=r"index 3 not in \[0, 3\) \(%B\)"):
        mod.gather(a, np.array([1, 2, 3], np.int32), _nan(5), num_groups=1)


def test_scatter_writes_nothing_outside_a_device_subregion(mod: Any,
                                                           rng: np.random.Generator) -> None:
    """C is 16 elements in the middle of a poisoned device buffer: a store at -1 or 16
    would land in the neighbours."""
    queue = get_device(None).queue
    pad, n = 64, 16  # 64 floats = 256 bytes keeps the sub-buffer aligned
    sentinel = np.full(2 * pad + n, -7.5, np.float32)
    big = cla.to_device(queue, sentinel)
    c = big[pad:pad + n]
    v = rng.standard_normal(6).astype(np.float32)
    idx = np.array([3, 16, 5, -1, 15, 0], np.int32)
    with pytest.raises(BoundsError, match=r"out-of-bounds store: index 16 not in \[0, 16\)"):
        mod.scatter(v, idx, c, num_groups=1)
    got = big.get()
    np.testing.assert_array_equal(got[:pad], sentinel[:pad])
    np.testing.assert_array_equal(got[pad + n:], sentinel[pad + n:])
    want = sentinel[pad:pad + n].copy()
    for k in (0, 2, 4, 5):  # the in-bounds stores happened
        want[idx[k]] = v[k]
    np.testing.assert_array_equal(got[pad:pad + n], want)


def test_scatter_in_bounds_into_a_numpy_slice(mod: Any, rng: np.random.Generator) -> None:
    base = np.full(40, -7.5, np.float32)
    c = base[10:30]
    v = rng.standard_normal(20).astype(np.float32)
    idx = rng.permutation(20).astype(np.int32)
    mod.scatter(v, idx, c, num_groups=1)
    want = np.empty(20, np.float32)
    want[idx] = v
    np.testing.assert_array_equal(c, want)
    assert (base[:10] == -7.5).all() and (base[30:] == -7.5).all()
    idx[7] = 20
    with pytest.raises(BoundsError, match=r"index 20 not in \[0, 20\)"):
        mod.scatter(v, idx, c, num_groups=1)
    assert (base[:10] == -7.5).all() and (base[30:] == -7.5).all()


@pytest.mark.parametrize("n", [8, 13, 30])
def test_dynamic_subview_offset(mod: Any, rng: np.random.Generator, n: int) -> None:
    a = rng.standard_normal(n).astype(np.float32)
    for o in range(n - 7):
        c = _nan(8)
        mod.window(a, o, c, num_groups=1)
        np.testing.assert_array_equal(c, a[o:o + 8])
    for o in (n - 7, n + 3):
        c = _nan(8)
        with pytest.raises(BoundsError) as err:
            mod.window(a, o, c, num_groups=1)
        assert f"out-of-bounds subview: slice [{o}, {o + 8}) not in [0, {n}) (%A)" \
            in str(err.value)
        assert str(err.value).startswith(_line_col(SOURCE, "subview %A[%o:8]"))
        assert np.isnan(c).all()  # the axpby on the invalid view did nothing


def test_subview_with_an_index_mode(mod: Any, rng: np.random.Generator) -> None:
    a = np.asfortranarray(rng.standard_normal((9, 5)).astype(np.float32))
    c = _nan(4)
    mod.column(a, 3, 2, c, num_groups=1)
    np.testing.assert_array_equal(c, a[3:7, 2])
    c = _nan(4)
    with pytest.raises(BoundsError, match=r"subview: index 5 not in \[0, 5\) \(%A, mode 1\)"):
        mod.column(a, 3, 5, c, num_groups=1)
    np.testing.assert_array_equal(c, 0)  # loads through the invalid view yield 0


def test_expand_with_a_wrong_dynamic_size(mod: Any, rng: np.random.Generator) -> None:
    a = rng.standard_normal(12).astype(np.float32)
    c = np.asfortranarray(np.full((4, 3), np.nan, np.float32))
    mod.reshape(a, 3, c, num_groups=1)
    np.testing.assert_array_equal(c, a.reshape((4, 3), order="F"))
    c = np.asfortranarray(np.full((4, 5), np.nan, np.float32))
    with pytest.raises(BoundsError, match=r"invalid expand: the new sizes multiply to 20 "
                       r"but the mode has size 12"):
        mod.reshape(a, 5, c, num_groups=1)
    assert np.isnan(c).all()


def test_gemm_with_disagreeing_dynamic_sizes(mod: Any, rng: np.random.Generator) -> None:
    a = np.asfortranarray(rng.standard_normal((5, 3)).astype(np.float32))
    b = np.asfortranarray(rng.standard_normal((3, 4)).astype(np.float32))
    c = np.asfortranarray(np.full((5, 4), np.nan, np.float32))
    mod.matmul(a, b, c, num_groups=1)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)
    b2 = np.asfortranarray(rng.standard_normal((4, 4)).astype(np.float32))
    c = np.asfortranarray(np.full((5, 4), np.nan, np.float32))
    with pytest.raises(BoundsError, match=r"gemm: operand sizes disagree at run time: "
                       r"%A mode 1 vs %B mode 0 \(3 != 4\)"):
        mod.matmul(a, b2, c, num_groups=1)
    assert np.isnan(c).all()


def test_half_gemm_lowered_to_loops_is_guarded(mod: Any, rng: np.random.Generator) -> None:
    """lower-half-blas turns the f16 gemm into loads and stores: those are guarded."""
    a = np.asfortranarray(rng.standard_normal((5, 3)).astype(np.float16))
    b = np.asfortranarray(rng.standard_normal((3, 4)).astype(np.float16))
    c = np.asfortranarray(np.full((5, 4), np.nan, np.float16))
    mod.matmul16(a, b, c, num_groups=1)
    want = a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_allclose(c.astype(np.float32), want, rtol=2e-3, atol=2e-3)
    narrow = np.asfortranarray(b[:, :2])
    with pytest.raises(BoundsError) as err:
        mod.matmul16(a, narrow, c, num_groups=1)
    assert "index 2 not in [0, 2) (%B, mode 1)" in str(err.value)
    assert str(err.value).startswith(_line_col(SOURCE, "gemm.n.n %one, %A, %B, %zero, %C : f16"))


def test_group_member_access(mod: Any, rng: np.random.Generator) -> None:
    members = [rng.standard_normal(n).astype(np.float32) for n in (6, 9)]
    idx = np.array([0, 5, 2], np.int32)
    c = _nan(3)
    mod.member(members, idx, c, num_groups=1)
    np.testing.assert_array_equal(c, members[0][idx])
    idx[1] = 6
    with pytest.raises(BoundsError, match=r"index 6 not in \[0, 6\) \(%a\)"):
        mod.member(members, idx, _nan(3), num_groups=1)


def test_golden_guards_only_where_isl_cannot_prove() -> None:
    program = tensorlang.parse(GOLDEN.read_text(), filename=str(GOLDEN))
    source = lower(program, check_bounds=True).source
    check_text(GOLDEN, source, prefix="GUARD")


def test_without_the_option_nothing_changes() -> None:
    program = tensorlang.parse(SOURCE, filename="k.tl")
    plain = lower(program)
    assert "tlc_bounds" not in plain.source and "_ok" not in plain.source
    assert all(not info.guards for info in plain.kernels.values())
    guarded = lower(program, check_bounds=True)
    assert {name for name, info in guarded.kernels.items() if info.guards} == \
        {"gather", "scatter", "window", "column", "reshape", "matmul", "matmul16", "member"}


# -- the tlc command line ----------------------------------------------------------------


def test_cli_compile_with_and_without_check_bounds(tmp_path: Path) -> None:
    path = tmp_path / "k.tl"
    path.write_text(SOURCE)
    code, plain, err = tlc("compile", str(path), "--emit", "cl")
    assert code == 0, err
    code, guarded, err = tlc("compile", str(path), "--emit", "cl", "--check-bounds")
    assert code == 0, err
    assert "tlc_bounds" not in plain
    assert guarded.count("global long* tlc_bounds)") == 8


def test_cli_run_prints_a_bounds_error_without_traceback(monkeypatch: pytest.MonkeyPatch,
                                                          tmp_path: Path) -> None:
    """``tlc run --check-bounds`` reaches the driver; a BoundsError is a diagnostic."""
    from backend_opencl.tools import cli

    seen = {}

    def fake_run(args: Any) -> int:
        seen["check_bounds"] = args.check_bounds
        mod = backend_opencl.compile(tensorlang.parse(SOURCE, filename="k.tl"),
                                     check_bounds=True)
        mod.gather(np.zeros(16, np.float32), np.array([99], np.int32), _nan(1), num_groups=1)
        return 0

    monkeypatch.setattr(cli, "run_program", fake_run)
    code, _, err = tlc("run", str(tmp_path / "m.mlir"), "--check-bounds")
    assert seen == {"check_bounds": True}
    assert code == 1
    assert err.startswith(f"{_line_col(SOURCE, 'load %A[%j]')}: error: out-of-bounds load: "
                          "index 99 not in [0, 16)")
    assert "Traceback" not in err


def test_stablehlo_example_runs_the_same_with_guards(tmp_path: Path) -> None:
    """The lowered kernels of a JAX model keep their results under --check-bounds."""
    examples = Path(__file__).resolve().parents[2] / "examples"
    data = np.load(examples / "mlp.npz")
    count = sum(k.startswith("in") for k in data.files)
    np.savez(tmp_path / "in.npz", *[data[f"in{i}"] for i in range(count)])
    want = [data[f"out{i}"] for i in range(sum(k.startswith("out") for k in data.files))]
    code, _, err = tlc("run", str(examples / "mlp.mlir"), "--inputs", str(tmp_path / "in.npz"),
                        "-o", str(tmp_path / "out.npz"), "--check-bounds")
    assert code == 0, err
    with np.load(tmp_path / "out.npz") as got:
        for i, w in enumerate(want):
            np.testing.assert_allclose(got[f"result{i}"], w, rtol=2e-4,
                                       atol=2e-4 * float(np.max(np.abs(w))))
