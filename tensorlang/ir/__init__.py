"""Tensor-language IR: types (``types``), the instruction table (``ops``) and IR classes (``core``)."""
