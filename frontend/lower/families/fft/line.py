"""One kernel of stablehlo.fft: a 1-D transform of every line along one dimension.

A work-group takes one line (``WG`` work-items at most): it reads the line into scratch
(complex values as separate real and imaginary arrays, in local memory when four
of them fit in :data:`LOCAL_BYTES`, else in global scratch buffers), transforms it and
stores it; ``insert-barrier`` puts the barriers between the ``foreach`` steps.

* Lengths whose prime factors are in :data:`RADICES`: a mixed-radix Stockham
  (self-sorting) FFT, one stage per radix (2 at most once, then 4, 3, 5, 7),
  ping-ponging between two scratch arrays, twiddles read from a constant table computed
  on the host in double and stored in the element precision.
* Other lengths up to :data:`DFT_MAX`: a direct DFT in double precision, ``exp(+-2 pi i
  m / n)`` from a constant table indexed by ``p q mod n`` (kept incrementally, no
  division).
* Longer ones: Bluestein's algorithm, the DFT as a chirp times the cyclic convolution
  of the chirped input with the conjugate chirp, by two power-of-two Stockham FFTs (the
  kernel's transform is computed on the host).

A line reads complex elements (``c2c``), real ones (``r2c``: the first ``n / 2 + 1``
outputs are stored) or the first ``n / 2 + 1`` entries of a Hermitian spectrum
(``c2r``: the others are the conjugates of their mirror images, the real part is
stored); real lines of even smooth length go through a complex FFT of half the length
(``LinePass.halved``).  Inverse transforms scale by ``1 / n``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from math import prod

import numpy as np

from frontend.lower.core import types
from frontend.lower.core.builder import IndexExpr, KernelBuilder
from frontend.lower.core.driver import FuncLowering
from frontend.lower.core.fused import Fused

WG = 64
"""Work-items per work-group at most (a power of two)."""
INNER = 8
"""Stages with sub-transforms at least this long run them as the fastest loop."""
RADICES = (2, 3, 5, 7)
"""Prime factors of the lengths the Stockham FFT takes (radix 4 for pairs of 2s)."""
DFT_MAX = 64
"""Lengths that are not powers of two up to this take the direct DFT."""
GROUP_POINTS = 2048
"""Points (lines times their transform length) a work-group takes at most when lines
are short."""
LOCAL_BYTES = 32768
"""Scratch of a line in local memory up to this size (four arrays of ``n`` reals)."""

Complex = tuple[str, str]
"""A complex scalar as its (real, imaginary) SSA names in the compute type."""
Source = Callable[[Fused, list[IndexExpr]], str]
"""``source(f, idx)``: element ``idx`` (row-major) of the pass's input."""
_NP = {"f32": np.float32, "f64": np.float64}


@dataclass(frozen=True)
class LinePass:
    """A 1-D transform along ``dim`` of length ``n`` over a tensor of ``shape`` (the
    output's shape; the input has ``in_len`` elements along ``dim``)."""

    kind: str
    """``c2c``, ``r2c`` or ``c2r``."""
    dim: int
    n: int
    inverse: bool
    shape: tuple[int, ...]
    in_type: str
    out_type: str

    @property
    def lines(self) -> int:
        """The number of lines."""
        return prod(self.shape) // self.shape[self.dim] if self.shape[self.dim] else 0

    @property
    def out_len(self) -> int:
        """Output elements per line."""
        return self.shape[self.dim]

    @property
    def smooth(self) -> bool:
        """True when the Stockham FFT applies: ``n`` is a product of :data:`RADICES`."""
        return radices(self.n) is not None

    @property
    def halved(self) -> bool:
        """True when a real line (``r2c``, ``c2r``) of even smooth length goes through a
        complex FFT of half its length: even elements as real parts, odd ones as
        imaginary parts."""
        return self.kind != "c2c" and self.smooth and self.n % 2 == 0

    @property
    def bluestein(self) -> bool:
        """True when a length that is not smooth goes through Bluestein's algorithm
        (longer than :data:`DFT_MAX`)."""
        return not self.smooth and self.n > DFT_MAX

    @property
    def fft(self) -> bool:
        """True when the line runs Stockham stages (else the direct DFT)."""
        return self.smooth or self.bluestein

    @property
    def m(self) -> int:
        """The length of the complex transform: half a halved line's, the power of two
        ``>= 2 n - 1`` of Bluestein's convolution."""
        if self.bluestein:
            return 1 << (2 * self.n - 2).bit_length()
        return self.n // 2 if self.halved else self.n

    @property
    def ctype(self) -> str:
        """The real type the line is computed in."""
        real = types.COMPLEX_PARTS.get(self.out_type, self.out_type)
        return real if self.fft else "f64"

    @property
    def sign(self) -> float:
        """The sign of the exponent."""
        return 1.0 if self.inverse else -1.0


def line_kernel(lw: FuncLowering, p: LinePass, source: Source, out: int) -> None:
    """Emit and launch the kernel of ``p``, reading ``source`` and writing ``out``."""
    lines = p.lines
    if lines == 0:
        return
    table = _table(lw, p)
    m = p.m
    count = _lines_per_group(p)
    width = (m // 2 if p.fft else m) * count
    wg = min(WG, 1 << max(width - 1, 0).bit_length())
    local = 4 * m * count * np.dtype(_NP[p.ctype]).itemsize <= LOCAL_BYTES
    globals_ = None if local else [lw.new_buffer(p.ctype, (lines * m,)) for _ in range(4)]
    groups = lines // count
    with lw.kernel("fft") as (k, f):
        k.attributes = f"work_group_size({wg},1)"
        grp = Group(k, p, count, k.irem(k.emit("group_id", "g"), groups))
        if globals_ is None:
            arrays = [Scratch.local(grp, p.ctype, m * count) for _ in range(4)]
        else:
            arrays = [Scratch(grp, p.ctype, b, lines * m, k.imul(grp.g, m * count))
                      for b in globals_]
        src, dst = (arrays[0], arrays[1]), (arrays[2], arrays[3])
        if p.halved and p.kind == "c2r":
            _load_hermitian(f, p, (source, table), grp, src)
        elif p.bluestein:
            _load_chirped(f, p, (source, table), grp, src)
        else:
            _load_line(f, p, source, grp, src)
        if p.bluestein:
            src, dst = _stages(grp, (src, dst), table, "fwd")
            _multiply(grp, src, table)
            src, dst = _stages(grp, (src, dst), table, "inv")
        elif p.smooth:
            src, dst = _stages(grp, (src, dst), table, "fwd")
        else:
            _dft(grp, (src, dst), table)
            src = dst
        if p.halved and p.kind == "r2c":
            _store_spectrum(grp, (src, table), out)
        else:
            _store_line(grp, src, out, table)
    lw.launch_last(groups)


def _lines_per_group(p: LinePass) -> int:
    """Lines per work-group: short ones share one (a power of two dividing the number of
    lines, at most :data:`GROUP_POINTS` points in all, their scratch in local memory), so
    PoCL's per-group and per-barrier costs spread over several."""
    size = np.dtype(_NP[p.ctype]).itemsize
    count = 1
    while (count * 2 * p.m <= GROUP_POINTS and p.lines % (count * 2) == 0 and count < 64
           and 4 * count * 2 * p.m * size <= LOCAL_BYTES):
        count *= 2
    return count


class Group:
    """The ``count`` lines of one work-group (from line ``g count``) and, inside
    :meth:`each`, the line ``l`` being worked on."""

    def __init__(self, k: KernelBuilder, p: LinePass, count: int, g: IndexExpr) -> None:
        self.k, self.p, self.count, self.g = k, p, count, g
        self.l: IndexExpr = 0

    @contextmanager
    def each(self, hi: int, io: bool = False, lo: int = 0) -> Iterator[str]:
        """A ``foreach`` over [lo, hi) of every line of the group; yields the index, sets
        :attr:`l`.  The index is the fastest mode, but the line when ``io`` (the loop reads
        or writes global memory) and lines along an earlier dimension lie side by side."""
        k = self.k
        j = k.fresh("l")
        if self.count == 1:
            with k.block(f"foreach {j} = {k.idx(lo)}, {k.idx(hi)} : index {{"):
                yield j
            return
        line = k.fresh("l")
        modes = [(j, lo, hi), (line, 0, self.count)]
        if io and self.p.dim != len(self.p.shape) - 1:
            modes.reverse()
        names = ", ".join(v for v, _, _ in modes)
        los = ", ".join(k.idx(n) for _, n, _ in modes)
        his = ", ".join(k.idx(n) for _, _, n in modes)
        with k.block(f"foreach ({names}) = ({los}), ({his}) : index {{"):
            self.l = line
            try:
                yield j
            finally:
                self.l = 0

    def first(self) -> list[IndexExpr]:
        """The multi-index of the current line's first element."""
        p = self.p
        line = self.k.iadd(self.k.imul(self.g, self.count), self.l)
        return self.k.delinearize(line, [1 if d == p.dim else s for d, s in enumerate(p.shape)])

    def offset(self) -> IndexExpr:
        """The current line's first position in local scratch."""
        return self.k.imul(self.l, self.p.m)


@dataclass(frozen=True)
class Scratch:
    """One real array of a line: a local array or a line's part of a global buffer."""

    grp: Group
    t: str
    ref: int | str
    """A global buffer id, or the local array's SSA name."""
    size: int
    base: IndexExpr = 0

    @staticmethod
    def local(grp: Group, t: str, n: int) -> Scratch:
        """A new local array of ``n`` elements of ``t`` (the group's lines one after the
        other)."""
        return Scratch(grp, t, grp.k.emit(f"alloca -> memref<{t}x{n},local>", "a"), n)

    def load(self, i: IndexExpr) -> str:
        """Element ``i`` of the current line."""
        k = self.grp.k
        at = k.iadd(self.grp.offset(), i)
        if isinstance(self.ref, int):
            return k.load(self.ref, self.t, self.size, k.iadd(self.base, at))
        return k.emit(f"load {self.ref}[{k.idx(at)}] : memref<{self.t}x{self.size},local>",
                      "x")

    def store(self, v: str, i: IndexExpr) -> None:
        """Store ``v`` at element ``i`` of the current line."""
        k = self.grp.k
        at = k.iadd(self.grp.offset(), i)
        if isinstance(self.ref, int):
            k.store(v, self.ref, self.t, self.size, k.iadd(self.base, at))
        else:
            k.line(f"store {v}, {self.ref}[{k.idx(at)}] : memref<{self.t}x{self.size},local>")


Pair = tuple[Scratch, Scratch]


def _table(lw: FuncLowering, p: LinePass) -> int:
    """A constant buffer of twiddles (see :func:`_sections`): the real parts, then the
    imaginary ones (contiguous loads in a stage)."""
    w = np.concatenate([v for _, v in _sections(p)] or [np.zeros(0, complex)])
    data = np.concatenate([w.real, w.imag]).astype(_NP[p.ctype])
    return lw.new_buffer(p.ctype, (max(data.size, 1),), data.tobytes())


@lru_cache(maxsize=64)
def _sections(p: LinePass) -> tuple[tuple[str, np.ndarray], ...]:
    """The parts of ``p``'s table, in double, ``w(x) = exp(sign 2 pi i x)``:

    * ``fwd``: each Stockham stage's ``w(t kk / (radix ns))`` for ``t = 1 .. radix-1``
      (blocks of ``ns``, ``kk < ns``), with the pass's sign (Bluestein: -1);
    * ``half`` (halved lines): ``w(j / n)``, ``j <= n / 2``;
    * Bluestein: ``inv``, the stages with sign +1; ``b``, the FFT of the convolution's
      kernel ``conj c`` divided by ``m``; ``chirp``, ``c[j] = w(j^2 / (2 n))``, ``j < n``;
    * ``roots`` (direct DFT): ``w(j / n)``, ``j < n``.
    """
    def w(x: np.ndarray, sign: float = p.sign) -> np.ndarray:
        return np.exp(sign * 2j * np.pi * x)

    def stage_twiddles(sign: float) -> np.ndarray:
        parts = [w(t * np.arange(ns) / (radix * ns), sign) for radix, ns, _ in stages(p.m)
                 for t in range(1, radix)]
        return np.concatenate(parts) if parts else np.zeros(0, complex)
    if p.bluestein:
        j = np.arange(p.n)
        chirp = w((j * j % (2 * p.n)) / (2 * p.n))
        kernel = np.zeros(p.m, complex)
        kernel[:p.n] = chirp.conj()
        kernel[p.m - p.n + 1:] = chirp[1:][::-1].conj()
        return (("fwd", stage_twiddles(-1.0)), ("inv", stage_twiddles(1.0)),
                ("b", np.fft.fft(kernel) / p.m), ("chirp", chirp))
    if not p.smooth:
        return (("roots", w(np.arange(p.n) / p.n)),)
    if p.halved:
        return ("fwd", stage_twiddles(p.sign)), ("half", w(np.arange(p.m + 1) / p.n))
    return (("fwd", stage_twiddles(p.sign)),)


def _offset(p: LinePass, name: str) -> int:
    """The first entry of section ``name`` of ``p``'s table."""
    at = 0
    for key, values in _sections(p):
        if key == name:
            return at
        at += len(values)
    raise KeyError(name)


def _table_size(p: LinePass) -> int:
    return 2 * sum(len(v) for _, v in _sections(p))


def radices(m: int) -> list[int] | None:
    """The radices of the Stockham stages of length ``m`` in order (one 2 first when
    ``m`` has an odd power of two, then 4s, then odd factors), or None when ``m`` has a
    prime factor outside :data:`RADICES`."""
    out, rest = [], m
    twos = (rest & -rest).bit_length() - 1
    rest >>= twos
    if twos % 2:
        out.append(2)
    out += [4] * (twos // 2)
    for r in RADICES[1:]:
        while rest % r == 0:
            out.append(r)
            rest //= r
    return out if rest == 1 else None


def stages(m: int) -> list[tuple[int, int, int]]:
    """The Stockham stages of a smooth length ``m``: ``(radix, ns, table offset)`` with
    sub-transforms of length ``ns`` growing by the radix (:func:`radices`); stage
    ``(r, ns)`` has ``(r - 1) ns`` twiddles."""
    out, ns, at = [], 1, 0
    for r in radices(m) or []:
        out.append((r, ns, at))
        ns, at = ns * r, at + (r - 1) * ns
    return out


def _at(first: list[IndexExpr], dim: int, j: IndexExpr) -> list[IndexExpr]:
    idx = list(first)
    idx[dim] = j
    return idx


def _split(k: KernelBuilder, x: str, t: str, ct: str) -> Complex:
    """An element of type ``t`` as (re, im) in ``ct``."""
    if t in types.COMPLEX_PARTS:
        return (k.cast(k.math("real", x, None, t), types.COMPLEX_PARTS[t], ct),
                k.cast(k.math("imag", x, None, t), types.COMPLEX_PARTS[t], ct))
    return k.cast(x, t, ct), k.const(0.0, ct)


def _load_line(f: Fused, p: LinePass, source: Source, grp: Group, dst: Pair) -> None:
    """Read the line's ``n`` (extended, for ``c2r``) input elements into ``dst``; a halved
    ``r2c`` line reads its ``n / 2`` pairs (even, odd) as complex numbers."""
    k, ct = f.k, p.ctype
    with grp.each(p.m, io=True) as j:
        first = grp.first()
        if p.halved:
            at = k.imul(j, 2)
            re = k.cast(source(f, _at(first, p.dim, at)), p.in_type, ct)
            im = k.cast(source(f, _at(first, p.dim, k.iadd(at, 1))), p.in_type, ct)
        else:
            re, im = _input(f, p, source, first, j)
        dst[0].store(re, j)
        dst[1].store(im, j)


def _input(f: Fused, p: LinePass, source: Source, first: list[IndexExpr],
           j: IndexExpr) -> Complex:
    """Input element ``j < n`` of the line (``c2r``: of the full Hermitian spectrum)."""
    k, ct = f.k, p.ctype
    if p.kind != "c2r":
        return _split(k, source(f, _at(first, p.dim, j)), p.in_type, ct)
    direct = k.cmp("le", k.idx(j), k.idx(p.n // 2), "index")
    q = k.select(direct, k.idx(j), k.idx(k.isub(p.n, j)), "index")
    re, im = _split(k, source(f, _at(first, p.dim, q)), p.in_type, ct)
    return re, k.select(direct, im, k.arith("neg", im, None, ct), ct)


def _load_chirped(f: Fused, p: LinePass, src: tuple[Source, int], grp: Group,
                  dst: Pair) -> None:
    """Bluestein's first factor: ``x[j] c[j]`` for ``j < n``, zeros up to ``m``."""
    source, table = src
    k, ct = f.k, p.ctype
    zero = k.const(0.0, ct)
    with grp.each(p.m, io=True) as j:
        first = grp.first()
        inside = k.cmp("lt", j, k.idx(p.n), "index")
        q = k.select(inside, j, k.idx(p.n - 1), "index")
        x = _cmul(k, _input(f, p, source, first, q),
                  _twiddle(k, p, table, k.iadd(q, _offset(p, "chirp"))), ct)
        dst[0].store(k.select(inside, x[0], zero, ct), j)
        dst[1].store(k.select(inside, x[1], zero, ct), j)


def _multiply(grp: Group, line: Pair, table: int) -> None:
    """Multiply the line by Bluestein's transformed kernel, in place."""
    k, p = grp.k, grp.p
    with grp.each(p.m) as j:
        x = _cmul(k, (line[0].load(j), line[1].load(j)),
                  _twiddle(k, p, table, k.iadd(j, _offset(p, "b"))), p.ctype)
        line[0].store(x[0], j)
        line[1].store(x[1], j)


def _stages(grp: Group, bufs: tuple[Pair, Pair], table: int,
            section: str) -> tuple[Pair, Pair]:
    """The Stockham stages of length ``m`` with the twiddles of ``section`` (``inv``:
    sign +1); returns (result, spare)."""
    p = grp.p
    src, dst = bufs
    sign = 1.0 if section == "inv" else -1.0 if p.bluestein else p.sign
    base = _offset(p, section)
    for radix, ns, at in stages(p.m):
        _stage(grp, (src, dst), table, (radix, ns, base + at), sign)
        src, dst = dst, src
    return src, dst


def _twiddle(k: KernelBuilder, p: LinePass, table: int, m: IndexExpr) -> Complex:
    """Entry ``m`` of the table (:func:`_sections`)."""
    size = _table_size(p)
    return (k.load(table, p.ctype, max(size, 1), m),
            k.load(table, p.ctype, max(size, 1), k.iadd(m, size // 2)))


def _half(k: KernelBuilder, a: Complex, b: Complex, t: str) -> tuple[Complex, Complex]:
    """``((a + b) / 2, (a - b) / 2)``."""
    h = k.const(0.5, t)
    return ((k.arith("mul", k.arith("add", a[0], b[0], t), h, t),
             k.arith("mul", k.arith("add", a[1], b[1], t), h, t)),
            (k.arith("mul", k.arith("sub", a[0], b[0], t), h, t),
             k.arith("mul", k.arith("sub", a[1], b[1], t), h, t)))


def _store_spectrum(grp: Group, src: tuple[Pair, int], out: int) -> None:
    """A halved ``r2c`` line: ``Z`` (the FFT of ``x[2j] + i x[2j+1]``) holds the even
    elements' spectrum ``E = (Z[k] + conj Z[m-k]) / 2`` and the odd ones' ``O = -i (Z[k]
    - conj Z[m-k]) / 2``; ``X[k] = E + W^k O`` for ``k <= m``.  ``k`` of 1 to ``m - 1``
    read ``Z[k]`` and ``Z[m-k]`` as they are (a loop of contiguous and reversed runs the C
    compiler vectorizes; indices wrapped by selects were gathers); ``X[0]`` and ``X[m]``
    both read ``Z[0]`` twice, in a loop of their own."""
    k, m = grp.k, grp.p.m
    with grp.each(m, io=True, lo=1) as j:
        _spectrum_element(grp, src, out, (j, j, k.isub(m, j)))
    with grp.each(2, io=True) as end:
        _spectrum_element(grp, src, out, (k.imul(end, m), 0, 0))


def _spectrum_element(grp: Group, src: tuple[Pair, int], out: int,
                      at: tuple[IndexExpr, IndexExpr, IndexExpr]) -> None:
    """``X[j]`` of :func:`_store_spectrum` from ``Z[a]`` and ``Z[b]`` (``at``: ``j, a, b``,
    with ``a = j`` and ``b = m - j`` modulo ``m``)."""
    (zr, zi), table = src
    k, p = grp.k, grp.p
    ct = p.ctype
    j, a_at, b_at = at
    first = grp.first()
    a = zr.load(a_at), zi.load(a_at)
    b = zr.load(b_at), k.arith("neg", zi.load(b_at), None, ct)
    e, d = _half(k, a, b, ct)
    o = d[1], k.arith("neg", d[0], None, ct)
    wo = _cmul(k, _twiddle(k, p, table, k.iadd(j, _offset(p, "half"))), o, ct)
    re, im = k.arith("add", e[0], wo[0], ct), k.arith("add", e[1], wo[1], ct)
    _store_complex(k, p, (re, im), out, k.linear(_at(first, p.dim, j), p.shape))


def _load_hermitian(f: Fused, p: LinePass, src: tuple[Source, int], grp: Group,
                    dst: Pair) -> None:
    """A halved ``c2r`` line: from ``X[0..m]`` (imaginary parts of ``X[0]`` and ``X[m]``
    dropped, as for a real signal), ``E = (X[k] + conj X[m-k]) / 2`` and ``O = (X[k] -
    conj X[m-k]) conj(W^k) / 2`` are the spectra of the even and odd outputs, so ``Z = E
    + i O`` is the spectrum of ``x[2j] + i x[2j+1]`` (the table of an inverse pass holds
    ``conj W^k``)."""
    source, table = src
    k, ct, m = f.k, p.ctype, p.m
    zero = k.const(0.0, ct)
    with grp.each(m, io=True) as j:
        first = grp.first()
        edge = k.cmp("eq", j, k.idx(0), "index")
        a = _split(k, source(f, _at(first, p.dim, j)), p.in_type, ct)
        b = _split(k, source(f, _at(first, p.dim, k.isub(m, j))), p.in_type, ct)
        a = a[0], k.select(edge, zero, a[1], ct)
        b = b[0], k.select(edge, zero, k.arith("neg", b[1], None, ct), ct)
        e, d = _half(k, a, b, ct)
        o = _cmul(k, d, _twiddle(k, p, table, k.iadd(j, _offset(p, "half"))), ct)
        dst[0].store(k.arith("sub", e[0], o[1], ct), j)
        dst[1].store(k.arith("add", e[1], o[0], ct), j)


def _cmul(k: KernelBuilder, a: Complex, b: Complex, t: str) -> Complex:
    re = k.arith("sub", k.arith("mul", a[0], b[0], t), k.arith("mul", a[1], b[1], t), t)
    im = k.arith("add", k.arith("mul", a[0], b[1], t), k.arith("mul", a[1], b[0], t), t)
    return re, im


def _stage(grp: Group, bufs: tuple[Pair, Pair], table: int, stage: tuple[int, int, int],
           sign: float) -> None:
    """One Stockham stage of ``radix`` with sub-transforms of length ``ns``: butterfly
    ``(kk, b)`` reads ``x[j + t m / radix]`` (``j = b ns + kk``), multiplies them by
    ``w(t kk / (radix ns))`` and writes their ``radix``-point DFT to ``y[b radix ns + kk +
    r ns]``.  A ``foreach_nd`` whose fastest mode is ``kk`` once ``ns >=`` :data:`INNER`
    (contiguous runs the compiler vectorises), else ``b``."""
    k, p = grp.k, grp.p
    (sr, si), (dr, di) = bufs
    radix, ns, at = stage
    ct, step = p.ctype, p.m // radix
    kk, b = k.fresh("l"), k.fresh("l")
    order = [(kk, ns), (b, step // ns)] if ns >= INNER else [(b, step // ns), (kk, ns)]
    if grp.count > 1:
        grp.l = k.fresh("l")
        order.append((grp.l, grp.count))
    names = ", ".join(v for v, _ in order)
    los = ", ".join(k.idx(0) for _ in order)
    his = ", ".join(k.idx(n) for _, n in order)
    with k.block(f"foreach ({names}) = ({los}), ({his}) : index {{"):
        j = k.iadd(k.imul(b, ns), kk)
        xs = [(sr.load(k.iadd(j, t * step)), si.load(k.iadd(j, t * step)))
              for t in range(radix)]
        if ns > 1:
            for t in range(1, radix):
                w = _twiddle(k, p, table, k.iadd(kk, at + (t - 1) * ns))
                xs[t] = _cmul(k, xs[t], w, ct)
        ys = (_dft2(k, xs, ct) if radix == 2 else _dft4(k, xs, sign, ct) if radix == 4
              else _dft_small(k, xs, sign, ct))
        out = k.iadd(k.imul(b, radix * ns), kk)
        for r, y in enumerate(ys):
            dr.store(y[0], k.iadd(out, r * ns))
            di.store(y[1], k.iadd(out, r * ns))
    grp.l = 0


def _add(k: KernelBuilder, a: Complex, b: Complex, t: str) -> Complex:
    return k.arith("add", a[0], b[0], t), k.arith("add", a[1], b[1], t)


def _sub(k: KernelBuilder, a: Complex, b: Complex, t: str) -> Complex:
    return k.arith("sub", a[0], b[0], t), k.arith("sub", a[1], b[1], t)


def _dft2(k: KernelBuilder, xs: list[Complex], t: str) -> list[Complex]:
    return [_add(k, xs[0], xs[1], t), _sub(k, xs[0], xs[1], t)]


def _dft_small(k: KernelBuilder, xs: list[Complex], sign: float, t: str) -> list[Complex]:
    """The ``r``-point DFT of ``xs`` (an odd prime ``r``) with constant roots: inputs
    ``i`` and ``r - i`` share a cosine and their sines differ in sign, so ``y_q = x_0 +
    sum_i (x_i + x_{r-i}) cos + i S`` and ``y_{r-q}`` has ``-i S``, ``S = sum_i (x_i -
    x_{r-i}) sign sin``."""
    r, half = len(xs), len(xs) // 2
    sums = [_add(k, xs[i], xs[r - i], t) for i in range(1, half + 1)]
    diffs = [_sub(k, xs[i], xs[r - i], t) for i in range(1, half + 1)]
    out: list[Complex] = [xs[0]] * r
    for a in sums:
        out[0] = _add(k, out[0], a, t)
    for q in range(1, half + 1):
        e, big_s = xs[0], (k.const(0.0, t), k.const(0.0, t))
        for i in range(1, half + 1):
            c = k.const(math.cos(2 * math.pi * i * q / r), t)
            sn = k.const(sign * math.sin(2 * math.pi * i * q / r), t)
            e = _add(k, e, _scale(k, sums[i - 1], c, t), t)
            big_s = _add(k, big_s, _scale(k, diffs[i - 1], sn, t), t)
        out[q] = (k.arith("sub", e[0], big_s[1], t), k.arith("add", e[1], big_s[0], t))
        out[r - q] = (k.arith("add", e[0], big_s[1], t), k.arith("sub", e[1], big_s[0], t))
    return out


def _scale(k: KernelBuilder, a: Complex, c: str, t: str) -> Complex:
    return k.arith("mul", a[0], c, t), k.arith("mul", a[1], c, t)


def _dft4(k: KernelBuilder, xs: list[Complex], sign: float, t: str) -> list[Complex]:
    """The 4-point DFT with ``exp(sign 2 pi i / 4) = sign i``."""
    a0, a1 = _add(k, xs[0], xs[2], t), _sub(k, xs[0], xs[2], t)
    a2, d = _add(k, xs[1], xs[3], t), _sub(k, xs[1], xs[3], t)
    # d * (sign i) = (-sign d.im, sign d.re)
    a3 = ((k.arith("neg", d[1], None, t), d[0]) if sign > 0
          else (d[1], k.arith("neg", d[0], None, t)))
    return [_add(k, a0, a2, t), _add(k, a1, a3, t), _sub(k, a0, a2, t), _sub(k, a1, a3, t)]


def _dft(grp: Group, bufs: tuple[Pair, Pair], table: int) -> None:
    """``y[r] = sum_q x[q] w[r q mod n]`` for every output ``r``."""
    k, p = grp.k, grp.p
    (sr, si), (dr, di) = bufs
    ct, n = p.ctype, p.n
    zero = k.const(0.0, ct)
    with grp.each(n) as r:
        with k.loop(0, n, [zero, zero, k.idx(0)], [ct, ct, "index"]) as loop:
            acc_r, acc_i, m = loop.carried
            x = sr.load(loop.var), si.load(loop.var)
            re, im = _cmul(k, x, _twiddle(k, p, table, m), ct)
            step = k.arith("add", m, r, "index")
            wrap = k.cmp("ge", step, k.idx(n), "index")
            step = k.select(wrap, k.idx(k.isub(step, n)), step, "index")
            loop.yields = [k.arith("add", acc_r, re, ct), k.arith("add", acc_i, im, ct), step]
        dr.store(loop.results[0], r)
        di.store(loop.results[1], r)


def _store_line(grp: Group, src: Pair, out: int, table: int) -> None:
    """Store the line's outputs (scaled by ``1 / n`` when inverse; a halved ``c2r`` line
    holds ``m x[2j] + i m x[2j+1]``, Bluestein's convolution is multiplied by the chirp
    first)."""
    k, p = grp.k, grp.p
    ct, t = p.ctype, p.out_type
    total = prod(p.shape)
    with grp.each(p.m if p.halved else p.out_len, io=True) as j:
        first = grp.first()
        re, im = src[0].load(j), src[1].load(j)
        if p.bluestein:
            re, im = _cmul(k, (re, im), _twiddle(k, p, table, k.iadd(j, _offset(p, "chirp"))),
                           ct)
        if p.inverse:
            scale = k.const(1.0 / (p.m if p.halved else p.n), ct)
            re = k.arith("mul", re, scale, ct)
            im = k.arith("mul", im, scale, ct)
        if p.halved:
            at = k.imul(j, 2)
            k.store(k.cast(re, ct, t), out, t, total, k.linear(_at(first, p.dim, at), p.shape))
            k.store(k.cast(im, ct, t), out, t, total,
                    k.linear(_at(first, p.dim, k.iadd(at, 1)), p.shape))
        elif p.kind == "c2r":
            at = k.linear(_at(first, p.dim, j), p.shape)
            k.store(k.cast(re, ct, t), out, t, total, at)
        else:
            _store_complex(k, p, (re, im), out, k.linear(_at(first, p.dim, j), p.shape))


def _store_complex(k: KernelBuilder, p: LinePass, value: Complex, out: int,
                   at: IndexExpr) -> None:
    """Store ``value`` as an element of the complex output."""
    t = p.out_type
    rt = types.COMPLEX_PARTS[t]
    c = k.emit(f"complex {k.cast(value[0], p.ctype, rt)}, {k.cast(value[1], p.ctype, rt)} "
               f": {t}")
    k.store(c, out, t, prod(p.shape), at)
