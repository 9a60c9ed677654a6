"""The verifier's dispatch table: instruction name to its family's check."""

from __future__ import annotations

from tensorlang.verify import blas, control, extensions, scalar, views
from tensorlang.verify.regions import Check

CHECKS: dict[str, Check] = {**blas.CHECKS, **control.CHECKS, **scalar.CHECKS, **views.CHECKS,
                           **extensions.CHECKS}
"""Every instruction with rules beyond structure, region kind and scoping."""
