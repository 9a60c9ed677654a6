"""Verifiers of the checks family: the interpreter's check.expect_*_const ops."""

from __future__ import annotations

from frontend.ir.attrs import DenseElementsAttr
from frontend.ir.core import Op
from frontend.verify.common import (
    fail,
    verifies,
)


@verifies("check.expect_eq_const", "check.expect_almost_eq_const")
def verify_check_const(op: Op) -> None:
    """The expected constant has the checked value's type."""
    expected = op.attrs.get("expected")
    if isinstance(expected, DenseElementsAttr) and expected.type != op.operands[0].type:
        fail(op, "", f"expected value of type {expected.type} does not match "
                     f"{op.operands[0].type}", op.operands[0])
