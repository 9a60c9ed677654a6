"""Verifier of the conv family: stablehlo.convolution and dynamic_conv."""

from __future__ import annotations

from frontend.ir import attrs as A
from frontend.ir.core import Op
from frontend.ir.types import is_int
from frontend.verify.common import (
    constant_value,
    dims,
    fail,
    list_attr,
    shapes_ok,
    tensor,
    verifies,
)
from frontend.verify.quant import check_convolution
from frontend.verify.window import num_windows, padding_of, sized


@verifies("convolution", "dynamic_conv")
def verify_convolution(op: Op) -> None:
    """(C1)-(C34) of convolution and dynamic_conv: attribute sizes, labels, group counts,
    result shape, element and quantization rules."""
    lhs, rhs = tensor(op, op.operands[0], "lhs"), tensor(op, op.operands[1], "rhs")
    r = tensor(op, op.result_types[0], "result")
    n = lhs.rank
    if lhs.rank != rhs.rank:
        fail(op, "C1", f"lhs rank {lhs.rank} differs from rhs rank {rhs.rank}")
    dn = op.attrs.get("dimension_numbers")
    if not isinstance(dn, A.ConvDimsAttr):
        fail(op, "", "needs dimension_numbers = #stablehlo.conv<...>")
    strides = sized(op, "window_strides", n - 2, 1, ("C2", "C3"))
    pad = padding_of(op, n - 2, "C4") if op.name == "stablehlo.convolution" else \
        _dynamic_padding(op, n - 2)
    lhs_dil = sized(op, "lhs_dilation", n - 2, 1, ("C5", "C6"))
    rhs_dil = sized(op, "rhs_dilation", n - 2, 1, ("C7", "C8"))
    rev = list_attr(op, "window_reversal")
    if rev is not None and len(rev) != n - 2:
        fail(op, "C9", f"window_reversal must have {n - 2} entries, got {len(rev)}")
    prec = list_attr(op, "precision_config")
    if prec is not None and len(prec) not in (0, 2):
        fail(op, "C24", f"precision_config must have 2 entries, got {len(prec)}")
    _check_labels(op, dn.lhs, n, "bf", "C13", "lhs")
    _check_labels(op, dn.rhs, n, "io", "C18", "rhs")
    _check_labels(op, dn.out, n, "bf", "C20", "result")
    if r.rank != n:
        fail(op, "C26", f"result rank must be {n}, got {r.rank}")
    fgc, bgc = op.int_attr("feature_group_count", 1), op.int_attr("batch_group_count", 1)
    if fgc <= 0:
        fail(op, "C21", f"feature_group_count must be positive, got {fgc}")
    if bgc <= 0:
        fail(op, "C22", f"batch_group_count must be positive, got {bgc}")
    if fgc != 1 and bgc != 1:
        fail(op, "C23", "feature_group_count or batch_group_count must be 1")
    _check_groups(op, lhs.shape, rhs.shape, dn, fgc, bgc)
    want: list[int | None] = [None] * n
    want[dn.out.index("b")] = _div(lhs.shape[dn.lhs.index("b")], bgc)
    want[dn.out.index("f")] = rhs.shape[dn.rhs.index("o")]
    for i, (li, ri, oi) in enumerate(zip(dn.spatial(dn.lhs), dn.spatial(dn.rhs),
                                         dn.spatial(dn.out), strict=True)):
        k, p = rhs.shape[ri], pad[i]
        want[oi] = None if k is None or p is None else num_windows(
            lhs.shape[li], k, strides[i], p, lhs_dil[i], rhs_dil[i])
    if not shapes_ok(tuple(want), r.shape):
        fail(op, "C25", f"result shape must be {dims(want)}, got {dims(r.shape)}")
    check_convolution(op, lhs, rhs, r, dn.rhs.index("o"), dn.out.index("f"))


def _dynamic_padding(op: Op, spatial: int) -> list[tuple[int, int] | None]:
    """dynamic_conv's ``padding`` operand: (C4) shape [N - 2, 2]; values if constant."""
    v = op.operands[2]
    t = tensor(op, v, "padding")
    if not is_int(t.element) or not shapes_ok((spatial, 2), t.shape):
        fail(op, "C4", f"padding must be a {spatial}x2 integer tensor, got {t}", v)
    const = constant_value(v)
    if const is None or const.shape != (spatial, 2):
        return [None] * spatial
    return [(int(lo), int(hi)) for lo, hi in const.tolist()]


def _div(a: int | None, b: int) -> int | None:
    return None if a is None else a // b


def _check_labels(op: Op, labels: tuple[str, ...], n: int, letters: str, rule: str,
                  what: str) -> None:
    spatial = sorted(int(x) for x in labels if x.isdigit())
    ok = (len(labels) == n and all(labels.count(c) == 1 for c in letters)
          and spatial == list(range(n - 2)))
    if not ok:
        fail(op, rule, f"{what} dimension numbers [{', '.join(labels)}] must name "
                       f"{', '.join(letters)} and spatial dimensions 0..{n - 3} once each")


def _check_groups(op: Op, lhs: tuple, rhs: tuple, dn: A.ConvDimsAttr, fgc: int,
                  bgc: int) -> None:
    batch, feat = lhs[dn.lhs.index("b")], lhs[dn.lhs.index("f")]
    kin, kout = rhs[dn.rhs.index("i")], rhs[dn.rhs.index("o")]
    if batch is not None and batch % bgc:
        fail(op, "C10", f"input batch dimension {batch} is not divisible by "
                        f"batch_group_count {bgc}")
    if feat is not None and feat % fgc:
        fail(op, "C11", f"input feature dimension {feat} is not divisible by "
                        f"feature_group_count {fgc}")
    if feat is not None and kin is not None and kin != feat // fgc:
        fail(op, "C14", f"kernel input feature dimension must be {feat // fgc}, got {kin}")
    if kout is not None and kout % bgc:
        fail(op, "C15", f"kernel output feature dimension {kout} is not divisible by "
                        f"batch_group_count {bgc}")
    if kout is not None and kout % fgc:
        fail(op, "C16", f"kernel output feature dimension {kout} is not divisible by "
                        f"feature_group_count {fgc}")
