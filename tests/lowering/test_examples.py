"""The JAX-exported example models (examples/*.mlir) match JAX's stored outputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import backend_opencl
import frontend
from frontend.lower import lower_function
from tests.lowering.test_fusion import kernels, launches

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
MODELS = ["mlp", "transformer_block", "cnn"]


@pytest.mark.parametrize("name", MODELS)
def test_model_matches_jax(name: str) -> None:
    data = np.load(EXAMPLES / f"{name}.npz")
    count = sum(key.startswith("in") for key in data.files)
    ins = [data[f"in{i}"] for i in range(count)]
    want = data["out0"]
    exe = backend_opencl.compile_stablehlo((EXAMPLES / f"{name}.mlir").read_text(),
                                           filename=f"{name}.mlir")
    (got,) = exe(*ins)
    assert got.dtype == want.dtype and got.shape == want.shape
    scale = max(1.0, float(np.max(np.abs(want))))
    np.testing.assert_allclose(got, want, rtol=0, atol=2e-4 * scale)


@pytest.mark.parametrize(("name", "count", "distinct"), [
    ("mlp", 4, 4), ("transformer_block", 11, 8), ("cnn", 3, 3)])
def test_model_kernel_count(name: str, count: int, distinct: int) -> None:
    """Fusion pins: gemm epilogues, row-fused softmax/layernorm, transposed and
    flattened gemm operands without copies (mlp was 7 launches, the transformer block 17,
    the cnn 8 before row fusion and transposed operands, 7 before the one-kernel
    convolution of conv_gemm, 5 before pooling in it); ``distinct``: the kernels left
    once equal ones are merged (frontend/lower/core/dedup.py)."""
    text = (EXAMPLES / f"{name}.mlir").read_text()
    assert len(kernels(text)) == distinct
    assert launches(lower_function(frontend.parse(text)).plan.steps) == count
