"""The op families: each module (or subpackage) lowers one family of ops and registers
its lowerings with the decorators of :mod:`frontend.lower.core.registry` when imported.

Importing this package imports every family (:mod:`frontend.lower` does).  A family
imports the core and, where it builds on one, other families; the core never imports a
family.  The verifier's modules (:mod:`frontend.verify`) carry the same family names.
"""

from __future__ import annotations

from frontend.lower.families import (  # noqa: F401 - importing a family registers it
    batchnorm,
    callbacks,
    checks,
    collective,
    control,
    conv,
    dot,
    dynamic,
    elementwise,
    fft,
    interpreter_ops,
    linalg,
    quant,
    reduce,
    rng,
    scatter_gather,
    shape,
    sort,
    window,
)
