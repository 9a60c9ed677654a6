"""The real-model set of ``benchmarks/jax_models.py``: models built with flax (linen and
nnx), dm-haiku, equinox, optax, keras 3 and diffrax from their own layers, randomly
initialised (nothing downloaded), and functions of ``jax.random``, ``jax.scipy.special``
and ``jnp.fft``.

:data:`MODELS` is the table: name, library, builder and data inputs of each (see
:mod:`models.common` for what a builder returns).  Needs the ``models`` extra
(``pip install -e '.[models]'``).
"""

from __future__ import annotations

import optax

from models import diffrax_models as dfx
from models import equinox_models as eqx_m
from models import flax_models as fl
from models import haiku_models as hk_m
from models import jax_functions as jf
from models import keras_models as ks
from models import optax_models as opt
from models.common import Input, Model, labels, normal, uniform

__all__ = ["MODELS", "Input", "Model"]

MODELS: list[Model] = [
    # name, library, builder, data inputs, [tolerance, what]
    Model("mlp_linen", "flax.linen", fl.linen(lambda: fl.LinenMLP((512, 256, 10))),
          (normal(64, 784),), what="dense 784-512-256-10, ReLU, batch 64"),
    Model("mlp_nnx", "flax.nnx", fl.nnx_model(lambda r: fl.NnxMLP((256, 512, 512, 10), r)),
          (normal(128, 256),), what="nnx.Linear 256-512-512-10, ReLU, batch 128"),
    Model("mlp_haiku", "haiku", hk_m.haiku(hk_m.mlp), (normal(64, 784),),
          what="hk.nets.MLP 784-512-256-10, batch 64"),
    Model("mlp_equinox", "equinox", eqx_m.equinox(eqx_m.MLP), (normal(32, 784),),
          what="eqx.nn.MLP 784-256-256-10, GELU, vmap over batch 32"),
    Model("cnn_bn_linen", "flax.linen", fl.linen(fl.LinenCNN, train=False),
          (normal(16, 32, 32, 3),),
          what="2 x (conv 3x3, batch norm, ReLU, avg pool), dense; 16 x 32x32x3"),
    Model("cnn_bn_nnx", "flax.nnx", fl.nnx_model(lambda r: fl.NnxCNN(32, r)),
          (normal(16, 32, 32, 3),),
          what="2 x (nnx.Conv, nnx.BatchNorm, ReLU, max pool), dense; 16 x 32x32x3"),
    Model("cnn_equinox", "equinox", eqx_m.equinox(eqx_m.CNN), (normal(16, 3, 32, 32),),
          what="2 x (eqx.nn.Conv2d, ReLU, MaxPool2d), linear; NCHW 16 x 3x32x32"),
    Model("resnet_linen", "flax.linen", fl.linen(fl.LinenResNet), (normal(8, 32, 32, 3),),
          what="CIFAR ResNet: stem, 3 basic blocks (16/32/64), BN; 8 x 32x32x3"),
    Model("resnet18_haiku", "haiku", hk_m.haiku(hk_m.resnet18), (normal(8, 32, 32, 3),),
          tol=2e-4, what="hk.nets.ResNet18, inference; 8 x 32x32x3"),
    Model("transformer_linen", "flax.linen", fl.linen(fl.LinenEncoderLayer),
          (normal(8, 64, 128),),
          what="encoder layer: MultiHeadDotProductAttention (4 heads), GELU MLP; 8 x 64 x 128"),
    Model("transformer_nnx", "flax.nnx",
          fl.nnx_model(lambda r: fl.NnxEncoderLayer(128, 4, 512, r)), (normal(8, 64, 128),),
          what="encoder layer: nnx.MultiHeadAttention (causal), exact-GELU MLP; 8 x 64 x 128"),
    Model("lstm_linen_scan", "flax.linen", fl.linen(fl.LinenLSTM), (normal(16, 32, 32),),
          what="nn.RNN(OptimizedLSTMCell(128)) (scan), 32 steps, batch 16"),
    Model("gru_linen_unrolled", "flax.linen", fl.linen(fl.LinenGRUUnrolled),
          (normal(16, 32, 32),), what="nn.GRUCell(128) in a Python loop, 32 steps, batch 16"),
    Model("lstm_haiku_scan", "haiku", hk_m.haiku(hk_m.lstm_scan), (normal(64, 16, 32),),
          what="hk.LSTM(128), hk.dynamic_unroll (scan), 64 steps, batch 16"),
    Model("gru_haiku_unrolled", "haiku", hk_m.haiku(hk_m.gru_unrolled),
          (normal(32, 16, 32),), what="hk.GRU(128), hk.static_unroll, 32 steps, batch 16"),
    Model("gru_equinox_scan", "equinox", eqx_m.equinox(eqx_m.GRUScan), (normal(16, 64, 32),),
          what="eqx.nn.GRUCell(128) by lax.scan, vmap; 64 steps, batch 16"),
    Model("lstm_equinox_unrolled", "equinox", eqx_m.equinox(eqx_m.LSTMUnrolled),
          (normal(16, 32, 32),),
          what="eqx.nn.LSTMCell(128) in a Python loop, vmap; 32 steps, batch 16"),
    Model("train_mlp_adam", "optax+flax.linen",
          opt.train_step(lambda: fl.LinenMLP((512, 256, 10)), lambda: optax.adam(1e-3)),
          (normal(128, 784), labels(128, 10)), tol=1e-3,
          what="value_and_grad + optax.adam step of mlp_linen, batch 128"),
    Model("train_cnn_adamw", "optax+flax.linen",
          opt.train_step(fl.LinenCNN, lambda: optax.adamw(1e-3, weight_decay=1e-4)),
          (normal(16, 32, 32, 3), labels(16, 10)), tol=1e-3,
          what="optax.adamw step of cnn_bn_linen, batch norm in training mode, batch 16"),
    Model("keras_functional", "keras", ks.keras_model(ks.functional),
          (normal(16, 32, 32, 3), normal(16, 16)),
          what="two inputs: conv branch + dense branch, concatenated; batch 16"),
    Model("keras_mobilenet_v2", "keras", ks.keras_model(ks.mobilenet_v2),
          (normal(8, 96, 96, 3),), tol=2e-4,
          what="keras.applications.MobileNetV2(weights=None), 8 x 96x96x3"),
    Model("ode_tsit5_fixed", "diffrax", dfx.ode(adaptive=False), (normal(64, 8),),
          what="neural ODE (eqx MLP field), Tsit5, 20 fixed steps, batch 64 x 8"),
    Model("ode_tsit5_adaptive", "diffrax", dfx.ode(adaptive=True), (normal(16, 8),),
          tol=1e-3, what="same field, Tsit5 + PIDController per sample (vmap), 11 saves"),
    Model("random_dropout", "jax", jf.noisy_dropout, (normal(256, 1024),),
          what="jax.random.bernoulli dropout + jax.random.normal noise, 256 x 1024"),
    Model("special_functions", "jax", jf.special_functions,
          (uniform(256, 512, low=-3.0, high=3.0),),
          what="erf, gammaln, erfinv, exact GELU (4 outputs), 256 x 512"),
    Model("fft_filter", "jax", jf.fft_filter, (normal(64, 1024),),
          what="rfft, complex filter, irfft; power spectrum; 64 x 1024"),
]
"""Every model, in table order."""
