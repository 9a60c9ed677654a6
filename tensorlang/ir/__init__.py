"""Tensor-language IR: types (``types``), the instruction table (``ops``), IR classes."""
