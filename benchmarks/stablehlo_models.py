"""Benchmark: the StableHLO example models and conv/reduce micro-benchmarks, tlc vs numpy.

Run ``.venv/bin/python benchmarks/stablehlo_models.py`` (``--quick`` for fewer sizes and
repeats).  Each model in ``examples/{mlp,transformer_block,cnn}.mlir`` is compiled with
tlc and run on its inputs from ``examples/*.npz``; the same model is written here in
numpy (checked against the JAX outputs stored in the npz).  Micro-benchmarks build small
StableHLO programs (an NHWC 3x3 convolution, row / column / full sums) at a few sizes.
Every time is the median of repeated warm runs (after one untimed run), all measured in
the same process; a tlc time is a whole call of the executable: upload of the inputs,
kernels and download of the results.  The ratio is numpy time / tlc time (> 1: tlc is
faster).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import backend_opencl  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def median_time(fn: Callable[[], object], budget: float, max_reps: int) -> float:
    """Median seconds of ``fn()`` over repeated runs after one warm-up."""
    fn()
    times: list[float] = []
    start = time.perf_counter()
    while len(times) < 3 or (len(times) < max_reps and time.perf_counter() - start < budget):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


# -- the models in numpy ---------------------------------------------------------------------


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def mlp(x, w1, b1, w2, b2, w3, b3):  # type: ignore[no-untyped-def]
    """Two ReLU layers and a softmax head."""
    h = np.maximum(x @ w1 + b1, 0)
    h = np.maximum(h @ w2 + b2, 0)
    return _softmax(h @ w3 + b3)


def _rms(x: np.ndarray, g: np.ndarray) -> np.ndarray:
    return x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + np.float32(1e-6)) * g


def transformer_block(x, wq, wk, wv, wo, g1, w1, w2, g2):  # type: ignore[no-untyped-def]
    """RMS norm, causal single-head attention, RMS norm, GELU (tanh) MLP, residuals."""
    h = _rms(x, g1)
    q, k, v = h @ wq, h @ wk, h @ wv
    s = q @ k.transpose(0, 2, 1) / np.sqrt(np.float32(x.shape[-1]))
    mask = np.tril(np.ones((x.shape[1], x.shape[1]), bool))
    s = np.where(mask, s, np.float32(-1e9))
    y = x + (_softmax(s) @ v) @ wo
    u = _rms(y, g2) @ w1
    gelu = u * (0.5 * (1 + np.tanh(np.float32(0.7978846) * (u + np.float32(0.044715) * u ** 3))))
    return y + gelu @ w2


def conv_nhwc(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """'SAME' 3x3 (any odd window) NHWC x HWIO convolution, stride 1, as im2col + matmul."""
    kh, kw = w.shape[:2]
    xp = np.pad(x, ((0, 0), (kh // 2, kh // 2), (kw // 2, kw // 2), (0, 0)))
    win = sliding_window_view(xp, (kh, kw), axis=(1, 2))  # b, h, w, c, kh, kw
    return np.tensordot(win, w, axes=([4, 5, 3], [0, 1, 2]))


def _pool(x: np.ndarray) -> np.ndarray:
    b, h, w, c = x.shape
    return x.reshape(b, h // 2, 2, w // 2, 2, c).max(axis=(2, 4))


def cnn(x, k1, b1, k2, b2, w, b):  # type: ignore[no-untyped-def]
    """Two conv + ReLU + 2x2 max-pool stages and a dense layer."""
    h = _pool(np.maximum(conv_nhwc(x, k1) + b1, 0))
    h = _pool(np.maximum(conv_nhwc(h, k2) + b2, 0))
    return h.reshape(h.shape[0], -1) @ w + b


MODELS = {"mlp": mlp, "transformer_block": transformer_block, "cnn": cnn}


# -- micro-benchmark programs ----------------------------------------------------------------


def _ty(shape: tuple[int, ...]) -> str:
    return "tensor<" + "".join(f"{n}x" for n in shape) + "f32>"


def conv_program(b: int, h: int, c: int, o: int) -> str:
    """An NHWC 3x3 'SAME' convolution."""
    ls, rs, os_ = (b, h, h, c), (3, 3, c, o), (b, h, h, o)
    return f"""func.func public @main(%x: {_ty(ls)}, %w: {_ty(rs)}) -> {_ty(os_)} {{
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f],
      window = {{pad = [[1, 1], [1, 1]]}} {{batch_group_count = 1 : i64,
      feature_group_count = 1 : i64}} : ({_ty(ls)}, {_ty(rs)}) -> {_ty(os_)}
  return %0 : {_ty(os_)}
}}
"""


def reduce_program(shape: tuple[int, ...], dims: list[int]) -> str:
    """A float sum over ``dims``."""
    out = tuple(n for d, n in enumerate(shape) if d not in dims)
    return f"""func.func public @main(%a: {_ty(shape)}) -> {_ty(out)} {{
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %0 = stablehlo.reduce(%a init: %z) applies stablehlo.add across dimensions = {dims}
      : ({_ty(shape)}, tensor<f32>) -> {_ty(out)}
  return %0 : {_ty(out)}
}}
"""


# -- running ---------------------------------------------------------------------------------


def device_runner(exe: object, ins: list[np.ndarray]) -> Callable[[], None]:
    """Run ``exe``'s host plan on inputs uploaded once (kernels and device copies only)."""
    from backend_opencl import plan_exec
    from backend_opencl.runtime import buffers

    uploaded = [buffers.upload(exe.device, a) for a in ins]  # type: ignore[attr-defined]

    def go() -> None:
        run = plan_exec._Run(exe)
        for bid, arr in zip(exe.plan.params, uploaded, strict=True):  # type: ignore
            run.live[bid] = arr
        run.steps(exe.plan.steps)  # type: ignore[attr-defined]
        exe.device.queue.finish()  # type: ignore[attr-defined]

    return go


def _row(name: str, exe: Callable, ref: Callable, ins: list[np.ndarray],  # type: ignore[type-arg]
         reps: tuple[float, int]) -> None:
    got = exe(*ins)[0]
    want = ref(*ins)
    err = float(np.max(np.abs(got - want))) / max(1.0, float(np.max(np.abs(want))))
    t_call = median_time(lambda: exe(*ins), *reps)
    t_dev = median_time(device_runner(exe, ins), *reps)
    t_np = median_time(lambda: ref(*ins), *reps)
    print(f"| {name:32s} | {t_call * 1e3:9.3f} | {t_dev * 1e3:9.3f} | {t_np * 1e3:9.3f} | "
          f"{t_np / t_call:6.2f} | {t_np / t_dev:6.2f} | {err:7.1e} |", flush=True)


def models(reps: tuple[float, int]) -> None:
    """The example models."""
    for name, ref in MODELS.items():
        data = np.load(EXAMPLES / f"{name}.npz")
        ins = [data[f"in{i}"] for i in range(sum(k.startswith("in") for k in data.files))]
        want = data["out0"]
        assert np.allclose(ref(*ins), want, rtol=1e-3, atol=1e-4), name
        exe = backend_opencl.compile_stablehlo((EXAMPLES / f"{name}.mlir").read_text(),
                                               filename=f"{name}.mlir")
        _row(f"model {name}", exe, ref, ins, reps)


def micro(quick: bool, reps: tuple[float, int]) -> None:
    """Convolution and reduction micro-benchmarks."""
    rng = np.random.default_rng(0)
    convs = [(4, 16, 8, 16), (8, 32, 16, 32)] + ([] if quick else [(8, 64, 32, 64)])
    for b, h, c, o in convs:
        ins = [rng.standard_normal(s).astype(np.float32) for s in ((b, h, h, c), (3, 3, c, o))]
        exe = backend_opencl.compile_stablehlo(conv_program(b, h, c, o))
        _row(f"conv3x3 {b}x{h}x{h}x{c} -> {o}", exe, conv_nhwc, ins, reps)
    sums = [((256, 1024), [1]), ((1 << 20,), [0]), ((1024, 256), [0])]
    if not quick:
        sums += [((2048, 4096), [1]), ((1 << 23,), [0]), ((4096, 2048), [0])]
    for shape, dims in sums:
        a = rng.standard_normal(shape).astype(np.float32)
        exe = backend_opencl.compile_stablehlo(reduce_program(shape, dims))
        label = "x".join(map(str, shape))
        _row(f"sum {label} over {dims}", exe,
             lambda x, d=tuple(dims): x.sum(axis=d, dtype=np.float32), [a], reps)


def main(argv: list[str] | None = None) -> int:
    """Print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer sizes and repeats")
    args = parser.parse_args(argv)
    reps = (0.3, 10) if args.quick else (1.0, 50)
    print("| case                             | tlc call  | tlc dev.  | numpy     | np/call"
          " | np/dev | rel.err |")
    print("|                                  | (ms)      | (ms)      | (ms)      |        "
          " |        |         |")
    print("|----------------------------------|-----------|-----------|-----------|--------"
          "-|--------|---------|")
    models(reps)
    micro(args.quick, reps)
    return 0


if __name__ == "__main__":
    sys.exit(main())
