"""The interpreter test dialect's ``check.*`` ops, for running the StableHLO interpret suite.

Every check materializes its ``actual`` value (and a non-constant ``expected`` value) and
records a :class:`Check`; :func:`frontend.lower.lower_function` appends those buffers to
the plan's results after the function's own results, so an adapter can compare them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from frontend.ir.attrs import as_float
from frontend.ir.core import Op
from frontend.lower.core.driver import FuncLowering
from frontend.lower.core.registry import kernel
from tensorlang.diagnostics import Loc


@dataclass(frozen=True)
class Check:
    """One check: its kind (eq, almost_eq, close), its expected value (a constant array or
    the index of another check result) and tolerance."""

    kind: str
    expected: np.ndarray | None
    tolerance: float | None
    loc: Loc | None


@kernel("check.expect_eq_const", "check.expect_almost_eq_const")
def check_const(lw: FuncLowering, op: Op) -> None:
    """actual against a constant."""
    expected = np.asarray(op.dense_attr("expected"))
    tol = op.attr("tolerance")
    kind = "eq" if "almost" not in op.name else "almost_eq"
    lw.checks.append((lw.materialize(op.operand("actual")),
                      Check(kind, expected, None if tol is None else as_float(tol), op.loc)))


@kernel("check.expect_eq", "check.expect_almost_eq", "check.expect_close")
def check_pair(lw: FuncLowering, op: Op) -> None:
    """actual against another value: both are results (expected right after actual)."""
    tol = op.attr("tolerance", op.attr("max_ulp_difference"))
    kind = op.name.split("expect_")[1]
    lw.checks.append((lw.materialize(op.operand("actual")),
                      Check(kind, None, None if tol is None else as_float(tol), op.loc)))
    lw.checks.append((lw.materialize(op.operand("expected")), Check("value", None, None,
                                                                    op.loc)))
