"""A hand-written register-blocked batched GEMM in OpenCL C: the reference point of
``batched_gemm.py`` (column ``xhand``), written the way PoCL turns into fast code.

One work-item (work-group of one) computes one ``C_g += A_g B_g`` (column-major,
contiguous, static sizes).  It walks C in blocks of ``VR`` vectors of ``V`` rows by ``RN``
columns held in named vector registers (``float8``/``double4``: one 256-bit register
each), k innermost: per k step ``VR`` vector loads of A (``vloadV``, contiguous along the
first mode), ``RN`` scalar loads of B broadcast by the multiply, and ``VR x RN``
independent ``a*b+acc`` chains (contracted to vector FMAs).  Rows and columns past the
last full block get blocks of single vectors, then scalar rows, and narrower column
blocks: every size is exact, nothing out of bounds.

On devices with 512-bit vectors (``wide``: PoCL on AVX-512 prefers 16 float lanes) the
vectors are ``float16``/``double8`` and the blocks 32 x 8 / 16 x 8, as tlc's own there.

Measured on the 2-core AVX2 EPYC VM (Debian PoCL 3.1, 32^3 f32, data in cache): 16x4
blocks (``VR=2, V=8, RN=4``, or one ``float16`` by 4) and 32x2 reach 70-80 GFLOP/s of the
~86 peak; 8x8 and 32x4 run out of the 16 registers (~45).  At batch 10,000 (data from
memory) every good shape gives ~52.
"""

from __future__ import annotations

CTYPES = {"f32": "float", "f64": "double"}
VECTOR = {"f32": 8, "f64": 4}
"""Elements per 256-bit register."""


def _segments(extent: int, sizes: tuple[int, ...]) -> list[tuple[int, int, int]]:
    """(start, stop, step) runs covering ``[0, extent)`` with the largest sizes first."""
    runs, start = [], 0
    for size in sizes:
        count = (extent - start) // size
        if count:
            runs.append((start, start + count * size, size))
            start += count * size
    return runs


def _block(c: str, v: int, vr: int, rn: int, m: int, k: int) -> list[str]:
    """Statements of one ``(vr * v) x rn`` block at (m0, n0); ``v == 1`` is scalar."""
    vt = f"{c}{v}" if v > 1 else c
    load = (lambda p: f"vload{v}(0, {p})") if v > 1 else (lambda p: f"*({p})")
    out = [f"{vt} acc{i}_{j} = ({vt})(0);" for j in range(rn) for i in range(vr)]
    out.append(f"for (int kk = 0; kk < {k}; ++kk) {{")
    out += [f"    const {vt} a{i} = {load(f'a + m0 + {i * v} + kk * {m}')};" for i in range(vr)]
    for j in range(rn):
        out.append(f"    const {c} b{j} = b[kk + (n0 + {j}) * {k}];")
        out += [f"    acc{i}_{j} = a{i} * b{j} + acc{i}_{j};" for i in range(vr)]
    out.append("}")
    for j in range(rn):
        for i in range(vr):
            p = f"cc + m0 + {i * v} + (n0 + {j}) * {m}"
            out.append(f"{{ global {c}* p = {p}; " + (
                f"vstore{v}(acc{i}_{j} + vload{v}(0, p), 0, p); }}" if v > 1
                else f"*p = acc{i}_{j} + *p; }}"))
    return out


def hand_source(t: str, m: int, k: int, n: int, vr: int = 2, rn: int = 4,
                wide: bool = False) -> str:
    """OpenCL C of kernel ``hand(A, B, C)`` for one (M, K, N) shape and type ``t``
    (``wide``: 512-bit vectors, ``rn`` 8)."""
    c, v = CTYPES[t], VECTOR[t] * (2 if wide else 1)
    rn = 8 if wide else rn
    lines = ["#pragma OPENCL EXTENSION cl_khr_fp64 : enable"] if t == "f64" else []
    lines += [f"kernel __attribute__((reqd_work_group_size(1, 1, 1))) void hand(global const "
              f"{c}* restrict A, global const {c}* restrict B, global {c}* restrict C) {{",
              "    const long g = get_group_id(0);",
              f"    global const {c}* a = A + g * {m * k};",
              f"    global const {c}* b = B + g * {k * n};",
              f"    global {c}* cc = C + g * {m * n};"]
    for n_lo, n_hi, cols in _segments(n, tuple(range(rn, 0, -1))):
        lines.append(f"    for (int n0 = {n_lo}; n0 < {n_hi}; n0 += {cols}) {{")
        for m_lo, m_hi, step in _segments(m, (v * vr, v, 1)):
            width = v if step >= v else 1
            lines.append(f"        for (int m0 = {m_lo}; m0 < {m_hi}; m0 += {step}) {{")
            lines += ["            " + s for s in _block(c, width, step // width, cols, m, k)]
            lines.append("        }")
        lines.append("    }")
    lines.append("}")
    return "\n".join(lines) + "\n"
