"""stablehlo.rng_bit_generator as XLA defines it (xla/client/lib/prng.cc and the
RngBitGeneratorExpander): the state is ``[key, counter...]`` of 64-bit words.

* THREE_FRY (state of 2): Threefry-2x32 with 20 rounds keyed by ``key``'s two halves on
  ``counter + i``; 64-bit results are ``y0 | y1 << 32`` of counter ``i`` (``i`` the
  row-major index); 32-bit results take ``y0`` of counter ``i`` for the first
  ``ceil(n / 2)`` elements, ``y1`` of counter ``i - ceil(n / 2)`` for the rest.  The new
  state adds the number of counters used.
* PHILOX (state of 3, a 128-bit counter): Philox-4x32 with 10 rounds on ``counter + j``;
  32-bit results take word ``i % 4`` of block ``i / 4``, 64-bit results join words
  ``2 (i % 2)`` and ``2 (i % 2) + 1`` of block ``i / 2``.
* DEFAULT is implementation-defined: THREE_FRY for a state of 2, PHILOX for 3.

One work-item per result element (a Philox block is recomputed by each of its elements).
"""

from __future__ import annotations

from math import prod

from frontend.ir.core import Op
from frontend.lower.core import types
from frontend.lower.core.builder import KernelBuilder, num_groups
from frontend.lower.core.driver import FuncLowering
from frontend.lower.core.registry import kernel
from tensorlang.diagnostics import CompileError

_MASK32 = 0xFFFFFFFF
_THREEFRY_ROT = ((13, 15, 26, 6), (17, 29, 16, 24))
_PHILOX_W = (0x9E3779B9, 0xBB67AE85)
_PHILOX_M = (0xD2511F53, 0xCD9E8D57)
_UINT = {32: "u32", 64: "u64"}


@kernel("stablehlo.rng_bit_generator")
def rng_bit_generator(lw: FuncLowering, op: Op) -> None:
    """Random bits and the next state."""
    state_v = op.operand("initial_state")
    words = types.size(state_v)
    algorithm = str(op.attr("rng_algorithm"))
    if algorithm == "DEFAULT":
        algorithm = {2: "THREE_FRY", 3: "PHILOX"}.get(words, algorithm)
    t, bits = types.elem(op.results[1]), _bits(op)
    if (algorithm, words) not in (("THREE_FRY", 2), ("PHILOX", 3)) \
            or types.elem(state_v) not in ("u64", "i64"):
        raise CompileError.at(op.loc, f"'{op.name}' with {algorithm} on a state of "
                              f"{words} x {types.elem(state_v)} is not supported yet")
    shape = types.shape(op.results[1])
    n = prod(shape)
    out = lw.buffer_for(op.results[1])
    if n:
        with lw.kernel("rng") as (k, f):
            state = [k.bitcast(f.value(state_v, [j]), types.elem(state_v), "u64")
                     for j in range(words)]
            with k.elements(n) as i:
                gen = _threefry_element if algorithm == "THREE_FRY" else _philox_element
                value = gen(k, state, k.idx(i), n, bits)
                k.store(k.bitcast(value, _UINT[bits], t), out, t, n, i)
        lw.launch_last(num_groups(n))
    _next_state(lw, op, algorithm, n, bits)
    lw.bind(op.results[1], out)


def _bits(op: Op) -> int:
    t = types.elem(op.results[1])
    bits = {"u32": 32, "i32": 32, "f32": 32, "u64": 64, "i64": 64, "f64": 64}.get(t)
    if bits is None:
        raise CompileError.at(op.loc, f"'{op.name}' producing {t} is not supported yet")
    return bits


def _counters(algorithm: str, n: int, bits: int) -> int:
    """How many counter values ``n`` results of ``bits`` bits use."""
    if algorithm == "THREE_FRY":
        return n if bits == 64 else (n + 1) // 2
    return (n * bits // 32 + 3) // 4


def _next_state(lw: FuncLowering, op: Op, algorithm: str, n: int, bits: int) -> None:
    """The key, and the counter advanced by the counters used (128-bit for Philox)."""
    state_v, t = op.operand("initial_state"), types.elem(op.results[0])
    words = types.size(state_v)
    out = lw.buffer_for(op.results[0])
    used = _counters(algorithm, n, bits)
    with lw.kernel("rng_state") as (k, f):
        with k.elements(1):
            s = [k.bitcast(f.value(state_v, [j]), t, "u64") for j in range(words)]
            low = k.arith("add", s[1], k.const(used, "u64"), "u64")
            new = [s[0], low]
            if words == 3:
                carry = k.cmp("lt", low, s[1], "u64")
                new.append(k.select(carry, k.arith("add", s[2], k.const(1, "u64"), "u64"),
                                    s[2], "u64"))
            for j, x in enumerate(new):
                k.store(k.bitcast(x, "u64", t), out, t, words, j)
    lw.launch_last(1)
    lw.bind(op.results[0], out)


# -- scalar helpers on u32 / u64 ---------------------------------------------------------------

def _lo(k: KernelBuilder, x: str) -> str:
    return k.cast(k.arith("and", x, k.const(_MASK32, "u64"), "u64"), "u64", "u32")


def _hi(k: KernelBuilder, x: str) -> str:
    return k.cast(k.arith("shr", x, k.const(32, "u64"), "u64"), "u64", "u32")


def _join(k: KernelBuilder, lo: str, hi: str) -> str:
    wide = k.arith("shl", k.cast(hi, "u32", "u64"), k.const(32, "u64"), "u64")
    return k.arith("or", k.cast(lo, "u32", "u64"), wide, "u64")


def _add32(k: KernelBuilder, a: str, b: str | int) -> str:
    b = k.const(b, "u32") if isinstance(b, int) else b
    return k.arith("add", a, b, "u32")


def _rotl(k: KernelBuilder, x: str, r: int) -> str:
    left = k.arith("shl", x, k.const(r, "u32"), "u32")
    return k.arith("or", left, k.arith("shr", x, k.const(32 - r, "u32"), "u32"), "u32")


# -- Threefry ----------------------------------------------------------------------------------

def threefry2x32(k: KernelBuilder, x: list[str], key: list[str]) -> list[str]:
    """Threefry-2x32, 20 rounds (Random123), on u32 scalars."""
    ks = [key[0], key[1],
          k.arith("xor", k.arith("xor", k.const(0x1BD11BDA, "u32"), key[0], "u32"), key[1],
                  "u32")]
    x = [_add32(k, x[0], ks[0]), _add32(k, x[1], ks[1])]
    for i in range(5):
        for r in _THREEFRY_ROT[i % 2]:
            x0 = _add32(k, x[0], x[1])
            x = [x0, k.arith("xor", _rotl(k, x[1], r), x0, "u32")]
        x = [_add32(k, x[0], ks[(i + 1) % 3]), _add32(k, _add32(k, x[1], ks[(i + 2) % 3]), i + 1)]
    return x


def _threefry_element(k: KernelBuilder, state: list[str], i: str, n: int, bits: int) -> str:
    key = [_lo(k, state[0]), _hi(k, state[0])]
    if bits == 64:
        c = k.arith("add", state[1], k.cast(i, "index", "u64"), "u64")
        y = threefry2x32(k, [_lo(k, c), _hi(k, c)], key)
        return _join(k, y[0], y[1])
    half = (n + 1) // 2
    second = k.cmp("ge", i, k.const(half, "index"), "index")
    j = k.select(second, k.arith("sub", i, k.const(half, "index"), "index"), i, "index")
    c = k.arith("add", state[1], k.cast(j, "index", "u64"), "u64")
    y = threefry2x32(k, [_lo(k, c), _hi(k, c)], key)
    return k.select(second, y[1], y[0], "u32")


# -- Philox ------------------------------------------------------------------------------------

def philox4x32(k: KernelBuilder, x: list[str], key: list[str]) -> list[str]:
    """Philox-4x32, 10 rounds, on u32 scalars."""
    for _ in range(10):
        p0 = k.arith("mul", k.cast(x[0], "u32", "u64"), k.const(_PHILOX_M[0], "u64"), "u64")
        p1 = k.arith("mul", k.cast(x[2], "u32", "u64"), k.const(_PHILOX_M[1], "u64"), "u64")
        x = [k.arith("xor", k.arith("xor", _hi(k, p1), x[1], "u32"), key[0], "u32"),
             _lo(k, p1),
             k.arith("xor", k.arith("xor", _hi(k, p0), x[3], "u32"), key[1], "u32"),
             _lo(k, p0)]
        key = [_add32(k, key[0], _PHILOX_W[0]), _add32(k, key[1], _PHILOX_W[1])]
    return x


def _philox_element(k: KernelBuilder, state: list[str], i: str, n: int, bits: int) -> str:
    per = 4 if bits == 32 else 2
    block = k.arith("div", i, k.const(per, "index"), "index")
    lane = k.arith("rem", i, k.const(per, "index"), "index")
    low = k.arith("add", state[1], k.cast(block, "index", "u64"), "u64")
    carry = k.cmp("lt", low, state[1], "u64")
    high = k.select(carry, k.arith("add", state[2], k.const(1, "u64"), "u64"), state[2], "u64")
    y = philox4x32(k, [_lo(k, low), _hi(k, low), _lo(k, high), _hi(k, high)],
                   [_lo(k, state[0]), _hi(k, state[0])])
    if bits == 64:
        first = k.cmp("eq", lane, k.const(0, "index"), "index")
        return k.select(first, _join(k, y[0], y[1]), _join(k, y[2], y[3]), "u64")
    result = y[0]
    for j in (1, 2, 3):
        hit = k.cmp("eq", lane, k.const(j, "index"), "index")
        result = k.select(hit, y[j], result, "u32")
    return result



# -- stablehlo.rng -----------------------------------------------------------------------------

@kernel("stablehlo.rng")
def rng(lw: FuncLowering, op: Op) -> None:
    """UNIFORM in ``[a, b)`` or NORMAL with mean ``a`` and standard deviation ``b``.

    The generator is implementation-defined: ours is stateless, Threefry-2x32 on the
    element's index keyed by the op's source position, so a program gives the same
    numbers on every run."""
    a_v, b_v = op.operand("a"), op.operand("b")
    t = types.elem(op.result)
    normal = str(op.attr("rng_distribution")) == "NORMAL"
    if t[0] not in ("fb" if normal else "fbiu") or t == "i1":
        raise CompileError.at(op.loc, f"'{op.name}' producing {t} is not supported yet")
    loc = op.loc
    seed = [(loc.line * 7919 + loc.col) & _MASK32 if loc else 0, 0x5EED]
    n = types.size(op.result)
    out = lw.buffer_for(op.result)
    if n:
        with lw.kernel("rng") as (k, f):
            with k.elements(n) as i:
                c = k.cast(i, "index", "u64")
                y = threefry2x32(k, [_lo(k, c), _hi(k, c)],
                                 [k.const(s, "u32") for s in seed])
                a, b = f.value(a_v, []), f.value(b_v, [])
                value = _normal(k, y, a, b, t) if normal else _uniform(k, y, a, b, t)
                k.store(value, out, t, n, i)
        lw.launch_last(num_groups(n))
    lw.bind(op.result, out)


def _unit(k: KernelBuilder, y: list[str]) -> str:
    """A double in [0, 1) from the top 53 of the 64 random bits."""
    bits = k.arith("shr", _join(k, y[0], y[1]), k.const(11, "u64"), "u64")
    return k.arith("mul", k.cast(bits, "u64", "f64"), k.const(2.0**-53, "f64"), "f64")


def _uniform(k: KernelBuilder, y: list[str], a: str, b: str, t: str) -> str:
    if t[0] in "iu":  # a + bits mod (b - a), in 64 bits
        wa, wb = k.cast(a, t, "i64"), k.cast(b, t, "i64")
        span = k.bitcast(k.arith("sub", wb, wa, "i64"), "i64", "u64")
        one = k.const(1, "u64")
        span = k.select(k.cmp("lt", span, one, "u64"), one, span, "u64")
        off = k.arith("rem", _join(k, y[0], y[1]), span, "u64")
        return k.cast(k.arith("add", wa, k.bitcast(off, "u64", "i64"), "i64"), "i64", t)
    wa, wb = k.cast(a, t, "f64"), k.cast(b, t, "f64")
    r = k.cast(k.arith("add", wa, k.arith("mul", k.arith("sub", wb, wa, "f64"), _unit(k, y),
                                          "f64"), "f64"), "f64", t)
    return k.select(k.cmp("lt", r, b, t), r, a, t)  # rounding must not reach b


def _normal(k: KernelBuilder, y: list[str], a: str, b: str, t: str) -> str:
    """Box-Muller: sqrt(-2 ln u1) cos(2 pi u2) from two 32-bit uniforms, u1 in (0, 1]."""
    scale = k.const(2.0**-32, "f64")
    u1 = k.arith("mul", k.arith("add", k.cast(y[0], "u32", "f64"), k.const(1.0, "f64"), "f64"),
                 scale, "f64")
    u2 = k.arith("mul", k.cast(y[1], "u32", "f64"), scale, "f64")
    radius = k.math("sqrt", k.arith("mul", k.const(-2.0, "f64"),
                                    k.math("log", u1, None, "f64"), "f64"), None, "f64")
    angle = k.arith("mul", u2, k.const(6.283185307179586, "f64"), "f64")
    z = k.arith("mul", radius, k.math("cos", angle, None, "f64"), "f64")
    wa, wb = k.cast(a, t, "f64"), k.cast(b, t, "f64")
    return k.cast(k.arith("add", wa, k.arith("mul", wb, z, "f64"), "f64"), "f64", t)
