"""Oracle cases for the activation family (numpy float64 reference on the fp16 inputs, formulas
from coremltools' iOS15 activation definitions). Run: /opt/ctvenv/bin/python gen_activation.py"""
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from caselib import Cases, arr, lit, out  # noqa: E402

c = Cases(__file__)
rng = c.rng
F16 = dict(atol=1e-6, rtol=1e-3)
F32 = dict(atol=1e-6, rtol=2e-6)
erf = np.vectorize(math.erf)


def sigmoid(v):
    return 1 / (1 + np.exp(-v))


GELU = {
    "EXACT": lambda v: 0.5 * v * (1 + erf(v / np.sqrt(2))),
    "TANH_APPROXIMATION": lambda v: 0.5 * v * (1 + np.tanh(np.sqrt(2 / np.pi) * (v + 0.044715 * v ** 3))),
    "SIGMOID_APPROXIMATION": lambda v: v * sigmoid(1.702 * v),
}

# op -> (params, numpy function of (x, params))
ACT = {
    "relu": ({}, lambda v, p: np.maximum(v, 0)),
    "relu6": ({}, lambda v, p: np.minimum(np.maximum(v, 0), 6)),
    "sigmoid": ({}, lambda v, p: sigmoid(v)),
    "silu": ({}, lambda v, p: v * sigmoid(v)),
    "softplus": ({}, lambda v, p: np.log1p(np.exp(-np.abs(v))) + np.maximum(v, 0)),
    "softsign": ({}, lambda v, p: v / (1 + np.abs(v))),
    "clip": ({"alpha": -1.5, "beta": 2.25}, lambda v, p: np.minimum(np.maximum(v, p["alpha"]), p["beta"])),
    "clamped_relu": ({"alpha": 0.3, "beta": 4.0},
                     lambda v, p: np.minimum(np.maximum(v, 0), p["beta"]) + np.minimum(np.minimum(v, 0) * p["alpha"], p["beta"])),
    "elu": ({"alpha": 0.7}, lambda v, p: np.where(v < 0, p["alpha"] * (np.exp(v) - 1), v)),
    "leaky_relu": ({"alpha": 0.05}, lambda v, p: np.where(v < 0, v * p["alpha"], v)),
    "scaled_tanh": ({"alpha": 1.7, "beta": 0.6}, lambda v, p: p["alpha"] * np.tanh(v * p["beta"])),
    "sigmoid_hard": ({"alpha": 0.2, "beta": 0.5}, lambda v, p: np.minimum(np.maximum(p["alpha"] * v + p["beta"], 0), 1)),
    "thresholded_relu": ({"alpha": 0.75}, lambda v, p: np.where(v < p["alpha"], 0, v)),
}
SHAPES = [(2, 3, 5), (), (1, 1, 7)]


def params_in(p, dtype="fp32"):
    return {k: lit(v, dtype) for k, v in p.items()}


for op, (p, fn) in ACT.items():
    # Param values as the function sees them (fp32 literals).
    pf = {k: float(np.float32(v)) for k, v in p.items()}
    for k, shape in enumerate(SHAPES):
        x = rng.uniform(-8, 8, shape).astype(np.float16)
        c.add(f"{op}_fp16_{k}", op, {"x": arr(x, "fp16"), **params_in(p)},
              [out(fn(x.astype(np.float64), pf), "fp16")], **F16)
    x = rng.uniform(-8, 8, (4, 6)).astype(np.float16)
    c.add(f"{op}_fp32", op, {"x": arr(x, "fp16"), **params_in(p)},
          [out(fn(x.astype(np.float64), pf), "fp16")], precision="fp32", **F32)

# fp16-typed params (iOS15 style) next to fp16 x.
x = rng.uniform(-8, 8, (3, 4)).astype(np.float16)
a16, b16 = float(np.float16(-1.3)), float(np.float16(2.7))
c.add("clip_fp16_params", "clip", {"x": arr(x, "fp16"), "alpha": lit(-1.3, "fp16"), "beta": lit(2.7, "fp16")},
      [out(np.clip(x.astype(np.float64), a16, b16), "fp16")])

for mode, fn in GELU.items():
    for k, shape in enumerate([(2, 8), ()]):
        x = rng.uniform(-5, 5, shape).astype(np.float16)
        c.add(f"gelu_{mode.lower()}_{k}", "gelu", {"x": arr(x, "fp16"), "mode": lit(mode, "string")},
              [out(fn(x.astype(np.float64)), "fp16")], **F16)
    x = rng.uniform(-5, 5, (3, 5)).astype(np.float16)
    c.add(f"gelu_{mode.lower()}_fp32", "gelu", {"x": arr(x, "fp16"), "mode": lit(mode, "string")},
          [out(fn(x.astype(np.float64)), "fp16")], precision="fp32", atol=1e-6, rtol=1e-5)
x = rng.uniform(-5, 5, (2, 3)).astype(np.float16)
c.add("gelu_default_mode", "gelu", {"x": arr(x, "fp16")}, [out(GELU["EXACT"](x.astype(np.float64)), "fp16")], **F16)

# Large inputs: softplus/silu must not overflow in the intermediate; relu keeps inf; NaN propagates.
x = np.array([-60000.0, -30.0, 0.0, 30.0, 60000.0], np.float16)
c.add("softplus_large", "softplus", {"x": arr(x, "fp16")},
      [out(np.log1p(np.exp(-np.abs(x.astype(np.float64)))) + np.maximum(x.astype(np.float64), 0), "fp16")], **F16)
with np.errstate(over="ignore"):
    c.add("silu_large", "silu", {"x": arr(x, "fp16")}, [out(x.astype(np.float64) * sigmoid(x.astype(np.float64)), "fp16")], **F16)
x = np.array([np.nan, np.inf, -np.inf, -1.0, 7.0], np.float16)
c.add("relu_special", "relu", {"x": arr(x, "fp16")}, [out(np.maximum(x, 0), "fp16")])
c.add("relu6_special", "relu6", {"x": arr(x, "fp16")}, [out(np.minimum(np.maximum(x, 0), 6), "fp16")])
c.add("clip_special", "clip", {"x": arr(x, "fp16"), "alpha": lit(0.0, "fp32"), "beta": lit(6.0, "fp32")},
      [out(np.clip(x, 0, 6), "fp16")])

# Errors.
x = np.ones((2, 2), np.float16)
c.error("gelu_bad_mode", "gelu", {"x": arr(x, "fp16"), "mode": lit("FAST", "string")}, ["fp16"],
        contains="FAST")
c.error("clip_missing_beta", "clip", {"x": arr(x, "fp16"), "alpha": lit(0.0, "fp32")}, ["fp16"],
        expect="missing parameter", contains="beta")
c.error("clip_alpha_above_beta", "clip", {"x": arr(x, "fp16"), "alpha": lit(3.0, "fp32"), "beta": lit(1.0, "fp32")},
        ["fp16"], contains="alpha")
c.error("leaky_relu_alpha_not_scalar", "leaky_relu", {"x": arr(x, "fp16"), "alpha": lit([0.1, 0.2], "fp32")},
        ["fp16"], contains="alpha")

# Ops added later draw from their own generator so the cases above keep their values.
rng2 = np.random.default_rng(4321)
LATE = {
    "threshold": ({"alpha": 0.75}, lambda v, p: np.maximum(v, p["alpha"])),
    "linear_activation": ({"alpha": -1.25, "beta": 0.3}, lambda v, p: p["alpha"] * v + p["beta"]),
}
for op, (p, fn) in LATE.items():
    pf = {k: float(np.float32(v)) for k, v in p.items()}
    for k, shape in enumerate(SHAPES):
        x = rng2.uniform(-8, 8, shape).astype(np.float16)
        c.add(f"{op}_fp16_{k}", op, {"x": arr(x, "fp16"), **params_in(p)},
              [out(fn(x.astype(np.float64), pf), "fp16")], **F16)
    x = rng2.uniform(-8, 8, (4, 6)).astype(np.float16)
    c.add(f"{op}_fp32", op, {"x": arr(x, "fp16"), **params_in(p)},
          [out(fn(x.astype(np.float64), pf), "fp16")], precision="fp32", **F32)
x = np.array([np.nan, -np.inf, 0.5, 2.0], np.float16)
c.add("threshold_special", "threshold", {"x": arr(x, "fp16"), "alpha": lit(1.0, "fp32")},
      [out(np.maximum(x, 1.0), "fp16")])


def per_channel(p, ndim):
    """A [C] parameter broadcast along dim 1 of a rank-ndim x (coremltools expands every other dim)."""
    return np.asarray(p, np.float64).reshape((1, -1) + (1,) * (ndim - 2))


# prelu / softplus_parametric: per-channel alpha (and beta) on x of rank 3, 4 and 5.
for k, shape in enumerate([(2, 3, 5), (1, 4, 2, 3), (1, 2, 2, 2, 3)]):
    x = rng2.uniform(-6, 6, shape).astype(np.float16)
    C = shape[1]
    alpha = rng2.uniform(-0.5, 1.5, C).astype(np.float16)
    beta = rng2.uniform(0.25, 2.0, C).astype(np.float16)
    xf, a, b = x.astype(np.float64), per_channel(alpha, x.ndim), per_channel(beta, x.ndim)
    c.add(f"prelu_rank{x.ndim}", "prelu", {"x": arr(x, "fp16"), "alpha": arr(alpha, "fp16")},
          [out(np.maximum(xf, 0) + np.minimum(xf, 0) * a, "fp16")], **F16)
    sp = a * (np.log1p(np.exp(-np.abs(xf * b))) + np.maximum(xf * b, 0))
    c.add(f"softplus_parametric_rank{x.ndim}", "softplus_parametric",
          {"x": arr(x, "fp16"), "alpha": arr(alpha, "fp16"), "beta": arr(beta, "fp16")}, [out(sp, "fp16")], **F16)
    c.add(f"softplus_parametric_rank{x.ndim}_fp32", "softplus_parametric",
          {"x": arr(x, "fp16"), "alpha": arr(alpha, "fp32"), "beta": arr(beta, "fp32")}, [out(sp, "fp16")],
          precision="fp32", **F32)
# iOS17: fp32 alpha next to fp16 x; large inputs must not overflow the intermediate.
x = np.array([-60000, -30, 0, 30, 60000], np.float16).reshape(1, 1, 5)
c.add("softplus_parametric_large", "softplus_parametric",
      {"x": arr(x, "fp16"), "alpha": lit([0.5], "fp32"), "beta": lit([2.0], "fp32")},
      [out(0.5 * (np.log1p(np.exp(-np.abs(2.0 * x.astype(np.float64)))) + np.maximum(2.0 * x.astype(np.float64), 0)),
           "fp16")], **F16)
x = np.ones((1, 3, 2), np.float16)
c.error("prelu_alpha_wrong_length", "prelu", {"x": arr(x, "fp16"), "alpha": lit([0.1, 0.2], "fp32")}, ["fp16"],
        contains="alpha")
c.error("prelu_rank2", "prelu", {"x": arr(np.ones((2, 3), np.float16), "fp16"), "alpha": lit([0.1, 0.2, 0.3], "fp32")},
        ["fp16"], contains="rank")
c.error("softplus_parametric_beta_wrong_length", "softplus_parametric",
        {"x": arr(x, "fp16"), "alpha": lit([1.0, 1.0, 1.0], "fp32"), "beta": lit([1.0], "fp32")}, ["fp16"], contains="beta")

c.write()
