"""numpy dtypes of the storage float types (f16, bf16 and the narrow floats, ml_dtypes)."""

from __future__ import annotations

import ml_dtypes
import numpy as np

NARROW_DTYPES: dict[str, type] = {
    "f8e4m3fn": ml_dtypes.float8_e4m3fn, "f8e5m2": ml_dtypes.float8_e5m2,
    "f8e4m3fnuz": ml_dtypes.float8_e4m3fnuz, "f8e5m2fnuz": ml_dtypes.float8_e5m2fnuz,
    "f8e4m3b11fnuz": ml_dtypes.float8_e4m3b11fnuz, "f8e4m3": ml_dtypes.float8_e4m3,
    "f8e3m4": ml_dtypes.float8_e3m4, "f8e8m0fnu": ml_dtypes.float8_e8m0fnu,
    "f6e2m3fn": ml_dtypes.float6_e2m3fn, "f6e3m2fn": ml_dtypes.float6_e3m2fn,
    "f4e2m1fn": ml_dtypes.float4_e2m1fn,
}
"""Tensor-language name -> ml_dtypes type of the narrow floats (one byte per element)."""


def storage_float_dtype(name: str) -> type:
    """The numpy/ml_dtypes type of the storage float ``name`` (f16, bf16 or narrow)."""
    if name == "f16":
        return np.float16
    return ml_dtypes.bfloat16 if name == "bf16" else NARROW_DTYPES[name]
